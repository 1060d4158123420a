//! CTRU-Light behaviour beyond the KATs: arithmetic variants agree, PKE
//! round trips, implicit rejection, malformed input.

use ctru_light::hazmat;
use ctru_light::symmetric::Backend;
use ctru_light::*;

use kem_common::Tape;

/// `L` bytes from the seeded test generator.
fn bytes<const L: usize>(rng: &mut impl kem_common::rand_core::Rng) -> [u8; L] {
    let mut out = [0u8; L];
    rng.fill_bytes(&mut out);
    out
}

/// The three arithmetic variants never change a byte (definition §6).
#[test]
fn arithmetic_variants_agree_and_pke_round_trips() {
    let mut rng = kem_common::test_rng(1);
    let mut round_trips = 0;
    for _ in 0..40 {
        let coins: [u8; 256] = bytes(&mut rng);
        let (pk, sk, ok) = hazmat::pke_keygen::<Kred2x>(&coins);
        assert_eq!((pk, sk, ok), hazmat::pke_keygen::<MontgomeryOpt>(&coins));
        assert_eq!((pk, sk, ok), hazmat::pke_keygen::<MontgomeryPlain>(&coins));
        assert!(ok, "f is invertible with overwhelming probability");
        let m: [u8; 32] = bytes(&mut rng);
        let enc_coins: [u8; 128] = bytes(&mut rng);
        let ct = hazmat::pke_encrypt::<Kred2x>(&pk, &m, &enc_coins);
        assert_eq!(ct, hazmat::pke_encrypt::<MontgomeryOpt>(&pk, &m, &enc_coins));
        assert_eq!(ct, hazmat::pke_encrypt::<MontgomeryPlain>(&pk, &m, &enc_coins));
        assert_eq!(hazmat::pke_decrypt(&sk, &ct), m);
        round_trips += 1;
    }
    assert_eq!(round_trips, 40);
}

/// Every modified ciphertext decapsulates to Hrej(ct ‖ z).
fn implicit_rejection<B: Backend>() {
    let mut rng = kem_common::test_rng(1);
    let (sk, pk) = CtruLight::<B>::keygen(&mut rng).unwrap();
    let (ct, ss) = CtruLight::<B>::encapsulate(&pk, &mut rng).unwrap();
    assert_eq!(CtruLight::<B>::decapsulate(&sk, &ct), ss);
    let z = &sk.as_bytes()[864 - 32..];
    for pos in [0, 1, 100, 255, 256, 511] {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut bad = *ct.as_bytes();
            bad[pos] ^= flip;
            let bad = Ciphertext::<B>::from_bytes(&bad).unwrap();
            let k = CtruLight::<B>::decapsulate(&sk, &bad);
            assert_eq!(k.as_bytes(), &B::hrej(&[bad.as_bytes(), z]), "{} pos {pos}", B::NAME);
            assert_ne!(k, ss);
        }
    }
}

#[test]
fn implicit_rejection_sha3() {
    implicit_rejection::<Sha3>();
}

#[test]
fn implicit_rejection_ascon() {
    implicit_rejection::<Ascon>();
}

#[test]
fn malformed_input_is_a_typed_error() {
    let mut rng = kem_common::test_rng(1);
    let (sk, pk) = CtruLightSha3::keygen(&mut rng).unwrap();
    assert_eq!(
        PublicKey::<Sha3>::from_bytes(&pk.as_bytes()[..639]).unwrap_err(),
        Error::InvalidLength {
            expected: 640,
            got: 639
        }
    );
    assert_eq!(
        SecretKey::<Sha3>::from_bytes(&[0u8; 865]).unwrap_err(),
        Error::InvalidLength {
            expected: 864,
            got: 865
        }
    );
    assert_eq!(
        Ciphertext::<Sha3>::from_bytes(&[]).unwrap_err(),
        Error::InvalidLength { expected: 512, got: 0 }
    );
    // A 10-bit value of 1023 ≥ q in the public key.
    let mut bad_pk = *pk.as_bytes();
    bad_pk[0] = 0xFF;
    bad_pk[1] |= 0x03;
    assert_eq!(
        PublicKey::<Sha3>::from_bytes(&bad_pk).unwrap_err(),
        Error::EncapsulationKeyNotReduced
    );
    // ... and inside a secret key.
    let mut bad_sk = *sk.as_bytes();
    bad_sk[192] = 0xFF;
    bad_sk[193] |= 0x03;
    assert_eq!(
        SecretKey::<Sha3>::from_bytes(&bad_sk).unwrap_err(),
        Error::EncapsulationKeyNotReduced
    );
    // A packed f value of 7 > 5.
    let mut bad_f = *sk.as_bytes();
    bad_f[0] |= 0x07;
    assert_eq!(
        SecretKey::<Sha3>::from_bytes(&bad_f).unwrap_err(),
        Error::DecapsulationKeyMalformed
    );
    // The in-place check (no typed copy) gives the same answers.
    assert_eq!(
        CtruLight::<Sha3>::check_secret_key(&bad_f),
        Err(Error::DecapsulationKeyMalformed)
    );
    assert_eq!(CtruLight::<Sha3>::check_secret_key(sk.as_bytes()), Ok(()));
    assert!(matches!(
        CtruLight::<Sha3>::check_secret_key(&bad_f[1..]),
        Err(Error::InvalidLength { .. })
    ));
    // Round trips through bytes.
    assert_eq!(PublicKey::<Sha3>::from_bytes(pk.as_bytes()).unwrap(), pk);
    assert_eq!(SecretKey::<Sha3>::from_bytes(sk.as_bytes()).unwrap().public_key(), pk);
}

