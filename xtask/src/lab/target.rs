//! What can be built: the MCUs and the firmware images (cargo feature sets),
//! and which images a `--filter` selects. Pure data: no builds, no simulation.

use std::path::PathBuf;

use kem_registry::{Group, Kem, Scheme};

use crate::util;

/// An MCU the firmware can be built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mcu {
    /// LLVM/avr-gcc name.
    pub name: &'static str,
    /// Flash bytes.
    pub flash: u32,
    /// SRAM bytes.
    pub sram: u32,
    /// Whether simavr can run it (the classic cores); the megaAVR 0-series
    /// parts run in yasimavr.
    pub simulated: bool,
    /// Overrides the release profile's opt-level (the 4808's 48 KB flash needs "s").
    pub opt_level: Option<&'static str>,
}

impl Mcu {
    /// The part `name` of `avr_mcu` (where its facts are written once): a
    /// classic part runs in simavr; a small megaAVR-0 part is built for size.
    const fn of(name: &'static str) -> Mcu {
        let facts = avr_mcu::facts(name);
        Mcu {
            name,
            flash: facts.flash,
            sram: facts.sram,
            simulated: matches!(facts.simulator(), avr_mcu::Simulator::Simavr),
            opt_level: if facts.is_small() { Some("s") } else { None },
        }
    }

    /// Its record in `avr_mcu`.
    pub fn facts(&self) -> avr_mcu::Mcu {
        avr_mcu::facts(self.name)
    }

    /// A megaAVR 0-series part (AVRxt core, flash mapped into data space,
    /// our own start-up code and link wrapper, yasimavr).
    pub fn is_mega0(&self) -> bool {
        !self.simulated
    }
}

/// The MCUs every command measures and CI builds for.
pub const MCUS: &[Mcu] = &[Mcu::of("atmega1284p"), Mcu::of("atmega4808")];

/// The other boards' MCUs: `--mcu` takes them, `cargo xtask boards`
/// measures what fits them (`docs/boards.md`).
pub const BOARD_MCUS: &[Mcu] = &[Mcu::of("atmega328p"), Mcu::of("atmega2560"), Mcu::of("atmega4809")];

/// Looks up `--mcu`.
pub fn mcu(name: &str) -> Result<Mcu, String> {
    MCUS.iter()
        .chain(BOARD_MCUS)
        .copied()
        .find(|m| m.name == name)
        .ok_or_else(|| {
            let known: Vec<_> = MCUS.iter().chain(BOARD_MCUS).map(|m| m.name).collect();
            format!("unknown MCU `{name}` (supported: {})", known.join(", "))
        })
}

/// The target directory of one MCU's default (`rings`) image (never shared with host builds).
pub fn target_dir(mcu: Mcu) -> PathBuf {
    util::workspace_root().join("target").join(format!("avr-{}", mcu.name))
}

/// The firmware feature that keeps a classic part's provisioned keys in
/// program memory (read with `lpm`/`elpm`), not copied to SRAM.
pub const KEYS_IN_FLASH: &str = "mqtt-keys-in-flash";

/// The firmware feature that keeps the NTT twiddle tables in SRAM.
pub const SRAM_TABLES: &str = "ntt-tables-in-sram";

/// One firmware image: a set of the firmware crate's cargo features.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Short name (`rings`, a group's feature, or a KEM's module name).
    pub name: String,
    /// Cargo features (default features off unless this is `rings`).
    pub features: Vec<&'static str>,
    /// Overrides the release profile's opt-level, unless the MCU has its own.
    pub opt_level: Option<&'static str>,
    /// Keeps its own opt-level (the release profile's 3 if `None`) on an
    /// MCU built for size: a single KEM's image (at most 34 KB of flash at
    /// opt-level 3 on the ATmega4808), so that its rows measure the code
    /// generation of the ATmega1284p's and of PQClean's `-O3`.
    pub keeps_speed: bool,
    /// A sensor image's provisioned keys (`avr_wire::mqtt::Layout::keys_len`
    /// bytes), compiled in with the `mqtt-provisioned` feature; an image
    /// that needs them ([`Image::needs_keys`]) gets them before it is built
    /// (`run::sensor::with_keys`: the measured handshake's, or a key file's).
    pub keys: Option<PathBuf>,
    /// A sensor application image's policy, compiled in
    /// (`SENSOR_APP_POLICY`); `None`: `avr_wire::app::Policy::DEFAULT`.
    pub policy: Option<avr_wire::app::Policy>,
}

