//! `build-avr`: the AVR cross build and its sizes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use firmware::{Group, Kem};

use crate::util;

use crate::setup::{AVR_CARGO, AVR_RUSTC};

/// An MCU the firmware can be built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mcu {
    /// LLVM/avr-gcc name.
    pub name: &'static str,
    /// Flash bytes.
    pub flash: u32,
    /// SRAM bytes.
    pub sram: u32,
    /// Whether simavr can run it.
    pub simulated: bool,
    /// Overrides the release profile's opt-level (the 4808's 48 KB flash needs "s").
    pub opt_level: Option<&'static str>,
}

/// Supported MCUs.
pub const MCUS: &[Mcu] = &[
    Mcu {
        name: "atmega1284p",
        flash: 128 * 1024,
        sram: 16 * 1024,
        simulated: true,
        opt_level: None,
    },
    Mcu {
        name: "atmega4808",
        flash: 48 * 1024,
        sram: 6 * 1024,
        simulated: false,
        opt_level: Some("s"),
    },
];

/// SRAM we want left for the stack after .data and .bss.
const MIN_STACK_RESERVE: u32 = 1024;

/// Options of `cargo xtask build-avr`.
#[derive(clap::Parser, Debug)]
pub struct BuildArgs {
    /// The MCU to build for (atmega1284p, atmega4808)
    #[arg(long, default_value = "atmega1284p", value_parser = mcu)]
    pub mcu: Mcu,
    /// The image: rings, kyber, saber, ctru-sha3, ctru-ascon, a KEM name,
    /// mqtt-<kem>[-x25519], or all
    #[arg(long, default_value = "rings")]
    pub image: String,
}

/// Looks up `--mcu`.
pub fn mcu(name: &str) -> Result<Mcu, String> {
    MCUS.iter().copied().find(|m| m.name == name).ok_or_else(|| {
        let known: Vec<_> = MCUS.iter().map(|m| m.name).collect();
        format!("unknown MCU `{name}` (supported: {})", known.join(", "))
    })
}

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
}

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

/// The target directory of one MCU's default (`rings`) image (never shared with host builds).
pub fn target_dir(mcu: Mcu) -> PathBuf {
    util::workspace_root().join("target").join(format!("avr-{}", mcu.name))
}

/// One firmware image: a set of the firmware crate's cargo features.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Short name (`rings`, a group's feature, or a KEM's module name).
    pub name: String,
    /// Cargo features (default features off unless this is `rings`).
    pub features: Vec<&'static str>,
    /// Overrides the release profile's opt-level, unless the MCU has its own.
    pub opt_level: Option<&'static str>,
}

impl Image {
    /// The default image: the 25 modarith ring operations.
    pub fn rings() -> Image {
        Image {
            name: "rings".into(),
            features: vec!["rings"],
            opt_level: None,
        }
    }

    /// Every KEM of a group (one image on the ATmega1284p).
    pub fn group(g: Group) -> Image {
        Image {
            name: g.feature().into(),
            features: vec![g.feature()],
            opt_level: None,
        }
    }

    /// A single KEM variant (the ATmega4808 images).
    pub fn kem(k: Kem) -> Image {
        let features = match k {
            Kem::MlKem512 => vec!["ml-kem"],
            Kem::Kyber512R3 => vec!["kyber-r3"],
            Kem::LightSaber => vec!["saber"],
            _ => {
                let variant = match k.variant() {
                    "kred2x" => "ctru-kred2x",
                    "montgomery-opt" => "ctru-montopt",
                    _ => "ctru-mont",
                };
                vec![k.group().feature(), variant]
            }
        };
        Image {
            name: k.module().replace('_', "-"),
            features,
            opt_level: None,
        }
    }

    /// The KEM-MQTT/1 sensor image of `kem` (`firmware::mqtt`): its pure suite,
    /// and with `x25519` its hybrid suite too. Built at opt-level 2 on the
    /// 1284p ("s" on the 4808).
    pub fn mqtt(kem: kem_mqtt::KemId, x25519: bool) -> Image {
        use kem_mqtt::KemId;
        let f = match kem {
            KemId::CtruLightAscon => "mqtt-ctru-light-ascon",
            KemId::CtruLightSha3 => "mqtt-ctru-light-sha3",
            KemId::MlKem512 => "mqtt-ml-kem-512",
            KemId::Kyber512R3 => "mqtt-kyber512-r3",
            KemId::LightSaber => "mqtt-lightsaber",
        };
        let mut features = vec![f];
        if x25519 {
            features.push("mqtt-x25519");
        }
        Image {
            name: format!("{f}{}", if x25519 { "-x25519" } else { "" }),
            features,
            // opt-level 3 makes the LightSaber hybrid image overflow the
            // 1284p's 128 KB; 2 fits every image (at most ~117 KB with the
            // 24 KB X25519 table) and is within 0.5 % of 3 on the handshake.
            opt_level: Some("2"),
        }
    }

