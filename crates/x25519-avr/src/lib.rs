#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

#[cfg(test)]
extern crate std;

mod backend;
#[cfg(not(fe25519_compact))]
mod edwards;
mod field;

#[cfg(test)]
mod avr_tests;

use field::{Fe, SmallConstant};
use zeroize::Zeroize;

/// The u-coordinate of the base point (9).
pub const BASEPOINT: [u8; 32] = {
    let mut b = [0; 32];
    b[0] = 9;
    b
};

/// X25519(k, u): the scalar `k` is clamped, the top bit of `u` ignored, as
/// RFC 7748 §5 specifies. The Montgomery ladder runs the same 251 steps
/// (bits 253..3; the clamped bits 254 and 2..0 are known) with masked swaps
/// whatever the scalar.
pub fn x25519(k: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
    let mut u_bytes = *u;
    u_bytes[31] &= 127;
    ladder(k, &LadderPoint::Any(Fe(u_bytes)))
}

/// X25519(k, 9): the public key of `k`, equal to `x25519(k, &BASEPOINT)`.
///
/// With the unrolled field (hosts, and AVR MCUs with more than 48 KB of
/// flash): fixed-base multiplication on the equivalent Edwards curve with a
/// 24 KB table of multiples of the base point (module `edwards`), about a third
/// of the ladder's work. With the compact field (`cfg(fe25519_compact)`,
/// the ATmega4808): [`x25519_base_ladder`], which needs no table.
pub fn x25519_base(k: &[u8; 32]) -> [u8; 32] {
    #[cfg(not(fe25519_compact))]
    {
        let mut scalar = clamp(k);
        let u = edwards::base_u(&scalar);
        scalar.zeroize();
        u
    }
    #[cfg(fe25519_compact)]
    x25519_base_ladder(k)
}

/// X25519(k, 9) by the Montgomery ladder, with no table: the ladder's
/// product with the point's u-coordinate, one of nine field multiplications
/// a step, becomes a product with the small constant 9.
pub fn x25519_base_ladder(k: &[u8; 32]) -> [u8; 32] {
    ladder(k, &LadderPoint::Small(BASEPOINT_U))
}

/// RFC 7748 §5 clamping: a multiple of 8 in [2^254, 2^255).
fn clamp(k: &[u8; 32]) -> [u8; 32] {
    let mut scalar = *k;
    scalar[0] &= 248;
    scalar[31] &= 127;
    scalar[31] |= 64;
    scalar
}

/// u = 9 (the base point) as a small constant.
const BASEPOINT_U: SmallConstant = match SmallConstant::new(9) {
    Some(c) => c,
    None => panic!(),
};

/// The point the ladder multiplies: its u-coordinate x1 (public).
enum LadderPoint {
    /// Any u below 2^255.
    Any(Fe),
    /// A u below 2^24 (the base point).
    Small(SmallConstant),
}

impl LadderPoint {
    fn u(&self) -> Fe {
        match self {
            LadderPoint::Any(u) => *u,
            LadderPoint::Small(c) => Fe::from_u32(c.get()),
        }
    }
}

/// The ladder's state and temporaries in one block: what one step works in
/// (on AVR the assembly step of `backend::ladder_step` takes it whole),
/// wiped once after the ladder.
#[repr(C)]
pub(crate) struct Workspace {
    /// (x2 : z2) = \[m\]P and (x3 : z3) = \[m + 1\]P, in this order.
    pub state: [Fe; 4],
    /// The step's temporaries.
    temps: [Fe; 4],
    /// The point's u-coordinate x1 (with `small`, a constant below 2^24).
    x1: Fe,
    /// The assembly's scratch for its multiplications (Karatsuba's three
    /// products).
    scratch: [u8; 128],
    /// |x1L − x1H| (x1's 16-byte halves) and its borrow mask (0xFF when
    /// x1L < x1H): the set-up of x1's products, done once for the ladder.
    x1_diff: [u8; 17],
}

// The assembly step's layout (`asm-avr/fe25519_ladder_gen.py`): slots at
// 0, temporaries at 128, x1 at 256, the scratch at 288, x1's difference at
// 416.
const _: () = assert!(core::mem::size_of::<Workspace>() == 433);

impl Workspace {
    /// The ladder's start for the point u = x1: (x1 : 1) twice.
    pub fn new(x1: &Fe) -> Workspace {
        Workspace {
            state: [*x1, Fe::one(), *x1, Fe::one()],
            temps: [Fe::ZERO; 4],
            x1: *x1,
            scratch: [0; 128],
            x1_diff: halves_difference(x1),
        }
    }
}

#[cfg(test)]
impl Workspace {
    /// |x1L − x1H| and its mask, as the assembly step reads them (17 bytes).
    pub fn x1_difference(&self) -> &[u8; 17] {
        &self.x1_diff
    }
}

