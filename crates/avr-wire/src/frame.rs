//! The frame of the harness protocol: header, status, built-in operations.
//!
//! Request `[op u8][len u16 le][payload]`, reply `[status u8][len u16 le][payload]`.
//! Multi-byte values are little-endian; polynomials travel as `i16` LE.
//!
//! Built-in operations (ids below [`FIRST_USER_OP`]):
//! - [`OP_PING`]: reply = protocol version, then the ids of every registered op;
//! - [`OP_EMPTY`]: an empty marker window (id [`EMPTY_WINDOW`]), for calibration;
//! - [`OP_STACK`]: reply = painted-stack bytes of the last measured window (u16);
//! - [`OP_ECHO`]: reply = the request payload;
//! - [`OP_CYCLES`]: reply = the on-chip timers' reading of the last measured
//!   window (5 bytes, [`timer_cycles`] turns them into cycles);
//! - [`OP_EXIT`]: empty reply, then the MCU stops (`cli; sleep`).

/// Protocol version reported by [`OP_PING`].
pub const VERSION: u8 = 1;
/// Size of both headers.
pub const HEADER_LEN: usize = 3;
/// Liveness check and op list.
pub const OP_PING: u8 = 0x00;
/// Empty measured window.
pub const OP_EMPTY: u8 = 0x01;
/// Painted-stack measure of the last window.
pub const OP_STACK: u8 = 0x02;
/// Echo the payload.
pub const OP_ECHO: u8 = 0x03;
/// On-chip timer reading of the last window.
pub const OP_CYCLES: u8 = 0x04;
/// Length of [`OP_CYCLES`]'s reply.
pub const TIMERS_LEN: usize = 5;
/// The coarse timer counts once every `1 << COARSE_SHIFT` cycles.
pub const COARSE_SHIFT: u32 = 10;
/// Longest window [`timer_cycles`] can tell apart: the coarse timer and its
/// overflow flag span 2^17 ticks of 1024 cycles (6.7 s at 20 MHz).
pub const TIMER_RANGE: u64 = 1 << (17 + COARSE_SHIFT);

/// Cycles of a window from the on-chip timers' reading
/// `fine (u16 LE) ‖ coarse (u16 LE) ‖ coarse overflowed (0/1)`.
///
/// The fine timer counts every cycle but wraps every 65,536; the coarse
/// one counts every 1,024 cycles, so it places the count within 2,048
/// cycles (its prescaler's phase is unknown), far less than the fine
/// timer's period: the count is the one value congruent to `fine` modulo
/// 65,536 nearest to the coarse estimate. No interrupt is needed, so the
/// measured code runs exactly as it does unmeasured. Exact for windows
/// shorter than [`TIMER_RANGE`].
pub fn timer_cycles(raw: [u8; TIMERS_LEN]) -> u64 {
    let fine = u16::from_le_bytes([raw[0], raw[1]]) as i64;
    let coarse = u16::from_le_bytes([raw[2], raw[3]]) as i64 + (((raw[4] & 1) as i64) << 16);
    // The middle of the coarse tick's span.
    let estimate = (coarse << COARSE_SHIFT) + (1 << (COARSE_SHIFT - 1));
    let wraps = (estimate - fine + (1 << 15)).div_euclid(1 << 16).max(0);
    (fine + (wraps << 16)) as u64
}
/// Stop the MCU.
pub const OP_EXIT: u8 = 0x7F;
/// Smallest id firmware may register.
pub const FIRST_USER_OP: u8 = 0x10;
/// [`OP_STACK`]'s answer when the painted stack reached the end of static
/// data: the stack overflowed into `.bss`/`.data` and the true need is unknown.
pub const STACK_OVERFLOW: u16 = u16::MAX;
/// Marker id of [`OP_EMPTY`]'s window.
pub const EMPTY_WINDOW: u8 = 0x01;

/// Reply status byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// Success; the payload follows.
    Ok = 0,
    /// No such operation (payload discarded).
    UnknownOp = 1,
    /// The request length does not match the operation (payload discarded).
    BadLength = 2,
}

impl Status {
    /// Decodes a status byte.
    pub fn from_u8(b: u8) -> Option<Status> {
        match b {
            0 => Some(Status::Ok),
            1 => Some(Status::UnknownOp),
            2 => Some(Status::BadLength),
            _ => None,
        }
    }
}

/// Encodes a request or reply header.
pub const fn encode_header(first: u8, len: u16) -> [u8; HEADER_LEN] {
    let l = len.to_le_bytes();
    [first, l[0], l[1]]
}

/// Decodes a header into (op or status, payload length).
pub const fn decode_header(h: [u8; HEADER_LEN]) -> (u8, u16) {
    (h[0], u16::from_le_bytes([h[1], h[2]]))
}
