//! Exact multiplication in Z_{2^13}[x]/(x^256 + 1) through NTTs over 3329
//! and 7681 and a CRT lift (modarith), with inner products accumulated in
//! the NTT domain: the integer product of a centred a (|a_i| ≤ 2^12) and a
//! secret s (|s_i| ≤ μ/2), summed over l terms, stays below 3329·7681/2, so
//! the lift is the true integer and reducing it mod 2^13 is exact.

use modarith::crt::{crt_bound_holds, crt_lift_centred};
use modarith::rings::{Saber3329, Saber7681};
use modarith::{Modulus, Q3329, Q7681};
use zeroize::Zeroize;

use crate::params::{EQ, L, MU, N};

const _: () = assert!(crt_bound_holds(
    (1 << (EQ - 1)) * (MU as u32 >> 1) * N as u32 * L as u32,
    3329,
    7681
));

/// A secret polynomial: coefficients in [−μ/2, μ/2].
pub type Secret = [i8; N];

/// Σ a_j·s_j kept in both NTT domains until [`Accumulator::finish`].
pub struct Accumulator {
    p3329: [i16; N],
    p7681: [i16; N],
}

impl Accumulator {
    /// An empty sum.
    pub const fn new() -> Self {
        Accumulator {
            p3329: [0; N],
            p7681: [0; N],
        }
    }

    /// Adds a·s, where a holds centred representatives (|a_i| ≤ 2^12).
    pub fn mul_acc(&mut self, a: &[i16; N], s: &Secret) {
        let mut t = [0i16; N];
        let mut u = [0i16; N];
        for ((t, u), (&a, &s)) in t.iter_mut().zip(u.iter_mut()).zip(a.iter().zip(s.iter())) {
            *t = Q3329::center(a);
            *u = s as i16;
        }
        Saber3329::forward(&mut t);
        Saber3329::forward(&mut u);
        Saber3329::base_mul_acc(&t, &u, &mut self.p3329);
        for ((t, u), (&a, &s)) in t.iter_mut().zip(u.iter_mut()).zip(a.iter().zip(s.iter())) {
            *t = a; // |a| ≤ 2^12 < 7681
            *u = s as i16;
        }
        Saber7681::forward(&mut t);
        Saber7681::forward(&mut u);
        Saber7681::base_mul_acc(&t, &u, &mut self.p7681);
        u.zeroize();
    }

    /// The exact sum reduced mod 2^13 into `out`; the accumulator is cleared.
    pub fn finish(&mut self, out: &mut [u16; N]) {
        Saber3329::inverse(&mut self.p3329);
        Saber7681::inverse(&mut self.p7681);
        for ((o, &x), &y) in out.iter_mut().zip(self.p3329.iter()).zip(self.p7681.iter()) {
            *o = crt_lift_centred::<Q3329, Q7681>(x, y) as u16 & ((1 << EQ) - 1);
        }
        self.zeroize();
    }
}

impl Zeroize for Accumulator {
    fn zeroize(&mut self) {
        self.p3329.zeroize();
        self.p7681.zeroize();
    }
}

/// The centred representative of a d-bit value (two's complement in d bits).
#[inline(always)]
pub fn centre(x: u16, d: u32) -> i16 {
    ((x << (16 - d)) as i16) >> (16 - d)
}

#[cfg(test)]
#[allow(clippy::integer_division_remainder_used)]
mod tests {
    use super::*;

    fn schoolbook(a: &[i16; N], s: &Secret) -> [u16; N] {
        let mut c = [0i64; N];
        for i in 0..N {
            for j in 0..N {
                let p = a[i] as i64 * s[j] as i64;
                if i + j < N {
                    c[i + j] += p;
                } else {
                    c[i + j - N] -= p;
                }
            }
        }
        c.map(|x| x.rem_euclid(1 << EQ) as u16)
    }

    /// NTT/CRT multiplication equals schoolbook mod 2^13, including the
    /// worst case (every a_i = −2^12, every s_i = ±5), with accumulation.
    #[test]
    fn ntt_crt_product_equals_schoolbook() {
        let mut seed = 12345u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        let mut cases: [([i16; N], Secret); 4] = [([0; N], [0; N]); 4];
        cases[0] = ([-4096; N], [5; N]);
        cases[1] = ([-4096; N], [-5; N]);
        cases[2] = (core::array::from_fn(|i| if i % 2 == 0 { 4095 } else { -4096 }), [-5; N]);
        for case in cases.iter_mut().skip(3) {
            case.0 = core::array::from_fn(|_| centre((next() & 0x1FFF) as u16, 13));
            case.1 = core::array::from_fn(|_| (next() % 11) as i8 - 5);
        }
        for (a, s) in &cases {
            let mut acc = Accumulator::new();
            acc.mul_acc(a, s);
            let mut out = [0u16; N];
            acc.finish(&mut out);
            assert_eq!(out, schoolbook(a, s));
            // Two accumulated terms at the worst case: the bound is tight enough.
            let mut acc = Accumulator::new();
            acc.mul_acc(a, s);
            acc.mul_acc(a, s);
            acc.finish(&mut out);
            let single = schoolbook(a, s);
            let doubled: [u16; N] = core::array::from_fn(|i| (2 * single[i]) & 0x1FFF);
            assert_eq!(out, doubled);
        }
    }
}
