#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::integer_division_remainder_used)]
#![doc = include_str!("../README.md")]
//!
//! # Modules
//!
//! - [`ml_kem_512`], [`ml_kem_768`], [`ml_kem_1024`]: FIPS 203 with its input
//!   checks, plus the byte-level `hazmat` functions for conformance suites
//!   (one code base: the 768 and 1024 modules compile the same K-PKE and KEM
//!   layer with their own [`params`](ml_kem_768::params));
//! - [`kyber512_r3`]: round-3 Kyber512, the version published AVR work measured.
//!
//! Each module's page shows the three ways to call it: RustCrypto's `kem`
//! traits, the typed API, and the byte-buffer API (`raw`) for firmware.
//! Arithmetic comes from `modarith`, hashing from `fips202`. Internally
//! (FIPS 203): `params` §8, `encode` §4.2.1, `sampling` §4.2.2, `poly`
//! §4.3, `kpke` §5, `kem_impl` §6–7.
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

mod encode;
mod kem_impl;
mod kpke;
pub mod kyber512_r3;
pub mod ml_kem_1024;
pub mod ml_kem_512;
pub mod ml_kem_768;
mod ml_kem_set;
mod parameter_set;
pub mod params;
mod poly;
mod sampling;

pub use kem_common::SharedSecret;
pub use kem_impl::Ciphertext;
pub use kem_impl::DecapsulationKey;
pub use kem_impl::EncapsulationKey;
pub use kem_impl::Variant;

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
    /// An encapsulation key with a coefficient ≥ q (FIPS 203 §7.2).
    EncapsulationKeyNotReduced,
    /// A decapsulation key whose H(ek) does not match its ek (FIPS 203 §7.3).
    DecapsulationKeyHashMismatch,
    /// The random number generator failed.
    Rng,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::InvalidLength { expected, got } => write!(f, "invalid length: expected {expected} bytes, got {got}"),
            Error::EncapsulationKeyNotReduced => f.write_str("encapsulation key has a coefficient not reduced mod q"),
            Error::DecapsulationKeyHashMismatch => f.write_str("decapsulation key hash check failed"),
            Error::Rng => f.write_str("random number generator failed"),
        }
    }
}

impl core::error::Error for Error {}

/// The `rand_core` (0.10) this crate's RNG bounds name, and RustCrypto's
/// `kem` (0.3) traits it implements: depend on these to name one version.
pub use kem_common::{kem, rand_core};
