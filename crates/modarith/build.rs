//! On AVR, assembles the NTT routines of `asm-avr/` and selects the
//! assembly backend (`src/backend/`); elsewhere (and for rings without a
//! routine) the portable NTT is used. The `portable` feature keeps the
//! portable NTT on AVR too, for images where flash matters more than speed
//! (the ATmega4808's 48 KB).
//!
//! Table placement: by default the routines read their twiddle tables from
//! flash (`asm-avr/ntt_forward_flash.S`, `lpm`; `cfg(ntt_tables_flash)` puts
//! the tables in `.progmem.data`); the `ntt-tables-in-sram` feature keeps
//! them in SRAM (`asm-avr/ntt_forward.S`, `ld`): ~1 KB of static RAM for a
//! few hundred cycles an NTT. Both files define the same symbols.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ntt_tables_flash)");
    if std::env::var_os("CARGO_FEATURE_PORTABLE").is_some() {
        asm_avr::portable();
        return;
    }
    let sram = std::env::var_os("CARGO_FEATURE_NTT_TABLES_IN_SRAM").is_some();
    let file = if sram { "ntt_forward.S" } else { "ntt_forward_flash.S" };
    asm_avr::assemble("modarith_ntt_avr", &[file]);
    if !sram && std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("avr") {
        println!("cargo::rustc-cfg=ntt_tables_flash");
    }
}
