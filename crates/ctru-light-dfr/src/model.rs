//! Revision 1's decryption noise, exactly, and the E8 decoder's failure
//! region (definition §2–§3).
//!
//! Write ρ_k = ⌊(256σ_k + 384)/769⌋ and ν_k = 769ρ_k − 256σ_k ∈ \[−384, 384\]
//! (the compression error in units of 1/769 of w). Then c = ρ + 128·b mod
//! 256 and, with σ·f = g·r + 769·t over Z\[x\]/(x^512 + 1),
//!
//!   w = c·f ≡ 128·b + e (mod 256),   769·e = 256·(g·r) + ν·f,
//!
//! because 128·(b·f) = 128·(2·b·f' + b) ≡ 128·b: revision 1's noise has no
//! message term (revision 0's rounding of 256(σ + 385b)/769 left one,
//! 128·(b·f)/769). e is an integer; per coefficient, (g·r)_k is a sum of 512
//! independent products of two B1 values, and (ν·f)_k = Σ_j ±ν_j·f_{k−j}
//! with f_i = 2f'_i (i ≥ 1), f_0 = 2f'_0 + 1.
//!
//! Model assumption (the one every published DFR script makes): the ν_j are
//! independent, with the law of ν(σ) for σ uniform on Z_769 (enumerated in
//! \[`compression_error`\]), and independent of f, g, r. Their only known
//! dependence is kept: e is an integer, i.e. 769 | 256(g·r)_k + (ν·f)_k; the
//! law of e is the model's law of (256X + Y)/769 restricted to integers
//! (with Y mod 769 exactly uniform, the restriction changes no moment).

use crate::law::{add_uniform, Law, WindowSums};

/// Ring degree.
pub const N: usize = 512;
/// Modulus q.
pub const Q: i64 = 769;
/// Ciphertext modulus q2.
pub const Q2: i64 = 256;

/// A revision of the ciphertext compression (definition §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revision {
    /// c = round(256(σ + 385·b)/769) mod 256.
    R0,
    /// c = (⌊(256σ + 384)/769⌋ + 128·b) mod 256.
    R1,
}

/// The ciphertext coefficient for σ ∈ \[0, q) and message bit b, exactly as
/// the definition writes it.
pub fn compress(rev: Revision, sigma: i64, bit: i64) -> i64 {
    match rev {
        Revision::R1 => ((sigma * 256 + 384).div_euclid(Q) + 128 * bit).rem_euclid(Q2),
        Revision::R0 => (((sigma + 385 * bit) * 256 + 384).div_euclid(Q)).rem_euclid(Q2),
    }
}

/// The law, over σ uniform on Z_769, of the compression error for message
/// bit b in units of 1/769 of w: ν = 769·(c − 128b) − 256σ, taken modulo
/// 769·256 into \[−98432, 98432) (c is only defined modulo 256).
pub fn compression_error(rev: Revision, bit: i64) -> Law {
    let m = Q * Q2;
    Law::from_pairs((0..Q).map(|sigma| {
        let nu = (Q * (compress(rev, sigma, bit) - 128 * bit) - 256 * sigma).rem_euclid(m);
        (if nu >= m / 2 { nu - m } else { nu }, 1.0 / Q as f64)
    }))
}

/// B1 (definition §2, CBD1): bit(2j) − bit(2j + 1) of a uniform byte.
pub fn cbd1() -> Law {
    Law::from_pairs((0..4i64).map(|bits| ((bits & 1) - (bits >> 1), 0.25)))
}

/// The E8 codeword of a 4-bit value (definition §2).
pub fn e8_codeword(v: u8) -> u8 {
    let bit = |i: u8| 0u8.wrapping_sub((v >> i) & 1);
    (bit(1) & 0x0F) ^ (bit(2) & 0x3C) ^ (bit(3) & 0xF0) ^ (bit(0) & 0x55)
}

/// The supports (bit masks) of the 14 weight-4 codewords.
///
/// The decoder (§2) returns the codeword c minimising Σ_j d(v_j, 128·c_j)²,
/// d the distance in Z_256 (its coset-and-parity search is exhaustive over
/// the 16 codewords). With the error reduced to ẽ_j ∈ \[−128, 128), codeword
/// b ⊕ c costs Σ_{j ∉ S} ẽ_j² + Σ_{j ∈ S} (128 − |ẽ_j|)² for S = supp(c), so
/// decoding fails only if Σ_{j ∈ S} |ẽ_j| ≥ 64·|S| for some nonzero codeword:
/// for |S| = 4 that is Σ_S |ẽ_j| ≥ 256, and the weight-8 word is implied by
/// its two complementary weight-4 halves. A lone coefficient error never
/// fails (256 ≡ 0: the 16 minimal vectors ±256·e_i of the scaled E8 lattice
/// decode to the same message). Equality is a tie, broken by the decoder's
/// order of comparisons; the bound counts ties as failures.
pub fn weight4_supports() -> Vec<u8> {
    (0..16u8).map(e8_codeword).filter(|c| c.count_ones() == 4).collect()
}

