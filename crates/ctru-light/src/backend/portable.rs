//! The portable backend: the references of `encode`, `pke` and `mul256`,
//! which define the results (the assembly is tested against them).

use crate::mul256::LEAF;

/// E8 decoding of one block: [`crate::encode::e8_decode_block_portable`].
#[inline]
pub(crate) fn e8_decode_block(v: &[u8; 8]) -> u8 {
    crate::encode::e8_decode_block_portable(v)
}

/// Ciphertext compression of one block: [`crate::pke::compress_block_portable`].
#[inline]
pub(crate) fn compress_block(sigma: &[i16; 8], codeword: u8) -> [u8; 8] {
    crate::pke::compress_block_portable(sigma, codeword)
}

/// The schoolbook base case: [`crate::mul256::leaf_product_portable`].
#[inline]
pub(crate) fn leaf_product(a: &[u8; LEAF], b: &[u8; LEAF], r: &mut [u8; 2 * LEAF]) {
    crate::mul256::leaf_product_portable(a, b, r);
}

/// One Karatsuba recombination: [`crate::mul256::combine_portable`].
#[inline]
pub(crate) fn combine(r: &mut [u8], m: &[u8]) {
    crate::mul256::combine_portable(r, m);
}
