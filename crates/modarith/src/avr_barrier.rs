//! The register-only optimisation barrier behind `opaque_i16` (AVR only).
#![allow(unsafe_code)]

/// Returns `x` unchanged, unknown to the optimiser.
#[inline(always)]
pub fn i16(mut x: i16) -> i16 {
    // SAFETY: an empty instruction sequence; the value stays in its registers.
    unsafe { core::arch::asm!("/* {0} */", inout(reg_pair) x, options(pure, nomem, nostack)) };
    x
}
