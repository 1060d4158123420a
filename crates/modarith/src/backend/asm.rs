//! AVR assembly backends (`asm-avr/`, assembled by `build.rs` for AVR only;
//! contracts in `asm-avr/CONTRACTS.md`). Each routine computes exactly what
//! the portable code computes for its ring (bit for bit, tested in simavr by
//! `tests/avr_ntt.rs`), in the paper's three variants: NTT-friendly and plain
//! Montgomery (`_mont` routines) for every ring, K-RED2X (`_kred2x`) for
//! q = 769; rings of other reductions keep the portable path (the functions
//! below return `false` / `None` for them, as `portable.rs` does for all).
//! The twiddles are modarith's own const tables, passed by pointer: they are
//! generated once, in Rust. With `cfg(ntt_tables_flash)` (the default on
//! AVR, see `build.rs`) the tables live in flash (`.progmem.data`) and the
//! routines read them with `lpm`; Rust code never dereferences them there
//! (a data-space read would see SRAM), it only passes their addresses.
#![allow(unsafe_code)]

use core::any::TypeId;

use crate::modulus::{Q3329, Q7681, Q769};
use crate::reduce::{KRed2x, Montgomery, NttFriendlyMontgomery, Reduction};
use crate::twiddles::{Twiddles, MAX_TWIDDLES};

