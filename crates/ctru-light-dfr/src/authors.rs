//! The authors' published estimator, `ErrorRate_CTRU_Light_v1` of the
//! failure-rate scripts in GitHub `fby1997/CTRU` (file `CTRU_failure.py`,
//! `_ctru_light_standard_deviation` / `_ctru_light_error_rate`), reproduced
//! term for term, and the corrections that lead from it to revision 1's
//! variance. All variances in units of Z_q (as the script), thresholds too.
//!
//! The script's variance is n·σ1²σ2² plus (q/q2)²·(2n·σ1²·σε1² + σε1²)
//! plus 4n·σ1²·σε2² + σε2², and log2 δ = log2(n/16) + log2 χ²_8.sf((q/p)²/σ²),
//! with σ1² = σ2² = Var(B1) = 1/2, ε1 = round(q2·u/q) − q2·u/q over u ∈ Z_q,
//! and ε2 = −(q2/q)·u over u from ⌈−q/(2q2)⌉ to ⌈q/(2q2)⌉ − 1, i.e. −1, 0, 1.

use crate::model::{cbd1, N, Q, Q2};

/// Variance terms of the estimator, Z_q units².
#[derive(Clone, Copy, Debug)]
pub struct Terms {
    /// n·σ1²σ2²: g·r.
    pub gr: f64,
    /// (q/q2)²·(coefficient·σ1²·σε1² + σε1²): the f·ε term; `f_coeff` is
    /// the script's 2n (Σ E\[f_i²\] for i ≥ 1 would be 4n·σ1² = 2n·2).
    pub f_eps: f64,
    /// 4n·σ1²·σε2² + σε2²: the second rounding law's term.
    pub eps2: f64,
    /// Number of blocks the per-block bound is multiplied by.
    pub blocks: f64,
}

impl Terms {
    /// σ² in Z_q units.
    pub fn variance(&self) -> f64 {
        self.gr + self.f_eps + self.eps2
    }

    /// log2 of the estimator: blocks × χ²_8 tail at (q/p)²/σ², p = 2.
    pub fn log2_rate(&self) -> f64 {
        let threshold = Q as f64 / 2.0;
        self.blocks.log2() + log2_chi2_8_sf(threshold * threshold / self.variance())
    }
}

/// log2 P(χ²_8 ≥ x) = log2(e^{−x/2}·Σ_{i<4} (x/2)^i/i!).
pub fn log2_chi2_8_sf(x: f64) -> f64 {
    let h = x / 2.0;
    let series = 1.0 + h + h * h / 2.0 + h * h * h / 6.0;
    -h / std::f64::consts::LN_2 + series.log2()
}

/// log2 P(N(0, 1) ≥ x) for x ≥ 9, by the asymptotic series of the Mills
/// ratio (relative error below 1e-6 there).
pub fn log2_gaussian_tail(x: f64) -> f64 {
    let y = 1.0 / (x * x);
    let series = 1.0 - y + 3.0 * y * y - 15.0 * y.powi(3) + 105.0 * y.powi(4);
    (-x * x / 2.0 - (x * (2.0 * std::f64::consts::PI).sqrt()).ln() + series.ln()) / std::f64::consts::LN_2
}

fn variance_of(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n
}

/// Var(ε1) and Var(ε2) of the script's two rounding laws.
pub fn rounding_variances() -> (f64, f64) {
    let (q, q2) = (Q as f64, Q2 as f64);
    let eps1: Vec<f64> = (0..Q)
        .map(|u| {
            let base = q2 / q * u as f64;
            base.round() - base
        })
        .collect();
    let lower = (-q / (2.0 * q2)).ceil() as i64;
    let upper = (q / (2.0 * q2)).ceil() as i64;
    let eps2: Vec<f64> = (lower..upper).map(|u| -q2 / q * u as f64).collect();
    (variance_of(&eps1), variance_of(&eps2))
}

/// The estimator exactly as published.
pub fn published() -> Terms {
    let s1 = cbd1().variance();
    let n = N as f64;
    let (e1, e2) = rounding_variances();
    let scale = (Q as f64 / Q2 as f64).powi(2);
    Terms {
        gr: n * s1 * s1,
        f_eps: scale * (2.0 * n * s1 * e1 + e1),
        eps2: 4.0 * n * s1 * e2 + e2,
        blocks: n / 16.0,
    }
}

/// The f·ε term with Σ_i E\[f_i²\] = 4n·σ1² + 1 (f_i = 2f'_i, E\[f_i²\] = 2;
/// f_0 = 2f'_0 + 1, E\[f_0²\] = 3), the rest as published.
pub fn with_f_eps_corrected(mut t: Terms) -> Terms {
    let s1 = cbd1().variance();
    let (e1, _) = rounding_variances();
    t.f_eps = (Q as f64 / Q2 as f64).powi(2) * (4.0 * N as f64 * s1 * e1 + e1);
    t
}

/// Without the ε2 term: revision 1's error (and the authors' C code's) is
/// exactly 769·e = 256·(g·r) + ν·f, one rounding, no second law.
pub fn without_eps2(mut t: Terms) -> Terms {
    t.eps2 = 0.0;
    t
}

/// 64 blocks of 8 coefficients (n/8), not n/16.
pub fn with_all_blocks(mut t: Terms) -> Terms {
    t.blocks = N as f64 / 8.0;
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reproduction gives the published 2^−157.55.
    #[test]
    fn published_estimator_is_reproduced() {
        let r = published().log2_rate();
        assert!((r + 157.55).abs() < 0.01, "2^{r}");
    }

    /// log2 of ∫ density over \[x0, x0 + width\] by the midpoint rule.
    fn log2_integral(density: impl Fn(f64) -> f64, x0: f64, width: f64) -> f64 {
        let steps = 400_000;
        let dx = width / steps as f64;
        (0..steps)
            .map(|i| density(x0 + (i as f64 + 0.5) * dx) * dx)
            .sum::<f64>()
            .log2()
    }

    /// The closed form of the χ²_8 tail against numerical integration of
    /// its density x³e^{−x/2}/96.
    #[test]
    fn chi2_8_tail_matches_integration() {
        for x0 in [1.0, 10.0, 60.0] {
            let integral = log2_integral(|x| x.powi(3) * (-x / 2.0).exp() / 96.0, x0, 400.0);
            assert!((log2_chi2_8_sf(x0) - integral).abs() < 1e-6, "x = {x0}");
        }
    }

    /// The Gaussian tail against numerical integration of the density.
    #[test]
    fn gaussian_tail_matches_integration() {
        let density = |x: f64| (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
        for x0 in [9.0, 12.8, 16.0] {
            let integral = log2_integral(density, x0, 4.0);
            assert!((log2_gaussian_tail(x0) - integral).abs() < 1e-5, "x = {x0}");
        }
    }

    /// With the corrections the estimator's variance is the model's
    /// (256²·128 + Var(ν)·1025)/769² in w units.
    #[test]
    fn corrected_variance_is_the_models() {
        let t = without_eps2(with_f_eps_corrected(published()));
        let w_units = t.variance() * (256.0 / 769.0f64).powi(2);
        let model = (256.0 * 256.0 * 128.0 + (769.0 * 769.0 - 1.0) / 12.0 * 1025.0) / (769.0 * 769.0);
        assert!((w_units - model).abs() < 1e-9, "{w_units} vs {model}");
    }
}
