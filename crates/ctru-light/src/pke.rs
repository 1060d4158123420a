//! The CTRU-Light PKE (`SPEC.md` §3).

use kem_common::{CiphertextSink, KeySource, Wipe};
use modarith::{Modulus, Q769};
use subtle::Choice;

use crate::arith::{Arithmetic, Ring769};
use crate::mul256;

use crate::encode::{cbd1, e8_codeword, e8_decode_block, pack10, pack_sk, unpack10_in, unpack_sk_in};
use crate::params::{CT_BYTES, N, PK_BYTES, Q, SK_PKE_BYTES};

/// PKE.KeyGen (§3) from 256 coin bytes, which wait in `pk[..256]`: they
/// are consumed before pk is written over them (the caller needs no coin
/// buffer beside the key). Writes pk and sk_pke; returns whether f was
/// invertible (decided in constant time by modarith). Not inlined: its two
/// polynomials are the key generation's whole stack.
#[inline(never)]
pub fn keygen<A: Arithmetic>(pk: &mut [u8; PK_BYTES], sk_pke: &mut [u8; SK_PKE_BYTES]) -> Choice {
    let (f_coins, g_coins) = pk[..256].split_at(128);
    let mut f = [0i16; N];
    cbd1(f_coins, &mut f);
    for x in f.iter_mut() {
        *x *= 2;
    }
    f[0] += 1;
    pack_sk(&f, sk_pke);
    Ring769::<A>::forward_small(&mut f); // |f_i| ≤ 3
    let invertible = Ring769::<A>::base_inv(&mut f);
    let mut g = [0i16; N];
    cbd1(g_coins, &mut g);
    Ring769::<A>::forward_small(&mut g); // |g_i| ≤ 1
    Ring769::<A>::base_mul_assign(&mut g, &f);
    Ring769::<A>::inverse(&mut g);
    for x in g.iter_mut() {
        *x = Q769::to_unsigned_small(*x) as i16; // centred by the inverse NTT
    }
    pack10(&g, pk);
    f.wipe();
    g.wipe();
    invertible
}

/// round(2^24 / 769) and ⌊2^16·384/769⌋: ⌊(s·256 + 384) / 769⌋ =
/// (s·M + C) ≫ 16 for every s ≤ 1153 (σ ∈ [0, q) here; σ + q ≤ 1153 for
/// the centred σ in the assembly, `asm-avr/gen_ctru_compress.py`, which
/// checks the same constants).
const RECIP_Q: u16 = ((1u64 << 24) + (Q as u64 >> 1)).div_euclid(Q as u64) as u16;
const HALF_Q_SCALED: u16 = ((1u64 << 16) * 384).div_euclid(Q as u64) as u16;

/// c = (⌊(σ·256 + 384) / 769⌋ + 128·b) mod 256 for σ ∈ [0, q) (§3 Enc),
/// constant time: no divide instruction, proven exact for all inputs by a
/// test.
///
/// (s·M + C) ≫ 16 is put together from four byte products in 16-bit
/// arithmetic: s = s1·2^8 + s0 (s1 ≤ 3), M = m1·2^8 + m0, and
/// (s·M + C) ≫ 16 = s1·m1 + ((s1·m0 + s0·m1 + ((s0·m0 + C) ≫ 8)) ≫ 8), every
/// partial sum below 2^16. The AVR multiplies bytes in one instruction; a
/// 32-bit product was a chain of three library calls. Adding 128·b modulo
/// 256 flips bit 7: an XOR with b ≪ 7, no select. Not inlined: one copy,
/// not one per coefficient of an unrolled block.
#[inline(never)]
pub fn compress(sigma: u16, bit: u8) -> u8 {
    let (s0, s1) = (sigma & 0xFF, sigma >> 8);
    let (m0, m1) = (RECIP_Q & 0xFF, RECIP_Q >> 8);
    let low = s0 * m0 + HALF_Q_SCALED; // ≤ 255·57 + 32725
    let mid = s1 * m0 + s0 * m1 + (low >> 8); // ≤ 3·57 + 255·85 + 255
    (s1 * m1 + (mid >> 8)) as u8 ^ (bit << 7)
}

/// PKE.Enc (§3): ct from pk, message and 128 coin bytes, into `sink`
/// (written, or compared by decapsulation without a second ciphertext
/// buffer).
pub fn encrypt<A: Arithmetic>(pk: &[u8], m: &[u8; 32], coins: &[u8; 128], sink: &mut CiphertextSink<CT_BYTES>) {
    let mut r = [0i16; N];
    sample_r(coins, &mut r);
    encrypt_with_r::<A, _>(pk, 0, m, &mut r, sink);
}

/// r = CBD1(coins), the encryption's only use of its coins: callers can
/// drop the coins before the rest of [`encrypt`] runs.
pub fn sample_r(coins: &[u8; 128], r: &mut [i16; N]) {
    cbd1(coins, r);
}

/// Compress (§3 Enc) of one block: c_j = compress(σ_j mod q, bit j of the
/// block's E8 codeword) for the centred σ_j. On AVR the generated assembly
/// (`asm-avr/ctru_compress.S`, tested bit for bit against
/// [`compress_block_portable`] in simavr), elsewhere the portable code
/// (module `backend`).
#[inline]
pub fn compress_block(sigma: &[i16; 8], codeword: u8) -> [u8; 8] {
    crate::backend::compress_block(sigma, codeword)
}

/// `compress_block` in portable Rust, by `compress`.
pub fn compress_block_portable(sigma: &[i16; 8], codeword: u8) -> [u8; 8] {
    core::array::from_fn(|j| compress(Q769::to_unsigned_small(sigma[j]), (codeword >> j) & 1))
}

