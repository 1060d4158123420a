//! Kyber512 round 3's implicit rejection, against the round-3 specification
//! (Algorithm 9, `crypto_kem_dec`): a ciphertext that does not re-encrypt
//! decapsulates to KDF(z ‖ H(c)) = SHAKE-256(z ‖ SHA3-256(c)), z being the
//! secret key's last 32 bytes; a valid one to the encapsulated key. The
//! decapsulation selects K̄ or z first and runs one KDF, so this checks
//! both outcomes of that selection on many keys and ciphertexts.

use kem_common::rand_core::Rng;
use kyber512_avr::kyber512_r3::raw;
use kyber512_avr::params::{CT_BYTES, DK_BYTES, EK_BYTES};

#[test]
fn rejected_ciphertexts_give_kdf_of_z_and_valid_ones_the_encapsulated_key() {
    let mut rng = kem_common::test_rng(0x5233);
    for trial in 0..100 {
        let (mut ek, mut dk) = ([0u8; EK_BYTES], [0u8; DK_BYTES]);
        raw::keygen_into(&mut rng, &mut ek, &mut dk).unwrap();
        let mut ct = [0u8; CT_BYTES];
        let ss = raw::encapsulate_into(&ek, &mut rng, &mut ct).unwrap();
        assert_eq!(raw::decapsulate_into(&dk, &ct), ss, "valid, trial {trial}");

        let z = &dk[DK_BYTES - 32..];
        let rejection = |c: &[u8; CT_BYTES]| fips202::shake256::<32>(&[z, &fips202::sha3_256(&[c])]);
        let mut bad = ct;
        bad[(trial * 53) % CT_BYTES] ^= 1 << (trial % 8);
        let got = raw::decapsulate_into(&dk, &bad);
        assert_eq!(got.as_bytes(), &rejection(&bad), "corrupted, trial {trial}");
        assert_ne!(got, ss);

        let mut random = [0u8; CT_BYTES];
        rng.fill_bytes(&mut random);
        assert_eq!(raw::decapsulate_into(&dk, &random).as_bytes(), &rejection(&random));
    }
}
