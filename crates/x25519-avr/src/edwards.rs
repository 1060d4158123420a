//! Fixed-base scalar multiplication for [`crate::x25519_base`], on the
//! twisted Edwards curve −x² + y² = 1 + d·x²·y² (edwards25519), which
//! RFC 7748 §4.1 maps birationally onto Curve25519 by u = (1 + y)/(1 − y);
//! its base point B maps to u = 9, and the map respects the group law, so
//! u(k·B) = X25519(k, 9).
//!
//! Why: the Montgomery ladder costs 251 steps of 5 multiplications and 4
//! squarings whatever the point. For the fixed point B, the multiples
//! (1..8)·256^j·B are precomputed ([`BASE_TABLE`], 24 KB, flash on AVR):
//! the scalar, recoded into 64 signed radix-16 digits, costs 64 mixed
//! additions (7 multiplications each) and 4 doublings, then one inversion
//! (the layout of the ref10 `ge_scalarmult_base`, Bernstein et al.,
//! "High-speed high-security signatures", 2011, §4).
//!
//! Constant time: every digit reads all 8 entries of its row (masked
//! selection, [`crate::backend::select_niels`]), its sign is applied by a
//! masked swap, and the sequence of field operations is fixed.
//!
//! The table is generated from the formulas of this module (the test
//! `base_table_holds_the_multiples_of_the_base_point` checks every entry and
//! rewrites the file with `X25519_WRITE_BASE_TABLE=1`); the result is
//! checked against the ladder and `x25519-dalek`.

use crate::field::Fe;
use zeroize::Zeroize;

/// Bytes of one precomputed point: y + x, y − x, 2·d·x·y, canonical.
pub const NIELS_LEN: usize = 96;
/// Multiples per row: 1·P … 8·P for P = 256^j·B.
pub const ROW_POINTS: usize = 8;
/// Bytes of one row.
pub const ROW_LEN: usize = ROW_POINTS * NIELS_LEN;
/// Rows: one per byte of the scalar.
pub const ROWS: usize = 32;

/// (k + 1)·256^j·B at offset (j·8 + k)·96, as `Niels` bytes.
///
/// On AVR in flash (`.progmem.data`): only `asm-avr/ed25519_select.S`
/// reads it, with `lpm`; Rust code there never dereferences it (a data-space
/// read would see SRAM). 24 KB would not fit the SRAM anyway.
#[cfg_attr(target_arch = "avr", allow(unsafe_code))]
#[cfg_attr(target_arch = "avr", link_section = ".progmem.data")]
pub static BASE_TABLE: [u8; ROWS * ROW_LEN] = *include_bytes!("base_table.bin");

/// A point in extended coordinates (X : Y : Z : T), x = X/Z, y = Y/Z,
/// x·y = T/Z (Hisil, Wong, Carter, Dawson, "Twisted Edwards curves
/// revisited", 2008).
#[derive(Clone, Copy)]
pub(crate) struct Extended {
    x: Fe,
    y: Fe,
    z: Fe,
    t: Fe,
}

/// A sum or double before its last multiplications ("completed"):
/// x = X/Z, y = Y/T.
struct Completed {
    x: Fe,
    y: Fe,
    z: Fe,
    t: Fe,
}

/// An affine point prepared for mixed addition: y + x, y − x, 2·d·x·y, as
/// the table stores it (96 contiguous bytes: the selection writes them in
/// place, no copy).
#[derive(Clone, Copy)]
pub(crate) struct Niels(pub(crate) [[u8; 32]; 3]);

impl Niels {
    /// The neutral element (0, 1).
    #[cfg(test)]
    const IDENTITY: Niels = Niels([Fe::ONE.0, Fe::ONE.0, Fe::ZERO.0]);

    /// [`Self::IDENTITY`]'s bytes into `out`, written in place: a constant
    /// would be copied from a template, which a classic AVR keeps in SRAM.
    fn set_identity(out: &mut [[u8; 32]; 3]) {
        for (i, f) in out.iter_mut().enumerate() {
            f.fill(0);
            f[0] = (i < 2) as u8;
        }
    }

    /// −P = (−x, y) if `negate` is 1 (0 or 1 only), without a branch: y ± x
    /// trade places, 2dxy changes sign (`minus` is scratch).
    fn conditional_negate(&mut self, negate: u8, minus: &mut Fe) {
        let [y_plus_x, y_minus_x, xy2d] = &mut self.0;
        crate::field::cswap_bytes(y_plus_x, y_minus_x, negate);
        // A local, not `&Fe::ZERO.0`: a borrowed constant is a static,
        // which a classic AVR keeps in SRAM.
        let zero = [0u8; 32];
        crate::backend::sub(&mut minus.0, &zero, xy2d);
        crate::field::cswap_bytes(xy2d, &mut minus.0, negate);
    }
}

