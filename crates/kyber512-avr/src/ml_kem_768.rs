//! ML-KEM-768 exactly as FIPS 203 (August 2024): k = 3, η1 = 2, d_u = 10,
//! d_v = 4; NIST security category 3. NIST's recommended default, and the
//! post-quantum half of TLS's X25519MLKEM768.
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
//! use kyber512_avr::ml_kem_768::{self, MlKem768};
//! use kyber512_avr::ml_kem_768::raw::{decapsulate_into, encapsulate_into, keygen_into};
//!
//! let mut rng = rand::rng();
//! // RustCrypto's `kem` 0.3 traits, as `ml-kem` 0.3:
//! let (dk, ek) = MlKem768::generate_keypair_from_rng(&mut rng);
//! let (ct, k) = ek.encapsulate_with_rng(&mut rng);
//! assert_eq!(dk.decapsulate(&ct), k);
//!
//! // The typed API (typed errors, a failing RNG included):
//! let (dk, ek) = ml_kem_768::keygen(&mut rng)?;
//! let (ct, ss) = ml_kem_768::encapsulate(&ek, &mut rng)?;
//! assert_eq!(ml_kem_768::decapsulate(&dk, &ct), ss);
//! assert_eq!(ek.as_bytes().len(), 1184);
//! assert_eq!(ct.as_bytes().len(), 1088);
//!
//! // The byte-buffer API for firmware:
//! let (mut ek, mut dk, mut ct) = ([0u8; 1184], [0u8; 2400], [0u8; 1088]);
//! keygen_into(&mut rng, &mut ek, &mut dk)?;
//! let ss = encapsulate_into(&ek, &mut rng, &mut ct)?;
//! assert_eq!(decapsulate_into(&dk, &ct), ss);
//! # Ok::<(), kyber512_avr::Error>(())
//! ```

/// ML-KEM-768 parameters (FIPS 203 §8, Table 2).
pub mod params {
    crate::parameter_set::parameter_set!(k: 3, eta1: 2, du: 10, dv: 4);
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
    MlKem768, name: "ML-KEM-768", module: "ml_kem_768", dk_len: "2,400",
    ek_size: hybrid_array::sizes::U1184, ct_size: hybrid_array::sizes::U1088,
);
