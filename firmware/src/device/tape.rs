//! The randomness of an operation: the bytes the host sent, replayed in
//! order (so the host can reproduce every output); running out is an error.

use rand_core::{CryptoRng, RngCore};

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

impl RngCore for Tape {
    fn next_u32(&mut self) -> u32 {
        rand_core::impls::next_u32_via_fill(self)
    }
    fn next_u64(&mut self) -> u64 {
        rand_core::impls::next_u64_via_fill(self)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        let _ = self.try_fill_bytes(dest);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        let end = self.pos + dest.len();
        match self.bytes.get(self.pos..end) {
            Some(src) => {
                dest.copy_from_slice(src);
                self.pos = end;
                Ok(())
            }
            None => {
                self.pos = self.bytes.len();
                Err(rand_core::Error::from(core::num::NonZeroU32::MIN))
            }
        }
    }
}

impl CryptoRng for Tape {}
