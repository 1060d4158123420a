//! The eight coefficients of a block share f, g and r (definition §7's
//! second caution): the exact cumulant-generating function of a signed sum
//! of four of them under the model, by transfer matrices, and its tail by
//! a saddlepoint approximation.
//!
//! For positions k_1..k_4 and signs s_i, T = Σ s_i·e_{k_i} satisfies
//! 769·T = 256·Σ_j g_j·R_j + Σ_j ν_j·F_j with R_j = Σ_i s_i·r_{k_i−j} and
//! F_j = Σ_i s_i·f_{k_i−j} (indices negacyclic: a wrapped index negates).
//! Given f and r the terms are independent (g_j, ν_j appear once each), so
//!
//!   E\[e^{λT}\] = E_f\[Π_j M_ν(λF_j/769)\] · E_r\[Π_j M_g(256λR_j/769)\],
//!
//! each a product of one factor per window of a sequence of independent
//! values around a cycle (512 windows, a sign twist at the wrap): the trace
//! of a product of transfer matrices over the states "last L−1 values"
//! (L the span of the positions, ≤ 8: 3^7 states). The twist commutes with
//! the transfer matrix (the laws are symmetric, the factors even), so for a
//! long cycle the trace is λ_1^512 times one correction for the special
//! position f_0 = 2f'_0 + 1, from the Perron eigenvectors; the neglected
//! terms are (λ_2/λ_1)^(512 − L). The independent-coefficient model is the
//! case of four one-position patterns.

use crate::law::{Law, Rng};

/// A signed pattern of positions inside a block.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// Positions relative to the first (first is 0, increasing).
    pub offsets: Vec<usize>,
    /// ±1 per position.
    pub signs: Vec<i64>,
}

impl Pattern {
    /// The pattern of the bit mask `support` with sign bits `signs` (bit i
    /// set: the i-th position of the support is negated).
    pub fn from_mask(support: u8, signs: u8) -> Self {
        let positions: Vec<usize> = (0..8).filter(|j| support >> j & 1 == 1).collect();
        let first = positions[0];
        Pattern {
            offsets: positions.iter().map(|p| p - first).collect(),
            signs: (0..positions.len())
                .map(|i| if signs >> i & 1 == 1 { -1 } else { 1 })
                .collect(),
        }
    }

    fn span(&self) -> usize {
        self.offsets.last().map_or(1, |x| x + 1)
    }
}

/// Independent values with law `alphabet` along a cycle; one factor
/// φ(W) per window, W = Σ_i s_i·x_{p+d_i}.
pub struct Chain {
    alphabet: Vec<(i64, f64)>,
    pattern: Pattern,
    span: usize,
    states: usize,
    /// `(next state, W)` for (state, new value index), state-major.
    steps: Vec<(usize, i64)>,
    /// Warm start: last right and left Perron vectors.
    right: Vec<f64>,
    left: Vec<f64>,
    /// The last power iteration's contraction per step.
    contraction: f64,
    /// The state with every value negated (the twist at the wrap).
    negated: Vec<usize>,
    /// Largest estimated relative size of the terms the asymptotic trace
    /// neglects, over every call.
    pub max_neglected: f64,
}

impl Chain {
    /// The chain of `alphabet` (a symmetric law) under `pattern`.
    pub fn new(alphabet: &Law, pattern: &Pattern) -> Self {
        let alphabet: Vec<(i64, f64)> = alphabet.iter().filter(|x| x.1 > 0.0).collect();
        let span = pattern.span();
        let a = alphabet.len();
        let states = a.pow(span as u32 - 1);
        let mut chain = Chain {
            alphabet,
            pattern: pattern.clone(),
            span,
            states,
            steps: Vec::with_capacity(states * a),
            right: vec![1.0; states],
            left: vec![1.0; states],
            contraction: 0.0,
            negated: Vec::new(),
            max_neglected: 0.0,
        };
        chain.negated = (0..states).map(|s| chain.negate_state(s)).collect();
        for s in 0..states {
            for i in 0..a {
                let w = chain.window(s, chain.alphabet[i].0, None);
                chain.steps.push((chain.shift(s, i), w));
            }
        }
        chain
    }

