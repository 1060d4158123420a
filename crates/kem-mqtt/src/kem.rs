//! Byte-level dispatch over the workspace's KEM crates.

#[cfg(not(feature = "program-memory-keys"))]
use kem_common::KeySource;
use kem_common::{KeyBytes, SharedSecret};
use rand_core::TryCryptoRng;

use crate::Error;
use kem_registry::Scheme;

/// Whether `kem` is compiled in: its cargo feature (spelled as the
/// registry's name) is on. This file is the crate's one list of KEMs.
pub(crate) const fn compiled_in(kem: Scheme) -> bool {
    match kem {
        Scheme::CtruLightAscon => cfg!(feature = "ctru-light-ascon"),
        Scheme::CtruLightSha3 => cfg!(feature = "ctru-light-sha3"),
        Scheme::MlKem512 => cfg!(feature = "ml-kem-512"),
        Scheme::Kyber512R3 => cfg!(feature = "kyber512-r3"),
        Scheme::LightSaber => cfg!(feature = "lightsaber"),
        Scheme::MlKem768 => cfg!(feature = "ml-kem-768"),
        // No KEM-MQTT suite (`Scheme::mqtt_id`).
        Scheme::MlKem1024 => false,
    }
}

/// Which key a KEM call failed to import (mapped to a typed [`Error`] by the caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KemFail {
    PublicKey,
    SecretKey,
    Rng,
    /// The KEM is not compiled in (its cargo feature is off).
    Unsupported,
}

macro_rules! dispatch {
    ($kem:expr, $m:ident => $body:expr, else $fallback:expr) => {
        match $kem {
            #[cfg(feature = "ctru-light-ascon")]
            Scheme::CtruLightAscon => {
                use ctru_light_ascon as $m;
                $body
            }
            #[cfg(feature = "ctru-light-sha3")]
            Scheme::CtruLightSha3 => {
                use ctru_light_sha3 as $m;
                $body
            }
            #[cfg(feature = "ml-kem-512")]
            Scheme::MlKem512 => {
                use ml_kem_512 as $m;
                $body
            }
            #[cfg(feature = "ml-kem-768")]
            Scheme::MlKem768 => {
                use ml_kem_768 as $m;
                $body
            }
            #[cfg(feature = "kyber512-r3")]
            Scheme::Kyber512R3 => {
                use kyber512_r3 as $m;
                $body
            }
            #[cfg(feature = "lightsaber")]
            Scheme::LightSaber => {
                use lightsaber as $m;
                $body
            }
            // Reached only when some KEM's cargo feature is off.
            #[allow(unreachable_patterns)]
            _ => $fallback,
        }
    };
}

/// CTRU-Light behind the same free-function interface as the other KEM crates.
#[allow(unused_macros)]
macro_rules! ctru_module {
    ($name:ident, $backend:ty) => {
        mod $name {
            pub type PublicKey = ctru_light::PublicKey<$backend>;
            pub type SecretKey = ctru_light::SecretKey<$backend>;
            pub fn public_of(sk: &SecretKey) -> PublicKey {
                sk.public_key()
            }
            pub type Raw = ctru_light::CtruLight<$backend>;
            pub use ctru_light::Error;
            #[cfg(not(feature = "program-memory-keys"))]
            pub fn secret_key_ok(sk: &[u8]) -> bool {
                Raw::check_secret_key(sk).is_ok()
            }
            #[cfg(feature = "program-memory-keys")]
            pub fn secret_key_from_ok(sk: kem_common::KeyBytes<'_>) -> bool {
                Raw::check_secret_key_from(sk).is_ok()
            }
            /// The ephemeral key is the secret key.
            pub fn keygen_ephemeral(
                rng: &mut impl rand_core::TryCryptoRng,
                sk: &mut [u8],
            ) -> Result<(), super::KemFail> {
                let sk = sk.try_into().map_err(|_| super::KemFail::SecretKey)?;
                Raw::keygen_secret_into(rng, sk).map_err(|_| super::KemFail::Rng)
            }
            pub fn decapsulate_ephemeral(
                kem: super::Scheme,
                sk: &[u8],
                ct: &[u8],
            ) -> Result<kem_common::SharedSecret, super::KemFail> {
                super::decapsulate(kem, kem_common::KeyBytes::Slice(sk), ct)
            }
        }
    };
}
#[cfg(feature = "ctru-light-ascon")]
ctru_module!(ctru_light_ascon, ctru_light::Ascon);
#[cfg(feature = "ctru-light-sha3")]
ctru_module!(ctru_light_sha3, ctru_light::Sha3);