type Forward = unsafe extern "C" fn(a: *mut i16, zetas: *const i16);
type Inverse = unsafe extern "C" fn(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
/// `s2` is ignored by the base multiplications (they end in a Barrett
/// reduction, see `asm-avr/gen_ntt.py`); it stays in the signature the base
/// inversions share, which use it.
type BaseMul = unsafe extern "C" fn(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);

extern "C" {
    fn ntt_fwd_q3329_n256(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_q769_n512(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_small_q769_n512(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_q3329_n512(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_small_q3329_n512(a: *mut i16, zetas: *const i16);
    fn ntt_inv_q3329_n256(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_inv_q769_n512(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_inv_q3329_n512(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_basemul_q3329_n256(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_q769_n512(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_acc_q769_n512(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_q3329_n512(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_acc_q3329_n512(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_baseinv_q769_n512(a: *mut i16, gammas: *const i16, s2: i16) -> u8;
    fn ntt_fwd_q7681_n256(a: *mut i16, zetas: *const i16);
    fn ntt_inv_q7681_n256(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_basemul_q7681_n256(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_acc_q7681_n256(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_fwd_q3329_n256_mont(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_q769_n512_mont(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_small_q769_n512_mont(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_q3329_n512_mont(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_small_q3329_n512_mont(a: *mut i16, zetas: *const i16);
    fn ntt_inv_q3329_n256_mont(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_inv_q769_n512_mont(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_inv_q3329_n512_mont(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_basemul_q3329_n256_mont(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_q769_n512_mont(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_acc_q769_n512_mont(
        a: *const i16,
        b: *const i16,
        out: *mut i16,
        gammas: *const i16,
        s2: i16,
        acc: u8,
    );
    fn ntt_basemul_q3329_n512_mont(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_acc_q3329_n512_mont(
        a: *const i16,
        b: *const i16,
        out: *mut i16,
        gammas: *const i16,
        s2: i16,
        acc: u8,
    );
    fn ntt_baseinv_q769_n512_mont(a: *mut i16, gammas: *const i16, s2: i16) -> u8;
    fn ntt_fwd_q7681_n256_mont(a: *mut i16, zetas: *const i16);
    fn ntt_inv_q7681_n256_mont(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_basemul_q7681_n256_mont(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_acc_q7681_n256_mont(
        a: *const i16,
        b: *const i16,
        out: *mut i16,
        gammas: *const i16,
        s2: i16,
        acc: u8,
    );
    fn ntt_fwd_q769_n512_kred2x(a: *mut i16, zetas: *const i16);
    fn ntt_fwd_small_q769_n512_kred2x(a: *mut i16, zetas: *const i16);
    fn ntt_inv_q769_n512_kred2x(a: *mut i16, zetas_inv: *const i16, last_layer: *const i16);
    fn ntt_basemul_q769_n512_kred2x(a: *const i16, b: *const i16, out: *mut i16, gammas: *const i16, s2: i16, acc: u8);
    fn ntt_basemul_acc_q769_n512_kred2x(
        a: *const i16,
        b: *const i16,
        out: *mut i16,
        gammas: *const i16,
        s2: i16,
        acc: u8,
    );
    fn ntt_baseinv_q769_n512_kred2x(a: *mut i16, gammas: *const i16, s2: i16) -> u8;
}

/// The routines of one ring. The degree-1 and degree-4 rings accumulate in
/// a routine of their own (`base_mul_acc`), so an image that never
/// accumulates links only `base_mul`; the degree-2 ring's one routine takes
/// the flag.
struct Routines {
    forward: Forward,
    /// The forward transform for inputs |a_i| ≤ `SMALL_INPUT` (the NTT's)
    /// (its first layer without reductions; n = 512 rings, else `forward`).
    forward_small: Forward,
    inverse: Inverse,
    base_mul: BaseMul,
    base_mul_acc: BaseMul,
    tables: &'static Tables,
}

/// The tables the routines read, one static per ring (the same const values
/// the portable code uses). Only their addresses are taken (see the module
/// documentation: in flash, a Rust read would see SRAM).
struct Tables {
    zetas: [i16; MAX_TWIDDLES],
    zetas_inv: [i16; MAX_TWIDDLES],
    last_layer: [i16; 2],
}

const fn tables<R: Reduction, const N: usize, const LAYERS: u32>() -> Tables {
    Tables {
        zetas: Twiddles::<R, LAYERS>::ZETAS,
        zetas_inv: Twiddles::<R, LAYERS>::ZETAS_INV,
        last_layer: Twiddles::<R, LAYERS>::INVERSE_LAST_LAYER,
    }
}

#[cfg_attr(ntt_tables_flash, link_section = ".progmem.data")]
static Q3329_N256: Tables = tables::<NttFriendlyMontgomery<Q3329>, 256, 7>();
#[cfg_attr(ntt_tables_flash, link_section = ".progmem.data")]
static Q769_N512: Tables = tables::<NttFriendlyMontgomery<Q769>, 512, 7>();
#[cfg_attr(ntt_tables_flash, link_section = ".progmem.data")]
static Q3329_N512: Tables = tables::<NttFriendlyMontgomery<Q3329>, 512, 7>();
#[cfg_attr(ntt_tables_flash, link_section = ".progmem.data")]
static Q7681_N256: Tables = tables::<NttFriendlyMontgomery<Q7681>, 256, 8>();
/// K-RED2X scales by k⁻² = 9⁻¹ mod 769: its own table.
#[cfg_attr(ntt_tables_flash, link_section = ".progmem.data")]
static Q769_N512_KRED2X: Tables = tables::<KRed2x<Q769>, 512, 7>();

// Both Montgomery variants scale by 2^16 mod q, so they share one table per ring.
const fn same_tables(a: &Tables, b: &Tables) -> bool {
    let mut i = 0;
    while i < MAX_TWIDDLES {
        if a.zetas[i] != b.zetas[i] || a.zetas_inv[i] != b.zetas_inv[i] {
            return false;
        }
        i += 1;
    }
    a.last_layer[0] == b.last_layer[0] && a.last_layer[1] == b.last_layer[1]
}
const _: () = assert!(same_tables(
    &tables::<Montgomery<Q3329>, 256, 7>(),
    &tables::<NttFriendlyMontgomery<Q3329>, 256, 7>()
));
const _: () = assert!(same_tables(
    &tables::<Montgomery<Q769>, 512, 7>(),
    &tables::<NttFriendlyMontgomery<Q769>, 512, 7>()
));
const _: () = assert!(same_tables(
    &tables::<Montgomery<Q3329>, 512, 7>(),
    &tables::<NttFriendlyMontgomery<Q3329>, 512, 7>()
));
const _: () = assert!(same_tables(
    &tables::<Montgomery<Q7681>, 256, 8>(),
    &tables::<NttFriendlyMontgomery<Q7681>, 256, 8>()
));

/// The arithmetic of a family of routines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// NTT-friendly Montgomery (no suffix).
    Friendly,
    /// Plain Montgomery (`_mont`).
    Plain,
    /// K-RED2X (`_kred2x`, q = 769 only).
    KRed2x,
}

/// The modulus of `R` and its variant if it is one with assembly. Plain
/// comparisons, no loop: they fold to a constant even at opt-level "s", so
/// an image links only the routines it uses.
#[inline(always)]
fn asm_variant<R: Reduction>() -> Option<(u16, Variant)> {
    let r = TypeId::of::<R>();
    if r == TypeId::of::<NttFriendlyMontgomery<Q3329>>() {
        Some((3329, Variant::Friendly))
    } else if r == TypeId::of::<Montgomery<Q3329>>() {
        Some((3329, Variant::Plain))
    } else if r == TypeId::of::<NttFriendlyMontgomery<Q769>>() {
        Some((769, Variant::Friendly))
    } else if r == TypeId::of::<Montgomery<Q769>>() {
        Some((769, Variant::Plain))
    } else if r == TypeId::of::<KRed2x<Q769>>() {
        Some((769, Variant::KRed2x))
    } else if r == TypeId::of::<NttFriendlyMontgomery<Q7681>>() {
        Some((7681, Variant::Friendly))
    } else if r == TypeId::of::<Montgomery<Q7681>>() {
        Some((7681, Variant::Plain))
    } else {
        None
    }
}

macro_rules! routines {
    ($($name:ident = $forward:ident, $forward_small:ident, $inverse:ident, $base_mul:ident, $base_mul_acc:ident,
        $tables:ident;)*) => {
        $(
            static $name: Routines = Routines {
                forward: $forward,
                forward_small: $forward_small,
                inverse: $inverse,
                base_mul: $base_mul,
                base_mul_acc: $base_mul_acc,
                tables: &$tables,
            };
        )*
    };
}

routines! {
    Q3329_N256_FRIENDLY_ASM = ntt_fwd_q3329_n256, ntt_fwd_q3329_n256, ntt_inv_q3329_n256, ntt_basemul_q3329_n256, ntt_basemul_q3329_n256,
        Q3329_N256;
    Q3329_N256_PLAIN_ASM = ntt_fwd_q3329_n256_mont, ntt_fwd_q3329_n256_mont, ntt_inv_q3329_n256_mont, ntt_basemul_q3329_n256_mont,
        ntt_basemul_q3329_n256_mont, Q3329_N256;
    Q769_N512_FRIENDLY_ASM = ntt_fwd_q769_n512, ntt_fwd_small_q769_n512, ntt_inv_q769_n512, ntt_basemul_q769_n512, ntt_basemul_acc_q769_n512,
        Q769_N512;
    Q769_N512_PLAIN_ASM = ntt_fwd_q769_n512_mont, ntt_fwd_small_q769_n512_mont, ntt_inv_q769_n512_mont, ntt_basemul_q769_n512_mont,
        ntt_basemul_acc_q769_n512_mont, Q769_N512;
    Q769_N512_KRED2X_ASM = ntt_fwd_q769_n512_kred2x, ntt_fwd_small_q769_n512_kred2x, ntt_inv_q769_n512_kred2x, ntt_basemul_q769_n512_kred2x,
        ntt_basemul_acc_q769_n512_kred2x, Q769_N512_KRED2X;
    Q3329_N512_FRIENDLY_ASM = ntt_fwd_q3329_n512, ntt_fwd_small_q3329_n512, ntt_inv_q3329_n512, ntt_basemul_q3329_n512,
        ntt_basemul_acc_q3329_n512, Q3329_N512;
    Q3329_N512_PLAIN_ASM = ntt_fwd_q3329_n512_mont, ntt_fwd_small_q3329_n512_mont, ntt_inv_q3329_n512_mont, ntt_basemul_q3329_n512_mont,
        ntt_basemul_acc_q3329_n512_mont, Q3329_N512;
    Q7681_N256_FRIENDLY_ASM = ntt_fwd_q7681_n256, ntt_fwd_q7681_n256, ntt_inv_q7681_n256, ntt_basemul_q7681_n256,
        ntt_basemul_acc_q7681_n256, Q7681_N256;
    Q7681_N256_PLAIN_ASM = ntt_fwd_q7681_n256_mont, ntt_fwd_q7681_n256_mont, ntt_inv_q7681_n256_mont, ntt_basemul_q7681_n256_mont,
        ntt_basemul_acc_q7681_n256_mont, Q7681_N256;
}

/// The routines and tables of this ring, if it has them. The checks fold to
/// constants after monomorphization. A reference to a static, not an
/// `Option` of function pointers: on AVR a function address may be 0, so
/// LLVM cannot fold a null test of one, and the portable fallback (with its
/// tables, in SRAM on the 1284p) would stay in every image.
#[inline(always)]
fn routines<R: Reduction, const N: usize, const LAYERS: u32>() -> Option<&'static Routines> {
    use Variant::{Friendly, KRed2x, Plain};
    let (q, variant) = asm_variant::<R>()?;
    Some(match (q, N, LAYERS, variant) {
        (3329, 256, 7, Friendly) => &Q3329_N256_FRIENDLY_ASM,
        (3329, 256, 7, Plain) => &Q3329_N256_PLAIN_ASM,
        (769, 512, 7, Friendly) => &Q769_N512_FRIENDLY_ASM,
        (769, 512, 7, Plain) => &Q769_N512_PLAIN_ASM,
        (769, 512, 7, KRed2x) => &Q769_N512_KRED2X_ASM,
        (3329, 512, 7, Friendly) => &Q3329_N512_FRIENDLY_ASM,
        (3329, 512, 7, Plain) => &Q3329_N512_PLAIN_ASM,
        (7681, 256, 8, Friendly) => &Q7681_N256_FRIENDLY_ASM,
        (7681, 256, 8, Plain) => &Q7681_N256_PLAIN_ASM,
        _ => return None,
    })
}

/// Runs the assembly forward NTT when this ring has one; false otherwise.
#[inline]
pub(crate) fn forward<R: Reduction, const N: usize, const LAYERS: u32>(a: &mut [i16; N]) -> bool {
    forward_by::<R, N, LAYERS>(a, |r| r.forward)
}

/// Runs the assembly forward NTT for inputs |a_i| ≤ `SMALL_INPUT` (the NTT's)
/// when this ring has one; false otherwise.
#[inline]
pub(crate) fn forward_small<R: Reduction, const N: usize, const LAYERS: u32>(a: &mut [i16; N]) -> bool {
    forward_by::<R, N, LAYERS>(a, |r| r.forward_small)
}

/// The forward routine `pick` chooses, run on `a`.
#[inline(always)]
fn forward_by<R: Reduction, const N: usize, const LAYERS: u32>(
    a: &mut [i16; N],
    pick: impl Fn(&Routines) -> Forward,
) -> bool {
    let Some(r) = routines::<R, N, LAYERS>() else {
        return false;
    };
    // SAFETY: both forward routines transform exactly N coefficients in
    // place and read the 2^LAYERS twiddles of `zetas`; they follow the
    // avr-gcc ABI (tests/avr_ntt.rs checks them in simavr, the small one on
    // inputs up to SMALL_INPUT, which `Ntt::forward_small` requires).
    unsafe { pick(r)(a.as_mut_ptr(), r.tables.zetas.as_ptr()) };
    true
}

/// Runs the assembly inverse NTT when this ring has one; false otherwise.
#[inline]
pub(crate) fn inverse<R: Reduction, const N: usize, const LAYERS: u32>(a: &mut [i16; N]) -> bool {
    let Some(r) = routines::<R, N, LAYERS>() else {
        return false;
    };
    // SAFETY: as for `forward`; it also reads the two factors of `last_layer`.
    unsafe {
        (r.inverse)(
            a.as_mut_ptr(),
            r.tables.zetas_inv.as_ptr(),
            r.tables.last_layer.as_ptr(),
        )
    };
    true
}

/// `out = a ∘ b` (or `out += a ∘ b` with `acc`) in assembly when this ring
/// has it; false otherwise. Raw pointers, so that `out` may be `a` (the
/// routine keeps the operands an early output would overwrite in
/// registers). `out` must not be both `a` and `b`: the degree-4 routines
/// cannot square in place (no caller does; borrowck keeps `b` apart).
#[inline]
pub(crate) fn base_mul<R: Reduction, const N: usize, const LAYERS: u32>(
    a: *const i16,
    b: *const i16,
    out: *mut i16,
    acc: bool,
) -> bool {
    let Some(r) = routines::<R, N, LAYERS>() else {
        return false;
    };
    // The γ of block pair j is ζ[2^(LAYERS-1) + j].
    let gammas = r.tables.zetas[1 << (LAYERS - 1)..].as_ptr();
    debug_assert!(
        !(core::ptr::eq(out as *const i16, b) && core::ptr::eq(a, b)),
        "in-place squaring"
    );
    let routine = if acc { r.base_mul_acc } else { r.base_mul };
    // SAFETY: the routine reads N coefficients of `a` and `b`, writes N of
    // `out`, reads 2^(LAYERS-1) γ values; callers pass pointers to N-element
    // arrays, `out` derived from the only mutable borrow (which may be `a`,
    // never `b`: see gen_ntt.py for the aliasing each degree allows).
    unsafe { routine(a, b, out, gammas, Twiddles::<R, LAYERS>::S2, acc as u8) };
    true
}

/// Base inversion in assembly (q = 769, n = 512, any of the three variants);
/// `None` for other rings. Returns the number of non-invertible blocks.
#[inline]
pub(crate) fn base_inv<R: Reduction, const N: usize, const LAYERS: u32>(a: &mut [i16; N]) -> Option<u8> {
    let (769, variant) = asm_variant::<R>()? else {
        return None;
    };
    if LAYERS != 7 || N != 512 {
        return None;
    }
    let (routine, t): (unsafe extern "C" fn(*mut i16, *const i16, i16) -> u8, &Tables) = match variant {
        Variant::Friendly => (ntt_baseinv_q769_n512, &Q769_N512),
        Variant::Plain => (ntt_baseinv_q769_n512_mont, &Q769_N512),
        Variant::KRed2x => (ntt_baseinv_q769_n512_kred2x, &Q769_N512_KRED2X),
    };
    // SAFETY: inverts the 128 blocks of 4 coefficients of `a` in place,
    // reading 64 γ values; avr-gcc ABI (tests/avr_ntt.rs checks it in simavr).
    Some(unsafe { routine(a.as_mut_ptr(), t.zetas[64..].as_ptr(), Twiddles::<R, LAYERS>::S2) })
}
