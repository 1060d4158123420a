//! On AVR, assembles the NTT routines of `asm-avr/` and sets `cfg(ntt_asm)`;
//! elsewhere (and for rings without a routine) the portable NTT is used.
//! The `portable` feature keeps the portable NTT on AVR too, for images
//! where flash matters more than speed (the ATmega4808's 48 KB).

fn main() {
    if std::env::var_os("CARGO_FEATURE_PORTABLE").is_some() {
        println!("cargo::rustc-check-cfg=cfg(ntt_asm)");
        return;
    }
    avr_asm_build::assemble("ntt_asm", "modarith_ntt_avr", &["../../asm-avr/ntt_forward.S"]);
}
