//! Keccak-f\[1600\] in AVR assembly (`asm-avr/keccak_f1600.S`; contract in
//! `asm-avr/CONTRACTS.md`), bit for bit [`crate::permute_portable`].
#![allow(unsafe_code)]

extern "C" {
    /// `asm-avr/keccak_f1600.S`: permutes 25 little-endian lanes in place.
    fn keccak_f1600_avr(state: *mut u8);
}

/// The permutation of the 200-byte state, in place.
#[inline]
pub(crate) fn f1600(state: &mut [u8; 200]) {
    // SAFETY: the routine reads and writes exactly the 200 bytes of
    // `state` and follows the avr-gcc ABI (tested in simavr).
    unsafe { keccak_f1600_avr(state.as_mut_ptr()) }
}