impl Image {
    /// The cargo features of this image on `mcu`: on the ATmega4808 the 25
    /// ring operations fit its 48 KB of flash only with the portable NTT,
    /// and a sensor keeps its keys in flash (6 KB of SRAM hold no spare
    /// 1.5 KB of key copies), provisioned into the image at build time. A
    /// KEM-MQTT image of a classic part with 8 KB of SRAM or less (the
    /// ATmega2560) reads its keys through readers, provisioned ones from
    /// program memory ([`KEYS_IN_FLASH`]);
    /// the ATmega1284p's 16 KB hold the copy, and its 128 KB of flash do
    /// not hold the LightSaber hybrid sensor with the KEMs' key readers.
    pub fn features_on(&self, mcu: Mcu) -> Vec<&'static str> {
        let mut f = self.features.clone();
        if mcu.is_mega0() && self.name == "rings" {
            f.push("portable-ntt");
        }
        if mcu.is_mega0() && self.name.starts_with("mqtt-") && !f.contains(&"mqtt-provisioned") {
            f.push("mqtt-provisioned");
        }
        if !mcu.is_mega0()
            && mcu.facts().is_small_sram()
            && f.iter().any(|f| f.starts_with("mqtt-"))
            && !f.contains(&KEYS_IN_FLASH)
        {
            f.push(KEYS_IN_FLASH);
        }
        f
    }

    /// The opt-level it is built at on `mcu` (`None`: the release
    /// profile's): the MCU's own first (the 48 KB parts' "s"), then the
    /// image's, unless the image [keeps its speed](Image::keeps_speed).
    pub fn opt_level_on(&self, mcu: Mcu) -> Option<&'static str> {
        if self.keeps_speed {
            self.opt_level
        } else {
            mcu.opt_level.or(self.opt_level)
        }
    }

    /// Whether this image compiles its sensor keys in on `mcu` (so they
    /// must be provisioned before it is built).
    pub fn needs_keys(&self, mcu: Mcu) -> bool {
        self.features_on(mcu).contains(&"mqtt-provisioned")
    }

    /// The default image: the 25 modarith ring operations.
    pub fn rings() -> Image {
        Image {
            name: "rings".into(),
            features: vec!["rings"],
            opt_level: None,
            keeps_speed: false,
            keys: None,
            policy: None,
        }
    }

    /// Keccak-f\[1600\], Ascon-p\[12\] and X25519 as ops (`firmware::primitives`).
    pub fn primitives() -> Image {
        Image {
            name: "primitives".into(),
            features: vec!["primitives"],
            opt_level: None,
            keeps_speed: false,
            keys: None,
            policy: None,
        }
    }

    /// The primitives with the compact assemblies a 48 KB part's sensor
    /// may take (`compact-primitives`): their cost beside the defaults.
    pub fn primitives_compact() -> Image {
        Image {
            name: "primitives-compact".into(),
            features: vec!["compact-primitives"],
            ..Image::primitives()
        }
    }

    /// Every KEM of a group (one image on the ATmega1284p).
    pub fn group(g: Group) -> Image {
        Image {
            name: g.feature().into(),
            features: vec![g.feature()],
            opt_level: None,
            keeps_speed: false,
            keys: None,
            policy: None,
        }
    }

    /// A single KEM variant (the ATmega4808 images).
    pub fn kem(k: Kem) -> Image {
        // The firmware's feature is the scheme's name; CTRU-Light's
        // variants narrow theirs.
        let mut features = vec![k.scheme().name()];
        match k.variant() {
            "kred2x" => features.push("ctru-kred2x"),
            "montgomery-opt" => features.push("ctru-montopt"),
            "montgomery" => features.push("ctru-mont"),
            _ => {}
        }
        Image {
            name: k.module().replace('_', "-"),
            features,
            opt_level: None,
            keeps_speed: true,
            keys: None,
            policy: None,
        }
    }

    /// A single KEM variant built as `mcu`'s sensor images are (the 48 KB
    /// parts' opt-level "s"), in a directory of its own: what building for
    /// size costs the KEM's operations there.
    pub fn kem_for_size(k: Kem) -> Image {
        let fast = Image::kem(k);
        Image {
            name: format!("{}-for-size", fast.name),
            keeps_speed: false,
            ..fast
        }
    }

    /// The KEM-MQTT/1 sensor image of `kem` (`firmware::mqtt`): its pure suite,
    /// and with `x25519` its hybrid suite too. Built at opt-level 2 on the
    /// 1284p ("s" on the 4808).
    pub fn mqtt(kem: kem_mqtt::Scheme, x25519: bool) -> Image {
        // The firmware's feature: `mqtt-` and the registry's name. Leaked
        // once per image this process describes (a few dozen bytes).
        let f: &'static str = format!("mqtt-{}", kem.name()).leak();
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
            keeps_speed: false,
            keys: None,
            policy: None,
        }
    }

    /// The sensor application image of `suite` (firmware feature
    /// `sensor-app`, `avr_wire::app`): after reset it runs its session on
    /// its own, with provisioned keys. Built like [`Image::mqtt`].
    pub fn sensor_app(suite: kem_mqtt::Suite) -> Image {
        let mut i = Image::mqtt(suite.kem(), suite.is_hybrid());
        i.name = i.name.replacen("mqtt-", "app-", 1);
        i.features.extend(["mqtt-provisioned", "sensor-app"]);
        i
    }

    /// Whether this is a sensor application image.
    pub fn is_sensor_app(&self) -> bool {
        self.features.contains(&"sensor-app")
    }

    /// Every sensor application image: each KEM pure, then with X25519.
    pub fn all_sensor_apps() -> Vec<Image> {
        [false, true]
            .into_iter()
            .flat_map(|x| {
                kem_mqtt::KEMS
                    .into_iter()
                    .map(move |k| Image::sensor_app(kem_mqtt::Suite::new(k, x)))
            })
            .collect()
    }

    /// This image with `policy` compiled in. Built in a directory of its own.
    pub fn with_policy(mut self, policy: avr_wire::app::Policy) -> Image {
        if policy != avr_wire::app::Policy::DEFAULT {
            self.name.push_str(&format!(
                "-policy-{}-{}-{}",
                policy.interval_s, policy.rekey_records, policy.rekey_s
            ));
            self.policy = Some(policy);
        }
        self
    }

    /// This sensor image with the key fields in `keys` compiled in (feature
    /// `mqtt-provisioned`, which adds the sensor's own start,
    /// `avr_wire::mqtt::OP_HELLO`): a board `kem-mqtt serial-bridge` can
    /// carry, holding no key. Built in a directory of its own.
    pub fn provisioned(mut self, keys: PathBuf) -> Image {
        self.name.push_str("-provisioned");
        if !self.features.contains(&"mqtt-provisioned") {
            self.features.push("mqtt-provisioned");
        }
        self.keys = Some(keys);
        self
    }

    /// This KEM-MQTT image with its KEMs reading the sensor's keys through
    /// readers ([`KEYS_IN_FLASH`]), as the ATmega2560's do, on any part:
    /// the harness then feeds the keys a request carries through them, so
    /// `cargo xtask mqtt --key-readers` measures and checks that path on
    /// the ATmega1284p. Built in a directory of its own.
    pub fn key_readers(mut self) -> Image {
        if !self.features.contains(&KEYS_IN_FLASH) {
            self.name.push_str("-key-readers");
            self.features.push(KEYS_IN_FLASH);
        }
        self
    }

    /// This image with the NTT twiddle tables in SRAM (the firmware's
    /// `ntt-tables-in-sram`) instead of flash: the benchmark's second table
    /// placement. Built in a directory of its own.
    pub fn sram_tables(mut self) -> Image {
        self.name.push_str("-sram-tables");
        self.features.push(SRAM_TABLES);
        self
    }

    /// Where the image keeps the NTT twiddle tables, as the records name it:
    /// "sram" or "flash".
    pub fn tables(&self) -> &'static str {
        if self.features.contains(&SRAM_TABLES) {
            "sram"
        } else {
            "flash"
        }
    }

    /// Every KEM-MQTT/1 sensor image: each KEM pure, then with X25519.
    pub fn all_mqtt() -> Vec<Image> {
        [false, true]
            .into_iter()
            .flat_map(|x| kem_mqtt::KEMS.into_iter().map(move |k| Image::mqtt(k, x)))
            .collect()
    }

    /// The image's own directory for `mcu`: its ELF, the files it is
    /// built from (provisioned keys) and the simulators' request files.
    /// (Cargo builds every image of an MCU in [`target_dir`].)
    pub fn target_dir(&self, mcu: Mcu) -> PathBuf {
        target_dir(mcu).join("images").join(&self.name)
    }

    /// The image's ELF (copied there from the MCU's build directory).
    pub fn elf(&self, mcu: Mcu) -> PathBuf {
        self.target_dir(mcu).join("firmware.elf")
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
/// do three of one back-end), then [`sram_table_images`]; on the ATmega4808
/// (48 KB) every variant has its own, tables in flash.
pub fn kem_images(mcu: Mcu) -> Vec<(Image, Vec<Kem>)> {
    if mcu.is_mega0() {
        return Kem::ALL.into_iter().map(|k| (Image::kem(k), vec![k])).collect();
    }
    let mut v = vec![(Image::group(Group::Kyber), vec![Kem::MlKem512, Kem::Kyber512R3])];
    v.extend(
        Kem::ALL
            .into_iter()
            .filter(|k| k.group() != Group::Kyber)
            .map(|k| (Image::kem(k), vec![k])),
    );
    v.extend(sram_table_images());
    v
}

/// The ATmega1284p KEM images with their tables in SRAM: every variant the
/// registry compares with a published row in that placement
/// (`Kem::published_row`: Kyber512, LightSaber Montgomery, CTRU-Light
/// Montgomery-opt, and the FIPS 203 sets, whose KATs then run in both
/// placements); ML-KEM-512 shares Kyber's image.
pub fn sram_table_images() -> Vec<(Image, Vec<Kem>)> {
    let mut v: Vec<(Image, Vec<Kem>)> = Vec::new();
    for k in Kem::ALL.into_iter().filter(|k| k.published_row(true).is_some()) {
        if k.group() == Group::Kyber {
            match v
                .iter_mut()
                .find(|(i, _)| i.name == Image::group(Group::Kyber).sram_tables().name)
            {
                Some((_, kems)) => kems.push(k),
                None => v.push((Image::group(Group::Kyber).sram_tables(), vec![k])),
            }
        } else {
            v.push((Image::kem(k).sram_tables(), vec![k]));
        }
    }
    v
}

/// Every image `build-avr --image all` makes for `mcu`: `rings` (on the
/// ATmega1284p in both table placements), then the KEM images.
pub fn all_images(mcu: Mcu) -> Vec<Image> {
    let mut v = vec![Image::rings()];
    if mcu.simulated {
        v.push(Image::rings().sram_tables());
    }
    v.extend(kem_images(mcu).into_iter().map(|(i, _)| i));
    v
}

/// Looks up `--image`: `rings`, a group feature, a KEM module name (dashes),
/// `mqtt-<kem>[-x25519]`, `app-<kem>[-x25519]`, or `all` (the images CI
/// builds, without the KEM-MQTT ones).
pub fn images(mcu: Mcu, name: &str) -> Result<Vec<Image>, String> {
    if name == "all" {
        return Ok(all_images(mcu));
    }
    let mut known: Vec<Image> = vec![Image::rings(), Image::rings().sram_tables(), Image::primitives()];
    known.extend(Group::ALL.into_iter().map(Image::group));
    known.extend(Kem::ALL.into_iter().map(Image::kem));
    known.extend(sram_table_images().into_iter().map(|(i, _)| i));
    known.extend(Image::all_mqtt());
    known.extend(Image::all_sensor_apps());
    match known.iter().find(|i| i.name == name) {
        Some(i) => Ok(vec![i.clone()]),
        None => {
            let names: Vec<_> = known.iter().map(|i| i.name.as_str()).collect();
            Err(format!("unknown image `{name}` (known: all, {})", names.join(", ")))
        }
    }
}

/// An image name as the command line gives it, checked against the
/// images there are (for clap: a misspelt `--image` is a usage error,
/// exit 2, before anything is built or installed).
pub fn image_name(name: &str) -> Result<String, String> {
    images(MCUS[0], name).map(|_| name.to_string())
}

/// Parses `--kem`: a scheme of the registry (every variant of it, and its
/// KEM-MQTT suites) or one KEM variant, by name; anything else is refused
/// with the list.
pub fn kem_selector(name: &str) -> Result<String, String> {
    let known: Vec<&str> = Scheme::ALL
        .iter()
        .map(|s| s.name())
        .chain(Kem::ALL.iter().map(|k| k.name()))
        .collect();
    if known.contains(&name) {
        Ok(name.to_string())
    } else {
        let mut list = known.clone();
        list.dedup();
        Err(format!("unknown KEM `{name}` (one of: {})", list.join(", ")))
    }
}

/// Parses `--suite`: a KEM-MQTT suite by its name (the registry's, e.g.
/// `ml-kem-768` or `ml-kem-768+x25519`); anything else is refused with the
/// list.
pub fn suite(name: &str) -> Result<kem_mqtt::Suite, String> {
    kem_mqtt::Suite::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = kem_mqtt::Suite::ALL.iter().map(|s| s.name()).collect();
        format!("unknown suite `{name}` (one of: {})", names.join(", "))
    })
}

