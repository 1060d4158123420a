#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]

use zeroize::Zeroize;

pub mod aead;
mod backend;

/// Applies `rounds` (1..=12) rounds of the Ascon permutation to `state`,
/// five 64-bit words as 40 little-endian bytes (the sponge works on bytes:
/// a variable 64-bit shift per byte is a library call on an 8-bit core).
/// On AVR the assembly, elsewhere [`permute_portable`] (module `backend`).
#[inline]
pub fn permute(state: &mut [u8; 40], rounds: u8) {
    backend::permute(state, rounds);
}

/// The portable permutation (RustCrypto `ascon-core`), on every target: the
/// reference the AVR assembly is tested against.
pub fn permute_portable(state: &mut [u64; 5], rounds: u8) {
    let mut s = ascon_core::State::new(state[0], state[1], state[2], state[3], state[4]);
    s.permute_n(rounds as usize);
    for (i, w) in state.iter_mut().enumerate() {
        *w = s[i];
    }
}

/// Ascon-XOF128: absorb, [`Xof128::finalize`] once, then squeeze.
/// Zeroized on drop.
#[derive(Clone)]
pub struct Xof128 {
    state: [u8; 40],
    pos: u8,
}

/// The state after p12 of the Ascon-XOF128 IV (SP 800-232 §5.2), as bytes.
const XOF128_IV: [u8; 40] = {
    let mut b = [0u8; 40];
    let mut i = 0;
    while i < 40 {
        b[i] = (XOF128_IV_WORDS[i >> 3] >> (8 * (i & 7))) as u8;
        i += 1;
    }
    b
};

/// The Ascon-CXOF128 initial value (SP 800-232 §5.3), before p12.
const CXOF128_IV_WORD: u64 = 0x0000_0800_00cc_0004;

/// The same as five words.
const XOF128_IV_WORDS: [u64; 5] = [
    0xda82ce768d9447eb,
    0xcc7ce6c75f1ef969,
    0xe7508fd780085631,
    0x0ee0ea53416b58cc,
    0xe0547524db6f0bde,
];

impl Default for Xof128 {
    fn default() -> Self {
        Self::new()
    }
}

impl Xof128 {
    /// A fresh XOF.
    pub const fn new() -> Self {
        Xof128 {
            state: XOF128_IV,
            pos: 0,
        }
    }

    #[inline]
    fn xor_byte(&mut self, i: u8, b: u8) {
        self.state[i as usize] ^= b;
    }

    /// Ascon-CXOF128 (SP 800-232 §5.3) with customization string `z`,
    /// given as parts that are concatenated (at most 2^11 bits in all).
    /// Absorb the message next, as with [`Xof128::new`].
    pub fn cxof128(z: &[&[u8]]) -> Self {
        let mut x = Xof128 { state: [0; 40], pos: 0 };
        x.state[..8].copy_from_slice(&CXOF128_IV_WORD.to_le_bytes());
        permute(&mut x.state, 12);
        let bits = z.iter().map(|p| p.len() as u64).sum::<u64>() << 3;
        x.absorb(&bits.to_le_bytes());
        for p in z {
            x.absorb(p);
        }
        // Z is padded and closed off like a message, then the message begins.
        x.finalize();
        x
    }

    /// Absorbs input (before [`Xof128::finalize`]).
    pub fn absorb(&mut self, data: &[u8]) {
        for &b in data {
            self.xor_byte(self.pos, b);
            self.pos += 1;
            if self.pos == 8 {
                permute(&mut self.state, 12);
                self.pos = 0;
            }
        }
    }

    /// Pads (0x01 after the message) and switches to squeezing.
    pub fn finalize(&mut self) {
        self.xor_byte(self.pos, 0x01);
        permute(&mut self.state, 12);
        self.pos = 0;
    }

    /// Squeezes output (after [`Xof128::finalize`]); may be called repeatedly.
    pub fn squeeze(&mut self, out: &mut [u8]) {
        for o in out {
            if self.pos == 8 {
                permute(&mut self.state, 12);
                self.pos = 0;
            }
            *o = self.state[self.pos as usize];
            self.pos += 1;
        }
    }
}

impl Drop for Xof128 {
    fn drop(&mut self) {
        self.state.zeroize();
    }
}

/// Ascon-XOF128 of the concatenation of `parts` into `out`. Not inlined, so
/// callers do not each reserve stack for a state.
#[inline(never)]
pub fn xof128(parts: &[&[u8]], out: &mut [u8]) {
    let mut x = Xof128::new();
    for p in parts {
        x.absorb(p);
    }
    x.finalize();
    x.squeeze(out);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use ascon_hash::{AsconXof128, ExtendableOutput, Update, XofReader};
    use std::vec::Vec;

    /// The IV constant is p12 of the SP 800-232 initial value.
    #[test]
    fn iv_is_p12_of_the_initial_value() {
        let mut s = [0x0000_0800_00cc_0003u64, 0, 0, 0, 0];
        permute_portable(&mut s, 12);
        assert_eq!(s, XOF128_IV_WORDS);
    }

    fn hex64(s: &str) -> [u8; 64] {
        core::array::from_fn(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
    }

    fn cxof(msg: &[u8], z: &[u8]) -> [u8; 64] {
        let mut x = Xof128::cxof128(&[&z[..z.len() / 2], &z[z.len() / 2..]]);
        x.absorb(msg);
        x.finalize();
        let mut out = [0u8; 64];
        x.squeeze(&mut out);
        out
    }

    /// Records 1, 4 and 9 of the LWC Ascon-CXOF128 KAT (512-bit output),
    /// the customization string split in two parts.
    #[test]
    fn cxof128_known_answers() {
        let z: [u8; 8] = core::array::from_fn(|i| 0x10 + i as u8);
        assert_eq!(
            cxof(b"", b""),
            hex64("4f50159ef70bb3dad8807e034eaebd44c4fa2cbbc8cf1f05511ab66cdcc529905ca12083fc186ad899b270b1473dc5f7ec88d1052082dcdfe69fb75d269e7b74")
        );
        assert_eq!(
            cxof(b"", &z[..3]),
            hex64("6a53a6dbf1bec15a79ce1214ff76a4d6bb16f60cfa56bf2c218aec5e160372117d2a2e647b128624e9b1d2259faf083f2bedd0fc751a2e2ff268d0ee026b6449")
        );
        assert_eq!(
            cxof(b"", &z),
            hex64("61324766441dd6c11e1736bad1d2185820885ed76fe2ce537775a6e855eeafd2a6651b5e862a44982765f8b4c7cbe9c8b354f569ead6abc62cc9b7cdd72e0cb3")
        );
    }

    #[test]
    fn matches_ascon_hash_across_block_boundaries() {
        for len in 0..40 {
            let m: Vec<u8> = (0..len).map(|i| (i * 13 + 5) as u8).collect();
            for out_len in [0usize, 1, 7, 8, 9, 32, 64, 100] {
                let mut ours = std::vec![0u8; out_len];
                xof128(&[&m[..len / 3], &m[len / 3..]], &mut ours);
                let mut theirs = std::vec![0u8; out_len];
                let mut h = AsconXof128::default();
                h.update(&m);
                h.finalize_xof().read(&mut theirs);
                assert_eq!(ours, theirs, "len {len}, out {out_len}");
            }
        }
    }
}
