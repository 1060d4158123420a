//! K-PKE, the CPA-secure encryption scheme inside ML-KEM (FIPS 203 §5),
//! written to keep few polynomials alive: matrix entries are sampled on the
//! fly, ŝ stays in its encoded form, t̂ is decoded row by row, r̂_j is
//! transformed again where it is needed (r_j sampled again, or unpacked).
//!
//! The PKE secret comes in two forms, told apart by its length (public):
//! ByteEncode12(ŝ) (`DK_PKE_BYTES`, FIPS 203's dk_PKE), or σ alone
//! (`SIGMA_BYTES`, a compact key), from which ŝ_j = NTT(CBD_η1(PRF(σ, j)))
//! is sampled again each time it is needed.

use kem_common::{CiphertextSink, KeySource, Wipe};

use super::params::{C1_BYTES, CT_BYTES, DK_PKE_BYTES, DU, DV, EK_BYTES, ETA1, ETA2, K, POLY_BYTES, SIGMA_BYTES};
use crate::encode::{add_message, compress_emit, compress_encode, decode12, decode12_in, decode_decompress, encode12};
use crate::poly::Poly;
use crate::sampling::{add_cbd, sample_cbd, sample_cbd_packed, sample_ntt, unpack_small, PACKED_SMALL_BYTES};

/// K-PKE.KeyGen (Algorithm 13) from the 64 bytes (ρ, σ) = G(…), writing
/// ek = ByteEncode12(t̂) ‖ ρ and the PKE secret: dk_pke = ByteEncode12(ŝ)
/// when `dk_pke` is `DK_PKE_BYTES` long, else (compact) nothing: ŝ_j is
/// sampled again from σ for each product (K² samplings instead of K).
///
/// Two polynomials, not three: t̂_i's partial sums wait encoded in ek (the
/// encoding of a canonical residue is lossless), and each later product
/// is added to a decoded copy: 512 B less stack for one more encoding and
/// decoding per product after a row's first.
pub fn keygen(rho: &[u8; 32], sigma: &[u8; 32], ek: &mut [u8; EK_BYTES], dk_pke: &mut [u8]) {
    let mut s = Poly::zero();
    if dk_pke.len() == DK_PKE_BYTES {
        for j in 0..K {
            sample_cbd::<ETA1>(sigma, j as u8, &mut s);
            s.ntt();
            encode12(&s, &mut dk_pke[j * POLY_BYTES..(j + 1) * POLY_BYTES]);
        }
    }
    let secret = match dk_pke.len() == DK_PKE_BYTES {
        true => Secret::Encoded(&*dk_pke),
        false => Secret::Seed(sigma),
    };
    let mut a = Poly::zero();
    for i in 0..K {
        let t_i = &mut ek[i * POLY_BYTES..(i + 1) * POLY_BYTES];
        // t̂_i = Σ_j Â[i][j] ∘ ŝ_j + NTT(e_i)
        for j in 0..K {
            sample_ntt(rho, j as u8, i as u8, &mut a);
            secret.load(j, &mut s);
            a.base_mul_assign(&s);
            if j > 0 {
                decode12(t_i, &mut s);
                a.add(&s);
            }
            if j + 1 < K {
                encode12(&a, t_i);
            }
        }
        sample_cbd::<ETA1>(sigma, (K + i) as u8, &mut s);
        s.ntt();
        a.add(&s);
        encode12(&a, t_i);
    }
    ek[K * POLY_BYTES..].copy_from_slice(rho);
    s.wipe();
}

/// Where ŝ comes from: its encoding (FIPS 203's dk_PKE) at the start of
/// a key, or σ (a compact key), from which each ŝ_j is sampled again.
enum Secret<'a, S: KeySource + ?Sized> {
    Encoded(&'a S),
    Seed(&'a [u8; SIGMA_BYTES]),
}

impl<S: KeySource + ?Sized> Secret<'_, S> {
    /// ŝ_j into `out`. The branch depends on the key's form only. Not
    /// inlined: key generation and decryption share one copy.
    #[inline(never)]
    fn load(&self, j: usize, out: &mut Poly) {
        match self {
            Secret::Encoded(key) => {
                decode12_in(*key, j * POLY_BYTES, out);
            }
            Secret::Seed(sigma) => {
                sample_cbd::<ETA1>(sigma, j as u8, out);
                out.ntt();
            }
        }
    }
}

/// Where encryption gets r_j (before its NTT) each time a row needs it.
/// An enum, like [`CiphertextSink`], so that one copy of [`encrypt`]
/// serves both kinds.
pub enum Noise<'a> {
    /// Samples r_j again every time (PRF and CBD): no stack beyond the
    /// polynomial (k = 2 encapsulation, whose stack is at its 2.2 KB
    /// budget, and every operation on 6 KB MCUs).
    Resample,
    /// Samples each r_j once and keeps it packed: a later use unpacks it
    /// instead of a PRF block and CBD. For decapsulation's re-encryption,
    /// and for encapsulation from k = 3 on (`kem_impl::ENCAPS_KEEPS_NOISE`).
    KeepPacked(&'a mut PackedNoise),
}

/// The r_j that [`Noise::KeepPacked`] sampled, 4 bits a coefficient (K·128 B).
/// Wiped on drop.
pub struct PackedNoise {
    packed: [[u8; PACKED_SMALL_BYTES]; K],
    sampled: [bool; K],
}

impl Default for PackedNoise {
    fn default() -> Self {
        PackedNoise {
            packed: [[0; PACKED_SMALL_BYTES]; K],
            sampled: [false; K],
        }
    }
}

impl Drop for PackedNoise {
    fn drop(&mut self) {
        self.packed.wipe();
    }
}

