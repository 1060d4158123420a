//! Sampling (FIPS 203 §4.2.2): SampleNTT and SamplePolyCBD.

use fips202::{Sponge, SHAKE128_RATE};

use modarith::{negative_mask_i16, Modulus, Q3329};

use crate::params::{N, Q};
use crate::poly::Poly;

/// Blocks of SHAKE128 output SampleNTT always consumes: 4 × 112 = 448
/// candidates, of which fewer than 256 pass (each passes with probability
/// 3329/4096) with probability below 2^-100; only then are more squeezed.
const SAMPLE_NTT_BLOCKS: usize = 4;
/// 3-byte groups (two candidates each) in one SHAKE128 block.
const CANDIDATE_TRIPLES_PER_BLOCK: usize = 56;
const _: () = assert!(CANDIDATE_TRIPLES_PER_BLOCK * 3 == SHAKE128_RATE);
const _: () = assert!(BLOCKS_BEFORE_FULL * 2 * CANDIDATE_TRIPLES_PER_BLOCK < N);

/// Blocks whose candidates cannot fill the polynomial: 2 × 112 = 224 < 256,
/// so in them every candidate has a free slot.
const BLOCKS_BEFORE_FULL: usize = (N - 1).div_euclid(2 * CANDIDATE_TRIPLES_PER_BLOCK);

/// SampleNTT (Algorithm 7): Â[i][j] from XOF(ρ ‖ j ‖ i). ρ is public, but a
/// data-dependent count of blocks and of loop exits would still make key
/// generation and encapsulation time vary from key to key. So every
/// candidate of a fixed number of blocks is processed the same way. In the
/// first [`BLOCKS_BEFORE_FULL`] blocks a slot is always free: each candidate
/// is written at the fill position, which advances only if it is below q
/// (a rejected one is overwritten by the next). After that, writes go
/// through masks (or rewrite the last slot with itself once full).
pub fn sample_ntt(rho: &[u8], j: u8, i: u8, out: &mut Poly) {
    let mut xof = Sponge::shake128();
    xof.absorb(rho);
    xof.absorb(&[j, i]);
    xof.finalize();
    // Each block read in place from the sponge: no 168-byte buffer, no call per triple.
    let mut filled = 0usize;
    let mut blocks = 0;
    while blocks < SAMPLE_NTT_BLOCKS || filled < N {
        blocks += 1;
        // Public: the block index alone decides (the same for every input).
        let surely_free = blocks <= BLOCKS_BEFORE_FULL;
        for c in xof.squeeze_block().chunks_exact(3).take(CANDIDATE_TRIPLES_PER_BLOCK) {
            let d1 = c[0] as u16 | ((c[1] as u16 & 0x0F) << 8);
            let d2 = (c[1] as u16 >> 4) | ((c[2] as u16) << 4);
            for d in [d1, d2] {
                // accept: all ones iff d < q and a slot is free
                let below_q = negative_mask_i16(d.wrapping_sub(Q) as i16) as u16;
                if surely_free {
                    out.0[filled & (N - 1)] = d as i16;
                    filled += (below_q & 1) as usize;
                    continue;
                }
                // filled ≤ N = 256: 16-bit arithmetic is enough (a byte-wide core pays per byte).
                let free = negative_mask_i16(filled as i16 - N as i16) as u16;
                let accept = below_q & free;
                // N − 1 once full (rewritten with itself); the mask keeps the
                // index visibly in bounds, so no check is compiled.
                let slot = (filled - (!free as usize & 1)) & (N - 1);
                out.0[slot] = ((d & accept) | (out.0[slot] as u16 & !accept)) as i16;
                filled += (accept & 1) as usize;
            }
        }
    }
    // Values are in [0, q); the NTT-domain arithmetic wants them centred.
    for x in out.0.iter_mut() {
        *x -= (Q as i16) & negative_mask_i16((Q as i16 >> 1) - *x);
    }
}

