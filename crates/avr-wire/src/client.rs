//! The one host client of the harness protocol (feature `std`), over any
//! [`Transport`]: a serial port or pseudo-terminal ([`Stream`], opened by
//! `avr-serial`), the simulator (`avr-sim`), a buffer in tests.
//!
//! A board has no simulator to stamp the marker writes, so every measured
//! operation can be timed by the firmware's own timers
//! ([`crate::frame::OP_CYCLES`]), which the simulator runs check against the
//! markers (`cargo xtask bench`, `ct`, `mqtt`: timers = markers + 3 cycles,
//! on every operation).

use std::boxed::Box;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use crate::frame::{
    decode_header, encode_header, timer_cycles, Status, HEADER_LEN, OP_CYCLES, OP_EMPTY, OP_EXIT, OP_PING, OP_STACK,
    TIMERS_LEN, VERSION,
};

/// How request bytes reach the firmware and its reply bytes come back.
pub trait Transport {
    /// Sends `bytes` to the firmware.
    fn send(&mut self, bytes: &[u8]) -> Result<(), Error>;
    /// The next `n` bytes the firmware writes (an error, not a hang, when
    /// they do not come).
    fn receive(&mut self, n: usize) -> Result<Vec<u8>, Error>;
}

/// A byte stream as a transport: a serial port, a pseudo-terminal, a
/// buffer (its read timeout bounds every reply).
pub struct Stream<T>(pub T);

impl<T: std::io::Read + std::io::Write> Transport for Stream<T> {
    fn send(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.0.write_all(bytes)?;
        Ok(self.0.flush()?)
    }

    fn receive(&mut self, n: usize) -> Result<Vec<u8>, Error> {
        let mut bytes = std::vec![0u8; n];
        self.0.read_exact(&mut bytes)?;
        Ok(bytes)
    }
}

/// What can go wrong talking to the firmware.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a stream failed (a timeout included: the board
    /// did not answer in time).
    Io(std::io::Error),
    /// The transport failed otherwise (e.g. the simulator's cycle budget ran out).
    Transport(Box<dyn std::error::Error + Send + Sync>),
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

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                write!(f, "the board did not answer in time ({e})")
            }
            Error::Io(e) => write!(f, "I/O: {e}"),
            Error::Transport(e) => write!(f, "{e}"),
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

/// One operation measured by the firmware's own timers and stack painting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    /// The reply payload.
    pub reply: Vec<u8>,
    /// The window's cycles by the on-chip timers (the empty window's
    /// included: subtract [`Client::empty_window`]).
    pub cycles: u64,
    /// Painted stack bytes of the window
    /// ([`crate::frame::STACK_OVERFLOW`] if it ran into static data).
    pub stack: u16,
}

/// The harness protocol over a transport.
pub struct Client<T> {
    transport: T,
}

impl<T: Transport> Client<T> {
    /// Speaks the protocol over `transport`.
    pub fn new(transport: T) -> Self {
        Client { transport }
    }

    /// The transport (e.g. the simulator, for its markers).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The transport, given back.
    pub fn into_transport(self) -> T {
        self.transport
    }

    /// Sends one request and returns the reply payload (an error unless the status is Ok).
    pub fn call(&mut self, op: u8, payload: &[u8]) -> Result<Vec<u8>, Error> {
        let len = u16::try_from(payload.len()).map_err(|_| Error::TooLong(payload.len()))?;
        let mut frame = encode_header(op, len).to_vec();
        frame.extend_from_slice(payload);
        self.transport.send(&frame)?;
        let h = self.transport.receive(HEADER_LEN)?;
        let (status, len) = decode_header([h[0], h[1], h[2]]);
        let body = self.transport.receive(len as usize)?;
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
            None => Err(Error::Protocol("empty ping reply".to_string())),
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

    /// Asks the firmware to stop (`cli; sleep` after its empty reply).
    pub fn exit(&mut self) -> Result<(), Error> {
        self.call(OP_EXIT, &[]).map(drop)
    }
}
