//! LightSaber behaviour beyond the KAT: implicit rejection, malformed input.

use lightsaber_avr::*;

#[test]
fn implicit_rejection_and_round_trip() {
    let mut rng = kem_common::test_rng(1);
    let (sk, pk) = keygen(&mut rng).unwrap();
    let (ct, ss) = encapsulate(&pk, &mut rng).unwrap();
    assert_eq!(decapsulate(&sk, &ct), ss);
    let z = &sk.as_bytes()[1568 - 32..];
    for pos in [0, 319, 640, 735] {
        let mut bad = *ct.as_bytes();
        bad[pos] ^= 0x10;
        let k = decapsulate(&sk, &Ciphertext::from_bytes(&bad).unwrap());
        // H(z ‖ H(ct)) as in the reference kem.c.
        let expected = fips202::sha3_256(&[z, &fips202::sha3_256(&[&bad])]);
        assert_eq!(k.as_bytes(), &expected, "pos {pos}");
    }
    assert_eq!(sk.public_key(), pk);
    assert_eq!(PublicKey::from_bytes(pk.as_bytes()).unwrap(), pk);
}

#[test]
fn malformed_input_is_a_typed_error() {
    let mut rng = kem_common::test_rng(1);
    let (sk, _) = keygen(&mut rng).unwrap();
    assert_eq!(
        PublicKey::from_bytes(&[0; 671]).unwrap_err(),
        Error::InvalidLength {
            expected: 672,
            got: 671
        }
    );
    assert_eq!(
        Ciphertext::from_bytes(&[0; 737]).unwrap_err(),
        Error::InvalidLength {
            expected: 736,
            got: 737
        }
    );
    assert_eq!(
        SecretKey::from_bytes(&[0; 3]).unwrap_err(),
        Error::InvalidLength { expected: 1568, got: 3 }
    );
    assert!(SecretKey::from_bytes(sk.as_bytes()).is_ok());
    // A secret coefficient of 6 (13-bit value 6 in the first slot).
    let mut bad = *sk.as_bytes();
    bad[0] = 6;
    bad[1] &= 0xE0;
    assert_eq!(
        SecretKey::from_bytes(&bad).unwrap_err(),
        Error::DecapsulationKeyMalformed
    );
    // A corrupted embedded pk no longer matches H(pk).
    let mut bad = *sk.as_bytes();
    bad[832 + 5] ^= 1;
    assert_eq!(
        SecretKey::from_bytes(&bad).unwrap_err(),
        Error::DecapsulationKeyHashMismatch
    );
    // The in-place check (no typed copy) gives the same answers.
    assert_eq!(
        lightsaber_avr::check_secret_key(&bad),
        Err(Error::DecapsulationKeyHashMismatch)
    );
    assert_eq!(lightsaber_avr::check_secret_key(sk.as_bytes()), Ok(()));
    assert_eq!(
        lightsaber_avr::check_secret_key(&bad[..1567]),
        Err(Error::InvalidLength {
            expected: 1568,
            got: 1567
        })
    );
}

/// The byte-buffer API draws and outputs exactly what the typed API does.
#[test]
fn raw_api_equals_typed_api() {
    let (mut r1, mut r2) = (kem_common::test_rng(1), kem_common::test_rng(1));
    let (sk, pk) = keygen(&mut r1).unwrap();
    let (mut pk2, mut sk2) = ([0u8; 672], [0u8; 1568]);
    keygen_into(&mut r2, &mut pk2, &mut sk2).unwrap();
    assert_eq!((pk.as_bytes(), sk.as_bytes()), (&pk2, &sk2));
    let (ct, ss) = encapsulate(&pk, &mut r1).unwrap();
    let mut ct2 = [0u8; 736];
    assert_eq!(encapsulate_into(&pk2, &mut r2, &mut ct2).unwrap(), ss);
    assert_eq!(ct.as_bytes(), &ct2);
    assert_eq!(decapsulate_into(&sk2, &ct2), ss);
}

/// RustCrypto's `kem` traits give the same round trip.
#[test]
fn kem_traits_round_trip() {
    use lightsaber_avr::kem::{Decapsulate, Decapsulator, Encapsulate, Kem, KeyExport, TryKeyInit};
    let mut rng = kem_common::test_rng(1);
    let (sk, pk) = lightsaber_avr::LightSaber::generate_keypair_from_rng(&mut rng);
    let (ct, ss) = pk.encapsulate_with_rng(&mut rng);
    assert_eq!(sk.decapsulate(&ct), ss);
    assert_eq!(Decapsulator::encapsulation_key(&sk), &pk);
    assert_eq!(lightsaber_avr::PublicKey::new(&pk.to_bytes()).unwrap(), pk);
    let (sk2, _) = lightsaber_avr::LightSaber::generate_keypair_from_rng(&mut rng);
    assert_ne!(sk2.decapsulate(&ct), ss);
}

