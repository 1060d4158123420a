//! The 25 modarith ring operations: one read-measure-reply helper, five rings.

use core::hint::black_box;
use core::ptr::addr_of_mut;

use avr_harness::{measure, Io, Op, Status, Uart};
use avr_wire::rings::{op_id, Kind, Ring};

/// Largest polynomial any ring uses.
const MAX_N: usize = 512;
static mut BUF_A: [i16; MAX_N] = [0; MAX_N];
static mut BUF_B: [i16; MAX_N] = [0; MAX_N];
static mut BUF_C: [i16; MAX_N] = [0; MAX_N];

/// The first `N` coefficients of a buffer as an array.
///
/// # Safety
/// Single-threaded; each buffer is borrowed once at a time by one handler.
unsafe fn buf<const N: usize>(b: *mut [i16; MAX_N]) -> &'static mut [i16; N] {
    const { assert!(N <= MAX_N) };
    // SAFETY: N ≤ MAX_N, same element type, exclusive per the caller's contract.
    unsafe { &mut *(b as *mut [i16; N]) }
}

/// One ring operation end to end: reads its inputs, runs `kernel` inside
/// the marker window, and replies. Inlined into each handler, so the window
/// holds a direct call of the kernel; the reading and replying around it are
/// out of line and shared by every operation of a degree (flash is tight on
/// the ATmega4808).
#[inline(always)]
fn serve<const N: usize>(
    io: &mut Uart,
    ring: Ring,
    kind: Kind,
    kernel: impl FnOnce(&mut [i16; N], &mut [i16; N], &mut [i16; N]) -> Option<u8>,
) {
    // What depends on `kind` is decided here, at compile time, so the
    // shared functions below take plain numbers.
    read_inputs::<N>(io, kind.inputs());
    // SAFETY: one borrow per buffer, single-threaded; they end before
    // `write_reply` borrows again.
    let (a, b, c) = unsafe { buffers::<N>() };
    let flag = measure(op_id(ring, kind), || kernel(a, b, c));
    write_reply::<N>(
        io,
        kind.reply_len(N),
        matches!(kind, Kind::BaseMul | Kind::BaseMulAcc),
        flag,
    );
}

/// The three buffers, as polynomials of `N` coefficients.
///
/// # Safety
/// Single-threaded; no other borrow of the buffers is alive.
unsafe fn buffers<const N: usize>() -> (&'static mut [i16; N], &'static mut [i16; N], &'static mut [i16; N]) {
    // SAFETY: distinct statics; exclusive per the caller's contract.
    unsafe {
        (
            buf::<N>(addr_of_mut!(BUF_A)),
            buf::<N>(addr_of_mut!(BUF_B)),
            buf::<N>(addr_of_mut!(BUF_C)),
        )
    }
}

/// Reads `kind`'s inputs into the buffers: a, then b, then c, as many as it takes.
#[inline(never)]
fn read_inputs<const N: usize>(io: &mut Uart, inputs: usize) {
    // SAFETY: no other borrow is alive while the request is read.
    let (a, b, c) = unsafe { buffers::<N>() };
    // Spelled out: a loop over `[a, b, c].into_iter().enumerate()` read
    // correctly on the ATmega1284p (opt-level 3) but hung the ATmega4808
    // image (opt-level "s") in its first ring operation (CI's yasimavr smoke
    // test; not investigated further).
    io.read_i16s(a);
    if inputs > 1 {
        io.read_i16s(b);
    }
    if inputs > 2 {
        io.read_i16s(c);
    }
}

/// Replies with the flag byte (if any) and the output: c for products, else a.
#[inline(never)]
fn write_reply<const N: usize>(io: &mut Uart, reply_len: u16, product: bool, flag: Option<u8>) {
    io.reply(Status::Ok, reply_len);
    if let Some(flag) = flag {
        io.write_byte(flag);
    }
    // SAFETY: the operation's borrows ended; one borrow, single-threaded.
    let out = unsafe {
        buf::<N>(if product {
            addr_of_mut!(BUF_C)
        } else {
            addr_of_mut!(BUF_A)
        })
    };
    io.write_i16s(out);
}

macro_rules! ring {
    ($m:ident, $ring:expr, $T:ty) => {
        pub mod $m {
            use super::*;
            type T = $T;
            const RING: Ring = $ring;
            const N: usize = RING.n();

            #[inline(never)]
            fn k_forward(a: &mut [i16; N]) {
                T::forward(a)
            }
            #[inline(never)]
            fn k_inverse(a: &mut [i16; N]) {
                T::inverse(a)
            }
            #[inline(never)]
            fn k_base_mul(a: &[i16; N], b: &[i16; N], c: &mut [i16; N]) {
                T::base_mul(a, b, c)
            }
            #[inline(never)]
            fn k_base_mul_acc(a: &[i16; N], b: &[i16; N], c: &mut [i16; N]) {
                T::base_mul_acc(a, b, c)
            }
            #[inline(never)]
            fn k_base_inv(a: &mut [i16; N]) -> u8 {
                T::base_inv(a).unwrap_u8()
            }

            fn forward(io: &mut Uart) {
                serve::<N>(io, RING, Kind::Forward, |a, _, _| {
                    k_forward(black_box(a));
                    None
                })
            }
            fn inverse(io: &mut Uart) {
                serve::<N>(io, RING, Kind::Inverse, |a, _, _| {
                    k_inverse(black_box(a));
                    None
                })
            }
            fn base_mul(io: &mut Uart) {
                serve::<N>(io, RING, Kind::BaseMul, |a, b, c| {
                    k_base_mul(black_box(a), black_box(b), black_box(c));
                    None
                })
            }
            fn base_mul_acc(io: &mut Uart) {
                serve::<N>(io, RING, Kind::BaseMulAcc, |a, b, c| {
                    k_base_mul_acc(black_box(a), black_box(b), black_box(c));
                    None
                })
            }
            fn base_inv(io: &mut Uart) {
                serve::<N>(io, RING, Kind::BaseInv, |a, _, _| Some(k_base_inv(black_box(a))))
            }

            const fn op(kind: Kind, run: fn(&mut Uart)) -> Op<Uart> {
                Op {
                    id: op_id(RING, kind),
                    request_len: kind.request_len(N),
                    reply_len: kind.reply_len(N),
                    run,
                }
            }

            /// This ring's operations.
            pub const OPS: [Op<Uart>; 5] = [
                op(Kind::Forward, forward),
                op(Kind::Inverse, inverse),
                op(Kind::BaseMul, base_mul),
                op(Kind::BaseMulAcc, base_mul_acc),
                op(Kind::BaseInv, base_inv),
            ];
        }
    };
}

ring!(ctru769, Ring::Ctru769, modarith::rings::Ctru769);
ring!(ctru3329, Ring::Ctru3329, modarith::rings::Ctru3329);
ring!(kyber, Ring::Kyber, modarith::rings::Kyber);
ring!(saber3329, Ring::Saber3329, modarith::rings::Saber3329);
ring!(saber7681, Ring::Saber7681, modarith::rings::Saber7681);
