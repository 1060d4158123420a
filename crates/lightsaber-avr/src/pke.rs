//! Saber.PKE (round-3 specification Algorithms 17–19 / reference `indcpa.c`).

use kem_common::{pack_bits, pack_bits_with, unpack_bits};
use kem_common::{unpack_bits_in, CiphertextSink, KeySource, Wipe};

use crate::params::{
    CT_BYTES, EP, EQ, ET, H1, H2, L, N, PK_BYTES, POLYVEC_P_BYTES, POLY_P_BYTES, POLY_Q_BYTES, SEED_BYTES,
    SK_NIBBLE_BYTES, SK_PKE_BYTES,
};
use crate::poly::{centre, load_secret, secret_coeff, Accumulator, Scratch, Secret, SecretHat};
use crate::sampling::{gen_secret, load_entry, MatrixStream};

/// How the products get the entries of the matrix A, streamed in row-major
/// order. Two ways, chosen by `build.rs` (both tested to give the same
/// bytes):
/// - [`Buffered`] (default): each entry squeezed into a packed 416-byte
///   buffer and unpacked once per NTT prime;
/// - [`Recovered`] (`cfg(saber_small_sram)`, MCUs with 6 KB of SRAM):
///   squeezed straight into the product's transform buffer; the second
///   prime gets it back from the first one's transform
///   ([`Accumulator::mul_acc_recovering`]): 416 bytes less stack for one
///   inverse NTT more per entry.
pub trait Entries {
    /// A stream not started yet.
    const NEW: Self;
    /// (Re)starts the stream of A = GenMatrix(seed_A), in place.
    fn start(&mut self, seed_a: &[u8]);
    /// acc += (next entry)·s, `load_s` writing s.
    fn mul_next(&mut self, acc: &mut Accumulator, scratch: &mut Scratch, load_s: impl Fn(&mut [i16; N]));
    /// Passes over the next entry (`scratch` may be overwritten).
    fn skip(&mut self, scratch: &mut Scratch);
}

/// [`Entries`] through a packed buffer.
#[cfg_attr(saber_small_sram, allow(dead_code))]
pub struct Buffered {
    stream: MatrixStream,
    entry: [u8; POLY_Q_BYTES],
}

impl Entries for Buffered {
    const NEW: Self = Buffered {
        stream: MatrixStream::NEW,
        entry: [0; POLY_Q_BYTES],
    };
    fn start(&mut self, seed_a: &[u8]) {
        self.stream.restart(seed_a);
    }
    fn mul_next(&mut self, acc: &mut Accumulator, scratch: &mut Scratch, load_s: impl Fn(&mut [i16; N])) {
        self.stream.next_entry(&mut self.entry);
        acc.mul_acc(scratch, |t| load_entry(&self.entry, t), load_s);
    }
    fn skip(&mut self, _: &mut Scratch) {
        self.stream.next_entry(&mut self.entry);
    }
}

/// [`Entries`] straight into the transform buffer.
#[cfg_attr(not(saber_small_sram), allow(dead_code))]
pub struct Recovered(MatrixStream);

impl Entries for Recovered {
    const NEW: Self = Recovered(MatrixStream::NEW);
    fn start(&mut self, seed_a: &[u8]) {
        self.0.restart(seed_a);
    }
    fn mul_next(&mut self, acc: &mut Accumulator, scratch: &mut Scratch, load_s: impl Fn(&mut [i16; N])) {
        self.0.next_entry_unpacked(&mut scratch.a);
        acc.mul_acc_recovering(scratch, load_s);
    }
    fn skip(&mut self, scratch: &mut Scratch) {
        self.0.next_entry_unpacked(&mut scratch.a);
    }
}

/// The [`Entries`] of this build.
#[cfg(not(saber_small_sram))]
pub type MatrixEntries = Buffered;
/// The [`Entries`] of this build.
#[cfg(saber_small_sram)]
pub type MatrixEntries = Recovered;

