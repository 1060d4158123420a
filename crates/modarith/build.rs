//! On AVR, assembles the NTT routines of `asm-avr/` and sets `cfg(ntt_asm)`;
//! elsewhere (and for rings without a routine) the portable NTT is used.

fn main() {
    avr_asm_build::assemble("ntt_asm", "modarith_ntt_avr", &["../../asm-avr/ntt_forward.S"]);
}
