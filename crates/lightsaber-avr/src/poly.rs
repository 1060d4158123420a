//! Exact multiplication in Z_{2^13}[x]/(x^256 + 1) through NTTs over 3329
//! and 7681 and a CRT lift (modarith), with inner products accumulated in
//! the NTT domain: the integer product of a centred a (|a_i| ≤ 2^12) and a
//! secret s (|s_i| ≤ μ/2), summed over l terms, stays below 3329·7681/2, so
//! the lift is the true integer and reducing it mod 2^13 is exact.

use kem_common::Wipe;
use modarith::crt::{crt_bound_holds, crt_lift_centred};
use modarith::rings::{Saber3329, Saber7681};
use modarith::{Modulus, Q3329, Q7681};

use crate::params::{EQ, L, MU, N};

const _: () = assert!(crt_bound_holds(
    (1 << (EQ - 1)) * (MU as u32 >> 1) * N as u32 * L as u32,
    3329,
    7681
));

/// A secret polynomial, two coefficients in [−μ/2, μ/2] per byte (4-bit
/// two's complement, low nibble first): half the RAM of one byte each.
pub type Secret = [u8; N >> 1];

/// Coefficient `i` of a packed secret.
#[inline(always)]
pub fn secret_coeff(s: &Secret, i: usize) -> i16 {
    kem_common::nibble(s, i)
}

/// All coefficients of a packed secret, as an i16 polynomial.
pub fn load_secret(s: &Secret, out: &mut [i16; N]) {
    kem_common::unpack_nibbles(s, out);
}

/// The two transform buffers one product needs. The caller owns them, so
/// every product of an operation and the final lift share one pair.
pub struct Scratch {
    /// The public operand (and, after [`Accumulator::finish`], the result).
    pub a: [i16; N],
    /// The secret operand.
    s: [i16; N],
}

impl Scratch {
    /// Zeroed buffers.
    pub const fn new() -> Self {
        Scratch { a: [0; N], s: [0; N] }
    }
}

