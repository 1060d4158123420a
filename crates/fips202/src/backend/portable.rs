//! Keccak-f\[1600\] in portable Rust: [`crate::permute_portable`], the
//! reference the assembly is tested against.

/// The permutation of the 200-byte state, in place.
#[inline]
pub(crate) fn f1600(state: &mut [u8; 200]) {
    crate::permute_portable(state);
}