/// The model's law of one coefficient of e, with its ingredients.
pub struct NoiseLaw {
    /// Law of e (integers, units of w; unreduced).
    pub e: Law,
    /// Var of the g·r term, 256²·Var((g·r)_k)/769².
    pub var_gr: f64,
    /// Var of the compression term, Var(ν)·Σ E\[f_i²\]/769².
    pub var_nu_f: f64,
    /// 769·Σ_n P(256X + Y = 769n): 1 when Y mod 769 is uniform.
    pub integer_mass: f64,
}

/// The exact law of e_k under the model, for compression error law `nu`
/// (uniform on \[−h, h\], as both revisions' are) and the law of f'
/// (B1; the authors' variance of the f·ε term is f' with P(f' ≠ 0) = 1/4).
///
/// (g·r)_k: the 512-fold convolution of the law of a product of two B1
/// values. (ν·f)_k = ν_0·f_0 + 2·S with S = Σ_{j=1}^{511} ν_j f'_j: ν_j f'_j is
/// 0 or (by symmetry of ν) a fresh uniform, so S is a Binomial(511,
/// P(f' ≠ 0)) mixture of K-fold sums of uniforms, each obtained from the last
/// by window sums. P(e = n) = Σ_x P(X = x)·P(Y = 769n − 256x) / (1/769).
pub fn noise_law(nu: &Law, fprime: &Law) -> Result<NoiseLaw, String> {
    let h = nu
        .uniform_half_width()
        .ok_or("the model needs a compression error uniform on [−h, h]")?;
    if fprime.offset < -1 || fprime.max() > 1 || !fprime.is_symmetric() {
        return Err("the model needs f' on {−1, 0, 1}, symmetric".into());
    }
    let b1 = cbd1();
    let x_law = b1.product(&b1).pow(N);
    let nonzero = 1.0 - fprime.prob(0);
    let k_law = Law::from_pairs([(0, 1.0 - nonzero), (1, nonzero)]).pow(N - 1);
    // S = mixture over K of U^{*K}.
    let mut mix = Law {
        offset: -h * (N as i64 - 1),
        p: vec![0.0; 2 * h as usize * (N - 1) + 1],
    };
    let mut uk = Law::point(0);
    for k in 0..N {
        let w = k_law.prob(k as i64);
        for (v, q) in uk.iter() {
            mix.p[(v - mix.offset) as usize] += w * q;
        }
        if k + 1 < N {
            uk = add_uniform(&uk, h);
        }
    }
    // f_0 = 2f'_0 + 1 and the window sums of S along the strides |f_0|.
    let f0: Vec<(i64, f64)> = fprime
        .iter()
        .filter(|x| x.1 > 0.0)
        .map(|(v, q)| (2 * v + 1, q))
        .collect();
    let sums: Vec<(i64, f64, WindowSums)> = f0
        .iter()
        .map(|&(v, q)| (v.abs(), q, WindowSums::new(&mix, v.unsigned_abs() as usize)))
        .collect();
    let scale = 1.0 / (2 * h + 1) as f64;
    // P(Y = y), Y = 2S + f_0·ν_0: Σ_{|t| ≤ h, t ≡ y (mod 2)} P(S = (y − |f_0|t)/2).
    let p_y = |y: i64| -> f64 {
        sums.iter()
            .map(|(a, q, ws)| {
                let t_hi = if (h - y).rem_euclid(2) == 0 { h } else { h - 1 };
                let t_lo = if (-h - y).rem_euclid(2) == 0 { -h } else { -h + 1 };
                if t_lo > t_hi {
                    return 0.0;
                }
                q * scale * ws.sum((y - a * t_hi) / 2, (y - a * t_lo) / 2)
            })
            .sum()
    };
    let y_max = 2 * h * (N as i64 - 1) + f0.iter().map(|x| x.0.abs()).max().unwrap_or(1) * h;
    let x_max = x_law.max();
    let n_max = (256 * x_max + y_max) / Q + 1;
    let raw: Vec<(i64, f64)> = (-n_max..=n_max)
        .map(|n| {
            let mass: f64 = x_law
                .iter()
                .filter(|x| x.1 > 0.0)
                .map(|(x, q)| q * p_y(Q * n - 256 * x))
                .sum();
            (n, mass)
        })
        .collect();
    let raw = Law::from_pairs(raw);
    let integer_mass = raw.total() * Q as f64;
    let sum_f2 = (N - 1) as f64 * 4.0 * fprime.variance() + f0.iter().map(|&(v, q)| (v * v) as f64 * q).sum::<f64>();
    Ok(NoiseLaw {
        e: raw.normalized(),
        var_gr: 256.0 * 256.0 * x_law.variance() / (Q * Q) as f64,
        var_nu_f: nu.variance() * sum_f2 / (Q * Q) as f64,
        integer_mass,
    })
}

