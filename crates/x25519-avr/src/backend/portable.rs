//! The portable field: the references of `field`, `edwards` and the crate
//! root, which define the bytes every assembly routine must give.

/// `r` ← a value below 2^256 congruent to a·b mod 2^255 − 19.
#[inline]
pub(crate) fn mul(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    crate::field::mul_portable(r, a, b);
}

/// `r` ← a value below 2^256 congruent to a² mod 2^255 − 19.
#[inline]
pub(crate) fn square(r: &mut [u8; 32], a: &[u8; 32]) {
    crate::field::mul_portable(r, a, a);
}

/// `r` ← a·c (c < 2^24), below 2^256.
#[inline]
pub(crate) fn mul_small(r: &mut [u8; 32], a: &[u8; 32], c: u32) {
    crate::field::mul_small_portable(r, a, c);
}

/// `r` ← a + b, below 2^256.
#[inline]
pub(crate) fn add(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    crate::field::add_portable(r, a, b);
}

/// `r` ← a − b (mod p), below 2^256.
#[inline]
pub(crate) fn sub(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    crate::field::sub_portable(r, a, b);
}

/// One ladder step on `ws`: [`crate::ladder_step_portable`].
#[inline]
pub(crate) fn ladder_step(ws: &mut crate::Workspace, swap: u8, small: bool) {
    crate::ladder_step_portable(ws, swap, small);
}

/// `r` ← a value below 2^256 congruent to a^(−1) mod 2^255 − 19 (0 for
/// a ≡ 0): the Fermat chain of [`crate::field::invert_portable`] (254
/// squarings, 11 multiplications).
#[inline]
pub(crate) fn invert(r: &mut [u8; 32], a: &[u8; 32]) {
    crate::field::invert_portable(r, a);
}

/// `out` ← entry |`digit`| − 1 of row `row` of [`crate::edwards::BASE_TABLE`],
/// or the neutral element for `digit` 0 (|`digit`| ≤ 8, `row` < 32), every
/// entry of the row read with a mask.
#[cfg(not(fe25519_compact))]
#[inline]
pub(crate) fn select_niels(out: &mut [[u8; 32]; 3], row: usize, digit: i8) {
    use crate::edwards::{BASE_TABLE, ROWS, ROW_LEN};
    let row = row % ROWS;
    let entries: &[u8; ROW_LEN] = BASE_TABLE[row * ROW_LEN..][..ROW_LEN]
        .try_into()
        .unwrap_or(&[0; ROW_LEN]);
    crate::edwards::select_niels_portable(out, entries, digit);
}
