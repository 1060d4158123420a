//! serde for fixed-size byte types (feature `serde`), through RustCrypto's
//! `serdect`: lower-case hex in human-readable formats (JSON, TOML), raw
//! bytes in binary ones (postcard, bincode), the hex encoded and decoded in
//! constant time (`base16ct`), so that a secret key's digits do not steer
//! branches or table indices. Needs `alloc` (serde's `collect_str`).

pub use serde;

/// Serializes bytes: lower-case hex, or bytes for a binary format.
pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    serdect::array::serialize_hex_lower_or_bin(&bytes, s)
}

/// Deserializes exactly `N` bytes (hex, or bytes for a binary format). On
/// an error nothing decoded is left behind: it may be part of a secret key.
pub fn deserialize<'de, D: serde::Deserializer<'de>, const N: usize>(d: D) -> Result<[u8; N], D::Error> {
    use serde::de::Error;
    let mut out = [0u8; N];
    // serdect 0.4.3 decodes a shorter hex string into the front of the
    // buffer without an error (its binary path checks the length): check it.
    let decoded = serdect::array::deserialize_hex_or_bin(&mut out, d).map(|bytes| bytes.len());
    match decoded {
        Ok(len) if len == N => Ok(out),
        Ok(len) => {
            crate::Wipe::wipe(&mut out);
            Err(D::Error::invalid_length(len, &Expected(N)))
        }
        Err(e) => {
            crate::Wipe::wipe(&mut out);
            Err(e)
        }
    }
}

/// "N bytes", for a length error.
struct Expected(usize);

impl serde::de::Expected for Expected {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} bytes", self.0)
    }
}
