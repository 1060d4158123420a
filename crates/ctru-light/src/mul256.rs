//! Decryption's product w = c·f in Z_256[x]/(x^512 + 1) (`SPEC.md` §3,
//! PKE.Dec), computed directly modulo q2 = 256 by Karatsuba.
//!
//! Only w mod 256 is decoded, and modulo 2^8 every coefficient is a byte:
//! additions are one AVR instruction and a product's low byte is one `mul`.
//! So no NTT prime is needed: the method the paper's tables imply (NTTs mod
//! 769 and mod 3329, lifted by CRT) cost about 950k cycles on the
//! ATmega1284p, this one about 500k, and §6 allows any exact method.
//! Karatsuba needs no division, so it is exact modulo 256 at every level.
//!
//! Layout: one negacyclic split at the top (three products of 256
//! coefficients), then plain recursive Karatsuba down to [`LEAF`]
//! coefficients, whose schoolbook product is the only loop that multiplies
//! (AVR assembly in `asm-avr/ctru_mul.S` behind module `backend`, tested
//! against [`leaf_product_portable`] in simavr). Every step is the same
//! sequence of operations whatever the data: no branch or index depends on f.

use kem_common::Wipe;

use crate::params::N;

/// Coefficients of the schoolbook base case (the assembly's too: the
/// backend asserts it).
pub const LEAF: usize = 32;

const HALF: usize = N >> 1;
/// Scratch of the recursive products of `HALF` coefficients: n at each
/// level above the leaf.
const SCRATCH: usize = scratch_bytes(HALF);

const fn scratch_bytes(n: usize) -> usize {
    if n <= LEAF {
        0
    } else {
        n + scratch_bytes(n >> 1)
    }
}

/// r = a·b in Z_256\[x\] (2·LEAF − 1 coefficients; r[2·LEAF − 1] = 0), the
/// reference of the assembly.
pub fn leaf_product_portable(a: &[u8; LEAF], b: &[u8; LEAF], r: &mut [u8; 2 * LEAF]) {
    r.fill(0);
    for (i, &x) in a.iter().enumerate() {
        for (o, &y) in r[i..i + LEAF].iter_mut().zip(b.iter()) {
            *o = o.wrapping_add(x.wrapping_mul(y));
        }
    }
}

#[inline]
fn leaf_product(a: &[u8], b: &[u8], r: &mut [u8]) {
    if let (Ok(a), Ok(b), Ok(r)) = (a.try_into(), b.try_into(), r.try_into()) {
        crate::backend::leaf_product(a, b, r);
    }
}

/// r[..2n] = a·b in Z_256[x] for n = a.len() = b.len() (a power of two, at
/// least LEAF); r[2n − 1] = 0. b is used as scratch and restored; `scratch`
/// holds at least [`scratch_bytes`]`(n)` bytes.
fn karatsuba(a: &[u8], b: &mut [u8], r: &mut [u8], scratch: &mut [u8]) {
    let n = a.len();
    debug_assert!(b.len() == n && r.len() == 2 * n && scratch.len() >= scratch_bytes(n));
    if n <= LEAF {
        leaf_product(a, b, r);
        return;
    }
    let h = n >> 1;
    let (a0, a1) = a.split_at(h);
    let (m, scratch) = scratch.split_at_mut(n);
    {
        // M = (a0 + a1)·(b0 + b1): a0 + a1 waits in r (L and H overwrite
        // it afterwards), b0 + b1 in b0.
        let (sum_a, _) = r.split_at_mut(h);
        add(sum_a, a0, a1);
        let (b0, b1) = b.split_at_mut(h);
        add_assign(b0, b1);
        karatsuba(sum_a, b0, m, scratch);
        sub_assign(b0, b1);
    }
    let (b0, b1) = b.split_at_mut(h);
    {
        let (low, high) = r.split_at_mut(n);
        karatsuba(a0, b0, low, scratch); // L
        karatsuba(a1, b1, high, scratch); // H
    }
    combine(r, m);
}

/// One Karatsuba recombination: r = L ‖ H (2n bytes), m = M (n bytes);
/// r[h..h + n] += M − L − H. On AVR one assembly routine per h
/// (`ctru_kara_combine{h}_avr`, tested against [`combine_portable`] in simavr),
/// through module `backend`.
#[inline]
fn combine(r: &mut [u8], m: &[u8]) {
    crate::backend::combine(r, m);
}

/// `combine` in Rust, the reference of the assembly. Never inlined: on AVR
/// it is only the fallback of `combine` for sizes without a routine, and
/// inlined there it made every recombination save the registers it uses
/// (+53 cycles a call in the opt-level 2 sensor images). One pass: iteration
/// i reads L_i, L_{h+i}, H_i, H_{h+i} before it writes r[h + i] (= L_{h+i})
/// and r[n + i] (= H_i), and no later iteration reads those two.
#[inline(never)]
pub fn combine_portable(r: &mut [u8], m: &[u8]) {
    let n = m.len();
    let h = n >> 1;
    let (low, high) = r.split_at_mut(n);
    let (l0, l1) = low.split_at_mut(h);
    let (h0, h1) = high.split_at_mut(h);
    let (m0, m1) = m.split_at(h);
    for (((((&l0, l1), h0), &h1), &m0), &m1) in l0
        .iter()
        .zip(l1.iter_mut())
        .zip(h0.iter_mut())
        .zip(h1.iter())
        .zip(m0)
        .zip(m1)
    {
        let t = l1.wrapping_sub(*h0); // T = L1 − H0
        *l1 = t.wrapping_add(m0).wrapping_sub(l0);
        *h0 = m1.wrapping_sub(h1).wrapping_sub(t);
    }
}