/// Where key generation writes the secret s.
pub enum SecretOut<'a> {
    /// The specification's sk_PKE: 13 bits a coefficient (832 bytes).
    Packed(&'a mut [u8; SK_PKE_BYTES]),
    /// seed_s alone (32 bytes), from which s is generated again: a
    /// compact secret key that never leaves the device.
    Seed(&'a mut [u8; SEED_BYTES]),
}

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
// Not inlined: its secret vector (256 B) would join the caller's frame,
// which on a sensor stays live under the whole handshake start (a build
// that inlined it put 228 B more on the ATmega4808's stack).
#[inline(never)]
pub fn keygen(seed_a: &[u8; SEED_BYTES], seed_s: &[u8; SEED_BYTES], pk: &mut [u8; PK_BYTES], mut sk: SecretOut<'_>) {
    let mut s = [[0u8; N >> 1]; L];
    gen_secret(seed_s, &mut s);
    #[cfg(not(saber_small_sram))]
    keygen_one_pass::<MatrixEntries>(seed_a, &s, pk);
    #[cfg(saber_small_sram)]
    keygen_by_columns::<MatrixEntries>(seed_a, &s, pk);
    match &mut sk {
        SecretOut::Packed(sk) => {
            for (c, s_c) in s.iter().enumerate() {
                pack_bits(EQ, N, &mut sk[c * POLY_Q_BYTES..(c + 1) * POLY_Q_BYTES], |i| {
                    secret_coeff(s_c, i) as u16
                });
            }
        }
        SecretOut::Seed(sk) => sk.copy_from_slice(seed_s),
    }
    s.wipe();
}

/// [`keygen`] after GenSecret with l accumulators: each entry A[r][c], in
/// stream order, is multiplied by s_r into accumulator c. Not inlined, so
/// GenSecret's sponge and this frame's buffers are never on the stack
/// together.
#[cfg_attr(saber_small_sram, allow(dead_code))]
#[inline(never)]
fn keygen_one_pass<E: Entries>(seed_a: &[u8; SEED_BYTES], s: &[Secret; L], pk: &mut [u8; PK_BYTES]) {
    let mut acc = [const { Accumulator::new() }; L];
    let mut scratch = Scratch::new();
    let mut entries = E::NEW;
    entries.start(seed_a);
    for s_r in s.iter() {
        for acc_c in acc.iter_mut() {
            entries.mul_next(acc_c, &mut scratch, |t| load_secret(s_r, t));
        }
    }
    for (c, acc_c) in acc.iter_mut().enumerate() {
        acc_c.finish(&mut scratch.a);
        emit_key_column(c, &scratch.a, pk);
    }
    pk[POLYVEC_P_BYTES..].copy_from_slice(seed_a);
    scratch.wipe();
}

/// [`keygen`] after GenSecret with one accumulator: output polynomial c
/// reads the stream from its start up to entry A[l−1][c] (not inlined,
/// like [`keygen_one_pass`]).
#[cfg_attr(not(saber_small_sram), allow(dead_code))]
#[inline(never)]
fn keygen_by_columns<E: Entries>(seed_a: &[u8; SEED_BYTES], s: &[Secret; L], pk: &mut [u8; PK_BYTES]) {
    let mut acc = Accumulator::new();
    let mut scratch = Scratch::new();
    let mut entries = E::NEW;
    for c in 0..L {
        // Entry A[r][c] is number r·l + c of the row-major stream.
        entries.start(seed_a);
        let mut next = 0;
        for (r, s_r) in s.iter().enumerate() {
            while next < r * L + c {
                entries.skip(&mut scratch);
                next += 1;
            }
            entries.mul_next(&mut acc, &mut scratch, |t| load_secret(s_r, t));
            next += 1;
        }
        acc.finish(&mut scratch.a);
        emit_key_column(c, &scratch.a, pk);
    }
    pk[POLYVEC_P_BYTES..].copy_from_slice(seed_a);
    scratch.wipe();
}

/// b_c rounded to p into pk (output polynomial c of keygen).
fn emit_key_column(c: usize, b: &[i16; N], pk: &mut [u8; PK_BYTES]) {
    pack_bits(EP, N, &mut pk[c * POLY_P_BYTES..(c + 1) * POLY_P_BYTES], |i| {
        (b[i] as u16 + H1) >> (EQ - EP)
    });
}

/// Saber.PKE.Enc of message m with seed_s'; the ciphertext goes to `sink`
/// (written, or compared without a second ciphertext buffer). Not inlined,
/// so its buffers never share a frame with decryption's.
///
/// Two ways, chosen by `build.rs`:
/// - [`encrypt_once`] (default): s' transformed once into [`SecretHat`]s
///   (2 KB) for all its l² + l products;
/// - [`encrypt_with`] (`cfg(saber_small_sram)`): s' transformed again for
///   each product (two forward NTTs more per product, 1.5 KB less stack).
///
/// Both give the same bytes (tested).
#[inline(never)]
pub fn encrypt<S: KeySource + ?Sized>(
    m: &[u8; 32],
    seed_sp: &[u8; SEED_BYTES],
    pk: PkIn<'_, S>,
    sink: &mut CiphertextSink<CT_BYTES>,
) {
    let mut sp = [[0u8; N >> 1]; L];
    gen_secret(seed_sp, &mut sp);
    #[cfg(not(saber_small_sram))]
    encrypt_once(m, &sp, pk, sink);
    #[cfg(saber_small_sram)]
    encrypt_with::<MatrixEntries, S>(m, &sp, pk, sink);
    sp.wipe();
}

/// The public key an encryption reads: bytes `at..at + PK_BYTES` of `key`
/// (a slice, or a key in program memory read 32 values at a time).
pub struct PkIn<'a, S: ?Sized> {
    /// The bytes holding the key.
    pub key: &'a S,
    /// Where the key starts in them.
    pub at: usize,
}

