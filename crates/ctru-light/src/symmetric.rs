//! Symmetric back-ends (`SPEC.md` §5): XOF, Hg and Hrej.

use fips202::Sponge;

mod sealed {
    pub trait Sealed {}
}

/// A symmetric back-end. Sealed: [`Sha3`] and [`Ascon`].
pub trait Backend:
    sealed::Sealed + Copy + Default + core::fmt::Debug + Ord + core::hash::Hash + Send + Sync + 'static
{
    /// Name used in KAT headers and benchmark tables.
    const NAME: &'static str;
    /// XOF(x, L) of the concatenation of `parts`, `out.len()` bytes.
    fn xof(parts: &[&[u8]], out: &mut [u8]);
    /// Hg(x): 64 bytes.
    fn hg(parts: &[&[u8]]) -> [u8; 64];
    /// Hrej(x): 32 bytes.
    fn hrej(parts: &[&[u8]]) -> [u8; 32];
}

/// SHA-3 back-end: XOF = SHAKE256, Hg = SHA3-512, Hrej = SHA3-512(x)[0..32].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha3;

impl sealed::Sealed for Sha3 {}

impl Backend for Sha3 {
    const NAME: &'static str = "sha3";
    #[inline(never)]
    fn xof(parts: &[&[u8]], out: &mut [u8]) {
        let mut s = Sponge::shake256();
        for p in parts {
            s.absorb(p);
        }
        s.finalize();
        s.squeeze(out);
    }
    fn hg(parts: &[&[u8]]) -> [u8; 64] {
        fips202::sha3_512(parts)
    }
    fn hrej(parts: &[&[u8]]) -> [u8; 32] {
        let full = fips202::sha3_512(parts);
        let mut out = [0u8; 32];
        out.copy_from_slice(&full[..32]);
        out
    }
}

/// Ascon back-end (NIST SP 800-232): XOF = Ascon-XOF128(x, L),
/// Hg = Ascon-XOF128(x, 64), Hrej = Ascon-XOF128(x, 32), through the
/// workspace's `ascon-sponge` (AVR assembly on AVR; tested equal to
/// RustCrypto's `ascon-hash`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ascon;

impl sealed::Sealed for Ascon {}

impl Backend for Ascon {
    const NAME: &'static str = "ascon";
    fn xof(parts: &[&[u8]], out: &mut [u8]) {
        ascon_sponge::xof128(parts, out);
    }
    fn hg(parts: &[&[u8]]) -> [u8; 64] {
        let mut out = [0u8; 64];
        Self::xof(parts, &mut out);
        out
    }
    fn hrej(parts: &[&[u8]]) -> [u8; 32] {
        let mut out = [0u8; 32];
        Self::xof(parts, &mut out);
        out
    }
}
