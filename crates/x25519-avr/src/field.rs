//! Arithmetic in GF(2^255 − 19) on little-endian bytes (RFC 7748 §4.1).
//!
//! An element is any 256-bit value; it stands for its residue mod p. Every
//! operation returns a value below 2^256 by folding the overflow with
//! 2^256 ≡ 38 (mod p); only [`Fe::to_bytes`] reduces fully. Bytes suit an
//! 8-bit core (one `mul` per byte product); every loop has a fixed count and
//! no branch or index depends on the values: constant time.

use subtle::{Choice, ConditionallySelectable};
use zeroize::Zeroize;

/// A field element: a 256-bit little-endian integer, taken mod p.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Fe(pub [u8; 32]);

/// p = 2^255 − 19, little-endian.
#[cfg(test)]
const P: [u8; 32] = {
    let mut p = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        p[i] = p_byte(i);
        i += 1;
    }
    p
};

/// Byte `i` of p = 2^255 − 19, little-endian: computed where it is used,
/// not read from a 32-byte constant (which a classic AVR keeps in SRAM).
const fn p_byte(i: usize) -> u8 {
    match i {
        0 => 0xED,
        31 => 0x7F,
        _ => 0xFF,
    }
}

impl Fe {
    /// 0.
    pub const ZERO: Fe = Fe([0; 32]);
    /// 1, built in place (a constant would be copied from a template,
    /// which a classic AVR keeps in SRAM).
    pub fn one() -> Fe {
        let mut b = [0u8; 32];
        b[0] = 1;
        Fe(b)
    }

    /// 1.
    #[cfg(test)]
    pub const ONE: Fe = {
        let mut b = [0; 32];
        b[0] = 1;
        Fe(b)
    };

    /// The small constant `v` as an element.
    pub const fn from_u32(v: u32) -> Fe {
        let mut b = [0; 32];
        let le = v.to_le_bytes();
        b[0] = le[0];
        b[1] = le[1];
        b[2] = le[2];
        b[3] = le[3];
        Fe(b)
    }

    /// r ← a · b (`r` is a distinct element: the borrow rules see to it).
    #[inline]
    pub fn mul_into(r: &mut Fe, a: &Fe, b: &Fe) {
        crate::backend::mul(&mut r.0, &a.0, &b.0);
    }

    /// r ← a².
    #[inline]
    pub fn square_into(r: &mut Fe, a: &Fe) {
        crate::backend::square(&mut r.0, &a.0);
    }

    /// r ← a + b.
    #[inline]
    pub fn add_into(r: &mut Fe, a: &Fe, b: &Fe) {
        crate::backend::add(&mut r.0, &a.0, &b.0);
    }

    /// r ← a − b.
    #[inline]
    pub fn sub_into(r: &mut Fe, a: &Fe, b: &Fe) {
        crate::backend::sub(&mut r.0, &a.0, &b.0);
    }

    /// a + b. (Only the Edwards code uses it, which compact images leave out.)
    #[cfg_attr(fe25519_compact, allow(dead_code))]
    pub fn add(&self, other: &Fe) -> Fe {
        let mut r = Fe::ZERO;
        crate::backend::add(&mut r.0, &self.0, &other.0);
        r
    }

    /// a − b. (As [`Fe::add`].)
    #[cfg_attr(fe25519_compact, allow(dead_code))]
    pub fn sub(&self, other: &Fe) -> Fe {
        let mut r = Fe::ZERO;
        crate::backend::sub(&mut r.0, &self.0, &other.0);
        r
    }

    /// a · b.
    pub fn mul(&self, other: &Fe) -> Fe {
        let mut r = Fe::ZERO;
        crate::backend::mul(&mut r.0, &self.0, &other.0);
        r
    }

    /// a².
    pub fn square(&self) -> Fe {
        let mut r = Fe::ZERO;
        crate::backend::square(&mut r.0, &self.0);
        r
    }

    /// r ← a · c for a small constant c < 2^24 (the ladder's a24 = 121665,
    /// the base point's u = 9): three byte products per byte instead of a
    /// full multiplication.
    #[inline]
    pub fn mul_small_into(r: &mut Fe, a: &Fe, c: SmallConstant) {
        crate::backend::mul_small(&mut r.0, &a.0, c.0);
    }

