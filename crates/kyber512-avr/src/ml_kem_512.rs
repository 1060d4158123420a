//! ML-KEM-512 exactly as FIPS 203 (August 2024).
//!
//! Randomness is drawn as the NIST-DRBG KATs expect: d ‖ z from one 64-byte
//! draw in key generation, m from one 32-byte draw in encapsulation.
//! Imported keys are checked (§7.2 modulus check, §7.3 hash check).
//!
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
//! use kyber512_avr::ml_kem_512::{MlKem512, EncapsulationKey, DecapsulationKey};
//! use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//!
//! let mut rng = ChaCha20Rng::seed_from_u64(1);
//! let (dk, ek) = MlKem512::generate_keypair_from_rng(&mut rng); // (secret, public), as ml-kem
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
//! use kyber512_avr::ml_kem_512::{self, EncapsulationKey, DecapsulationKey, Ciphertext};
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(2);
//! let (dk, ek) = ml_kem_512::keygen(&mut rng)?;
//! let (ct, ss_sender) = ml_kem_512::encapsulate(&ek, &mut rng)?;
//! assert_eq!(ml_kem_512::decapsulate(&dk, &ct), ss_sender);
//!
//! // Bytes in, checked: the length and the scheme's import checks.
//! let ek_bytes: &[u8] = ek.as_ref();
//! let ek2 = EncapsulationKey::try_from(ek_bytes)?;
//! let dk2 = DecapsulationKey::from_bytes(dk.as_bytes())?;
//! let ct2 = Ciphertext::try_from(ct.as_ref())?;
//! assert_eq!(ml_kem_512::decapsulate(&dk2, &ct2), ss_sender);
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
//! use kyber512_avr::ml_kem_512::raw::{check_decapsulation_key, decapsulate_into, encapsulate_into, keygen_into};
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
//! # use kyber512_avr::ml_kem_512;
//! # let (dk, ek) = ml_kem_512::keygen(&mut rng).unwrap();
//! let json = serde_json::to_string(&ek).unwrap();
//! let back: kyber512_avr::ml_kem_512::EncapsulationKey = serde_json::from_str(&json).unwrap();
//! assert_eq!(back, ek);
//! let dk_json = serde_json::to_string(&dk).unwrap();
//! let dk_back: kyber512_avr::ml_kem_512::DecapsulationKey = serde_json::from_str(&dk_json).unwrap();
//! assert_eq!(dk_back.as_bytes(), dk.as_bytes());
//! assert!(serde_json::from_str::<kyber512_avr::ml_kem_512::EncapsulationKey>("\"00\"").is_err());
//! ```

use crate::kem_impl;
/// ML-KEM-512 parameters (the crate's [`crate::params`]; every set has its own).
pub use crate::params;

crate::ml_kem_set::ml_kem_set!(
    MlKem512, name: "ML-KEM-512", module: "ml_kem_512", dk_len: "1,632",
    ek_size: kem_common::kem::consts::U800, ct_size: kem_common::kem::consts::U768,
);
