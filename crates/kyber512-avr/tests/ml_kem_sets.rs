//! Every ML-KEM set (one code base with each set's k, η1, d_u, d_v) against
//! RustCrypto's `ml-kem` 0.3 (an independent implementation) on random
//! inputs and from seeds both ways, through the `kem` traits of both
//! crates, with malformed input as a typed error, and through serde. Their
//! NIST vectors are in `acvp.rs`; ML-KEM-512's further checks in
//! `differential.rs`, `malformed.rs` and `serde.rs`.

#![allow(deprecated)] // ml-kem's expanded key encoding: the byte form FIPS 203 and we use

macro_rules! ml_kem_set {
    ($module:ident, $set:ident) => {
        mod $module {
            use kem_common::kem::{Decapsulate, Encapsulate, FromSeed, Kem, KeyExport, TryKeyInit};
            use kem_common::rand_core::Rng;
            use kyber512_avr::$module::{self as ours, hazmat, params};
            use kyber512_avr::Error;
            use ml_kem::array::Array;
            use ml_kem::ExpandedKeyEncoding;

            type Theirs = ml_kem::$set;

            #[test]
            fn agrees_with_rustcrypto_ml_kem_on_random_inputs() {
                let mut rng = kem_common::test_rng(params::K as u64);
                for trial in 0..100 {
                    let mut dzm = [0u8; 96];
                    rng.fill_bytes(&mut dzm);
                    let d: [u8; 32] = dzm[..32].try_into().unwrap();
                    let z: [u8; 32] = dzm[32..64].try_into().unwrap();
                    let m: [u8; 32] = dzm[64..].try_into().unwrap();
                    let (ek, dk) = hazmat::key_gen_internal(&d, &z);
                    let their_dk = ml_kem::$module::DecapsulationKey::from_seed(Array::try_from(&dzm[..64]).unwrap());
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

                    // A corrupted and a random ciphertext: the same rejection key in both.
                    let mut bad = ct;
                    bad[(trial * 37) % bad.len()] ^= 1 << (trial % 8);
                    let rejected = hazmat::decaps(&dk, &bad).expect("valid dk");
                    assert_eq!(rejected.as_slice(), their_dk.decapsulate(&bad.into()).as_slice());
                    assert_ne!(rejected, ss);
                    let mut random = [0u8; params::CT_BYTES];
                    rng.fill_bytes(&mut random);
                    let rejected = hazmat::decaps(&dk, &random).expect("valid dk");
                    assert_eq!(
                        rejected.as_slice(),
                        their_dk.decapsulate(&random.into()).as_slice()
                    );
                }
            }

            #[test]
            fn kem_traits_and_seeds_interoperate_both_ways() {
                let mut rng = kem_common::test_rng(100 + params::K as u64);
                // Our pair, their encapsulation.
                let (dk, ek) = ours::$set::generate_keypair_from_rng(&mut rng);
                let their_ek =
                    ml_kem::$module::EncapsulationKey::new(&ek.to_bytes()).expect("our ek is valid for them");
                let (ct, k) = their_ek.encapsulate_with_rng(&mut rng);
                assert_eq!(dk.decapsulate(&ct).as_slice(), k.as_slice());
                // Their pair, our encapsulation.
                let (their_dk, their_ek) = Theirs::generate_keypair_from_rng(&mut rng);
                let ek2 = ours::EncapsulationKey::new(&their_ek.to_bytes()).expect("their ek is valid for us");
                let (ct, k) = ek2.encapsulate_with_rng(&mut rng);
                assert_eq!(their_dk.decapsulate(&ct).as_slice(), k.as_slice());
                assert_ne!(dk.decapsulate(&ct).as_slice(), k.as_slice());

                // Their seed gives our keys; our seed gives theirs.
                let their_seed = their_dk.to_seed().expect("a generated key keeps its seed");
                let (dk, ek) = ours::Seed::try_from(their_seed.as_slice())
                    .expect("64 bytes")
                    .keys();
                assert_eq!(ek.as_bytes().as_slice(), their_ek.to_bytes().as_slice());
                assert_eq!(dk.as_bytes().as_slice(), their_dk.to_expanded_bytes().as_slice());
                let (dk_t, ek_t) = ours::$set::from_seed(&their_seed);
                assert_eq!((dk_t.as_bytes(), ek_t.as_bytes()), (dk.as_bytes(), ek.as_bytes()));
                let seed = ours::Seed::generate(&mut rng).expect("rng");
                let (dk, ek) = seed.keys();
                assert_eq!(dk.to_seed().as_ref(), Some(&seed));
                let their_dk = ml_kem::$module::DecapsulationKey::from_seed(Array::from(*seed.as_bytes()));
                assert_eq!(
                    their_dk.encapsulation_key().to_bytes().as_slice(),
                    ek.as_bytes().as_slice()
                );
                let (ct, k) = ek.encapsulate_with_rng(&mut rng);
                assert_eq!(their_dk.decapsulate(&ct).as_slice(), k.as_slice());
            }

            #[test]
            fn malformed_input_is_a_typed_error() {
                let (ek, dk) = hazmat::key_gen_internal(&[7; 32], &[9; 32]);
                for len in [0, params::EK_BYTES - 1, params::EK_BYTES + 1] {
                    assert_eq!(
                        ours::EncapsulationKey::from_bytes(&vec![0; len]).unwrap_err(),
                        Error::InvalidLength {
                            expected: params::EK_BYTES,
                            got: len
                        }
                    );
                }
                assert_eq!(
                    ours::DecapsulationKey::from_bytes(&dk[1..]).unwrap_err(),
                    Error::InvalidLength {
                        expected: params::DK_BYTES,
                        got: params::DK_BYTES - 1
                    }
                );
                assert_eq!(
                    ours::Ciphertext::from_bytes(&[0; 3]).unwrap_err(),
                    Error::InvalidLength {
                        expected: params::CT_BYTES,
                        got: 3
                    }
                );
                // FIPS 203 §7.2: a 12-bit value of 4095 in the last polynomial of t̂.
                let mut unreduced = ek;
                let last = (params::K - 1) * params::POLY_BYTES;
                unreduced[last] = 0xFF;
                unreduced[last + 1] |= 0x0F;
                assert_eq!(
                    ours::EncapsulationKey::from_bytes(&unreduced).unwrap_err(),
                    Error::EncapsulationKeyNotReduced
                );
                assert!(hazmat::encaps_internal(&unreduced, &[0; 32]).is_err());
                // FIPS 203 §7.3: ek inside dk no longer matches its hash.
                let mut corrupted = dk;
                corrupted[params::DK_PKE_BYTES] ^= 1;
                assert_eq!(
                    ours::DecapsulationKey::from_bytes(&corrupted).unwrap_err(),
                    Error::DecapsulationKeyHashMismatch
                );
                assert!(ours::Seed::try_from(&[0u8; 63][..]).is_err());
            }

            #[test]
            fn keys_seeds_and_ciphertexts_travel_as_hex() {
                let mut rng = kem_common::test_rng(7);
                let (dk, ek) = ours::keygen(&mut rng).unwrap();
                let (ct, ss) = ours::encapsulate(&ek, &mut rng).unwrap();
                let json = serde_json::to_string(&ek).unwrap();
                assert_eq!(json.len(), 2 * params::EK_BYTES + 2);
                assert_eq!(serde_json::from_str::<ours::EncapsulationKey>(&json).unwrap(), ek);
                let dk2: ours::DecapsulationKey = serde_json::from_str(&serde_json::to_string(&dk).unwrap()).unwrap();
                let ct2: ours::Ciphertext = serde_json::from_str(&serde_json::to_string(&ct).unwrap()).unwrap();
                assert_eq!(ours::decapsulate(&dk2, &ct2), ss);
                let seed = dk.to_seed().unwrap();
                let seed2: ours::Seed = serde_json::from_str(&serde_json::to_string(&seed).unwrap()).unwrap();
                assert_eq!(seed2, seed);
                let unreduced = format!("\"{}\"", "ff".repeat(params::EK_BYTES));
                assert!(serde_json::from_str::<ours::EncapsulationKey>(&unreduced).is_err());
            }
        }
    };
}

ml_kem_set!(ml_kem_512, MlKem512);
ml_kem_set!(ml_kem_768, MlKem768);
ml_kem_set!(ml_kem_1024, MlKem1024);
