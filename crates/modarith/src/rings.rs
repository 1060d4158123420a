//! The rings the schemes use, as aliases of [`Ntt`] with their default
//! reduction. Every alias takes the reduction as a parameter, so a benchmark
//! can instantiate the paper's variants (`Kyber<Montgomery<Q3329>>`, …).

use crate::modulus::{Q3329, Q7681, Q769};
use crate::ntt::Ntt;
use crate::reduce::{KRed2x, NttFriendlyMontgomery};

/// Z_769[x]/(x^512 + 1), 7 layers, degree-4 bases (CTRU-Light §6).
pub type Ctru769<R = KRed2x<Q769>> = Ntt<R, 512, 7>;
/// Z_3329[x]/(x^512 + 1), 7 layers, degree-4 bases (CTRU-Light decryption).
pub type Ctru3329<R = NttFriendlyMontgomery<Q3329>> = Ntt<R, 512, 7>;
/// Z_3329[x]/(x^256 + 1), 7 layers, degree-2 bases (FIPS 203 §4.3).
pub type Kyber<R = NttFriendlyMontgomery<Q3329>> = Ntt<R, 256, 7>;
/// Saber's first NTT prime: the same ring and layout as [`Kyber`].
pub type Saber3329<R = NttFriendlyMontgomery<Q3329>> = Ntt<R, 256, 7>;
/// Z_7681[x]/(x^256 + 1), 8 layers, degree-1 bases (a complete NTT).
pub type Saber7681<R = NttFriendlyMontgomery<Q7681>> = Ntt<R, 256, 8>;
