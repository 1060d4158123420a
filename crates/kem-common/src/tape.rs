//! The replay tape: known randomness handed out in order.

use core::fmt;

use rand_core::{TryCryptoRng, TryRng};

/// An RNG that replays `bytes` in order: known randomness fed to a KEM by
/// a test (a KAT's draws, a standard's worked example), by the firmware
/// (the bytes the host recorded and sent, so the host can reproduce every
/// output) and by the host tools. A draw past the end fails
/// (`try_fill_bytes`, which the KEMs use, returns an error; the KEM returns
/// its own), so a caller also learns when more was drawn than the tape
/// holds. `used()` tells how much was drawn.
///
/// Known randomness makes known keys: never a source for real ones.
///
/// ```
/// use kem_common::Tape;
/// use kyber512_avr::{ml_kem_512, Error};
///
/// let draws = [0x42u8; 96]; // ML-KEM-512 draws d ‖ z (64 bytes), then m (32)
/// let mut tape = Tape::new(&draws);
/// let (dk, ek) = ml_kem_512::keygen(&mut tape)?;
/// let (ct, ss) = ml_kem_512::encapsulate(&ek, &mut tape)?;
/// assert_eq!(tape.used(), 96);
/// assert_eq!(ml_kem_512::decapsulate(&dk, &ct), ss);
/// // Nothing left: the next draw fails, and the KEM says so.
/// assert_eq!(ml_kem_512::encapsulate(&ek, &mut tape).unwrap_err(), Error::Rng);
/// # Ok::<(), Error>(())
/// ```
pub struct Tape<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Tape<'a> {
    /// A tape over `bytes`, nothing drawn yet.
    pub fn new(bytes: &'a [u8]) -> Self {
        Tape { bytes, pos: 0 }
    }
    /// Bytes drawn so far (all of them after a failed draw).
    pub fn used(&self) -> usize {
        self.pos
    }
}

/// A [`Tape`] read past its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TapeExhausted;

impl fmt::Display for TapeExhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("randomness tape exhausted")
    }
}

impl core::error::Error for TapeExhausted {}

impl TryRng for Tape<'_> {
    type Error = TapeExhausted;
    fn try_next_u32(&mut self) -> Result<u32, TapeExhausted> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_next_u64(&mut self) -> Result<u64, TapeExhausted> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), TapeExhausted> {
        let end = self.pos + dest.len();
        match self.bytes.get(self.pos..end) {
            Some(src) => {
                dest.copy_from_slice(src);
                self.pos = end;
                Ok(())
            }
            None => {
                self.pos = self.bytes.len();
                Err(TapeExhausted)
            }
        }
    }
}

impl TryCryptoRng for Tape<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tape_replays_in_order_and_fails_past_its_end() {
        let bytes = [1u8, 2, 3, 4, 5];
        let mut tape = Tape::new(&bytes);
        let (mut a, mut b) = ([0u8; 2], [0u8; 3]);
        assert!(tape.try_fill_bytes(&mut a).is_ok());
        assert!(tape.try_fill_bytes(&mut b).is_ok());
        assert_eq!((a, b, tape.used()), ([1, 2], [3, 4, 5], 5));
        let mut c = [9u8; 1];
        assert!(tape.try_fill_bytes(&mut c).is_err());
        assert_eq!((c, tape.used()), ([9], 5));
        let mut short = Tape::new(&bytes[..1]);
        assert!(
            short.try_fill_bytes(&mut a).is_err(),
            "a draw longer than the rest fails whole"
        );
        assert_eq!(a, [1, 2]);
    }
}
