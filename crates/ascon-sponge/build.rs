//! On AVR, assembles the Ascon permutation of `asm-avr/` and selects the
//! assembly backend; elsewhere `ascon-core`'s portable permutation is used
//! (`src/backend/`).

fn main() {
    asm_avr::assemble("ascon_permute_avr", &["ascon_p.S"]);
}