/// The byte-buffer API draws and outputs exactly what the typed API does.
#[test]
fn raw_api_equals_typed_api() {
    let (mut r1, mut r2) = (kem_common::test_rng(1), kem_common::test_rng(1));
    let (sk, pk) = CtruLightSha3::keygen(&mut r1).unwrap();
    let (mut pk2, mut sk2) = ([0u8; 640], [0u8; 864]);
    CtruLightSha3::keygen_into(&mut r2, &mut pk2, &mut sk2).unwrap();
    assert_eq!((pk.as_bytes(), sk.as_bytes()), (&pk2, &sk2));
    let (ct, ss) = CtruLightSha3::encapsulate(&pk, &mut r1).unwrap();
    let mut ct2 = [0u8; 512];
    assert_eq!(CtruLightSha3::encapsulate_into(&pk2, &mut r2, &mut ct2).unwrap(), ss);
    assert_eq!(ct.as_bytes(), &ct2);
    assert_eq!(CtruLightSha3::decapsulate_into(&sk2, &ct2), ss);
    let mut bad = pk2;
    bad[0] = 0xFF;
    bad[1] |= 0x03;
    assert_eq!(
        CtruLightSha3::encapsulate_into(&bad, &mut r2, &mut ct2).unwrap_err(),
        Error::EncapsulationKeyNotReduced
    );
}

/// RustCrypto's `kem` traits give the same round trip.
#[test]
fn kem_traits_round_trip() {
    use ctru_light::kem::{Decapsulate, Decapsulator, Encapsulate, Kem, KeyExport, TryKeyInit};
    let mut rng = kem_common::test_rng(1);
    let (sk, pk) = CtruLightAscon::generate_keypair_from_rng(&mut rng);
    let (ct, ss) = pk.encapsulate_with_rng(&mut rng);
    assert_eq!(sk.decapsulate(&ct), ss);
    assert_eq!(Decapsulator::encapsulation_key(&sk), &pk);
    assert_eq!(
        ctru_light::PublicKey::<ctru_light::Ascon>::new(&pk.to_bytes()).unwrap(),
        pk
    );
    let (sk2, pk2) = CtruLightSha3::generate_keypair_from_rng(&mut rng);
    let (ct2, ss2) = pk2.encapsulate_with_rng(&mut rng);
    assert_eq!(sk2.decapsulate(&ct2), ss2);
    assert_ne!(sk.decapsulate(&ct2), ss2);
}

/// A failing RNG is a typed error in key generation (its d or z draw) and
/// in encapsulation (its one draw, m), never a panic.
#[test]
fn rng_failure_is_a_typed_error() {
    let bytes: [u8; 64] = bytes(&mut kem_common::test_rng(9));
    // No d, or d but no z.
    for len in [0, 32] {
        let mut tape = Tape::new(&bytes[..len]);
        assert_eq!(CtruLightSha3::keygen(&mut tape).unwrap_err(), Error::Rng, "{len} bytes");
    }
    // Keygen draws d and z; encapsulation's one draw, m, fails.
    let mut tape = Tape::new(&bytes);
    let (_, pk) = CtruLightAscon::keygen(&mut tape).unwrap();
    assert_eq!(tape.used(), 64);
    assert_eq!(CtruLightAscon::encapsulate(&pk, &mut tape).unwrap_err(), Error::Rng);
    let mut ct = [0u8; 512];
    assert_eq!(
        CtruLightAscon::encapsulate_into(pk.as_bytes(), &mut tape, &mut ct).unwrap_err(),
        Error::Rng
    );
}