/// [`encrypt`] from r = [`sample_r`] (r is consumed and cleared), to the
/// public key at `pk_at` in `key` (a slice, or a key in program memory).
/// Not inlined, so its buffers never share a frame with decryption's.
#[inline(never)]
pub fn encrypt_with_r<A: Arithmetic, S: KeySource + ?Sized>(
    key: &S,
    pk_at: usize,
    m: &[u8; 32],
    r: &mut [i16; N],
    sink: &mut CiphertextSink<CT_BYTES>,
) {
    let mut sigma = [0i16; N];
    unpack10_in(key, pk_at, &mut sigma);
    for x in sigma.iter_mut() {
        // A raw 10-bit value (< 1024 < 2q) may be ≥ q: one masked
        // subtraction puts it in [0, q), the forward NTT's input range.
        *x -= Q as i16 & modarith::negative_mask_i16(Q as i16 - 1 - *x);
    }
    Ring769::<A>::forward(&mut sigma);
    Ring769::<A>::forward_small(r); // |r_i| ≤ 1
    Ring769::<A>::base_mul_assign(&mut sigma, r);
    Ring769::<A>::inverse(&mut sigma);
    emit_ciphertext(&sigma, m, sink);
    sigma.wipe();
    r.wipe();
}

/// The ciphertext from the centred σ, block by block with the E8 bits of m
/// (no 512-byte bit buffer). Not inlined: in a frame of its own the block
/// buffer is within reach of the AVR's 6-bit displacements; beside σ's
/// kilobyte every access to it cost a frame-pointer adjustment.
#[inline(never)]
fn emit_ciphertext(sigma: &[i16; N], m: &[u8; 32], sink: &mut CiphertextSink<CT_BYTES>) {
    let mut block = [0u8; 8];
    for (b, s) in sigma.chunks_exact(8).enumerate() {
        if let Ok(s) = s.try_into() {
            block = compress_block(s, e8_codeword(m, b));
        }
        for (j, &c) in block.iter().enumerate() {
            sink.put(8 * b + j, c);
        }
    }
    block.wipe();
}

/// w = c·f in Z_256[x]/(x^512 + 1), exactly ([`crate::mul256`]);
/// `sink(b, block)` receives each 8-coefficient block. Returns false if
/// sk_pke holds a 3-bit value above 5.
#[inline(never)]
pub fn product_blocks<S: KeySource + ?Sized>(
    sk_pke: &S,
    ct: &[u8; CT_BYTES],
    mut sink: impl FnMut(usize, &[u8; 8]),
) -> bool {
    let mut w = [0u8; N];
    let valid = product(sk_pke, ct, &mut w);
    for (b, block) in w.chunks_exact(8).enumerate() {
        if let Ok(block) = block.try_into() {
            sink(b, block);
        }
    }
    w.wipe();
    valid
}

/// w = c·f mod 256. Not inlined, so f and the product's scratch are off
/// the stack before the E8 decoding runs.
#[inline(never)]
fn product<S: KeySource + ?Sized>(sk_pke: &S, ct: &[u8; CT_BYTES], w: &mut [u8; N]) -> bool {
    let mut f = [0u8; N];
    let valid = unpack_sk_in(sk_pke, &mut f);
    mul256::mul_negacyclic(ct, &mut f, w);
    f.wipe();
    valid
}

/// PKE.Dec (§3): E8-decode each block of w = c·f. Returns false (with m
/// still computed) if sk_pke holds a 3-bit value above 5.
pub fn decrypt<S: KeySource + ?Sized>(sk_pke: &S, ct: &[u8; CT_BYTES], m: &mut [u8; 32]) -> bool {
    m.fill(0);
    product_blocks(sk_pke, ct, |b, block| {
        m[b >> 1] |= e8_decode_block(block) << (4 * (b & 1))
    })
}

#[cfg(test)]
#[allow(clippy::integer_division_remainder_used)] // test oracles may divide
mod tests {
    use super::*;

    /// The multiply-shift equals the definition's formula, with an exact
    /// division, for every σ ∈ [0, q) and b ∈ {0, 1} (§3 Enc).
    #[test]
    fn compression_equals_the_definition_for_all_inputs() {
        let mut checked = 0;
        for sigma in 0..Q as u64 {
            for bit in 0..2u64 {
                let exact = ((256 * sigma + 384).div_euclid(769) + 128 * bit) % 256;
                assert_eq!(
                    compress(sigma as u16, bit as u8) as u64,
                    exact,
                    "σ = {sigma}, b = {bit}"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 2 * 769);
        // The top value rounds up to q2 = 256 ≡ 0: the wrap is the definition's.
        assert_eq!(compress(768, 0), 0);
        assert_eq!(compress(768, 1), 128);
    }

    /// The block function takes centred σ (|σ| ≤ 384) and the codeword's
    /// bit j for coefficient j: every centred value in every position, with
    /// both bits, equals `compress` of σ mod q.
    #[test]
    fn block_compression_takes_centred_values() {
        for sigma in -384i16..=384 {
            for j in 0..8 {
                for codeword in [0x00u8, 0xFF, 1 << j] {
                    let mut block = [0i16; 8];
                    block[j] = sigma;
                    let out = compress_block_portable(&block, codeword);
                    let bit = (codeword >> j) & 1;
                    assert_eq!(
                        out[j],
                        compress(sigma.rem_euclid(769) as u16, bit),
                        "σ = {sigma}, j = {j}"
                    );
                }
            }
        }
    }
}
