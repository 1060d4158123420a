//! Prime moduli of the form q = k·2^m + 1 and every constant derived from them.
//!
//! Each modulus is a zero-sized type; its constants are computed by `const fn`
//! from `Q` alone and checked by `const` assertions, so a wrong constant is a
//! compile error, not a test failure.

pub use crate::consts::{inv_mod, pow_mod, smallest_root_of_unity};
use crate::consts::{inv_mod_2_16, round_div, two_adicity};

/// Passes a value through an optimisation barrier on AVR.
///
/// The AVR core has no conditional move, so when LLVM recognises
/// `mask & x` as a select it lowers it to a branch: a secret-dependent one
/// (`cargo xtask ct` sees the cycle counts vary). On AVR this is an empty
/// inline-assembly statement that takes and returns the value in registers
/// (unlike `core::hint::black_box`, it forces nothing into memory);
/// elsewhere the value is used as is, and `ci/ct-valgrind.sh` checks the
/// host build.
#[inline(always)]
pub fn opaque_i16(x: i16) -> i16 {
    #[cfg(target_arch = "avr")]
    {
        crate::avr_barrier::i16(x)
    }
    #[cfg(not(target_arch = "avr"))]
    {
        x
    }
}

/// [`opaque_i16`] for 32-bit values.
#[inline(always)]
pub fn opaque_i32(x: i32) -> i32 {
    let lo = opaque_i16(x as i16) as u16 as i32;
    let hi = opaque_i16((x >> 16) as i16) as i32;
    (hi << 16) | lo
}

/// All ones if `x < 0`, else zero, without a branch even on AVR: operand
/// and mask both pass the barrier, or LLVM turns `x >> 15` into a compare
/// and a select, i.e. a branch.
#[inline(always)]
pub fn negative_mask_i16(x: i16) -> i16 {
    opaque_i16(opaque_i16(x) >> 15)
}

/// [`negative_mask_i16`] for 32-bit values.
#[inline(always)]
pub fn negative_mask_i32(x: i32) -> i32 {
    opaque_i32(opaque_i32(x) >> 31)
}

