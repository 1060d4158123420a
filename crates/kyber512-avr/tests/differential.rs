//! Randomised differential test of ML-KEM-512 against RustCrypto's `ml-kem`
//! 0.3 (an independent implementation): keygen, encaps, and decaps of valid
//! and of corrupted ciphertexts; and the `kem` 0.3 traits of both crates
//! interoperating (our encapsulation key, their decapsulation key, and back).

#![allow(deprecated)] // ml-kem's expanded key encoding: the byte form FIPS 203 and we use

use kem_common::rand_core::Rng;
use kyber512_avr::ml_kem_512::{self, hazmat};
use ml_kem::array::Array;
use ml_kem::{Decapsulate, Encapsulate, ExpandedKeyEncoding, KeyExport, MlKem512, Seed, TryKeyInit};

#[test]
fn agrees_with_rustcrypto_ml_kem() {
    let mut rng = kem_common::test_rng(2026);
    for trial in 0..200 {
        let mut dzm = [0u8; 96];
        rng.fill_bytes(&mut dzm);
        let (d, z, m): ([u8; 32], [u8; 32], [u8; 32]) = (
            dzm[..32].try_into().unwrap(),
            dzm[32..64].try_into().unwrap(),
            dzm[64..].try_into().unwrap(),
        );
        let (ek, dk) = hazmat::key_gen_internal(&d, &z);
        let seed: Seed = Array::try_from(&dzm[..64]).unwrap();
        let their_dk = ml_kem::ml_kem_512::DecapsulationKey::from_seed(seed);
        let their_ek = their_dk.encapsulation_key();
        assert_eq!(ek.as_slice(), their_ek.to_bytes().as_slice(), "ek, trial {trial}");
        assert_eq!(
            dk.as_slice(),
            their_dk.to_expanded_bytes().as_slice(),
            "dk, trial {trial}"
        );

        let (ss, ct) = hazmat::encaps_internal(&ek, &m).expect("valid ek");
        let (their_ct, their_ss) = their_ek.encapsulate_deterministic(&m.into());
        assert_eq!(ct.as_slice(), their_ct.as_slice(), "ct, trial {trial}");
        assert_eq!(ss.as_slice(), their_ss.as_slice(), "ss, trial {trial}");
        assert_eq!(hazmat::decaps(&dk, &ct).expect("valid dk"), ss);

        // A corrupted ciphertext: both implementations reject implicitly, to the same key.
        let mut bad = ct;
        let pos = (trial * 37) % bad.len();
        bad[pos] ^= 1 << (trial % 8);
        let ours = hazmat::decaps(&dk, &bad).expect("valid dk");
        let theirs = their_dk.decapsulate(&bad.into());
        assert_eq!(ours.as_slice(), theirs.as_slice(), "rejection key, trial {trial}");
        assert_ne!(ours, ss);

        // A random ciphertext, too.
        let mut random = [0u8; 768];
        rng.fill_bytes(&mut random);
        let ours = hazmat::decaps(&dk, &random).expect("valid dk");
        let theirs = their_dk.decapsulate(&random.into());
        assert_eq!(ours.as_slice(), theirs.as_slice());
    }
}

/// Through the `kem` 0.3 traits: a key pair of either crate, the other
/// crate's encapsulation to it, and decapsulation to the same shared key.
#[test]
fn kem_traits_interoperate_with_ml_kem() {
    use kem_common::kem::Kem;
    let mut rng = kem_common::test_rng(7);
    let (our_dk, our_ek) = ml_kem_512::MlKem512::generate_keypair_from_rng(&mut rng);
    let their_ek = ml_kem::ml_kem_512::EncapsulationKey::new(&our_ek.to_bytes()).expect("our ek is valid for them");
    let (ct, k_send) = their_ek.encapsulate_with_rng(&mut rng);
    assert_eq!(our_dk.decapsulate(&ct).as_slice(), k_send.as_slice());

    let (their_dk, their_ek) = MlKem512::generate_keypair_from_rng(&mut rng);
    let ek = ml_kem_512::EncapsulationKey::new(&their_ek.to_bytes()).expect("their ek is valid for us");
    let (ct, k_send) = ek.encapsulate_with_rng(&mut rng);
    assert_eq!(their_dk.decapsulate(&ct).as_slice(), k_send.as_slice());
    // And a wrong key does not decapsulate to it.
    assert_ne!(our_dk.decapsulate(&ct).as_slice(), k_send.as_slice());
}
