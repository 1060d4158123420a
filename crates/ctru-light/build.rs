//! On AVR, assembles the E8 decoder of `asm-avr/` and sets `cfg(e8_asm)`;
//! elsewhere the portable decoder is used.

fn main() {
    avr_asm_build::assemble("e8_asm", "ctru_e8_avr", &["../../asm-avr/e8_decode.S"]);
}
