//! Compile-time number theory: table and constant generation only.
//!
//! These functions divide freely; they run in `const` contexts on public
//! parameters and never see secret data, which is why this module (alone)
//! allows `clippy::integer_division_remainder_used`.
#![allow(clippy::integer_division_remainder_used)]

/// `base^exp mod q`, for compile-time tables (never used on secret data).
pub const fn pow_mod(base: u32, mut exp: u32, q: u32) -> u32 {
    let mut result = 1u64;
    let mut b = (base % q) as u64;
    let q = q as u64;
    while exp > 0 {
        if exp & 1 == 1 {
            result = result * b % q;
        }
        b = b * b % q;
        exp >>= 1;
    }
    result as u32
}

/// Multiplicative inverse of `a` modulo the prime `q` (Fermat), compile time only.
pub const fn inv_mod(a: u32, q: u32) -> u32 {
    pow_mod(a, q - 2, q)
}

/// `q^{-1} mod 2^16` by Newton iteration (q odd).
pub const fn inv_mod_2_16(q: u32) -> u16 {
    let mut x: u32 = q; // correct to 3 bits for odd q
    let mut i = 0;
    while i < 4 {
        x = x.wrapping_mul(2u32.wrapping_sub(q.wrapping_mul(x)));
        i += 1;
    }
    x as u16
}

/// The exponent m of the largest power of two dividing q − 1.
pub const fn two_adicity(q: u32) -> u32 {
    (q - 1).trailing_zeros()
}

/// The smallest g with g^(order/2) ≡ −1 (mod q), i.e. a primitive `order`-th
/// root of unity for a power-of-two `order`. Compile time only.
pub const fn smallest_root_of_unity(q: u32, order: u32) -> u32 {
    let mut g = 2;
    while g < q {
        if pow_mod(g, order / 2, q) == q - 1 {
            return g;
        }
        g += 1;
    }
    panic!("no root of unity of this order")
}

/// round(a / b) for positive operands.
pub const fn round_div(a: i64, b: i64) -> i64 {
    (a + b / 2) / b
}

/// The centred representative of c·scale mod q: how constants are stored
/// for a reduction whose factor is `scale`.
pub const fn prescale(c: u32, scale: u16, q: u16) -> i16 {
    let v = (c as u64 * scale as u64 % q as u64) as i32;
    let half = (q as i32 - 1) / 2;
    (if v > half { v - q as i32 } else { v }) as i16
}

/// q1^{-1} mod q2.
pub const fn crt_inverse(q1: u16, q2: u16) -> u16 {
    inv_mod(q1 as u32 % q2 as u32, q2 as u32) as u16
}

/// a·b mod q.
pub const fn mul_mod(a: u32, b: u32, q: u32) -> u32 {
    (a as u64 * b as u64 % q as u64) as u32
}