    fn digit(&self, state: usize, d: usize) -> usize {
        state / self.alphabet.len().pow(d as u32) % self.alphabet.len()
    }

    fn shift(&self, state: usize, new: usize) -> usize {
        if self.span == 1 {
            0
        } else {
            state / self.alphabet.len() + new * self.alphabet.len().pow(self.span as u32 - 2)
        }
    }

    /// W of the window ending with `new`; `fixed` = (window index, value)
    /// overrides the state's digit there (the special position).
    fn window(&self, state: usize, new: i64, fixed: Option<(usize, i64)>) -> i64 {
        self.pattern
            .offsets
            .iter()
            .zip(&self.pattern.signs)
            .map(|(&d, &s)| {
                let v = match fixed {
                    Some((at, v)) if at == d => v,
                    _ if d == self.span - 1 => new,
                    _ => self.alphabet[self.digit(state, d)].0,
                };
                s * v
            })
            .sum()
    }

    /// Weights P(x)·φ(W) of every step.
    fn weights(&self, phi: &dyn Fn(i64) -> f64) -> Vec<f64> {
        let a = self.alphabet.len();
        self.steps
            .iter()
            .enumerate()
            .map(|(k, &(_, w))| self.alphabet[k % a].1 * phi(w))
            .collect()
    }

    /// Perron root, updating the warm-start eigenvectors; also the power
    /// iteration's contraction per step (≈ |λ_2/λ_1|), in `self.contraction`.
    fn perron(&mut self, wt: &[f64]) -> f64 {
        let a = self.alphabet.len();
        let mut root = 0.0;
        let mut contraction: f64 = 0.0;
        for (vec, forward) in [(&mut self.right, false), (&mut self.left, true)] {
            let mut changes: Vec<f64> = Vec::new();
            let mut capped = true;
            for _ in 0..20_000 {
                let mut next = vec![0.0; vec.len()];
                for s in 0..vec.len() {
                    for i in 0..a {
                        let k = s * a + i;
                        let t = self.steps[k].0;
                        if forward {
                            next[t] += vec[s] * wt[k];
                        } else {
                            next[s] += wt[k] * vec[t];
                        }
                    }
                }
                let total: f64 = next.iter().sum();
                let change: f64 = next.iter().zip(vec.iter()).map(|(x, y)| (x / total - y).abs()).sum();
                for (v, x) in vec.iter_mut().zip(&next) {
                    *v = x / total;
                }
                root = total; // vec summed to 1 before the step
                changes.push(change);
                // Converged, or at the rounding floor (no progress in 5 steps).
                let k = changes.len();
                if change < 1e-14 || (change < 1e-11 && k > 5 && change >= changes[k - 6]) {
                    capped = false;
                    break;
                }
            }
            // Contraction from the geometric decay between 1e-3 and 1e-10,
            // above the rounding floor.
            let from = changes.iter().position(|&c| c < 1e-3);
            let to = changes.iter().rposition(|&c| c > 1e-10);
            if let (Some(i), Some(j)) = (from, to) {
                if j > i {
                    contraction = contraction.max((changes[j] / changes[i]).powf(1.0 / (j - i) as f64));
                }
            }
            if capped {
                contraction = 1.0;
            }
        }
        self.contraction = contraction;
        root
    }

    /// The state with every value negated (the twist at the wrap).
    fn negate_state(&self, s: usize) -> usize {
        let a = self.alphabet.len();
        (0..self.span - 1)
            .map(|d| {
                let v = -self.alphabet[self.digit(s, d)].0;
                let i = self.alphabet.iter().position(|x| x.0 == v).expect("symmetric alphabet");
                i * a.pow(d as u32)
            })
            .sum()
    }

