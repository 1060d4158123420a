//! Sampling and encodings (`SPEC.md` §2), all constant time.

use kem_common::{pack_bits, unpack_bits, unpack_bits_in, KeySource};

use crate::params::{N, PK_BYTES, Q, SK_PKE_BYTES};

/// CBD1 (§2): byte i gives coefficients 4i..4i+3, coefficient 4i+j = bit(2j) − bit(2j+1).
pub fn cbd1(buf: &[u8], out: &mut [i16; N]) {
    debug_assert_eq!(buf.len(), N >> 2);
    for (four, &byte) in out.chunks_exact_mut(4).zip(buf.iter()) {
        for (j, c) in four.iter_mut().enumerate() {
            *c = ((byte >> (2 * j)) & 1) as i16 - ((byte >> (2 * j + 1)) & 1) as i16;
        }
    }
}

/// Pack10 (§2): canonical h_i ∈ [0, q) as a little-endian stream of 10-bit values.
pub fn pack10(h: &[i16; N], out: &mut [u8; PK_BYTES]) {
    pack_bits(10, N, out, |i| h[i] as u16);
}

/// Unpack10 (§2) of the public key at `at` in `key`: the raw 10-bit values
/// (possibly ≥ q), in one pass from a slice, 32 values at a time from a
/// key in program memory.
pub fn unpack10_in<S: KeySource + ?Sized>(key: &S, at: usize, out: &mut [i16; N]) {
    unpack_bits_in(10, N, key, at, |i, v| out[i] = v as i16);
}

/// Whether every 10-bit value of an encoded public key is below q, checked
/// as the values stream by (no 1 KB buffer) and without an early exit: pk
/// may be embedded in a secret key.
/// The public-key checks of §2 and of import in one pass over the values:
/// every value below q ([`Error::EncapsulationKeyNotReduced`]), and not all zero
/// ([`Error::EncapsulationKeyZero`]: h = g/f is never 0, g being invertible).
pub fn pk_check(pk: &[u8]) -> Result<(), crate::Error> {
    pk_check_in(pk, 0)
}

/// [`pk_check`] of the public key at `at` in `key` (a slice, or a key in
/// program memory read 32 values at a time).
pub fn pk_check_in<S: KeySource + ?Sized>(key: &S, at: usize) -> Result<(), crate::Error> {
    let (mut bad, mut any) = (0i16, 0u16);
    unpack_bits_in(10, N, key, at, |_, v| {
        bad |= (Q as i16 - 1 - v as i16) >> 15;
        any |= v;
    });
    if bad != 0 {
        Err(crate::Error::EncapsulationKeyNotReduced)
    } else if any == 0 {
        Err(crate::Error::EncapsulationKeyZero)
    } else {
        Ok(())
    }
}

/// Whether the unpacked f (bytes 3 − v_i, see [`unpack_sk_in`]) lies in the
/// set key generation draws from: f = 2f' + 1 with f' ∈ {−1, 0, 1}^n, so f_0
/// is odd (−1, 1 or 3) and every other f_i even (−2, 0 or 2); with the
/// range check of [`unpack_sk_in`] (v_i ≤ 5) that is exactly the set. Without
/// an early exit (f is secret).
pub fn f_in_keygen_set(f: &[u8; N]) -> bool {
    let mut odd_where_even = 0u8;
    for &c in &f[1..] {
        odd_where_even |= c;
    }
    ((odd_where_even | !f[0]) & 1) == 0
}

/// PackSK (§2): 3 − f_i ∈ [0, 5] as little-endian 3-bit values.
pub fn pack_sk(f: &[i16; N], out: &mut [u8; SK_PKE_BYTES]) {
    pack_bits(3, N, out, |i| (3 - f[i]) as u16);
}