#[allow(unused_macros)]
macro_rules! kyber_module {
    ($name:ident, $path:path) => {
        mod $name {
            pub use k::{DecapsulationKey as SecretKey, EncapsulationKey as PublicKey};
            pub use kyber512_avr::Error;
            use $path as k;
            /// The byte-array API, decapsulation taking a key of either
            /// form (the static key, the compact ephemeral key): one copy
            /// of the code serves both.
            #[allow(non_snake_case)]
            pub mod Raw {
                pub use super::k::raw::*;
                #[cfg(not(feature = "program-memory-keys"))]
                pub fn decapsulate_into(dk: &[u8], ct: &[u8; super::k::params::CT_BYTES]) -> kem_common::SharedSecret {
                    super::k::raw::decapsulate_either_into(dk, ct)
                }
            }
            pub fn public_of(sk: &SecretKey) -> PublicKey {
                sk.encapsulation_key().clone()
            }
            /// A secret key of either form, told by its length.
            #[cfg(not(feature = "program-memory-keys"))]
            pub fn secret_key_ok(sk: &[u8]) -> bool {
                k::raw::check_decapsulation_key_either(sk).is_ok()
            }
            #[cfg(feature = "program-memory-keys")]
            pub fn secret_key_from_ok(sk: kem_common::KeyBytes<'_>) -> bool {
                k::raw::check_decapsulation_key_from(sk).is_ok()
            }
            /// The ephemeral key is the compact key (σ for ŝ: 384·k − 32 B less).
            pub fn keygen_ephemeral(
                rng: &mut impl rand_core::TryCryptoRng,
                sk: &mut [u8],
            ) -> Result<(), super::KemFail> {
                let sk = sk.try_into().map_err(|_| super::KemFail::SecretKey)?;
                k::raw::keygen_compact_into(rng, sk).map_err(|_| super::KemFail::Rng)
            }
            /// Through [`super::decapsulate`] where the static key is in
            /// the data space (one copy of the code for both keys).
            #[cfg(not(feature = "program-memory-keys"))]
            pub fn decapsulate_ephemeral(
                kem: super::Scheme,
                sk: &[u8],
                ct: &[u8],
            ) -> Result<kem_common::SharedSecret, super::KemFail> {
                super::decapsulate(kem, kem_common::KeyBytes::Slice(sk), ct)
            }
            #[cfg(feature = "program-memory-keys")]
            pub fn decapsulate_ephemeral(
                _: super::Scheme,
                sk: &[u8],
                ct: &[u8],
            ) -> Result<kem_common::SharedSecret, super::KemFail> {
                if k::raw::check_compact_decapsulation_key(sk).is_err() {
                    return Err(super::KemFail::SecretKey);
                }
                let (Ok(sk), Ok(ct)) = (sk.try_into(), ct.try_into()) else {
                    return Err(super::KemFail::SecretKey);
                };
                Ok(k::raw::decapsulate_compact_into(sk, ct))
            }
        }
    };
}
#[cfg(feature = "ml-kem-512")]
kyber_module!(ml_kem_512, kyber512_avr::ml_kem_512);
#[cfg(feature = "kyber512-r3")]
kyber_module!(kyber512_r3, kyber512_avr::kyber512_r3);
#[cfg(feature = "ml-kem-768")]
kyber_module!(ml_kem_768, kyber512_avr::ml_kem_768);

