//! Modular reductions of 32-bit products, behind one trait.
//!
//! Every reduction maps an input `a` with `|a| < INPUT_BOUND` to an output `r`
//! with `|r| < OUTPUT_BOUND` and `r ≡ a · S^{-1} (mod q)`, where `S = SCALE` is
//! the reduction's own factor (2^16 for Montgomery, k^{-1} for K-RED, k^{-2} for
//! K-RED2X, 1 for Barrett). Constants such as twiddle factors are stored
//! pre-multiplied by `S`, so that `reduce(a · (b·S)) ≡ a·b` whatever the
//! reduction: that is how one NTT serves all of them.
//!
//! All reductions are branch-free and division-free; the tests in
//! `tests/reductions.rs` check every documented range exhaustively.

use core::marker::PhantomData;

use crate::consts::pow_mod;
use crate::modulus::Modulus;

/// A reduction of a signed 32-bit product modulo `Self::Modulus`.
pub trait Reduction: 'static + Copy + Default {
    /// The modulus reduced by.
    type Modulus: Modulus;
    /// Name used in benchmark tables (the paper's naming).
    const NAME: &'static str;
    /// S mod q: `reduce(a) ≡ a · S^{-1}`. Constants are stored pre-scaled by S.
    const SCALE: u16;
    /// Inputs must satisfy `|a| < INPUT_BOUND`.
    const INPUT_BOUND: i32;
    /// Outputs satisfy `|r| < OUTPUT_BOUND` (always ≤ 2^15).
    const OUTPUT_BOUND: i32;

    /// Reduces `a` (|a| < `INPUT_BOUND`) to r ≡ a·S^{-1} with |r| < `OUTPUT_BOUND`.
    fn reduce(a: i32) -> i16;

    /// `reduce(a · b)`: with `b` pre-scaled by S this is a·b mod q.
    #[inline(always)]
    fn mul(a: i16, b: i16) -> i16 {
        Self::reduce(a as i32 * b as i32)
    }
}

pub use crate::consts::prescale;

/// Plain signed Montgomery reduction with R = 2^16 (input |a| < q·2^15).
///
/// t = (a mod 2^16)·q^{-1} mod 2^16 as a signed 16-bit value, r = (a − t·q) / 2^16.
#[inline(always)]
pub fn montgomery<M: Modulus>(a: i32) -> i16 {
    let t = (a as i16).wrapping_mul(M::QINV as i16);
    ((a - t as i32 * M::Q as i32) >> 16) as i16
}

/// Montgomery reduction using q^{-1} ≡ 1 − k·2^m (mod 2^16) (needs 2m ≥ 16):
/// the multiplication by q^{-1} becomes a multiplication by the small k and a
/// shift. Bit-for-bit equal to [`montgomery`].
#[inline(always)]
pub fn montgomery_ntt_friendly<M: Modulus>(a: i32) -> i16 {
    let lo = a as i16;
    let t = lo.wrapping_sub(lo.wrapping_mul(M::K as i16) << M::M);
    ((a - t as i32 * M::Q as i32) >> 16) as i16
}

/// Signed Barrett reduction of a 32-bit value: r = a − q·round(a / q), by a
/// multiplication with round(2^40/q) and a shift (no division).
#[inline(always)]
pub fn barrett<M: Modulus>(a: i32) -> i16 {
    let t = ((M::BARRETT32_V * a as i64 + (1i64 << 39)) >> 40) as i32;
    (a - t * M::Q as i32) as i16
}

/// Barrett reduction shaped for q = k·2^m + 1: the low m bits are dropped
/// first (a whole byte when m = 8), so the quotient estimate is a short
/// product (a ≫ m)·V with V = round(2^(24+m)/q), shifted right by 24.
/// The estimate may be one off, hence the wider output range.
#[inline(always)]
pub fn barrett_ntt_friendly<M: Modulus>(a: i32) -> i16 {
    let t = (((a >> M::M) as i64 * M::BARRETT_NTT_V + (1 << 23)) >> 24) as i32;
    (a - t * M::Q as i32) as i16
}