    /// Spectral radius of the transfer matrix on vectors odd under the
    /// twist (v = −Pv), by power iteration from a fixed odd vector.
    fn odd_radius(&self, wt: &[f64]) -> f64 {
        let a = self.alphabet.len();
        let odd = |v: &mut Vec<f64>| {
            let p: Vec<f64> = self.negated.iter().map(|&s| v[s]).collect();
            for (x, y) in v.iter_mut().zip(p) {
                *x = (*x - y) / 2.0;
            }
        };
        let mut v: Vec<f64> = (0..self.states).map(|s| ((s * 7919) % 1009) as f64 / 1009.0).collect();
        odd(&mut v);
        let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let mut log_growth = 0.0;
        let (warm, steps) = (30, 30);
        for step in 0..warm + steps {
            let n0 = norm(&v);
            if n0 == 0.0 {
                return 0.0;
            }
            let mut next = vec![0.0; v.len()];
            for (s, x) in next.iter_mut().enumerate() {
                for i in 0..a {
                    *x += wt[s * a + i] * v[self.steps[s * a + i].0];
                }
            }
            odd(&mut next);
            let n1 = norm(&next);
            if step >= warm {
                log_growth += (n1 / n0).ln();
            }
            v = next.iter().map(|x| x / n1).collect();
        }
        (log_growth / steps as f64).exp()
    }

    /// ln E\[Π_j φ(W_j)\] over a cycle of `n` windows, asymptotically in n:
    /// n·ln λ_1 plus, when `special` is given (the law of the value at one
    /// position), the correction wᵀBv/(λ_1^L wᵀv) for that position.
    pub fn log_expectation(&mut self, phi: &dyn Fn(i64) -> f64, n: usize, special: Option<&Law>) -> f64 {
        let wt = self.weights(phi);
        let root = self.perron(&wt);
        // The neglected terms of the trace are ≈ (λ_2/λ_1)^(n − L), λ_2 the
        // next eigenvalue among vectors even under the twist (the power
        // iteration's contraction) or the largest among odd ones.
        let ratio = self.contraction.max(self.odd_radius(&wt) / root);
        // Relative error of the expectation (so of the tail), kept for the
        // caller to check.
        let neglected = ratio.powi((n - self.span) as i32);
        self.max_neglected = self.max_neglected.max(neglected);
        let mut result = n as f64 * root.ln();
        if let Some(special) = special {
            let b = self.special_block(phi, special, &self.left);
            let wbv: f64 = b.iter().zip(&self.right).map(|(x, y)| x * y).sum();
            let wv: f64 = self.left.iter().zip(&self.right).map(|(x, y)| x * y).sum();
            result += (wbv / wv).ln() - self.span as f64 * root.ln();
        }
        result
    }

    /// The row vector `start` carried over the L steps that read the special
    /// position and the L − 1 after it (the windows that contain it).
    fn special_block(&self, phi: &dyn Fn(i64) -> f64, special: &Law, start: &[f64]) -> Vec<f64> {
        let values: Vec<(i64, f64)> = special.iter().filter(|x| x.1 > 0.0).collect();
        let mut rows: Vec<Vec<f64>> = values
            .iter()
            .map(|&(v, q)| {
                let mut row = vec![0.0; self.states];
                for (s, &x) in start.iter().enumerate() {
                    row[self.shift(s, 0)] += x * q * phi(self.window(s, v, None));
                }
                row
            })
            .collect();
        for k in 1..self.span {
            for (row, &(v, _)) in rows.iter_mut().zip(&values) {
                let mut next = vec![0.0; self.states];
                for (s, &x) in row.iter().enumerate() {
                    for (i, &(new, p)) in self.alphabet.iter().enumerate() {
                        next[self.shift(s, i)] += x * p * phi(self.window(s, new, Some((self.span - 1 - k, v))));
                    }
                }
                *row = next;
            }
        }
        (0..self.states).map(|s| rows.iter().map(|r| r[s]).sum()).collect()
    }