impl<S: KeySource + ?Sized> PkIn<'_, S> {
    /// Starts `entries` on seed_A, the key's last 32 bytes.
    fn start(&self, entries: &mut impl Entries) {
        let mut seed_a = [0u8; SEED_BYTES];
        entries.start(kem_common::bytes_at(self.key, self.at + POLYVEC_P_BYTES, &mut seed_a));
    }
}

/// [`encrypt`] after GenSecret with s' transformed once (not inlined, like
/// [`encrypt_with`]); the entries buffered ([`Buffered`]).
#[cfg_attr(saber_small_sram, allow(dead_code))]
#[inline(never)]
fn encrypt_once<S: KeySource + ?Sized>(
    m: &[u8; 32],
    sp: &[Secret; L],
    pk: PkIn<'_, S>,
    sink: &mut CiphertextSink<CT_BYTES>,
) {
    let mut hats = [const { SecretHat::new() }; L];
    for (hat, sp_j) in hats.iter_mut().zip(sp) {
        hat.transform(|t| load_secret(sp_j, t));
    }
    let mut acc = Accumulator::new();
    let mut a = [0i16; N];
    let mut entries = Buffered::NEW;
    pk.start(&mut entries);
    // b' = round(A s'), one row at a time.
    for i in 0..L {
        for hat in hats.iter() {
            entries.stream.next_entry(&mut entries.entry);
            acc.mul_acc_hat(&mut a, |t| load_entry(&entries.entry, t), hat);
        }
        acc.finish(&mut a);
        pack_bits_with(
            EP,
            N,
            |k| (a[k] as u16 + H1) >> (EQ - EP),
            |k, byte| sink.put(i * POLY_P_BYTES + k, byte),
        );
    }
    // v' = bᵀ s' mod p.
    for (j, hat) in hats.iter().enumerate() {
        // Each product unpacks with a closure of its own (as before keys
        // could be readers): one shared unpacking was a frame more on the
        // stack at the products' deepest point.
        let b_at = pk.at + j * POLY_P_BYTES;
        acc.mul_acc_hat(
            &mut a,
            |t| unpack_bits_in(EP, N, pk.key, b_at, |i, v| t[i] = centre(v, EP)),
            hat,
        );
    }
    acc.finish(&mut a);
    emit_message(m, &a, sink);
    a.wipe();
    hats.iter_mut().for_each(Wipe::wipe);
}

