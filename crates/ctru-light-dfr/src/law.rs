//! Probability laws on the integers, combined by exact summation of
//! non-negative terms (no FFT), so tail probabilities far below 2^-52 keep
//! their relative precision.

/// A law on the integers `offset .. offset + p.len()`.
#[derive(Clone, Debug, PartialEq)]
pub struct Law {
    /// The value of `p[0]`.
    pub offset: i64,
    /// Probabilities.
    pub p: Vec<f64>,
}

impl Law {
    /// The law of a constant.
    pub fn point(v: i64) -> Self {
        Law {
            offset: v,
            p: vec![1.0],
        }
    }

    /// The law putting mass `q` on `v` for every pair (repeated values add).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (i64, f64)>) -> Self {
        let pairs: Vec<(i64, f64)> = pairs.into_iter().collect();
        let lo = pairs.iter().map(|x| x.0).min().unwrap_or(0);
        let hi = pairs.iter().map(|x| x.0).max().unwrap_or(0);
        let mut p = vec![0.0; (hi - lo + 1) as usize];
        for (v, q) in pairs {
            p[(v - lo) as usize] += q;
        }
        Law { offset: lo, p }
    }

    /// Largest value in the support array.
    pub fn max(&self) -> i64 {
        self.offset + self.p.len() as i64 - 1
    }

    /// P(X = v).
    pub fn prob(&self, v: i64) -> f64 {
        usize::try_from(v - self.offset)
            .ok()
            .and_then(|i| self.p.get(i).copied())
            .unwrap_or(0.0)
    }

    /// (value, probability) pairs, zero masses included.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (i64, f64)> + '_ {
        self.p.iter().enumerate().map(|(i, &q)| (self.offset + i as i64, q))
    }

    /// Total mass.
    pub fn total(&self) -> f64 {
        self.p.iter().sum()
    }

    /// E\[X\].
    pub fn mean(&self) -> f64 {
        self.iter().map(|(v, q)| v as f64 * q).sum::<f64>() / self.total()
    }

    /// E\[(X − E\[X\])^k\].
    pub fn central_moment(&self, k: i32) -> f64 {
        let m = self.mean();
        self.iter().map(|(v, q)| (v as f64 - m).powi(k) * q).sum::<f64>() / self.total()
    }

    /// Var\[X\].
    pub fn variance(&self) -> f64 {
        self.central_moment(2)
    }

    /// The law of X + Y for independent X ~ self, Y ~ other.
    pub fn conv(&self, other: &Law) -> Law {
        let mut p = vec![0.0; self.p.len() + other.p.len() - 1];
        for (i, &a) in self.p.iter().enumerate() {
            if a == 0.0 {
                continue;
            }
            for (j, &b) in other.p.iter().enumerate() {
                p[i + j] += a * b;
            }
        }
        Law {
            offset: self.offset + other.offset,
            p,
        }
    }

    /// The law of the sum of k independent copies (binary powering).
    pub fn pow(&self, k: usize) -> Law {
        let mut result = Law::point(0);
        let mut square = self.clone();
        let mut k = k;
        while k > 0 {
            if k & 1 == 1 {
                result = result.conv(&square);
            }
            k >>= 1;
            if k > 0 {
                square = square.conv(&square);
            }
        }
        result
    }

    /// The law of f(X).
    pub fn map(&self, f: impl Fn(i64) -> i64) -> Law {
        Law::from_pairs(self.iter().filter(|x| x.1 != 0.0).map(|(v, q)| (f(v), q)))
    }

    /// The law of X·Y for independent X ~ self, Y ~ other.
    pub fn product(&self, other: &Law) -> Law {
        Law::from_pairs(
            self.iter()
                .flat_map(|(x, p)| other.iter().map(move |(y, q)| (x * y, p * q)))
                .filter(|x| x.1 != 0.0),
        )
    }

    /// P(X ≥ t), summed from the far end (smallest terms first).
    pub fn tail_ge(&self, t: i64) -> f64 {
        self.iter().rev().take_while(|x| x.0 >= t).map(|x| x.1).sum()
    }

    /// P(X ≤ t), summed from the far end.
    pub fn tail_le(&self, t: i64) -> f64 {
        self.iter().take_while(|x| x.0 <= t).map(|x| x.1).sum()
    }

    /// The same law divided by its total mass.
    pub fn normalized(mut self) -> Law {
        let total = self.total();
        for q in self.p.iter_mut() {
            *q /= total;
        }
        self
    }

    /// `Some(h)` if the law is uniform on \[−h, h\] (to 1e-12 relative).
    pub fn uniform_half_width(&self) -> Option<i64> {
        let h = self.max();
        let each = 1.0 / (2 * h + 1) as f64;
        (self.offset == -h && self.p.iter().all(|&q| ((q - each) / each).abs() < 1e-12)).then_some(h)
    }

    /// Whether P(X = v) = P(X = −v) for every v (to 1e-12 relative).
    pub fn is_symmetric(&self) -> bool {
        self.iter().all(|(v, q)| {
            let r = self.prob(-v);
            (q - r).abs() <= 1e-12 * q.max(r)
        })
    }
}

