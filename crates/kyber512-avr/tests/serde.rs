//! Hex-string serde of keys and ciphertexts (feature `serde`; on in tests).

use kyber512_avr::ml_kem_512::{self, hazmat, Ciphertext, DecapsulationKey, EncapsulationKey};

#[test]
fn keys_and_ciphertexts_round_trip_as_hex() {
    let (ek, dk) = hazmat::key_gen_internal(&[1; 32], &[2; 32]);
    let ek = EncapsulationKey::from_bytes(&ek).unwrap();
    let dk = DecapsulationKey::from_bytes(&dk).unwrap();
    let (ct, _) = ml_kem_512::encapsulate(&ek, &mut kem_common::test_rng(1)).unwrap();
    let json = serde_json::to_string(&ek).unwrap();
    assert_eq!(json.len(), 2 * 800 + 2);
    assert_eq!(serde_json::from_str::<EncapsulationKey>(&json).unwrap(), ek);
    let back: DecapsulationKey = serde_json::from_str(&serde_json::to_string(&dk).unwrap()).unwrap();
    assert_eq!(back.as_bytes(), dk.as_bytes());
    assert_eq!(
        serde_json::from_str::<Ciphertext>(&serde_json::to_string(&ct).unwrap()).unwrap(),
        ct
    );
    // Wrong length, bad digit, and a key failing the modulus check are errors.
    assert!(serde_json::from_str::<EncapsulationKey>("\"00\"").is_err());
    assert!(serde_json::from_str::<Ciphertext>(&format!("\"{}\"", "zz".repeat(768))).is_err());
    let unreduced = format!("\"{}\"", "ff".repeat(800));
    let err = serde_json::from_str::<EncapsulationKey>(&unreduced)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not reduced"), "{err}");
}

/// Issue #51: a seed travels as hex (64 bytes), as the keys do.
#[test]
fn seeds_round_trip_as_hex() {
    let seed = ml_kem_512::Seed::from_bytes(&core::array::from_fn(|i| i as u8));
    let json = serde_json::to_string(&seed).unwrap();
    assert_eq!(
        json,
        format!("\"{}\"", (0..64u8).map(|b| format!("{b:02x}")).collect::<String>())
    );
    let back: ml_kem_512::Seed = serde_json::from_str(&json).unwrap();
    assert_eq!(back, seed);
    assert!(serde_json::from_str::<ml_kem_512::Seed>("\"00\"").is_err());
    assert!(serde_json::from_str::<ml_kem_512::Seed>(&format!("\"{}\"", "zz".repeat(64))).is_err());
}