/// The law of |ẽ| for ẽ = e reduced into \[−128, 128) (what the decoder sees).
pub fn reduced_magnitude(e: &Law) -> Law {
    e.map(|v| ((v + 128).rem_euclid(256) - 128).abs())
}

/// Failure bounds with independent coefficients.
pub struct IndependentRate {
    /// P(Σ_{j∈S} |ẽ_j| ≥ 256) for one weight-4 support S (ties fail).
    pub support: f64,
    /// The same with ties decoding correctly (> 256).
    pub support_strict: f64,
    /// P(e_k ≥ 128): what a bound on the 16 vectors ±256e_i would add.
    pub single: f64,
    /// Union bound for one block: 14 supports.
    pub block: f64,
    /// Union bound for one decapsulation: 64 blocks.
    pub decaps: f64,
}

/// The failure probability if the coefficients of a block were independent.
pub fn independent_rate(e: &Law) -> IndependentRate {
    let sum4 = reduced_magnitude(e).pow(4);
    let support = sum4.tail_ge(256);
    let block = weight4_supports().len() as f64 * support;
    IndependentRate {
        support,
        support_strict: sum4.tail_ge(257),
        single: e.tail_ge(128),
        block,
        decaps: (N / 8) as f64 * block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The enumerated compression-error law against a brute-force rounding
    /// in floating point: revision 1's error is −(256σ/769 − round(256σ/769))
    /// whatever the bit, uniform on \[−384, 384\], mean 0; revision 0's has
    /// mean 128/769 when b = 1.
    #[test]
    fn compression_error_law_matches_brute_force() {
        for bit in 0..2 {
            let law = compression_error(Revision::R1, bit);
            assert!((law.total() - 1.0).abs() < 1e-12);
            let mut brute = vec![0u32; 769];
            for sigma in 0..769 {
                let x = 256.0 * sigma as f64 / 769.0;
                let nu = (769.0 * (x.round() - x)).round() as i64;
                brute[(nu + 384) as usize] += 1;
            }
            for (nu, &count) in (-384i64..).zip(brute.iter()) {
                assert_eq!(law.prob(nu), count as f64 / 769.0, "ν = {nu}");
            }
            assert_eq!(law.uniform_half_width(), Some(384));
            assert!(law.mean().abs() < 1e-12);
            assert!((law.variance() - (769.0 * 769.0 - 1.0) / 12.0).abs() < 1e-6);
        }
        let r0 = compression_error(Revision::R0, 1);
        assert!((r0.mean() - 128.0).abs() < 1e-9, "revision 0's offset: {}", r0.mean());
        assert!(compression_error(Revision::R0, 0).mean().abs() < 1e-9);
    }

    #[test]
    fn code_has_fourteen_weight_four_words() {
        let words: Vec<u8> = (0..16).map(e8_codeword).collect();
        assert_eq!(
            words,
            [0, 85, 15, 90, 60, 105, 51, 102, 240, 165, 255, 170, 204, 153, 195, 150]
        );
        assert_eq!(weight4_supports().len(), 14);
        // Linear code: the sum of two codewords is a codeword.
        for &a in &words {
            for &b in &words {
                assert!(words.contains(&(a ^ b)));
            }
        }
    }

    /// The crate's E8 decoder fails exactly outside the region
    /// `weight4_supports` describes: always decodes right when every
    /// support's Σ|ẽ_j| is below 256, never when one is above (ties go
    /// either way). Random errors, errors near a support's boundary, and
    /// one large error (up to ±255) on a quiet block.
    #[test]
    fn crate_decoder_fails_exactly_outside_the_region() {
        let supports = weight4_supports();
        let mut state = 0x0123_4567_89AB_CDEFu64;
        let mut next = |range: i64| -> i64 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % range as u64) as i64
        };
        let (mut inside, mut outside, mut ties) = (0, 0, 0);
        for trial in 0..300_000 {
            let msg = next(16) as u8;
            let word = e8_codeword(msg);
            let mut e = [0i64; 8];
            match trial % 3 {
                0 => e.iter_mut().for_each(|x| *x = next(256) - 128),
                1 => {
                    let s = supports[next(14) as usize];
                    let mut mags = [0i64; 4];
                    loop {
                        let target = 256 + next(5) - 2;
                        for m in mags.iter_mut().take(3) {
                            *m = 40 + next(90);
                        }
                        mags[3] = target - mags[0] - mags[1] - mags[2];
                        if (0..=128).contains(&mags[3]) {
                            break;
                        }
                    }
                    let mut i = 0;
                    for (j, x) in e.iter_mut().enumerate() {
                        if s >> j & 1 == 1 {
                            *x = if next(2) == 0 { mags[i] } else { -mags[i] };
                            i += 1;
                        } else {
                            *x = next(161) - 80;
                        }
                    }
                }
                _ => {
                    e.iter_mut().for_each(|x| *x = next(41) - 20);
                    e[next(8) as usize] = next(511) - 255;
                }
            }
            let block: Vec<u8> = (0..8)
                .map(|j| (128 * ((word >> j) & 1) as i64 + e[j]).rem_euclid(256) as u8)
                .collect();
            let decoded = ctru_light::e8_decode_block_portable(&block);
            let margin = supports
                .iter()
                .map(|&s| {
                    (0..8)
                        .filter(|j| s >> j & 1 == 1)
                        .map(|j| ((e[j] + 128).rem_euclid(256) - 128).abs())
                        .sum::<i64>()
                })
                .max()
                .unwrap_or(0)
                - 256;
            match margin.signum() {
                -1 => {
                    assert_eq!(decoded, msg, "error {e:?} inside the region");
                    inside += 1;
                }
                1 => {
                    assert_ne!(decoded, msg, "error {e:?} outside the region");
                    outside += 1;
                }
                _ => ties += 1,
            }
        }
        assert!(
            inside > 50_000 && outside > 50_000 && ties > 1_000,
            "{inside} {outside} {ties}"
        );
    }

    /// The codewords as the crate places them in w (`hazmat::e8_bits`).
    #[test]
    fn codewords_match_the_crates_bit_layout() {
        let m: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5A);
        let bits = ctru_light::hazmat::e8_bits(&m);
        for b in 0..64 {
            let word = e8_codeword((m[b >> 1] >> (4 * (b & 1))) & 15);
            for j in 0..8 {
                assert_eq!(bits[8 * b + j], (word >> j) & 1, "block {b}, bit {j}");
            }
        }
    }

    /// The noise law is a distribution, symmetric, and its variance is the
    /// sum of its two terms' variances (256²·128 + Var(ν)·1025)/769²; the
    /// integrality restriction keeps mass 1/769.
    #[test]
    fn noise_law_variance_is_the_sum_of_term_variances() {
        let nu = compression_error(Revision::R1, 0);
        let law = noise_law(&nu, &cbd1()).unwrap();
        assert!((law.e.total() - 1.0).abs() < 1e-12);
        assert!((law.integer_mass - 1.0).abs() < 1e-9, "{}", law.integer_mass);
        assert!(law.e.is_symmetric());
        let expected = (256.0 * 256.0 * 128.0 + 49280.0 * 1025.0) / (769.0 * 769.0);
        assert!((law.var_gr + law.var_nu_f - expected).abs() < 1e-9);
        let var = law.e.variance();
        assert!((var - expected).abs() < 1e-6 * expected, "{var} vs {expected}");
        // The fourth cumulant too: X and Y independent, κ4 adds.
        let x = cbd1().product(&cbd1()).pow(N);
        let k4 = |l: &Law| l.central_moment(4) - 3.0 * l.variance().powi(2);
        let y_k4 =
            (N - 1) as f64 * k4(&nu.product(&cbd1().map(|v| 2 * v))) + k4(&nu.product(&cbd1().map(|v| 2 * v + 1)));
        let expected_k4 = (256f64.powi(4) * k4(&x) + y_k4) / 769f64.powi(4);
        assert!(
            (k4(&law.e) - expected_k4).abs() < 1e-4 * expected_k4.abs(),
            "{} vs {expected_k4}",
            k4(&law.e)
        );
    }
}
