//! Ring arithmetic (`SPEC.md` §6), on modarith. It never changes
//! a byte of pk, sk, ct or ss; the variants differ only in speed, so they are
//! a type parameter that benchmarks instantiate one by one. They choose the
//! reduction of the q = 769 NTT (key generation and encryption); decryption's
//! product is computed modulo q2 = 256 (Karatsuba, `mul256`) in every variant.

use modarith::rings::Ctru769With;
use modarith::{KRed2x, Montgomery, NttFriendlyMontgomery, Reduction, Q769};

mod sealed {
    pub trait Sealed {}
}

/// The reduction of the q = 769 NTT ring.
pub trait Arithmetic: sealed::Sealed + 'static {
    /// The paper's name of the variant.
    const NAME: &'static str;
    /// Reduction of the q = 769 ring.
    type R769: Reduction<Modulus = Q769>;
}

/// K-RED2X (the paper's fastest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Kred2x;
/// NTT-friendly Montgomery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MontgomeryOpt;
/// Plain Montgomery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MontgomeryPlain;

impl sealed::Sealed for Kred2x {}
impl sealed::Sealed for MontgomeryOpt {}
impl sealed::Sealed for MontgomeryPlain {}

impl Arithmetic for Kred2x {
    const NAME: &'static str = "Kred";
    type R769 = KRed2x<Q769>;
}
impl Arithmetic for MontgomeryOpt {
    const NAME: &'static str = "Montgomery-opt";
    type R769 = NttFriendlyMontgomery<Q769>;
}
impl Arithmetic for MontgomeryPlain {
    const NAME: &'static str = "Montgomery";
    type R769 = Montgomery<Q769>;
}

/// The q = 769 ring of variant `A`.
pub type Ring769<A> = Ctru769With<<A as Arithmetic>::R769>;