impl Zeroize for Niels {
    fn zeroize(&mut self) {
        self.0.zeroize();
    }
}

impl Extended {
    /// The neutral element (0 : 1 : 1 : 0), built in place (a constant
    /// would be copied from a 128-byte template, which a classic AVR keeps
    /// in SRAM).
    fn identity() -> Extended {
        let mut p = Extended {
            x: Fe::ZERO,
            y: Fe::ZERO,
            z: Fe::ZERO,
            t: Fe::ZERO,
        };
        p.y.0[0] = 1;
        p.z.0[0] = 1;
        p
    }

    /// self + q for an affine q (ref10 `ge_madd`; a = −1): 3
    /// multiplications. `s` is scratch.
    fn add_niels(&self, q: &Niels, r: &mut Completed, s: &mut [Fe; 2]) {
        let [d, c] = s;
        Fe::add_into(&mut r.x, &self.y, &self.x);
        Fe::sub_into(&mut r.y, &self.y, &self.x);
        let [y_plus_x, y_minus_x, xy2d] = &q.0;
        crate::backend::mul(&mut r.z.0, &r.x.0, y_plus_x); // A = (Y + X)(y + x)
        crate::backend::mul(&mut r.t.0, &r.y.0, y_minus_x); // B = (Y − X)(y − x)
        crate::backend::mul(&mut c.0, xy2d, &self.t.0); // C = 2d·xy·T
        Fe::sub_into(&mut r.x, &r.z, &r.t); // A − B
        Fe::add_into(&mut r.y, &r.z, &r.t); // A + B
        Fe::add_into(d, &self.z, &self.z); // D = 2Z
        Fe::add_into(&mut r.z, d, c); // D + C
        Fe::sub_into(&mut r.t, d, c); // D − C
    }

    /// 2·self (ref10 `ge_p2_dbl`, from X, Y, Z only; a = −1): 4 squarings.
    /// `s` is scratch.
    fn double(&self, r: &mut Completed, s: &mut [Fe; 2]) {
        let [a, b] = s;
        Fe::square_into(&mut r.x, &self.x); // XX
        Fe::square_into(&mut r.y, &self.y); // YY
        Fe::square_into(a, &self.z);
        Fe::add_into(&mut r.t, a, a); // 2ZZ
        Fe::add_into(a, &self.x, &self.y);
        Fe::square_into(b, a); // (X + Y)²
        Fe::sub_into(&mut r.z, &r.y, &r.x); // YY − XX
        Fe::add_into(a, &r.y, &r.x); // YY + XX
        Fe::sub_into(&mut r.x, b, a); // 2XY
        Fe::sub_into(b, &r.t, &r.z); // 2ZZ − (YY − XX)
        r.y = *a;
        r.t = *b;
    }

    /// The completed point as extended coordinates: 4 multiplications.
    fn set_completed(&mut self, c: &Completed) {
        Fe::mul_into(&mut self.x, &c.x, &c.t);
        Fe::mul_into(&mut self.y, &c.y, &c.z);
        Fe::mul_into(&mut self.z, &c.z, &c.t);
        Fe::mul_into(&mut self.t, &c.x, &c.y);
    }

    /// The Montgomery u = (1 + y)/(1 − y) = (Z + Y)/(Z − Y), canonical (0
    /// for the neutral element, as the ladder gives).
    fn montgomery_u(&self) -> [u8; 32] {
        let mut num = self.z.add(&self.y);
        let mut den = self.z.sub(&self.y);
        let u = num.mul(&den.invert()).to_bytes();
        num.zeroize();
        den.zeroize();
        u
    }
}

impl Zeroize for Extended {
    fn zeroize(&mut self) {
        self.x.zeroize();
        self.y.zeroize();
        self.z.zeroize();
        self.t.zeroize();
    }
}

impl Zeroize for Completed {
    fn zeroize(&mut self) {
        self.x.zeroize();
        self.y.zeroize();
        self.z.zeroize();
        self.t.zeroize();
    }
}

/// The scalar as 64 signed radix-16 digits e_i ∈ [−8, 8), Σ e_i·16^i = k,
/// without a branch (needs k < 2^255: the top digit then stays ≤ 8).
fn signed_radix16(k: &[u8; 32]) -> [i8; 64] {
    let mut e = [0i8; 64];
    for (i, &b) in k.iter().enumerate() {
        e[2 * i] = (b & 15) as i8;
        e[2 * i + 1] = (b >> 4) as i8;
    }
    let mut carry = 0i8;
    for digit in e.iter_mut().take(63) {
        *digit += carry;
        carry = (*digit + 8) >> 4;
        *digit -= carry << 4;
    }
    e[63] += carry;
    e
}