/// A prime modulus q = k·2^m + 1 with everything the reductions need.
///
/// Only `Q` is given by an implementation; every other constant has a
/// default derived from it. Overriding them is never needed.
pub trait Modulus: 'static + Copy + Default {
    /// The prime modulus.
    const Q: u16;
    /// Human-readable name, used by benchmarks and tests.
    const NAME: &'static str;

    /// m: the two-adicity of q − 1.
    const M: u32 = two_adicity(Self::Q as u32);
    /// k = (q − 1) / 2^m, odd.
    const K: u16 = ((Self::Q as u32 - 1) >> Self::M) as u16;
    /// q^{-1} mod 2^16 (Montgomery with R = 2^16).
    const QINV: u16 = inv_mod_2_16(Self::Q as u32);
    /// R mod q with R = 2^16.
    const R_MOD_Q: u16 = pow_mod(2, 16, Self::Q as u32) as u16;
    /// R² mod q with R = 2^16.
    const R2_MOD_Q: u16 = pow_mod(Self::R_MOD_Q as u32, 2, Self::Q as u32) as u16;
    /// Barrett constant for 16-bit inputs: round(2^24 / q) (2^24 keeps
    /// v·a inside 32 bits for every i16 a and every q here).
    const BARRETT16_V: i32 = round_div(1 << 24, Self::Q as i64) as i32;
    /// Barrett constant for 32-bit inputs: round(2^40 / q).
    const BARRETT32_V: i64 = round_div(1 << 40, Self::Q as i64);
    /// NTT-friendly Barrett constant: round(2^(24+m) / q).
    const BARRETT_NTT_V: i64 = round_div(1 << (24 + Self::M), Self::Q as i64);
    /// k^{-1} mod q (K-RED twiddle scaling).
    const K_INV: u16 = inv_mod(Self::K as u32, Self::Q as u32) as u16;
    /// (q − 1) / 2: the bound of a centred representative.
    const HALF: i16 = ((Self::Q - 1) >> 1) as i16;

    /// Centred representative of a 16-bit value: the result lies in
    /// [−(q−1)/2, (q−1)/2] and is congruent to `a`. Constant time.
    #[inline(always)]
    fn center(a: i16) -> i16 {
        let t = ((Self::BARRETT16_V * a as i32 + (1 << 23)) >> 24) as i16;
        let r = a.wrapping_sub(t.wrapping_mul(Self::Q as i16));
        Self::center_fixup(r)
    }

    /// Centred representative of a 32-bit value with |a| < 2^30. Constant time.
    #[inline(always)]
    fn center_wide(a: i32) -> i16 {
        let t = ((Self::BARRETT32_V * a as i64 + (1i64 << 39)) >> 40) as i32;
        let r = a.wrapping_sub(t.wrapping_mul(Self::Q as i32)) as i16;
        Self::center_fixup(r)
    }

    /// Moves a value with |a| ≤ q + (q−1)/2 into [−(q−1)/2, (q−1)/2] with
    /// masks, no branch and no multiplication (so also a cheap [`Self::center`]
    /// for small inputs, e.g. raw 10-bit values mod 769 or 13-bit ones mod 3329).
    #[inline(always)]
    fn center_fixup(mut r: i16) -> i16 {
        r = r.wrapping_sub(Self::Q as i16 & negative_mask_i16(Self::HALF.wrapping_sub(r)));
        r.wrapping_add(Self::Q as i16 & negative_mask_i16(r.wrapping_add(Self::HALF)))
    }

    /// The representative in [0, q) of a value in (−q, q), such as a centred
    /// one: one masked addition, no multiplication. Constant time.
    #[inline(always)]
    fn to_unsigned_small(a: i16) -> u16 {
        (a + (Self::Q as i16 & negative_mask_i16(a))) as u16
    }

    /// The canonical representative in [0, q) of a centred value. Constant time.
    #[inline(always)]
    fn to_unsigned(a: i16) -> u16 {
        let c = Self::center(a);
        (c + (Self::Q as i16 & negative_mask_i16(c))) as u16
    }
}

/// Checks every derived constant of a modulus at compile time.
macro_rules! modulus {
    ($(#[$doc:meta])* $name:ident = $q:literal, k = $k:literal, m = $m:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;
        impl Modulus for $name {
            const Q: u16 = $q;
            const NAME: &'static str = stringify!($q);
        }
        const _: () = {
            let q = $name::Q as u32;
            assert!($name::K as u32 == $k && $name::M == $m, "q = k·2^m + 1 as documented");
            assert!(($name::K as u32) << $name::M == q - 1);
            assert!(q.wrapping_mul($name::QINV as u32) & 0xFFFF == 1, "q·q^-1 ≡ 1 mod 2^16");
            assert!(pow_mod($name::R_MOD_Q as u32, 2, q) == $name::R2_MOD_Q as u32);
            assert!(pow_mod($name::K as u32 * $name::K_INV as u32, 1, q) == 1);
            // NTT-friendly Montgomery: q^-1 ≡ 1 − k·2^m (mod 2^16) needs 2m ≥ 16.
            assert!(2 * $name::M >= 16);
            assert!((1u32.wrapping_sub(($name::K as u32) << $name::M)) & 0xFFFF == $name::QINV as u32);
            assert!(q < (1 << 14), "centred coefficients and sums of two fit an i16");
        };
    };
}

modulus!(
    /// q = 769 = 3·2^8 + 1, CTRU-Light's modulus.
    Q769 = 769, k = 3, m = 8
);
modulus!(
    /// q = 3329 = 13·2^8 + 1, Kyber's modulus (also Saber's second NTT prime).
    Q3329 = 3329, k = 13, m = 8
);
modulus!(
    /// q = 7681 = 15·2^9 + 1, Saber's second NTT prime.
    Q7681 = 7681, k = 15, m = 9
);
