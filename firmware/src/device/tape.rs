//! The randomness of an operation: the bytes the host sent, replayed in
//! order (so the host can reproduce every output); running out is an error.

use rand_core::{TryCryptoRng, TryRng};

/// The tape ran out.
#[derive(Debug)]
pub struct Exhausted;

impl core::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("tape exhausted")
    }
}

impl core::error::Error for Exhausted {}

/// An RNG replaying a tape.
pub struct Tape {
    bytes: &'static [u8],
    pos: usize,
}

impl Tape {
    /// Replays `bytes` from the start.
    pub fn new(bytes: &'static [u8]) -> Tape {
        Tape { bytes, pos: 0 }
    }

    /// Bytes drawn so far (all of them once it ran out).
    pub fn used(&self) -> usize {
        self.pos
    }
}

impl TryRng for Tape {
    type Error = Exhausted;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Self::Error> {
        let end = self.pos + dest.len();
        match self.bytes.get(self.pos..end) {
            Some(src) => {
                dest.copy_from_slice(src);
                self.pos = end;
                Ok(())
            }
            None => {
                self.pos = self.bytes.len();
                Err(Exhausted)
            }
        }
    }
}

impl TryCryptoRng for Tape {}
