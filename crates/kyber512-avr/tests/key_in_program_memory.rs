//! Keys read through a reader (as a classic AVR reads them from its
//! program memory, `kem_common::KeyBytes::Reader`) give the bytes the slice
//! API gives, and fail the same input checks, for every parameter set.

use kem_common::test_memory::{self, reader};
use kem_common::test_rng;

macro_rules! same_as_slices {
    ($name:ident, $set:ident) => {
        #[test]
        fn $name() {
            use kyber512_avr::$set::params::{CT_BYTES, DK_BYTES, EK_BYTES};
            use kyber512_avr::$set::raw;
            for seed in 0..4u64 {
                let mut ek = [0u8; EK_BYTES];
                let mut dk = [0u8; DK_BYTES];
                raw::keygen_into(&mut test_rng(seed), &mut ek, &mut dk).unwrap();
                test_memory::set(&[&ek[..], &dk[..]].concat());
                let (ek_r, dk_r) = (reader(0, EK_BYTES), reader(EK_BYTES, DK_BYTES));

                let (mut ct, mut ct_r) = ([0u8; CT_BYTES], [0u8; CT_BYTES]);
                let ss = raw::encapsulate_into(&ek, &mut test_rng(100 + seed), &mut ct).unwrap();
                let ss_r = raw::encapsulate_from(ek_r, &mut test_rng(100 + seed), &mut ct_r).unwrap();
                assert_eq!(ct, ct_r, "seed {seed}");
                assert_eq!(ss.as_bytes(), ss_r.as_bytes());

                raw::check_decapsulation_key_from(dk_r).unwrap();
                assert_eq!(raw::decapsulate_from(dk_r, &ct).as_bytes(), ss.as_bytes());
                // A changed ciphertext: the implicit-rejection key, as the slice API gives it.
                ct[seed as usize] ^= 1;
                assert_eq!(
                    raw::decapsulate_from(dk_r, &ct).as_bytes(),
                    raw::decapsulate_into(&dk, &ct).as_bytes()
                );
                assert_ne!(raw::decapsulate_from(dk_r, &ct).as_bytes(), ss.as_bytes());
            }
            // The input checks hold for a reader too: a coefficient of q
            // (ML-KEM's modulus check), a wrong H(ek), a short key.
            test_memory::modify(|m| m[..2].copy_from_slice(&[0x01, 0x0d])); // 12-bit value 0xd01 = 3329 = q
            let unreduced = raw::encapsulate_from(reader(0, EK_BYTES), &mut test_rng(1), &mut [0u8; CT_BYTES]);
            if stringify!($set).starts_with("ml_kem") {
                assert_eq!(
                    unreduced.err(),
                    Some(kyber512_avr::Error::EncapsulationKeyNotReduced)
                );
            } else {
                assert!(unreduced.is_ok(), "round-3 Kyber checks no key");
            }
            test_memory::modify(|m| m[EK_BYTES + DK_BYTES - 40] ^= 1); // inside H(ek)
            let hash_broken = raw::check_decapsulation_key_from(reader(EK_BYTES, DK_BYTES));
            if stringify!($set).starts_with("ml_kem") {
                assert_eq!(
                    hash_broken.err(),
                    Some(kyber512_avr::Error::DecapsulationKeyHashMismatch)
                );
            }
            assert!(raw::encapsulate_from(reader(0, EK_BYTES - 1), &mut test_rng(1), &mut [0u8; CT_BYTES]).is_err());
            assert!(raw::check_decapsulation_key_from(reader(EK_BYTES, DK_BYTES - 1)).is_err());
        }
    };
}

same_as_slices!(ml_kem_512_reads_keys_like_slices, ml_kem_512);
same_as_slices!(ml_kem_768_reads_keys_like_slices, ml_kem_768);
same_as_slices!(ml_kem_1024_reads_keys_like_slices, ml_kem_1024);
same_as_slices!(kyber512_r3_reads_keys_like_slices, kyber512_r3);