/// splitmix64: reproducible draws for the Monte Carlo and the empirical check.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform on \[0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Random bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let x = self.next().to_le_bytes();
            chunk.copy_from_slice(&x[..chunk.len()]);
        }
    }

    /// A draw from `law` by its distribution function.
    pub fn draw(&mut self, law: &Law) -> i64 {
        let u = self.unit();
        let mut acc = 0.0;
        for (v, q) in law.iter() {
            acc += q;
            if u < acc {
                return v;
            }
        }
        law.max()
    }
}

/// Sums of a law over windows of an arithmetic progression, in O(1) each
/// from prefix and suffix sums: a window right of the mode is a difference
/// of two suffix sums (both small, no cancellation against the bulk), left
/// of it two prefix sums, around it the total minus both tails. For a
/// unimodal law the relative error stays near ε·(mass beyond the window)/
/// (mass of the window), small unless the window is tiny against the law's
/// width.
pub struct WindowSums {
    offset: i64,
    stride: usize,
    mode: usize,
    pre: Vec<f64>,
    suf: Vec<f64>,
    class_total: Vec<f64>,
}

impl WindowSums {
    /// Prefix and suffix sums of `law` along each residue class mod `stride`.
    pub fn new(law: &Law, stride: usize) -> Self {
        let n = law.p.len();
        let mut pre = law.p.clone();
        for i in stride..n {
            pre[i] += pre[i - stride];
        }
        let mut suf = law.p.clone();
        for i in (0..n.saturating_sub(stride)).rev() {
            suf[i] += suf[i + stride];
        }
        let class_total = (0..stride).map(|c| if c < n { suf[c] } else { 0.0 }).collect();
        let mode = law
            .p
            .iter()
            .enumerate()
            .fold((0, f64::MIN), |best, (i, &q)| if q > best.1 { (i, q) } else { best })
            .0;
        WindowSums {
            offset: law.offset,
            stride,
            mode,
            pre,
            suf,
            class_total,
        }
    }

    /// Σ P(X = a + stride·i) over a + stride·i ≤ b.
    pub fn sum(&self, a: i64, b: i64) -> f64 {
        let s = self.stride as i64;
        let n = self.pre.len() as i64;
        let (mut ia, mut ib) = (a - self.offset, b - self.offset);
        if ia < 0 {
            ia += (-ia + s - 1) / s * s;
        }
        if ib < ia {
            return 0.0;
        }
        ib = ia + (ib - ia) / s * s;
        if ib >= n {
            ib -= (ib - n + s) / s * s;
        }
        if ib < ia {
            return 0.0;
        }
        let (ia, ib) = (ia as usize, ib as usize);
        let suf_after = self.suf.get(ib + self.stride).copied().unwrap_or(0.0);
        let pre_before = if ia >= self.stride {
            self.pre[ia - self.stride]
        } else {
            0.0
        };
        let w = if ia >= self.mode {
            self.suf[ia] - suf_after
        } else if ib <= self.mode {
            self.pre[ib] - pre_before
        } else {
            self.class_total[ia % self.stride] - suf_after - pre_before
        };
        w.max(0.0)
    }
}

