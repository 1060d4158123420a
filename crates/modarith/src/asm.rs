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

type Routine = unsafe extern "C" fn(a: *mut i16, zetas: *const i16);

extern "C" {
    fn ntt_fwd_q3329_n256(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_q769_n512(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_q3329_n512(a: *mut i16, zetas: *const i16);
}

static ZETAS_Q3329: [i16; MAX_TWIDDLES] = Ntt::<NttFriendlyMontgomery<Q3329>, 256, 7>::ZETAS;
static ZETAS_Q769: [i16; MAX_TWIDDLES] = Ntt::<NttFriendlyMontgomery<Q769>, 512, 7>::ZETAS;

/// The forward-NTT routine for this ring, if there is one. The checks fold
/// to constants after monomorphization.
fn forward_routine<R: Reduction, const N: usize, const LAYERS: u32>() -> Option<(Routine, &'static [i16; MAX_TWIDDLES])>
{
    let r = TypeId::of::<R>();
    if LAYERS != 7 {
        None
    } else if r == TypeId::of::<NttFriendlyMontgomery<Q3329>>() && N == 256 {
        Some((ntt_fwd_q3329_n256, &ZETAS_Q3329))
    } else if r == TypeId::of::<NttFriendlyMontgomery<Q769>>() && N == 512 {
        Some((ntt_fwd_q769_n512, &ZETAS_Q769))
    } else if r == TypeId::of::<NttFriendlyMontgomery<Q3329>>() && N == 512 {
        Some((ntt_fwd_q3329_n512, &ZETAS_Q3329))
    } else {
        None
    }
}

/// Runs the assembly forward NTT when this ring has one; false otherwise.
#[inline]
pub(crate) fn forward<R: Reduction, const N: usize, const LAYERS: u32>(a: &mut [i16; N]) -> bool {
    match forward_routine::<R, N, LAYERS>() {
        Some((routine, zetas)) => {
            // SAFETY: the routine transforms exactly N coefficients in place
            // and reads the 2^LAYERS twiddles of `zetas`; it follows the
            // avr-gcc ABI (tests/avr_ntt.rs checks it in simavr).
            unsafe { routine(a.as_mut_ptr(), zetas.as_ptr()) };
            true
        }
        None => false,
    }
}