/// row_j[|e|] with the sign of e, or the neutral element for e = 0; reads
/// the whole row. |e| is taken inside the selection (in assembly on AVR):
/// LLVM compiled `e − 2e·[e < 0]` to a branch on the sign there. `minus` is
/// scratch.
fn lookup(row: usize, e: i8, out: &mut Niels, minus: &mut Fe) {
    let negative = (e as u8) >> 7;
    crate::backend::select_niels(&mut out.0, row, e);
    out.conditional_negate(negative, minus);
}

/// u(k·B) for the clamped scalar k (k < 2^255).
pub(crate) fn base_u(k: &[u8; 32]) -> [u8; 32] {
    let mut digits = signed_radix16(k);
    let mut h = Extended::identity();
    let mut c = Completed {
        x: Fe::ZERO,
        y: Fe::ZERO,
        z: Fe::ZERO,
        t: Fe::ZERO,
    };
    // Every lookup writes all of it.
    let mut q = Niels([[0; 32]; 3]);
    let mut scratch = [Fe::ZERO; 2];
    // Odd digits first: h = Σ e_{2j+1}·16·256^j·B after the 4 doublings…
    for j in 0..ROWS {
        lookup(j, digits[2 * j + 1], &mut q, &mut scratch[0]);
        h.add_niels(&q, &mut c, &mut scratch);
        h.set_completed(&c);
    }
    for _ in 0..4 {
        h.double(&mut c, &mut scratch);
        h.set_completed(&c);
    }
    // …then the even ones: + Σ e_{2j}·256^j·B.
    for j in 0..ROWS {
        lookup(j, digits[2 * j], &mut q, &mut scratch[0]);
        h.add_niels(&q, &mut c, &mut scratch);
        h.set_completed(&c);
    }
    let u = h.montgomery_u();
    digits.zeroize();
    h.zeroize();
    c.zeroize();
    q.zeroize();
    scratch.iter_mut().for_each(Zeroize::zeroize);
    u
}

