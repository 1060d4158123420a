//! Sampling (FIPS 203 §4.2.2): SampleNTT and SamplePolyCBD.

use fips202::{Sponge, SHAKE128_RATE};

use modarith::{negative_mask_i16, negative_mask_i32, Modulus, Q3329};

use crate::params::{N, Q};
use crate::poly::Poly;

/// Blocks of SHAKE128 output SampleNTT always consumes: 4 × 112 = 448
/// candidates, of which fewer than 256 pass (each passes with probability
/// 3329/4096) with probability below 2^-100; only then are more squeezed.
const SAMPLE_NTT_BLOCKS: usize = 4;
/// 3-byte groups (two candidates each) in one SHAKE128 block.
const CANDIDATE_TRIPLES_PER_BLOCK: usize = 56;
const _: () = assert!(CANDIDATE_TRIPLES_PER_BLOCK * 3 == SHAKE128_RATE);

/// SampleNTT (Algorithm 7): Â[i][j] from XOF(ρ ‖ j ‖ i). ρ is public, but a
/// data-dependent count of blocks and of loop exits would still make key
/// generation and encapsulation time vary from key to key. So every
/// candidate of a fixed number of blocks is processed the same way: it is
/// written (or the last slot rewritten with itself) through masks.
pub fn sample_ntt(rho: &[u8; 32], j: u8, i: u8, out: &mut Poly) {
    let mut xof = Sponge::shake128();
    xof.absorb(rho);
    xof.absorb(&[j, i]);
    xof.finalize();
    // Three bytes at a time straight from the sponge: no 168-byte block buffer.
    let mut c = [0u8; 3];
    let mut filled = 0usize;
    let mut blocks = 0;
    while blocks < SAMPLE_NTT_BLOCKS || filled < N {
        blocks += 1;
        for _ in 0..CANDIDATE_TRIPLES_PER_BLOCK {
            xof.squeeze(&mut c);
            let d1 = c[0] as u16 | ((c[1] as u16 & 0x0F) << 8);
            let d2 = (c[1] as u16 >> 4) | ((c[2] as u16) << 4);
            for d in [d1, d2] {
                // accept: all ones iff d < q and a slot is free
                let below_q = negative_mask_i16(d.wrapping_sub(Q) as i16) as u16;
                let free = negative_mask_i32(filled as i32 - N as i32) as u16;
                let accept = below_q & free;
                let slot = filled - (!free as usize & 1); // N − 1 once full: rewritten with itself
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
/// is a difference of two bit counts.
fn cbd_each(eta: usize, sigma: &[u8; 32], nonce: u8, mut sink: impl FnMut(usize, i16)) {
    let mut prf = Sponge::shake256();
    prf.absorb(sigma);
    prf.absorb(&[nonce]);
    prf.finalize();
    // η bits for a, η for b: 2η bits a coefficient, η bytes per 4 coefficients.
    let mut chunk = [0u8; 3];
    for four in 0..N >> 2 {
        prf.squeeze(&mut chunk[..eta]);
        let mut bits = chunk[..eta].iter().rev().fold(0u32, |acc, &b| (acc << 8) | b as u32);
        for j in 0..4 {
            let mut a = 0i16;
            let mut b = 0i16;
            for _ in 0..eta {
                a += (bits & 1) as i16;
                bits >>= 1;
            }
            for _ in 0..eta {
                b += (bits & 1) as i16;
                bits >>= 1;
            }
            sink(4 * four + j, a - b);
        }
    }
    chunk.iter_mut().for_each(|b| *b = 0);
}

/// SamplePolyCBD_η into `out`.
pub fn sample_cbd(eta: usize, sigma: &[u8; 32], nonce: u8, out: &mut Poly) {
    cbd_each(eta, sigma, nonce, |i, c| out.0[i] = c);
}

/// Adds SamplePolyCBD_η to `acc` (centred) without a polynomial buffer.
pub fn add_cbd(eta: usize, sigma: &[u8; 32], nonce: u8, acc: &mut Poly) {
    // centred + |c| ≤ η: inside the masked fix-up's domain.
    cbd_each(eta, sigma, nonce, |i, c| acc.0[i] = Q3329::center_fixup(acc.0[i] + c));
}