impl Zeroize for Workspace {
    fn zeroize(&mut self) {
        self.state.iter_mut().for_each(Zeroize::zeroize);
        self.temps.iter_mut().for_each(Zeroize::zeroize);
        self.x1.zeroize();
        self.scratch.zeroize();
        self.x1_diff.zeroize();
    }
}

/// |xL − xH| of x's 16-byte halves, then the mask of its sign (0xFF when
/// xL < xH): what the assembly multiplication computes first for each
/// operand. Branch-free (x1 is public, but costs nothing to keep so).
fn halves_difference(x: &Fe) -> [u8; 17] {
    let mut d = [0u8; 17];
    let mut borrow = 0u16;
    let (low, high) = x.0.split_at(16);
    for ((d, &l), &h) in d.iter_mut().zip(low).zip(high) {
        let t = u16::from(l).wrapping_sub(u16::from(h)).wrapping_sub(borrow);
        *d = t as u8;
        borrow = (t >> 8) & 1;
    }
    let mask = (borrow as u8).wrapping_neg();
    // (d ^ mask) − mask: negated when the difference borrowed.
    let mut carry = u16::from(mask & 1);
    for b in d.iter_mut().take(16) {
        let t = u16::from(*b ^ mask) + carry;
        *b = t as u8;
        carry = t >> 8;
    }
    d[16] = mask;
    d
}

/// The clamped scalar times the point, as bytes.
///
/// Clamping fixes bit 254 to 1 and bits 2..0 to 0 (public), so the ladder
/// starts at bit 253 from (P, 2P), the state its first step would reach
/// (projectively the same: identical results, u = 0 included, tested), and
/// ends with three doublings instead of three full steps: 4 × 5M + 4S
/// become 4 × 2M + 2S.
fn ladder(k: &[u8; 32], x1: &LadderPoint) -> [u8; 32] {
    let mut scalar = clamp(k);
    let small = matches!(x1, LadderPoint::Small(_));
    let mut ws = Workspace::new(&x1.u());
    {
        let [_, _, x3, z3] = &mut ws.state;
        ladder_double(x3, z3, &mut ws.temps);
    }
    let mut swap = 0u8;
    for i in (3..254).rev() {
        let bit = (scalar[i >> 3] >> (i & 7)) & 1;
        swap ^= bit;
        backend::ladder_step(&mut ws, swap, small);
        swap = bit;
    }
    let [x2, z2, x3, z3] = &mut ws.state;
    Fe::cswap(x2, x3, swap);
    Fe::cswap(z2, z3, swap);
    for _ in 0..3 {
        ladder_double(x2, z2, &mut ws.temps);
    }
    let out = x2.mul(&z2.invert()).to_bytes();
    ws.zeroize();
    scalar.zeroize();
    out
}

/// (x : z) ← 2·(x : z), the doubling half of the ladder step, in place.
#[inline(never)]
fn ladder_double(x: &mut Fe, z: &mut Fe, t: &mut [Fe; 4]) {
    let [t0, t1, t2, t3] = t;
    Fe::add_into(t0, x, z); // A
    Fe::sub_into(t1, x, z); // B
    Fe::square_into(t2, t0); // AA
    Fe::square_into(t3, t1); // BB
    Fe::sub_into(t0, t2, t3); // E = AA − BB
    Fe::mul_into(x, t2, t3); // AA·BB
    Fe::mul_small_into(t1, t0, SmallConstant::A24); // a24·E
    Fe::add_into(t3, t2, t1); // AA + a24·E
    Fe::mul_into(z, t0, t3); // E·(AA + a24·E)
}

