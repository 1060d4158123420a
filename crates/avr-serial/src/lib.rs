#![doc = include_str!("../README.md")]

use std::time::Duration;

pub use avr_wire::client::{Client, Error, Measured, Stream};
pub use serialport;

/// The protocol over a byte stream: a serial port, a pseudo-terminal, a
/// buffer in tests.
pub type Link<T> = Client<Stream<T>>;

/// Speaks the protocol over `io`.
pub fn link<T: std::io::Read + std::io::Write>(io: T) -> Link<T> {
    Client::new(Stream(io))
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
        .map_err(|e| Error::Transport(format!("cannot open serial port {path}: {e}").into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use avr_harness::protocol::{serve_one, timer_cycles, Io, Op, Status, HEADER_LEN};
    use std::collections::VecDeque;
    use std::io::{Read, Write};

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
        link(Firmware {
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
        assert!(matches!(link(Canned::reply(&[])).ping(), Err(Error::Io(_))));
        // A reply with an unknown status byte, a truncated one, a foreign protocol.
        assert!(matches!(
            link(Canned::reply(&[9, 0, 0])).call(0x20, &[1]),
            Err(Error::Protocol(_))
        ));
        assert!(matches!(
            link(Canned::reply(&[0, 5, 0, 1])).call(0x20, &[1]),
            Err(Error::Io(_))
        ));
        assert!(matches!(
            link(Canned::reply(&[0, 1, 0, 7])).ping(),
            Err(Error::Protocol(_))
        ));
        assert!(matches!(
            link(Canned::reply(&[0, 1, 0, 7])).stack(),
            Err(Error::Protocol(_))
        ));
    }
}