    /// a^(2^n). Squares back and forth between two buffers: a
    /// `r = r.square()` loop copied 32 bytes (a `memcpy` call on AVR) and
    /// zeroed 32 more per squaring.
    pub fn square_n(&self, n: u32) -> Fe {
        let (mut a, mut b) = (*self, Fe::ZERO);
        for _ in 0..n >> 1 {
            Fe::square_into(&mut b, &a);
            Fe::square_into(&mut a, &b);
        }
        if n & 1 == 1 {
            Fe::square_into(&mut b, &a);
            a = b;
        }
        b.zeroize();
        a
    }

    /// a^(−1) (0 for 0): on AVR by divsteps in assembly, elsewhere
    /// [`invert_portable`] (see [`crate::backend::invert`]).
    pub fn invert(&self) -> Fe {
        let mut r = Fe::ZERO;
        crate::backend::invert(&mut r.0, &self.0);
        r
    }

    /// a^(p − 2) = a^(−1) (0 for 0), by the fixed chain of 254 squarings
    /// and 11 multiplications.
    fn invert_by_fermat(&self) -> Fe {
        let z2 = self.square();
        let z9 = z2.square_n(2).mul(self);
        let z11 = z9.mul(&z2);
        let z_5_0 = z11.square().mul(&z9); // 2^5 − 1
        let z_10_0 = z_5_0.square_n(5).mul(&z_5_0);
        let z_20_0 = z_10_0.square_n(10).mul(&z_10_0);
        let z_40_0 = z_20_0.square_n(20).mul(&z_20_0);
        let z_50_0 = z_40_0.square_n(10).mul(&z_10_0);
        let z_100_0 = z_50_0.square_n(50).mul(&z_50_0);
        let z_200_0 = z_100_0.square_n(100).mul(&z_100_0);
        let z_250_0 = z_200_0.square_n(50).mul(&z_50_0);
        z_250_0.square_n(5).mul(&z11) // 2^255 − 32 + 11 = p − 2
    }

    /// The canonical encoding: the value reduced below p.
    pub fn to_bytes(self) -> [u8; 32] {
        // Below 2^256 = 2p + 38: at most two subtractions of p.
        let mut r = self.0;
        for _ in 0..2 {
            let mut d = [0u8; 32];
            let mut borrow = 0u16;
            for (i, (d, &a)) in d.iter_mut().zip(r.iter()).enumerate() {
                let t = (a as u16).wrapping_sub(p_byte(i) as u16).wrapping_sub(borrow);
                *d = t as u8;
                borrow = (t >> 8) & 1;
            }
            // Keep r − p unless it borrowed: a `subtle` selection, so the
            // compiler cannot turn the choice into a branch (valgrind saw
            // one on x86-64 with a plain mask).
            let borrowed = Choice::from(borrow as u8);
            for (r, d) in r.iter_mut().zip(d.iter()) {
                *r = u8::conditional_select(d, r, borrowed);
            }
        }
        r
    }

    /// Swaps `a` and `b` if `swap` is 1 (0 or 1 only), without a branch.
    pub fn cswap(a: &mut Fe, b: &mut Fe, swap: u8) {
        cswap_bytes(&mut a.0, &mut b.0, swap);
    }
}

impl Zeroize for Fe {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

/// `r` ← a^(−1) (0 for 0) by Fermat's little theorem, a^(p − 2): the
/// portable inversion and the reference of the assembly's.
pub fn invert_portable(r: &mut [u8; 32], a: &[u8; 32]) {
    *r = Fe(*a).invert_by_fermat().0;
}

/// Swaps `a` and `b` if `swap` is 1 (0 or 1 only), without a branch.
///
/// The mask goes through `black_box`: knowing it is 0 or 0xFF, LLVM turned
/// the swap after the ladder into a branch on the swap bit in the
/// ATmega4808 build (opt-level "s": `breq` over `mov; eor`, 64 cycles and
/// another instruction path for a secret bit), found by the 4808's
/// instruction traces (`cargo xtask ct --mcu atmega4808`).
pub fn cswap_bytes(a: &mut [u8; 32], b: &mut [u8; 32], swap: u8) {
    let mask = core::hint::black_box(swap.wrapping_neg());
    for (x, y) in a.iter_mut().zip(b.iter_mut()) {
        let t = mask & (*x ^ *y);
        *x ^= t;
        *y ^= t;
    }
}

/// A constant below 2^24, the factor of [`Fe::mul_small_into`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SmallConstant(u32);

impl SmallConstant {
    /// (A − 2)/4 = 121665, the ladder's doubling constant (RFC 7748 §5).
    pub const A24: SmallConstant = SmallConstant(121_665);

