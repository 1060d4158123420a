//! The conversions and serde of every key and ciphertext type: `impl_bytes!`.

/// Implements `Serialize`/`Deserialize` (hex or bytes: `hex_serde`) for a key or ciphertext
/// type with `as_bytes()` and a validating `from_bytes()`. Expands to
/// nothing unless kem-common's `serde` feature is on (the KEM crates'
/// `serde` features turn it on).
#[cfg(feature = "serde")]
#[macro_export]
macro_rules! impl_serde_hex {
    // A type whose import is `TryFrom<&[u8]>` (a seed), not `from_bytes`.
    (try_from $ty:ty, $len:expr) => {
        impl $crate::hex_serde::serde::Serialize for $ty {
            fn serialize<S: $crate::hex_serde::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::hex_serde::serialize(self.as_bytes(), s)
            }
        }
        impl<'de> $crate::hex_serde::serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::hex_serde::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let mut bytes = $crate::hex_serde::deserialize::<D, { $len }>(d)?;
                let value = <$ty>::try_from(&bytes[..]);
                $crate::Wipe::wipe(&mut bytes);
                value.map_err(<D::Error as $crate::hex_serde::serde::de::Error>::custom)
            }
        }
    };
    ([$($generics:tt)*] $ty:ty, $len:expr) => {
        impl<$($generics)*> $crate::hex_serde::serde::Serialize for $ty {
            fn serialize<S: $crate::hex_serde::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::hex_serde::serialize(self.as_bytes(), s)
            }
        }
        impl<'de, $($generics)*> $crate::hex_serde::serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::hex_serde::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let mut bytes = $crate::hex_serde::deserialize::<D, { $len }>(d)?;
                let key = <$ty>::from_bytes(&bytes);
                // The decoded bytes may be a secret key: only the typed copy
                // (zeroized on drop) stays.
                $crate::Wipe::wipe(&mut bytes);
                key.map_err(<D::Error as $crate::hex_serde::serde::de::Error>::custom)
            }
        }
    };
}

/// Implements, for a key or ciphertext type with `as_bytes() -> &[u8; LEN]`
/// and a validating `from_bytes(&[u8]) -> Result<Self, Error>`: the
/// conversions `TryFrom<&[u8]>` (= `from_bytes`) and `AsRef<[u8]>`
/// (= `as_bytes`), and with the `serde` feature serde (hex or bytes)
/// ([`impl_serde_hex!`](crate::impl_serde_hex!)). Every byte type of the three KEM crates has them.
#[macro_export]
macro_rules! impl_bytes {
    ([$($generics:tt)*] $ty:ty, $len:expr, $error:ty) => {
        impl<'a, $($generics)*> TryFrom<&'a [u8]> for $ty {
            type Error = $error;
            /// [`Self::from_bytes`]: the length and the import checks.
            fn try_from(bytes: &'a [u8]) -> Result<Self, $error> {
                <$ty>::from_bytes(bytes)
            }
        }
        impl<$($generics)*> AsRef<[u8]> for $ty {
            /// [`Self::as_bytes`].
            fn as_ref(&self) -> &[u8] {
                self.as_bytes()
            }
        }
        $crate::impl_serde_hex!([$($generics)*] $ty, $len);
    };
}

/// Without the `serde` feature: nothing to implement.
#[cfg(not(feature = "serde"))]
#[macro_export]
macro_rules! impl_serde_hex {
    ($($anything:tt)*) => {};
}
