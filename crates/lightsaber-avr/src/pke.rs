//! Saber.PKE (round-3 specification Algorithms 17–19 / reference `indcpa.c`).

use kem_common::{pack_bits, pack_bits_with, unpack_bits};
use zeroize::Zeroize;

use crate::params::{
    CT_BYTES, EP, EQ, ET, H1, H2, L, N, PK_BYTES, POLYVEC_P_BYTES, POLY_P_BYTES, POLY_Q_BYTES, SEED_BYTES, SK_PKE_BYTES,
};
use crate::poly::{centre, Accumulator, Secret};
use crate::sampling::{gen_secret, MatrixStream};

/// Saber.PKE.KeyGen from seed_A (already hashed) and seed_s.
pub fn keygen(
    seed_a: &[u8; SEED_BYTES],
    seed_s: &[u8; SEED_BYTES],
    pk: &mut [u8; PK_BYTES],
    sk: &mut [u8; SK_PKE_BYTES],
) {
    let mut s = [[0i8; N]; L];
    gen_secret(seed_s, &mut s);
    // b = round(Aᵀ s): entry A[r][c] feeds b[c] with s[r].
    let mut acc = [Accumulator::new(), Accumulator::new()];
    let mut stream = MatrixStream::new(seed_a);
    let mut a = [0i16; N];
    for s_r in s.iter() {
        for acc_c in acc.iter_mut() {
            stream.next_entry(&mut a);
            acc_c.mul_acc(&a, s_r);
        }
    }
    let mut b = [0u16; N];
    for (c, acc_c) in acc.iter_mut().enumerate() {
        acc_c.finish(&mut b);
        pack_bits(EP, N, &mut pk[c * POLY_P_BYTES..(c + 1) * POLY_P_BYTES], |i| {
            (b[i] + H1) >> (EQ - EP)
        });
        let s_c = &s[c];
        pack_bits(EQ, N, &mut sk[c * POLY_Q_BYTES..(c + 1) * POLY_Q_BYTES], |i| {
            s_c[i] as u16
        });
    }
    pk[POLYVEC_P_BYTES..].copy_from_slice(seed_a);
    s.iter_mut().for_each(Zeroize::zeroize);
    b.zeroize();
}

/// Saber.PKE.Enc of message m with seed_s'; ciphertext byte k goes to
/// `emit(k, byte)`, so decapsulation compares its re-encryption without a
/// second ciphertext buffer. Not inlined, so its buffers never share a frame
/// with decryption's.
#[inline(never)]
pub fn encrypt(m: &[u8; 32], seed_sp: &[u8; SEED_BYTES], pk: &[u8], emit: &mut impl FnMut(usize, u8)) {
    let mut sp = [[0i8; N]; L];
    gen_secret(seed_sp, &mut sp);
    let mut acc = Accumulator::new();
    let mut stream = MatrixStream::new(&pk[POLYVEC_P_BYTES..PK_BYTES]);
    let mut a = [0i16; N];
    let mut out = [0u16; N];
    // b' = round(A s'), one row at a time.
    for i in 0..L {
        for sp_j in sp.iter() {
            stream.next_entry(&mut a);
            acc.mul_acc(&a, sp_j);
        }
        acc.finish(&mut out);
        pack_bits_with(
            EP,
            N,
            |k| (out[k] + H1) >> (EQ - EP),
            |k, byte| emit(i * POLY_P_BYTES + k, byte),
        );
    }
    // v' = bᵀ s' mod p; c_m = (v' − 2^(ε_p−1)·m + h1) ≫ (ε_p − ε_T).
    inner_product(&pk[..POLYVEC_P_BYTES], &sp, &mut acc, &mut a, &mut out);
    pack_bits_with(
        ET,
        N,
        |k| {
            let bit = ((m[k >> 3] >> (k & 7)) & 1) as u16;
            out[k].wrapping_sub(bit << (EP - 1)).wrapping_add(H1) >> (EP - ET)
        },
        |k, byte| emit(POLYVEC_P_BYTES + k, byte),
    );
    sp.iter_mut().for_each(Zeroize::zeroize);
    out.zeroize();
}

/// Σ_j b_j·s_j for the packed mod-p vector `b`.
fn inner_product(b: &[u8], s: &[Secret; L], acc: &mut Accumulator, scratch: &mut [i16; N], out: &mut [u16; N]) {
    for (j, s_j) in s.iter().enumerate() {
        unpack_bits(EP, N, &b[j * POLY_P_BYTES..(j + 1) * POLY_P_BYTES], |i, v| {
            scratch[i] = centre(v, EP)
        });
        acc.mul_acc(scratch, s_j);
    }
    acc.finish(out);
}

/// Saber.PKE.Dec: m = (v − 2^(ε_p−ε_T)·c_m + h2) ≫ (ε_p − 1), bit by bit.
/// `sk` must hold secrets in [−5, 5] (checked on import).
#[inline(never)]
pub fn decrypt(sk: &[u8], ct: &[u8; CT_BYTES], m: &mut [u8; 32]) {
    let mut s = [[0i8; N]; L];
    for (j, s_j) in s.iter_mut().enumerate() {
        unpack_bits(EQ, N, &sk[j * POLY_Q_BYTES..(j + 1) * POLY_Q_BYTES], |i, v| {
            s_j[i] = centre(v, EQ) as i8
        });
    }
    let mut acc = Accumulator::new();
    let mut scratch = [0i16; N];
    let mut v = [0u16; N];
    inner_product(&ct[..POLYVEC_P_BYTES], &s, &mut acc, &mut scratch, &mut v);
    m.fill(0);
    unpack_bits(ET, N, &ct[POLYVEC_P_BYTES..], |k, cm| {
        let bit = v[k].wrapping_add(H2).wrapping_sub(cm << (EP - ET)) >> (EP - 1) & 1;
        m[k >> 3] |= (bit as u8) << (k & 7);
    });
    s.iter_mut().for_each(Zeroize::zeroize);
    v.zeroize();
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
