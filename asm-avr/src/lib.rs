#![forbid(unsafe_code)]
#![deny(missing_docs)]
//! The AVR assembly of the avr-pqc crates, packaged with them, and the
//! `build.rs` helper that assembles it.
//!
//! The routines sit beside this crate's manifest (the repository's
//! `asm-avr/` folder), grouped by family in [`FAMILIES`]; each generated
//! `.S` comes with the `gen_*.py` that wrote it. A crate with an AVR backend
//! build-depends on this one and calls [`assemble`] from its `build.rs`: on
//! an AVR target (`target_arch = "avr"`) the named files are assembled with
//! avr-gcc for the MCU of `-C target-cpu` and the crate is compiled with
//! `cfg(avr_pqc_backend = "asm")`; on every other target nothing is
//! assembled and it gets `cfg(avr_pqc_backend = "portable")` (see
//! [`BACKEND_CFG`]). An AVR build that cannot assemble a routine fails:
//! there is no silent fallback. Because the files travel inside this
//! package, a crate built from crates.io (or from `cargo package` output)
//! assembles the same bytes as the workspace does.
//!
//! Each routine's contract (signature, input and output ranges, aliasing,
//! registers, stack, table placement, what the portable code guarantees)
//! is in `CONTRACTS.md` beside this crate's manifest. The calling
//! convention every routine follows (avr-gcc's: arguments in r24, r22, …,
//! call-saved r2–r17 and r28–r29, r1 zero on return) is checked by each
//! crate's simulator tests with `test/abi_check.S`.

use std::env;
use std::path::{Path, PathBuf};

/// A family of routines and the files that hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    /// What the routines compute.
    pub name: &'static str,
    /// The crate that calls them.
    pub used_by: &'static str,
    /// Assembly files (siblings: either one is a complete implementation).
    pub sources: &'static [&'static str],
    /// The generator that writes them.
    pub generator: &'static str,
}

/// Every routine family of this package.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "Keccak-f[1600]",
        used_by: "fips202",
        sources: &["keccak_f1600.S", "keccak_f1600_compact.S"],
        generator: "gen_keccak.py",
    },
    Family {
        name: "Ascon-p[12] / Ascon-p[8]",
        used_by: "ascon-sponge",
        sources: &["ascon_p.S"],
        generator: "gen_ascon.py",
    },
    Family {
        name: "NTTs (twiddles in flash, or in SRAM)",
        used_by: "modarith",
        sources: &["ntt_forward_flash.S", "ntt_forward.S"],
        generator: "gen_ntt.py",
    },
    Family {
        name: "CTRU-Light E8 decoding",
        used_by: "ctru-light",
        sources: &["e8_decode.S"],
        generator: "gen_e8.py",
    },
    Family {
        name: "CTRU-Light ciphertext compression",
        used_by: "ctru-light",
        sources: &["ctru_compress.S"],
        generator: "gen_ctru_compress.py",
    },
    Family {
        name: "CTRU-Light product mod 256",
        used_by: "ctru-light",
        sources: &["ctru_mul.S"],
        generator: "gen_ctru_mul.py",
    },
    Family {
        name: "GF(2^255-19) (unrolled, compact or tiny)",
        used_by: "x25519-avr",
        sources: &["fe25519_mul.S", "fe25519_compact.S", "fe25519_tiny.S"],
        generator: "gen_fe25519.py",
    },
    Family {
        name: "Ed25519 fixed-base table selection",
        used_by: "x25519-avr",
        sources: &["ed25519_select.S"],
        generator: "(hand-written)",
    },
];

/// The folder that holds the assembly (this package's root).
pub fn dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The path of one of this package's files, e.g. `source("keccak_f1600.S")`.
pub fn source(file: &str) -> PathBuf {
    dir().join(file)
}

/// The one cfg key by which every crate with an AVR backend picks it:
/// `cfg(avr_pqc_backend = "asm")` (this package's routines, linked) or
/// `cfg(avr_pqc_backend = "portable")` (the crate's Rust). Only
/// [`assemble`] and [`portable`] set it, so the crates' build scripts name
/// no cfg, and in each crate only `backend/mod.rs` reads it.
pub const BACKEND_CFG: &str = "avr_pqc_backend";

