//! The byte-buffer API of every KEM as one trait, and RustCrypto's `kem` traits for each.

use core::fmt;

use rand_core::TryCryptoRng;

use crate::SharedSecret;

/// The byte-buffer API of every KEM of the workspace as one trait, for
/// code generic over the KEMs that keeps keys in memory of its own (a
/// firmware's statics): key generation, encapsulation and decapsulation
/// into and from caller buffers, and the secret-key import checks on bytes
/// in place. The same RNG draws and outputs as the typed API and the `kem`
/// traits. Implemented on the KEM marker types (`MlKem512`, `Kyber512R3`,
/// `LightSaber`, `CtruLight<B, A>` for every arithmetic).
///
/// ```
/// use kem_common::BufferKem;
/// use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
///
/// /// One round trip through caller buffers, for any KEM.
/// fn round_trip<K: BufferKem>(seed: u64) -> bool {
///     let mut rng = ChaCha20Rng::seed_from_u64(seed); // seeded: deterministic example
///     let (mut ek, mut dk, mut ct) = (K::EK_ZERO, K::DK_ZERO, K::CT_ZERO);
///     K::keygen_into(&mut rng, &mut ek, &mut dk).expect("rng");
///     K::check_decapsulation_key(dk.as_ref()).expect("fresh key");
///     let sent = K::encapsulate_into(&ek, &mut rng, &mut ct).expect("valid key");
///     K::decapsulate_into(&dk, &ct) == sent
/// }
///
/// assert!(round_trip::<kyber512_avr::ml_kem_512::MlKem512>(1));
/// assert!(round_trip::<kyber512_avr::kyber512_r3::Kyber512R3>(2));
/// assert!(round_trip::<lightsaber_avr::LightSaber>(3));
/// assert!(round_trip::<ctru_light::CtruLightSha3>(4));
/// assert!(round_trip::<ctru_light::CtruLightAscon>(5));
/// ```
pub trait BufferKem {
    /// The scheme's name.
    const NAME: &'static str;
    /// The crate's error type.
    type Error: fmt::Debug + fmt::Display;
    /// `[u8; EK_LEN]`: an encoded encapsulation (public) key.
    type EncapsulationKeyBytes: AsRef<[u8]> + AsMut<[u8]> + Copy;
    /// `[u8; DK_LEN]`: an encoded decapsulation (secret) key.
    type DecapsulationKeyBytes: AsRef<[u8]> + AsMut<[u8]> + Copy;
    /// `[u8; CT_LEN]`: a ciphertext.
    type CiphertextBytes: AsRef<[u8]> + AsMut<[u8]> + Copy;
    /// An all-zero encapsulation-key buffer (not a valid key).
    const EK_ZERO: Self::EncapsulationKeyBytes;
    /// An all-zero decapsulation-key buffer (not a valid key).
    const DK_ZERO: Self::DecapsulationKeyBytes;
    /// An all-zero ciphertext buffer.
    const CT_ZERO: Self::CiphertextBytes;

    /// Key generation into `ek` and `dk`; on an RNG failure both are wiped.
    fn keygen_into(
        rng: &mut impl TryCryptoRng,
        ek: &mut Self::EncapsulationKeyBytes,
        dk: &mut Self::DecapsulationKeyBytes,
    ) -> Result<(), Self::Error>;
    /// Encapsulation to the encoded key `ek` (checked as on import) into `ct`.
    fn encapsulate_into(
        ek: &Self::EncapsulationKeyBytes,
        rng: &mut impl TryCryptoRng,
        ct: &mut Self::CiphertextBytes,
    ) -> Result<SharedSecret, Self::Error>;
    /// The import checks of the typed decapsulation key, on bytes in place.
    fn check_decapsulation_key(dk: &[u8]) -> Result<(), Self::Error>;
    /// Decapsulation with `dk`, which must come from [`Self::keygen_into`]
    /// or have passed [`Self::check_decapsulation_key`]. Never fails: a bad
    /// ciphertext yields the implicit-rejection key.
    fn decapsulate_into(dk: &Self::DecapsulationKeyBytes, ct: &Self::CiphertextBytes) -> SharedSecret;
}

/// Implements [`BufferKem`] on a KEM marker type from its `*_into`
/// functions (paths taking the same arguments as the trait's methods).
#[macro_export]
macro_rules! impl_buffer_kem {
    (
        [$($generics:tt)*] $kem:ty, name: $name:expr, error: $error:ty,
        lens: ($ek:expr, $dk:expr, $ct:expr),
        keygen_into: $keygen:expr, encapsulate_into: $encaps:expr,
        check_decapsulation_key: $check:expr, decapsulate_into: $decaps:expr $(,)?
    ) => {
        impl<$($generics)*> $crate::BufferKem for $kem {
            const NAME: &'static str = $name;
            type Error = $error;
            type EncapsulationKeyBytes = [u8; $ek];
            type DecapsulationKeyBytes = [u8; $dk];
            type CiphertextBytes = [u8; $ct];
            const EK_ZERO: [u8; $ek] = [0; $ek];
            const DK_ZERO: [u8; $dk] = [0; $dk];
            const CT_ZERO: [u8; $ct] = [0; $ct];
            fn keygen_into(
                rng: &mut impl $crate::rand_core::TryCryptoRng,
                ek: &mut [u8; $ek],
                dk: &mut [u8; $dk],
            ) -> Result<(), $error> {
                $keygen(rng, ek, dk)
            }
            fn encapsulate_into(
                ek: &[u8; $ek],
                rng: &mut impl $crate::rand_core::TryCryptoRng,
                ct: &mut [u8; $ct],
            ) -> Result<$crate::SharedSecret, $error> {
                $encaps(ek, rng, ct)
            }
            fn check_decapsulation_key(dk: &[u8]) -> Result<(), $error> {
                $check(dk)
            }
            fn decapsulate_into(dk: &[u8; $dk], ct: &[u8; $ct]) -> $crate::SharedSecret {
                $decaps(dk, ct)
            }
        }
    };
}

