//! `build-avr`: the AVR cross build and its sizes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::setup::{AVR_CARGO, AVR_RUSTC};
use crate::target::{Image, Mcu};
use crate::util;

/// SRAM we want left for the stack after .data and .bss.
const MIN_STACK_RESERVE: u32 = 1024;

/// A built firmware image and its sizes.
#[derive(Clone, Debug)]
pub struct Build {
    /// The MCU.
    pub mcu: Mcu,
    /// The ELF file.
    pub elf: PathBuf,
    /// .text bytes (code and, on megaAVR-0, read-only data).
    pub text: u32,
    /// .data bytes (initialised RAM; its image also occupies flash).
    pub data: u32,
    /// .bss (+ .noinit) bytes.
    pub bss: u32,
    /// .rodata bytes kept in flash (megaAVR-0 only).
    pub rodata: u32,
    /// Whether the fit chose the compact Keccak-f\[1600\] ([`COMPACT_KECCAK`]).
    pub compact_keccak: bool,
    /// Whether the fit chose the tiny X25519 field ([`COMPACT_X25519`]).
    pub compact_x25519: bool,
}

/// The firmware feature of a sensor image's compact Keccak-f\[1600\], which
/// [`compile`] turns on where the image does not fit its flash without it.
pub const COMPACT_KECCAK: &str = "mqtt-compact-keccak";
/// The firmware feature of a hybrid sensor image's tiny X25519 field
/// (squaring through the multiplication), likewise.
pub const COMPACT_X25519: &str = "mqtt-compact-x25519";

/// The compact assemblies [`compile`] tries, in order, for a sensor image
/// that overflows a small part's flash: the cheapest in cycles first (the
/// tiny X25519 field costs a hybrid handshake's two X25519 about 16 %
/// each; the compact Keccak doubles every permutation of the KEM and the
/// transcript), both last.
const FITS: [&[&str]; 3] = [&[COMPACT_X25519], &[COMPACT_KECCAK], &[COMPACT_X25519, COMPACT_KECCAK]];

impl Build {
    /// Flash bytes: code plus the .data image (plus flash-mapped .rodata).
    pub fn flash(&self) -> u32 {
        self.text + self.data + self.rodata
    }
    /// Static RAM: .data + .bss.
    pub fn ram(&self) -> u32 {
        self.data + self.bss
    }
}

fn require_tools() -> Result<(), String> {
    for tool in [AVR_RUSTC, AVR_CARGO] {
        if !Path::new(tool).exists() {
            return Err(format!(
                "{tool} not found: run `cargo xtask setup` (Debian rustc-web, cargo-web)"
            ));
        }
    }
    for tool in ["avr-gcc", "avr-size", "avr-objdump", "avr-nm"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Err(format!(
                "{tool} not found: run `cargo xtask setup` (gcc-avr, binutils-avr)"
            ));
        }
    }
    Ok(())
}

/// Cross-builds the default (`rings`) firmware for `mcu` and checks that it fits.
pub fn build(mcu: Mcu) -> Result<Build, String> {
    build_image(mcu, &Image::rings())
}

/// Cross-builds `image` for `mcu` and checks that it fits.
pub fn build_image(mcu: Mcu, image: &Image) -> Result<Build, String> {
    let b = compile(mcu, image)?;
    report(&b, &image.name)?;
    Ok(b)
}