#[cfg(feature = "lightsaber")]
mod lightsaber {
    pub use lightsaber_avr::{Error, PublicKey, SecretKey};
    /// The byte-array API.
    #[allow(non_snake_case)]
    pub mod Raw {
        pub use lightsaber_avr::keygen_into;
        #[cfg(feature = "program-memory-keys")]
        pub use lightsaber_avr::{decapsulate_from, encapsulate_from};
        #[cfg(not(feature = "program-memory-keys"))]
        pub use lightsaber_avr::{decapsulate_into, encapsulate_into};
    }
    pub fn public_of(sk: &SecretKey) -> PublicKey {
        sk.public_key()
    }
    #[cfg(not(feature = "program-memory-keys"))]
    pub fn secret_key_ok(sk: &[u8]) -> bool {
        lightsaber_avr::check_secret_key(sk).is_ok()
    }
    #[cfg(feature = "program-memory-keys")]
    pub fn secret_key_from_ok(sk: kem_common::KeyBytes<'_>) -> bool {
        lightsaber_avr::check_secret_key_from(sk).is_ok()
    }
    /// The ephemeral key is the compact key (seed_s in place of s).
    pub fn keygen_ephemeral(rng: &mut impl rand_core::TryCryptoRng, sk: &mut [u8]) -> Result<(), super::KemFail> {
        let sk = sk.try_into().map_err(|_| super::KemFail::SecretKey)?;
        lightsaber_avr::keygen_compact_into(rng, sk).map_err(|_| super::KemFail::Rng)
    }
    /// Checked in a frame of its own (gone before the KEM runs), then decapsulated.
    pub fn decapsulate_ephemeral(
        _: super::Scheme,
        sk: &[u8],
        ct: &[u8],
    ) -> Result<kem_common::SharedSecret, super::KemFail> {
        #[inline(never)]
        fn well_formed(sk: &[u8]) -> bool {
            lightsaber_avr::check_compact_secret_key(sk).is_ok()
        }
        if !well_formed(sk) {
            return Err(super::KemFail::SecretKey);
        }
        let sk = sk.try_into().map_err(|_| super::KemFail::SecretKey)?;
        let ct = ct.try_into().map_err(|_| super::KemFail::PublicKey)?;
        Ok(lightsaber_avr::decapsulate_compact_into(sk, ct))
    }
}

// The byte-array (`*_into`) APIs work in the caller's buffers: no key or
// ciphertext copies on the stack, which matters on an 8-bit sensor. Secret
// keys are checked in place (each KEM's `check_secret_key`: the checks of
// its typed `from_bytes` without the copy).

/// Generates a key pair into `pk_out` (exactly `pk_len`) and `sk_out` (exactly `sk_len`).
pub(crate) fn keygen(
    kem: Scheme,
    rng: &mut impl TryCryptoRng,
    pk_out: &mut [u8],
    sk_out: &mut [u8],
) -> Result<(), KemFail> {
    dispatch!(kem, m => {
        let pk = pk_out.try_into().map_err(|_| KemFail::PublicKey)?;
        let sk = sk_out.try_into().map_err(|_| KemFail::SecretKey)?;
        m::Raw::keygen_into(rng, pk, sk).map_err(|_| KemFail::Rng)
    }, else Err(KemFail::Unsupported))
}

/// Generates an ephemeral key pair into `sk_out` alone (exactly
/// [`Scheme::compact_sk_len`]), in the KEM's compact form: the public key
/// is the field at [`Scheme::compact_sk_pk_offset`].
#[inline(never)] // its locals off the caller's frame under the KEM
pub(crate) fn keygen_ephemeral(kem: Scheme, rng: &mut impl TryCryptoRng, sk_out: &mut [u8]) -> Result<(), KemFail> {
    dispatch!(kem, m => m::keygen_ephemeral(rng, sk_out), else Err(KemFail::Unsupported))
}

