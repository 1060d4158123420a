#![no_std]
#![deny(unsafe_code)]
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
//! use ctru_light::kem::{Decapsulate, Decapsulator, Encapsulate, Generate, Kem, KeyExport, TryKeyInit};
//! use ctru_light::{Ascon, CtruLightAscon};
//! type EncapsulationKey = ctru_light::EncapsulationKey<Ascon>;
//! type DecapsulationKey = ctru_light::DecapsulationKey<Ascon>;
//! use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//!
//! let mut rng = ChaCha20Rng::seed_from_u64(1);
//! let (dk, ek) = CtruLightAscon::generate_keypair_from_rng(&mut rng); // (secret, public), as ml-kem
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
//! use ctru_light::{Ascon, CtruLightAscon};
//! type EncapsulationKey = ctru_light::EncapsulationKey<Ascon>;
//! type DecapsulationKey = ctru_light::DecapsulationKey<Ascon>;
//! type Ciphertext = ctru_light::Ciphertext<Ascon>;
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(2);
//! let (dk, ek) = CtruLightAscon::keygen(&mut rng)?;
//! let (ct, ss_sender) = CtruLightAscon::encapsulate(&ek, &mut rng)?;
//! assert_eq!(CtruLightAscon::decapsulate(&dk, &ct), ss_sender);
//!
//! // Bytes in, checked: the length and the scheme's import checks.
//! let ek_bytes: &[u8] = ek.as_ref();
//! let ek2 = EncapsulationKey::try_from(ek_bytes)?;
//! let dk2 = DecapsulationKey::from_bytes(dk.as_bytes())?;
//! let ct2 = Ciphertext::try_from(ct.as_ref())?;
//! assert_eq!(CtruLightAscon::decapsulate(&dk2, &ct2), ss_sender);
//! assert!(EncapsulationKey::try_from(&ek_bytes[1..]).is_err()); // wrong length
//! # let _ = ek2;
//! # Ok::<(), ctru_light::Error>(())
//! ```
//!
//! **The byte-buffer API** for firmware that keeps keys in static memory:
//! nothing large on the stack, secret keys checked in place
//! ([`kem_common::BufferKem`] is the same API as one trait, generic over the KEMs):
//!
//! ```
//! use ctru_light::CtruLightAscon as Kem;
//! let (keygen_into, encapsulate_into) = (Kem::keygen_into, Kem::encapsulate_into);
//! let (check_secret_key, decapsulate_into) = (Kem::check_secret_key, Kem::decapsulate_into);
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(3);
//! let (mut ek, mut dk, mut ct) = ([0u8; 640], [0u8; 864], [0u8; 512]);
//! keygen_into(&mut rng, &mut ek, &mut dk)?;
//! let ss = encapsulate_into(&ek, &mut rng, &mut ct)?;
//! check_secret_key(&dk)?; // for a key loaded from storage
//! assert_eq!(decapsulate_into(&dk, &ct), ss);
//! # Ok::<(), ctru_light::Error>(())
//! ```
//!
//! **serde** (feature `serde`): keys and ciphertexts as hex strings, checked
//! on the way in like `from_bytes`:
//!
//! ```
//! # use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
//! # let mut rng = ChaCha20Rng::seed_from_u64(4);
//! # let (dk, ek) = ctru_light::CtruLightAscon::keygen(&mut rng).unwrap();
//! let json = serde_json::to_string(&ek).unwrap();
//! let back: ctru_light::EncapsulationKey<ctru_light::Ascon> = serde_json::from_str(&json).unwrap();
//! assert_eq!(back, ek);
//! let dk_json = serde_json::to_string(&dk).unwrap();
//! let dk_back: ctru_light::DecapsulationKey<ctru_light::Ascon> = serde_json::from_str(&dk_json).unwrap();
//! assert_eq!(dk_back.as_bytes(), dk.as_bytes());
//! assert!(serde_json::from_str::<ctru_light::EncapsulationKey<ctru_light::Ascon>>("\"00\"").is_err());
//! ```
//!
//! Module map (`SPEC.md` sections): `params` §1, `encode` §2, `pke` §3
//! (its decryption product in `mul256`), `kem_impl` §4, `symmetric` §5, `arith` §6.
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

pub mod arith;
mod backend;
mod encode;
mod kem_impl;
mod mul256;
pub mod params;
mod pke;
pub mod symmetric;

pub use arith::{Arithmetic, Kred2x, MontgomeryOpt, MontgomeryPlain};
/// The portable E8 decoder, the reference the AVR assembly is tested against
/// (`tests/avr_e8.rs`); not part of the KEM API.
#[doc(hidden)]
pub use encode::e8_decode_block_portable;
pub use kem_impl::{hazmat, Ciphertext, CtruLight, DecapsulationKey, EncapsulationKey};
/// The CTRU-Light paper's name for [`EncapsulationKey`].
pub type PublicKey<B> = EncapsulationKey<B>;
/// The CTRU-Light paper's name for [`DecapsulationKey`].
pub type SecretKey<B> = DecapsulationKey<B>;
/// The portable base case and recombination of decryption's product, the
/// references the AVR assembly is tested against (`tests/avr_mul.rs`); not
/// part of the KEM API.
#[doc(hidden)]
pub use mul256::{combine_portable, leaf_product_portable};
/// The portable ciphertext compression of one block, the reference the AVR
/// assembly is tested against (`tests/avr_compress.rs`); not part of the KEM API.
#[doc(hidden)]
pub use pke::compress_block_portable;
pub use symmetric::{Ascon, Backend, Sha3};

/// CTRU-Light with the SHA-3 back-end (K-RED2X arithmetic).
pub type CtruLightSha3 = CtruLight<Sha3>;
/// CTRU-Light with the Ascon back-end (K-RED2X arithmetic).
pub type CtruLightAscon = CtruLight<Ascon>;

pub use kem_common::SharedSecret;

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
    /// A public key (or the one inside a secret key) with a 10-bit value ≥ q.
    EncapsulationKeyNotReduced,
    /// A secret key whose packed f key generation cannot produce: a 3-bit
    /// value above 5, or f not of the form 2f' + 1 with f' ∈ {−1, 0, 1}^n
    /// (e.g. an all-zero key).
    DecapsulationKeyMalformed,
    /// An all-zero public key (or one inside a secret key): h = g/f is never 0.
    EncapsulationKeyZero,
    /// Key generation found no invertible f in the allowed attempts (a broken RNG).
    KeyGenExhausted,
    /// The random number generator failed.
    Rng,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::InvalidLength { expected, got } => write!(f, "invalid length: expected {expected} bytes, got {got}"),
            Error::EncapsulationKeyNotReduced => f.write_str("public key has a coefficient not below q"),
            Error::DecapsulationKeyMalformed => {
                f.write_str("secret key holds a coefficient key generation cannot produce")
            }
            Error::EncapsulationKeyZero => f.write_str("public key is all zero"),
            Error::KeyGenExhausted => f.write_str("no invertible key found; the RNG is broken"),
            Error::Rng => f.write_str("random number generator failed"),
        }
    }
}

impl core::error::Error for Error {}

/// The `rand_core` (0.10) this crate's RNG bounds name, and RustCrypto's
/// `kem` (0.3) traits it implements: depend on these to name one version.
pub use kem_common::{kem, rand_core};