/// Keys key generation cannot produce are refused on import, with typed
/// errors: all-zero keys, and a packed f of in-range values (0..=5) that is
/// not 2f' + 1 with f' ∈ {−1, 0, 1}^n (wrong parity at f_0 or at f_i, i > 0).
#[test]
fn degenerate_keys_are_rejected() {
    let zero_pk = [0u8; 640];
    assert_eq!(
        PublicKey::<Sha3>::from_bytes(&zero_pk).unwrap_err(),
        Error::EncapsulationKeyZero
    );
    let mut ct = [0u8; 512];
    assert_eq!(
        CtruLightSha3::encapsulate_into(&zero_pk, &mut kem_common::test_rng(3), &mut ct).unwrap_err(),
        Error::EncapsulationKeyZero
    );
    assert_eq!(
        SecretKey::<Sha3>::from_bytes(&[0u8; 864]).unwrap_err(),
        Error::DecapsulationKeyMalformed
    );

    let mut rng = kem_common::test_rng(4);
    for _ in 0..8 {
        let (sk, pk) = CtruLightSha3::keygen(&mut rng).unwrap();
        assert!(SecretKey::<Sha3>::from_bytes(sk.as_bytes()).is_ok());
        assert!(PublicKey::<Sha3>::from_bytes(pk.as_bytes()).is_ok());
        // Flipping the low bit of a 3-bit value keeps it in 0..=5 when it
        // is ≤ 4 (or turns 5 into 4): only the parity check can refuse it.
        for (bit, coefficient) in [(0, 0), (3, 1), (6, 2), (255 * 3, 255), (511 * 3, 511)] {
            let mut bad = *sk.as_bytes();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(
                SecretKey::<Sha3>::from_bytes(&bad).unwrap_err(),
                Error::DecapsulationKeyMalformed,
                "f_{coefficient}"
            );
            assert_eq!(
                CtruLightSha3::check_secret_key(&bad).unwrap_err(),
                Error::DecapsulationKeyMalformed
            );
        }
        // The secret part of a real key with an all-zero public key inside.
        let mut zero_inside = *sk.as_bytes();
        zero_inside[192..192 + 640].fill(0);
        assert_eq!(
            SecretKey::<Sha3>::from_bytes(&zero_inside).unwrap_err(),
            Error::EncapsulationKeyZero
        );
    }
}

/// A key generation whose RNG fails part-way leaves no key material in the
/// caller's buffers: they are read back as all zero.
#[test]
fn failed_keygen_into_leaves_no_key_material() {
    let bytes: [u8; 96] = bytes(&mut kem_common::test_rng(11));
    // 32 and 63 bytes: d, then no z (or no second d after a retry).
    for len in [0, 31, 32, 63] {
        let (mut pk, mut sk) = ([0xA5u8; 640], [0x5Au8; 864]);
        let mut tape = Tape::new(&bytes[..len]);
        let result = CtruLightAscon::keygen_into(&mut tape, &mut pk, &mut sk);
        assert_eq!(result.unwrap_err(), Error::Rng, "{len} bytes");
        assert!(pk.iter().all(|&b| b == 0), "pk after {len} bytes");
        assert!(sk.iter().all(|&b| b == 0), "sk after {len} bytes");
    }
}

/// Key generation into the secret key alone writes the same key as
/// `keygen_into`, with the public key in its field; a failing RNG leaves
/// the buffer wiped.
#[test]
fn keygen_secret_into_writes_the_same_key_with_the_public_key_inside() {
    for seed in 0..4 {
        let (mut r1, mut r2) = (kem_common::test_rng(seed), kem_common::test_rng(seed));
        let (mut pk, mut sk) = ([0u8; 640], [0u8; 864]);
        CtruLightAscon::keygen_into(&mut r1, &mut pk, &mut sk).unwrap();
        let mut sk2 = [0xA5u8; 864];
        CtruLightAscon::keygen_secret_into(&mut r2, &mut sk2).unwrap();
        assert_eq!(sk, sk2);
        assert_eq!(CtruLightAscon::public_key_in(&sk2), &pk);
    }
    let bytes: [u8; 63] = bytes(&mut kem_common::test_rng(11));
    let mut sk = [0x5Au8; 864];
    assert!(CtruLightAscon::keygen_secret_into(&mut Tape::new(&bytes), &mut sk).is_err());
    assert!(sk.iter().all(|&b| b == 0));
}
