//! On AVR, assembles the Keccak-f[1600] of `asm-avr/` and sets
//! `cfg(keccak_asm)`; elsewhere the portable `keccak` crate is used.

fn main() {
    asm_avr::assemble("keccak_asm", "keccak_f1600_avr", &["keccak_f1600.S"]);
}
