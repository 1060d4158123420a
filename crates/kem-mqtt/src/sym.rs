//! Symmetric primitives of the two families: transcript hash, KDF, MAC.
//!
//! - Ascon family (NIST SP 800-232): transcript hash = Ascon-XOF128 with
//!   256-bit output; KDF(label, parts) = Ascon-CXOF128 with customization
//!   string `"KEM-MQTT/1 " ‖ label` over the length-framed parts.
//! - SHA3 family (FIPS 202): transcript hash = SHA3-256; KDF(label, parts) =
//!   SHAKE256(frame("KEM-MQTT/1 " ‖ label) ‖ framed parts).
//!
//! `frame(x) = u16_be(|x|) ‖ x`: concatenated secrets cannot be re-split.

#[cfg(ascon_family)]
use ascon_sponge::Xof128;
#[cfg(sha3_family)]
use fips202::Sponge;
use zeroize::Zeroize;

use crate::suite::Family;

/// Prefix of every KDF label.
pub const LABEL_PREFIX: &[u8] = b"KEM-MQTT/1 ";

/// A running hash or XOF of one family.
#[derive(Clone)]
pub enum Xof {
    /// A Keccak sponge (SHA3-256 or SHAKE256).
    #[cfg(sha3_family)]
    Sha3(Sponge),
    /// An Ascon sponge (XOF128 or CXOF128; on AVR the assembly permutation).
    #[cfg(ascon_family)]
    Ascon(Xof128),
}

impl Xof {
    /// The transcript hash of `family`.
    pub fn transcript(family: Family) -> Self {
        match family {
            #[cfg(sha3_family)]
            Family::Sha3 => Xof::Sha3(Sponge::sha3_256()),
            #[cfg(ascon_family)]
            Family::Ascon => Xof::Ascon(Xof128::new()),
        }
    }

    /// The KDF of `family` under `label` (without the common prefix).
    fn kdf(family: Family, label: &[u8]) -> Self {
        match family {
            #[cfg(sha3_family)]
            Family::Sha3 => {
                let mut s = Sponge::shake256();
                s.absorb(&((LABEL_PREFIX.len() + label.len()) as u16).to_be_bytes());
                s.absorb(LABEL_PREFIX);
                s.absorb(label);
                Xof::Sha3(s)
            }
            #[cfg(ascon_family)]
            Family::Ascon => Xof::Ascon(Xof128::cxof128(&[LABEL_PREFIX, label])),
        }
    }

    /// Absorbs bytes.
    pub fn absorb(&mut self, data: &[u8]) {
        match self {
            #[cfg(sha3_family)]
            Xof::Sha3(s) => s.absorb(data),
            #[cfg(ascon_family)]
            Xof::Ascon(s) => s.absorb(data),
        }
    }

    /// Finalizes and squeezes `out.len()` bytes.
    pub fn finish(mut self, out: &mut [u8]) {
        match &mut self {
            #[cfg(sha3_family)]
            Xof::Sha3(s) => {
                s.finalize();
                s.squeeze(out);
            }
            #[cfg(ascon_family)]
            Xof::Ascon(s) => {
                s.finalize();
                s.squeeze(out);
            }
        }
    }

    /// The 32-byte digest of what was absorbed so far (the hash goes on).
    pub fn snapshot(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        self.clone().finish(&mut out);
        out
    }
}

/// KDF(label, frame(parts\[0\]) ‖ frame(parts\[1\]) ‖ …) → `out.len()` bytes.
pub fn kdf(family: Family, label: &[u8], parts: &[&[u8]], out: &mut [u8]) {
    let mut x = Xof::kdf(family, label);
    for p in parts {
        x.absorb(&(p.len() as u16).to_be_bytes());
        x.absorb(p);
    }
    x.finish(out);
}

/// One part of [`kdf_with`]'s input.
pub enum Part<'a> {
    /// Bytes in the data space.
    Bytes(&'a [u8]),
    /// `len` bytes that `read(at, out)` copies out (a classic AVR's
    /// program memory), absorbed 32 bytes at a time.
    Read(usize, &'a dyn Fn(usize, &mut [u8])),
}

/// [`kdf`] of parts that may be in program memory: the same output as
/// [`kdf`] of the same bytes.
pub fn kdf_with(family: Family, label: &[u8], parts: &[Part<'_>], out: &mut [u8]) {
    let mut x = Xof::kdf(family, label);
    for p in parts {
        match p {
            Part::Bytes(bytes) => {
                x.absorb(&(bytes.len() as u16).to_be_bytes());
                x.absorb(bytes);
            }
            Part::Read(len, read) => {
                x.absorb(&(*len as u16).to_be_bytes());
                let mut piece = [0u8; 32];
                let mut at = 0;
                while at < *len {
                    let n = (len - at).min(piece.len());
                    let (bytes, _) = piece.split_at_mut(n);
                    read(at, bytes);
                    x.absorb(bytes);
                    at += n;
                }
                piece.zeroize();
            }
        }
    }
    x.finish(out);
}

/// [`kdf`] with a 32-byte output.
pub fn kdf32(family: Family, label: &[u8], parts: &[&[u8]]) -> Secret32 {
    let mut out = Secret32([0; 32]);
    kdf(family, label, parts, &mut out.0);
    out
}

/// A 32-byte secret, zeroized on drop.
#[derive(Clone)]
pub struct Secret32(pub [u8; 32]);

impl Drop for Secret32 {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts read in pieces give the KDF of the same bytes, in both families.
    #[test]
    fn kdf_with_readers_is_kdf() {
        let key: [u8; 100] = core::array::from_fn(|i| (i as u8).wrapping_mul(37));
        let read = |at: usize, out: &mut [u8]| out.copy_from_slice(&key[at..at + out.len()]);
        for family in [Family::Sha3, Family::Ascon] {
            let (mut a, mut b) = ([0u8; 48], [0u8; 48]);
            kdf(family, b"label", &[&key, b"counter"], &mut a);
            kdf_with(
                family,
                b"label",
                &[Part::Read(key.len(), &read), Part::Bytes(b"counter")],
                &mut b,
            );
            assert_eq!(a, b);
        }
    }

    #[test]
    fn framing_separates_parts() {
        #[cfg(all(ascon_family, sha3_family))]
        for family in [Family::Ascon, Family::Sha3] {
            let a = kdf32(family, b"t", &[b"ab", b"c"]);
            let b = kdf32(family, b"t", &[b"a", b"bc"]);
            let c = kdf32(family, b"u", &[b"ab", b"c"]);
            assert_ne!(a.0, b.0);
            assert_ne!(a.0, c.0);
        }
    }
}