    /// `c` as a small constant, if it is below 2^24.
    pub const fn new(c: u32) -> Option<SmallConstant> {
        if c < 1 << 24 {
            Some(SmallConstant(c))
        } else {
            None
        }
    }

    /// The value.
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// The portable product with a small constant c < 2^24: a·c by bytes with
/// a running carry (below 2^24), folded back as 38·carry (the reference of
/// the AVR assembly).
pub fn mul_small_portable(r: &mut [u8; 32], a: &[u8; 32], c: u32) {
    debug_assert!(c < 1 << 24);
    let mut carry = 0u32;
    for (r, &a) in r.iter_mut().zip(a.iter()) {
        let v = a as u32 * c + carry;
        *r = v as u8;
        carry = v >> 8;
    }
    // r + carry·2^256 ≡ r + 38·carry (carry < 2^24).
    fold_wide(r, 38 * carry);
}

/// The portable r ← b + c·a for a small constant c < 2^24 (the ladder's
/// AA + a24·E): the exact sum by bytes with a running carry, folded as
/// the small-constant product is (the reference of the assembly ladder
/// step, which fuses the two).
pub fn mul_small_add_portable(r: &mut [u8; 32], a: &[u8; 32], c: u32, b: &[u8; 32]) {
    debug_assert!(c < 1 << 24);
    let mut carry = 0u32;
    for ((r, &a), &b) in r.iter_mut().zip(a.iter()).zip(b.iter()) {
        let v = a as u32 * c + b as u32 + carry;
        *r = v as u8;
        carry = v >> 8;
    }
    fold_wide(r, 38 * carry);
}

/// The portable addition: a + b with the carry folded as 38 (the
/// reference of the AVR assembly).
pub fn add_portable(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    let mut carry = 0u16;
    for ((r, &a), &b) in r.iter_mut().zip(a.iter()).zip(b.iter()) {
        let t = a as u16 + b as u16 + carry;
        *r = t as u8;
        carry = t >> 8;
    }
    fold_wide(r, 38 * carry as u32);
}

/// `r` ← the digits (base 256, each below 2^24, nonnegative) as bytes; their
/// value must be below 2^256 (the callers' bounds, asserted in debug builds).
fn normalize(r: &mut [u8; 32], digits: &[u32; 32]) {
    let mut carry = 0u32;
    for (r, &d) in r.iter_mut().zip(digits.iter()) {
        let v = d + carry;
        *r = v as u8;
        carry = v >> 8;
    }
    debug_assert_eq!(carry, 0);
}

/// The portable subtraction: a − b with 38 taken off per borrow (the
/// reference of the AVR assembly).
pub fn sub_portable(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    let mut borrow = 0u16;
    for ((r, &a), &b) in r.iter_mut().zip(a.iter()).zip(b.iter()) {
        let t = (a as u16).wrapping_sub(b as u16).wrapping_sub(borrow);
        *r = t as u8;
        borrow = (t >> 8) & 1;
    }
    // r = a − b + 2^256·borrow ≡ a − b + 38·borrow: take 38·borrow off.
    let mut t = (r[0] as u16).wrapping_sub(38 * borrow);
    r[0] = t as u8;
    let mut borrow2 = (t >> 8) & 1;
    for r in r.iter_mut().skip(1) {
        t = (*r as u16).wrapping_sub(borrow2);
        *r = t as u8;
        borrow2 = (t >> 8) & 1;
    }
    // Borrowing again leaves r ≥ 2^256 − 38, so 38 more comes off byte 0 alone.
    r[0] = r[0].wrapping_sub(38 * borrow2 as u8);
}

/// r + c (c < 2^30 added at byte 0) with the overflow folded back as 38
/// per 2^256, twice: after the first overflow r < c, so the second
/// cannot overflow again. The fold of addition and the small-constant
/// product (the assembly's second passes stop where the carry must have
/// ended: the same bytes).
fn fold_wide(r: &mut [u8; 32], c: u32) {
    let mut c = c;
    for _ in 0..2 {
        for x in r.iter_mut() {
            let v = *x as u32 + c;
            *x = v as u8;
            c = v >> 8;
        }
        c *= 38;
    }
}

/// x·y for 16-byte x, y: the 32-byte product by columns.
fn mul128(x: &[u8], y: &[u8]) -> [u8; 32] {
    let mut t = [0u8; 32];
    let mut acc = 0u32;
    for k in 0..31usize {
        for i in k.saturating_sub(15)..=k.min(15) {
            acc += u32::from(x[i]) * u32::from(y[k - i]);
        }
        t[k] = acc as u8;
        acc >>= 8;
    }
    t[31] = acc as u8;
    t
}

/// The portable multiplication, the reference of the AVR assembly
/// (multiplication and squaring). With X = 2^128, a = aL + X·aH and
/// b = bL + X·bH, the three 32-byte products of one level of Karatsuba
/// L = aL·bL, H = aH·bH and V = aL·bH + aH·bL (the middle term; below
/// 2^257) give, since X² = 2^256 ≡ 38,
///
///   a·b ≡ R = L0 + 38·(H0 + V1) + X·(L1 + V0 + 38·H1)   (mod p)
///
/// (L0, L1 the low and high 16 bytes of L, and so on; V1 = V >> 128 with
/// V's top bit). The top of R is folded first: q = ⌊(L\[31\] + V\[15\] +
/// 38·H\[31\]) / 128⌋, the multiples of 2^255 that byte 31 of R holds before
/// any carry reaches it, and r = R − q·p. The carries into byte 31 stay
/// below 43, so r < 170·2^248 < 2^256 with no second fold. The assembly
/// computes L, H and |aL − aH|·|bL − bH| (V = L + H ∓ that) and folds in
/// the same order: the same value, hence the same bytes.
pub fn mul_portable(r: &mut [u8; 32], a: &[u8; 32], b: &[u8; 32]) {
    let (a_lo, a_hi) = a.split_at(16);
    let (b_lo, b_hi) = b.split_at(16);
    let l = mul128(a_lo, b_lo);
    let h = mul128(a_hi, b_hi);
    // V = aL·bH + aH·bL, 33 bytes.
    let (v_a, v_b) = (mul128(a_lo, b_hi), mul128(a_hi, b_lo));
    let mut v = [0u8; 33];
    let mut carry = 0u16;
    for (v, (&x, &y)) in v.iter_mut().zip(v_a.iter().zip(v_b.iter())) {
        let s = u16::from(x) + u16::from(y) + carry;
        *v = s as u8;
        carry = s >> 8;
    }
    v[32] = carry as u8;
    let q = (u32::from(l[31]) + u32::from(v[15]) + 38 * u32::from(h[31])) >> 7;
    let mut digits = [0u32; 32];
    for j in 0..16 {
        digits[j] = u32::from(l[j]) + 38 * (u32::from(h[j]) + u32::from(v[16 + j]));
        digits[16 + j] = u32::from(l[16 + j]) + u32::from(v[j]) + 38 * u32::from(h[16 + j]);
    }
    digits[16] += 38 * u32::from(v[32]);
    digits[0] += 19 * q;
    digits[31] -= 128 * q;
    normalize(r, &digits);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fe as a big integer mod p, with u128 pieces (test oracle).
    fn value_mod_p(x: &Fe) -> [u8; 32] {
        x.to_bytes()
    }

    fn lcg(seed: &mut u64) -> u8 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 56) as u8
    }

