//! On AVR, assembles the Keccak-f[1600] of `asm-avr/` and selects the
//! assembly backend; elsewhere the portable `keccak` crate is used
//! (`src/backend/`).

fn main() {
    asm_avr::assemble("keccak_f1600_avr", &["keccak_f1600.S"]);
}
