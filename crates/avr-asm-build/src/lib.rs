#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]

use std::env;

/// The `-C target-cpu` of this build, from `CARGO_ENCODED_RUSTFLAGS`.
pub fn target_cpu() -> Option<String> {
    target_cpu_in(&env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default())
}

/// The `-C target-cpu` named by encoded rustflags (`\x1f`-separated): the
/// last one, as rustc takes the last (a `build.rustflags` naming the
/// ATmega2560 followed by `RUSTFLAGS` naming the 328p builds for the 328p,
/// and the assembly must be built for the same part).
pub fn target_cpu_in(encoded_flags: &str) -> Option<String> {
    let parts: Vec<&str> = encoded_flags.split('\u{1f}').collect();
    let mut cpu = None;
    for (i, f) in parts.iter().enumerate() {
        let value = match f
            .strip_prefix("-Ctarget-cpu=")
            .or_else(|| f.strip_prefix("target-cpu="))
        {
            Some(v) => Some(v),
            None if *f == "-C" => parts.get(i + 1).and_then(|n| n.strip_prefix("target-cpu=")),
            None => None,
        };
        if let Some(v) = value {
            cpu = Some(v.to_owned());
        }
    }
    cpu
}

// An AVR part's record (family, memories, names), by name (`mcu`), and
// the same for constants (`facts`): `avr_mcu`'s, where the records are.
pub use avr_mcu::{by_name as mcu, facts, Mcu};

/// The file in a KEM crate's folder holding its SRAM floor (written by
/// `cargo xtask report` from the benchmark records; see [`sram_floor`]).
pub const SRAM_FLOOR_FILE: &str = "avr-sram-floor.txt";

/// A KEM crate's SRAM floor for one build configuration: the least SRAM
/// any one of its operations needs there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Floor<'a> {
    /// Bytes: the operation's peak stack plus the buffers it reads and writes.
    pub bytes: u32,
    /// Which operation, and the sum in words.
    pub what: &'a str,
    /// Where the stack was measured.
    pub measured_on: &'static str,
}

/// The prefix of a floor file's line for parts with 8 KB of SRAM or less
/// ([`Mcu::is_small_sram`]), whose builds take their crates' stack-saving
/// configurations (measured on the ATmega4808).
pub const SMALL_FLOOR_PREFIX: &str = "small ";

/// Reads a floor file for `mcu`: lines that are not comments, `BYTES WHAT…`
/// for the default configuration (stack measured on the ATmega1284p) and,
/// optionally, `small BYTES WHAT…` for the configuration parts with 8 KB of
/// SRAM or less ([`Mcu::is_small_sram`]) build (measured on the ATmega4808;
/// it may need more or less). Such an
/// MCU is held to the small line when there is one, every other MCU to
/// the default line.
pub fn sram_floor(text: &str, mcu: Mcu) -> Option<Floor<'_>> {
    let small = mcu.is_small_sram();
    let lines = || {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
    };
    let small_line = lines().find_map(|l| l.strip_prefix(SMALL_FLOOR_PREFIX));
    let (line, measured_on) = match small_line {
        Some(l) if small => (l, "ATmega4808"),
        _ => (lines().find(|l| !l.starts_with(SMALL_FLOOR_PREFIX))?, "ATmega1284p"),
    };
    let (bytes, what) = line.split_once(' ')?;
    Some(Floor {
        bytes: bytes.parse().ok()?,
        what: what.trim(),
        measured_on,
    })
}

/// Why `crate_name` cannot run on `mcu` given its floor, or `None` if it may.
pub fn sram_refusal(crate_name: &str, floor: Floor<'_>, mcu: Mcu) -> Option<String> {
    let Floor {
        bytes: need,
        what,
        measured_on,
    } = floor;
    (need > mcu.sram).then(|| {
        format!(
            "{crate_name} cannot run on the {} ({}): its lightest operation needs {need} B of SRAM \
             ({what}; the stack as measured on the {measured_on}) and the {} has {} B. \
             Which KEM fits which board: docs/boards.md of the avr-pqc repository",
            mcu.name, mcu.board, mcu.name, mcu.sram
        )
    })
}