    fn random(seed: &mut u64) -> Fe {
        Fe(core::array::from_fn(|_| lcg(seed)))
    }

    /// a·b mod p by 32-bit limbs: schoolbook to 512 bits, then 2^256 ≡ 38
    /// folded until the value is below 2^256, then at most two p off
    /// (an oracle independent of the byte code).
    fn mul_mod_p_by_limbs(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
        let limbs = |x: &[u8; 32]| -> [u64; 8] {
            core::array::from_fn(|i| u64::from(u32::from_le_bytes(x[4 * i..4 * i + 4].try_into().unwrap())))
        };
        let (x, y) = (limbs(a), limbs(b));
        let mut t = [0u64; 17];
        for i in 0..8 {
            let mut carry = 0u64;
            for j in 0..8 {
                let v = t[i + j] + x[i] * y[j] + carry;
                t[i + j] = v & 0xFFFF_FFFF;
                carry = v >> 32;
            }
            t[i + 8] += carry;
        }
        // Fold the limbs above 256 bits with 38 until none is left.
        while t[8..].iter().any(|&l| l != 0) {
            let mut r = [0u64; 17];
            let mut carry = 0u64;
            for i in 0..8 {
                let v = t[i] + 38 * t[i + 8] + carry;
                r[i] = v & 0xFFFF_FFFF;
                carry = v >> 32;
            }
            r[8] = carry;
            t = r;
        }
        let mut bytes = [0u8; 32];
        for i in 0..8 {
            bytes[4 * i..4 * i + 4].copy_from_slice(&(t[i] as u32).to_le_bytes());
        }
        Fe(bytes).to_bytes()
    }

