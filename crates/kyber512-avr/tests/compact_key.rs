//! The compact decapsulation key (σ ‖ ek ‖ H(ek) ‖ z) is the FIPS 203 key
//! of the same draws in fewer bytes: the same encapsulation key, hash and
//! z, and the same shared secret for every ciphertext (valid, modified or
//! random), in every parameter set; malformed compact keys are typed errors.

macro_rules! compact_matches_expanded {
    ($name:ident, $set:ident) => {
        #[test]
        fn $name() {
            use kyber512_avr::$set::{params::*, raw};
            assert_eq!(COMPACT_DK_BYTES, DK_BYTES - DK_PKE_BYTES + SIGMA_BYTES);
            for seed in 0..6u64 {
                let (mut r1, mut r2) = (kem_common::test_rng(seed), kem_common::test_rng(seed));
                let (mut ek, mut dk) = ([0u8; EK_BYTES], [0u8; DK_BYTES]);
                raw::keygen_into(&mut r1, &mut ek, &mut dk).unwrap();
                let mut compact = [0xA5u8; COMPACT_DK_BYTES];
                raw::keygen_compact_into(&mut r2, &mut compact).unwrap();
                // ek ‖ H(ek) ‖ z are the same bytes; σ replaces ŝ's encoding.
                assert_eq!(&compact[SIGMA_BYTES..], &dk[DK_PKE_BYTES..]);
                assert_eq!(&compact[SIGMA_BYTES..SIGMA_BYTES + EK_BYTES], &ek[..]);
                assert_ne!(&compact[..SIGMA_BYTES], &[0xA5; SIGMA_BYTES][..]);
                raw::check_compact_decapsulation_key(&compact).unwrap();

                let mut rng = kem_common::test_rng(seed + 100);
                let mut ct = [0u8; CT_BYTES];
                let ss = raw::encapsulate_into(&ek, &mut rng, &mut ct).unwrap();
                assert_eq!(raw::decapsulate_compact_into(&compact, &ct), ss);
                assert_eq!(raw::decapsulate_into(&dk, &ct), ss);
                // Modified and random ciphertexts: the same implicit rejection.
                for k in [0, CT_BYTES / 2, CT_BYTES - 1] {
                    let mut bad = ct;
                    bad[k] ^= 1 << (seed % 8);
                    let rejected = raw::decapsulate_compact_into(&compact, &bad);
                    assert_ne!(rejected, ss);
                    assert_eq!(rejected, raw::decapsulate_into(&dk, &bad));
                }
                let mut random = [0u8; CT_BYTES];
                let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for b in random.iter_mut() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *b = x as u8;
                }
                assert_eq!(
                    raw::decapsulate_compact_into(&compact, &random),
                    raw::decapsulate_into(&dk, &random)
                );
            }
            // Malformed: the wrong length, a corrupted hash (ML-KEM's §7.3 check).
            let mut compact = [0u8; COMPACT_DK_BYTES];
            raw::keygen_compact_into(&mut kem_common::test_rng(7), &mut compact).unwrap();
            assert_eq!(
                raw::check_compact_decapsulation_key(&compact[1..]).unwrap_err(),
                kyber512_avr::Error::InvalidLength {
                    expected: COMPACT_DK_BYTES,
                    got: COMPACT_DK_BYTES - 1
                }
            );
            assert!(raw::check_compact_decapsulation_key(&[0u8; DK_BYTES]).is_err());
            compact[SIGMA_BYTES + EK_BYTES] ^= 1;
            let checked = raw::check_compact_decapsulation_key(&compact);
            if stringify!($set) == "kyber512_r3" {
                assert!(checked.is_ok(), "round 3 checks no hash");
            } else {
                assert_eq!(
                    checked.unwrap_err(),
                    kyber512_avr::Error::DecapsulationKeyHashMismatch
                );
            }
            // A failing RNG leaves the buffer wiped.
            let mut compact = [0x5Au8; COMPACT_DK_BYTES];
            assert!(raw::keygen_compact_into(&mut kem_common::Tape::new(&[0x3C; 63]), &mut compact).is_err());
            assert!(compact.iter().all(|&b| b == 0));
        }
    };
}

compact_matches_expanded!(ml_kem_512_compact_key, ml_kem_512);
compact_matches_expanded!(ml_kem_768_compact_key, ml_kem_768);
compact_matches_expanded!(ml_kem_1024_compact_key, ml_kem_1024);
compact_matches_expanded!(kyber512_r3_compact_key, kyber512_r3);