impl Wipe for Scratch {
    fn wipe(&mut self) {
        self.a.wipe();
        self.s.wipe();
    }
}

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

    /// Adds a·s. `load_a` writes a's centred coefficients (|a_i| ≤ 2^12),
    /// `load_s` the secret's (|s_i| ≤ μ/2); each is called once per prime,
    /// so neither operand needs an unpacked copy that outlives the product.
    pub fn mul_acc(&mut self, scratch: &mut Scratch, load_a: impl Fn(&mut [i16; N]), load_s: impl Fn(&mut [i16; N])) {
        load_a(&mut scratch.a);
        // |a_i| ≤ 2^12 ≤ q + (q−1)/2: the masked fix-up centres it mod 3329.
        scratch.a.iter_mut().for_each(|a| *a = Q3329::center_fixup(*a));
        load_s(&mut scratch.s);
        Saber3329::forward(&mut scratch.a);
        Saber3329::forward(&mut scratch.s);
        Saber3329::base_mul_acc(&scratch.a, &scratch.s, &mut self.p3329);
        load_a(&mut scratch.a); // |a| ≤ 2^12 < 7681
        load_s(&mut scratch.s);
        Saber7681::forward(&mut scratch.a);
        Saber7681::forward(&mut scratch.s);
        Saber7681::base_mul_acc(&scratch.a, &scratch.s, &mut self.p7681);
        scratch.s.wipe();
    }

    /// Adds a·s for a secret transformed once ([`SecretHat`]): only `a`
    /// is transformed here, in `a_buf` (the caller's; it holds the 7681
    /// transform of a afterwards). `load_a` as in [`Self::mul_acc`].
    #[cfg_attr(saber_small_sram, allow(dead_code))]
    pub fn mul_acc_hat(&mut self, a_buf: &mut [i16; N], load_a: impl Fn(&mut [i16; N]), s: &SecretHat) {
        load_a(a_buf);
        // |a_i| ≤ 2^12 ≤ q + (q−1)/2: the masked fix-up centres it mod 3329.
        a_buf.iter_mut().for_each(|a| *a = Q3329::center_fixup(*a));
        Saber3329::forward(a_buf);
        Saber3329::base_mul_acc(a_buf, &s.p3329, &mut self.p3329);
        load_a(a_buf); // |a| ≤ 2^12 < 7681
        Saber7681::forward(a_buf);
        Saber7681::base_mul_acc(a_buf, &s.p7681, &mut self.p7681);
    }

    /// [`Self::mul_acc`] for an `a` already in `scratch.a` (centred, |a_i| ≤
    /// 2^12), which is consumed: for MCUs that cannot hold the packed entry
    /// beside the product (`cfg(saber_small_sram)`). The 7681 product runs
    /// first and its transform of a is inverted again (the exact inverse)
    /// for the 3329 product: one inverse NTT instead of a 416-byte buffer.
    /// The residue mod 7681 leaves a apart from a ∓ 7681 only where
    /// |a_i| > 3840, so those coefficients are marked first (a bit each;
    /// public, like the matrix they come from).
    #[cfg_attr(not(saber_small_sram), allow(dead_code))]
    #[inline(never)]
    pub fn mul_acc_recovering(&mut self, scratch: &mut Scratch, load_s: impl Fn(&mut [i16; N])) {
        const HALF: i16 = (7681 - 1) >> 1;
        let mut wide = [0u8; N >> 3];
        for (i, &a) in scratch.a.iter().enumerate() {
            // The sign of HALF − |a|, not a comparison: one instruction path
            // for every matrix (a compare compiles to a branch on the AVR).
            let marked = ((HALF - a.abs()) >> 15) as u8 & 1;
            wide[i >> 3] |= marked << (i & 7);
        }
        load_s(&mut scratch.s);
        Saber7681::forward(&mut scratch.a);
        Saber7681::forward(&mut scratch.s);
        Saber7681::base_mul_acc(&scratch.a, &scratch.s, &mut self.p7681);
        Saber7681::inverse(&mut scratch.a); // centred: [−3840, 3840]
        for (i, a) in scratch.a.iter_mut().enumerate() {
            // A marked residue r stands for r − 7681 (r > 0) or r + 7681 (r < 0).
            let marked = ((wide[i >> 3] >> (i & 7)) & 1) as i16;
            let towards_zero = 7681 * (((*a >> 15) << 1) + 1); // 7681·sign(r), r ≠ 0 when marked
            *a -= marked * towards_zero;
            *a = Q3329::center_fixup(*a);
        }
        load_s(&mut scratch.s);
        Saber3329::forward(&mut scratch.a);
        Saber3329::forward(&mut scratch.s);
        Saber3329::base_mul_acc(&scratch.a, &scratch.s, &mut self.p3329);
        scratch.s.wipe();
    }

    /// The exact sum reduced mod 2^13 (values in [0, 2^13)) into `out`;
    /// the accumulator is cleared.
    #[inline(never)]
    pub fn finish(&mut self, out: &mut [i16; N]) {
        Saber3329::inverse(&mut self.p3329);
        Saber7681::inverse(&mut self.p7681);
        for ((o, &x), &y) in out.iter_mut().zip(self.p3329.iter()).zip(self.p7681.iter()) {
            *o = crt_lift_centred::<Q3329, Q7681>(x, y) as i16 & ((1 << EQ) - 1);
        }
        self.wipe();
    }
}

impl Wipe for Accumulator {
    fn wipe(&mut self) {
        self.p3329.wipe();
        self.p7681.wipe();
    }
}

/// A secret polynomial in both NTT domains, transformed once for all the
/// products of an operation that multiply by it ([`Accumulator::mul_acc_hat`]):
/// 1 KB, against two forward transforms per product. Built in place (a
/// value of 1 KB moved around is 1 KB more stack on the AVR each time).
#[cfg_attr(saber_small_sram, allow(dead_code))]
pub struct SecretHat {
    p3329: [i16; N],
    p7681: [i16; N],
}

