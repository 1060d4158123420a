#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]

use zeroize::Zeroize;

mod backend;

/// Rate of SHAKE128 in bytes.
pub const SHAKE128_RATE: usize = 168;
/// Rate of SHAKE256 in bytes.
pub const SHAKE256_RATE: usize = 136;
/// Rate of SHA3-256 in bytes.
pub const SHA3_256_RATE: usize = 136;
/// Rate of SHA3-512 in bytes.
pub const SHA3_512_RATE: usize = 72;

const SHA3_PAD: u8 = 0x06;
const SHAKE_PAD: u8 = 0x1F;

/// The Keccak-f\[1600\] permutation every sponge here uses, on the state as
/// 200 bytes (lane i is bytes 8i..8i+8, little-endian, as FIPS 202 orders
/// them). The sponges work on bytes because a variable 64-bit shift per
/// byte is a library call on an 8-bit core. On AVR the assembly, elsewhere
/// [`permute_portable`] (module `backend`).
#[inline]
pub fn permute(state: &mut [u8; 200]) {
    backend::f1600(state);
}

/// The portable permutation (RustCrypto `keccak`), on every target: the
/// reference the AVR assembly is tested against.
#[inline]
pub fn permute_portable(state: &mut [u8; 200]) {
    let mut lanes = [0u64; 25];
    for (lane, bytes) in lanes.iter_mut().zip(state.chunks_exact(8)) {
        *lane = u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
    }
    keccak::Keccak::new().with_f1600(|f1600| f1600(&mut lanes));
    for (lane, bytes) in lanes.iter().zip(state.chunks_exact_mut(8)) {
        bytes.copy_from_slice(&lane.to_le_bytes());
    }
    lanes.zeroize();
}

/// A Keccak sponge: absorb, [`Sponge::finalize`] once, then squeeze.
/// Zeroized on drop (the state holds secret seeds in every KEM).
#[derive(Clone)]
pub struct Sponge {
    state: [u8; 200],
    rate: u8,
    pad: u8,
    pos: u8,
}

impl Sponge {
    const fn new(rate: usize, pad: u8) -> Self {
        Sponge {
            state: [0; 200],
            rate: rate as u8,
            pad,
            pos: 0,
        }
    }
    /// SHAKE128.
    pub const fn shake128() -> Self {
        Self::new(SHAKE128_RATE, SHAKE_PAD)
    }
    /// SHAKE256.
    pub const fn shake256() -> Self {
        Self::new(SHAKE256_RATE, SHAKE_PAD)
    }
    /// SHA3-256 (squeeze 32 bytes after finalize).
    pub const fn sha3_256() -> Self {
        Self::new(SHA3_256_RATE, SHA3_PAD)
    }
    /// SHA3-512 (squeeze 64 bytes after finalize).
    pub const fn sha3_512() -> Self {
        Self::new(SHA3_512_RATE, SHA3_PAD)
    }

    /// Back to an empty sponge of the same function, in place (a sponge
    /// rebuilt by value costs a microcontroller a 203-byte copy).
    pub fn reset(&mut self) {
        self.state.fill(0);
        self.pos = 0;
    }

    #[inline]
    fn xor_byte(&mut self, i: usize, b: u8) {
        self.state[i] ^= b;
    }

    /// Absorbs more input (before [`Sponge::finalize`]), a run of bytes up
    /// to the end of the rate block at a time (one tight xor loop, not a
    /// position check per byte).
    pub fn absorb(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let pos = self.pos as usize;
            let take = (self.rate as usize - pos).min(data.len());
            let (run, rest) = data.split_at(take);
            for (s, &b) in self.state[pos..pos + take].iter_mut().zip(run) {
                *s ^= b;
            }
            data = rest;
            self.pos += take as u8;
            if self.pos == self.rate {
                permute(&mut self.state);
                self.pos = 0;
            }
        }
    }

    /// Pads and switches to squeezing.
    pub fn finalize(&mut self) {
        self.xor_byte(self.pos as usize, self.pad);
        self.xor_byte(self.rate as usize - 1, 0x80);
        permute(&mut self.state);
        self.pos = 0;
    }

    /// The next output bytes up to the end of the current rate block, read
    /// in place (after [`Sponge::finalize`]): what [`Sponge::squeeze`] would
    /// copy out, without the copy or a call per byte. A full block (`rate`
    /// bytes) when the previous squeeze ended on a block boundary.
    pub fn squeeze_block(&mut self) -> &[u8] {
        if self.pos == self.rate {
            permute(&mut self.state);
            self.pos = 0;
        }
        let start = self.pos as usize;
        self.pos = self.rate;
        &self.state[start..self.rate as usize]
    }

    /// Squeezes output bytes (after [`Sponge::finalize`]); may be called
    /// repeatedly. Copies a run up to the end of the rate block at a time.
    pub fn squeeze(&mut self, mut out: &mut [u8]) {
        while !out.is_empty() {
            if self.pos == self.rate {
                permute(&mut self.state);
                self.pos = 0;
            }
            let pos = self.pos as usize;
            let take = (self.rate as usize - pos).min(out.len());
            let (run, rest) = core::mem::take(&mut out).split_at_mut(take);
            run.copy_from_slice(&self.state[pos..pos + take]);
            self.pos += take as u8;
            out = rest;
        }
    }
}

impl Drop for Sponge {
    fn drop(&mut self) {
        self.state.zeroize();
    }
}