/// Decapsulates `ct` with an ephemeral secret key of [`keygen_ephemeral`]
/// (checked in place first, as every secret key here).
pub(crate) fn decapsulate_ephemeral(kem: Scheme, sk: &[u8], ct: &[u8]) -> Result<SharedSecret, KemFail> {
    dispatch!(kem, m => m::decapsulate_ephemeral(kem, sk, ct), else Err(KemFail::Unsupported))
}

/// Encapsulates to `pk`, writing the ciphertext to `ct_out` (exactly `ct_len`).
///
/// With the feature `program-memory-keys` the key may be a
/// [`KeyBytes::Reader`] (a classic AVR's flash): the KEM crates' `*_from`
/// functions read it a piece at a time, with the same checks. Without it,
/// only keys in the data space compile in, and a reader is refused.
#[inline(never)] // its locals off the caller's frame under the KEM
pub(crate) fn encapsulate(
    kem: Scheme,
    pk: KeyBytes<'_>,
    rng: &mut impl TryCryptoRng,
    ct_out: &mut [u8],
) -> Result<SharedSecret, KemFail> {
    #[cfg(not(feature = "program-memory-keys"))]
    let pk = match pk.as_slice() {
        Some(pk) if check_public_key(kem, pk).is_ok() => pk,
        _ => return Err(KemFail::PublicKey),
    };
    dispatch!(kem, m => {
        let ct = ct_out.try_into().map_err(|_| KemFail::Rng)?;
        #[cfg(feature = "program-memory-keys")]
        let encapsulated = m::Raw::encapsulate_from(pk, rng, ct);
        #[cfg(not(feature = "program-memory-keys"))]
        let encapsulated = m::Raw::encapsulate_into(pk.try_into().map_err(|_| KemFail::PublicKey)?, rng, ct);
        encapsulated.map_err(|e| match e {
            m::Error::Rng => KemFail::Rng,
            _ => KemFail::PublicKey,
        })
    }, else Err(KemFail::Unsupported))
}

/// Whether `sk` is a well-formed secret key of `kem` (checked in place, in a
/// frame of its own that is gone before the KEM runs).
#[inline(never)]
fn secret_key_ok(kem: Scheme, sk: KeyBytes<'_>) -> bool {
    #[cfg(feature = "program-memory-keys")]
    return dispatch!(kem, m => m::secret_key_from_ok(sk), else false);
    #[cfg(not(feature = "program-memory-keys"))]
    match sk.as_slice() {
        Some(sk) => dispatch!(kem, m => m::secret_key_ok(sk), else false),
        None => false,
    }
}

/// Decapsulates `ct` with `sk` (a reader too with `program-memory-keys`,
/// as [`encapsulate`]).
pub(crate) fn decapsulate(kem: Scheme, sk: KeyBytes<'_>, ct: &[u8]) -> Result<SharedSecret, KemFail> {
    if !secret_key_ok(kem, sk) {
        return Err(KemFail::SecretKey);
    }
    dispatch!(kem, m => {
        let ct = ct.try_into().map_err(|_| KemFail::PublicKey)?;
        #[cfg(feature = "program-memory-keys")]
        return Ok(m::Raw::decapsulate_from(sk, ct));
        // An array for most KEMs; for ML-KEM the slice itself (a key of
        // either form, `kyber_module!`).
        #[cfg(not(feature = "program-memory-keys"))]
        #[allow(clippy::useless_conversion)]
        match sk.as_slice().and_then(|sk| sk.try_into().ok()) {
            Some(sk) => Ok(m::Raw::decapsulate_into(sk, ct)),
            None => Err(KemFail::SecretKey),
        }
    }, else Err(KemFail::Unsupported))
}

/// Checks that `pk` is a valid public key of `kem`.
#[inline(never)]
pub fn check_public_key(kem: Scheme, pk: &[u8]) -> Result<(), Error> {
    dispatch!(kem, m => {
        m::PublicKey::from_bytes(pk).map(|_| ()).map_err(|_| Error::InvalidKey)
    }, else Err(Error::SuiteNotSupported(kem.mqtt_id().unwrap_or(0))))
}