#[cfg_attr(saber_small_sram, allow(dead_code))]
impl SecretHat {
    /// Zeroed, to be [`Self::transform`]ed.
    pub const fn new() -> Self {
        SecretHat {
            p3329: [0; N],
            p7681: [0; N],
        }
    }

    /// Becomes the transforms of the secret `load_s` writes (|s_i| ≤ μ/2).
    pub fn transform(&mut self, load_s: impl Fn(&mut [i16; N])) {
        load_s(&mut self.p3329);
        Saber3329::forward(&mut self.p3329);
        load_s(&mut self.p7681);
        Saber7681::forward(&mut self.p7681);
    }
}

impl Wipe for SecretHat {
    fn wipe(&mut self) {
        self.p3329.wipe();
        self.p7681.wipe();
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

    fn schoolbook(a: &[i16; N], s: &[i16; N]) -> [i16; N] {
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
        c.map(|x| x.rem_euclid(1 << EQ) as i16)
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
        let mut cases: [([i16; N], [i16; N]); 4] = [([0; N], [0; N]); 4];
        cases[0] = ([-4096; N], [5; N]);
        cases[1] = ([-4096; N], [-5; N]);
        cases[2] = (core::array::from_fn(|i| if i % 2 == 0 { 4095 } else { -4096 }), [-5; N]);
        for case in cases.iter_mut().skip(3) {
            case.0 = core::array::from_fn(|_| centre((next() & 0x1FFF) as u16, 13));
            case.1 = core::array::from_fn(|_| (next() % 11) as i16 - 5);
        }
        let mut scratch = Scratch::new();
        for (a, s) in &cases {
            // The packed form round-trips every coefficient.
            let mut packed: Secret = [0; N >> 1];
            for (i, &c) in s.iter().enumerate() {
                kem_common::set_nibble(&mut packed, i, c);
            }
            let mut unpacked = [0i16; N];
            load_secret(&packed, &mut unpacked);
            assert_eq!(&unpacked, s);
            assert!((0..N).all(|i| secret_coeff(&packed, i) == s[i]));

            let mut acc = Accumulator::new();
            acc.mul_acc(&mut scratch, |t| *t = *a, |t| load_secret(&packed, t));
            let mut out = [0i16; N];
            acc.finish(&mut out);
            let single = schoolbook(a, s);
            assert_eq!(out, single);
            // Two accumulated terms at the worst case: the bound is tight enough.
            acc.mul_acc(&mut scratch, |t| *t = *a, |t| *t = *s);
            acc.mul_acc(&mut scratch, |t| *t = *a, |t| *t = *s);
            acc.finish(&mut out);
            let doubled: [i16; N] = core::array::from_fn(|i| (2 * single[i]) & 0x1FFF);
            assert_eq!(out, doubled);

            // The same with a in the transform buffer, recovered for the second prime.
            scratch.a = *a;
            acc.mul_acc_recovering(&mut scratch, |t| *t = *s);
            scratch.a = *a;
            acc.mul_acc_recovering(&mut scratch, |t| *t = *s);
            acc.finish(&mut out);
            assert_eq!(out, doubled, "recovered entries");
        }
    }

    /// Every 13-bit value survives the trip through the 7681 transform,
    /// the ±3840 boundary and the extremes included.
    #[test]
    fn recovering_keeps_every_entry_value() {
        let unit: [i16; N] = core::array::from_fn(|i| (i == 0) as i16);
        let mut scratch = Scratch::new();
        let mut acc = Accumulator::new();
        let mut out = [0i16; N];
        for start in (-4096i16..4096).step_by(N) {
            let a: [i16; N] = core::array::from_fn(|i| start + i as i16);
            scratch.a = a;
            acc.mul_acc_recovering(&mut scratch, |t| *t = unit);
            acc.finish(&mut out);
            // a·1 mod 2^13.
            assert_eq!(out, a.map(|x| x & 0x1FFF), "from {start}");
        }
    }
}
