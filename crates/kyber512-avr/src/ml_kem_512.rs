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

/// The seed form of an ML-KEM-512 decapsulation key: d ‖ z, 64 bytes, from
/// which ML-KEM.KeyGen_internal (FIPS 203 Algorithm 16) derives the key
/// pair. RustCrypto's `ml-kem` 0.3 stores and exports its keys in this form
/// (`DecapsulationKey::from_seed`, `to_seed`, `KeyExport`): a seed moves
/// between the two crates and gives the same keys in both. Key material:
/// zeroized on drop, compared in constant time.
///
/// ```
/// use kyber512_avr::kem::{Decapsulate, Encapsulate, FromSeed};
/// use kyber512_avr::ml_kem_512::{MlKem512, Seed};
/// let mut rng = rand::rng();
/// let seed = Seed::generate(&mut rng)?; // store or send these 64 bytes
/// let (dk, ek) = seed.keys();
/// assert_eq!(dk.to_seed(), Some(seed.clone()));
/// // The same pair through RustCrypto's `FromSeed`, as `ml-kem` offers it.
/// let (dk2, ek2) = MlKem512::from_seed(&(*seed.as_bytes()).into());
/// assert_eq!((ek2.as_bytes(), dk2.as_bytes()), (ek.as_bytes(), dk.as_bytes()));
/// let (ct, k) = ek2.encapsulate_with_rng(&mut rng);
/// assert_eq!(dk.decapsulate(&ct), k);
/// # Ok::<(), kyber512_avr::Error>(())
/// ```
#[derive(Clone)]
pub struct Seed([u8; SEED_BYTES]);

/// Bytes of a [`Seed`].
pub const SEED_BYTES: usize = 64;

impl Seed {
    /// Draws a fresh seed: one 64-byte draw, as [`keygen`] draws d ‖ z
    /// (so `Seed::generate(rng)?.keys()` equals `keygen(rng)?`).
    pub fn generate(rng: &mut impl TryCryptoRng) -> Result<Seed, Error> {
        let mut seed = Seed([0u8; SEED_BYTES]);
        fill(rng, &mut seed.0)?;
        Ok(seed)
    }

    /// The seed `bytes` (d, then z).
    pub fn from_bytes(bytes: &[u8; SEED_BYTES]) -> Seed {
        Seed(*bytes)
    }

    /// The 64 bytes (d, then z): key material.
    pub fn as_bytes(&self) -> &[u8; SEED_BYTES] {
        &self.0
    }

    /// The key pair this seed determines (decapsulation key, encapsulation
    /// key): ML-KEM.KeyGen_internal(d, z).
    pub fn keys(&self) -> (DecapsulationKey, EncapsulationKey) {
        let mut d = [0u8; 32];
        let mut z = [0u8; 32];
        d.copy_from_slice(&self.0[..32]);
        z.copy_from_slice(&self.0[32..]);
        let keys = crate::kem_impl::keygen_internal::<MlKem512>(&d, &z);
        d.wipe();
        z.wipe();
        keys
    }
}

impl TryFrom<&[u8]> for Seed {
    type Error = Error;

    /// A seed from 64 bytes; any other length is [`Error::InvalidLength`].
    fn try_from(bytes: &[u8]) -> Result<Seed, Error> {
        let bytes: &[u8; SEED_BYTES] = bytes.try_into().map_err(|_| Error::InvalidLength {
            expected: SEED_BYTES,
            got: bytes.len(),
        })?;
        Ok(Seed::from_bytes(bytes))
    }
}

impl PartialEq for Seed {
    fn eq(&self, other: &Seed) -> bool {
        kem_common::bytes_equal(&self.0, &other.0).into()
    }
}

impl Eq for Seed {}

impl core::fmt::Debug for Seed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Seed(..)")
    }
}

impl Drop for Seed {
    fn drop(&mut self) {
        self.0.wipe();
    }
}

// serde of a seed (feature `serde`): lower-case hex in human-readable
// formats, 64 bytes in binary ones, the hex encoded and decoded in constant
// time, as for the keys.
kem_common::impl_serde_hex!(try_from Seed, SEED_BYTES);

impl DecapsulationKey {
    /// The seed this key was made from (d ‖ z): `Some` for a key from
    /// [`keygen`], [`Seed::keys`] or `KeyInit`/`FromSeed`; `None` for one
    /// imported in the expanded form ([`DecapsulationKey::from_bytes`],
    /// 1,632 bytes), which does not contain d. The 64 bytes re-create the
    /// pair here and in RustCrypto's `ml-kem` (`DecapsulationKey::from_seed`).
    ///
    /// RustCrypto's `KeyExport` is not implemented: it cannot fail, and
    /// `ml-kem`'s panics on an expanded key; this crate's API does not panic.
    ///
    /// ```
    /// use kyber512_avr::ml_kem_512::{keygen, DecapsulationKey};
    ///
    /// let (dk, ek) = keygen(&mut rand::rng())?;
    /// let seed = dk.to_seed().expect("made from a seed"); // 64 bytes instead of 1,632
    /// let (dk2, ek2) = seed.keys();
    /// assert_eq!((dk2.as_bytes(), &ek2), (dk.as_bytes(), &ek));
    /// // The expanded form has no seed.
    /// assert_eq!(DecapsulationKey::from_bytes(dk.as_bytes())?.to_seed(), None);
    /// # Ok::<(), kyber512_avr::Error>(())
    /// ```
    pub fn to_seed(&self) -> Option<Seed> {
        self.seed.map(Seed)
    }
}

/// A decapsulation key's size as a key to initialise from: its seed (the
/// form `ml-kem` 0.3's `KeyInit` takes), so that RustCrypto's `FromSeed`
/// applies to [`MlKem512`].
impl kem_common::kem::KeySizeUser for DecapsulationKey {
    type KeySize = kem_common::kem::consts::U64;
}

/// The decapsulation key of a seed ([`Seed::keys`]).
impl kem_common::kem::KeyInit for DecapsulationKey {
    fn new(seed: &kem_common::kem::Key<Self>) -> Self {
        let bytes: [u8; SEED_BYTES] = (*seed).into();
        Seed(bytes).keys().0
    }
}

/// Byte-level FIPS 203 functions for external conformance suites.
pub mod hazmat {
    use super::*;
    use crate::params::{DK_BYTES, EK_BYTES};

    /// ML-KEM.KeyGen_internal (Algorithm 16): (ek, dk), in the order FIPS
    /// 203 returns them.
    pub fn key_gen_internal(d: &[u8; 32], z: &[u8; 32]) -> ([u8; EK_BYTES], [u8; DK_BYTES]) {
        let (dk, ek) = crate::kem_impl::keygen_internal::<MlKem512>(d, z);
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
