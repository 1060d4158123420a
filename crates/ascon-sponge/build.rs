//! On AVR, assembles the Ascon permutation of `asm-avr/` and sets
//! `cfg(ascon_asm)`; elsewhere `ascon-core`'s portable permutation is used.

fn main() {
    asm_avr::assemble("ascon_asm", "ascon_permute_avr", &["ascon_p.S"]);
}
