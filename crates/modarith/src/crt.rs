//! Chinese remaindering of two NTT results into the exact signed integer.
//!
//! Saber (q1 = 3329, q2 = 7681) and CTRU-Light decryption (q1 = 769,
//! q2 = 3329) multiply in two NTT rings and need the true product
//! coefficient, which is known to satisfy |x| < q1·q2 / 2. The schemes assert
//! their worst case with [`crt_bound_holds`] in a `const` block.

use crate::consts::prescale;
use crate::modulus::{Modulus, Q3329, Q769};
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

/// Packed bytes of one block of [`lift_block_769_3329`]: eight 10-bit values.
pub const PACKED_BLOCK_BYTES: usize = 10;

/// The low bytes of the CRT lifts of eight values x_i with |x_i| ≤
/// 1,280,000 (CTRU-Light's decryption product, §3): x_i mod 769 comes
/// packed as 10-bit values x_i mod 769 + 384 ∈ [0, 768] (a little-endian
/// bit stream, 10 bytes, the layout of a packed public key), x_i mod 3329
/// centred in `w`; `out_i` = x_i mod 256. Since 769 ≡ 1 (mod 256), the lift
/// r1 + 769·u needs only r1 + u. On AVR one assembly routine per block
/// (`crt_lift_block_q769_q3329`, tested against this function's portable
/// path in simavr), elsewhere [`crt_lift_centred`] per value.
#[inline]
pub fn lift_block_769_3329(packed: &[u8; PACKED_BLOCK_BYTES], w: &[i16; 8], out: &mut [u8; 8]) {
    #[cfg(ntt_asm)]
    crate::asm::crt_lift_block_769_3329(packed, w, out, LIFT_769_3329_INV_R);
    #[cfg(not(ntt_asm))]
    lift_block_769_3329_portable(packed, w, out);
}

/// 769⁻¹·2^16 mod 3329, centred: the Montgomery factor of the lift (the
/// assembly takes it as an argument; its test passes this constant too).
pub const LIFT_769_3329_INV_R: i16 = prescale(crt_inverse(769, 3329) as u32, Q3329::R_MOD_Q, Q3329::Q);

/// The portable [`lift_block_769_3329`] (the reference of the assembly).
pub fn lift_block_769_3329_portable(packed: &[u8; PACKED_BLOCK_BYTES], w: &[i16; 8], out: &mut [u8; 8]) {
    let mut bits = 0u32;
    let mut have = 0;
    let mut next = packed.iter();
    for (o, &r2) in out.iter_mut().zip(w.iter()) {
        while have < 10 {
            bits |= (*next.next().unwrap_or(&0) as u32) << have;
            have += 8;
        }
        let r1 = (bits & 0x3FF) as i16 - Q769::HALF;
        bits >>= 10;
        have -= 10;
        *o = crt_lift_centred::<Q769, Q3329>(r1, r2) as u8;
    }
}