/// In a KEM crate's `build.rs`: on an AVR target whose SRAM is below the
/// crate's floor ([`SRAM_FLOOR_FILE`]), fail the build with a message that
/// names the crate, the MCU and the bytes, instead of a linker error or a
/// stack that overruns at run time. Parts without a record in [`avr_mcu`] are not checked.
pub fn require_sram() {
    let crate_name = env::var("CARGO_PKG_NAME").unwrap_or_default();
    let crate_name = crate_name.as_str();
    println!("cargo::rerun-if-changed={SRAM_FLOOR_FILE}");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("avr") {
        return;
    }
    let Some(mcu) = target_cpu().as_deref().and_then(mcu) else {
        return;
    };
    let text = std::fs::read_to_string(SRAM_FLOOR_FILE).unwrap_or_default();
    let Some(floor) = sram_floor(&text, mcu) else {
        println!("cargo::error={crate_name}: {SRAM_FLOOR_FILE} is missing or has no `BYTES WHAT` line");
        return;
    };
    if let Some(why) = sram_refusal(crate_name, floor, mcu) {
        println!("cargo::error={why}");
    }
}

/// Whether this build targets a small megaAVR 0-series part
/// ([`Mcu::is_small`]), for which crates pick their compact variants.
pub fn small_mcu() -> bool {
    target_cpu().and_then(|cpu| mcu(&cpu)).is_some_and(|m| m.is_small())
}

/// Whether this build targets a part with 8 KB of SRAM or less
/// ([`Mcu::is_small_sram`]), for which crates pick their stack-saving variants.
pub fn small_sram_mcu() -> bool {
    target_cpu()
        .and_then(|cpu| mcu(&cpu))
        .is_some_and(|m| m.is_small_sram())
}

/// avr-gcc's `-mmcu` for an LLVM CPU name ([`Mcu::assembler_mcu`]: avr-gcc
/// 5.4 has no megaAVR 0-series device, so their core family, avrxmega3, is
/// used for assembling); a part without a record keeps its name.
pub fn assembler_mcu(cpu: &str) -> &str {
    mcu(cpu).map_or(cpu, |m| m.assembler_mcu())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_target_cpu_wins_as_in_rustc() {
        let flags = ["-C", "target-cpu=atmega2560", "-Ctarget-cpu=atmega328p"].join("\u{1f}");
        assert_eq!(target_cpu_in(&flags).as_deref(), Some("atmega328p"));
        let flags = [
            "-Ctarget-cpu=atmega328p",
            "-Zshare-generics=y",
            "-C",
            "target-cpu=atmega1284p",
        ]
        .join("\u{1f}");
        assert_eq!(target_cpu_in(&flags).as_deref(), Some("atmega1284p"));
        assert_eq!(target_cpu_in("-Copt-level=s"), None);
        assert_eq!(target_cpu_in(""), None);
    }

    #[test]
    fn a_floor_above_the_sram_is_refused_naming_crate_mcu_and_bytes() {
        let uno = mcu("atmega328p").unwrap();
        let floor = sram_floor("# comment\n\n2377 ML-KEM-512 decapsulation\n", uno).unwrap();
        assert_eq!((floor.bytes, floor.what), (2377, "ML-KEM-512 decapsulation"));
        let why = sram_refusal("kyber512-avr", floor, uno).unwrap();
        for part in [
            "kyber512-avr",
            "atmega328p",
            "2377 B",
            "2048 B",
            "ML-KEM-512 decapsulation",
        ] {
            assert!(why.contains(part), "{why}");
        }
        assert_eq!(sram_refusal("kyber512-avr", floor, mcu("atmega4808").unwrap()), None);
        assert_eq!(sram_floor("# only a comment\n", uno), None);
        assert_eq!(sram_floor("many bytes\n", uno), None);
    }

    #[test]
    fn small_mcus_read_their_own_floor_line_when_there_is_one() {
        let text = "# c\n6378 lightsaber encaps: a\nsmall 4473 lightsaber encaps: b\n";
        let (mega, small_mcu) = (mcu("atmega1284p").unwrap(), mcu("atmega4809").unwrap());
        let mega2560 = sram_floor(text, mcu("atmega2560").unwrap()).unwrap();
        assert_eq!(mega2560.bytes, 4473, "8 KB of SRAM: the stack-saving configuration");
        let default = sram_floor(text, mega).unwrap();
        assert_eq!((default.bytes, default.measured_on), (6378, "ATmega1284p"));
        let small = sram_floor(text, small_mcu).unwrap();
        assert_eq!(
            (small.bytes, small.what, small.measured_on),
            (4473, "lightsaber encaps: b", "ATmega4808")
        );
        // Without a small line, the small parts are held to the default one.
        assert_eq!(sram_floor("6378 x\n", small_mcu).unwrap().bytes, 6378);
        let why = sram_refusal("lightsaber-avr", small, mcu("atmega328p").unwrap()).unwrap();
        assert!(
            why.contains("4473 B") && why.contains("measured on the ATmega4808"),
            "{why}"
        );
        assert_eq!(sram_refusal("lightsaber-avr", small, mcu("atmega4808").unwrap()), None);
    }
}