/// Cross-builds `image` for `mcu` and reads its sizes, without the fit
/// check. A sensor image that overflows the flash of a small part (48 KB)
/// is built again with the compact Keccak-f\[1600\] ([`COMPACT_KECCAK`]);
/// the build says so ([`Build::compact_keccak`]).
pub fn compile(mcu: Mcu, image: &Image) -> Result<Build, String> {
    let features = image.features_on(mcu);
    let first = compile_with(mcu, image, &features);
    let sensor = features.iter().any(|f| f.starts_with("mqtt-"));
    let hybrid = features.contains(&"mqtt-x25519");
    let mut last = match first {
        Err(e) if mcu.facts().is_small() && sensor && is_flash_overflow(&e) => e,
        built => return built,
    };
    for fit in FITS {
        if fit.contains(&COMPACT_X25519) && !hybrid {
            continue;
        }
        eprintln!(
            "xtask: {} does not fit the {}'s flash: built again with {}",
            image.name,
            mcu.name,
            fit.join(" and ")
        );
        let mut compact = features.clone();
        compact.extend_from_slice(fit);
        match compile_with(mcu, image, &compact) {
            Ok(mut b) => {
                b.compact_keccak = fit.contains(&COMPACT_KECCAK);
                b.compact_x25519 = fit.contains(&COMPACT_X25519);
                return Ok(b);
            }
            Err(e) if is_flash_overflow(&e) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// What the linker says, before the number of bytes, when an image
/// does not fit the flash.
const FLASH_OVERFLOW: &str = "region `text' overflowed by ";

/// Whether a failed build's output says the linker ran out of flash.
fn is_flash_overflow(err: &str) -> bool {
    err.contains(FLASH_OVERFLOW)
}

/// What the linker's refusal says, in numbers: flash (`region `text'
/// overflowed by N bytes`) and static RAM (`address A of … section `.bss'
/// is not within region `data'`).
pub fn link_overflow(err: &str, mcu: Mcu) -> String {
    let mut why = Vec::new();
    if let Some(n) = err
        .split(FLASH_OVERFLOW)
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse::<u32>().ok())
    {
        why.push(format!(
            "flash {} B needed, {} B over {} B",
            mcu.flash + n,
            n,
            mcu.flash
        ));
    }
    if let Some(end) = err
        .split("address 0x")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|a| u32::from_str_radix(a, 16).ok())
    {
        // The linker's data addresses are 0x800000 + the data-space address.
        let used = end.saturating_sub(0x80_0000 + mcu.facts().sram_start);
        why.push(format!(
            "static RAM alone {used} B, {} B over {} B",
            used.saturating_sub(mcu.sram),
            mcu.sram
        ));
    }
    if why.is_empty() {
        "the linker refuses the image".into()
    } else {
        format!("the linker: {}", why.join("; "))
    }
}

fn compile_with(mcu: Mcu, image: &Image, features: &[&str]) -> Result<Build, String> {
    require_tools()?;
    let root = util::workspace_root();
    // One cargo target directory per MCU, shared by its images: `core`,
    // compiler_builtins and every crate whose features two images share are
    // built once (each image had its own directory, and rebuilt them all),
    // while cargo keeps each image's own artifacts apart by their features.
    // The ELF is copied out to the image's directory after each build.
    let target = crate::target::target_dir(mcu);
    // share-generics: the firmware reuses the KEM crates' instances of their
    // generic functions instead of compiling its own copies, which fat LTO
    // keeps side by side (Kyber512: 3.2 KB less code, the same cycles).
    // Unstable, like build-std, which these builds already need.
    let mut rustflags = format!("-C target-cpu={} -Z share-generics=y", mcu.name);
    if mcu.is_mega0() {
        let linker = crate::build::mega0_link::prepare(&root, &target)?;
        rustflags.push_str(&format!(" -C linker={}", linker.display()));
    }
    let mut cmd = Command::new(AVR_CARGO);
    if image.needs_keys(mcu) {
        // Provisioning comes before the build (`crate::run::sensor::with_keys`).
        let keys = image.keys.as_ref().ok_or_else(|| {
            format!(
                "{} on {} compiles its sensor keys in: provision them first (sensor::with_keys)",
                image.name, mcu.name
            )
        })?;
        cmd.env("KEM_MQTT_SENSOR_KEY", keys);
    }
    if let Some(p) = image.policy {
        cmd.env(
            "SENSOR_APP_POLICY",
            format!("{},{},{}", p.interval_s, p.rekey_records, p.rekey_s),
        );
    }
    // Whatever the outer (rustup) cargo exported must not leak into the AVR build.
    for var in [
        "RUSTUP_TOOLCHAIN",
        "CARGO",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTDOC",
        "CARGO_MAKEFLAGS",
    ] {
        cmd.env_remove(var);
    }
    cmd.current_dir(&root)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTC", AVR_RUSTC)
        .env("RUSTFLAGS", &rustflags)
        .args([
            "build",
            "--release",
            "--target",
            "avr-none",
            "-Zbuild-std=core",
            "-p",
            "firmware",
            "--no-default-features",
            "--features",
        ])
        .arg(features.join(","))
        .arg("--target-dir")
        .arg(&target);
    // The MCU's flash limit first (the 4808's "s"), then the image's choice.
    if let Some(level) = image.opt_level_on(mcu) {
        cmd.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", level);
    }
    // A link that overflows, and a KEM crate refusing an MCU with too little
    // SRAM (`avr_asm_build::require_sram`): the callers report both.
    util::run_keeping(
        &mut cmd,
        &["overflowed by", "is not within region", "cannot run on the"],
    )?;
    let built = target.join("avr-none/release/firmware.elf");
    let elf = image.elf(mcu);
    if let Some(dir) = elf.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::copy(&built, &elf).map_err(|e| format!("cannot copy {} to {}: {e}", built.display(), elf.display()))?;
    sizes(mcu, &elf)
}

/// Reads section sizes with `avr-size -A`.
pub fn sizes(mcu: Mcu, elf: &Path) -> Result<Build, String> {
    let out = crate::opts::output(Command::new("avr-size").arg("-A").arg(elf))?;
    let mut b = Build {
        mcu,
        elf: elf.to_path_buf(),
        text: 0,
        data: 0,
        bss: 0,
        rodata: 0,
        compact_keccak: false,
        compact_x25519: false,
    };
    for line in out.lines() {
        let mut it = line.split_whitespace();
        let (Some(name), Some(size)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(size) = size.parse::<u32>() else { continue };
        match name {
            ".text" => b.text += size,
            ".data" => b.data += size,
            ".bss" | ".noinit" => b.bss += size,
            ".rodata" => b.rodata += size,
            _ => {}
        }
    }
    if b.text == 0 {
        return Err(format!("avr-size found no .text in {}", elf.display()));
    }
    Ok(b)
}

/// Prints the sizes of `b` and fails unless it fits its MCU.
pub fn report(b: &Build, image: &str) -> Result<(), String> {
    let m = b.mcu;
    eprintln!(
        "xtask: {} {image}: flash {} B of {} (text {}, data image {}, rodata {}), static RAM {} B of {} (data {}, bss {})",
        m.name,
        b.flash(),
        m.flash,
        b.text,
        b.data,
        b.rodata,
        b.ram(),
        m.sram,
        b.data,
        b.bss
    );
    if b.flash() > m.flash {
        return Err(format!(
            "firmware does not fit {}: {} B flash > {} B",
            m.name,
            b.flash(),
            m.flash
        ));
    }
    if b.ram() + MIN_STACK_RESERVE > m.sram {
        return Err(format!(
            "firmware does not fit {}: {} B static RAM leaves less than {} B of {} B for the stack",
            m.name,
            b.ram(),
            MIN_STACK_RESERVE,
            m.sram
        ));
    }
    Ok(())
}

/// Function sizes and static call graph of an ELF, from `avr-nm` and `avr-objdump`.
pub struct CallGraph {
    size: HashMap<String, u32>,
    calls: HashMap<String, HashSet<String>>,
    /// (start byte address, size, name), sorted: where executed code lies.
    spans: Vec<(u32, u32, String)>,
    /// Bytes of static data (.data and .bss) of each symbol outside the
    /// firmware harness (`firmware::…`, `avr_harness::…`) and the C runtime.
    scheme_statics: u32,
}

impl CallGraph {
    /// Reads `elf`.
    pub fn load(elf: &Path) -> Result<CallGraph, String> {
        let nm = crate::opts::output(Command::new("avr-nm").args(["-S"]).arg(elf))?;
        let mut size = HashMap::new();
        let mut spans = Vec::new();
        for line in nm.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() == 4 && matches!(f[2], "t" | "T" | "w" | "W") {
                if let (Ok(a), Ok(s)) = (u32::from_str_radix(f[0], 16), u32::from_str_radix(f[1], 16)) {
                    size.insert(f[3].to_string(), s);
                    spans.push((a, s, f[3].to_string()));
                }
            }
        }
        spans.sort();
        // Static RAM of the scheme: demangled data symbols of every crate but
        // the harness's own buffers (requests, replies, RNG tape) and the
        // sensor's (`kem_mqtt_sensor`: its flights and handshake state).
        let nm_c = crate::opts::output(Command::new("avr-nm").args(["-S", "-C"]).arg(elf))?;
        let scheme_statics = nm_c
            .lines()
            .filter_map(|line| {
                let mut it = line.splitn(4, ' ');
                let (_, sz, kind, name) = (it.next()?, it.next()?, it.next()?, it.next()?);
                let data = matches!(kind, "d" | "D" | "b" | "B");
                // Rust v0 symbols (binutils 2.26 does not demangle them) name
                // their crate as `_<len><name>` after the crate hash.
                let harness = ["firmware", "avr_harness", "kem_mqtt_sensor"]
                    .iter()
                    .any(|c| name.starts_with(&format!("{c}::")) || name.contains(&format!("_{}{c}", c.len())))
                    || name.starts_with("__");
                (data && !harness).then(|| u32::from_str_radix(sz, 16).ok()).flatten()
            })
            .sum();
        let dis = crate::opts::output(Command::new("avr-objdump").arg("-d").arg(elf))?;
        let mut calls: HashMap<String, HashSet<String>> = HashMap::new();
        let mut current = String::new();
        for line in dis.lines() {
            if let Some(rest) = line.strip_suffix(">:") {
                if let Some(i) = rest.find(" <") {
                    current = rest[i + 2..].to_string();
                }
                continue;
            }
            let is_branch = ["call\t", "rcall\t", "jmp\t", "rjmp\t"]
                .iter()
                .any(|m| line.contains(m));
            if !is_branch {
                continue;
            }
            if let (Some(a), Some(b)) = (line.rfind('<'), line.rfind('>')) {
                if a < b {
                    let target = &line[a + 1..b];
                    // `name+0x12` is a jump inside a function.
                    if !target.contains('+') && target != current {
                        calls.entry(current.clone()).or_default().insert(target.to_string());
                    }
                }
            }
        }
        Ok(CallGraph {
            size,
            calls,
            spans,
            scheme_statics,
        })
    }

    /// The symbol whose mangled name contains `module` then `function` (v0 and legacy mangling).
    pub fn find(&self, module: &str, function: &str) -> Option<&str> {
        let key = format!("{}{module}{}{function}", module.len(), function.len());
        let mut hits: Vec<&str> = self
            .size
            .keys()
            .filter(|s| s.contains(&key))
            .map(String::as_str)
            .collect();
        hits.sort();
        hits.first().copied()
    }

    /// Static RAM (.data + .bss) of everything but the firmware harness: the
    /// tables a scheme keeps in SRAM.
    pub fn scheme_statics(&self) -> u32 {
        self.scheme_statics
    }

    /// The functions that executed, from the simulator's per-word
    /// instruction counts: code reached through function pointers (which the
    /// static call graph cannot see) is found here.
    pub fn executed(&self, profile: &[u32]) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (w, _) in profile.iter().enumerate().filter(|(_, n)| **n > 0) {
            let addr = 2 * w as u32;
            let at = self.spans.partition_point(|(s, _, _)| *s <= addr);
            if let Some((s, sz, name)) = at.checked_sub(1).map(|i| &self.spans[i]) {
                if addr < s + (*sz).max(2) && out.last() != Some(&name.as_str()) && !out.contains(&name.as_str()) {
                    out.push(name);
                }
            }
        }
        out
    }

    /// How often `profile` executed the first instruction of function
    /// `name` (its calls, for a routine that never loops back to its
    /// start); 0 if the image has no such function.
    pub fn entries(&self, profile: &[u32], name: &str) -> u64 {
        self.spans
            .iter()
            .find(|(_, _, n)| n == name)
            .and_then(|(start, _, _)| profile.get((start / 2) as usize))
            .map_or(0, |&n| u64::from(n))
    }

    /// Bytes of `root` and every function reachable from it.
    pub fn reachable_size(&self, root: &str) -> u32 {
        self.reachable_size_union(&[root])
    }

    /// Bytes of every function reachable from any of `roots`, each counted once.
    pub fn reachable_size_union(&self, roots: &[&str]) -> u32 {
        let mut seen = HashSet::new();
        let mut stack: Vec<String> = roots.iter().map(|r| r.to_string()).collect();
        let mut total = 0;
        while let Some(f) = stack.pop() {
            if !seen.insert(f.clone()) {
                continue;
            }
            total += self.size.get(&f).copied().unwrap_or(0);
            if let Some(c) = self.calls.get(&f) {
                stack.extend(c.iter().cloned());
            }
        }
        total
    }
}

