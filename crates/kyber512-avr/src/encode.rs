//! Encodings and compression (FIPS 203 §4.2.1).
//!
//! Compress_d divides by q; on secret data that division must not be a
//! variable-time instruction (KyberSlash), so it is a multiplication by a
//! precomputed reciprocal and a shift, proven exact for every input by a test.

use modarith::{Modulus, Q3329};

use crate::params::{N, Q};
use crate::poly::Poly;

/// round(2^31 / q): with S = 31 − d and C = ⌊2^S·((q−1)/2)/q⌋,
/// Compress_d(x) = ((x·M + C) ≫ S) mod 2^d for every x ∈ [0, q) and
/// d ≤ 11, in 32-bit arithmetic (the 8-bit core has no fast 64-bit multiply).
const RECIP_Q: u32 = ((1u64 << 31) + (Q as u64 >> 1)).div_euclid(Q as u64) as u32;

/// Compress_d(x) = round(2^d·x / q) mod 2^d for x ∈ [0, q) (Eq. 4.7), constant
/// time: a multiply-shift, proven exact for all inputs by a test. `D` is a
/// const parameter, so the shift is a constant (a variable shift on the AVR
/// is a loop, one bit a turn).
#[inline]
pub fn compress<const D: u32>(x: u16) -> u16 {
    (((x as u32 * RECIP_Q + COMPRESS_HALF[D as usize]) >> (31 - D)) as u16) & ((1 << D) - 1)
}

/// C for each d (index d ≤ 11; d is public).
const COMPRESS_HALF: [u32; 12] = {
    let mut c = [0u32; 12];
    let mut d = 1;
    while d < 12 {
        c[d] = ((1u64 << (31 - d)) * (Q as u64 >> 1)).div_euclid(Q as u64) as u32;
        d += 1;
    }
    c
};

/// Decompress_d(y) = round(q·y / 2^d) (Eq. 4.8), `D` constant as for [`compress`].
#[inline]
pub fn decompress<const D: u32>(y: u16) -> u16 {
    ((y as u32 * Q as u32 + (1 << (D - 1))) >> D) as u16
}

/// ByteEncode_d (Algorithm 5) of 256 d-bit values produced by `value(i)`, into 32·d bytes.
pub fn byte_encode(d: u32, out: &mut [u8], value: impl FnMut(usize) -> u16) {
    kem_common::pack_bits(d, N, out, value);
}

/// ByteDecode_d (Algorithm 6): calls `sink(i, value)` for the 256 d-bit values of 32·d bytes.
pub fn byte_decode(d: u32, input: &[u8], sink: impl FnMut(usize, u16)) {
    kem_common::unpack_bits(d, N, input, sink);
}

/// ByteEncode_12 of a polynomial's canonical coefficients.
pub fn encode12(p: &Poly, out: &mut [u8]) {
    byte_encode(12, out, |i| Q3329::to_unsigned_small(p.0[i])); // a Poly is centred
}

/// ByteDecode_12 into a polynomial (values mod q, centred). Returns whether
/// every 12-bit value was already below q (the FIPS 203 §7.2 modulus check).
pub fn decode12(input: &[u8], p: &mut Poly) -> bool {
    let mut reduced = true;
    byte_decode(12, input, |i, v| {
        reduced &= v < Q;
        p.0[i] = Q3329::center_fixup(v as i16); // v < 2^12 ≤ q + (q−1)/2
    });
    reduced
}

/// Compress_d and ByteEncode_d of a polynomial.
pub fn compress_encode<const D: u32>(p: &Poly, out: &mut [u8]) {
    byte_encode(D, out, |i| compress::<D>(Q3329::to_unsigned_small(p.0[i]))); // a Poly is centred
}

/// Compress_d and ByteEncode_d of a polynomial, byte by byte into `emit`
/// (at positions `offset..offset + 32·d`), so no ciphertext buffer is needed.
pub fn compress_emit<const D: u32>(p: &Poly, offset: usize, emit: &mut impl FnMut(usize, u8)) {
    kem_common::pack_bits_with(
        D,
        N,
        |i| compress::<D>(Q3329::to_unsigned_small(p.0[i])), // a Poly is centred
        |k, byte| emit(offset + k, byte),
    );
}

/// Adds Decompress_1(ByteDecode_1(m)) to `acc`: coefficient i gains
/// 1665 = ⌈q/2⌋ if bit i of the message is set. Selected with `subtle`,
/// whose optimisation barrier keeps the compiler from turning the bit into a
/// branch (the "Clangover" timing leak of the reference `poly_frommsg`;
/// found here by `ci/ct-valgrind.sh` in a plain `bit · 1665`).
pub fn add_message(m: &[u8; 32], acc: &mut Poly) {
    use subtle::{Choice, ConditionallySelectable};
    for (i, c) in acc.0.iter_mut().enumerate() {
        let bit = Choice::from((m[i >> 3] >> (i & 7)) & 1);
        // centred + 0 or 1665: at most q, inside the fix-up's domain.
        *c = Q3329::center_fixup(*c + i16::conditional_select(&0, &((Q as i16 + 1) >> 1), bit));
    }
}

/// ByteDecode_d and Decompress_d into a polynomial.
pub fn decode_decompress<const D: u32>(input: &[u8], p: &mut Poly) {
    // Decompress_d lands in [0, q]: the masked fix-up centres it.
    byte_decode(D, input, |i, v| p.0[i] = Q3329::center_fixup(decompress::<D>(v) as i16));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The multiply-shift equals the exact rounded division for every input.
    #[test]
    fn compress_is_exact_for_all_inputs() {
        fn check<const D: u32>() {
            for x in 0..Q as u32 {
                let exact = ((x << D) + (Q as u32 >> 1)).div_euclid(Q as u32) & ((1 << D) - 1);
                assert_eq!(compress::<D>(x as u16) as u32, exact, "d = {D}, x = {x}");
            }
        }
        check::<1>();
        check::<2>();
        check::<3>();
        check::<4>();
        check::<5>();
        check::<6>();
        check::<7>();
        check::<8>();
        check::<9>();
        check::<10>();
        check::<11>();
    }

    #[test]
    fn encode_decode_round_trip() {
        for d in [1, 4, 10, 11, 12] {
            let values: [u16; N] = core::array::from_fn(|i| ((i * 2654435761) as u16) & ((1 << d) - 1));
            let mut bytes = [0u8; 384];
            byte_encode(d, &mut bytes[..32 * d as usize], |i| values[i]);
            let mut back = [0u16; N];
            byte_decode(d, &bytes[..32 * d as usize], |i, v| back[i] = v);
            assert_eq!(back, values, "d = {d}");
        }
    }
}
