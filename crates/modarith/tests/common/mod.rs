//! Test helpers: a small deterministic PRNG and reference arithmetic.
#![allow(dead_code)]

/// The workspace's seeded generator (ChaCha20, via avr-sim's harness).
pub struct Rng(Box<dyn FnMut() -> u64>);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(Box::new(avr_sim::harness::random(seed)))
    }
    pub fn next_u64(&mut self) -> u64 {
        (self.0)()
    }
    /// Uniform in (−q, q), with the extremes ±(q−1) and 0 made frequent.
    pub fn coeff(&mut self, q: u16) -> i16 {
        let q = q as i64;
        let r = self.next_u64();
        match r % 16 {
            0 => (q - 1) as i16,
            1 => (1 - q) as i16,
            2 => 0,
            _ => ((r >> 8) as i64 % (2 * q - 1) - (q - 1)) as i16,
        }
    }
    pub fn poly<const N: usize>(&mut self, q: u16) -> [i16; N] {
        core::array::from_fn(|_| self.coeff(q))
    }
}

/// Canonical representative in [0, q).
pub fn canon(x: i64, q: u16) -> i64 {
    x.rem_euclid(q as i64)
}

/// Negacyclic schoolbook product in Z_q[x]/(x^N + 1), canonical coefficients.
pub fn schoolbook<const N: usize>(a: &[i16; N], b: &[i16; N], q: u16) -> [i64; N] {
    let mut c = [0i64; N];
    for i in 0..N {
        for j in 0..N {
            let p = a[i] as i64 * b[j] as i64;
            if i + j < N {
                c[i + j] += p;
            } else {
                c[i + j - N] -= p;
            }
        }
    }
    c.map(|x| canon(x, q))
}

/// Canonical form of a polynomial.
pub fn canon_poly<const N: usize>(a: &[i16; N], q: u16) -> [i64; N] {
    a.map(|x| canon(x as i64, q))
}
