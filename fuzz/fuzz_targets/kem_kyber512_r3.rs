//! Kyber512 (round 3): key and ciphertext decoding, decapsulation of
//! arbitrary ciphertexts with honest and with arbitrary keys (round 3 does
//! not validate keys on import, so any byte string must be safe).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let run = kem_fuzz::kyber_target!(kyber512_avr::kyber512_r3, false);
    run(data)
});
