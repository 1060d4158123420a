//! Malformed input gets a typed error, never a panic.

use kyber512_avr::{kyber512_r3, ml_kem_512, ml_kem_512::hazmat, Error};

fn keys() -> ([u8; 800], [u8; 1632]) {
    hazmat::key_gen_internal(&[7; 32], &[9; 32])
}

#[test]
fn wrong_lengths() {
    let (ek, dk) = keys();
    for len in [0, 1, 799, 801] {
        let v = vec![0u8; len];
        assert_eq!(
            ml_kem_512::EncapsulationKey::from_bytes(&v).unwrap_err(),
            Error::InvalidLength {
                expected: 800,
                got: len
            }
        );
        assert!(kyber512_r3::EncapsulationKey::from_bytes(&v).is_err());
    }
    assert_eq!(
        ml_kem_512::DecapsulationKey::from_bytes(&dk[..1631]).unwrap_err(),
        Error::InvalidLength {
            expected: 1632,
            got: 1631
        }
    );
    assert_eq!(
        ml_kem_512::Ciphertext::from_bytes(&[0u8; 767]).unwrap_err(),
        Error::InvalidLength {
            expected: 768,
            got: 767
        }
    );
    assert!(ml_kem_512::EncapsulationKey::from_bytes(&ek).is_ok());
}

/// FIPS 203 §7.2: a 12-bit value ≥ q anywhere in t̂ fails the modulus check.
#[test]
fn unreduced_encapsulation_key() {
    let (ek, _) = keys();
    for coefficient in [0usize, 1, 255, 256, 511] {
        let mut bad = ek;
        // Set the 12-bit value of this coefficient to 3329 (= q) or 4095.
        for value in [3329u16, 4095] {
            let byte = coefficient / 2 * 3;
            if coefficient % 2 == 0 {
                bad[byte] = value as u8;
                bad[byte + 1] = (bad[byte + 1] & 0xF0) | (value >> 8) as u8;
            } else {
                bad[byte + 1] = (bad[byte + 1] & 0x0F) | ((value as u8 & 0x0F) << 4);
                bad[byte + 2] = (value >> 4) as u8;
            }
            assert_eq!(
                ml_kem_512::EncapsulationKey::from_bytes(&bad).unwrap_err(),
                Error::EncapsulationKeyNotReduced,
                "coefficient {coefficient}, value {value}"
            );
            assert_eq!(
                hazmat::encaps_internal(&bad, &[0; 32]).unwrap_err(),
                Error::EncapsulationKeyNotReduced
            );
            // Round 3 has no such check.
            assert!(kyber512_r3::EncapsulationKey::from_bytes(&bad).is_ok());
        }
    }
    // ρ is not checked: any 32 bytes are fine.
    let mut rho_changed = ek;
    rho_changed[799] ^= 0xFF;
    assert!(ml_kem_512::EncapsulationKey::from_bytes(&rho_changed).is_ok());
}

/// FIPS 203 §7.3: corrupting ek or H(ek) inside dk fails the hash check.
#[test]
fn corrupted_decapsulation_key_hash() {
    let (_, dk) = keys();
    for pos in [768, 1000, 1567, 1568, 1599] {
        let mut bad = dk;
        bad[pos] ^= 0x01;
        assert_eq!(
            ml_kem_512::DecapsulationKey::from_bytes(&bad).unwrap_err(),
            Error::DecapsulationKeyHashMismatch
        );
        assert_eq!(
            hazmat::decaps(&bad, &[0; 768]).unwrap_err(),
            Error::DecapsulationKeyHashMismatch
        );
        assert_eq!(
            ml_kem_512::raw::check_decapsulation_key(&bad),
            Err(Error::DecapsulationKeyHashMismatch)
        );
        // Round 3 has no hash check.
        assert_eq!(kyber512_avr::kyber512_r3::raw::check_decapsulation_key(&bad), Ok(()));
    }
    assert_eq!(ml_kem_512::raw::check_decapsulation_key(&dk), Ok(()));
    // dk_pke and z are not covered by the hash: the key imports.
    let mut other = dk;
    other[0] ^= 1;
    other[1631] ^= 1;
    assert!(ml_kem_512::DecapsulationKey::from_bytes(&other).is_ok());
}

#[test]
fn round_trip_both_variants() {
    let mut rng = kem_common::test_rng(1);
    let (dk, ek) = kyber512_r3::keygen(&mut rng).unwrap();
    let (ct, ss) = kyber512_r3::encapsulate(&ek, &mut rng).unwrap();
    assert_eq!(kyber512_r3::decapsulate(&dk, &ct), ss);
    assert_eq!(dk.encapsulation_key(), &ek);
    let ek2 = kyber512_r3::EncapsulationKey::from_bytes(ek.as_bytes()).unwrap();
    let ct2 = kyber512_r3::Ciphertext::from_bytes(ct.as_bytes()).unwrap();
    let (_, ss2) = kyber512_r3::encapsulate(&ek2, &mut rng).unwrap();
    assert_ne!(ss, ss2);
    assert_eq!(kyber512_r3::decapsulate(&dk, &ct2), ss);
}