/// Not inlined, and the sponge is built here rather than passed in: each
/// call's 200-byte state then lives in this one stack frame instead of
/// taking a slot in every caller's frame for the caller's whole lifetime
/// (stack matters on a 6 KB-SRAM MCU). The output is a slice, so one copy
/// serves every output length.
#[inline(never)]
fn oneshot_into(rate: usize, pad: u8, parts: &[&[u8]], out: &mut [u8]) {
    let mut sponge = Sponge::new(rate, pad);
    for p in parts {
        sponge.absorb(p);
    }
    sponge.finalize();
    sponge.squeeze(out);
}

/// [`oneshot_into`] a new array.
#[inline(always)]
fn oneshot<const OUT: usize>(rate: usize, pad: u8, parts: &[&[u8]]) -> [u8; OUT] {
    let mut out = [0u8; OUT];
    oneshot_into(rate, pad, parts, &mut out);
    out
}

/// SHA3-256 of the concatenation of `parts`.
pub fn sha3_256(parts: &[&[u8]]) -> [u8; 32] {
    oneshot(SHA3_256_RATE, SHA3_PAD, parts)
}

/// SHA3-256 of `len` bytes that `read(at, out)` copies out from `at` on:
/// for a key in memory that is not in the data space (a classic AVR's
/// program memory), read 32 bytes at a time.
#[inline(never)]
pub fn sha3_256_read(read: &dyn Fn(usize, &mut [u8]), len: usize) -> [u8; 32] {
    let mut sponge = Sponge::sha3_256();
    let mut piece = [0u8; 32];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(piece.len());
        let (bytes, _) = piece.split_at_mut(n);
        read(at, bytes);
        sponge.absorb(bytes);
        at += n;
    }
    piece.zeroize();
    sponge.finalize();
    let mut out = [0u8; 32];
    sponge.squeeze(&mut out);
    out
}

/// SHA3-512 of the concatenation of `parts`.
pub fn sha3_512(parts: &[&[u8]]) -> [u8; 64] {
    oneshot(SHA3_512_RATE, SHA3_PAD, parts)
}

/// SHAKE128 of the concatenation of `parts`, `OUT` bytes.
pub fn shake128<const OUT: usize>(parts: &[&[u8]]) -> [u8; OUT] {
    oneshot(SHAKE128_RATE, SHAKE_PAD, parts)
}

/// SHAKE256 of the concatenation of `parts`, `OUT` bytes.
pub fn shake256<const OUT: usize>(parts: &[&[u8]]) -> [u8; OUT] {
    oneshot(SHAKE256_RATE, SHAKE_PAD, parts)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use sha3::digest::{Digest, ExtendableOutput, Update, XofReader};
    use std::vec::Vec;

    fn input(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + 3) as u8).collect()
    }

    /// `squeeze_block` hands out exactly the bytes `squeeze` copies, at a
    /// block boundary and from the middle of a block.
    #[test]
    fn squeeze_block_is_squeeze_in_place() {
        for skip in [0usize, 1, 100, 167, 168, 169, 400] {
            let mut a = Sponge::shake128();
            a.absorb(b"squeeze_block");
            a.finalize();
            let mut b = a.clone();
            let mut head = [0u8; 400];
            a.squeeze(&mut head[..skip]);
            b.squeeze(&mut head[..skip]);
            let mut expected = [0u8; 3 * 168];
            a.squeeze(&mut expected);
            let mut got = std::vec::Vec::new();
            while got.len() < expected.len() {
                got.extend_from_slice(b.squeeze_block());
            }
            assert_eq!(got[..expected.len()], expected[..], "after {skip} bytes");
        }
    }

    /// Read in pieces, the hash is the one-shot hash (lengths around the
    /// piece and the rate).
    #[test]
    fn sha3_256_read_is_sha3_256() {
        for len in [0usize, 1, 31, 32, 33, 135, 136, 137, 800, 1184] {
            let data = input(len);
            let read = |at: usize, out: &mut [u8]| out.copy_from_slice(&data[at..at + out.len()]);
            assert_eq!(sha3_256_read(&read, len), sha3_256(&[&data]), "{len} bytes");
        }
    }

    /// Agreement with RustCrypto's sha3 around every rate boundary.
    #[test]
    fn matches_sha3_crate() {
        for len in [0, 1, 71, 72, 73, 135, 136, 137, 167, 168, 169, 500] {
            let m = input(len);
            assert_eq!(
                sha3_256(&[&m]).as_slice(),
                sha3::Sha3_256::digest(&m).as_slice(),
                "len {len}"
            );
            assert_eq!(
                sha3_512(&[&m[..len / 2], &m[len / 2..]]).as_slice(),
                sha3::Sha3_512::digest(&m).as_slice()
            );
            for (ours, theirs_len, rate) in [(Sponge::shake128(), 400, 168), (Sponge::shake256(), 300, 136)] {
                let mut s = ours;
                s.absorb(&m);
                s.finalize();
                let mut out = std::vec![0u8; theirs_len];
                // Squeeze in uneven pieces to cross block boundaries.
                let (a, b) = out.split_at_mut(rate - 1);
                s.squeeze(a);
                s.squeeze(b);
                let mut expected = std::vec![0u8; theirs_len];
                if rate == 168 {
                    let mut h = sha3::Shake128::default();
                    h.update(&m);
                    h.finalize_xof().read(&mut expected);
                } else {
                    let mut h = sha3::Shake256::default();
                    h.update(&m);
                    h.finalize_xof().read(&mut expected);
                }
                assert_eq!(out, expected, "shake rate {rate}, len {len}");
            }
        }
    }
}
