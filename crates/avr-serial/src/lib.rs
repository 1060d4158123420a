//! The `avr-harness` framed protocol over a serial port, for firmware on a
//! real board: the host side shared by `cargo xtask bench --device` and
//! `kem-mqtt serial-bridge`.
//!
//! A board runs the same images as the simulator. It has no simulator to
//! stamp the marker writes, so every measured operation is timed by the
//! firmware's own timers ([`avr_harness::protocol::OP_CYCLES`]), which the
//! simulator runs check against the markers (`cargo xtask bench`, `ct`,
//! `mqtt`: timers = markers + 3 cycles, on every operation).
//!
//! [`Link`] speaks the protocol over any byte stream (a serial port, a
//! pseudo-terminal, a buffer in tests); [`open`] opens a serial port for it.

use std::io::{Read, Write};
use std::time::Duration;

use avr_harness::protocol::{
    decode_header, encode_header, timer_cycles, Status, HEADER_LEN, OP_CYCLES, OP_EMPTY, OP_PING, OP_STACK, TIMERS_LEN,
    VERSION,
};

pub use serialport;

/// What can go wrong talking to a board.
#[derive(Debug)]
pub enum Error {
    /// The port could not be opened or configured.
    Open {
        /// The port's path.
        path: String,
        /// Why.
        reason: String,
    },
    /// Reading or writing failed (a timeout included: the board did not answer in time).
    Io(std::io::Error),
    /// The request is longer than a frame can say.
    TooLong(usize),
    /// The firmware answered with an error status.
    Refused {
        /// The request's op id.
        op: u8,
        /// The status it answered.
        status: Status,
    },
    /// A reply that does not follow the protocol.
    Protocol(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Open { path, reason } => write!(f, "cannot open {path}: {reason}"),
            Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                write!(f, "the board did not answer in time ({e})")
            }
            Error::Io(e) => write!(f, "serial I/O: {e}"),
            Error::TooLong(n) => write!(f, "a request of {n} bytes does not fit a frame"),
            Error::Refused { op, status } => write!(f, "op 0x{op:02x}: the firmware answered {status:?}"),
            Error::Protocol(m) => write!(f, "protocol: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

/// Opens `path` at `baud` (8N1, no flow control) with a read timeout of
/// `timeout` per read (a long operation needs a long timeout: the reply
/// comes when the operation is done).
pub fn open(path: &str, baud: u32, timeout: Duration) -> Result<Box<dyn serialport::SerialPort>, Error> {
    serialport::new(path, baud)
        .data_bits(serialport::DataBits::Eight)
        .parity(serialport::Parity::None)
        .stop_bits(serialport::StopBits::One)
        .flow_control(serialport::FlowControl::None)
        .timeout(timeout)
        .open()
        .map_err(|e| Error::Open {
            path: path.to_string(),
            reason: e.to_string(),
        })
}

/// One measured operation on a board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    /// The reply payload.
    pub reply: Vec<u8>,
    /// The window's cycles by the on-chip timers (the empty window's
    /// included: subtract [`Link::empty_window`]).
    pub cycles: u64,
    /// Painted stack bytes of the window
    /// ([`avr_harness::protocol::STACK_OVERFLOW`] if it ran into static data).
    pub stack: u16,
}

/// The harness protocol over a byte stream.
pub struct Link<T> {
    io: T,
}

impl<T: Read + Write> Link<T> {
    /// Speaks the protocol over `io`.
    pub fn new(io: T) -> Self {
        Link { io }
    }

    /// The underlying stream.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.io
    }

    /// Sends one request and returns the reply payload (an error unless the status is Ok).
    pub fn call(&mut self, op: u8, payload: &[u8]) -> Result<Vec<u8>, Error> {
        let len = u16::try_from(payload.len()).map_err(|_| Error::TooLong(payload.len()))?;
        let mut frame = encode_header(op, len).to_vec();
        frame.extend_from_slice(payload);
        self.io.write_all(&frame)?;
        self.io.flush()?;
        let mut h = [0u8; HEADER_LEN];
        self.io.read_exact(&mut h)?;
        let (status, len) = decode_header(h);
        let mut body = vec![0u8; len as usize];
        self.io.read_exact(&mut body)?;
        match Status::from_u8(status) {
            Some(Status::Ok) => Ok(body),
            Some(status) => Err(Error::Refused { op, status }),
            None => Err(Error::Protocol(format!(
                "op 0x{op:02x}: bad status byte 0x{status:02x}"
            ))),
        }
    }

    /// Checks that the firmware speaks this protocol and returns the ids of its operations.
    pub fn ping(&mut self) -> Result<Vec<u8>, Error> {
        let reply = self.call(OP_PING, &[])?;
        match reply.split_first() {
            Some((&VERSION, ops)) => Ok(ops.to_vec()),
            Some((v, _)) => Err(Error::Protocol(format!(
                "the firmware speaks protocol {v}, this host {VERSION}"
            ))),
            None => Err(Error::Protocol("empty ping reply".into())),
        }
    }

    /// The on-chip timers' count of the last measured window.
    pub fn timer_cycles(&mut self) -> Result<u64, Error> {
        let raw = self.call(OP_CYCLES, &[])?;
        let raw: [u8; TIMERS_LEN] = raw
            .try_into()
            .map_err(|r: Vec<u8>| Error::Protocol(format!("timer reading of {} bytes", r.len())))?;
        Ok(timer_cycles(raw))
    }

