//! On AVR, assembles the field multiplication of `asm-avr/` and sets
//! `cfg(fe25519_asm)`; elsewhere the portable multiplication is used.

fn main() {
    avr_asm_build::assemble("fe25519_asm", "fe25519_mul_avr", &["../../asm-avr/fe25519_mul.S"]);
}
