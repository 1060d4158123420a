//! On AVR, assembles the Keccak-f[1600] of `asm-avr/` and selects the
//! assembly backend; elsewhere the portable `keccak` crate is used
//! (`src/backend/`). Two siblings export the same routine:
//! `keccak_f1600.S` (unrolled, fastest, ~4 KB) and, with the `compact`
//! feature, `keccak_f1600_compact.S` (looped, ~0.7 KB, about twice the
//! cycles), for images that do not fit their flash otherwise.

fn main() {
    let source = match std::env::var_os("CARGO_FEATURE_COMPACT") {
        Some(_) => "keccak_f1600_compact.S",
        None => "keccak_f1600.S",
    };
    asm_avr::assemble("keccak_f1600_avr", &[source]);
}