/// UnpackSK (§2): f_i = 3 − v_i, modulo 256 (decryption's ring; f_i ∈
/// [−4, 3] is the byte's value as i8). Returns whether every v_i ≤ 5
/// (computed without an early exit: the values are secret).
///
/// Eight values from three bytes a turn, in 8-bit arithmetic (the generic
/// unpacking works on 32-bit windows); a short input takes the generic
/// path, whose missing bytes read as zero.
///
/// The first [`SK_PKE_BYTES`] of `key`: a slice, or a key in program
/// memory, read 32 values at a time.
pub fn unpack_sk_in<S: KeySource + ?Sized>(key: &S, f: &mut [u8; N]) -> bool {
    let sk = match key.as_slice() {
        Some(sk) => sk,
        None => {
            let mut bad = 0i16;
            unpack_bits_in(3, N, key, 0, |i, v| {
                bad |= (5 - v as i16) >> 15;
                f[i] = 3u8.wrapping_sub(v as u8);
            });
            return bad == 0;
        }
    };
    let mut bad = 0i16;
    let mut put = |slot: &mut u8, v: u8| {
        bad |= (5 - v as i16) >> 15;
        *slot = 3u8.wrapping_sub(v);
    };
    if sk.len() < SK_PKE_BYTES {
        unpack_bits(3, N, sk, |i, v| put(&mut f[i], v as u8));
        return bad == 0;
    }
    for (v, b) in f.chunks_exact_mut(8).zip(sk.chunks_exact(3)) {
        let (b0, b1, b2) = (b[0], b[1], b[2]);
        put(&mut v[0], b0 & 7);
        put(&mut v[1], (b0 >> 3) & 7);
        put(&mut v[2], b0 >> 6 | (b1 & 1) << 2);
        put(&mut v[3], (b1 >> 1) & 7);
        put(&mut v[4], (b1 >> 4) & 7);
        put(&mut v[5], b1 >> 7 | (b2 & 3) << 1);
        put(&mut v[6], (b2 >> 2) & 7);
        put(&mut v[7], b2 >> 5);
    }
    bad == 0
}

/// E8 codeword (§2) of message block `b`: byte b/2 gives block b's 4-bit
/// value (low nibble for even b); bit j of the codeword belongs to
/// coefficient 8b + j. Computed with masks, no table lookup by secret value.
pub fn e8_codeword(m: &[u8; 32], b: usize) -> u8 {
    let v = (m[b >> 1] >> (4 * (b & 1))) & 0x0F;
    let bit = |i: u8| modarith::negative_mask_i16(-(((v >> i) & 1) as i16)) as u8; // 0x00 or 0xFF
    (bit(1) & 0x0F) ^ (bit(2) & 0x3C) ^ (bit(3) & 0xF0) ^ (bit(0) & 0x55)
}

/// All ones iff `x < y` (|x − y| < 2^31), by the sign of the difference.
#[inline(always)]
fn less(x: u32, y: u32) -> u32 {
    modarith::negative_mask_i32(x.wrapping_sub(y) as i32) as u32
}

/// All ones iff `x < y`, for 16-bit costs (the difference taken in 32 bits).
#[inline(always)]
fn less16(x: u16, y: u16) -> u16 {
    modarith::negative_mask_i32(x as i32 - y as i32) as u16
}

/// `a` where `choose` is all ones, `b` where it is zero.
#[inline(always)]
fn select16(choose: u16, a: u16, b: u16) -> u16 {
    (a & choose) | (b & !choose)
}

/// E8 decoding (§2) of one block: on AVR the generated assembly
/// (`asm-avr/e8_decode.S`, tested bit for bit against
/// [`e8_decode_block_portable`] in simavr), elsewhere the portable code
/// (module `backend`).
#[inline]
pub fn e8_decode_block(v: &[u8; 8]) -> u8 {
    crate::backend::e8_decode_block(v)
}

