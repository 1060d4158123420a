#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::integer_division_remainder_used)]
#![doc = include_str!("../README.md")]
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
//! use lightsaber_avr::kem::{Decapsulate, Decapsulator, Encapsulate, Generate, Kem, KeyExport, TryKeyInit};
//! use lightsaber_avr::{LightSaber, EncapsulationKey, DecapsulationKey};
//! use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//!
//! let mut rng = ChaCha20Rng::seed_from_u64(1);
//! let (dk, ek) = LightSaber::generate_keypair_from_rng(&mut rng); // (secret, public), as ml-kem
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
//! use lightsaber_avr::{EncapsulationKey, DecapsulationKey, Ciphertext};
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(2);
//! let (dk, ek) = lightsaber_avr::keygen(&mut rng)?;
//! let (ct, ss_sender) = lightsaber_avr::encapsulate(&ek, &mut rng)?;
//! assert_eq!(lightsaber_avr::decapsulate(&dk, &ct), ss_sender);
//!
//! // Bytes in, checked: the length and the scheme's import checks.
//! let ek_bytes: &[u8] = ek.as_ref();
//! let ek2 = EncapsulationKey::try_from(ek_bytes)?;
//! let dk2 = DecapsulationKey::from_bytes(dk.as_bytes())?;
//! let ct2 = Ciphertext::try_from(ct.as_ref())?;
//! assert_eq!(lightsaber_avr::decapsulate(&dk2, &ct2), ss_sender);
//! assert!(EncapsulationKey::try_from(&ek_bytes[1..]).is_err()); // wrong length
//! # let _ = ek2;
//! # Ok::<(), lightsaber_avr::Error>(())
//! ```
//!
//! **The byte-buffer API** for firmware that keeps keys in static memory:
//! nothing large on the stack, secret keys checked in place
//! ([`kem_common::BufferKem`] is the same API as one trait, generic over the KEMs):
//!
//! ```
//! use lightsaber_avr::{check_secret_key, decapsulate_into, encapsulate_into, keygen_into};
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(3);
//! let (mut ek, mut dk, mut ct) = ([0u8; 672], [0u8; 1568], [0u8; 736]);
//! keygen_into(&mut rng, &mut ek, &mut dk)?;
//! let ss = encapsulate_into(&ek, &mut rng, &mut ct)?;
//! check_secret_key(&dk)?; // for a key loaded from storage
//! assert_eq!(decapsulate_into(&dk, &ct), ss);
//! # Ok::<(), lightsaber_avr::Error>(())
//! ```
//!
//! **serde** (feature `serde`): keys and ciphertexts as hex strings, checked
//! on the way in like `from_bytes`:
//!
//! ```
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(4);
//! # let (dk, ek) = lightsaber_avr::keygen(&mut rng).unwrap();
//! let json = serde_json::to_string(&ek).unwrap();
//! let back: lightsaber_avr::EncapsulationKey = serde_json::from_str(&json).unwrap();
//! assert_eq!(back, ek);
//! let dk_json = serde_json::to_string(&dk).unwrap();
//! let dk_back: lightsaber_avr::DecapsulationKey = serde_json::from_str(&dk_json).unwrap();
//! assert_eq!(dk_back.as_bytes(), dk.as_bytes());
//! assert!(serde_json::from_str::<lightsaber_avr::EncapsulationKey>("\"00\"").is_err());
//! ```
//!
//! Module map: `params` (Table 8), `sampling` (GenMatrix, GenSecret),
//! `poly` (multiplication), `pke` (Saber.PKE), `kem_impl` (Saber.KEM).
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

mod kem_impl;
pub mod params;
mod pke;
mod poly;
mod sampling;

pub use kem_common::SharedSecret;
/// The Saber specification's name for [`EncapsulationKey`].
pub type PublicKey = EncapsulationKey;
/// The Saber specification's name for [`DecapsulationKey`].
pub type SecretKey = DecapsulationKey;

/// The `rand_core` (0.10) this crate's RNG bounds name, and RustCrypto's
/// `kem` (0.3) traits it implements: depend on these to name one version.
pub use kem_common::{kem, rand_core};
pub use kem_impl::{
    check_compact_secret_key, check_secret_key, check_secret_key_from, decapsulate, decapsulate_compact_into,
    decapsulate_from, decapsulate_into, encapsulate, encapsulate_from, encapsulate_into, keygen, keygen_compact_into,
    keygen_into, keygen_secret_into, public_key_in, public_key_in_compact, Ciphertext, DecapsulationKey,
    EncapsulationKey, LightSaber,
};

/// Errors of the public API. Malformed input is always an error, never a panic.
///
/// The same shape in the three KEM crates: `InvalidLength { expected, got }`,
/// the import checks named after the key that fails them
/// (`EncapsulationKey…`, `DecapsulationKey…`), and `Rng`; `Display` and
/// `core::error::Error` implemented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A key or ciphertext of the wrong length.
    InvalidLength {
        /// Length the type requires.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// A secret key with a secret coefficient outside [−5, 5].
    DecapsulationKeyMalformed,
    /// A secret key whose H(pk) does not match its pk.
    DecapsulationKeyHashMismatch,
    /// The random number generator failed.
    Rng,
}

impl From<kem_common::RngError> for Error {
    fn from(_: kem_common::RngError) -> Self {
        Error::Rng
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::InvalidLength { expected, got } => write!(f, "invalid length: expected {expected} bytes, got {got}"),
            Error::DecapsulationKeyMalformed => f.write_str("secret key holds an out-of-range coefficient"),
            Error::DecapsulationKeyHashMismatch => f.write_str("secret key's H(pk) does not match its pk"),
            Error::Rng => f.write_str("random number generator failed"),
        }
    }
}

impl core::error::Error for Error {}