/// SamplePolyCBD_η (Algorithm 8) of PRF_η(σ, nonce) = SHAKE256(σ ‖ nonce, 64η),
/// handing each coefficient to `sink(i, c)`. Branch-free: every coefficient
/// is a difference of two bit counts. `ETA` is a const parameter: every
/// shift and loop count is a constant (a variable shift on the AVR loops a
/// bit a turn), and η bytes give four coefficients.
fn cbd_each<const ETA: usize>(sigma: &[u8; 32], nonce: u8, mut sink: impl FnMut(usize, i16)) {
    const { assert!(ETA == 2 || ETA == 3) };
    let mut prf = Sponge::shake256();
    prf.absorb(sigma);
    prf.absorb(&[nonce]);
    prf.finalize();
    // Four coefficients from the η bytes of group number `four`.
    #[inline(always)]
    fn group<const ETA: usize>(g: &[u8], four: usize, sink: &mut impl FnMut(usize, i16)) {
        let mask = (1u8 << ETA) - 1;
        // The bits set among the low η of a byte.
        let count = |x: u8| -> i16 {
            let x = x & mask;
            ((x & 1) + ((x >> 1) & 1) + ((x >> 2) & 1)) as i16
        };
        let mut bits = 0u32;
        for (k, &byte) in g.iter().enumerate() {
            bits |= (byte as u32) << (8 * k);
        }
        for j in 0..4 {
            let v = bits >> (2 * ETA * j);
            sink(4 * four + j, count(v as u8) - count((v >> ETA) as u8));
        }
    }
    let mut four = 0usize;
    // The PRF output read in place, block by block (no copy per group); a
    // group that straddles two blocks is completed in `pending`.
    let mut pending = [0u8; ETA];
    let mut have = 0;
    while four < N >> 2 {
        let mut rest = prf.squeeze_block();
        if have > 0 {
            let need = ETA - have;
            pending[have..].copy_from_slice(&rest[..need]);
            group::<ETA>(&pending, four, &mut sink);
            four += 1;
            rest = &rest[need..];
        }
        let mut groups = rest.chunks_exact(ETA);
        for g in &mut groups {
            if four == N >> 2 {
                break;
            }
            group::<ETA>(g, four, &mut sink);
            four += 1;
        }
        let tail = groups.remainder();
        have = tail.len();
        pending[..have].copy_from_slice(tail);
    }
    pending.iter_mut().for_each(|b| *b = 0);
}

/// SamplePolyCBD_η into `out`.
pub fn sample_cbd<const ETA: usize>(sigma: &[u8; 32], nonce: u8, out: &mut Poly) {
    cbd_each::<ETA>(sigma, nonce, |i, c| out.0[i] = c);
}

/// Bytes of a CBD sample packed 4 bits a coefficient.
pub const PACKED_SMALL_BYTES: usize = N >> 1;

/// [`sample_cbd`], also keeping the coefficients (|c| ≤ η) packed as
/// c + η, 4 bits each, for [`unpack_small`].
pub fn sample_cbd_packed<const ETA: usize>(
    sigma: &[u8; 32],
    nonce: u8,
    out: &mut Poly,
    packed: &mut [u8; PACKED_SMALL_BYTES],
) {
    // Packed from the polynomial, not in the sampling's sink: one copy of
    // the sampling code serves both functions.
    sample_cbd::<ETA>(sigma, nonce, out);
    for (byte, pair) in packed.iter_mut().zip(out.0.chunks_exact(2)) {
        *byte = (pair[0] + ETA as i16) as u8 | ((pair[1] + ETA as i16) as u8) << 4;
    }
}

/// The coefficients [`sample_cbd_packed`] kept: c = nibble − η.
pub fn unpack_small<const ETA: usize>(packed: &[u8; PACKED_SMALL_BYTES], out: &mut Poly) {
    for (pair, &byte) in out.0.chunks_exact_mut(2).zip(packed.iter()) {
        pair[0] = (byte & 15) as i16 - ETA as i16;
        pair[1] = (byte >> 4) as i16 - ETA as i16;
    }
}

/// Adds SamplePolyCBD_η to `acc` (centred) without a polynomial buffer.
pub fn add_cbd<const ETA: usize>(sigma: &[u8; 32], nonce: u8, acc: &mut Poly) {
    // centred + |c| ≤ η: inside the masked fix-up's domain.
    cbd_each::<ETA>(sigma, nonce, |i, c| acc.0[i] = Q3329::center_fixup(acc.0[i] + c));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed copy unpacks to the very sample, for both η and the
    /// extreme coefficients ±η (seen over 64 seeds of 256 coefficients).
    #[test]
    fn packed_sample_unpacks_to_the_sample() {
        fn check<const ETA: usize>() {
            let mut seen = [false; 7];
            for seed in 0..64u8 {
                let sigma = [seed.wrapping_mul(37); 32];
                let (mut plain, mut kept, mut back) = (Poly::zero(), Poly::zero(), Poly::zero());
                let mut packed = [0xA5u8; PACKED_SMALL_BYTES];
                sample_cbd::<ETA>(&sigma, seed, &mut plain);
                sample_cbd_packed::<ETA>(&sigma, seed, &mut kept, &mut packed);
                unpack_small::<ETA>(&packed, &mut back);
                assert_eq!(plain.0, kept.0);
                assert_eq!(plain.0, back.0);
                for &c in plain.0.iter() {
                    seen[(c + 3) as usize] = true;
                }
            }
            assert!(seen[3 - ETA] && seen[3 + ETA], "η = {ETA}: extremes not drawn");
        }
        check::<2>();
        check::<3>();
    }
}