/// The elf of `image`, built unless `no_build`.
pub fn image_elf(mcu: Mcu, image: &Image, no_build: bool) -> Result<std::path::PathBuf, String> {
    if no_build {
        Ok(image.elf(mcu))
    } else {
        Ok(build_image(mcu, image)?.elf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The linker's complaint read with each part's own SRAM start: the
    /// 2560's (0x200) was read as the 4808's (0x2800), giving 0 B.
    #[test]
    fn link_overflow_reads_static_ram_from_each_parts_sram_start() {
        let bss =
            |addr: &str| format!("ld: address 0x{addr} of firmware.elf section `.bss' is not within region `data'");
        let mega = crate::target::mcu("atmega2560").unwrap();
        assert_eq!(
            link_overflow(&bss("8023fc"), mega),
            "the linker: static RAM alone 8700 B, 508 B over 8192 B"
        );
        let small = crate::target::mcu("atmega4808").unwrap();
        assert_eq!(
            link_overflow(&bss("804100"), small),
            "the linker: static RAM alone 6400 B, 256 B over 6144 B"
        );
    }

    #[test]
    fn only_a_text_overflow_is_a_flash_overflow() {
        assert!(is_flash_overflow(
            "ld: firmware.elf section `.text' will not fit in region `text'\nld: region `text' overflowed by 122 bytes"
        ));
        assert!(!is_flash_overflow(
            "ld: address 0x8023fc of firmware.elf section `.bss' is not within region `data'"
        ));
        assert!(!is_flash_overflow("lightsaber-avr cannot run on the atmega328p"));
    }

    #[test]
    fn executed_code_counts_functions_reached_through_pointers() {
        // f calls g directly; h is only reached through a pointer.
        let spans = vec![
            (0, 8, "f".to_string()),
            (8, 4, "g".to_string()),
            (12, 6, "h".to_string()),
        ];
        let graph = CallGraph {
            size: spans.iter().map(|(_, s, n)| (n.clone(), *s)).collect(),
            calls: [("f".to_string(), ["g".to_string()].into())].into(),
            spans,
            scheme_statics: 0,
        };
        assert_eq!(graph.reachable_size("f"), 12, "the static call graph misses h");
        // Words 0 (f) and 7 (byte 14, inside h) executed.
        let profile = [1, 0, 0, 0, 0, 0, 0, 3];
        let ran = graph.executed(&profile);
        assert_eq!(ran, ["f", "h"]);
        assert_eq!(graph.reachable_size_union(&ran), 18);
    }
}