    /// E\[Π_j φ(W_j)\] over a cycle of exactly `n` windows with the sign twist
    /// and the special position: the trace, summed over the initial state
    /// (A^{2(L−1)}·n work: for tests).
    #[cfg(test)]
    pub fn exact_cycle(&self, phi: &dyn Fn(i64) -> f64, n: usize, special: &Law) -> f64 {
        let a = self.alphabet.len();
        let wt = self.weights(phi);
        let mut total = 0.0;
        for s0 in 0..self.states {
            let mut start = vec![0.0; self.states];
            start[s0] = 1.0;
            let mut row = self.special_block(phi, special, &start);
            for _ in self.span..n {
                let mut next = vec![0.0; self.states];
                for (s, &x) in row.iter().enumerate() {
                    for i in 0..a {
                        next[self.steps[s * a + i].0] += x * wt[s * a + i];
                    }
                }
                row = next;
            }
            total += row[self.negated[s0]];
        }
        total
    }
}

/// The cumulant-generating function of T for one pattern under the model.
pub struct SharedCgf {
    f_chain: Chain,
    r_chain: Chain,
    nu: Law,
    g: Law,
    f0: Law,
    n: usize,
}

impl SharedCgf {
    /// Shared f, g, r: one chain over f' values ×2 with f_0 special, one
    /// over r.
    pub fn new(pattern: &Pattern, nu: &Law, fprime: &Law, g: &Law, r: &Law, n: usize) -> Self {
        SharedCgf {
            f_chain: Chain::new(&fprime.map(|v| 2 * v), pattern),
            r_chain: Chain::new(r, pattern),
            nu: nu.clone(),
            g: g.clone(),
            f0: fprime.map(|v| 2 * v + 1),
            n,
        }
    }

    /// Largest relative error the asymptotic traces have neglected so far.
    pub fn neglected(&self) -> f64 {
        self.f_chain.max_neglected.max(self.r_chain.max_neglected)
    }

    /// K(λ) = ln E\[e^{λT}\].
    pub fn k(&mut self, lambda: f64) -> f64 {
        let mgf = |law: &Law, a: f64| -> f64 { law.iter().map(|(v, q)| q * (a * v as f64).exp()).sum() };
        let nu_table: Vec<f64> = (-16..=16).map(|w| mgf(&self.nu, lambda * w as f64 / 769.0)).collect();
        let phi_f = |w: i64| nu_table[(w + 16) as usize];
        let g_table: Vec<f64> = (-8..=8)
            .map(|w| mgf(&self.g, 256.0 * lambda * w as f64 / 769.0))
            .collect();
        let phi_r = |w: i64| g_table[(w + 8) as usize];
        let f0 = self.f0.clone();
        self.f_chain.log_expectation(&phi_f, self.n, Some(&f0)) + self.r_chain.log_expectation(&phi_r, self.n, None)
    }
}

/// Saddlepoint tail P(T ≥ t) for an integer-valued T with CGF `k`
/// (Daniels' lattice form): e^{K(λ̂) − λ̂t} / ((1 − e^{−λ̂})·√(2πK''(λ̂))),
/// K'(λ̂) = t; derivatives by central differences. Returns (tail, λ̂).
pub fn saddlepoint_tail(k: &mut dyn FnMut(f64) -> f64, t: f64, variance: f64) -> (f64, f64) {
    let h = 1e-3;
    let mut lambda = t / variance;
    let (mut k0, mut k2) = (0.0, variance);
    for _ in 0..30 {
        let (km, kp) = (k(lambda - h), k(lambda + h));
        k0 = k(lambda);
        let k1 = (kp - km) / (2.0 * h);
        k2 = (kp - 2.0 * k0 + km) / (h * h);
        let step = (k1 - t) / k2;
        lambda -= step;
        if step.abs() < 1e-10 {
            k0 = k(lambda);
            break;
        }
    }
    let log_tail = k0 - lambda * t - (1.0 - (-lambda).exp()).ln() - 0.5 * (2.0 * std::f64::consts::PI * k2).ln();
    (log_tail.exp(), lambda)
}

