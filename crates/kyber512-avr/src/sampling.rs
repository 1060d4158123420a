//! Sampling (FIPS 203 §4.2.2): SampleNTT and SamplePolyCBD.

use fips202::{Sponge, SHAKE128_RATE};

use crate::params::{N, Q};
use crate::poly::Poly;

/// SampleNTT (Algorithm 7): Â[i][j] from XOF(ρ ‖ j ‖ i). Rejection sampling
/// on public data (ρ is public), so its variable time leaks nothing.
pub fn sample_ntt(rho: &[u8; 32], j: u8, i: u8, out: &mut Poly) {
    let mut xof = Sponge::shake128();
    xof.absorb(rho);
    xof.absorb(&[j, i]);
    xof.finalize();
    let mut block = [0u8; SHAKE128_RATE];
    let mut filled = 0;
    while filled < N {
        xof.squeeze(&mut block);
        for c in block.chunks_exact(3) {
            let d1 = c[0] as u16 | ((c[1] as u16 & 0x0F) << 8);
            let d2 = (c[1] as u16 >> 4) | ((c[2] as u16) << 4);
            for d in [d1, d2] {
                if d < Q && filled < N {
                    out.0[filled] = d as i16;
                    filled += 1;
                }
            }
        }
    }
    // Values are in [0, q); the NTT-domain arithmetic wants them centred.
    for x in out.0.iter_mut() {
        *x -= (Q as i16) & (((Q as i16 >> 1) - *x) >> 15);
    }
}

/// SamplePolyCBD_η (Algorithm 8) of PRF_η(σ, nonce) = SHAKE256(σ ‖ nonce, 64η).
/// Branch-free: every coefficient is a difference of two bit counts.
pub fn sample_cbd(eta: usize, sigma: &[u8; 32], nonce: u8, out: &mut Poly) {
    let mut prf = Sponge::shake256();
    prf.absorb(sigma);
    prf.absorb(&[nonce]);
    prf.finalize();
    // η bits for a, η for b: 2η bits a coefficient; read 2η·4 bits = η bytes per 4 coefficients.
    let mut chunk = [0u8; 3];
    for four in out.0.chunks_exact_mut(4) {
        prf.squeeze(&mut chunk[..eta]);
        let mut bits = chunk[..eta].iter().rev().fold(0u32, |acc, &b| (acc << 8) | b as u32);
        for c in four.iter_mut() {
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
            *c = a - b;
        }
    }
    chunk.iter_mut().for_each(|b| *b = 0);
}
