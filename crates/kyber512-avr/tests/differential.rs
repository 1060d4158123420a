//! Randomised differential test of ML-KEM-512 against RustCrypto's `ml-kem`
//! crate (an independent implementation): keygen, encaps, and decaps of
//! valid and of corrupted ciphertexts.

use kyber512_avr::ml_kem_512::hazmat;
use ml_kem::kem::Decapsulate;
use ml_kem::{EncapsulateDeterministic, EncodedSizeUser, KemCore, MlKem512, B32};

use kem_common::TestRng as Rng;

#[test]
fn agrees_with_rustcrypto_ml_kem() {
    let mut rng = Rng(2026);
    for trial in 0..200 {
        let (d, z, m) = (rng.bytes::<32>(), rng.bytes::<32>(), rng.bytes::<32>());
        let (ek, dk) = hazmat::key_gen_internal(&d, &z);
        let (their_dk, their_ek) = MlKem512::generate_deterministic(&B32::from(d), &B32::from(z));
        assert_eq!(ek.as_slice(), their_ek.as_bytes().as_slice(), "ek, trial {trial}");
        assert_eq!(dk.as_slice(), their_dk.as_bytes().as_slice(), "dk, trial {trial}");

        let (ss, ct) = hazmat::encaps_internal(&ek, &m).expect("valid ek");
        let (their_ct, their_ss) = their_ek.encapsulate_deterministic(&B32::from(m)).expect("encaps");
        assert_eq!(ct.as_slice(), their_ct.as_slice(), "ct, trial {trial}");
        assert_eq!(ss.as_slice(), their_ss.as_slice(), "ss, trial {trial}");
        assert_eq!(hazmat::decaps(&dk, &ct).expect("valid dk"), ss);

        // A corrupted ciphertext: both implementations reject implicitly, to the same key.
        let mut bad = ct;
        let pos = (trial * 37) % bad.len();
        bad[pos] ^= 1 << (trial % 8);
        let ours = hazmat::decaps(&dk, &bad).expect("valid dk");
        let theirs = their_dk.decapsulate(&bad.into()).expect("decaps");
        assert_eq!(ours.as_slice(), theirs.as_slice(), "rejection key, trial {trial}");
        assert_ne!(ours, ss);

        // A random ciphertext, too.
        let random: [u8; 768] = rng.bytes();
        let ours = hazmat::decaps(&dk, &random).expect("valid dk");
        let theirs = their_dk.decapsulate(&random.into()).expect("decaps");
        assert_eq!(ours.as_slice(), theirs.as_slice());
    }
}
