//! On AVR, assembles the E8 decoder, the ciphertext compression and the
//! base case of decryption's product of `asm-avr/` and selects the assembly
//! backend (`src/backend/`); elsewhere the portable code is used. Refuses
//! an AVR with too little SRAM for any operation (`avr-sram-floor.txt`).

fn main() {
    asm_avr::assemble("ctru_avr", &["e8_decode.S", "ctru_compress.S", "ctru_mul.S"]);
    // An MCU with less SRAM than the lightest operation needs: a clear error.
    avr_asm_build::require_sram();
}