/// The portable row selection: out ← row[|digit| − 1], or the neutral
/// element for digit 0 (|digit| ≤ 8), reading every entry with a mask (the
/// reference of the AVR assembly).
pub fn select_niels_portable(out: &mut [[u8; 32]; 3], row: &[u8; ROW_LEN], digit: i8) {
    // |digit| = (digit ^ s) − s, s = 0 or −1 by the sign bit.
    let sign = (digit >> 7) as u8;
    let magnitude = ((digit as u8) ^ sign).wrapping_sub(sign);
    Niels::set_identity(out);
    for (k, entry) in row.chunks_exact(NIELS_LEN).enumerate() {
        // 0xFF if magnitude == k + 1: (magnitude ^ (k + 1)) − 1 borrows only for 0.
        let diff = magnitude ^ (k as u8 + 1);
        let mask = ((diff as u16).wrapping_sub(1) >> 8) as u8;
        for (o, &v) in out.iter_mut().flatten().zip(entry) {
            *o ^= mask & (*o ^ v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// RFC 8032 §5.1: the base point (x, 4/5), x even.
    const B_X: [u8; 32] = [
        0x1a, 0xd5, 0x25, 0x8f, 0x60, 0x2d, 0x56, 0xc9, 0xb2, 0xa7, 0x25, 0x95, 0x60, 0xc7, 0x2c, 0x69, 0x5c, 0xdc,
        0xd6, 0xfd, 0x31, 0xe2, 0xa4, 0xc0, 0xfe, 0x53, 0x6e, 0xcd, 0xd3, 0x36, 0x69, 0x21,
    ];
    const B_Y: [u8; 32] = [
        0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
        0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
    ];

    /// d = −121665/121666.
    fn d() -> Fe {
        Fe::ZERO
            .sub(&Fe::from_u32(121_665))
            .mul(&Fe::from_u32(121_666).invert())
    }

    fn affine(p: &Extended) -> (Fe, Fe) {
        let zi = p.z.invert();
        (p.x.mul(&zi), p.y.mul(&zi))
    }

    fn niels(p: &Extended) -> [u8; NIELS_LEN] {
        let (x, y) = affine(p);
        let d2 = d().add(&d());
        let mut out = [0; NIELS_LEN];
        out[..32].copy_from_slice(&y.add(&x).to_bytes());
        out[32..64].copy_from_slice(&y.sub(&x).to_bytes());
        out[64..].copy_from_slice(&x.mul(&y).mul(&d2).to_bytes());
        out
    }

    fn base_point() -> Extended {
        let (x, y) = (Fe(B_X), Fe(B_Y));
        Extended {
            x,
            y,
            z: Fe::ONE,
            t: x.mul(&y),
        }
    }

    fn add(p: &Extended, q: &[u8; NIELS_LEN]) -> Extended {
        let mut c = Completed {
            x: Fe::ZERO,
            y: Fe::ZERO,
            z: Fe::ZERO,
            t: Fe::ZERO,
        };
        let q = Niels(core::array::from_fn(|i| core::array::from_fn(|k| q[32 * i + k])));
        p.add_niels(&q, &mut c, &mut [Fe::ZERO; 2]);
        let mut r = Extended::identity();
        r.set_completed(&c);
        r
    }

    /// The table from the formulas above: row j holds (1..8)·256^j·B.
    fn generate() -> Vec<u8> {
        let mut table = Vec::with_capacity(ROWS * ROW_LEN);
        let mut row_base = base_point();
        for _ in 0..ROWS {
            let step = niels(&row_base);
            let mut p = row_base;
            for k in 0..ROW_POINTS {
                table.extend_from_slice(&niels(&p));
                if k + 1 < ROW_POINTS {
                    p = add(&p, &step);
                }
            }
            for _ in 0..8 {
                let mut c = Completed {
                    x: Fe::ZERO,
                    y: Fe::ZERO,
                    z: Fe::ZERO,
                    t: Fe::ZERO,
                };
                row_base.double(&mut c, &mut [Fe::ZERO; 2]);
                row_base.set_completed(&c);
            }
        }
        table
    }

    #[test]
    fn base_point_is_on_the_curve_and_maps_to_nine() {
        let (x, y) = (Fe(B_X), Fe(B_Y));
        let (xx, yy) = (x.square(), y.square());
        // −x² + y² = 1 + d·x²·y²
        assert_eq!(yy.sub(&xx).to_bytes(), Fe::ONE.add(&d().mul(&xx).mul(&yy)).to_bytes());
        assert_eq!(Fe::from_u32(5).mul(&y).to_bytes(), Fe::from_u32(4).0);
        assert_eq!(base_point().montgomery_u(), crate::BASEPOINT);
    }

    #[test]
    fn base_table_holds_the_multiples_of_the_base_point() {
        let fresh = generate();
        if std::env::var_os("X25519_WRITE_BASE_TABLE").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/base_table.bin");
            std::fs::write(path, &fresh).unwrap();
        }
        assert!(
            fresh == BASE_TABLE,
            "src/base_table.bin is stale: rerun with X25519_WRITE_BASE_TABLE=1"
        );
    }

    /// 32 bytes from an LCG.
    fn random_scalar(seed: &mut u64) -> [u8; 32] {
        core::array::from_fn(|_| {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (*seed >> 56) as u8
        })
    }

    #[test]
    fn signed_digits_sum_to_the_scalar_and_stay_in_range() {
        let mut seed = 0x5eed_u64;
        for n in 0..300 {
            let mut k = random_scalar(&mut seed);
            match n {
                0 => k = [0; 32],
                1 => k = [0x88; 32],
                2 => k = [0xFF; 32],
                _ => {}
            }
            k[31] &= 127;
            let e = signed_radix16(&k);
            assert!(e[..63].iter().all(|&d| (-8..8).contains(&d)) && (-8..=8).contains(&e[63]));
            // Σ e_i 16^i, back to bytes with a signed carry.
            let mut bytes = [0u8; 32];
            let mut carry = 0i32;
            for i in 0..32 {
                let v = e[2 * i] as i32 + 16 * e[2 * i + 1] as i32 + carry;
                bytes[i] = v.rem_euclid(256) as u8;
                carry = v.div_euclid(256);
            }
            assert_eq!((bytes, carry), (k, 0));
        }
    }

    #[test]
    fn selection_returns_the_entry_of_the_magnitude_or_the_neutral_element() {
        let row: &[u8; ROW_LEN] = BASE_TABLE[ROW_LEN..2 * ROW_LEN].try_into().unwrap();
        let mut out = [[0u8; 32]; 3];
        select_niels_portable(&mut out, row, 0);
        assert_eq!(out, Niels::IDENTITY.0);
        for digit in (-8..=8i8).filter(|&d| d != 0) {
            select_niels_portable(&mut out, row, digit);
            let i = digit.unsigned_abs() as usize - 1;
            assert_eq!(
                out.as_flattened(),
                &row[i * NIELS_LEN..(i + 1) * NIELS_LEN],
                "digit {digit}"
            );
        }
        for digit in [9, -9, 127, -128] {
            select_niels_portable(&mut out, row, digit);
            assert_eq!(out, Niels::IDENTITY.0, "digit {digit}");
        }
    }

    #[test]
    fn fixed_base_equals_the_ladder() {
        let mut seed = 0xba5e_u64;
        for n in 0..64 {
            let mut k = random_scalar(&mut seed);
            if n == 0 {
                k = [0xFF; 32];
            }
            if n == 1 {
                k = [0; 32];
            }
            assert_eq!(
                crate::x25519_base(&k),
                crate::x25519(&k, &crate::BASEPOINT),
                "scalar {n}"
            );
        }
    }
}
