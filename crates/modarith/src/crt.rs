//! Chinese remaindering of two NTT results into the exact signed integer.
//!
//! Saber (q1 = 3329, q2 = 7681) multiplies in two NTT rings and needs the
//! true product coefficient, which is known to satisfy |x| < q1·q2 / 2. A
//! scheme asserts its worst case with [`crt_bound_holds`] in a `const` block.

use crate::consts::prescale;
use crate::modulus::Modulus;
use crate::reduce::montgomery;

pub use crate::consts::crt_inverse;

/// True iff every integer with |x| ≤ `max_abs` is recovered exactly by
/// [`crt_lift`] for moduli `q1`, `q2`: max_abs ≤ (q1·q2 − 1) / 2.
pub const fn crt_bound_holds(max_abs: u32, q1: u16, q2: u16) -> bool {
    (max_abs as u64) * 2 < q1 as u64 * q2 as u64
}

/// Lifts x mod q1 (`r1`) and x mod q2 (`r2`), any |r| < 2^15, to the unique
/// x ≡ r1 (mod q1), x ≡ r2 (mod q2) with |x| ≤ (q1·q2 − 1)/2.
///
/// x = r1 + q1·u with u = (r2 − r1)·q1^{-1} mod q2, both parts centred, so no
/// final correction is needed. The product is a 16-bit Montgomery reduction
/// by (q1^{-1}·2^16 mod q2): no 64-bit arithmetic, which an 8-bit core pays
/// dearly for. Branch-free, division-free: the constant is evaluated at
/// compile time (`const` block); as a plain call, an opt-level "s" build
/// computed the modular inverse by division on every lift.
#[inline]
pub fn crt_lift<M1: Modulus, M2: Modulus>(r1: i16, r2: i16) -> i32 {
    let inv_r = const { prescale(crt_inverse(M1::Q, M2::Q) as u32, M2::R_MOD_Q, M2::Q) };
    let r1 = M1::center(r1);
    let d = M2::center(M2::center(r2).wrapping_sub(r1));
    // |montgomery| < q2: the masked fix-up centres it, no Barrett product.
    let u = M2::center_fixup(montgomery::<M2>(d as i32 * inv_r as i32));
    r1 as i32 + M1::Q as i32 * u as i32
}

/// [`crt_lift`] for residues that are already centred (|r1| ≤ (q1−1)/2,
/// |r2| ≤ (q2−1)/2), as the NTTs return them: it skips the input
/// reductions, which on an 8-bit core are most of the lift's cost.
#[inline]
pub fn crt_lift_centred<M1: Modulus, M2: Modulus>(r1: i16, r2: i16) -> i32 {
    let inv_r = const { prescale(crt_inverse(M1::Q, M2::Q) as u32, M2::R_MOD_Q, M2::Q) };
    let u = M2::center_fixup(montgomery::<M2>((r2 - r1) as i32 * inv_r as i32));
    r1 as i32 + M1::Q as i32 * u as i32
}