/// c_m = (v' − 2^(ε_p−1)·m + h1) ≫ (ε_p − ε_T) from v' (values mod 2^13)
/// into the ciphertext's last part.
fn emit_message(m: &[u8; 32], v: &[i16; N], sink: &mut CiphertextSink<CT_BYTES>) {
    pack_bits_with(
        ET,
        N,
        |k| {
            let bit = ((m[k >> 3] >> (k & 7)) & 1) as u16;
            (v[k] as u16).wrapping_sub(bit << (EP - 1)).wrapping_add(H1) >> (EP - ET)
        },
        |k, byte| sink.put(POLYVEC_P_BYTES + k, byte),
    );
}

/// [`encrypt`] after GenSecret, s' transformed for each product (not
/// inlined, like [`keygen_one_pass`]).
#[cfg_attr(not(saber_small_sram), allow(dead_code))]
#[inline(never)]
fn encrypt_with<E: Entries, S: KeySource + ?Sized>(
    m: &[u8; 32],
    sp: &[Secret; L],
    pk: PkIn<'_, S>,
    sink: &mut CiphertextSink<CT_BYTES>,
) {
    let mut acc = Accumulator::new();
    let mut scratch = Scratch::new();
    let mut entries = E::NEW;
    pk.start(&mut entries);
    // b' = round(A s'), one row at a time.
    for i in 0..L {
        for sp_j in sp.iter() {
            entries.mul_next(&mut acc, &mut scratch, |t| load_secret(sp_j, t));
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
    inner_product(pk.key, pk.at, &mut acc, &mut scratch, |j, t| load_secret(&sp[j], t));
    // As emit_message, written out here so that the small-SRAM build (the
    // ATmega4808's measured images) stays the code it was.
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

/// Σ_j b_j·s_j for the packed mod-p vector `b` (bytes `at..` of `b`),
/// into `scratch.a` (values mod 2^13); `load_s(j, t)` writes secret j.
fn inner_product<S: KeySource + ?Sized>(
    b: &S,
    at: usize,
    acc: &mut Accumulator,
    scratch: &mut Scratch,
    load_s: impl Fn(usize, &mut [i16; N]),
) {
    for j in 0..L {
        let b_at = at + j * POLY_P_BYTES;
        acc.mul_acc(
            scratch,
            |t| unpack_bits_in(EP, N, b, b_at, |i, v| t[i] = centre(v, EP)),
            |t| load_s(j, t),
        );
    }
    acc.finish(&mut scratch.a);
}

/// The secret s as a key holds it.
pub enum SecretIn<'a, S: ?Sized> {
    /// The specification's sk_PKE (13 bits a coefficient), the first
    /// bytes of a key in the data space or in program memory.
    Packed(&'a S),
    /// [`Secret`]s, 4 bits a coefficient.
    Nibbles(&'a [u8; SK_NIBBLE_BYTES]),
    /// seed_s (a compact secret key): s is generated again.
    Seed(&'a [u8; SEED_BYTES]),
}

impl<S: ?Sized> Clone for SecretIn<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: ?Sized> Copy for SecretIn<'_, S> {}

impl<S: KeySource + ?Sized> SecretIn<'_, S> {
    /// Secret `j`'s coefficients into `t`.
    fn load(self, j: usize, t: &mut [i16; N]) {
        match self {
            SecretIn::Packed(sk) => unpack_bits_in(EQ, N, sk, j * POLY_Q_BYTES, |i, v| t[i] = centre(v, EQ)),
            SecretIn::Nibbles(s) => kem_common::unpack_nibbles(&s[j * (N >> 1)..(j + 1) * (N >> 1)], t),
            // `decrypt` turns a seed into nibbles first.
            SecretIn::Seed(_) => t.fill(0),
        }
    }
}

/// Saber.PKE.Dec: m = (v − 2^(ε_p−ε_T)·c_m + h2) ≫ (ε_p − 1), bit by bit.
/// `sk` must hold secrets in [−5, 5] (checked on import); they are read
/// straight from it for each product, never copied. A seed is expanded
/// into s (256 bytes, in this frame, which is below the re-encryption's
/// peak) first.
#[inline(never)]
pub fn decrypt<S: KeySource + ?Sized>(sk: SecretIn<'_, S>, ct: &[u8; CT_BYTES], m: &mut [u8; 32]) {
    let mut expanded = [[0u8; N >> 1]; L];
    let sk = match sk {
        SecretIn::Seed(seed_s) => {
            gen_secret(seed_s, &mut expanded);
            match expanded.as_flattened().try_into() {
                Ok(nibbles) => SecretIn::Nibbles(nibbles),
                Err(_) => sk, // unreachable: L · N/2 bytes
            }
        }
        _ => sk,
    };
    let mut acc = Accumulator::new();
    let mut scratch = Scratch::new();
    inner_product(&ct[..POLYVEC_P_BYTES], 0, &mut acc, &mut scratch, |j, t| sk.load(j, t));
    let v = &scratch.a;
    m.fill(0);
    unpack_bits(ET, N, &ct[POLYVEC_P_BYTES..], |k, cm| {
        let bit = (v[k] as u16).wrapping_add(H2).wrapping_sub(cm << (EP - ET)) >> (EP - 1) & 1;
        m[k >> 3] |= (bit as u8) << (k & 7);
    });
    scratch.wipe();
    expanded.wipe();
}

/// Whether every 13-bit secret coefficient lies in [−5, 5] (no early exit).
pub fn secret_in_range<S: KeySource + ?Sized>(sk: &S) -> bool {
    let mut bad = 0u16;
    for j in 0..L {
        unpack_bits_in(EQ, N, sk, j * POLY_Q_BYTES, |_, v| {
            let x = centre(v, EQ);
            bad |= ((5 - x) | (x + 5)) as u16 & 0x8000;
        });
    }
    bad == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two key generation orders, each with both ways of getting the
    /// matrix entries, give the same public key.
    #[test]
    fn one_pass_and_by_columns_agree() {
        for seed in 0..8u8 {
            let seed_a = [seed.wrapping_mul(91) ^ 0x3C; SEED_BYTES];
            let mut s = [[0u8; N >> 1]; L];
            gen_secret(&[seed; SEED_BYTES], &mut s);
            let mut reference = [0u8; PK_BYTES];
            keygen_one_pass::<Buffered>(&seed_a, &s, &mut reference);
            let mut pks = [[1u8; PK_BYTES]; 3];
            keygen_one_pass::<Recovered>(&seed_a, &s, &mut pks[0]);
            keygen_by_columns::<Buffered>(&seed_a, &s, &mut pks[1]);
            keygen_by_columns::<Recovered>(&seed_a, &s, &mut pks[2]);
            for (k, pk) in pks.iter().enumerate() {
                assert_eq!(pk, &reference, "seed {seed}, variant {k}");
            }
        }
    }

    /// Encryption gives the same ciphertext with the entries buffered and
    /// recovered, and with the secret transformed once, for matrices whose
    /// entries reach ±2^12 (the coefficients the residue mod 7681 alone
    /// cannot tell apart) and for random ones.
    #[test]
    fn buffered_and_recovered_entries_encrypt_alike() {
        for seed in 0..6u8 {
            let mut pk = [0u8; PK_BYTES];
            let mut s = [[0u8; N >> 1]; L];
            gen_secret(&[seed ^ 0xA5; SEED_BYTES], &mut s);
            keygen_one_pass::<Buffered>(&[seed; SEED_BYTES], &s, &mut pk);
            let mut sp = [[0u8; N >> 1]; L];
            gen_secret(&[seed.wrapping_add(77); SEED_BYTES], &mut sp);
            let m = [seed.wrapping_mul(29); 32];
            let (mut ct1, mut ct2) = ([0u8; CT_BYTES], [1u8; CT_BYTES]);
            encrypt_with::<Buffered, [u8]>(
                &m,
                &sp,
                PkIn { key: &pk[..], at: 0 },
                &mut CiphertextSink::Write(&mut ct1),
            );
            encrypt_with::<Recovered, [u8]>(
                &m,
                &sp,
                PkIn { key: &pk[..], at: 0 },
                &mut CiphertextSink::Write(&mut ct2),
            );
            assert_eq!(ct1, ct2, "seed {seed}");
            let mut ct3 = [2u8; CT_BYTES];
            encrypt_once(
                &m,
                &sp,
                PkIn { key: &pk[..], at: 0 },
                &mut CiphertextSink::Write(&mut ct3),
            );
            assert_eq!(ct1, ct3, "seed {seed}, secret transformed once");
        }
    }
}
