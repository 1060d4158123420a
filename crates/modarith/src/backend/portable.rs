//! No native routines: every function declines, so `ntt.rs` runs its
//! portable code (the reference the assembly is tested against). Inlined,
//! the constant answers remove the seam from the code.
// The signatures are `asm.rs`'s, where the reduction `R` picks the routine.
#![allow(clippy::extra_unused_type_parameters)]

use crate::reduce::Reduction;

/// No forward NTT here: `false`.
#[inline(always)]
pub(crate) fn forward<R: Reduction, const N: usize, const LAYERS: u32>(_a: &mut [i16; N]) -> bool {
    false
}

/// No forward NTT for small inputs here: `false`.
#[inline(always)]
pub(crate) fn forward_small<R: Reduction, const N: usize, const LAYERS: u32>(_a: &mut [i16; N]) -> bool {
    false
}

/// No inverse NTT here: `false`.
#[inline(always)]
pub(crate) fn inverse<R: Reduction, const N: usize, const LAYERS: u32>(_a: &mut [i16; N]) -> bool {
    false
}

/// No base multiplication here: `false`. Raw pointers as in `asm.rs` (`out`
/// may be `a`); never read here.
#[inline(always)]
pub(crate) fn base_mul<R: Reduction, const N: usize, const LAYERS: u32>(
    _a: *const i16,
    _b: *const i16,
    _out: *mut i16,
    _acc: bool,
) -> bool {
    false
}

/// No base inversion here: `None`.
#[inline(always)]
pub(crate) fn base_inv<R: Reduction, const N: usize, const LAYERS: u32>(_a: &mut [i16; N]) -> Option<u8> {
    None
}
