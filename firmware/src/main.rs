//! Benchmark and differential-test firmware: serves every operation of the
//! catalog (`firmware::ops`) over UART0 with the `avr-harness` protocol.
//!
//! Build it for the MCU with `cargo xtask build-avr --mcu atmega1284p`; on the
//! host this binary only explains that.

#![cfg_attr(target_arch = "avr", no_std, no_main)]

#[cfg(not(target_arch = "avr"))]
fn main() {
    eprintln!(
        "this is AVR firmware: build it with `cargo xtask build-avr`, run it with `cargo xtask sim-test`/`bench`"
    );
}

#[cfg(target_arch = "avr")]
mod device {
    use core::hint::black_box;
    use core::ptr::addr_of_mut;

    use avr_harness::{measure, Io, Op, Status, Uart};
    use firmware::{op_id, Kind, Ring};

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

    macro_rules! ring {
        ($m:ident, $ring:expr, $T:ty) => {
            mod $m {
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
                    // SAFETY: one borrow per buffer, single-threaded.
                    let a = unsafe { buf::<N>(addr_of_mut!(BUF_A)) };
                    io.read_i16s(a);
                    measure(op_id(RING, Kind::Forward), || k_forward(black_box(a)));
                    io.reply(Status::Ok, Kind::Forward.reply_len(N));
                    io.write_i16s(a);
                }
                fn inverse(io: &mut Uart) {
                    // SAFETY: as above.
                    let a = unsafe { buf::<N>(addr_of_mut!(BUF_A)) };
                    io.read_i16s(a);
                    measure(op_id(RING, Kind::Inverse), || k_inverse(black_box(a)));
                    io.reply(Status::Ok, Kind::Inverse.reply_len(N));
                    io.write_i16s(a);
                }
                fn base_mul(io: &mut Uart) {
                    // SAFETY: as above.
                    let (a, b, c) = unsafe {
                        (
                            buf::<N>(addr_of_mut!(BUF_A)),
                            buf::<N>(addr_of_mut!(BUF_B)),
                            buf::<N>(addr_of_mut!(BUF_C)),
                        )
                    };
                    io.read_i16s(a);
                    io.read_i16s(b);
                    measure(op_id(RING, Kind::BaseMul), || {
                        k_base_mul(black_box(a), black_box(b), black_box(c))
                    });
                    io.reply(Status::Ok, Kind::BaseMul.reply_len(N));
                    io.write_i16s(c);
                }
                fn base_mul_acc(io: &mut Uart) {
                    // SAFETY: as above.
                    let (a, b, c) = unsafe {
                        (
                            buf::<N>(addr_of_mut!(BUF_A)),
                            buf::<N>(addr_of_mut!(BUF_B)),
                            buf::<N>(addr_of_mut!(BUF_C)),
                        )
                    };
                    io.read_i16s(a);
                    io.read_i16s(b);
                    io.read_i16s(c);
                    measure(op_id(RING, Kind::BaseMulAcc), || {
                        k_base_mul_acc(black_box(a), black_box(b), black_box(c))
                    });
                    io.reply(Status::Ok, Kind::BaseMulAcc.reply_len(N));
                    io.write_i16s(c);
                }
                fn base_inv(io: &mut Uart) {
                    // SAFETY: as above.
                    let a = unsafe { buf::<N>(addr_of_mut!(BUF_A)) };
                    io.read_i16s(a);
                    let ok = measure(op_id(RING, Kind::BaseInv), || k_base_inv(black_box(a)));
                    io.reply(Status::Ok, Kind::BaseInv.reply_len(N));
                    io.write_byte(ok);
                    io.write_i16s(a);
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

    const fn all_ops() -> [Op<Uart>; 25] {
        let groups = [ctru769::OPS, ctru3329::OPS, kyber::OPS, saber3329::OPS, saber7681::OPS];
        let mut out = [groups[0][0]; 25];
        let mut g = 0;
        while g < groups.len() {
            let mut k = 0;
            while k < 5 {
                out[g * 5 + k] = groups[g][k];
                k += 1;
            }
            g += 1;
        }
        out
    }

    static OPS: [Op<Uart>; 25] = all_ops();

    #[no_mangle]
    extern "C" fn main() -> ! {
        let mut uart = Uart::init();
        avr_harness::serve(&mut uart, &OPS)
    }

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        // Tell the host through the marker register, then stop.
        avr_harness::marker_begin(0x7F);
        avr_harness::exit()
    }
}
