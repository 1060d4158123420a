//! ML-KEM-1024 exactly as FIPS 203 (August 2024): k = 4, η1 = 2, d_u = 11,
//! d_v = 5; NIST security category 5. The set CNSA 2.0 asks for.
//!
//! The same code as [`crate::ml_kem_512`] with this set's parameters: K-PKE
//! and the KEM layer are compiled once more with [`params`] in scope
//! (`#[path]` below), sampling, encodings, the NTT and Keccak are shared
//! outright. Randomness is drawn as FIPS 203's NIST-DRBG test harness
//! does (d ‖ z from one 64-byte draw, m from one 32-byte draw); imported
//! keys are checked (§7.2 modulus check, §7.3 hash check).
//!
//! The same three ways to call it as [`crate::ml_kem_512`]:
//!
//! ```
//! use kyber512_avr::kem::{Decapsulate, Encapsulate, Kem};
//! use kyber512_avr::ml_kem_1024::{self, MlKem1024};
//! use kyber512_avr::ml_kem_1024::raw::{decapsulate_into, encapsulate_into, keygen_into};
//!
//! let mut rng = rand::rng();
//! // RustCrypto's `kem` 0.3 traits, as `ml-kem` 0.3:
//! let (dk, ek) = MlKem1024::generate_keypair_from_rng(&mut rng);
//! let (ct, k) = ek.encapsulate_with_rng(&mut rng);
//! assert_eq!(dk.decapsulate(&ct), k);
//!
//! // The typed API (typed errors, a failing RNG included):
//! let (dk, ek) = ml_kem_1024::keygen(&mut rng)?;
//! let (ct, ss) = ml_kem_1024::encapsulate(&ek, &mut rng)?;
//! assert_eq!(ml_kem_1024::decapsulate(&dk, &ct), ss);
//! assert_eq!(ek.as_bytes().len(), 1568);
//! assert_eq!(ct.as_bytes().len(), 1568);
//!
//! // The byte-buffer API for firmware:
//! let (mut ek, mut dk, mut ct) = ([0u8; 1568], [0u8; 3168], [0u8; 1568]);
//! keygen_into(&mut rng, &mut ek, &mut dk)?;
//! let ss = encapsulate_into(&ek, &mut rng, &mut ct)?;
//! assert_eq!(decapsulate_into(&dk, &ct), ss);
//! # Ok::<(), kyber512_avr::Error>(())
//! ```

/// ML-KEM-1024 parameters (FIPS 203 §8, Table 2).
pub mod params {
    crate::parameter_set::parameter_set!(k: 4, eta1: 2, du: 11, dv: 5);
}

// K-PKE and the KEM layer for this set: the files ML-KEM-512 compiles,
// compiled again with this module's `params` (their `super::params`).
#[allow(clippy::duplicate_mod, reason = "one source, one instance per parameter set")]
#[path = "kem_impl.rs"]
mod kem_impl;
#[allow(clippy::duplicate_mod, reason = "one source, one instance per parameter set")]
#[path = "kpke.rs"]
mod kpke;

crate::ml_kem_set::ml_kem_set!(
    MlKem1024, name: "ML-KEM-1024", module: "ml_kem_1024", dk_len: "3,168",
    ek_size: hybrid_array::sizes::U1568, ct_size: hybrid_array::sizes::U1568,
);
