//! AVR assembly backends (`asm-avr/`, assembled by `build.rs` for AVR only,
//! `cfg(ntt_asm)`). Each routine computes exactly what the portable code
//! computes for its ring (bit for bit, tested in simavr by
//! `tests/avr_ntt.rs`); rings without a routine keep the portable path.
//! The twiddles are modarith's own const tables, passed by pointer: they are
//! generated once, in Rust.
#![allow(unsafe_code)]

use core::any::TypeId;

use crate::modulus::{Q3329, Q769};
use crate::ntt::{Ntt, MAX_TWIDDLES};
use crate::reduce::{NttFriendlyMontgomery, Reduction};

type Forward = unsafe extern "C" fn(a: *mut i16, zetas: *const i16);
type Inverse = unsafe extern "C" fn(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);

extern "C" {
    fn ntt_fwd_q3329_n256(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_q769_n512(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_q3329_n512(a: *mut i16, zetas: *const i16);
    fn ntt_inv_q3329_n256(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_inv_q769_n512(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_inv_q3329_n512(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
}

/// The tables the routines read, one static per ring (the same const values
/// the portable code uses).
struct Tables {
    zetas: [i16; MAX_TWIDDLES],
    zetas_inv: [i16; MAX_TWIDDLES],
    last_layer: [i16; 2],
}

const fn tables<R: Reduction, const N: usize>() -> Tables {
    Tables {
        zetas: Ntt::<R, N, 7>::ZETAS,
        zetas_inv: Ntt::<R, N, 7>::ZETAS_INV,
        last_layer: Ntt::<R, N, 7>::INVERSE_LAST_LAYER,
    }
}

static Q3329_N256: Tables = tables::<NttFriendlyMontgomery<Q3329>, 256>();
static Q769_N512: Tables = tables::<NttFriendlyMontgomery<Q769>, 512>();
static Q3329_N512: Tables = tables::<NttFriendlyMontgomery<Q3329>, 512>();

/// The routines and tables of this ring, if it has them. The checks fold to
/// constants after monomorphization.
fn routines<R: Reduction, const N: usize, const LAYERS: u32>() -> Option<(Forward, Inverse, &'static Tables)> {
    let r = TypeId::of::<R>();
    let q3329 = TypeId::of::<NttFriendlyMontgomery<Q3329>>();
    let q769 = TypeId::of::<NttFriendlyMontgomery<Q769>>();
    if LAYERS != 7 {
        None
    } else if r == q3329 && N == 256 {
        Some((ntt_fwd_q3329_n256, ntt_inv_q3329_n256, &Q3329_N256))
    } else if r == q769 && N == 512 {
        Some((ntt_fwd_q769_n512, ntt_inv_q769_n512, &Q769_N512))
    } else if r == q3329 && N == 512 {
        Some((ntt_fwd_q3329_n512, ntt_inv_q3329_n512, &Q3329_N512))
    } else {
        None
    }
}

/// Runs the assembly forward NTT when this ring has one; false otherwise.
#[inline]
pub(crate) fn forward<R: Reduction, const N: usize, const LAYERS: u32>(a: &mut [i16; N]) -> bool {
    match routines::<R, N, LAYERS>() {
        Some((forward, _, t)) => {
            // SAFETY: the routine transforms exactly N coefficients in place
            // and reads the 2^LAYERS twiddles of `t.zetas`; it follows the
            // avr-gcc ABI (tests/avr_ntt.rs checks it in simavr).
            unsafe { forward(a.as_mut_ptr(), t.zetas.as_ptr()) };
            true
        }
        None => false,
    }
}

/// Runs the assembly inverse NTT when this ring has one; false otherwise.
#[inline]
pub(crate) fn inverse<R: Reduction, const N: usize, const LAYERS: u32>(a: &mut [i16; N]) -> bool {
    match routines::<R, N, LAYERS>() {
        Some((_, inverse, t)) => {
            // SAFETY: as for `forward`; it also reads the two factors of
            // `t.last_layer`.
            unsafe { inverse(a.as_mut_ptr(), t.zetas_inv.as_ptr(), t.last_layer.as_ptr()) };
            true
        }
        None => false,
    }
}
