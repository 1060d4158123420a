//! Encodings and compression (FIPS 203 §4.2.1).
//!
//! Compress_d divides by q; on secret data that division must not be a
//! variable-time instruction (KyberSlash), so it is a multiplication by a
//! precomputed reciprocal and a shift, proven exact for every input by a test.

use kem_common::KeySource;
use modarith::{Modulus, Q3329};

use crate::params::{N, POLY_BYTES, Q};
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

/// ByteEncode_12 of a polynomial's canonical coefficients, into 384 bytes
/// (a shorter `out` takes the first whole pairs). Two values a turn, three
/// bytes: the generic 8-value groups of [`byte_encode`] unroll into 0.7 KB
/// on the AVR; this loop is a sixth of that.
pub fn encode12(p: &Poly, out: &mut [u8]) {
    for (pair, bytes) in p.0.chunks_exact(2).zip(out.chunks_exact_mut(3)) {
        // A Poly is centred.
        let (a, b) = (Q3329::to_unsigned_small(pair[0]), Q3329::to_unsigned_small(pair[1]));
        bytes[0] = a as u8;
        bytes[1] = (a >> 8) as u8 | (b << 4) as u8;
        bytes[2] = (b >> 4) as u8;
    }
}

/// ByteDecode_12 into a polynomial (values mod q, centred), two values from
/// three bytes a turn (as [`encode12`]). Every caller passes 384 bytes; a
/// shorter input decodes its whole triples and leaves the rest zero (a
/// trailing partial triple is ignored).
/// Returns whether every 12-bit value was already below q (the FIPS 203
/// §7.2 modulus check).
#[inline(never)] // three callers: one copy
pub fn decode12(input: &[u8], p: &mut Poly) -> bool {
    if input.len() < POLY_BYTES {
        p.0.fill(0); // a public length
    }
    let mut reduced = true;
    for (pair, bytes) in p.0.chunks_exact_mut(2).zip(input.chunks_exact(3)) {
        let a = bytes[0] as u16 | (bytes[1] as u16 & 0x0F) << 8;
        let b = (bytes[1] >> 4) as u16 | (bytes[2] as u16) << 4;
        reduced &= a < Q;
        reduced &= b < Q;
        pair[0] = Q3329::center_fixup(a as i16); // < 2^12 ≤ q + (q−1)/2
        pair[1] = Q3329::center_fixup(b as i16);
    }
    reduced
}

/// [`decode12`] of the 384 bytes at `at` in `key`: from a slice as
/// [`decode12`] does, from a key in program memory 32 values at a time
/// ([`kem_common::unpack_bits_in`]).
pub fn decode12_in<S: KeySource + ?Sized>(key: &S, at: usize, p: &mut Poly) -> bool {
    if let Some(bytes) = key.as_slice() {
        return decode12(bytes.get(at..at + POLY_BYTES).unwrap_or(&[]), p);
    }
    let mut reduced = true;
    kem_common::unpack_bits_in(12, N, key, at, |i, v| {
        reduced &= v < Q;
        p.0[i] = Q3329::center_fixup(v as i16);
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

    /// The three-byte loops equal the generic 12-bit packing, on every
    /// residue (centred as a Poly holds them), and the modulus check flags
    /// exactly the 12-bit values ≥ q; missing bytes decode as zero.
    #[test]
    fn encode12_and_decode12_match_the_generic_packing() {
        for start in (0..Q as i32).step_by(N) {
            let mut p = Poly::zero();
            for (i, c) in p.0.iter_mut().enumerate() {
                let v = (start + i as i32).min(Q as i32 - 1);
                *c = if v > (Q as i32 >> 1) { v - Q as i32 } else { v } as i16;
            }
            let (mut fast, mut generic) = ([0u8; 384], [0u8; 384]);
            encode12(&p, &mut fast);
            byte_encode(12, &mut generic, |i| Q3329::to_unsigned_small(p.0[i]));
            assert_eq!(fast, generic, "from {start}");
            let mut back = Poly::zero();
            assert!(decode12(&fast, &mut back));
            assert_eq!(back.0, p.0, "from {start}");
        }
        for bad in [Q, Q + 1, 4095] {
            for slot in [0usize, 1, 255] {
                let mut values = [0u16; N];
                values[slot] = bad;
                let mut bytes = [0u8; 384];
                byte_encode(12, &mut bytes, |i| values[i]);
                let mut out = Poly::zero();
                assert!(!decode12(&bytes, &mut out), "{bad} at {slot}");
                assert_eq!(out.0[slot], Q3329::center_fixup(bad as i16));
            }
        }
        let mut out = Poly([7; N]);
        assert!(decode12(&[0x01, 0x20, 0x00, 0xFF], &mut out)); // values 1 and 2, then a partial triple
        assert_eq!(out.0[..2], [1, 2]);
        assert_eq!(out.0[2..], [0; N - 2]);
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