/// out = x + y, coefficient-wise.
fn add(out: &mut [u8], x: &[u8], y: &[u8]) {
    for ((o, &x), &y) in out.iter_mut().zip(x).zip(y) {
        *o = x.wrapping_add(y);
    }
}

fn add_assign(x: &mut [u8], y: &[u8]) {
    for (x, &y) in x.iter_mut().zip(y) {
        *x = x.wrapping_add(y);
    }
}

fn sub_assign(x: &mut [u8], y: &[u8]) {
    for (x, &y) in x.iter_mut().zip(y) {
        *x = x.wrapping_sub(y);
    }
}

/// w = c·f in Z_256[x]/(x^512 + 1). f is used as scratch and restored.
///
/// With c = c0 + c1·x^256, f likewise, L = c0·f0, H = c1·f1 and
/// M = (c0 + c1)(f0 + f1) (products in Z_256[x], 511 coefficients each):
/// c·f = L − H + (M − L − H)·x^256 = M·x^256 + L·(1 − x^256) − H·(1 + x^256),
/// each term folded with x^512 = −1 as it is added.
pub fn mul_negacyclic(c: &[u8; N], f: &mut [u8; N], w: &mut [u8; N]) {
    let mut product = [0u8; N];
    let mut scratch = [0u8; SCRATCH];
    let (c0, c1) = c.split_at(HALF);
    let (w0, w1) = w.split_at_mut(HALF);
    {
        let (f0, f1) = f.split_at_mut(HALF);
        add(w0, c0, c1);
        add_assign(f0, f1);
        karatsuba(w0, f0, &mut product, &mut scratch);
        sub_assign(f0, f1);
    }
    let (p0, p1) = product.split_at(HALF);
    // w = M·x^256 = M0·x^256 − M1.
    for (((o0, o1), &x0), &x1) in w0.iter_mut().zip(w1.iter_mut()).zip(p0).zip(p1) {
        *o0 = 0u8.wrapping_sub(x1);
        *o1 = x0;
    }
    let (f0, f1) = f.split_at_mut(HALF);
    // + L·(1 − x^256) = (L0 + L1) + (L1 − L0)·x^256.
    karatsuba(c0, f0, &mut product, &mut scratch);
    fold(w0, w1, &product, 1);
    // − H·(1 + x^256) = (H1 − H0) − (H0 + H1)·x^256.
    karatsuba(c1, f1, &mut product, &mut scratch);
    fold(w0, w1, &product, 0xFF);
    // Both hold products of parts of the secret f with the public c.
    product.wipe();
    scratch.wipe();
}

/// w0 += s·P0 + P1, w1 += s·P1 − P0: for s = 1 the halves of
/// P·(1 − x^256), for s = −1 (0xFF) those of −P·(1 + x^256) (s is public).
#[inline(always)]
fn fold(w0: &mut [u8], w1: &mut [u8], product: &[u8; N], s: u8) {
    let (p0, p1) = product.split_at(HALF);
    for (((o0, o1), &x0), &x1) in w0.iter_mut().zip(w1.iter_mut()).zip(p0).zip(p1) {
        *o0 = o0.wrapping_add(s.wrapping_mul(x0)).wrapping_add(x1);
        *o1 = o1.wrapping_add(s.wrapping_mul(x1)).wrapping_sub(x0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schoolbook(c: &[u8; N], f: &[u8; N]) -> [u8; N] {
        let mut w = [0u8; N];
        for (i, &x) in c.iter().enumerate() {
            for (j, &y) in f.iter().enumerate() {
                let p = x.wrapping_mul(y);
                let k = i + j;
                if k < N {
                    w[k] = w[k].wrapping_add(p);
                } else {
                    w[k - N] = w[k - N].wrapping_sub(p);
                }
            }
        }
        w
    }

    #[test]
    fn karatsuba_equals_schoolbook() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        };
        for round in 0..6 {
            let c: [u8; N] = core::array::from_fn(|_| match round {
                0 => 0xFF,
                1 => 0x80,
                _ => next(),
            });
            let f: [u8; N] = core::array::from_fn(|_| match round {
                0 => 0xFF,
                1 => 0xFC, // −4
                _ => next(),
            });
            let mut f2 = f;
            let mut w = [0u8; N];
            mul_negacyclic(&c, &mut f2, &mut w);
            assert_eq!(f2, f, "f restored");
            assert_eq!(w, schoolbook(&c, &f), "round {round}");
        }
    }
}