/// Implements RustCrypto's `kem` 0.3 traits for one KEM of this workspace:
/// `Kem` on the marker type, `Encapsulate` + `TryKeyInit` + `KeyExport` on
/// its encapsulation key, `Decapsulate` + `Decapsulator` + `Generate` on its
/// decapsulation key. The crate provides the typed operations:
/// `ek_from_bytes`, `ek.as_bytes()`, `dk.encapsulation_key() -> &Ek`,
/// `keygen(rng) -> Result<(Dk, Ek), _>`, `encapsulate(ek, rng)` and
/// `decapsulate(dk, &[u8; CT])`. Their only error with a typed key is the
/// RNG's, which [`with_rng`](crate::with_rng) hands back as the RNG's own error.
/// The typed ciphertext converts into the trait API's (`From`) and compares
/// with it; [`SharedSecret`](crate::SharedSecret) does the same with the
/// trait API's shared key ([`SharedKeyArray`](crate::SharedKeyArray)).
#[macro_export]
macro_rules! impl_kem_traits {
    (
        [$($generics:tt)*] kem: $kem:ty, ek: $ek:ty, dk: $dk:ty, ct: $ct:ty,
        ek_size: $eks:ty, ct_size: $cts:ty, ct_len: $ctlen:expr,
        keygen: $keygen:expr, encapsulate: $encaps:expr, decapsulate: $decaps:expr $(,)?
    ) => {
        impl<$($generics)*> $crate::kem::Kem for $kem {
            type DecapsulationKey = $dk;
            type EncapsulationKey = $ek;
            type SharedKeySize = $crate::kem::consts::U32;
            type CiphertextSize = $cts;
        }
        impl<$($generics)*> $crate::kem::KeySizeUser for $ek {
            type KeySize = $eks;
        }
        impl<$($generics)*> $crate::kem::TryKeyInit for $ek {
            fn new(key: &$crate::kem::Key<Self>) -> Result<Self, $crate::kem::InvalidKey> {
                <$ek>::from_bytes(key.as_slice()).map_err(|_| $crate::kem::InvalidKey)
            }
        }
        impl<$($generics)*> $crate::kem::KeyExport for $ek {
            fn to_bytes(&self) -> $crate::kem::Key<Self> {
                (*<$ek>::as_bytes(self)).into()
            }
        }
        impl<$($generics)*> $crate::kem::Encapsulate for $ek {
            type Kem = $kem;
            fn encapsulate_with_rng<R: $crate::rand_core::CryptoRng + ?Sized>(
                &self,
                rng: &mut R,
            ) -> ($crate::kem::Ciphertext<$kem>, $crate::kem::SharedKey<$kem>) {
                let (ct, ss) = match $crate::with_rng(rng, |rng| ($encaps)(self, rng)) {
                    Ok(out) => out,
                    Err(never) => match never {},
                };
                ((*ct.as_bytes()).into(), (*ss.as_bytes()).into())
            }
        }
        impl<$($generics)*> $crate::kem::Decapsulator for $dk {
            type Kem = $kem;
            fn encapsulation_key(&self) -> &$ek {
                <$dk>::encapsulation_key(self)
            }
        }
        impl<$($generics)*> $crate::kem::Decapsulate for $dk {
            fn decapsulate(&self, ct: &$crate::kem::Ciphertext<$kem>) -> $crate::kem::SharedKey<$kem> {
                let ct: &[u8; $ctlen] = ct.into();
                let ss = ($decaps)(self, ct);
                (*ss.as_bytes()).into()
            }
        }
        impl<$($generics)*> From<$ct> for $crate::kem::Ciphertext<$kem> {
            /// The trait API's ciphertext (`kem::Decapsulate::decapsulate`'s
            /// input); the other way: `Ciphertext::try_from(array.as_slice())`.
            fn from(ct: $ct) -> Self {
                (*ct.as_bytes()).into()
            }
        }
        impl<$($generics)*> From<&$ct> for $crate::kem::Ciphertext<$kem> {
            /// The trait API's ciphertext, copied.
            fn from(ct: &$ct) -> Self {
                (*ct.as_bytes()).into()
            }
        }
        impl<$($generics)*> PartialEq<$crate::kem::Ciphertext<$kem>> for $ct {
            /// Byte equality (a ciphertext is public).
            fn eq(&self, other: &$crate::kem::Ciphertext<$kem>) -> bool {
                self.as_bytes()[..] == other[..]
            }
        }
        impl<$($generics)*> PartialEq<$ct> for $crate::kem::Ciphertext<$kem> {
            /// Byte equality (a ciphertext is public).
            fn eq(&self, other: &$ct) -> bool {
                self[..] == other.as_bytes()[..]
            }
        }
        impl<$($generics)*> $crate::kem::Generate for $dk {
            fn try_generate_from_rng<R: $crate::rand_core::TryCryptoRng + ?Sized>(rng: &mut R) -> Result<Self, R::Error> {
                $crate::with_rng(rng, |rng| ($keygen)(rng)).map(|(dk, _ek)| dk)
            }
        }
    };
}