/// E8 decoding (§2) of one block v_0..v_7 ∈ [0, 256) to a 4-bit value.
/// Branch-free and index-free on the (secret) block. Not inlined: its cost
/// tables then take stack only while it runs, not in the frame of the
/// decryption product (the decapsulation's peak). Costs are squares of
/// distances ≤ 128, so a coefficient's cost and a pair's sum fit 16 bits
/// (≤ 2^15); only the coset totals (≤ 2^17) take 32: on an 8-bit core
/// every select and comparison costs its width in instructions.
#[inline(never)]
pub fn e8_decode_block_portable(v: &[u8]) -> u8 {
    let mut cost0 = [0u16; 8];
    let mut cost1 = [0u16; 8];
    for j in 0..8 {
        let x = v[j] as i16;
        let far = modarith::negative_mask_i16(128 - x) as u16; // 2·v > 256
                                                               // Distances (≤ 128) fit a byte: 8×8-bit squares, one `mul` on the AVR.
        let a = select16(far, (256 - x) as u16, x as u16) as u8;
        cost0[j] = a as u16 * a as u16;
        let d = x - 128;
        let sign = modarith::negative_mask_i16(d);
        let d = ((d ^ sign) - sign) as u8; // |v − 128| ≤ 128, by mask (no branch)
        cost1[j] = d as u16 * d as u16;
    }
    let mut cost = [0u32; 2];
    let mut pattern = [0u8; 2];
    for k in 0..2 {
        let mut total = 0u32;
        let mut min_diff = u16::MAX; // above every difference (≤ 2^15)
        let mut min_idx = 0u8;
        let mut parity = 0u8;
        let mut bits = 0u8;
        for i in 0..4 {
            let (c0, c1) = if k == 0 {
                (cost0[2 * i] + cost0[2 * i + 1], cost1[2 * i] + cost1[2 * i + 1])
            } else {
                (cost1[2 * i] + cost0[2 * i + 1], cost0[2 * i] + cost1[2 * i + 1])
            };
            let b = less16(c1, c0);
            total += select16(b, c1, c0) as u32;
            let diff = select16(b, c0.wrapping_sub(c1), c1.wrapping_sub(c0));
            let smaller = less16(diff, min_diff);
            min_diff = select16(smaller, diff, min_diff);
            min_idx = (smaller as u8 & i as u8) | (!smaller as u8 & min_idx);
            bits |= (b as u8 & 1) << i;
            parity ^= b as u8 & 1;
        }
        let odd = modarith::negative_mask_i16(-(parity as i16)) as u8;
        // Flip bit min_idx with a mask built by comparing it with every
        // candidate index: no secret index, no secret shift amount.
        let mut flip = 0u8;
        for i in 0..4u8 {
            let hit = modarith::negative_mask_i16(((min_idx ^ i) as i16) - 1) as u8; // min_idx == i
            flip |= hit & (1 << i);
        }
        bits ^= flip & odd;
        total += (min_diff & odd as i8 as u16) as u32;
        cost[k] = total;
        pattern[k] = bits;
    }
    let r = less(cost[1], cost[0]) as u8;
    let res = (pattern[1] & r) | (pattern[0] & !r);
    ((((res ^ (res << 1)) & 3) | ((res >> 1) & 4)) << 1) | (r & 1)
}

#[cfg(test)]
#[allow(clippy::integer_division_remainder_used)] // test oracles may divide
mod tests {
    use super::*;

    #[test]
    fn e8_codewords_match_the_definition() {
        let expected = [0, 85, 15, 90, 60, 105, 51, 102, 240, 165, 255, 170, 204, 153, 195, 150];
        for (v, &cw) in expected.iter().enumerate() {
            let mut m = [0u8; 32];
            m[0] = v as u8;
            m[1] = (v as u8) << 4;
            assert_eq!(e8_codeword(&m, 0), cw, "v = {v}");
            assert_eq!(e8_codeword(&m, 3), cw, "v = {v}, high nibble");
            // Noiseless decoding of the scaled codeword returns v.
            let block: [u8; 8] = core::array::from_fn(|j| ((cw >> j) & 1) * 128);
            assert_eq!(e8_decode_block(&block), v as u8);
        }
    }

    /// The decoder as first written (32-bit costs throughout): the oracle
    /// of the 16-bit one.
    fn e8_decode_block_reference(v: &[u8]) -> u8 {
        let select = |choose: u32, a: u32, b: u32| (a & choose) | (b & !choose);
        let mut cost0 = [0u32; 8];
        let mut cost1 = [0u32; 8];
        for j in 0..8 {
            let x = v[j] as u32;
            let far = less(256, 2 * x);
            let a = select(far, 256 - x, x);
            cost0[j] = a * a;
            let d = (x as i32 - 128).unsigned_abs();
            cost1[j] = d * d;
        }
        let mut cost = [0u32; 2];
        let mut pattern = [0u32; 2];
        for k in 0..2 {
            let (mut total, mut min_diff, mut min_idx, mut parity, mut bits) = (0u32, 1u32 << 30, 0u32, 0u32, 0u32);
            for i in 0..4 {
                let (c0, c1) = if k == 0 {
                    (cost0[2 * i] + cost0[2 * i + 1], cost1[2 * i] + cost1[2 * i + 1])
                } else {
                    (cost1[2 * i] + cost0[2 * i + 1], cost0[2 * i] + cost1[2 * i + 1])
                };
                let b = less(c1, c0);
                total += select(b, c1, c0);
                let diff = select(b, c0.wrapping_sub(c1), c1.wrapping_sub(c0));
                let smaller = less(diff, min_diff);
                min_diff = select(smaller, diff, min_diff);
                min_idx = select(smaller, i as u32, min_idx);
                bits |= (b & 1) << i;
                parity ^= b & 1;
            }
            if parity == 1 {
                bits ^= 1 << min_idx;
                total += min_diff;
            }
            cost[k] = total;
            pattern[k] = bits;
        }
        let r = less(cost[1], cost[0]);
        let res = select(r, pattern[1], pattern[0]);
        (((((res ^ (res << 1)) & 3) | ((res >> 1) & 4)) << 1) | (r & 1)) as u8
    }

