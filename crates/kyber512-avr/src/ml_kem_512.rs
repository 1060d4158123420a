//! ML-KEM-512 exactly as FIPS 203 (August 2024).
//!
//! Randomness is drawn as the NIST-DRBG KATs expect: d ‖ z from one 64-byte
//! draw in key generation, m from one 32-byte draw in encapsulation.
//! Imported keys are checked (§7.2 modulus check, §7.3 hash check).
//!
//! ```
//! # fn main() -> Result<(), kyber512_avr::Error> {
//! use kyber512_avr::ml_kem_512;
//! # let mut rng = kem_common::test_rng(1);
//! let (ek, dk) = ml_kem_512::keygen(&mut rng)?;
//! let (ct, ss_sender) = ml_kem_512::encapsulate(&ek, &mut rng)?;
//! let ss_receiver = ml_kem_512::decapsulate(&dk, &ct);
//! assert_eq!(ss_sender, ss_receiver);
//! # Ok(()) }
//! ```

use kem_common::Wipe;
use rand_core::TryCryptoRng;

use crate::kem_impl::{fill, kem_api, Sealed, Variant};
use crate::params::{CT_BYTES, K};
use crate::Error;

/// The ML-KEM-512 parameter set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MlKem512;

impl Sealed for MlKem512 {}

impl Variant for MlKem512 {
    const NAME: &'static str = "ML-KEM-512";
    const CHECK_KEYS: bool = true;

    /// d ‖ z from one 64-byte draw. Not inlined: the draw buffer takes no
    /// slot in key generation's frame.
    #[inline(never)]
    fn draw_keygen_seeds(rng: &mut impl TryCryptoRng, d: &mut [u8; 32], z: &mut [u8; 32]) -> Result<(), Error> {
        let mut dz = [0u8; 64];
        fill(rng, &mut dz)?;
        d.copy_from_slice(&dz[..32]);
        z.copy_from_slice(&dz[32..]);
        dz.wipe();
        Ok(())
    }

    /// (ρ, σ) = G(d ‖ k) (Algorithm 13, line 1).
    fn expand_seed(d: &[u8; 32]) -> [u8; 64] {
        fips202::sha3_512(&[d, &[K as u8]])
    }

    fn draw_message(rng: &mut impl TryCryptoRng) -> Result<[u8; 32], Error> {
        let mut m = [0u8; 32];
        fill(rng, &mut m)?;
        Ok(m)
    }

    fn derive_key(kbar: &[u8; 32], _ct: &[u8; CT_BYTES]) -> [u8; 32] {
        *kbar
    }

    /// K̄ = J(z ‖ c) (Algorithm 18, line 7).
    fn reject_key(z: &[u8; 32], ct: &[u8; CT_BYTES]) -> [u8; 32] {
        fips202::shake256(&[z, ct])
    }
}

kem_api!(MlKem512);

/// Byte-level FIPS 203 functions for external conformance suites.
pub mod hazmat {
    use super::*;
    use crate::params::{DK_BYTES, EK_BYTES};

    /// ML-KEM.KeyGen_internal (Algorithm 16): (ek, dk).
    pub fn key_gen_internal(d: &[u8; 32], z: &[u8; 32]) -> ([u8; EK_BYTES], [u8; DK_BYTES]) {
        let (ek, dk) = crate::kem_impl::keygen_internal::<MlKem512>(d, z);
        (*ek.as_bytes(), *dk.as_bytes())
    }

    /// ML-KEM.Encaps_internal (Algorithm 17) after the §7.2 input check:
    /// (shared key, ciphertext).
    pub fn encaps_internal(ek: &[u8; EK_BYTES], m: &[u8; 32]) -> Result<([u8; 32], [u8; CT_BYTES]), Error> {
        let ek = EncapsulationKey::from_bytes(ek)?;
        let (ct, ss) = crate::kem_impl::encaps_internal(&ek, m);
        Ok((*ss.as_bytes(), *ct.as_bytes()))
    }

    /// ML-KEM.Decaps (Algorithm 21) after the §7.3 input check.
    pub fn decaps(dk: &[u8; DK_BYTES], c: &[u8; CT_BYTES]) -> Result<[u8; 32], Error> {
        let dk = DecapsulationKey::from_bytes(dk)?;
        let ct = Ciphertext::from_bytes(c)?;
        Ok(*decapsulate(&dk, &ct).as_bytes())
    }
}
