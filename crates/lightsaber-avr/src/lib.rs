#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::integer_division_remainder_used)]
//! LightSaber (Saber, NIST round 3) for 8-bit AVR sensor nodes.
//!
//! l = 2, q = 2^13, p = 2^10, T = 2^3, μ = 10; pk 672, sk 1568, ct 736,
//! ss 32 bytes. Polynomial products in Z_{2^13}\[x\]/(x^256 + 1) are computed
//! exactly through NTTs over 3329 and 7681 and a CRT lift (modarith), with
//! inner products accumulated in the NTT domain; the matrix A is streamed
//! from SHAKE128 entry by entry, so no operation holds more than a few
//! polynomials. The NIST KAT is reproduced record for record (see the
//! workspace's `nist-kat` tests).
//!
//! ```
//! # fn main() -> Result<(), lightsaber_avr::Error> {
//! # let mut rng = kem_common::test_rng(1);
//! let (pk, sk) = lightsaber_avr::keygen(&mut rng)?;
//! let (ct, ss) = lightsaber_avr::encapsulate(&pk, &mut rng)?;
//! assert_eq!(lightsaber_avr::decapsulate(&sk, &ct), ss);
//! # Ok(()) }
//! ```
//!
//! Module map: `params` (Table 8), `sampling` (GenMatrix, GenSecret),
//! `poly` (multiplication), `pke` (Saber.PKE), `kem` (Saber.KEM).

mod kem_impl;
pub mod params;
mod pke;
mod poly;
mod sampling;

pub use kem_common::SharedSecret;
/// The `rand_core` (0.10) this crate's RNG bounds name, and RustCrypto's
/// `kem` (0.3) traits it implements: depend on these to name one version.
pub use kem_common::{kem, rand_core};
pub use kem_impl::{
    check_secret_key, decapsulate, decapsulate_into, encapsulate, encapsulate_into, keygen, keygen_into, Ciphertext,
    LightSaber, PublicKey, SecretKey,
};

/// Errors of the public API. Malformed input is always an error, never a panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// A key or ciphertext of the wrong length.
    InvalidLength {
        /// Length the type requires.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// A secret key with a secret coefficient outside [−5, 5].
    SecretKeyMalformed,
    /// A secret key whose H(pk) does not match its pk.
    SecretKeyHashMismatch,
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
            Error::SecretKeyMalformed => f.write_str("secret key holds an out-of-range coefficient"),
            Error::SecretKeyHashMismatch => f.write_str("secret key's H(pk) does not match its pk"),
            Error::Rng => f.write_str("random number generator failed"),
        }
    }
}

impl core::error::Error for Error {}
