//! The rings the schemes use. Each ring is an [`Ntt`] shape; the plain alias
//! fixes the default reduction, the `…With<R>` alias takes any reduction so a
//! benchmark can instantiate the paper's variants
//! (`KyberWith<Montgomery<Q3329>>`, …).

use crate::modulus::{Q3329, Q7681, Q769};
use crate::ntt::Ntt;
use crate::reduce::{KRed2x, NttFriendlyMontgomery};

/// Z_769\[x\]/(x^512 + 1), 7 layers, degree-4 bases (CTRU-Light §6), any reduction.
pub type Ctru769With<R> = Ntt<R, 512, 7>;
/// [`Ctru769With`] with K-RED2X, the paper's fastest variant.
pub type Ctru769 = Ctru769With<KRed2x<Q769>>;
/// Z_3329\[x\]/(x^512 + 1), 7 layers, degree-4 bases (the CTRU-Light paper's second
/// decryption ring, benchmarked per routine), any reduction.
pub type Ctru3329With<R> = Ntt<R, 512, 7>;
/// [`Ctru3329With`] with NTT-friendly Montgomery.
pub type Ctru3329 = Ctru3329With<NttFriendlyMontgomery<Q3329>>;
/// Z_3329\[x\]/(x^256 + 1), 7 layers, degree-2 bases (FIPS 203 §4.3), any reduction.
pub type KyberWith<R> = Ntt<R, 256, 7>;
/// [`KyberWith`] with NTT-friendly Montgomery.
pub type Kyber = KyberWith<NttFriendlyMontgomery<Q3329>>;
/// Saber's first NTT prime: the same ring and layout as [`Kyber`].
pub type Saber3329 = Kyber;
/// Z_7681\[x\]/(x^256 + 1), 8 layers, degree-1 bases (a complete NTT), any reduction.
pub type Saber7681With<R> = Ntt<R, 256, 8>;
/// [`Saber7681With`] with NTT-friendly Montgomery.
pub type Saber7681 = Saber7681With<NttFriendlyMontgomery<Q7681>>;
