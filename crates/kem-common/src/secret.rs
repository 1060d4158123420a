//! The shared secret and constant-time comparisons and selection of secrets.

use core::fmt;

use crate::Wipe;
use subtle::{Choice, ConstantTimeEq};

/// A 32-byte shared secret. Zeroized on drop; compared in constant time.
///
/// ```
/// use kem_common::SharedSecret;
///
/// let ss = SharedSecret::new([7; 32]);
/// assert_eq!(ss, SharedSecret::new([7; 32])); // compared in constant time
/// assert_ne!(ss, SharedSecret::new([8; 32]));
/// assert_eq!(format!("{ss:?}"), "SharedSecret(..)"); // never printed
/// let key: &[u8; 32] = ss.as_bytes(); // for a KDF or a cipher
/// assert_eq!(key[0], 7);
/// ```
#[derive(Clone)]
pub struct SharedSecret([u8; 32]);

impl SharedSecret {
    /// Wraps secret bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        SharedSecret(bytes)
    }
    /// The secret bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl ConstantTimeEq for SharedSecret {
    fn ct_eq(&self, other: &Self) -> Choice {
        bytes_equal(&self.0, &other.0)
    }
}
impl PartialEq for SharedSecret {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other).into()
    }
}
impl Eq for SharedSecret {}
impl Drop for SharedSecret {
    fn drop(&mut self) {
        self.0.wipe();
    }
}
impl zeroize::ZeroizeOnDrop for SharedSecret {}
/// RustCrypto's form of a 32-byte shared key (`kem::SharedKey<K>` of every
/// KEM here).
pub type SharedKeyArray = kem::common::array::Array<u8, kem::consts::U32>;

impl From<SharedSecret> for SharedKeyArray {
    /// The trait API's shared key (`kem::Decapsulate::decapsulate`'s output).
    fn from(ss: SharedSecret) -> Self {
        (*ss.as_bytes()).into()
    }
}
impl From<&SharedKeyArray> for SharedSecret {
    /// A shared key of the trait API as the typed API's (zeroized on drop).
    fn from(key: &SharedKeyArray) -> Self {
        SharedSecret(key.0)
    }
}
impl PartialEq<SharedKeyArray> for SharedSecret {
    /// In constant time, as between two [`SharedSecret`]s.
    fn eq(&self, other: &SharedKeyArray) -> bool {
        bytes_equal(&self.0, &other.0).into()
    }
}
impl PartialEq<SharedSecret> for SharedKeyArray {
    /// In constant time, as between two [`SharedSecret`]s.
    fn eq(&self, other: &SharedSecret) -> bool {
        other == self
    }
}

impl fmt::Debug for SharedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedSecret(..)")
    }
}

/// Whether `a` equals `b` (different lengths, which are public, are
/// unequal), in constant time: every byte pair's XOR is ORed into one
/// byte, and only that total is compared. Use it instead of subtle's slice
/// `ct_eq` on AVR: LLVM turns subtle's per-byte masks back into
/// comparisons, and the AVR (no set-on-condition instruction) branches on
/// each byte; `cargo xtask mqtt --seeds` caught it in the X25519 zero check.
///
/// ```
/// use kem_common::bytes_equal;
///
/// assert!(bool::from(bytes_equal(b"tag!", b"tag!")));
/// assert!(!bool::from(bytes_equal(b"tag!", b"tag?")));
/// assert!(!bool::from(bytes_equal(b"tag", b"tag!"))); // lengths differ
/// ```
pub fn bytes_equal(a: &[u8], b: &[u8]) -> Choice {
    if a.len() != b.len() {
        return Choice::from(0);
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    is_zero(diff)
}

/// Whether `x` is zero, in constant time and without a branch on AVR:
/// 0 − x borrows (high byte 0xFF) iff x ≠ 0, and that difference passes
/// through `black_box` before its high bit is taken. subtle's `ct_eq`
/// leaves LLVM free to fold its arithmetic back into `x != 0`, which the
/// AVR (no set-on-condition instruction) lowers to a branch: `cargo xtask
/// ct` found one, cycle-balanced, deciding the FO re-encryption check.
pub fn is_zero(x: u8) -> Choice {
    let borrow_word = core::hint::black_box((x as u16).wrapping_neg());
    Choice::from(1 ^ ((borrow_word >> 8) as u8 & 1))
}

/// Selects `b` where `choice` is set, else `a`, byte by byte in constant time.
///
/// ```
/// use kem_common::{bytes_equal, select_bytes};
///
/// let (fallback, good) = ([9u8; 4], [1u8; 4]);
/// let same = bytes_equal(b"expected", b"expected");
/// assert_eq!(select_bytes(&fallback, &good, same), good);
/// let differ = bytes_equal(b"expected", b"received");
/// assert_eq!(select_bytes(&fallback, &good, differ), fallback);
/// ```
pub fn select_bytes<const L: usize>(a: &[u8; L], b: &[u8; L], choice: Choice) -> [u8; L] {
    use subtle::ConditionallySelectable;
    core::array::from_fn(|i| u8::conditional_select(&a[i], &b[i], choice))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_zero_only_for_zero() {
        for x in 0..=255u8 {
            assert_eq!(bool::from(is_zero(x)), x == 0, "{x}");
        }
    }

    #[test]
    fn bytes_equal_finds_every_single_difference() {
        let a = [0x5Au8; 33];
        assert!(bool::from(bytes_equal(&a, &a)));
        assert!(bool::from(bytes_equal(&[], &[])));
        assert!(!bool::from(bytes_equal(&a, &a[..32])));
        for i in 0..a.len() {
            for bit in 0..8 {
                let mut b = a;
                b[i] ^= 1 << bit;
                assert!(!bool::from(bytes_equal(&a, &b)), "byte {i}, bit {bit}");
            }
        }
    }
}