/// The implementation a crate's `backend` module compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// This package's AVR routines (`avr_pqc_backend = "asm"`).
    Asm,
    /// The crate's portable Rust (`avr_pqc_backend = "portable"`).
    Portable,
}

impl Backend {
    /// The value of [`BACKEND_CFG`] that selects it.
    pub const fn cfg_value(self) -> &'static str {
        match self {
            Backend::Asm => "asm",
            Backend::Portable => "portable",
        }
    }
}

/// The build-script lines that declare [`BACKEND_CFG`] with both values
/// and set it to `backend`: the only place the key is written, so no crate
/// can spell it differently.
fn backend_directives(backend: Backend) -> [String; 2] {
    [
        format!(
            "cargo::rustc-check-cfg=cfg({BACKEND_CFG}, values(\"{}\", \"{}\"))",
            Backend::Asm.cfg_value(),
            Backend::Portable.cfg_value()
        ),
        format!("cargo::rustc-cfg={BACKEND_CFG}=\"{}\"", backend.cfg_value()),
    ]
}

fn select(backend: Backend) {
    for line in backend_directives(backend) {
        println!("{line}");
    }
}

/// Selects the portable backend whatever the target, for a crate whose
/// feature keeps its Rust on AVR too (modarith's `portable`). Called from a
/// `build.rs` instead of [`assemble`].
pub fn portable() {
    select(Backend::Portable);
}

/// On AVR, assembles `files` (names in this package, e.g.
/// `"keccak_f1600.S"`) into the static library `lib_name` for the MCU of
/// `-C target-cpu` and selects [`Backend::Asm`]; on every other target
/// assembles nothing and selects [`Backend::Portable`]. Called from a
/// `build.rs`.
pub fn assemble(lib_name: &str, files: &[&str]) {
    let paths: Vec<PathBuf> = files.iter().map(|f| source(f)).collect();
    for p in &paths {
        println!("cargo::rerun-if-changed={}", p.display());
    }
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("avr") {
        select(Backend::Portable);
        return;
    }
    // The failures below stop the build (`cargo::error`) without selecting
    // a backend: an AVR build never falls back to the portable code.
    let Some(cpu) = avr_asm_build::target_cpu() else {
        println!("cargo::error=AVR builds need `-C target-cpu=<mcu>` (e.g. in .cargo/config.toml's build.rustflags): the assembly is built for that MCU");
        return;
    };
    let mut build = cc::Build::new();
    build
        .compiler("avr-gcc")
        .no_default_flags(true)
        .flag(format!("-mmcu={}", avr_asm_build::assembler_mcu(&cpu)));
    for p in &paths {
        if !p.exists() {
            println!("cargo::error=missing AVR assembly source {}", p.display());
            return;
        }
        build.file(p);
    }
    build.compile(lib_name);
    select(Backend::Asm);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_declared_with_both_values_and_set_to_one() {
        assert_eq!(
            backend_directives(Backend::Asm),
            [
                r#"cargo::rustc-check-cfg=cfg(avr_pqc_backend, values("asm", "portable"))"#,
                r#"cargo::rustc-cfg=avr_pqc_backend="asm""#,
            ]
        );
        assert_eq!(
            backend_directives(Backend::Portable)[1],
            r#"cargo::rustc-cfg=avr_pqc_backend="portable""#
        );
    }

    #[test]
    fn every_family_file_is_in_the_package_and_every_routine_in_a_family() {
        let mut listed = Vec::new();
        for family in FAMILIES {
            for file in family.sources {
                assert!(source(file).is_file(), "{file}");
                listed.push(file.to_string());
            }
            if family.generator.ends_with(".py") {
                assert!(source(family.generator).is_file(), "{}", family.generator);
            }
        }
        let mut on_disk: Vec<String> = std::fs::read_dir(dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".S"))
            .collect();
        on_disk.sort();
        listed.sort();
        assert_eq!(listed, on_disk);
    }
}
