//! The FIPS 203 layer every ML-KEM parameter set shares above `kem_impl`:
//! the parameter-set type and its [`Variant`](crate::Variant) (how ML-KEM
//! draws and hashes its seeds), the typed, trait and byte-buffer API
//! (`kem_api!`), the 64-byte seed form and the `hazmat` functions for
//! conformance suites. One macro, invoked once per set (`ml_kem_512`,
//! `ml_kem_768`, `ml_kem_1024`), so the three sets cannot drift apart.

/// The ML-KEM API of one parameter set, in the invoking module, which has
/// that set's `kem_impl` and `params` modules in scope under those names.
/// `$module` is the module's name (for the doc examples), `$dk_len` the
/// expanded decapsulation key's length as prose, `ek_size`/`ct_size` the
/// `kem` traits' typenum sizes.
macro_rules! ml_kem_set {
    (
        $set:ident, name: $name:literal, module: $module:literal, dk_len: $dk_len:literal,
        ek_size: $ek_size:ty, ct_size: $ct_size:ty $(,)?
    ) => {
        use kem_common::Wipe as _;

        #[doc = concat!("The ", $name, " parameter set.")]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $set;

        impl kem_impl::Sealed for $set {}

        impl kem_impl::Variant for $set {
            const NAME: &'static str = $name;
            const CHECK_KEYS: bool = true;

            /// d ‖ z from one 64-byte draw. Not inlined: the draw buffer takes no
            /// slot in key generation's frame.
            #[inline(never)]
            fn draw_keygen_seeds(rng: &mut impl rand_core::TryCryptoRng, d: &mut [u8; 32], z: &mut [u8; 32]) -> Result<(), $crate::Error> {
                let mut dz = [0u8; 64];
                kem_impl::fill(rng, &mut dz)?;
                d.copy_from_slice(&dz[..32]);
                z.copy_from_slice(&dz[32..]);
                dz.wipe();
                Ok(())
            }

            /// (ρ, σ) = G(d ‖ k) (Algorithm 13, line 1).
            fn expand_seed(d: &[u8; 32]) -> [u8; 64] {
                fips202::sha3_512(&[d, &[params::K as u8]])
            }

            fn draw_message(rng: &mut impl rand_core::TryCryptoRng, m: &mut [u8; 32]) -> Result<(), $crate::Error> {
                kem_impl::fill(rng, m)
            }

            fn derive_key(kbar: &[u8; 32], _ct: &[u8; params::CT_BYTES]) -> [u8; 32] {
                *kbar
            }

            /// K̄ = J(z ‖ c) (Algorithm 18, line 7).
            fn reject_key(z: &[u8; 32], ct: &[u8; params::CT_BYTES]) -> [u8; 32] {
                fips202::shake256(&[z, ct])
            }
        }

        kem_impl::kem_api!($set, ek_size: $ek_size, ct_size: $ct_size);

        #[doc = concat!("The seed form of an ", $name, " decapsulation key")]
        ///: d ‖ z, 64 bytes, from
        /// which ML-KEM.KeyGen_internal (FIPS 203 Algorithm 16) derives the key
        /// pair. RustCrypto's `ml-kem` 0.3 stores and exports its keys in this form
        /// (`DecapsulationKey::from_seed`, `to_seed`, `KeyExport`): a seed moves
        /// between the two crates and gives the same keys in both. Key material:
        /// zeroized on drop, compared in constant time.
        ///
        /// ```
        /// use kyber512_avr::kem::{Decapsulate, Encapsulate, FromSeed};
        #[doc = concat!(" use kyber512_avr::", $module, "::{", stringify!($set), ", Seed};")]
        /// let mut rng = rand::rng();
        /// let seed = Seed::generate(&mut rng)?; // store or send these 64 bytes
        /// let (dk, ek) = seed.keys();
        /// assert_eq!(dk.to_seed(), Some(seed.clone()));
        /// // The same pair through RustCrypto's `FromSeed`, as `ml-kem` offers it.
        #[doc = concat!(" let (dk2, ek2) = ", stringify!($set), "::from_seed(&(*seed.as_bytes()).into());")]
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
            pub fn generate(rng: &mut impl rand_core::TryCryptoRng) -> Result<Seed, $crate::Error> {
                let mut seed = Seed([0u8; SEED_BYTES]);
                kem_impl::fill(rng, &mut seed.0)?;
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
                let keys = kem_impl::keygen_internal::<$set>(&d, &z);
                d.wipe();
                z.wipe();
                keys
            }
        }

        impl TryFrom<&[u8]> for Seed {
            type Error = $crate::Error;

            /// A seed from 64 bytes; any other length is [`crate::Error::InvalidLength`].
            fn try_from(bytes: &[u8]) -> Result<Seed, $crate::Error> {
                let bytes: &[u8; SEED_BYTES] = bytes.try_into().map_err(|_| $crate::Error::InvalidLength {
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
            #[doc = concat!(" ", $dk_len, " bytes), which does not contain d. The 64 bytes re-create the")]
            /// pair here and in RustCrypto's `ml-kem` (`DecapsulationKey::from_seed`).
            ///
            /// RustCrypto's `KeyExport` is not implemented: it cannot fail, and
            /// `ml-kem`'s panics on an expanded key; this crate's API does not panic.
            ///
            /// ```
            #[doc = concat!(" use kyber512_avr::", $module, "::{keygen, DecapsulationKey};")]
            ///
            /// let (dk, ek) = keygen(&mut rand::rng())?;
            #[doc = concat!(" let seed = dk.to_seed().expect(\"made from a seed\"); // 64 bytes instead of ", $dk_len)]
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
        #[doc = concat!(" applies to [`", stringify!($set), "`].")]
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
            use super::params::{DK_BYTES, EK_BYTES};

            /// ML-KEM.KeyGen_internal (Algorithm 16): (ek, dk), in the order FIPS
            /// 203 returns them.
            pub fn key_gen_internal(d: &[u8; 32], z: &[u8; 32]) -> ([u8; EK_BYTES], [u8; DK_BYTES]) {
                let (dk, ek) = kem_impl::keygen_internal::<$set>(d, z);
                (*ek.as_bytes(), *dk.as_bytes())
            }

            /// ML-KEM.Encaps_internal (Algorithm 17) after the §7.2 input check:
            /// (shared key, ciphertext).
            pub fn encaps_internal(ek: &[u8; EK_BYTES], m: &[u8; 32]) -> Result<([u8; 32], [u8; params::CT_BYTES]), $crate::Error> {
                let ek = EncapsulationKey::from_bytes(ek)?;
                let (ct, ss) = kem_impl::encaps_internal(&ek, m);
                Ok((*ss.as_bytes(), *ct.as_bytes()))
            }

            /// ML-KEM.Decaps (Algorithm 21) after the §7.3 input check.
            pub fn decaps(dk: &[u8; DK_BYTES], c: &[u8; params::CT_BYTES]) -> Result<[u8; 32], $crate::Error> {
                let dk = DecapsulationKey::from_bytes(dk)?;
                let ct = Ciphertext::from_bytes(c)?;
                Ok(*decapsulate(&dk, &ct).as_bytes())
            }
        }
    };
}
pub(crate) use ml_kem_set;