/// The KEM-MQTT suites a command takes: one by name (`--suite`), or every
/// suite whose row name (`kem-mqtt/<suite>`, `kem-mqtt-app/<suite>`)
/// contains a text (`--filter`; empty: all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Suites {
    /// Exactly this suite (`ml-kem-768` is not `ml-kem-768+x25519`).
    One(kem_mqtt::Suite),
    /// The suites whose row name contains this text (lower case).
    Containing(String),
}

impl Suites {
    /// `--suite` if given, else `--filter`.
    pub fn new(one: Option<kem_mqtt::Suite>, filter: &str) -> Suites {
        one.map_or_else(|| Suites::Containing(filter.to_lowercase()), Suites::One)
    }

    /// Whether `suite`, in a row named `<rows>/<suite>`, is taken.
    pub fn admits(&self, rows: &str, suite: kem_mqtt::Suite) -> bool {
        match self {
            Suites::One(one) => *one == suite,
            Suites::Containing(text) => format!("{rows}/{}", suite.name()).contains(text.as_str()),
        }
    }
}

impl std::fmt::Display for Suites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Suites::One(one) => write!(f, "--suite {}", one.name()),
            Suites::Containing(text) => write!(f, "--filter `{text}`"),
        }
    }
}

/// What a command selects: the `--kem` given (a registry name), or else the
/// `--filter` text (lower case; empty: everything).
pub fn selection(kem: &Option<String>, filter: &str) -> String {
    kem.clone().unwrap_or_else(|| filter.to_lowercase())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kem_selectors_are_the_registrys_names() {
        for ok in [
            "ml-kem-768",
            "ml-kem-1024",
            "ctru-light-sha3",
            "ctru-light-sha3/kred2x",
            "lightsaber",
        ] {
            assert_eq!(kem_selector(ok).as_deref(), Ok(ok));
        }
        for bad in ["ml-kem-76", "kyber768", "", "ML-KEM-768"] {
            let e = kem_selector(bad).unwrap_err();
            assert!(e.contains("ml-kem-1024") && e.contains(&format!("`{bad}`")), "{e}");
        }
        assert_eq!(selection(&None, "NTT"), "ntt");
        assert_eq!(selection(&Some("ml-kem-768".into()), ""), "ml-kem-768");
    }

    #[test]
    fn a_kems_image_keeps_opt_level_3_where_the_sensor_is_built_for_size() {
        let m = mcu("atmega4808").unwrap();
        assert_eq!(m.opt_level, Some("s"));
        assert_eq!(
            Image::kem(Kem::MlKem768).opt_level_on(m),
            None,
            "the release profile's 3"
        );
        assert_eq!(Image::mqtt(kem_mqtt::Scheme::MlKem512, true).opt_level_on(m), Some("s"));
        assert_eq!(Image::primitives().opt_level_on(m), Some("s"));
        let classic = mcu("atmega1284p").unwrap();
        assert_eq!(
            Image::mqtt(kem_mqtt::Scheme::MlKem512, true).opt_level_on(classic),
            Some("2")
        );
    }

    #[test]
    fn no_build_selects_only_built_images() {
        let m = mcu("atmega1284p").unwrap();
        let never = Image {
            name: "test-image-that-is-never-built".into(),
            features: vec![],
            opt_level: None,
            keeps_speed: false,
            keys: None,
            policy: None,
        };
        assert!(!never.elf(m).exists());
        assert!(!runnable(m, &never, true), "not built: skipped under --no-build");
        assert!(runnable(m, &never, false), "it will be built first");
    }

    #[test]
    fn a_kem_filter_selects_that_kem_only() {
        let m = mcu("atmega1284p").unwrap();
        // Kyber512-r3 in its two table placements.
        let picked = kem_images_matching(m, "kyber512-r3", false);
        let placements: Vec<&str> = picked.iter().map(|(i, _)| i.tables()).collect();
        assert_eq!(placements, ["flash", "sram"]);
        for (_, kems) in &picked {
            assert_eq!(kems.len(), 1);
            assert_eq!(kems[0].name(), "kyber512-r3");
        }
        assert!(kem_images_matching(m, "no-such-kem", false).is_empty());
        // Every KEM variant is selected by the empty filter, each in one
        // flash-table image; seven also in one SRAM-table image.
        let all = kem_images_matching(m, "", false);
        let count = |t: &str| -> usize { all.iter().filter(|(i, _)| i.tables() == t).map(|(_, k)| k.len()).sum() };
        assert_eq!(count("flash"), kem_registry::Kem::ALL.len());
        assert_eq!(count("sram"), 7);
        // The 4808 keeps its tables in flash only.
        let m4808 = mcu("atmega4808").unwrap();
        assert!(kem_images_matching(m4808, "", false)
            .iter()
            .all(|(i, _)| i.tables() == "flash"));
    }
}
