//! LightSaber: key and ciphertext decoding, decapsulation of arbitrary
//! ciphertexts with an honest key and with arbitrary import-validated keys.
#![no_main]
use kem_fuzz::{fixed, remap_bits, split, FuzzRng};
use lightsaber_avr::params::{CT_BYTES, PK_BYTES, SK_BYTES, SK_PKE_BYTES};
use lightsaber_avr::{Ciphertext, PublicKey, SecretKey};
use std::sync::OnceLock;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            let _ = SecretKey::from_bytes(rest);
            let _ = Ciphertext::from_bytes(rest);
            if let Ok(pk) = PublicKey::from_bytes(rest) {
                let _ = lightsaber_avr::encapsulate(&pk, &mut FuzzRng::new(7)).unwrap();
            }
        }
        1 => {
            static KEYS: OnceLock<(SecretKey, PublicKey)> = OnceLock::new();
            let (sk, pk) = KEYS.get_or_init(|| lightsaber_avr::keygen(&mut FuzzRng::new(3)).unwrap());
            let ct_bytes: [u8; CT_BYTES] = fixed(rest);
            let ss = lightsaber_avr::decapsulate(sk, &Ciphertext::from_bytes(&ct_bytes).unwrap());
            assert_eq!(
                ss.as_bytes(),
                lightsaber_avr::decapsulate_into(sk.as_bytes(), &ct_bytes).as_bytes()
            );
            let (ct2, ss2) = lightsaber_avr::encapsulate(pk, &mut FuzzRng::from_bytes(rest)).unwrap();
            assert_eq!(lightsaber_avr::decapsulate(sk, &ct2).as_bytes(), ss2.as_bytes());
        }
        _ => {
            let (sk_part, ct_part) = split(rest, SK_BYTES);
            let mut sk: [u8; SK_BYTES] = fixed(sk_part);
            // Secret coefficients into [-5, 5] (13-bit two's complement), H(pk) recomputed.
            for j in 0..2 {
                let poly = &mut sk[j * SK_PKE_BYTES / 2..(j + 1) * SK_PKE_BYTES / 2];
                remap_bits(poly, 13, 256, |v| ((v % 11) as i16 - 5) as u16 & 0x1FFF);
            }
            let h = fips202::sha3_256(&[&sk[SK_PKE_BYTES..SK_PKE_BYTES + PK_BYTES]]);
            sk[SK_PKE_BYTES + PK_BYTES..SK_PKE_BYTES + PK_BYTES + 32].copy_from_slice(&h);
            let typed = SecretKey::from_bytes(&sk).expect("repaired key imports");
            let ct_bytes: [u8; CT_BYTES] = fixed(ct_part);
            let ss = lightsaber_avr::decapsulate(&typed, &Ciphertext::from_bytes(&ct_bytes).unwrap());
            assert_eq!(
                ss.as_bytes(),
                lightsaber_avr::decapsulate_into(&sk, &ct_bytes).as_bytes()
            );
            let pk = typed.public_key();
            let _ = lightsaber_avr::encapsulate(&pk, &mut FuzzRng::new(5)).unwrap();
        }
    }
});