impl Noise<'_> {
    /// r_j = SamplePolyCBD_η1(PRF(r, j)) into `out`. The branches depend on
    /// the kind and the loop counters only.
    fn load(&mut self, r: &[u8; 32], j: usize, out: &mut Poly) {
        match self {
            Noise::Resample => sample_cbd::<ETA1>(r, j as u8, out),
            Noise::KeepPacked(kept) => {
                let (Some(packed), Some(sampled)) = (kept.packed.get_mut(j), kept.sampled.get_mut(j)) else {
                    return;
                };
                if *sampled {
                    unpack_small::<ETA1>(packed, out);
                } else {
                    sample_cbd_packed::<ETA1>(r, j as u8, out, packed);
                    *sampled = true;
                }
            }
        }
    }
}

/// K-PKE.Encrypt (Algorithm 14) of message `m` with randomness `r`; the
/// ciphertext bytes go to `sink`. The encapsulation key is bytes
/// `ek_at..ek_at + EK_BYTES` of `key` (a slice, or a key in program
/// memory read 32 values at a time); it must already have passed the
/// modulus check where the caller requires it.
///
/// Three polynomials live at once (r̂_j, the Â entry, the accumulator):
/// r̂_j is transformed again for the products that need it rather than
/// kept (512 B per r̂_j), and `noise` either samples r_j again
/// ([`Noise::Resample`]) or unpacks it ([`Noise::KeepPacked`]). Rows take
/// j in alternating order so consecutive products share r̂_j: K² loads for
/// the K² + K products, K² − K of them again (2, 6, 12 for k = 2, 3, 4).
#[inline(never)]
pub fn encrypt<S: KeySource + ?Sized>(
    key: &S,
    ek_at: usize,
    m: &[u8; 32],
    r: &[u8; 32],
    noise: &mut Noise,
    sink: &mut CiphertextSink<CT_BYTES>,
) {
    // ρ is public: a reader's copy needs no wiping.
    let mut rho_copy = [0u8; 32];
    // A slice, not an array: a fallback for a short key would be a
    // 32-byte static, which a classic AVR keeps in SRAM.
    let rho: &[u8] = kem_common::bytes_at(key, ek_at + K * POLY_BYTES, &mut rho_copy);
    let mut r_hat = Poly::zero();
    let mut loaded = K; // none yet
    let mut load = |j: usize, r_hat: &mut Poly| {
        if loaded != j {
            // Which r̂_j is loaded depends on the loop counters only.
            noise.load(r, j, r_hat);
            r_hat.ntt();
            loaded = j;
        }
    };
    // Row i takes j upwards when i is even, downwards when odd; v is row K.
    let order = |i: usize, step: usize| if i & 1 == 0 { step } else { K - 1 - step };
    let mut a = Poly::zero();
    let mut acc = Poly::zero();
    // u_i = NTT^{-1}(Σ_j Â[j][i] ∘ r̂_j) + e1_i
    for i in 0..K {
        acc.0.fill(0);
        for step in 0..K {
            let j = order(i, step);
            load(j, &mut r_hat);
            sample_ntt(rho, i as u8, j as u8, &mut a);
            acc.base_mul_acc(&a, &r_hat);
        }
        acc.inv_ntt();
        add_cbd::<ETA2>(r, (K + i) as u8, &mut acc);
        compress_emit::<DU>(&acc, i * 32 * DU as usize, &mut |k, byte| sink.put(k, byte));
    }
    // v = NTT^{-1}(t̂ ∘ r̂) + e2 + Decompress_1(m)
    acc.0.fill(0);
    for step in 0..K {
        let j = order(K, step);
        load(j, &mut r_hat);
        decode12_in(key, ek_at + j * POLY_BYTES, &mut a);
        acc.base_mul_acc(&a, &r_hat);
    }
    acc.inv_ntt();
    add_cbd::<ETA2>(r, (2 * K) as u8, &mut acc);
    add_message(m, &mut acc);
    compress_emit::<DV>(&acc, C1_BYTES, &mut |k, byte| sink.put(k, byte));
    r_hat.wipe();
    acc.wipe();
}

/// K-PKE.Decrypt (Algorithm 15): m = Compress_1(v − NTT^{-1}(ŝ ∘ NTT(u))),
/// with the PKE secret the first `pke` bytes of `dk` (`DK_PKE_BYTES`:
/// ByteEncode12(ŝ); `SIGMA_BYTES`: σ, ŝ sampled again).
/// Not inlined, so its buffers and the re-encryption's never share a frame.
#[inline(never)]
pub fn decrypt<S: KeySource + ?Sized>(dk: &S, pke: usize, ct: &[u8]) -> [u8; 32] {
    let mut acc = Poly::zero();
    let mut u = Poly::zero();
    let mut s = Poly::zero();
    let mut sigma = [0u8; SIGMA_BYTES];
    let secret = match pke == SIGMA_BYTES {
        true => {
            dk.read(0, &mut sigma);
            Secret::Seed(&sigma)
        }
        false => Secret::Encoded(dk),
    };
    for i in 0..K {
        let width = 32 * DU as usize;
        decode_decompress::<DU>(&ct[i * width..(i + 1) * width], &mut u);
        u.ntt();
        secret.load(i, &mut s);
        acc.base_mul_acc(&u, &s);
    }
    acc.inv_ntt();
    decode_decompress::<DV>(&ct[C1_BYTES..], &mut u);
    u.sub(&acc);
    let mut m = [0u8; 32];
    compress_encode::<1>(&u, &mut m);
    acc.wipe();
    u.wipe();
    s.wipe();
    sigma.wipe();
    m
}
