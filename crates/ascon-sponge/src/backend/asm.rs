//! The Ascon permutation in AVR assembly (`asm-avr/ascon_p.S`; contract in
//! `asm-avr/CONTRACTS.md`), bit for bit [`crate::permute_portable`].
#![allow(unsafe_code)]

extern "C" {
    /// `asm-avr/ascon_p.S`.
    fn ascon_permute_avr(state: *mut u8, rounds: u8);
}

/// `rounds` (1..=12) rounds on the 40-byte state, in place.
#[inline]
pub(crate) fn permute(state: &mut [u8; 40], rounds: u8) {
    // SAFETY: reads and writes exactly the 40 bytes of `state`; follows
    // the avr-gcc ABI (tested in simavr).
    unsafe { ascon_permute_avr(state.as_mut_ptr(), rounds) }
}
