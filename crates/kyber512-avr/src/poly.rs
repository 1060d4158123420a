//! Polynomials of R_q and their NTT (FIPS 203 §4.3), on modarith's Kyber ring.
//!
//! modarith's NTT for q = 3329, n = 256, 7 layers, degree-2 bases is the
//! FIPS 203 NTT (same ζ = 17, same bit-reversed order, base multiplication
//! with γ = ζ^{2·brv7(i)+1}); coefficients are kept centred, |a_i| ≤ (q−1)/2.

use kem_common::Wipe;
use modarith::rings::Kyber as Ring;
use modarith::{Modulus, Q3329};

use crate::params::N;

/// A polynomial with centred coefficients.
#[derive(Clone, Copy)]
pub struct Poly(pub [i16; N]);

impl Poly {
    /// The zero polynomial.
    pub const fn zero() -> Self {
        Poly([0; N])
    }
    /// NTT in place (Algorithm 9).
    pub fn ntt(&mut self) {
        Ring::forward(&mut self.0);
    }
    /// Inverse NTT in place (Algorithm 10).
    pub fn inv_ntt(&mut self) {
        Ring::inverse(&mut self.0);
    }
    /// `self = self ∘ b` in the NTT domain (Algorithms 11 and 12).
    pub fn base_mul_assign(&mut self, b: &Poly) {
        Ring::base_mul_assign(&mut self.0, &b.0);
    }
    /// `self += a ∘ b` in the NTT domain (Algorithms 11 and 12).
    pub fn base_mul_acc(&mut self, a: &Poly, b: &Poly) {
        Ring::base_mul_acc(&a.0, &b.0, &mut self.0);
    }
    /// `self += other`, centred (both centred: the sum is in (−q, q), so
    /// the masked fix-up centres it).
    pub fn add(&mut self, other: &Poly) {
        for (x, y) in self.0.iter_mut().zip(other.0.iter()) {
            *x = Q3329::center_fixup(*x + *y);
        }
    }
    /// `self −= other`, centred (as for [`Self::add`]).
    pub fn sub(&mut self, other: &Poly) {
        for (x, y) in self.0.iter_mut().zip(other.0.iter()) {
            *x = Q3329::center_fixup(*x - *y);
        }
    }
}

impl Wipe for Poly {
    fn wipe(&mut self) {
        self.0.wipe();
    }
}
