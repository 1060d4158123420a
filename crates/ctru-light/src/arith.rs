//! Ring arithmetic (CTRU-Light definition §6), on modarith. It never changes
//! a byte of pk, sk, ct or ss; the variants differ only in speed, so they are
//! a type parameter that benchmarks instantiate one by one.

use modarith::rings::{Ctru3329With, Ctru769With};
use modarith::{KRed2x, Montgomery, NttFriendlyMontgomery, Reduction, Q3329, Q769};

mod sealed {
    pub trait Sealed {}
}

/// The reductions used in the two NTT rings.
pub trait Arithmetic: sealed::Sealed + 'static {
    /// The paper's name of the variant.
    const NAME: &'static str;
    /// Reduction of the q = 769 ring.
    type R769: Reduction<Modulus = Q769>;
    /// Reduction of the q = 3329 ring (decryption's second prime).
    type R3329: Reduction<Modulus = Q3329>;
}

/// K-RED2X for 769 (the paper's fastest); K-RED2X does not fit 16 bits for
/// 3329 (k² = 169), so that ring uses NTT-friendly Montgomery.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kred2x;
/// NTT-friendly Montgomery in both rings.
#[derive(Clone, Copy, Debug, Default)]
pub struct MontgomeryOpt;
/// Plain Montgomery in both rings.
#[derive(Clone, Copy, Debug, Default)]
pub struct MontgomeryPlain;

impl sealed::Sealed for Kred2x {}
impl sealed::Sealed for MontgomeryOpt {}
impl sealed::Sealed for MontgomeryPlain {}

impl Arithmetic for Kred2x {
    const NAME: &'static str = "Kred";
    type R769 = KRed2x<Q769>;
    type R3329 = NttFriendlyMontgomery<Q3329>;
}
impl Arithmetic for MontgomeryOpt {
    const NAME: &'static str = "Montgomery-opt";
    type R769 = NttFriendlyMontgomery<Q769>;
    type R3329 = NttFriendlyMontgomery<Q3329>;
}
impl Arithmetic for MontgomeryPlain {
    const NAME: &'static str = "Montgomery";
    type R769 = Montgomery<Q769>;
    type R3329 = Montgomery<Q3329>;
}

/// The q = 769 ring of variant `A`.
pub type Ring769<A> = Ctru769With<<A as Arithmetic>::R769>;
/// The q = 3329 ring of variant `A`.
pub type Ring3329<A> = Ctru3329With<<A as Arithmetic>::R3329>;
