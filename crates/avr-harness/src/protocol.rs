//! The framed command protocol, independent of hardware (host-testable):
//! the firmware's side (the [`Io`] channel, the [`Op`] table, [`serve_one`]).
//! The frame itself (header, status, built-in op ids) is `avr_wire::frame`,
//! re-exported here.

pub use avr_wire::frame::*;

/// A blocking byte channel (the UART on the device, a buffer in tests).
pub trait Io {
    /// Waits for and returns the next input byte.
    fn read_byte(&mut self) -> u8;
    /// Sends one byte.
    fn write_byte(&mut self, b: u8);

    /// Reads a little-endian u16.
    fn read_u16(&mut self) -> u16 {
        let lo = self.read_byte();
        u16::from_le_bytes([lo, self.read_byte()])
    }
    /// Writes a little-endian u16.
    fn write_u16(&mut self, v: u16) {
        let [lo, hi] = v.to_le_bytes();
        self.write_byte(lo);
        self.write_byte(hi);
    }
    /// Fills `out` with input bytes.
    fn read_bytes(&mut self, out: &mut [u8]) {
        for x in out.iter_mut() {
            *x = self.read_byte();
        }
    }
    /// Writes every byte of `v`.
    fn write_bytes(&mut self, v: &[u8]) {
        for &x in v {
            self.write_byte(x);
        }
    }
    /// Fills `out` with little-endian i16 values.
    fn read_i16s(&mut self, out: &mut [i16]) {
        for x in out.iter_mut() {
            *x = self.read_u16() as i16;
        }
    }
    /// Writes `v` as little-endian i16 values.
    fn write_i16s(&mut self, v: &[i16]) {
        for x in v {
            self.write_u16(*x as u16);
        }
    }
    /// Discards `n` input bytes.
    fn skip(&mut self, n: u16) {
        for _ in 0..n {
            self.read_byte();
        }
    }
    /// Writes a reply header.
    fn reply(&mut self, status: Status, len: u16) {
        for b in encode_header(status as u8, len) {
            self.write_byte(b);
        }
    }
    /// Waits until every written byte has left (before the MCU stops).
    fn flush(&mut self) {}
}

/// A registered operation.
///
/// `run` is called after the header was checked: it must read exactly
/// `request_len` bytes, then write the reply header (`io.reply(Status::Ok,
/// reply_len)`) and exactly `reply_len` payload bytes.
pub struct Op<I> {
    /// Request id (≥ [`FIRST_USER_OP`], ≠ [`OP_EXIT`]); also its marker window id.
    pub id: u8,
    /// Exact request payload length.
    pub request_len: u16,
    /// Reply payload length.
    pub reply_len: u16,
    /// The handler.
    pub run: fn(&mut I),
}

impl<I> Clone for Op<I> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<I> Copy for Op<I> {}

/// A handler that does nothing: the filler of [`ops_table`] before it is written.
fn no_op<I>(_: &mut I) {}

/// How many ops `groups` hold together (the length of [`ops_table`]).
pub const fn ops_count<I>(groups: &[&[Op<I>]]) -> usize {
    let (mut n, mut g) = (0, 0);
    while g < groups.len() {
        n += groups[g].len();
        g += 1;
    }
    n
}

/// The ops of `groups`, in order, as one table (`N` = [`ops_count`]): a
/// firmware's op table built at compile time from the groups its features
/// select.
pub const fn ops_table<I, const N: usize>(groups: &[&[Op<I>]]) -> [Op<I>; N] {
    let mut out = [Op {
        id: 0,
        request_len: 0,
        reply_len: 0,
        run: no_op::<I>,
    }; N];
    let (mut g, mut i) = (0, 0);
    while g < groups.len() {
        let mut k = 0;
        while k < groups[g].len() {
            out[i] = groups[g][k];
            i += 1;
            k += 1;
        }
        g += 1;
    }
    out
}

/// What the server loop does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep serving.
    Continue,
    /// Stop the MCU.
    Exit,
}