    /// Every KEM-MQTT/1 sensor image: each KEM pure, then with X25519.
    pub fn all_mqtt() -> Vec<Image> {
        [false, true]
            .into_iter()
            .flat_map(|x| kem_mqtt::KemId::ALL.into_iter().map(move |k| Image::mqtt(k, x)))
            .collect()
    }

    /// The image's target directory for `mcu`.
    pub fn target_dir(&self, mcu: Mcu) -> PathBuf {
        if self.name == "rings" {
            target_dir(mcu)
        } else {
            util::workspace_root()
                .join("target")
                .join(format!("avr-{}-{}", mcu.name, self.name))
        }
    }

    /// The ELF the build writes.
    pub fn elf(&self, mcu: Mcu) -> PathBuf {
        self.target_dir(mcu).join("avr-none/release/firmware.elf")
    }
}

/// Whether `image` can run now: always when it is about to be built; with
/// `--no-build` only if its ELF exists, so that a `--filter` never selects an
/// image that was not built and then fails deep inside a measurement.
pub fn runnable(mcu: Mcu, image: &Image, no_build: bool) -> bool {
    if !no_build || image.elf(mcu).exists() {
        return true;
    }
    eprintln!(
        "xtask: skipping {} (--no-build, and it is not built: `cargo xtask build-avr --mcu {} --image {}`)",
        image.name, mcu.name, image.name
    );
    false
}

/// The KEM images of `mcu` and the KEMs each serves: on the ATmega1284p
/// (128 KB) Kyber's two variants share one image and every other KEM
/// variant has its own (all six CTRU-Light instances exceed 128 KB, and so
/// do three of one back-end); on the ATmega4808 (48 KB) every variant has its own.
pub fn kem_images(mcu: Mcu) -> Vec<(Image, Vec<Kem>)> {
    if mcu.name == "atmega4808" {
        return Kem::ALL.into_iter().map(|k| (Image::kem(k), vec![k])).collect();
    }
    let mut v = vec![(Image::group(Group::Kyber), vec![Kem::MlKem512, Kem::Kyber512R3])];
    v.extend(
        Kem::ALL
            .into_iter()
            .filter(|k| k.group() != Group::Kyber)
            .map(|k| (Image::kem(k), vec![k])),
    );
    v
}

/// Every image `build-avr --image all` makes for `mcu`: `rings`, then the KEM images.
pub fn all_images(mcu: Mcu) -> Vec<Image> {
    let mut v = vec![Image::rings()];
    v.extend(kem_images(mcu).into_iter().map(|(i, _)| i));
    v
}

/// The KEM images of `mcu` serving a KEM whose name contains `filter`, with those KEMs.
pub fn kem_images_matching(mcu: Mcu, filter: &str, no_build: bool) -> Vec<(Image, Vec<Kem>)> {
    kem_images(mcu)
        .into_iter()
        .map(|(i, ks)| {
            (
                i,
                ks.into_iter().filter(|k| k.name().contains(filter)).collect::<Vec<_>>(),
            )
        })
        .filter(|(i, ks)| !ks.is_empty() && runnable(mcu, i, no_build))
        .collect()
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

/// The cargo features of `image` on `mcu`: on the ATmega4808 the 25 ring
/// operations fit its 48 KB of flash only with the portable NTT.
fn features_for(mcu: Mcu, image: &Image) -> Vec<&'static str> {
    let mut f = image.features.clone();
    if mcu.name == "atmega4808" && image.name == "rings" {
        f.push("portable-ntt");
    }
    // The 4808 sensor keeps its keys in flash (6 KB of SRAM hold no spare
    // 1.5 KB of key copies): provisioned into the image at build time.
    if mcu.name == "atmega4808" && image.name.starts_with("mqtt-") {
        f.push("mqtt-provisioned");
    }
    f
}

