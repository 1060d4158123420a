//! On AVR, assembles the field arithmetic of `asm-avr/` and selects the
//! assembly backend (`src/backend/`); elsewhere the portable field is used.
//! Two generated assemblies export the same routines: `fe25519_mul.S` (unrolled, fastest,
//! ~19 KB) and, for an MCU with 48 KB of flash or less (the ATmega4808) or
//! with the `compact` feature, `fe25519_compact.S` (the multiplication looped
//! over its rows, the inversion looped: ~5 KB); with the `tiny` feature,
//! `fe25519_tiny.S` (the compact one squaring through its multiplication:
//! ~3.5 KB, for an image that does not fit otherwise). `cfg(fe25519_compact)` says
//! which one an image has; without it, `ed25519_select.S` is assembled too
//! (the fixed-base table read from flash).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(fe25519_compact)");
    let tiny = std::env::var_os("CARGO_FEATURE_TINY").is_some();
    let compact = tiny || std::env::var_os("CARGO_FEATURE_COMPACT").is_some() || avr_asm_build::small_mcu();
    // The unrolled field comes with the fixed-base table's selection (the
    // compact images keep the table-free ladder for X25519(k, 9)).
    let sources: &[&str] = if tiny {
        &["fe25519_tiny.S"]
    } else if compact {
        &["fe25519_compact.S"]
    } else {
        &["fe25519_mul.S", "ed25519_select.S"]
    };
    asm_avr::assemble("fe25519_mul_avr", sources);
    if compact && std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("avr") {
        println!("cargo::rustc-cfg=fe25519_compact");
    }
}