/// Reads and answers one request.
pub fn serve_one<I: Io>(
    io: &mut I,
    ops: &[Op<I>],
    last_stack: fn() -> u16,
    last_timers: fn() -> [u8; TIMERS_LEN],
) -> Flow {
    let mut h = [0u8; HEADER_LEN];
    for b in h.iter_mut() {
        *b = io.read_byte();
    }
    let (op, len) = decode_header(h);
    let mut flow = Flow::Continue;
    match op {
        OP_PING => {
            io.skip(len);
            io.reply(Status::Ok, 1 + ops.len() as u16);
            io.write_byte(VERSION);
            for o in ops {
                io.write_byte(o.id);
            }
        }
        OP_EMPTY => {
            io.skip(len);
            crate::measure(EMPTY_WINDOW, || ());
            io.reply(Status::Ok, 0);
        }
        OP_STACK => {
            io.skip(len);
            io.reply(Status::Ok, 2);
            io.write_u16(last_stack());
        }
        OP_CYCLES => {
            io.skip(len);
            io.reply(Status::Ok, TIMERS_LEN as u16);
            io.write_bytes(&last_timers());
        }
        OP_ECHO => {
            io.reply(Status::Ok, len);
            for _ in 0..len {
                let b = io.read_byte();
                io.write_byte(b);
            }
        }
        OP_EXIT => {
            io.skip(len);
            io.reply(Status::Ok, 0);
            flow = Flow::Exit;
        }
        _ => match ops.iter().find(|o| o.id == op) {
            None => {
                io.skip(len);
                io.reply(Status::UnknownOp, 0);
            }
            Some(o) if o.request_len != len => {
                io.skip(len);
                io.reply(Status::BadLength, 0);
            }
            Some(o) => (o.run)(io),
        },
    }
    if flow == Flow::Exit {
        io.flush();
    }
    flow
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::vec::Vec;

    struct Buf {
        input: VecDeque<u8>,
        output: Vec<u8>,
    }

    impl Io for Buf {
        fn read_byte(&mut self) -> u8 {
            self.input.pop_front().expect("read past the end of the request")
        }
        fn write_byte(&mut self, b: u8) {
            self.output.push(b);
        }
    }

    fn request(op: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = encode_header(op, payload.len() as u16).to_vec();
        v.extend_from_slice(payload);
        v
    }

    /// Negates two i16 values.
    fn negate(io: &mut Buf) {
        let mut a = [0i16; 2];
        io.read_i16s(&mut a);
        io.reply(Status::Ok, 4);
        io.write_i16s(&[-a[0], -a[1]]);
    }

    const OPS: &[Op<Buf>] = &[Op {
        id: 0x10,
        request_len: 4,
        reply_len: 4,
        run: negate,
    }];

    fn run(reqs: &[Vec<u8>]) -> (Vec<u8>, Vec<Flow>) {
        let mut io = Buf {
            input: reqs.concat().into(),
            output: Vec::new(),
        };
        let flows = reqs
            .iter()
            .map(|_| serve_one(&mut io, OPS, || 42, || [1, 2, 3, 4, 5]))
            .collect();
        assert!(io.input.is_empty(), "request not fully consumed");
        (io.output, flows)
    }

    #[test]
    fn header_round_trip() {
        for len in [0u16, 1, 255, 256, 1024, u16::MAX] {
            assert_eq!(decode_header(encode_header(0x42, len)), (0x42, len));
        }
        assert_eq!(encode_header(1, 0x0203), [1, 3, 2]);
        for s in [Status::Ok, Status::UnknownOp, Status::BadLength] {
            assert_eq!(Status::from_u8(s as u8), Some(s));
        }
        assert_eq!(Status::from_u8(9), None);
    }

    #[test]
    fn registered_op() {
        let (out, flows) = run(&[request(0x10, &[1, 0, 0xFF, 0x7F])]);
        assert_eq!(out, [0, 4, 0, 0xFF, 0xFF, 0x01, 0x80]);
        assert_eq!(flows, [Flow::Continue]);
    }

    #[test]
    fn errors_discard_the_payload() {
        let (out, _) = run(&[
            request(0x55, &[9, 9, 9]),
            request(0x10, &[1, 2]),
            request(0x10, &[0; 4]),
        ]);
        assert_eq!(out, [1, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn builtins() {
        let (out, flows) = run(&[
            request(OP_PING, &[]),
            request(OP_ECHO, &[7, 8]),
            request(OP_EMPTY, &[]),
            request(OP_STACK, &[]),
            request(OP_CYCLES, &[]),
            request(OP_EXIT, &[]),
        ]);
        assert_eq!(
            out,
            [0, 2, 0, VERSION, 0x10, 0, 2, 0, 7, 8, 0, 0, 0, 0, 2, 0, 42, 0, 0, 5, 0, 1, 2, 3, 4, 5, 0, 0, 0]
        );
        assert_eq!(flows.last(), Some(&Flow::Exit));
    }

    /// What the two timers read after `cycles`, the coarse prescaler's
    /// phase being `phase` cycles into its 1,024 (unknown on the chip).
    fn reading(cycles: u64, phase: u64) -> [u8; TIMERS_LEN] {
        let fine = (cycles % 65_536) as u16;
        let ticks = (cycles + phase) >> COARSE_SHIFT;
        let coarse = (ticks % 65_536) as u16;
        let [f0, f1] = fine.to_le_bytes();
        let [c0, c1] = coarse.to_le_bytes();
        [f0, f1, c0, c1, (ticks >> 16) as u8 & 1]
    }

    #[test]
    fn timer_readings_give_the_exact_count_over_the_whole_range() {
        let mut cases = std::vec![0u64, 1, 511, 512, 1023, 1024, 65_535, 65_536, 65_537, 131_071];
        cases.extend([(1u64 << 26) - 1, 1 << 26, (1 << 26) + 12_345, TIMER_RANGE - 1_024 * 3]);
        // A spread of window lengths up to the range.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push(x % (TIMER_RANGE - 1_024 * 3));
        }
        for &c in &cases {
            for phase in [0, 1, 512, 1023] {
                assert_eq!(timer_cycles(reading(c, phase)), c, "{c} cycles, phase {phase}");
            }
        }
    }

    #[test]
    fn i16_io() {
        let mut io = Buf {
            input: VecDeque::from(std::vec![0x00, 0x80, 0xFF, 0x7F, 0x34, 0x12]),
            output: Vec::new(),
        };
        let mut a = [0i16; 3];
        io.read_i16s(&mut a);
        assert_eq!(a, [i16::MIN, i16::MAX, 0x1234]);
        io.write_i16s(&a);
        assert_eq!(io.output, [0x00, 0x80, 0xFF, 0x7F, 0x34, 0x12]);
    }
}
