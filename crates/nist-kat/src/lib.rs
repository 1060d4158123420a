#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

#[cfg(feature = "std")]
pub mod rsp;

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use aes::Aes256;
use rand_core::{Infallible, TryCryptoRng, TryRng};

#[cfg(feature = "std")]
pub use rsp::Record;

/// NIST's AES-256 CTR_DRBG exactly as in `PQCgenKAT`'s `rng.c`.
#[derive(Clone)]
pub struct NistDrbg {
    key: [u8; 32],
    v: [u8; 16],
}

impl NistDrbg {
    /// `randombytes_init(entropy, NULL, 256)`.
    pub fn new(entropy: &[u8; 48]) -> Self {
        let mut drbg = NistDrbg {
            key: [0; 32],
            v: [0; 16],
        };
        drbg.update(Some(entropy));
        drbg
    }

    fn increment_v(&mut self) {
        for byte in self.v.iter_mut().rev() {
            let (b, carry) = byte.overflowing_add(1);
            *byte = b;
            if !carry {
                break;
            }
        }
    }

    fn block(&mut self) -> [u8; 16] {
        self.increment_v();
        let cipher = Aes256::new(GenericArray::from_slice(&self.key));
        let mut block = GenericArray::clone_from_slice(&self.v);
        cipher.encrypt_block(&mut block);
        block.into()
    }

    /// `AES256_CTR_DRBG_Update`.
    fn update(&mut self, provided: Option<&[u8; 48]>) {
        let mut temp = [0u8; 48];
        for chunk in temp.chunks_mut(16) {
            chunk.copy_from_slice(&self.block());
        }
        if let Some(p) = provided {
            for (t, x) in temp.iter_mut().zip(p) {
                *t ^= x;
            }
        }
        self.key.copy_from_slice(&temp[..32]);
        self.v.copy_from_slice(&temp[32..]);
    }

    /// `randombytes(out, out.len())`: one generate call.
    pub fn generate(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(16) {
            let b = self.block();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
        self.update(None);
    }
}

impl TryRng for NistDrbg {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Infallible> {
        self.generate(dest);
        Ok(())
    }
}

impl TryCryptoRng for NistDrbg {}

/// The master seed `PQCgenKAT` uses: the bytes 0x00..0x2F.
pub const DEFAULT_MASTER_SEED: [u8; 48] = {
    let mut s = [0u8; 48];
    let mut i = 0;
    while i < 48 {
        s[i] = i as u8;
        i += 1;
    }
    s
};

#[cfg(feature = "std")]
/// What one KEM run outputs: (pk, sk, ct, ss).
pub type KemOutput = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);

#[cfg(feature = "std")]
/// One KEM run from a record's DRBG: returns (pk, sk, ct, ss) and must
/// itself check that decapsulation agrees (returning an error otherwise).
pub type KemRun<'a> = dyn FnMut(&mut NistDrbg) -> Result<KemOutput, String> + 'a;

#[cfg(feature = "std")]
/// The `PQCgenKAT_kem` procedure: the master DRBG draws one 48-byte seed per
/// record; each record's DRBG, seeded with it, feeds `run`.
pub fn generate(master_seed: &[u8; 48], count: usize, run: &mut KemRun<'_>) -> Result<Vec<Record>, String> {
    let mut master = NistDrbg::new(master_seed);
    let seeds: Vec<[u8; 48]> = (0..count)
        .map(|_| {
            let mut s = [0u8; 48];
            master.generate(&mut s);
            s
        })
        .collect();
    seeds
        .iter()
        .enumerate()
        .map(|(count, seed)| {
            let mut drbg = NistDrbg::new(seed);
            let (pk, sk, ct, ss) = run(&mut drbg).map_err(|e| format!("record {count}: {e}"))?;
            Ok(Record {
                count,
                seed: seed.to_vec(),
                pk,
                sk,
                ct,
                ss,
            })
        })
        .collect()
}

#[cfg(feature = "std")]
/// A KEM run's record fields from its byte forms, once decapsulation gave
/// back the encapsulated secret (an error otherwise).
pub fn outputs(pk: &[u8], sk: &[u8], ct: &[u8], ss: &[u8], decapsulated: &[u8]) -> Result<KemOutput, String> {
    if decapsulated != ss {
        return Err("decapsulation disagrees with encapsulation".into());
    }
    Ok((pk.to_vec(), sk.to_vec(), ct.to_vec(), ss.to_vec()))
}

#[cfg(feature = "std")]
/// Checks that `run` reproduces the official KAT file `text` byte for
/// byte: as many records as the file has, from the default master seed,
/// written in its own layout under its own header line. `Ok` with the
/// number of records, or what differs.
pub fn reproduce(text: &str, run: &mut KemRun<'_>) -> Result<usize, String> {
    let theirs = rsp::parse(text)?;
    let records = generate(&DEFAULT_MASTER_SEED, theirs.len(), run)?;
    if rsp::write(rsp::header(text), &records) == text {
        return Ok(records.len());
    }
    let first = records.iter().zip(&theirs).position(|(a, b)| a != b);
    Err(format!(
        "the generated file differs from the official one; first differing record: {first:?}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first record seed of every NIST KAT file (shared/README.md).
    #[test]
    fn master_drbg_first_seed() {
        let mut master = NistDrbg::new(&DEFAULT_MASTER_SEED);
        let mut seed = [0u8; 48];
        master.generate(&mut seed);
        assert_eq!(
            rsp::hex_upper(&seed),
            "061550234D158C5EC95595FE04EF7A25767F2E24CC2BC479D09D86DC9ABCFDE7056A8C266F9EF97ED08541DBD2E1FFA1"
        );
    }
}