/// Cross-builds `image` for `mcu` and reads its sizes, without the fit check.
pub fn compile(mcu: Mcu, image: &Image) -> Result<Build, String> {
    require_tools()?;
    let root = util::workspace_root();
    let target = image.target_dir(mcu);
    // share-generics: the firmware reuses the KEM crates' instances of their
    // generic functions instead of compiling its own copies, which fat LTO
    // keeps side by side (Kyber512: 3.2 KB less code, the same cycles).
    // Unstable, like build-std, which these builds already need.
    let mut rustflags = format!("-C target-cpu={} -Z share-generics=y", mcu.name);
    if mcu.name == "atmega4808" {
        let linker = crate::mega0::prepare(&root, &target)?;
        rustflags.push_str(&format!(" -C linker={}", linker.display()));
    }
    let mut cmd = Command::new(AVR_CARGO);
    if features_for(mcu, image).contains(&"mqtt-provisioned") {
        cmd.env("KEM_MQTT_PROVISIONED_KEYS", crate::mqtt::provision(mcu, image)?);
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
        .arg(features_for(mcu, image).join(","))
        .arg("--target-dir")
        .arg(&target);
    // The MCU's flash limit first (the 4808's "s"), then the image's choice.
    if let Some(level) = mcu.opt_level.or(image.opt_level) {
        cmd.env("CARGO_PROFILE_RELEASE_OPT_LEVEL", level);
    }
    util::run_keeping(&mut cmd, &["overflowed by", "is not within region"])?;
    sizes(mcu, &image.elf(mcu))
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
}

impl CallGraph {
    /// Reads `elf`.
    pub fn load(elf: &Path) -> Result<CallGraph, String> {
        let nm = crate::opts::output(Command::new("avr-nm").args(["-S"]).arg(elf))?;
        let mut size = HashMap::new();
        for line in nm.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() == 4 && matches!(f[2], "t" | "T" | "w" | "W") {
                if let Ok(s) = u32::from_str_radix(f[1], 16) {
                    size.insert(f[3].to_string(), s);
                }
            }
        }
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
        Ok(CallGraph { size, calls })
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

/// Looks up `--image`: `rings`, a group feature, a KEM module name (dashes),
/// `mqtt-<kem>[-x25519]`, or `all` (the images CI builds, without the KEM-MQTT ones).
pub fn images(mcu: Mcu, name: &str) -> Result<Vec<Image>, String> {
    if name == "all" {
        return Ok(all_images(mcu));
    }
    let mut known: Vec<Image> = vec![Image::rings()];
    known.extend(Group::ALL.into_iter().map(Image::group));
    known.extend(Kem::ALL.into_iter().map(Image::kem));
    known.extend(Image::all_mqtt());
    match known.iter().find(|i| i.name == name) {
        Some(i) => Ok(vec![i.clone()]),
        None => {
            let names: Vec<_> = known.iter().map(|i| i.name.as_str()).collect();
            Err(format!("unknown image `{name}` (known: all, {})", names.join(", ")))
        }
    }
}

/// `cargo xtask build-avr [--mcu M] [--image I]`.
pub fn build_cmd(opts: &BuildArgs) -> Result<(), String> {
    let m = opts.mcu;
    for image in images(m, &opts.image)? {
        let b = build_image(m, &image)?;
        println!(
            "{} {}: {} (flash {} B, static RAM {} B)",
            m.name,
            image.name,
            b.elf.display(),
            b.flash(),
            b.ram()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_build_selects_only_built_images() {
        let m = mcu("atmega1284p").unwrap();
        let never = Image {
            name: "test-image-that-is-never-built".into(),
            features: vec![],
            opt_level: None,
        };
        assert!(!never.elf(m).exists());
        assert!(!runnable(m, &never, true), "not built: skipped under --no-build");
        assert!(runnable(m, &never, false), "it will be built first");
    }

    #[test]
    fn a_kem_filter_selects_that_kem_only() {
        let m = mcu("atmega1284p").unwrap();
        let picked = kem_images_matching(m, "kyber512-r3", false);
        assert_eq!(picked.len(), 1);
        assert_eq!(picked[0].1.len(), 1);
        assert_eq!(picked[0].1[0].name(), "kyber512-r3");
        assert!(kem_images_matching(m, "no-such-kem", false).is_empty());
        // Every KEM variant is selected by the empty filter, each in one image.
        let all: usize = kem_images_matching(m, "", false).iter().map(|(_, k)| k.len()).sum();
        assert_eq!(all, firmware::Kem::ALL.len());
    }
}
