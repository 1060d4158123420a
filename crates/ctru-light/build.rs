//! On AVR, assembles the E8 decoder, the ciphertext compression and the
//! base case of decryption's product of `asm-avr/` and sets `cfg(ctru_asm)`;
//! elsewhere the portable code is used. Refuses an AVR with too little SRAM
//! for any operation (`avr-sram-floor.txt`).

fn main() {
    avr_asm_build::assemble(
        "ctru_asm",
        "ctru_avr",
        &[
            "../../asm-avr/e8_decode.S",
            "../../asm-avr/ctru_compress.S",
            "../../asm-avr/ctru_mul.S",
        ],
    );
    // An MCU with less SRAM than the lightest operation needs: a clear error.
    avr_asm_build::require_sram();
}
