//! Saber.PKE (round-3 specification Algorithms 17–19 / reference `indcpa.c`).

use kem_common::{pack_bits, pack_bits_with, unpack_bits};
use kem_common::{CiphertextSink, Wipe};

use crate::params::{
    CT_BYTES, EP, EQ, ET, H1, H2, L, N, PK_BYTES, POLYVEC_P_BYTES, POLY_P_BYTES, POLY_Q_BYTES, SEED_BYTES, SK_PKE_BYTES,
};
use crate::poly::{centre, load_secret, secret_coeff, Accumulator, Scratch, Secret};
use crate::sampling::{gen_secret, load_entry, MatrixStream};

/// Saber.PKE.KeyGen from seed_A (already hashed) and seed_s.
///
/// b = round(Aᵀ s): the matrix stream is row-major, so every entry feeds
/// another output polynomial. Two ways, chosen by `build.rs`:
/// - [`keygen_one_pass`] (default): l accumulators (1 KB each), the
///   stream read once;
/// - [`keygen_by_columns`] (`cfg(saber_small_sram)`, MCUs with 6 KB of
///   SRAM such as the ATmega4808): one accumulator, the stream read again
///   for each output polynomial (3 more entries of SHAKE128 output, about
///   0.8 M cycles), which is what lets key generation fit there.
///
/// Both give the same bytes (tested).
pub fn keygen(
    seed_a: &[u8; SEED_BYTES],
    seed_s: &[u8; SEED_BYTES],
    pk: &mut [u8; PK_BYTES],
    sk: &mut [u8; SK_PKE_BYTES],
) {
    let mut s = [[0u8; N >> 1]; L];
    gen_secret(seed_s, &mut s);
    #[cfg(not(saber_small_sram))]
    keygen_one_pass(seed_a, &s, pk, sk);
    #[cfg(saber_small_sram)]
    keygen_by_columns(seed_a, &s, pk, sk);
    s.wipe();
}

/// [`keygen`] after GenSecret with l accumulators: each entry A[r][c], in
/// stream order, is multiplied by s_r into accumulator c. Not inlined, so
/// GenSecret's sponge and this frame's buffers are never on the stack
/// together.
#[cfg_attr(saber_small_sram, allow(dead_code))]
#[inline(never)]
fn keygen_one_pass(seed_a: &[u8; SEED_BYTES], s: &[Secret; L], pk: &mut [u8; PK_BYTES], sk: &mut [u8; SK_PKE_BYTES]) {
    let mut acc = [const { Accumulator::new() }; L];
    let mut scratch = Scratch::new();
    let mut entry = [0u8; POLY_Q_BYTES];
    let mut stream = MatrixStream::new(seed_a);
    for s_r in s.iter() {
        for acc_c in acc.iter_mut() {
            stream.next_entry(&mut entry);
            acc_c.mul_acc(&mut scratch, |t| load_entry(&entry, t), |t| load_secret(s_r, t));
        }
    }
    for (c, acc_c) in acc.iter_mut().enumerate() {
        acc_c.finish(&mut scratch.a);
        emit_key_column(c, &scratch.a, s, pk, sk);
    }
    pk[POLYVEC_P_BYTES..].copy_from_slice(seed_a);
    scratch.wipe();
}

/// [`keygen`] after GenSecret with one accumulator: output polynomial c
/// reads the stream from its start up to entry A[l−1][c] (not inlined,
/// like [`keygen_one_pass`]).
#[cfg_attr(not(saber_small_sram), allow(dead_code))]
#[inline(never)]
fn keygen_by_columns(seed_a: &[u8; SEED_BYTES], s: &[Secret; L], pk: &mut [u8; PK_BYTES], sk: &mut [u8; SK_PKE_BYTES]) {
    let mut acc = Accumulator::new();
    let mut scratch = Scratch::new();
    let mut entry = [0u8; POLY_Q_BYTES];
    for c in 0..L {
        // Entry A[r][c] is number r·l + c of the row-major stream.
        let mut stream = MatrixStream::new(seed_a);
        let mut next = 0;
        for (r, s_r) in s.iter().enumerate() {
            while next <= r * L + c {
                stream.next_entry(&mut entry);
                next += 1;
            }
            acc.mul_acc(&mut scratch, |t| load_entry(&entry, t), |t| load_secret(s_r, t));
        }
        acc.finish(&mut scratch.a);
        emit_key_column(c, &scratch.a, s, pk, sk);
    }
    pk[POLYVEC_P_BYTES..].copy_from_slice(seed_a);
    scratch.wipe();
}

/// b_c rounded to p into pk, s_c into sk (output polynomial c of keygen).
fn emit_key_column(c: usize, b: &[i16; N], s: &[Secret; L], pk: &mut [u8; PK_BYTES], sk: &mut [u8; SK_PKE_BYTES]) {
    pack_bits(EP, N, &mut pk[c * POLY_P_BYTES..(c + 1) * POLY_P_BYTES], |i| {
        (b[i] as u16 + H1) >> (EQ - EP)
    });
    let s_c = &s[c];
    pack_bits(EQ, N, &mut sk[c * POLY_Q_BYTES..(c + 1) * POLY_Q_BYTES], |i| {
        secret_coeff(s_c, i) as u16
    });
}