/// Checks that `sk` is a valid secret key of `kem` and returns its public key into `pk_out`.
pub fn public_key_of(kem: Scheme, sk: &[u8], pk_out: &mut [u8]) -> Result<(), Error> {
    if pk_out.len() != kem.pk_len() {
        return Err(Error::BufferTooSmall { needed: kem.pk_len() });
    }
    dispatch!(kem, m => {
        let sk = m::SecretKey::from_bytes(sk).map_err(|_| Error::InvalidKey)?;
        copy(pk_out, m::public_of(&sk).as_bytes());
        Ok(())
    }, else Err(Error::SuiteNotSupported(kem.mqtt_id().unwrap_or(0))))
}

/// The full check that `sk` and `pk` are one key pair of `kem`, for keys
/// loaded from storage:
///
/// - `sk` passes the KEM's import checks (lengths and ranges; for ML-KEM,
///   Kyber and LightSaber also the stored H(pk) against the embedded pk);
/// - the public key embedded in `sk` is `pk`, and `pk` is a valid key;
/// - a pair-wise consistency test: a fresh encapsulation to `pk`
///   decapsulates under `sk` to the same secret.
///
/// Why the last one: the public key inside a secret key is a copy, so the
/// first two checks pass when a bit of the secret part (ŝ, s or f) flips;
/// such a key would only fail later, in a handshake, as a Finished that does
/// not verify — blaming the peer. None of the KEMs can recompute the public
/// key from the secret part (the error term of ML-KEM, Kyber and LightSaber,
/// and g of CTRU-Light, are not stored), so the test checks the property the
/// pair is for: decryption under the secret part. A wrong secret polynomial
/// makes decryption fail except with negligible probability. What no check
/// can see is the implicit-rejection secret z (random, no redundancy); a
/// flipped z changes only the keys derived from invalid ciphertexts.
///
/// Any failure is [`Error::InvalidKey`] ([`Error::Rng`] if `rng` fails).
pub fn check_key_pair(kem: Scheme, sk: &[u8], pk: &[u8], rng: &mut impl TryCryptoRng) -> Result<(), Error> {
    check_public_key(kem, pk)?;
    let mut embedded = [0u8; kem_registry::MAX_PK_LEN];
    let embedded = embedded.get_mut(..kem.pk_len()).ok_or(Error::InvalidKey)?;
    public_key_of(kem, sk, embedded)?;
    if !bool::from(kem_common::bytes_equal(embedded, pk)) {
        return Err(Error::InvalidKey);
    }
    let mut ct = [0u8; kem_registry::MAX_CT_LEN];
    let ct = ct.get_mut(..kem.ct_len()).ok_or(Error::InvalidKey)?;
    let sent = encapsulate(kem, pk.into(), rng, ct).map_err(|e| match e {
        KemFail::Rng => Error::Rng,
        _ => Error::InvalidKey,
    })?;
    let received = decapsulate(kem, sk.into(), ct).map_err(|_| Error::InvalidKey)?;
    if !bool::from(kem_common::bytes_equal(sent.as_bytes(), received.as_bytes())) {
        return Err(Error::InvalidKey);
    }
    Ok(())
}

fn copy(out: &mut [u8], src: &[u8]) {
    for (o, s) in out.iter_mut().zip(src) {
        *o = *s;
    }
}

/// Generates a static key pair of `kem` into `pk_out` (`kem.pk_len()` bytes)
/// and `sk_out` (`kem.sk_len()` bytes), e.g. for provisioning.
pub fn generate_keypair(
    kem: Scheme,
    rng: &mut impl TryCryptoRng,
    pk_out: &mut [u8],
    sk_out: &mut [u8],
) -> Result<(), Error> {
    if pk_out.len() != kem.pk_len() {
        return Err(Error::BufferTooSmall { needed: kem.pk_len() });
    }
    if sk_out.len() != kem.sk_len() {
        return Err(Error::BufferTooSmall { needed: kem.sk_len() });
    }
    keygen(kem, rng, pk_out, sk_out).map_err(|_| Error::Rng)
}