/// The law of X + U for U uniform on \[−h, h\] independent of X, by window
/// sums.
pub fn add_uniform(law: &Law, h: i64) -> Law {
    let sums = WindowSums::new(law, 1);
    let scale = 1.0 / (2 * h + 1) as f64;
    let offset = law.offset - h;
    let p = (0..law.p.len() + 2 * h as usize)
        .map(|i| {
            let x = offset + i as i64;
            sums.sum(x - h, x + h) * scale
        })
        .collect();
    Law { offset, p }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Largest relative difference where either law has mass above 1e-300.
    fn max_rel_diff(a: &Law, b: &Law) -> f64 {
        let lo = a.offset.min(b.offset);
        let hi = a.max().max(b.max());
        (lo..=hi)
            .map(|v| (a.prob(v), b.prob(v)))
            .filter(|(x, y)| x.max(*y) > 1e-300)
            .map(|(x, y)| (x - y).abs() / x.max(y))
            .fold(0.0, f64::max)
    }

    #[test]
    fn convolution_of_bernoullis_is_binomial() {
        let bernoulli = Law::from_pairs([(0, 0.7), (1, 0.3)]);
        let b = bernoulli.pow(20);
        let mut c = 1.0f64; // C(20, k)
        for k in 0..=20i64 {
            let exact = c * 0.3f64.powi(k as i32) * 0.7f64.powi(20 - k as i32);
            assert!((b.prob(k) - exact).abs() <= 1e-13 * exact, "k = {k}");
            c = c * (20 - k) as f64 / (k + 1) as f64;
        }
        assert!((b.total() - 1.0).abs() < 1e-14);
        assert!((b.variance() - 20.0 * 0.21).abs() < 1e-12);
    }

    #[test]
    fn convolution_adds_means_and_variances() {
        let a = Law::from_pairs([(-3, 0.2), (0, 0.5), (4, 0.3)]);
        let b = Law::from_pairs([(1, 0.6), (2, 0.4)]);
        let c = a.conv(&b).pow(3);
        assert!((c.mean() - 3.0 * (a.mean() + b.mean())).abs() < 1e-12);
        assert!((c.variance() - 3.0 * (a.variance() + b.variance())).abs() < 1e-10);
        assert_eq!(c.offset, -6);
        assert_eq!(c.max(), 18);
    }

    /// Window sums against direct summation, deep into the tails: the sum of
    /// 12 uniforms on \[−5, 5\] by `add_uniform` and by direct convolution.
    #[test]
    fn uniform_window_convolution_keeps_tail_precision() {
        let u = Law::from_pairs((-5..=5).map(|v| (v, 1.0 / 11.0)));
        let direct = u.pow(12);
        let mut by_windows = Law::point(0);
        for _ in 0..12 {
            by_windows = add_uniform(&by_windows, 5);
        }
        let d = max_rel_diff(&direct, &by_windows);
        assert!(d < 1e-12, "relative difference {d}");
        assert!(by_windows.prob(60) > 0.0 && by_windows.prob(60) < 1e-12);
    }

    /// Window sums along a residue class (stride 3) against a direct sum.
    #[test]
    fn strided_window_sums_match_direct_sums() {
        let law = Law::from_pairs([(-2, 0.1), (-1, 0.2)])
            .conv(&Law::from_pairs([(0, 0.5), (3, 0.25), (7, 0.25)]))
            .pow(5);
        let sums = WindowSums::new(&law, 3);
        for a in law.offset - 4..=law.max() + 4 {
            for len in [0i64, 1, 2, 5, 9, 40] {
                let b = a + 3 * len;
                let direct: f64 = (0..=len).map(|i| law.prob(a + 3 * i)).sum();
                let w = sums.sum(a, b + 2); // b + 2 is rounded down to b
                assert!(
                    (w - direct).abs() <= 1e-14 + 1e-12 * direct,
                    "a = {a}, len = {len}: {w} vs {direct}"
                );
            }
        }
    }
}
