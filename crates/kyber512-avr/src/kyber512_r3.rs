//! CRYSTALS-Kyber512 as submitted to NIST's third round (version 3.02),
//! the version the published AVR work measured. It shares K-PKE, sampling
//! and arithmetic with [`crate::ml_kem_512`] and differs in the seed
//! handling: (ρ, σ) = G(d); m = H(randombytes(32)); K = KDF(K̄ ‖ H(c)) with
//! KDF = SHAKE256; and no import checks on keys.

use kem_common::Wipe;
use rand_core::TryCryptoRng;

use crate::kem_impl::{fill, kem_api, Sealed, Variant};
use crate::params::CT_BYTES;
use crate::Error;

/// The round-3 Kyber512 parameter set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Kyber512R3;

impl Sealed for Kyber512R3 {}

impl Variant for Kyber512R3 {
    const NAME: &'static str = "Kyber512 (round 3)";
    const CHECK_KEYS: bool = false;

    /// d from one 32-byte draw (inside indcpa_keypair), then z from another.
    fn draw_keygen_seeds(rng: &mut impl TryCryptoRng, d: &mut [u8; 32], z: &mut [u8; 32]) -> Result<(), Error> {
        fill(rng, d)?;
        fill(rng, z)
    }

    fn expand_seed(d: &[u8; 32]) -> [u8; 64] {
        fips202::sha3_512(&[d])
    }

    /// m = H(randombytes(32)): the round-3 "don't release system RNG output".
    /// Not inlined: the raw bytes take no slot in the encapsulation's frame.
    #[inline(never)]
    fn draw_message(rng: &mut impl TryCryptoRng) -> Result<[u8; 32], Error> {
        let mut raw = [0u8; 32];
        fill(rng, &mut raw)?;
        let m = fips202::sha3_256(&[&raw]);
        raw.wipe();
        Ok(m)
    }

    #[inline(never)]
    fn derive_key(kbar: &[u8; 32], ct: &[u8; CT_BYTES]) -> [u8; 32] {
        fips202::shake256(&[kbar, &fips202::sha3_256(&[ct])])
    }

    fn reject_key(z: &[u8; 32], ct: &[u8; CT_BYTES]) -> [u8; 32] {
        Self::derive_key(z, ct)
    }
}

kem_api!(Kyber512R3);