    /// The painted stack of the last measured window.
    pub fn stack(&mut self) -> Result<u16, Error> {
        match self.call(OP_STACK, &[])?.as_slice() {
            &[lo, hi] => Ok(u16::from_le_bytes([lo, hi])),
            other => Err(Error::Protocol(format!("stack reading of {} bytes", other.len()))),
        }
    }

    /// Runs measured operation `op` and reads its timers and painted stack.
    pub fn measure(&mut self, op: u8, payload: &[u8]) -> Result<Measured, Error> {
        let reply = self.call(op, payload)?;
        let cycles = self.timer_cycles()?;
        let stack = self.stack()?;
        Ok(Measured { reply, cycles, stack })
    }

    /// The timers' count of an empty window, the fewest of three: what
    /// every measurement subtracts.
    pub fn empty_window(&mut self) -> Result<u64, Error> {
        let mut fewest = u64::MAX;
        for _ in 0..3 {
            fewest = fewest.min(self.measure(OP_EMPTY, &[])?.cycles);
        }
        Ok(fewest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use avr_harness::protocol::{serve_one, Io, Op};
    use std::collections::VecDeque;

    /// The firmware's side of the protocol (`serve_one`) on the other end
    /// of an in-memory stream: the host code runs against the very loop
    /// the firmware runs.
    struct Firmware {
        from_host: VecDeque<u8>,
        to_host: VecDeque<u8>,
        ops: Vec<Op<Wire>>,
    }

    /// The firmware's ends of the stream while it serves a request.
    struct Wire {
        input: VecDeque<u8>,
        output: VecDeque<u8>,
    }

    impl Io for Wire {
        fn read_byte(&mut self) -> u8 {
            self.input.pop_front().expect("the firmware waits for more input")
        }
        fn write_byte(&mut self, b: u8) {
            self.output.push_back(b);
        }
    }

    impl Read for Firmware {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.to_host.is_empty() {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no reply"));
            }
            let n = buf.len().min(self.to_host.len());
            for (b, x) in buf.iter_mut().zip(self.to_host.drain(..n)) {
                *b = x;
            }
            Ok(n)
        }
    }

    impl Write for Firmware {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.from_host.extend(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            // A complete request is served as it arrives.
            while self.from_host.len() >= HEADER_LEN {
                let len = u16::from_le_bytes([self.from_host[1], self.from_host[2]]) as usize;
                if self.from_host.len() < HEADER_LEN + len {
                    break;
                }
                let mut wire = Wire {
                    input: std::mem::take(&mut self.from_host),
                    output: std::mem::take(&mut self.to_host),
                };
                serve_one(&mut wire, &self.ops, || 321, || [0x10, 0x00, 0x02, 0x00, 0]);
                (self.from_host, self.to_host) = (wire.input, wire.output);
            }
            Ok(())
        }
    }

    /// A stream that swallows requests and answers with fixed bytes.
    struct Canned(std::io::Cursor<Vec<u8>>);

    impl Canned {
        fn reply(bytes: &[u8]) -> Canned {
            Canned(std::io::Cursor::new(bytes.to_vec()))
        }
    }

    impl Read for Canned {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl Write for Canned {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn double(io: &mut Wire) {
        let x = io.read_byte();
        io.reply(Status::Ok, 1);
        io.write_byte(x.wrapping_mul(2));
    }

    fn board() -> Link<Firmware> {
        Link::new(Firmware {
            from_host: VecDeque::new(),
            to_host: VecDeque::new(),
            ops: vec![Op {
                id: 0x20,
                request_len: 1,
                reply_len: 1,
                run: double,
            }],
        })
    }

    #[test]
    fn the_host_speaks_the_firmwares_protocol() {
        let mut b = board();
        assert_eq!(b.ping().unwrap(), [0x20]);
        let m = b.measure(0x20, &[21]).unwrap();
        assert_eq!(m.reply, [42]);
        assert_eq!(m.cycles, timer_cycles([0x10, 0x00, 0x02, 0x00, 0]));
        assert_eq!(m.stack, 321);
        assert_eq!(b.empty_window().unwrap(), m.cycles);
    }

    #[test]
    fn refusals_and_bad_frames_are_typed_errors() {
        let mut b = board();
        assert!(matches!(
            b.call(0x55, &[1, 2]),
            Err(Error::Refused {
                op: 0x55,
                status: Status::UnknownOp
            })
        ));
        assert!(matches!(
            b.call(0x20, &[1, 2]),
            Err(Error::Refused {
                status: Status::BadLength,
                ..
            })
        ));
        assert!(matches!(b.call(0x20, &vec![0; 70_000]), Err(Error::TooLong(70_000))));
        // A board that says nothing: an error, not a hang.
        assert!(matches!(Link::new(Canned::reply(&[])).ping(), Err(Error::Io(_))));
        // A reply with an unknown status byte, a truncated one, a foreign protocol.
        assert!(matches!(
            Link::new(Canned::reply(&[9, 0, 0])).call(0x20, &[1]),
            Err(Error::Protocol(_))
        ));
        assert!(matches!(
            Link::new(Canned::reply(&[0, 5, 0, 1])).call(0x20, &[1]),
            Err(Error::Io(_))
        ));
        assert!(matches!(
            Link::new(Canned::reply(&[0, 1, 0, 7])).ping(),
            Err(Error::Protocol(_))
        ));
        assert!(matches!(
            Link::new(Canned::reply(&[0, 1, 0, 7])).stack(),
            Err(Error::Protocol(_))
        ));
    }
}