/// A key generation whose RNG fails part-way (before seed_s, or before z,
/// after s and pk were written) leaves no key material in the caller's
/// buffers: they are read back as all zero.
#[test]
fn failed_keygen_into_leaves_no_key_material() {
    let bytes = [0x3Cu8; 96];
    for len in [0, 32, 64, 95] {
        let (mut pk, mut sk) = ([0xA5u8; 672], [0x5Au8; 1568]);
        let mut tape = kem_common::Tape::new(&bytes[..len]);
        assert_eq!(
            keygen_into(&mut tape, &mut pk, &mut sk).unwrap_err(),
            Error::Rng,
            "{len} bytes"
        );
        assert!(pk.iter().all(|&b| b == 0), "pk after {len} bytes");
        assert!(sk.iter().all(|&b| b == 0), "sk after {len} bytes");
    }
    let mut tape = kem_common::Tape::new(&bytes);
    let (mut pk, mut sk) = ([0u8; 672], [0u8; 1568]);
    keygen_into(&mut tape, &mut pk, &mut sk).unwrap();
    assert!(pk.iter().any(|&b| b != 0) && sk.iter().any(|&b| b != 0));
}

/// Key generation into the secret key alone writes the same key as
/// `keygen_into`, with the public key in its field; a failing RNG leaves
/// the buffer wiped.
#[test]
fn keygen_secret_into_writes_the_same_key_with_the_public_key_inside() {
    for seed in 0..4 {
        let (mut r1, mut r2) = (kem_common::test_rng(seed), kem_common::test_rng(seed));
        let (mut pk, mut sk) = ([0u8; 672], [0u8; 1568]);
        keygen_into(&mut r1, &mut pk, &mut sk).unwrap();
        let mut sk2 = [0xA5u8; 1568];
        lightsaber_avr::keygen_secret_into(&mut r2, &mut sk2).unwrap();
        assert_eq!(sk, sk2);
        assert_eq!(lightsaber_avr::public_key_in(&sk2), &pk);
    }
    let bytes = [0x3Cu8; 95];
    let mut sk = [0x5Au8; 1568];
    assert!(lightsaber_avr::keygen_secret_into(&mut kem_common::Tape::new(&bytes), &mut sk).is_err());
    assert!(sk.iter().all(|&b| b == 0));
}

/// A compact secret key holds the key pair `keygen_into` draws from the same
/// randomness (same public key, same H(pk) and z) and decapsulates every
/// ciphertext, valid or tampered, to the same secret.
#[test]
fn a_compact_secret_key_decapsulates_as_the_full_one() {
    for seed in 0..4 {
        let (mut r1, mut r2) = (kem_common::test_rng(seed), kem_common::test_rng(seed));
        let (mut pk, mut sk) = ([0u8; 672], [0u8; 1568]);
        keygen_into(&mut r1, &mut pk, &mut sk).unwrap();
        let mut compact = [0xA5u8; 768];
        keygen_compact_into(&mut r2, &mut compact).unwrap();
        assert_eq!(public_key_in_compact(&compact), &pk);
        assert_eq!(compact[32..], sk[832..], "pk ‖ H(pk) ‖ z");
        assert_ne!(compact[..32], [0xA5; 32], "seed_s");
        check_compact_secret_key(&compact).unwrap();
        let mut ct = [0u8; 736];
        let ss = encapsulate_into(&pk, &mut r1, &mut ct).unwrap();
        assert_eq!(decapsulate_compact_into(&compact, &ct), ss);
        for pos in [0, 400, 735] {
            let mut bad = ct;
            bad[pos] ^= 0x04;
            assert_eq!(
                decapsulate_compact_into(&compact, &bad),
                decapsulate_into(&sk, &bad),
                "tampered at {pos}"
            );
        }
    }
    // A failing RNG leaves the buffer wiped.
    let mut compact = [0x5Au8; 768];
    assert!(keygen_compact_into(&mut kem_common::Tape::new(&[7; 95]), &mut compact).is_err());
    assert!(compact.iter().all(|&b| b == 0));
}

/// The import checks of a compact secret key: length, H(pk) (any seed_s
/// is a valid secret).
#[test]
fn a_malformed_compact_secret_key_is_a_typed_error() {
    let mut compact = [0u8; 768];
    keygen_compact_into(&mut kem_common::test_rng(9), &mut compact).unwrap();
    assert_eq!(
        check_compact_secret_key(&compact[..767]).unwrap_err(),
        Error::InvalidLength {
            expected: 768,
            got: 767
        }
    );
    let mut other_seed = compact;
    other_seed[0] ^= 0xFF;
    check_compact_secret_key(&other_seed).unwrap();
    for at in [32, 300, 703, 704 + 31] {
        let mut bad = compact;
        bad[at] ^= 1; // inside pk or H(pk)
        assert_eq!(
            check_compact_secret_key(&bad).unwrap_err(),
            Error::DecapsulationKeyHashMismatch,
            "byte {at}"
        );
    }
    let mut bad = compact;
    bad[300] ^= 1; // inside pk
    assert_eq!(
        check_compact_secret_key(&bad).unwrap_err(),
        Error::DecapsulationKeyHashMismatch
    );
}