/// K-RED (Longa–Naehrig): with a = C + D·2^m, C ∈ [0, 2^m), returns k·C − D ≡ k·a.
#[inline(always)]
pub fn kred<M: Modulus>(a: i32) -> i32 {
    let c = a & ((1 << M::M) - 1);
    let d = a >> M::M;
    M::K as i32 * c - d
}

/// K-RED2X: K-RED applied twice on a = C0 + C1·2^m + C2·2^2m,
/// returns k²·C0 − k·C1 + C2 ≡ k²·a.
#[inline(always)]
pub fn kred2x<M: Modulus>(a: i32) -> i32 {
    let mask = (1 << M::M) - 1;
    let c0 = a & mask;
    let c1 = (a >> M::M) & mask;
    let c2 = a >> (2 * M::M);
    let k = M::K as i32;
    k * k * c0 - k * c1 + c2
}

macro_rules! reduction {
    ($(#[$doc:meta])* $name:ident, $label:literal, scale = $scale:expr,
     input = $input:expr, output = $output:expr, $f:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name<M>(PhantomData<M>);

        impl<M: Modulus> Reduction for $name<M> {
            type Modulus = M;
            const NAME: &'static str = $label;
            const SCALE: u16 = $scale;
            const INPUT_BOUND: i32 = $input;
            const OUTPUT_BOUND: i32 = $output;
            #[inline(always)]
            fn reduce(a: i32) -> i16 {
                ($f)(a)
            }
        }
    };
}

const fn q<M: Modulus>() -> i32 {
    M::Q as i32
}

reduction!(
    /// Signed Montgomery reduction, R = 2^16: |a| < q·2^15 → |r| < q, r ≡ a·2^{-16}.
    Montgomery, "Montgomery", scale = M::R_MOD_Q,
    input = q::<M>() << 15, output = q::<M>(), montgomery::<M>
);
reduction!(
    /// NTT-friendly Montgomery (q^{-1} = 1 − k·2^m): same ranges and results as [`Montgomery`].
    NttFriendlyMontgomery, "NTT-friendly Montgomery", scale = M::R_MOD_Q,
    input = q::<M>() << 15, output = q::<M>(), montgomery_ntt_friendly::<M>
);
reduction!(
    /// Signed Barrett: |a| < q·2^15 → |r| ≤ (q−1)/2 + 1, r ≡ a.
    Barrett, "Barrett", scale = 1,
    input = q::<M>() << 15, output = (q::<M>() >> 1) + 2, barrett::<M>
);
reduction!(
    /// NTT-friendly Barrett (low m bits dropped first): |a| < q·2^15 → |r| < 3q/2, r ≡ a.
    NttFriendlyBarrett, "NTT-friendly Barrett", scale = 1,
    input = q::<M>() << 15, output = (3 * q::<M>()) >> 1, barrett_ntt_friendly::<M>
);
reduction!(
    /// K-RED: |a| < 2^(m+14) → |r| < k·2^m + 2^14, r ≡ k·a.
    KRed, "K-RED", scale = M::K_INV,
    input = 1 << (M::M + 14), output = ((M::K as i32) << M::M) + (1 << 14),
    |a| kred::<M>(a) as i16
);
reduction!(
    /// K-RED2X: |a| < 2^(2m+13) → |r| < (k²+k)·2^m + 2^13, r ≡ k²·a.
    /// Fits 16 bits only for small k (q = 769); [`crate::ntt::Ntt`] rejects
    /// other moduli at compile time.
    KRed2x, "K-RED2X", scale = pow_mod(M::K_INV as u32, 2, M::Q as u32) as u16,
    input = 1 << (2 * M::M + 13),
    output = (((M::K as i32) * (M::K as i32) + M::K as i32) << M::M) + (1 << 13),
    |a| kred2x::<M>(a) as i16
);
