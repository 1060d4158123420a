//! RNG plumbing: one `randombytes` call, the RNG's own error handed back, the seeded test generator.

use core::fmt;

use rand_core::{TryCryptoRng, TryRng};

/// The RNG failed (a KEM crate maps this into its own error type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RngError;

impl fmt::Display for RngError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("random number generator failed")
    }
}

impl core::error::Error for RngError {}

/// One `randombytes(out.len())` call: KATs depend on the call boundaries.
/// Any `rand_core` 0.10 [`TryCryptoRng`] (every [`rand_core::CryptoRng`] is one).
pub fn fill<R: TryCryptoRng + ?Sized>(rng: &mut R, out: &mut [u8]) -> Result<(), RngError> {
    rng.try_fill_bytes(out).map_err(|_| RngError)
}

/// An RNG adapter that keeps the error of the RNG it wraps, so that an
/// operation reporting only "the RNG failed" (our KEMs' `Error::Rng`) can
/// hand the RNG's own error back, as RustCrypto's `Generate` asks.
#[derive(Debug)]
pub struct ErrorCapture<'a, R: TryCryptoRng + ?Sized> {
    rng: &'a mut R,
    error: Option<R::Error>,
}

impl<R: TryCryptoRng + ?Sized> TryRng for ErrorCapture<'_, R> {
    type Error = RngError;
    fn try_next_u32(&mut self) -> Result<u32, RngError> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_next_u64(&mut self) -> Result<u64, RngError> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), RngError> {
        self.rng.try_fill_bytes(dst).map_err(|e| {
            self.error = Some(e);
            RngError
        })
    }
}

impl<R: TryCryptoRng + ?Sized> TryCryptoRng for ErrorCapture<'_, R> {}

/// Runs `op`, whose only failure is its RNG's, with `rng` and returns the
/// RNG's own error if it fails. An error of `op` without one of the RNG
/// (which the KEM operations here never return) reruns `op` rather than
/// panicking. With an infallible RNG (`R::Error = Infallible`) the result
/// is irrefutably `Ok`.
///
/// ```
/// use kem_common::{with_rng, Tape, TapeExhausted};
/// use kyber512_avr::ml_kem_512;
///
/// // The KEM reports only `Error::Rng`; `with_rng` hands back the generator's own error.
/// let mut tape = Tape::new(&[0u8; 10]); // too short for a key pair
/// let result = with_rng(&mut tape, |rng| ml_kem_512::keygen(rng));
/// assert_eq!(result.unwrap_err(), TapeExhausted);
/// ```
pub fn with_rng<R: TryCryptoRng + ?Sized, T, E>(
    rng: &mut R,
    mut op: impl FnMut(&mut ErrorCapture<'_, R>) -> Result<T, E>,
) -> Result<T, R::Error> {
    loop {
        let mut capture = ErrorCapture {
            rng: &mut *rng,
            error: None,
        };
        match op(&mut capture) {
            Ok(value) => return Ok(value),
            Err(_) => {
                if let Some(error) = capture.error {
                    return Err(error);
                }
            }
        }
    }
}

/// The one seeded generator of the workspace's tests, benchmarks and
/// examples: ChaCha20 from a 64-bit seed (feature `test-rng`).
/// Deterministic, so never for real keys: those come from the system RNG
/// (e.g. `rand::rng()`) or a hardware TRNG.
#[cfg(feature = "test-rng")]
pub fn test_rng(seed: u64) -> rand_chacha::ChaCha20Rng {
    rand_core::SeedableRng::seed_from_u64(seed)
}