    /// The multiplication's fold (Karatsuba's three products, the top first)
    /// is a·b mod p, and its output stays below 170·2^248 (the bound the
    /// assembly's one-pass fold needs), on extreme and random operands.
    #[test]
    fn multiplication_matches_a_limb_oracle_and_stays_below_its_bound() {
        let mut seed = 11;
        let mut values = std::vec![[0u8; 32], [0xFF; 32], P, Fe::ONE.0];
        // Top bytes at their largest with everything else zero, and halves
        // that make the middle term's sign either way.
        values.push(core::array::from_fn(|i| if i == 31 || i == 15 { 0xFF } else { 0 }));
        values.push(core::array::from_fn(|i| if i < 16 { 0 } else { 0xFF }));
        values.push(core::array::from_fn(|i| if i < 16 { 0xFF } else { 0 }));
        for _ in 0..200 {
            values.push(random(&mut seed).0);
        }
        for a in &values {
            for b in values.iter().take(60) {
                let mut r = [0u8; 32];
                mul_portable(&mut r, a, b);
                assert!(r[31] < 170, "{r:?}");
                assert_eq!(Fe(r).to_bytes(), mul_mod_p_by_limbs(a, b));
            }
        }
    }

    #[test]
    fn ring_laws_hold_on_extreme_and_random_values() {
        let mut seed = 7;
        let mut values = [Fe::ZERO; 205];
        values[..5].copy_from_slice(&[Fe::ZERO, Fe::ONE, Fe([0xFF; 32]), Fe(P), Fe::from_u32(38)]);
        for v in values[5..].iter_mut() {
            *v = random(&mut seed);
        }
        for a in &values {
            // a − a = 0, a + 0 = a, a·1 = a, a·a⁻¹ = 1 (a ≠ 0).
            assert_eq!(a.sub(a).to_bytes(), [0; 32]);
            assert_eq!(a.add(&Fe::ZERO).to_bytes(), value_mod_p(a));
            assert_eq!(a.mul(&Fe::ONE).to_bytes(), value_mod_p(a));
            for c in [0, 1, 9, 121_665, (1 << 24) - 1] {
                let mut r = Fe::ZERO;
                Fe::mul_small_into(&mut r, a, SmallConstant::new(c).unwrap());
                assert_eq!(r.to_bytes(), a.mul(&Fe::from_u32(c)).to_bytes());
            }
            if a.to_bytes() != [0; 32] {
                assert_eq!(a.mul(&a.invert()).to_bytes(), Fe::ONE.0);
            }
            for b in values.iter().take(20) {
                // (a + b) − b = a; (a − b)·(a + b) = a² − b².
                assert_eq!(a.add(b).sub(b).to_bytes(), value_mod_p(a));
                assert_eq!(
                    a.sub(b).mul(&a.add(b)).to_bytes(),
                    a.square().sub(&b.square()).to_bytes()
                );
            }
        }
        // 2^255 − 19 ≡ 0 and 2^256 − 1 ≡ 37.
        assert_eq!(Fe(P).to_bytes(), [0; 32]);
        assert_eq!(Fe([0xFF; 32]).to_bytes(), Fe::from_u32(37).0);
    }
}