/// ln M, d/da ln M and d²/da² ln M of a law at a.
fn log_mgf(law: &Law, a: f64) -> (f64, f64, f64) {
    let (mut m0, mut m1, mut m2) = (0.0, 0.0, 0.0);
    for (v, q) in law.iter() {
        let x = v as f64;
        let t = q * (a * x).exp();
        m0 += t;
        m1 += t * x;
        m2 += t * x * x;
    }
    (m0.ln(), m1 / m0, m2 / m0 - (m1 / m0).powi(2))
}

/// The same for the uniform law on \[−h, h\], in closed form.
fn log_mgf_uniform(h: i64, a: f64) -> (f64, f64, f64) {
    if a == 0.0 {
        return (0.0, 0.0, (h * (h + 1)) as f64 / 3.0);
    }
    let n = (2 * h + 1) as f64;
    let (x, y) = (n * a / 2.0, a / 2.0);
    (
        (x.sinh() / (n * y.sinh())).ln(),
        n / 2.0 / x.tanh() - 0.5 / y.tanh(),
        -(n / 2.0 / x.sinh()).powi(2) + (0.5 / y.sinh()).powi(2),
    )
}

/// A cross-check of \[`SharedCgf`\]'s tail that never applies a saddlepoint
/// to a dependent sum: draw f and r (the shared secrets), compute
/// P(T ≥ t | f, r) — a sum of independent terms g_j·R_j/769·256 and
/// ν_j·F_j/769 — by the saddlepoint of its exact conditional CGF (accurate
/// to ~0.01 bit on such sums), and average. The rare keys that dominate
/// the average are drawn by importance sampling: f' and r from the chains
/// tilted at `lambda` (the Doob transform of the transfer matrix; λ = 0 is
/// plain sampling), every draw weighted by its exact likelihood ratio, so
/// the estimate is unbiased whatever the tilt. With `independent`, each
/// position gets its own f, r, g and ν (the independent-coefficient model).
/// Returns (mean, standard error).
#[allow(clippy::too_many_arguments)]
pub fn conditional_monte_carlo(
    pattern: &Pattern,
    nu_half_width: i64,
    fprime: &Law,
    g: &Law,
    r: &Law,
    t: f64,
    lambda: f64,
    samples: usize,
    seed: u64,
    independent: bool,
) -> (f64, f64) {
    let n = 512usize;
    let mut rng = Rng(seed);
    let groups: Vec<Pattern> = if independent {
        pattern
            .signs
            .iter()
            .map(|&s| Pattern {
                offsets: vec![0],
                signs: vec![s],
            })
            .collect()
    } else {
        vec![pattern.clone()]
    };
    let phi_f = |w: i64| log_mgf_uniform(nu_half_width, lambda * w as f64 / 769.0).0.exp();
    let phi_r = |w: i64| log_mgf(g, 256.0 * lambda * w as f64 / 769.0).0.exp();
    let chains: Vec<(Chain, Chain)> = groups
        .iter()
        .map(|p| {
            let mut fc = Chain::new(&fprime.map(|v| 2 * v), p);
            let mut rc = Chain::new(r, p);
            let (wf, wr) = (fc.weights(&phi_f), rc.weights(&phi_r));
            fc.perron(&wf);
            rc.perron(&wr);
            (fc, rc)
        })
        .collect();
    let (mut sum, mut sum2) = (0.0, 0.0);
    for _ in 0..samples {
        let mut f_count = [0u32; 33];
        let mut r_count = [0u32; 17];
        let mut log_weight = 0.0;
        for (group, (fc, rc)) in groups.iter().zip(&chains) {
            let (mut f, wf) = fc.draw_tilted(&mut rng, &phi_f, n);
            let (r, wr) = rc.draw_tilted(&mut rng, &phi_r, n);
            log_weight += wf + wr;
            f[0] += 1;
            for j in 0..n {
                let (mut fw, mut rw) = (0i64, 0i64);
                for (&d, &s) in group.offsets.iter().zip(&group.signs) {
                    let idx = d as i64 - j as i64;
                    let (at, sign) = if idx < 0 {
                        ((idx + n as i64) as usize, -1)
                    } else {
                        (idx as usize, 1)
                    };
                    fw += s * sign * f[at];
                    rw += s * sign * r[at];
                }
                f_count[(fw + 16) as usize] += 1;
                r_count[(rw + 8) as usize] += 1;
            }
        }
        let k = |l: f64| -> (f64, f64, f64) {
            let mut acc = (0.0, 0.0, 0.0);
            for (w, &c) in f_count.iter().enumerate().filter(|x| *x.1 > 0) {
                let s = (w as f64 - 16.0) / 769.0;
                let (a, b, d) = log_mgf_uniform(nu_half_width, l * s);
                acc = (
                    acc.0 + c as f64 * a,
                    acc.1 + c as f64 * s * b,
                    acc.2 + c as f64 * s * s * d,
                );
            }
            for (w, &c) in r_count.iter().enumerate().filter(|x| *x.1 > 0) {
                let s = 256.0 * (w as f64 - 8.0) / 769.0;
                let (a, b, d) = log_mgf(g, l * s);
                acc = (
                    acc.0 + c as f64 * a,
                    acc.1 + c as f64 * s * b,
                    acc.2 + c as f64 * s * s * d,
                );
            }
            acc
        };
        let mut l = t / k(0.0).2;
        for _ in 0..50 {
            let (_, k1, k2) = k(l);
            let step = (k1 - t) / k2;
            l -= step;
            if step.abs() < 1e-12 * l {
                break;
            }
        }
        let (k0, _, k2) = k(l);
        let log_p = k0 - l * t - (1.0 - (-l).exp()).ln() - 0.5 * (2.0 * std::f64::consts::PI * k2).ln();
        let x = (log_p + log_weight).exp();
        sum += x;
        sum2 += x * x;
    }
    let mean = sum / samples as f64;
    let var = (sum2 / samples as f64 - mean * mean).max(0.0);
    (mean, (var / samples as f64).sqrt())
}

