//! Ascon-AEAD128 (NIST SP 800-232 §4) on the same permutation swap point as
//! the XOF ([`crate::permute`]: assembly on AVR), so a sensor carries one
//! Ascon permutation. The state is 40 bytes, word i at bytes 8i..8i+8,
//! little-endian; the rate is the first 16 bytes. Tested against RustCrypto's
//! `ascon-aead` on random keys, nonces, associated data and messages of every
//! length around the block boundaries.

use zeroize::Zeroize;

use crate::permute;

/// The Ascon-AEAD128 initial value (SP 800-232 §4.1), as the first state word.
const IV: u64 = 0x0000_1000_808c_0001;
/// Rate in bytes.
const RATE: usize = 16;

/// The tag did not verify; the buffer has been zeroed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagMismatch;

struct Core {
    state: [u8; 40],
}

impl Core {
    /// Initialization and the associated data (SP 800-232 Algorithm 3/4).
    fn new(key: &[u8; 16], nonce: &[u8; 16], ad: &[u8]) -> Core {
        let mut state = [0u8; 40];
        state[..8].copy_from_slice(&IV.to_le_bytes());
        state[8..24].copy_from_slice(key);
        state[24..].copy_from_slice(nonce);
        permute(&mut state, 12);
        xor_into(&mut state[24..], key);
        let mut core = Core { state };
        if !ad.is_empty() {
            let mut blocks = ad.chunks_exact(RATE);
            for block in blocks.by_ref() {
                xor_into(&mut core.state[..RATE], block);
                permute(&mut core.state, 8);
            }
            let last = blocks.remainder();
            xor_into(&mut core.state[..last.len()], last);
            core.state[last.len()] ^= 0x01;
            permute(&mut core.state, 8);
        }
        // Domain separation: the last bit of the state.
        core.state[39] ^= 0x80;
        core
    }

    /// Finalization: the 16-byte tag.
    fn tag(mut self, key: &[u8; 16]) -> [u8; 16] {
        xor_into(&mut self.state[RATE..RATE + 16], key);
        permute(&mut self.state, 12);
        xor_into(&mut self.state[24..], key);
        let mut tag = [0u8; 16];
        tag.copy_from_slice(&self.state[24..]);
        tag
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        self.state.zeroize();
    }
}

fn xor_into(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= s;
    }
}

/// Encrypts `buf` in place under `key` and `nonce`, authenticating `ad`
/// too; returns the tag. The nonce must never repeat under one key.
pub fn encrypt(key: &[u8; 16], nonce: &[u8; 16], ad: &[u8], buf: &mut [u8]) -> [u8; 16] {
    let mut core = Core::new(key, nonce, ad);
    let mut blocks = buf.chunks_exact_mut(RATE);
    for block in blocks.by_ref() {
        xor_into(&mut core.state[..RATE], block);
        block.copy_from_slice(&core.state[..RATE]);
        permute(&mut core.state, 8);
    }
    let last = blocks.into_remainder();
    xor_into(&mut core.state[..last.len()], last);
    last.copy_from_slice(&core.state[..last.len()]);
    core.state[last.len()] ^= 0x01;
    core.tag(key)
}

/// Decrypts `buf` in place and checks `tag` in constant time; on a
/// mismatch `buf` is zeroed (no unauthenticated plaintext escapes).
pub fn decrypt(key: &[u8; 16], nonce: &[u8; 16], ad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> Result<(), TagMismatch> {
    let mut core = Core::new(key, nonce, ad);
    let mut blocks = buf.chunks_exact_mut(RATE);
    for block in blocks.by_ref() {
        for (s, b) in core.state[..RATE].iter_mut().zip(block.iter_mut()) {
            let c = *b;
            *b ^= *s;
            *s = c;
        }
        permute(&mut core.state, 8);
    }
    let last = blocks.into_remainder();
    let n = last.len();
    for (s, b) in core.state[..n].iter_mut().zip(last.iter_mut()) {
        let c = *b;
        *b ^= *s;
        *s = c;
    }
    core.state[n] ^= 0x01;
    let expected = core.tag(key);
    // OR of all differences: zero iff equal, with no early exit.
    let diff = expected.iter().zip(tag).fold(0u8, |d, (a, b)| d | (a ^ b));
    if diff == 0 {
        Ok(())
    } else {
        buf.zeroize();
        Err(TagMismatch)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ascon_aead::aead::{AeadInOut, KeyInit};
    use ascon_aead::{AsconAead128, AsconAead128Key, AsconAead128Nonce};
    use std::vec::Vec;

    /// Equal to RustCrypto's ascon-aead for every message length 0..50 and
    /// associated-data length 0..35 (all block-boundary cases), and a tag,
    /// ciphertext or AD bit flipped fails and zeroes the buffer.
    #[test]
    fn matches_ascon_aead_and_rejects_tampering() {
        let mut seed = 0x5eed_u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 56) as u8
        };
        for msg_len in 0..50 {
            for ad_len in [0usize, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33] {
                let key: [u8; 16] = core::array::from_fn(|_| next());
                let nonce: [u8; 16] = core::array::from_fn(|_| next());
                let ad: Vec<u8> = (0..ad_len).map(|_| next()).collect();
                let msg: Vec<u8> = (0..msg_len).map(|_| next()).collect();

                let mut ours = msg.clone();
                let tag = encrypt(&key, &nonce, &ad, &mut ours);
                let mut theirs = msg.clone();
                let their_tag = AsconAead128::new(&AsconAead128Key::from(key))
                    .encrypt_inout_detached(&AsconAead128Nonce::from(nonce), &ad, theirs.as_mut_slice().into())
                    .unwrap();
                assert_eq!(ours, theirs, "ct, msg {msg_len}, ad {ad_len}");
                assert_eq!(&tag[..], their_tag.as_slice(), "tag, msg {msg_len}, ad {ad_len}");

                let mut back = ours.clone();
                assert_eq!(decrypt(&key, &nonce, &ad, &mut back, &tag), Ok(()));
                assert_eq!(back, msg);

                let mut bad_tag = tag;
                bad_tag[(msg_len + ad_len) % 16] ^= 1;
                let mut buf = ours.clone();
                assert_eq!(decrypt(&key, &nonce, &ad, &mut buf, &bad_tag), Err(TagMismatch));
                assert!(buf.iter().all(|&b| b == 0));
                if msg_len > 0 {
                    let mut buf = ours.clone();
                    buf[msg_len / 2] ^= 0x40;
                    assert_eq!(decrypt(&key, &nonce, &ad, &mut buf, &tag), Err(TagMismatch));
                }
                if ad_len > 0 {
                    let mut ad2 = ad.clone();
                    ad2[0] ^= 1;
                    let mut buf = ours.clone();
                    assert_eq!(decrypt(&key, &nonce, &ad2, &mut buf, &tag), Err(TagMismatch));
                }
            }
        }
    }
}
