//! Selects the Keccak-f[1600] backend: on AVR the hand-written assembly in
//! `asm-avr/keccak_f1600.S` is assembled with avr-gcc and `cfg(keccak_asm)`
//! is set; everywhere else the portable `keccak` crate is used. An AVR build
//! that cannot assemble the routine fails (no silent fallback).

use std::env;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(keccak_asm)");
    println!("cargo::rerun-if-changed=../../asm-avr/keccak_f1600.S");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("avr") {
        return;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let cpu = flags
        .split('\u{1f}')
        .find_map(|f| {
            f.strip_prefix("target-cpu=")
                .or_else(|| f.strip_prefix("-Ctarget-cpu="))
        })
        .map(str::to_owned)
        .or_else(|| {
            // `-C target-cpu=X` arrives as two separate flags.
            let parts: Vec<&str> = flags.split('\u{1f}').collect();
            parts
                .windows(2)
                .find(|w| w[0] == "-C")
                .and_then(|w| w[1].strip_prefix("target-cpu="))
                .map(str::to_owned)
        })
        .expect("AVR builds need -C target-cpu=<mcu> (the xtask sets it)");
    // avr-gcc 5.4 has no atmega4808 device: its core family is avrxmega3.
    let mmcu = if cpu == "atmega4808" {
        "avrxmega3".to_owned()
    } else {
        cpu
    };
    cc::Build::new()
        .compiler("avr-gcc")
        .no_default_flags(true)
        .flag(format!("-mmcu={mmcu}"))
        .file("../../asm-avr/keccak_f1600.S")
        .compile("keccak_f1600_avr");
    println!("cargo::rustc-cfg=keccak_asm");
}