    /// The 16-bit decoder equals the reference on the boundary values of
    /// every cost (0, 64, 128, 192, 255 and their neighbours) in random
    /// combinations, including ties, and on random blocks.
    #[test]
    fn e8_decoder_matches_its_reference() {
        let edges = [0u8, 1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 254, 255];
        let mut seed = 0x00E8_DEC0_DE00_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in 0..400_000 {
            let r = next();
            let block: [u8; 8] = if n % 2 == 0 {
                core::array::from_fn(|j| edges[((r >> (5 * j)) % edges.len() as u64) as usize])
            } else {
                core::array::from_fn(|j| (r >> (8 * j)) as u8)
            };
            assert_eq!(e8_decode_block(&block), e8_decode_block_reference(&block), "{block:?}");
        }
        // Every block of two values (ties everywhere).
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let block = [a, b, a, b, b, a, b, a];
                assert_eq!(e8_decode_block(&block), e8_decode_block_reference(&block), "{block:?}");
            }
        }
    }

    #[test]
    fn pack_round_trips() {
        let h: [i16; N] = core::array::from_fn(|i| ((i * 7919) % 769) as i16);
        let mut pk = [0u8; PK_BYTES];
        pack10(&h, &mut pk);
        let mut back = [0i16; N];
        unpack10_in(&pk[..], 0, &mut back);
        assert_eq!(back, h);
        assert!(pk_check(&pk).is_ok());
        let f: [i16; N] = core::array::from_fn(|i| [-2, 0, 2, -1, 1, 3][i % 6]);
        let mut sk = [0u8; SK_PKE_BYTES];
        pack_sk(&f, &mut sk);
        let mut fb = [0u8; N];
        assert!(unpack_sk_in(&sk[..], &mut fb));
        assert_eq!(fb.map(|x| x as i8 as i16), f);
        sk[0] |= 7; // v_0 = 7 > 5
        assert!(!unpack_sk_in(&sk[..], &mut fb));
    }

    /// The byte-wise UnpackSK equals the generic bit unpacking on random
    /// and extreme bytes, flags exactly the 3-bit values above 5, and keeps
    /// the generic meaning of a short input.
    #[test]
    fn unpacking_matches_the_generic_bit_stream() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..200 {
            let byte = |x: &mut u64| {
                *x ^= *x << 13;
                *x ^= *x >> 7;
                *x ^= *x << 17;
                match round {
                    0 => 0,
                    1 => 0xFF,
                    _ => *x as u8,
                }
            };
            let (mut fast, mut generic) = ([0u8; N], [0u8; N]);
            let sk: [u8; SK_PKE_BYTES] = core::array::from_fn(|_| byte(&mut x));
            let mut want_ok = true;
            unpack_bits(3, N, &sk, |i, v| {
                generic[i] = 3u8.wrapping_sub(v as u8);
                want_ok &= v <= 5;
            });
            assert_eq!(unpack_sk_in(&sk[..], &mut fast), want_ok, "round {round}");
            assert_eq!(fast, generic, "round {round}");
        }
        let mut short = [7u8; N];
        assert!(unpack_sk_in(&[0x05u8][..], &mut short)); // v_0 = 5, then zeros (v = 0)
        assert_eq!(short[..3], [0xFE, 3, 3]);
    }
}
