//! The Ascon permutation in portable Rust: [`crate::permute_portable`] (the
//! reference the assembly is tested against) on the state's bytes.

use zeroize::Zeroize;

/// `rounds` (1..=12) rounds on the 40-byte state, in place.
#[inline]
pub(crate) fn permute(state: &mut [u8; 40], rounds: u8) {
    let mut words = [0u64; 5];
    for (w, b) in words.iter_mut().zip(state.chunks_exact(8)) {
        *w = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    }
    crate::permute_portable(&mut words, rounds);
    for (w, b) in words.iter().zip(state.chunks_exact_mut(8)) {
        b.copy_from_slice(&w.to_le_bytes());
    }
    words.zeroize();
}