/// Saber.PKE.Enc of message m with seed_s'; the ciphertext goes to `sink`
/// (written, or compared without a second ciphertext buffer). Not inlined,
/// so its buffers never share a frame with decryption's.
#[inline(never)]
pub fn encrypt(m: &[u8; 32], seed_sp: &[u8; SEED_BYTES], pk: &[u8], sink: &mut CiphertextSink<CT_BYTES>) {
    let mut sp = [[0u8; N >> 1]; L];
    gen_secret(seed_sp, &mut sp);
    encrypt_with(m, &sp, pk, sink);
    sp.wipe();
}

/// [`encrypt`] after GenSecret (not inlined, like [`keygen_with`]).
#[inline(never)]
fn encrypt_with(m: &[u8; 32], sp: &[Secret; L], pk: &[u8], sink: &mut CiphertextSink<CT_BYTES>) {
    let mut acc = Accumulator::new();
    let mut scratch = Scratch::new();
    let mut stream = MatrixStream::new(&pk[POLYVEC_P_BYTES..PK_BYTES]);
    let mut entry = [0u8; POLY_Q_BYTES];
    // b' = round(A s'), one row at a time.
    for i in 0..L {
        for sp_j in sp.iter() {
            stream.next_entry(&mut entry);
            acc.mul_acc(&mut scratch, |t| load_entry(&entry, t), |t| load_secret(sp_j, t));
        }
        let out = &mut scratch.a;
        acc.finish(out);
        pack_bits_with(
            EP,
            N,
            |k| (out[k] as u16 + H1) >> (EQ - EP),
            |k, byte| sink.put(i * POLY_P_BYTES + k, byte),
        );
    }
    // v' = bᵀ s' mod p; c_m = (v' − 2^(ε_p−1)·m + h1) ≫ (ε_p − ε_T).
    inner_product(&pk[..POLYVEC_P_BYTES], &mut acc, &mut scratch, |j, t| {
        load_secret(&sp[j], t)
    });
    let out = &scratch.a;
    pack_bits_with(
        ET,
        N,
        |k| {
            let bit = ((m[k >> 3] >> (k & 7)) & 1) as u16;
            (out[k] as u16).wrapping_sub(bit << (EP - 1)).wrapping_add(H1) >> (EP - ET)
        },
        |k, byte| sink.put(POLYVEC_P_BYTES + k, byte),
    );
    scratch.wipe();
}

/// Σ_j b_j·s_j for the packed mod-p vector `b`, into `scratch.a`
/// (values mod 2^13); `load_s(j, t)` writes secret j.
fn inner_product(b: &[u8], acc: &mut Accumulator, scratch: &mut Scratch, load_s: impl Fn(usize, &mut [i16; N])) {
    for j in 0..L {
        let b_j = &b[j * POLY_P_BYTES..(j + 1) * POLY_P_BYTES];
        acc.mul_acc(
            scratch,
            |t| unpack_bits(EP, N, b_j, |i, v| t[i] = centre(v, EP)),
            |t| load_s(j, t),
        );
    }
    acc.finish(&mut scratch.a);
}

/// Saber.PKE.Dec: m = (v − 2^(ε_p−ε_T)·c_m + h2) ≫ (ε_p − 1), bit by bit.
/// `sk` must hold secrets in [−5, 5] (checked on import); they are read
/// straight from it for each product, never copied.
#[inline(never)]
pub fn decrypt(sk: &[u8], ct: &[u8; CT_BYTES], m: &mut [u8; 32]) {
    let mut acc = Accumulator::new();
    let mut scratch = Scratch::new();
    inner_product(&ct[..POLYVEC_P_BYTES], &mut acc, &mut scratch, |j, t| {
        unpack_bits(EQ, N, &sk[j * POLY_Q_BYTES..(j + 1) * POLY_Q_BYTES], |i, v| {
            t[i] = centre(v, EQ)
        })
    });
    let v = &scratch.a;
    m.fill(0);
    unpack_bits(ET, N, &ct[POLYVEC_P_BYTES..], |k, cm| {
        let bit = (v[k] as u16).wrapping_add(H2).wrapping_sub(cm << (EP - ET)) >> (EP - 1) & 1;
        m[k >> 3] |= (bit as u8) << (k & 7);
    });
    scratch.wipe();
}

/// Whether every 13-bit secret coefficient lies in [−5, 5] (no early exit).
pub fn secret_in_range(sk: &[u8]) -> bool {
    let mut bad = 0u16;
    for j in 0..L {
        unpack_bits(EQ, N, &sk[j * POLY_Q_BYTES..(j + 1) * POLY_Q_BYTES], |_, v| {
            let x = centre(v, EQ);
            bad |= ((5 - x) | (x + 5)) as u16 & 0x8000;
        });
    }
    bad == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two key generation orders give the same keys.
    #[test]
    fn one_pass_and_by_columns_agree() {
        for seed in 0..8u8 {
            let seed_a = [seed.wrapping_mul(91) ^ 0x3C; SEED_BYTES];
            let mut s = [[0u8; N >> 1]; L];
            gen_secret(&[seed; SEED_BYTES], &mut s);
            let (mut pk1, mut sk1) = ([0u8; PK_BYTES], [0u8; SK_PKE_BYTES]);
            let (mut pk2, mut sk2) = ([1u8; PK_BYTES], [1u8; SK_PKE_BYTES]);
            keygen_one_pass(&seed_a, &s, &mut pk1, &mut sk1);
            keygen_by_columns(&seed_a, &s, &mut pk2, &mut sk2);
            assert_eq!(pk1, pk2, "seed {seed}");
            assert_eq!(sk1, sk2, "seed {seed}");
        }
    }
}
