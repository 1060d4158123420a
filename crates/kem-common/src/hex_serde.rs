//! Hex-string serde support for fixed-size byte types (feature `serde`).

use core::fmt;

pub use serde;
use serde::de::{Error, Visitor};

struct Hex<'a>(&'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// Serializes bytes as a lower-case hex string.
pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&Hex(bytes))
}

struct ArrayVisitor<const N: usize>;

impl<const N: usize> Visitor<'_> for ArrayVisitor<N> {
    type Value = [u8; N];
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a hex string of {N} bytes")
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<[u8; N], E> {
        if v.len() != 2 * N {
            return Err(E::invalid_length(v.len() / 2, &self));
        }
        let mut out = [0u8; N];
        let mut valid = true;
        for (o, pair) in out.iter_mut().zip(v.as_bytes().chunks_exact(2)) {
            let digit = |c: u8| (c as char).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(hi), Some(lo)) => *o = (hi << 4 | lo) as u8,
                _ => valid = false,
            }
        }
        if valid {
            Ok(out)
        } else {
            // What was decoded may be part of a secret key.
            crate::Wipe::wipe(&mut out);
            Err(E::custom("invalid hex digit"))
        }
    }
}

/// Deserializes a hex string of exactly `N` bytes.
pub fn deserialize<'de, D: serde::Deserializer<'de>, const N: usize>(d: D) -> Result<[u8; N], D::Error> {
    d.deserialize_str(ArrayVisitor::<N>)
}
