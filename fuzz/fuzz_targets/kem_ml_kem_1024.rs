//! ML-KEM-1024: key and ciphertext decoding, decapsulation of arbitrary
//! ciphertexts with honest and with arbitrary import-validated keys.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let run = kem_fuzz::kyber_target!(kyber512_avr::ml_kem_1024, true);
    run(data)
});
