#![forbid(unsafe_code)]
#![deny(missing_docs)]
//! Backend selection for crates with AVR assembly (curve25519-dalek style:
//! decided in `build.rs`, upper layers see one API). On an AVR target the
//! given `asm-avr/*.S` files are assembled with avr-gcc for the MCU named by
//! `-C target-cpu` and `cfg(<cfg>)` is set; on every other target nothing
//! happens and the crate's portable Rust path is used. An AVR build that
//! cannot assemble a routine fails: there is no silent fallback.

use std::env;
use std::path::Path;

/// The `-C target-cpu` of this build, from `CARGO_ENCODED_RUSTFLAGS`.
pub fn target_cpu() -> Option<String> {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let parts: Vec<&str> = flags.split('\u{1f}').collect();
    parts.iter().enumerate().find_map(|(i, f)| {
        let value = match f
            .strip_prefix("-Ctarget-cpu=")
            .or_else(|| f.strip_prefix("target-cpu="))
        {
            Some(v) => Some(v),
            None if *f == "-C" => parts.get(i + 1).and_then(|n| n.strip_prefix("target-cpu=")),
            None => None,
        };
        value.map(str::to_owned)
    })
}

/// LLVM CPU names of the small megaAVR 0-series parts (48 KB of flash or
/// less, 6 KB of SRAM or less; the ATmega4808 is the one we test): crates
/// pick their compact variants for them.
pub const SMALL_MCUS: &[&str] = &["atmega4808", "atmega4809", "atmega3208", "atmega3209"];

/// Whether this build targets one of [`SMALL_MCUS`].
pub fn small_mcu() -> bool {
    target_cpu().is_some_and(|cpu| SMALL_MCUS.contains(&cpu.as_str()))
}

/// avr-gcc's `-mmcu` for an LLVM CPU name: avr-gcc 5.4 has no ATmega4808
/// device, so its core family (avrxmega3) is used for assembling.
fn mmcu(cpu: &str) -> &str {
    if cpu == "atmega4808" {
        "avrxmega3"
    } else {
        cpu
    }
}

/// Declares `cfg(<cfg>)`, and on AVR assembles `files` (paths relative to
/// the calling crate) into `lib_name` and sets the cfg.
pub fn assemble(cfg: &str, lib_name: &str, files: &[&str]) {
    println!("cargo::rustc-check-cfg=cfg({cfg})");
    for f in files {
        println!("cargo::rerun-if-changed={f}");
    }
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("avr") {
        return;
    }
    let cpu = target_cpu().expect("AVR builds need -C target-cpu=<mcu> (cargo xtask build-avr sets it)");
    let mut build = cc::Build::new();
    build
        .compiler("avr-gcc")
        .no_default_flags(true)
        .flag(format!("-mmcu={}", mmcu(&cpu)));
    for f in files {
        assert!(Path::new(f).exists(), "missing AVR assembly source {f}");
        build.file(f);
    }
    build.compile(lib_name);
    println!("cargo::rustc-cfg={cfg}");
}
