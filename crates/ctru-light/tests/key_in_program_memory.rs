//! Keys read through a reader (as a classic AVR reads them from its
//! program memory, `kem_common::KeyBytes::Reader`) give the bytes the slice
//! API gives, and fail the same input checks, for both back-ends.

use ctru_light::params::{CT_BYTES, PK_BYTES, SK_BYTES, SK_PKE_BYTES};
use ctru_light::{Ascon, Backend, CtruLight, Error, Sha3};
use kem_common::test_memory::{self, reader};
use kem_common::test_rng;

fn reads_like_slices<B: Backend>() {
    type K<B> = CtruLight<B>;
    for seed in 0..4u64 {
        let mut pk = [0u8; PK_BYTES];
        let mut sk = [0u8; SK_BYTES];
        K::<B>::keygen_into(&mut test_rng(seed), &mut pk, &mut sk).unwrap();
        test_memory::set(&[&pk[..], &sk[..]].concat());
        let (pk_r, sk_r) = (reader(0, PK_BYTES), reader(PK_BYTES, SK_BYTES));

        let (mut ct, mut ct_r) = ([0u8; CT_BYTES], [0u8; CT_BYTES]);
        let ss = K::<B>::encapsulate_into(&pk, &mut test_rng(100 + seed), &mut ct).unwrap();
        let ss_r = K::<B>::encapsulate_from(pk_r, &mut test_rng(100 + seed), &mut ct_r).unwrap();
        assert_eq!(ct, ct_r, "seed {seed}");
        assert_eq!(ss.as_bytes(), ss_r.as_bytes());

        K::<B>::check_secret_key_from(sk_r).unwrap();
        assert_eq!(K::<B>::decapsulate_from(sk_r, &ct).as_bytes(), ss.as_bytes());
        ct[seed as usize] ^= 1;
        assert_eq!(
            K::<B>::decapsulate_from(sk_r, &ct).as_bytes(),
            K::<B>::decapsulate_into(&sk, &ct).as_bytes()
        );
        assert_ne!(K::<B>::decapsulate_from(sk_r, &ct).as_bytes(), ss.as_bytes());
    }
    // The checks hold for a reader: a public value ≥ q (in the public key,
    // and in the copy inside the secret key), a secret value above 5, a
    // short key.
    test_memory::modify(|m| m[..2].copy_from_slice(&[0xff, 0x03])); // 10-bit 1023
    let unreduced = K::<B>::encapsulate_from(reader(0, PK_BYTES), &mut test_rng(1), &mut [0u8; CT_BYTES]);
    assert_eq!(unreduced.err(), Some(Error::EncapsulationKeyNotReduced));
    let pk_in_sk = PK_BYTES + SK_PKE_BYTES + PK_BYTES - 2;
    test_memory::modify(|m| m[pk_in_sk..pk_in_sk + 2].copy_from_slice(&[0xff, 0xff]));
    assert_eq!(
        K::<B>::check_secret_key_from(reader(PK_BYTES, SK_BYTES)).err(),
        Some(Error::EncapsulationKeyNotReduced)
    );
    test_memory::modify(|m| m[PK_BYTES] = 0xff); // 3-bit values 7
    assert_eq!(
        K::<B>::check_secret_key_from(reader(PK_BYTES, SK_BYTES)).err(),
        Some(Error::DecapsulationKeyMalformed)
    );
    assert!(K::<B>::check_secret_key_from(reader(PK_BYTES, SK_BYTES - 1)).is_err());
    assert!(K::<B>::encapsulate_from(reader(0, PK_BYTES - 1), &mut test_rng(1), &mut [0u8; CT_BYTES]).is_err());
}

#[test]
fn keys_in_program_memory_read_like_slices_sha3() {
    reads_like_slices::<Sha3>();
}

#[test]
fn keys_in_program_memory_read_like_slices_ascon() {
    reads_like_slices::<Ascon>();
}
