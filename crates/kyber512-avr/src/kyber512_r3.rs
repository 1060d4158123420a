//! CRYSTALS-Kyber512 as submitted to NIST's third round (version 3.02),
//! the version the published AVR work measured. It shares K-PKE, sampling
//! and arithmetic with [`crate::ml_kem_512`] and differs in the seed
//! handling: (ρ, σ) = G(d); m = H(randombytes(32)); K = KDF(K̄ ‖ H(c)) with
//! KDF = SHAKE256; and no import checks on keys.
//!
//! # Using it
//!
//! All three forms draw the same randomness and give the same bytes. The
//! examples seed ChaCha20 (`rand_chacha`) to be reproducible; an application
//! passes a real RNG (`rand::rng()` from `rand` 0.10, or a hardware TRNG
//! behind `rand_core` 0.10's `TryCryptoRng`), never a seeded one.
//!
//! **RustCrypto's `kem` 0.3 traits**, as `ml-kem` 0.3 (the same code works
//! for every KEM of the workspace and for `ml-kem` itself):
//!
//! ```
//! use kyber512_avr::kem::{Decapsulate, Decapsulator, Encapsulate, Generate, Kem, KeyExport, TryKeyInit};
//! use kyber512_avr::kyber512_r3::{Kyber512R3, EncapsulationKey, DecapsulationKey};
//! use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//!
//! let mut rng = ChaCha20Rng::seed_from_u64(1);
//! let (dk, ek) = Kyber512R3::generate_keypair_from_rng(&mut rng); // (secret, public), as ml-kem
//! let (ct, k_send) = ek.encapsulate_with_rng(&mut rng);
//! assert_eq!(dk.decapsulate(&ct), k_send);
//! assert_eq!(dk.encapsulation_key(), &ek);
//!
//! // A decapsulation key alone (the `Generate` trait), and a public key
//! // through its bytes (`KeyExport`, then `TryKeyInit` with the import checks).
//! let dk2 = DecapsulationKey::generate_from_rng(&mut rng);
//! let ek2 = EncapsulationKey::new(&dk2.encapsulation_key().to_bytes()).expect("a valid key");
//! let (ct2, k2) = ek2.encapsulate_with_rng(&mut rng);
//! assert_eq!(dk2.decapsulate(&ct2), k2);
//! ```
//!
//! **The typed API** (typed errors, a failing RNG included; constant-time
//! [`SharedSecret`], zeroized on drop), with
//! `TryFrom<&[u8]>` and `AsRef<[u8]>` on every key and ciphertext:
//!
//! ```
//! use kyber512_avr::kyber512_r3::{self, EncapsulationKey, DecapsulationKey, Ciphertext};
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(2);
//! let (dk, ek) = kyber512_r3::keygen(&mut rng)?;
//! let (ct, ss_sender) = kyber512_r3::encapsulate(&ek, &mut rng)?;
//! assert_eq!(kyber512_r3::decapsulate(&dk, &ct), ss_sender);
//!
//! // Bytes in, checked: the length and the scheme's import checks.
//! let ek_bytes: &[u8] = ek.as_ref();
//! let ek2 = EncapsulationKey::try_from(ek_bytes)?;
//! let dk2 = DecapsulationKey::from_bytes(dk.as_bytes())?;
//! let ct2 = Ciphertext::try_from(ct.as_ref())?;
//! assert_eq!(kyber512_r3::decapsulate(&dk2, &ct2), ss_sender);
//! assert!(EncapsulationKey::try_from(&ek_bytes[1..]).is_err()); // wrong length
//! # let _ = ek2;
//! # Ok::<(), kyber512_avr::Error>(())
//! ```
//!
//! **The byte-buffer API** for firmware that keeps keys in static memory:
//! nothing large on the stack, secret keys checked in place
//! ([`kem_common::BufferKem`] is the same API as one trait, generic over the KEMs):
//!
//! ```
//! use kyber512_avr::kyber512_r3::raw::{check_decapsulation_key, decapsulate_into, encapsulate_into, keygen_into};
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(3);
//! let (mut ek, mut dk, mut ct) = ([0u8; 800], [0u8; 1632], [0u8; 768]);
//! keygen_into(&mut rng, &mut ek, &mut dk)?;
//! let ss = encapsulate_into(&ek, &mut rng, &mut ct)?;
//! check_decapsulation_key(&dk)?; // for a key loaded from storage
//! assert_eq!(decapsulate_into(&dk, &ct), ss);
//! # Ok::<(), kyber512_avr::Error>(())
//! ```
//!
//! **serde** (feature `serde`): keys and ciphertexts as hex strings, checked
//! on the way in like `from_bytes`:
//!
//! ```
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(4);
//! # use kyber512_avr::kyber512_r3;
//! # let (dk, ek) = kyber512_r3::keygen(&mut rng).unwrap();
//! let json = serde_json::to_string(&ek).unwrap();
//! let back: kyber512_avr::kyber512_r3::EncapsulationKey = serde_json::from_str(&json).unwrap();
//! assert_eq!(back, ek);
//! let dk_json = serde_json::to_string(&dk).unwrap();
//! let dk_back: kyber512_avr::kyber512_r3::DecapsulationKey = serde_json::from_str(&dk_json).unwrap();
//! assert_eq!(dk_back.as_bytes(), dk.as_bytes());
//! assert!(serde_json::from_str::<kyber512_avr::kyber512_r3::EncapsulationKey>("\"00\"").is_err());
//! ```

use kem_common::Wipe;
use rand_core::TryCryptoRng;
use subtle::Choice;

use crate::kem_impl;
use crate::kem_impl::{fill, kem_api, Sealed, Variant};
use crate::params::CT_BYTES;
use crate::Error;

/// Kyber512 parameters (the crate's [`crate::params`], shared with ML-KEM-512).
pub use crate::params;

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
    fn draw_message(rng: &mut impl TryCryptoRng, m: &mut [u8; 32]) -> Result<(), Error> {
        let mut raw = [0u8; 32];
        fill(rng, &mut raw)?;
        *m = fips202::sha3_256(&[&raw]);
        raw.wipe();
        Ok(())
    }

    #[inline(never)]
    fn derive_key(kbar: &[u8; 32], ct: &[u8; CT_BYTES]) -> [u8; 32] {
        fips202::shake256(&[kbar, &fips202::sha3_256(&[ct])])
    }

    fn reject_key(z: &[u8; 32], ct: &[u8; CT_BYTES]) -> [u8; 32] {
        Self::derive_key(z, ct)
    }

    /// Both keys are KDF(x ‖ H(c)), x = K̄ or z (round-3 reference
    /// `crypto_kem_dec`): x is selected first, in constant time, then one
    /// KDF, so c is hashed once instead of twice (7 Keccak-f calls less).
    fn select_key(kbar: &[u8; 32], z: &[u8; 32], ct: &[u8; CT_BYTES], same: Choice) -> [u8; 32] {
        let mut pre = kem_common::select_bytes(z, kbar, same);
        let ss = Self::derive_key(&pre, ct);
        pre.wipe();
        ss
    }
}

kem_api!(
    Kyber512R3,
    ek_size: kem_common::kem::consts::U800,
    ct_size: kem_common::kem::consts::U768,
);
