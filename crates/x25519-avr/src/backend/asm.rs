//! The field in AVR assembly (`asm-avr/fe25519_mul.S` or, with
//! `cfg(fe25519_compact)`, `asm-avr/fe25519_compact.S`: the same symbols;
//! `asm-avr/ed25519_select.S` for the unrolled build; contracts in
//! `asm-avr/CONTRACTS.md`), each routine bit for bit its portable
//! reference (tested in simavr by `src/avr_tests.rs`).
#![allow(unsafe_code)]

extern "C" {
    /// `asm-avr/fe25519_mul.S`.
    fn fe25519_mul_avr(r: *mut u8, a: *const u8, b: *const u8);
    /// `asm-avr/fe25519_mul.S`.
    fn fe25519_sqr_avr(r: *mut u8, a: *const u8);
    /// `asm-avr/fe25519_mul.S`.
    fn fe25519_mul_small_avr(r: *mut u8, a: *const u8, c: u32);
    /// `asm-avr/fe25519_mul.S`.
    fn fe25519_add_avr(r: *mut u8, a: *const u8, b: *const u8);
    /// `asm-avr/fe25519_mul.S`.
    fn fe25519_sub_avr(r: *mut u8, a: *const u8, b: *const u8);
    /// `asm-avr/fe25519_mul.S`.
    fn fe25519_invert_avr(r: *mut u8, a: *const u8);
    /// `asm-avr/fe25519_mul.S`.
    fn fe25519_ladder_step(ws: *mut u8, swap: u8, small: u8);
    /// `asm-avr/ed25519_select.S`.
    #[cfg(not(fe25519_compact))]
    fn ed25519_select_avr(out: *mut u8, row: *const u8, digit: i8);
}

/// `out` ← entry |`digit`| − 1 of row `row` of [`crate::edwards::BASE_TABLE`],
/// or the neutral element for `digit` 0 (|`digit`| ≤ 8, `row` < 32), every
/// entry of the row read with a mask. The table is in flash
/// (`.progmem.data`, below 64 KB: the linker puts it right after the
/// vectors); the routine reads it with `lpm`, Rust code here only takes
/// the row's address.
#[cfg(not(fe25519_compact))]
#[inline]
pub(crate) fn select_niels(out: &mut [[u8; 32]; 3], row: usize, digit: i8) {
    use crate::edwards::{BASE_TABLE, ROWS, ROW_LEN};
    let row = BASE_TABLE.as_ptr().wrapping_add((row % ROWS) * ROW_LEN);
    // SAFETY: writes the 96 bytes of `out` (an array of arrays is
    // contiguous, without padding); reads 8 × 96 bytes of flash from
    // `row`, a row of BASE_TABLE; avr-gcc ABI (tested in simavr).
    unsafe { ed25519_select_avr(out.as_mut_ptr().cast::<u8>(), row, digit) }
}

/// `r` ← a value below 2^256 congruent to a·b mod 2^255 − 19.
#[inline]
pub(crate) fn mul(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    // SAFETY: writes exactly the 32 bytes of `r`, reads the 32 of `a`
    // and of `b` (`r` is a unique borrow, so it overlaps neither);
    // follows the avr-gcc ABI (tested in simavr).
    unsafe { fe25519_mul_avr(r.as_mut_ptr(), a.as_ptr(), b.as_ptr()) }
}

/// `r` ← a value below 2^256 congruent to a² mod 2^255 − 19.
#[inline]
pub(crate) fn square(r: &mut [u8; 32], a: &[u8; 32]) {
    // SAFETY: as for `mul`, with one operand.
    unsafe { fe25519_sqr_avr(r.as_mut_ptr(), a.as_ptr()) }
}

/// `r` ← a·c (c < 2^24), below 2^256.
#[inline]
pub(crate) fn mul_small(r: &mut [u8; 32], a: &[u8; 32], c: u32) {
    // SAFETY: as for `mul`; c < 2^24 (`SmallConstant`).
    unsafe { fe25519_mul_small_avr(r.as_mut_ptr(), a.as_ptr(), c) }
}

/// `r` ← a + b, below 2^256.
#[inline]
pub(crate) fn add(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    // SAFETY: as for `mul`.
    unsafe { fe25519_add_avr(r.as_mut_ptr(), a.as_ptr(), b.as_ptr()) }
}

/// `r` ← a − b (mod p), below 2^256.
#[inline]
pub(crate) fn sub(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    // SAFETY: as for `mul`.
    unsafe { fe25519_sub_avr(r.as_mut_ptr(), a.as_ptr(), b.as_ptr()) }
}

/// One ladder step on `ws` ([`crate::ladder_step_portable`] says which):
/// the assembly step, bit for bit the portable one.
#[inline]
pub(crate) fn ladder_step(ws: &mut crate::Workspace, swap: u8, small: bool) {
    // SAFETY: reads and writes the workspace's bytes only (a `repr(C)`
    // block of 433 bytes: four slots, four temporaries, x1, the scratch,
    // x1's halves' difference); avr-gcc ABI (tested in simavr).
    unsafe { fe25519_ladder_step((ws as *mut crate::Workspace).cast::<u8>(), swap, u8::from(small)) }
}

/// `r` ← a value below 2^256 congruent to a^(−1) mod 2^255 − 19 (0 for
/// a ≡ 0): Bernstein–Yang divsteps (about 0.36 M cycles; 0.40 M in the
/// compact file), tested against [`crate::field::invert_portable`].
#[inline]
pub(crate) fn invert(r: &mut [u8; 32], a: &[u8; 32]) {
    // SAFETY: as for `square`.
    unsafe { fe25519_invert_avr(r.as_mut_ptr(), a.as_ptr()) }
}