/// The raw byte-buffer API draws and outputs exactly what the typed API does.
#[test]
fn raw_api_equals_typed_api() {
    use kyber512_avr::ml_kem_512::raw;
    let (mut r1, mut r2) = (kem_common::test_rng(1), kem_common::test_rng(1));
    let (dk, ek) = ml_kem_512::keygen(&mut r1).unwrap();
    let (mut ek2, mut dk2) = ([0u8; 800], [0u8; 1632]);
    raw::keygen_into(&mut r2, &mut ek2, &mut dk2).unwrap();
    assert_eq!((ek.as_bytes(), dk.as_bytes()), (&ek2, &dk2));
    let (ct, ss) = ml_kem_512::encapsulate(&ek, &mut r1).unwrap();
    let mut ct2 = [0u8; 768];
    let ss2 = raw::encapsulate_into(&ek2, &mut r2, &mut ct2).unwrap();
    assert_eq!((ct.as_bytes(), &ss), (&ct2, &ss2));
    assert_eq!(raw::decapsulate_into(&dk2, &ct2), ss);
    let mut bad = ek2;
    bad[0] = 0xFF;
    bad[1] |= 0x0F;
    assert_eq!(
        raw::encapsulate_into(&bad, &mut r2, &mut ct2).unwrap_err(),
        Error::EncapsulationKeyNotReduced
    );
}

/// RustCrypto's `kem` traits give the same round trip.
#[test]
fn kem_traits_round_trip() {
    use kyber512_avr::kem::{Decapsulate, Decapsulator, Encapsulate, Generate, Kem, KeyExport, TryKeyInit};
    let mut rng = kem_common::test_rng(1);
    let (dk, ek) = ml_kem_512::MlKem512::generate_keypair_from_rng(&mut rng);
    let (ct, ss) = ek.encapsulate_with_rng(&mut rng);
    assert_eq!(dk.decapsulate(&ct), ss);
    assert_eq!(Decapsulator::encapsulation_key(&dk), &ek);
    // The same draws as the inherent API, and the same bytes.
    let (mut r1, mut r2) = (kem_common::test_rng(5), kem_common::test_rng(5));
    let dk1 = ml_kem_512::DecapsulationKey::generate_from_rng(&mut r1);
    let (dk2, ek2) = ml_kem_512::keygen(&mut r2).unwrap();
    assert_eq!(dk1.as_bytes(), dk2.as_bytes());
    assert_eq!(ml_kem_512::EncapsulationKey::new(&ek2.to_bytes()).unwrap(), ek2);
    // Import checks apply through TryKeyInit.
    let mut bad = ek2.to_bytes();
    bad[0] = 0xFF;
    bad[1] |= 0x0F;
    assert!(ml_kem_512::EncapsulationKey::new(&bad).is_err());
    let (dk3, ek3) = kyber512_r3::Kyber512R3::generate_keypair_from_rng(&mut rng);
    let (ct3, ss3) = ek3.encapsulate_with_rng(&mut rng);
    assert_eq!(dk3.decapsulate(&ct3), ss3);
    assert_ne!(dk.decapsulate(&ct3), ss3);
    // A failing RNG: Generate hands back the RNG's own error.
    let mut short = kem_common::Tape::new(&[0u8; 10]);
    assert_eq!(
        ml_kem_512::DecapsulationKey::try_generate_from_rng(&mut short).unwrap_err(),
        kem_common::TapeExhausted
    );
}

/// Key generation into the decapsulation key alone writes the same key as
/// `keygen_into`, with the encapsulation key in its field, for both
/// variants; a failing RNG leaves the buffer wiped.
#[test]
fn keygen_secret_into_writes_the_same_key_with_the_encapsulation_key_inside() {
    use kyber512_avr::{kyber512_r3, ml_kem_512::raw};
    for seed in 0..4 {
        let (mut r1, mut r2) = (kem_common::test_rng(seed), kem_common::test_rng(seed));
        let (mut ek, mut dk) = ([0u8; 800], [0u8; 1632]);
        raw::keygen_into(&mut r1, &mut ek, &mut dk).unwrap();
        let mut dk2 = [0xA5u8; 1632];
        raw::keygen_secret_into(&mut r2, &mut dk2).unwrap();
        assert_eq!(dk, dk2);
        assert_eq!(raw::encapsulation_key_in(&dk2), &ek);
        let (mut r1, mut r2) = (kem_common::test_rng(seed), kem_common::test_rng(seed));
        kyber512_r3::raw::keygen_into(&mut r1, &mut ek, &mut dk).unwrap();
        kyber512_r3::raw::keygen_secret_into(&mut r2, &mut dk2).unwrap();
        assert_eq!((&dk, kyber512_r3::raw::encapsulation_key_in(&dk2)), (&dk2, &ek));
    }
    let bytes = [0x3Cu8; 63];
    let mut dk = [0x5Au8; 1632];
    assert!(raw::keygen_secret_into(&mut kem_common::Tape::new(&bytes), &mut dk).is_err());
    assert!(dk.iter().all(|&b| b == 0));
}