impl Chain {
    /// A sequence of `n` values: the first L − 1 from the law, the rest
    /// from the chain tilted by φ (right eigenvector from the last
    /// \[`Chain::perron`\]); returns the values and
    /// ln(P(x)/Q(x)), the likelihood ratio of the law to the proposal.
    fn draw_tilted(&self, rng: &mut Rng, phi: &dyn Fn(i64) -> f64, n: usize) -> (Vec<i64>, f64) {
        let a = self.alphabet.len();
        let law = Law::from_pairs(self.alphabet.iter().copied());
        let mut values = Vec::with_capacity(n);
        let mut state = 0usize;
        for m in 0..self.span - 1 {
            let v = rng.draw(&law);
            let i = self.alphabet.iter().position(|x| x.0 == v).unwrap_or(0);
            values.push(v);
            state += i * a.pow(m as u32);
        }
        let mut log_ratio = 0.0;
        let mut q = vec![0.0; a];
        for _ in self.span - 1..n {
            let mut total = 0.0;
            for (i, slot) in q.iter_mut().enumerate() {
                let (next, w) = self.steps[state * a + i];
                *slot = self.alphabet[i].1 * phi(w) * self.right[next];
                total += *slot;
            }
            let u = rng.unit() * total;
            let mut acc = 0.0;
            let mut pick = a - 1;
            for (i, &x) in q.iter().enumerate() {
                acc += x;
                if u < acc {
                    pick = i;
                    break;
                }
            }
            let (next, w) = self.steps[state * a + pick];
            log_ratio += total.ln() - phi(w).ln() - self.right[next].ln();
            values.push(self.alphabet[pick].0);
            state = next;
        }
        (values, log_ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cbd1;

    fn phi_test(w: i64) -> f64 {
        (0.3 * w as f64).cosh() + 0.01 * (w * w) as f64
    }

    /// The exact cycle trace against brute-force enumeration of f over a
    /// small negacyclic ring (n = 9), from the definition of F_j, for
    /// every position of the pattern (the value must not depend on it).
    #[test]
    fn transfer_matrix_trace_matches_brute_force() {
        let n = 9usize;
        let fprime = cbd1();
        let regular = fprime.map(|v| 2 * v);
        let special = fprime.map(|v| 2 * v + 1);
        let pattern = Pattern::from_mask(0b1101, 0b0100);
        let chain = Chain::new(&regular, &pattern);
        let trace = chain.exact_cycle(&phi_test, n, &special);
        let reg: Vec<(i64, f64)> = regular.iter().filter(|x| x.1 > 0.0).collect();
        let spec: Vec<(i64, f64)> = special.iter().filter(|x| x.1 > 0.0).collect();
        for base in 0..n - pattern.span() {
            let mut brute = 0.0;
            for code in 0..3usize.pow(n as u32) {
                let digit = |i: usize| code / 3usize.pow(i as u32) % 3;
                let (f0, p0) = spec[digit(0)];
                let mut f = vec![f0];
                let mut prob = p0;
                for i in 1..n {
                    let (v, p) = reg[digit(i)];
                    f.push(v);
                    prob *= p;
                }
                let mut product = 1.0;
                for j in 0..n as i64 {
                    let w: i64 = pattern
                        .offsets
                        .iter()
                        .zip(&pattern.signs)
                        .map(|(&d, &s)| {
                            let idx = (base + d) as i64 - j;
                            s * if idx < 0 {
                                -f[(idx + n as i64) as usize]
                            } else {
                                f[idx as usize]
                            }
                        })
                        .sum();
                    product *= phi_test(w);
                }
                brute += prob * product;
            }
            assert!((brute - trace).abs() < 1e-12 * brute, "base {base}: {brute} vs {trace}");
        }
    }

    /// The asymptotic formula (Perron root and the special position's
    /// correction) against the exact trace, for the factors of the model at
    /// λ = 0.6 (the saddlepoints lie near 0.5–0.6), on cycles of 512 and of
    /// 150 windows.
    #[test]
    fn perron_formula_matches_exact_trace() {
        let b1 = cbd1();
        let special = b1.map(|v| 2 * v + 1);
        let lambda = 0.6;
        let phi_f = |w: i64| log_mgf_uniform(384, lambda * w as f64 / 769.0).0.exp();
        let phi_r = |w: i64| log_mgf(&b1, 256.0 * lambda * w as f64 / 769.0).0.exp();
        for (support, signs) in [(0b1111u8, 0b0000u8), (0b110011, 0b0101), (0b1010101, 0), (0b1, 0)] {
            let pattern = Pattern::from_mask(support, signs);
            let mut f = Chain::new(&b1.map(|v| 2 * v), &pattern);
            let mut r = Chain::new(&b1, &pattern);
            for n in [150, 512] {
                let exact = f.exact_cycle(&phi_f, n, &special).ln();
                let asymptotic = f.log_expectation(&phi_f, n, Some(&special));
                assert!(
                    (exact - asymptotic).abs() < 1e-10,
                    "{support:b}, n = {n}: {exact} vs {asymptotic}"
                );
                assert!(f.max_neglected < 1e-10, "{}", f.max_neglected);
                let point = Law::point(0).conv(&b1);
                let exact = r.exact_cycle(&phi_r, n, &point).ln();
                let asymptotic = r.log_expectation(&phi_r, n, None);
                assert!(
                    (exact - asymptotic).abs() < 1e-10,
                    "r {support:b}, n = {n}: {exact} vs {asymptotic}"
                );
            }
        }
    }

    /// A strongly coupled chain (large factors) has a small spectral gap
    /// (in the sector odd under the twist): the estimate of the neglected
    /// terms reports it, and bounds the formula's actual error.
    #[test]
    fn small_spectral_gap_is_reported() {
        let b1 = cbd1();
        let special = b1.map(|v| 2 * v + 1);
        let mut chain = Chain::new(&b1.map(|v| 2 * v), &Pattern::from_mask(0b110011, 0b0101));
        let asymptotic = chain.log_expectation(&phi_test, 512, Some(&special));
        let error = (chain.exact_cycle(&phi_test, 512, &special).ln() - asymptotic).abs();
        assert!(error > 1e-6, "{error}");
        assert!(chain.max_neglected >= error, "{} < {error}", chain.max_neglected);
    }

    /// For one position the chain has no memory: K is the closed form.
    #[test]
    fn single_position_cgf_is_the_closed_form() {
        let b1 = cbd1();
        let nu = Law::from_pairs((-384..=384).map(|v| (v, 1.0 / 769.0)));
        let mut cgf = SharedCgf::new(&Pattern::from_mask(1, 0), &nu, &b1, &b1, &b1, 512);
        let lambda = 0.9;
        let mgf = |law: &Law, a: f64| -> f64 { law.iter().map(|(v, q)| q * (a * v as f64).exp()).sum() };
        let term = |f: i64| mgf(&nu, lambda * f as f64 / 769.0);
        let f_part = 511.0 * (0.25 * term(-2) + 0.5 * term(0) + 0.25 * term(2)).ln()
            + (0.25 * term(-1) + 0.5 * term(1) + 0.25 * term(3)).ln();
        let gr = b1.product(&b1);
        let r_part = 512.0 * mgf(&gr, 256.0 * lambda / 769.0).ln();
        let k = cgf.k(lambda);
        assert!((k - f_part - r_part).abs() < 1e-10, "{k} vs {}", f_part + r_part);
    }

    /// The importance-sampled conditional Monte Carlo agrees with the
    /// transfer-matrix saddlepoint on a shared pattern and on independent
    /// coefficients; sharing raises the tail by more than 8 bits; the
    /// shared CGF keeps the variance 4·Var(e) (the covariances average 0).
    #[test]
    fn importance_sampling_agrees_with_the_transfer_matrix() {
        let b1 = cbd1();
        let nu = Law::from_pairs((-384..=384).map(|v| (v, 1.0 / 769.0)));
        let var = 4.0 * (256.0 * 256.0 * 128.0 + 49280.0 * 1025.0) / (769.0 * 769.0);
        let pattern = Pattern::from_mask(0b0000_1111, 0b0101);
        let mut cgf = SharedCgf::new(&pattern, &nu, &b1, &b1, &b1, 512);
        let h = 1e-2;
        let k2 = (cgf.k(h) - 2.0 * cgf.k(0.0) + cgf.k(-h)) / (h * h);
        assert!((k2 - var).abs() < 1e-3 * var, "{k2} vs {var}");
        let (tail, lambda) = saddlepoint_tail(&mut |l| cgf.k(l), 256.0, var);
        let est = conditional_monte_carlo(&pattern, 384, &b1, &b1, &b1, 256.0, lambda, 1500, 9, false);
        assert!((est.0 - tail).abs() <= 5.0 * est.1 + 0.02 * tail, "{est:?} vs {tail}");
        let mut one = SharedCgf::new(&Pattern::from_mask(1, 0), &nu, &b1, &b1, &b1, 512);
        let (indep, l4) = saddlepoint_tail(&mut |l| 4.0 * one.k(l), 256.0, var);
        let est = conditional_monte_carlo(&pattern, 384, &b1, &b1, &b1, 256.0, l4, 1500, 10, true);
        assert!(
            (est.0 - indep).abs() <= 5.0 * est.1 + 0.02 * indep,
            "{est:?} vs {indep}"
        );
        assert!((tail / indep).log2() > 8.0, "{}", (tail / indep).log2());
    }

    /// The saddlepoint tail of a Binomial(400, 1/2) − 200 against the exact
    /// tail, 12 standard deviations out: within 2%.
    #[test]
    fn saddlepoint_tail_is_accurate_on_a_binomial() {
        let n = 400.0;
        let mut k = |l: f64| n * ((1.0 + l.exp()) / 2.0).ln() - l * n / 2.0;
        let (tail, _) = saddlepoint_tail(&mut k, 120.0, n / 4.0);
        let exact = Law::from_pairs([(0, 0.5), (1, 0.5)]).pow(400).tail_ge(320);
        assert!((tail / exact - 1.0).abs() < 0.02, "{tail} vs {exact}");
    }
}
