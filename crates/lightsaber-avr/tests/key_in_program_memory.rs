//! Keys read through a reader (as a classic AVR reads them from its
//! program memory, `kem_common::KeyBytes::Reader`) give the bytes the slice
//! API gives, and fail the same input checks.

use kem_common::test_memory::{self, reader};
use kem_common::test_rng;
use lightsaber_avr::params::{CT_BYTES, PK_BYTES, SK_BYTES};
use lightsaber_avr::{
    check_secret_key_from, decapsulate_from, decapsulate_into, encapsulate_from, encapsulate_into, keygen_into, Error,
};

#[test]
fn keys_in_program_memory_read_like_slices() {
    for seed in 0..4u64 {
        let mut pk = [0u8; PK_BYTES];
        let mut sk = [0u8; SK_BYTES];
        keygen_into(&mut test_rng(seed), &mut pk, &mut sk).unwrap();
        test_memory::set(&[&pk[..], &sk[..]].concat());
        let (pk_r, sk_r) = (reader(0, PK_BYTES), reader(PK_BYTES, SK_BYTES));

        let (mut ct, mut ct_r) = ([0u8; CT_BYTES], [0u8; CT_BYTES]);
        let ss = encapsulate_into(&pk, &mut test_rng(100 + seed), &mut ct).unwrap();
        let ss_r = encapsulate_from(pk_r, &mut test_rng(100 + seed), &mut ct_r).unwrap();
        assert_eq!(ct, ct_r, "seed {seed}");
        assert_eq!(ss.as_bytes(), ss_r.as_bytes());

        check_secret_key_from(sk_r).unwrap();
        assert_eq!(decapsulate_from(sk_r, &ct).as_bytes(), ss.as_bytes());
        ct[seed as usize] ^= 1;
        assert_eq!(
            decapsulate_from(sk_r, &ct).as_bytes(),
            decapsulate_into(&sk, &ct).as_bytes()
        );
        assert_ne!(decapsulate_from(sk_r, &ct).as_bytes(), ss.as_bytes());
    }
    // The import checks hold for a reader: a secret coefficient out of
    // [−5, 5], a wrong H(pk), a short key.
    let flip = |at: usize| test_memory::modify(|m| m[at] ^= 0x10);
    flip(PK_BYTES + 1);
    assert_eq!(
        check_secret_key_from(reader(PK_BYTES, SK_BYTES)),
        Err(Error::DecapsulationKeyMalformed)
    );
    flip(PK_BYTES + 1);
    flip(PK_BYTES + SK_BYTES - 40); // inside H(pk)
    assert_eq!(
        check_secret_key_from(reader(PK_BYTES, SK_BYTES)),
        Err(Error::DecapsulationKeyHashMismatch)
    );
    assert!(check_secret_key_from(reader(PK_BYTES, SK_BYTES - 1)).is_err());
    assert!(encapsulate_from(reader(0, PK_BYTES + 1), &mut test_rng(1), &mut [0u8; CT_BYTES]).is_err());
}
