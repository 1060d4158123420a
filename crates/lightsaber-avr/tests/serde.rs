//! Hex-string serde of keys and ciphertexts (feature `serde`; on in tests).

use lightsaber_avr::{Ciphertext, PublicKey, SecretKey};

#[test]
fn keys_and_ciphertexts_round_trip_as_hex() {
    let mut rng = kem_common::test_rng(1);
    let (sk, pk) = lightsaber_avr::keygen(&mut rng).unwrap();
    let (ct, _) = lightsaber_avr::encapsulate(&pk, &mut rng).unwrap();
    assert_eq!(
        serde_json::from_str::<PublicKey>(&serde_json::to_string(&pk).unwrap()).unwrap(),
        pk
    );
    let back: SecretKey = serde_json::from_str(&serde_json::to_string(&sk).unwrap()).unwrap();
    assert_eq!(back.as_bytes(), sk.as_bytes());
    assert_eq!(
        serde_json::from_str::<Ciphertext>(&serde_json::to_string(&ct).unwrap()).unwrap(),
        ct
    );
    assert!(serde_json::from_str::<SecretKey>(&format!("\"{}\"", "00".repeat(1568))).is_err());
}