/// One ladder step (RFC 7748 §5): the conditional swap by `swap` (0 or
/// 1), then a differential addition and a doubling, in the portable field
/// — the reference of the AVR assembly step, which does the same
/// operations in the same slots, so its bytes are these.
///
/// With (x2, z2, x3, z3) in slots S0..S3 and temporaries T0..T3:
/// S0..S3 ← A = x2 + z2, B = x2 − z2, C = x3 + z3, D = x3 − z3;
/// T0 = DA, T1 = CB, T2 = AA, T3 = BB; S0 = DA + CB, S1 = DA − CB;
/// x3 = S2 = S0², z3 = S3 = x1·S1²; T0 = E = AA − BB,
/// T1 = AA + a24·E; x2 = S0 = AA·BB, z2 = S1 = E·T1. With `small`, x1 is a
/// constant below 2^24 (the base point's 9) and its product is
/// `Fe::mul_small_into`.
pub(crate) fn ladder_step_portable(ws: &mut Workspace, swap: u8, small: bool) {
    use crate::field::{add_portable as add, mul_portable as mul, mul_small_add_portable, sub_portable as sub};
    let Workspace { state, temps, x1, .. } = ws;
    let [s0, s1, s2, s3] = state;
    let [t0, t1, t2, t3] = temps;
    Fe::cswap(s0, s2, swap);
    Fe::cswap(s1, s3, swap);
    let (x2, z2, x3, z3) = (*s0, *s1, *s2, *s3);
    add(&mut s0.0, &x2.0, &z2.0); // A
    sub(&mut s1.0, &x2.0, &z2.0); // B
    add(&mut s2.0, &x3.0, &z3.0); // C
    sub(&mut s3.0, &x3.0, &z3.0); // D
    mul(&mut t0.0, &s3.0, &s0.0); // DA
    mul(&mut t1.0, &s2.0, &s1.0); // CB
    mul(&mut t2.0, &s0.0, &s0.0); // AA
    mul(&mut t3.0, &s1.0, &s1.0); // BB
    add(&mut s0.0, &t0.0, &t1.0); // DA + CB
    sub(&mut s1.0, &t0.0, &t1.0); // DA − CB
    mul(&mut s2.0, &s0.0, &s0.0); // x3 = (DA + CB)²
    mul(&mut s3.0, &s1.0, &s1.0); // (DA − CB)²
    let w = *s3;
    if small {
        let c = u32::from_le_bytes([x1.0[0], x1.0[1], x1.0[2], 0]);
        crate::field::mul_small_portable(&mut s3.0, &w.0, c); // z3 = x1·(DA − CB)²
    } else {
        mul(&mut s3.0, &x1.0, &w.0);
    }
    sub(&mut t0.0, &t2.0, &t3.0); // E = AA − BB
    mul_small_add_portable(&mut t1.0, &t0.0, SmallConstant::A24.get(), &t2.0); // AA + a24·E
    mul(&mut s0.0, &t2.0, &t3.0); // x2 = AA·BB
    mul(&mut s1.0, &t0.0, &t1.0); // z2 = E·(AA + a24·E)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex32(s: &str) -> [u8; 32] {
        core::array::from_fn(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
    }

    /// RFC 7748 §5.2, the two single-step vectors.
    #[test]
    fn rfc7748_vectors() {
        assert_eq!(
            x25519(
                &hex32("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"),
                &hex32("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")
            ),
            hex32("c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")
        );
        assert_eq!(
            x25519(
                &hex32("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d"),
                &hex32("e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493")
            ),
            hex32("95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957")
        );
    }

    /// Agrees with x25519-dalek on random scalars and points, including
    /// u-coordinates ≥ p and with the top bit set.
    #[test]
    fn matches_x25519_dalek() {
        let mut seed = 0x0002_5519_u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 56) as u8
        };
        let mut inputs: [([u8; 32], [u8; 32]); 40] = core::array::from_fn(|_| ([0; 32], [0; 32]));
        for (k, u) in inputs.iter_mut() {
            *k = core::array::from_fn(|_| next());
            *u = core::array::from_fn(|_| next());
        }
        inputs[0].1 = [0xFF; 32];
        inputs[1].1 = [0; 32];
        inputs[2].1 = {
            let mut p = [0xFF; 32];
            p[0] = 0xED;
            p[31] = 0x7F;
            p
        };
        for (k, u) in &inputs {
            assert_eq!(x25519(k, u), x25519_dalek::x25519(*k, *u));
            assert_eq!(x25519_base(k), x25519_dalek::x25519(*k, BASEPOINT));
            assert_eq!(x25519_base_ladder(k), x25519_dalek::x25519(*k, BASEPOINT));
        }
    }

    /// The low-order points (u = 0, 1, the two of order 8, p − 1, and p, p + 1
    /// for 0 and 1) give what x25519-dalek gives: the shortened ladder (its
    /// start from (P, 2P), its final doublings) changes no result.
    #[test]
    fn low_order_points_match_x25519_dalek() {
        let order_8 = [
            "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
            "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
            "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        ];
        let mut points: std::vec::Vec<[u8; 32]> = order_8.iter().map(|h| hex32(h)).collect();
        points.push([0; 32]);
        points.push(Fe::ONE.0);
        for (n, u) in points.iter().enumerate() {
            for k in [[0u8; 32], [0xFF; 32], [0x5A; 32]] {
                assert_eq!(x25519(&k, u), x25519_dalek::x25519(k, *u), "point {n}");
            }
        }
    }

    /// RFC 7748 §5.2: 1 and 1,000 iterations of k, u ← X25519(k, u), k.
    #[test]
    fn rfc7748_iterated() {
        let (mut k, mut u) = (BASEPOINT, BASEPOINT);
        for i in 1..=1000 {
            let r = x25519(&k, &u);
            u = k;
            k = r;
            if i == 1 {
                assert_eq!(
                    k,
                    hex32("422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079")
                );
            }
        }
        assert_eq!(
            k,
            hex32("684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51")
        );
    }
}
