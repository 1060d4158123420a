//! GenMatrix and GenSecret (Saber round-3 specification §2.4, reference
//! code `GenMatrix`, `GenSecret`, `cbd`), streamed from SHAKE128 so no full
//! matrix buffer is ever held.

use fips202::Sponge;
use kem_common::unpack_bits;

use crate::params::{EQ, L, MU, N, POLY_Q_BYTES, SEED_BYTES};
use crate::poly::{centre, Secret};

/// The matrix A as a stream of its entries in row-major order
/// (SHAKE128(seed_A), 13-bit little-endian coefficients).
pub struct MatrixStream(Sponge);

impl MatrixStream {
    /// A stream not started yet ([`Self::restart`] starts it).
    pub const NEW: Self = MatrixStream(Sponge::shake128());

    /// Starts the stream for `seed_a` again, in place (a stream built by
    /// value can cost the AVR a second 203-byte copy on the stack).
    pub fn restart(&mut self, seed_a: &[u8]) {
        self.0.reset();
        self.0.absorb(seed_a);
        self.0.finalize();
    }

    /// The next entry A[i][j], packed (13 bits a coefficient); unpack
    /// it with [`load_entry`] when a product needs it.
    #[cfg_attr(saber_small_sram, allow(dead_code))]
    pub fn next_entry(&mut self, out: &mut [u8; POLY_Q_BYTES]) {
        self.0.squeeze(out);
    }

    /// The next entry straight into a product's buffer, centred as
    /// [`load_entry`] gives it: squeezed 13 bytes (8 coefficients) at a
    /// time, so no packed copy of the entry is held.
    #[cfg_attr(not(saber_small_sram), allow(dead_code))]
    #[inline(never)]
    pub fn next_entry_unpacked(&mut self, out: &mut [i16; N]) {
        const GROUP: usize = EQ as usize; // bytes of 8 coefficients
        let mut bytes = [0u8; GROUP];
        for eight in out.chunks_exact_mut(8) {
            self.0.squeeze(&mut bytes);
            unpack_bits(EQ, 8, &bytes, |i, v| eight[i] = centre(v, EQ));
        }
    }
}

/// A packed matrix entry, centred (|a| ≤ 2^12).
#[cfg_attr(saber_small_sram, allow(dead_code))]
pub fn load_entry(bytes: &[u8; POLY_Q_BYTES], out: &mut [i16; N]) {
    unpack_bits(EQ, N, bytes, |i, v| out[i] = centre(v, EQ));
}

/// GenSecret: l secrets from SHAKE128(seed), centred binomial with μ = 10,
/// packed two to a byte ([`Secret`]).
pub fn gen_secret(seed: &[u8; SEED_BYTES], s: &mut [Secret; L]) {
    let mut xof = Sponge::shake128();
    xof.absorb(seed);
    xof.finalize();
    let mut five = [0u8; MU >> 1];
    for poly in s.iter_mut() {
        poly.fill(0);
        for four in poly.chunks_exact_mut(2) {
            xof.squeeze(&mut five);
            // The ones of each 5-bit group of the 40 bits (little-endian),
            // a bit at a time: on the AVR a 64-bit word's shifts and masks
            // took 0.9 KB of flash. Indices and shifts follow the loop
            // counter only.
            let mut ones = [0i16; 8];
            let mut bit = 0;
            for group in ones.iter_mut() {
                for _ in 0..MU >> 1 {
                    *group += ((five[bit >> 3] >> (bit & 7)) & 1) as i16;
                    bit += 1;
                }
            }
            for k in 0..4 {
                kem_common::set_nibble(four, k, ones[2 * k] - ones[2 * k + 1]);
            }
        }
    }
    five.iter_mut().for_each(|b| *b = 0);
}
