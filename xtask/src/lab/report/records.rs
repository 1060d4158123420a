//! The stored measurements: `benchmarks/<mcu>/*.json` (one record per
//! operation) and the fit tables of MCUs without a simavr model.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::util;

/// The scheme name of the NTT-arithmetic benchmarks.
pub const SCHEME: &str = "modarith";

/// The scheme name of the KEM-MQTT/1 sensor handshake records.
pub const MQTT_SCHEME: &str = "kem-mqtt";
/// The `scheme` of the sensor application's records (`cargo xtask bench`,
/// `app_cost.rs`): its handshake, a reading sealed, a command opened.
pub const APP_SCHEME: &str = "kem-mqtt-app";

/// One benchmark result, as stored in `benchmarks/<mcu>/<scheme>.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// MCU.
    pub mcu: String,
    /// Scheme (crate) benchmarked.
    pub scheme: String,
    /// Variant (the ring, with its default reduction).
    pub variant: String,
    /// Operation.
    pub operation: String,
    /// Cycles, the empty marker window's cost subtracted.
    pub cycles: u64,
    /// Stack bytes (simulator SP tracking).
    pub stack_bytes: u32,
    /// Stack bytes (painted-stack scan by the firmware).
    #[serde(default)]
    pub stack_bytes_painted: Option<u32>,
    /// Code bytes: the measured function, everything it calls, and every
    /// function that executed during the operation (calls through pointers).
    pub code_bytes: u32,
    /// Static RAM of the scheme in the image (.data + .bss outside the
    /// harness: tables kept in SRAM); RAM = this + peak stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_ram_bytes: Option<u32>,
    /// Compiler and profile.
    pub toolchain: String,
    /// `git describe` of the measured tree.
    pub git_revision: String,
    /// Simulator and clock.
    #[serde(default)]
    pub simulator: String,
    /// The published figure compared with, if any.
    #[serde(default)]
    pub published_cycles: Option<u64>,
    /// Which published row that is.
    #[serde(default)]
    pub published_reference: Option<String>,
    /// The published row's stack bytes for this operation (KEMs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_stack_bytes: Option<u32>,
    /// The published row's code bytes (KEMs: the whole scheme).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_code_bytes: Option<u32>,
    /// KEM-MQTT: bytes of ClientHello, BrokerHello, ClientFinished and the first record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flight_bytes: Option<[u32; 4]>,
    /// Calls of Keccak-f\[1600\] and of Ascon-p\[12\] inside the operation's
    /// window (KEM operations in simavr; the report's hashing share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permutation_calls: Option<[u64; 2]>,
    /// Where the image kept the NTT twiddle tables: "flash" (the default) or
    /// "sram" (the `ntt-tables-in-sram` images); rings and KEM rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<String>,
    /// ATmega4808 rows: the same window on the AVRxt core (the real chip),
    /// priced from an instruction trace (`xtask/src/lab/run/avrxt.rs`); `cycles` is the
    /// classic-core count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_avrxt: Option<u64>,
}

impl Record {
    /// A record of `operation` with nothing measured yet and no provenance:
    /// callers set what they measured and where (struct update syntax), so
    /// a field added here needs no edit at every place that makes records.
    pub fn unmeasured(mcu: &str, scheme: &str, variant: &str, operation: &str) -> Record {
        Record {
            mcu: mcu.into(),
            scheme: scheme.into(),
            variant: variant.into(),
            operation: operation.into(),
            cycles: 0,
            stack_bytes: 0,
            stack_bytes_painted: None,
            code_bytes: 0,
            static_ram_bytes: None,
            toolchain: String::new(),
            git_revision: String::new(),
            simulator: String::new(),
            published_cycles: None,
            published_reference: None,
            published_stack_bytes: None,
            published_code_bytes: None,
            flight_bytes: None,
            permutation_calls: None,
            tables: None,
            cycles_avrxt: None,
        }
    }

    /// Where the image kept its NTT tables (a record without the field
    /// predates it, or has no tables: flash, the default).
    pub fn table_placement(&self) -> crate::report::published::Tables {
        crate::report::published::Tables::from_name(self.tables.as_deref())
    }

    /// Whether this row is of the default placement (tables in flash): the
    /// README, the charts and the related results show only those.
    pub fn default_placement(&self) -> bool {
        self.table_placement() == crate::report::published::Tables::Flash
    }
}

/// `benchmarks/`: the measured records, one folder per MCU.
pub fn bench_dir() -> PathBuf {
    util::workspace_root().join("benchmarks")
}

/// Writes `contents` to `path`, creating its folder.
pub fn write(path: &Path, contents: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("xtask: wrote {}", path.display());
    Ok(())
}

/// Writes `benchmarks/<mcu>/<scheme>.json`; with `merge`, keeps the records not re-measured.
pub fn save(mcu: &str, scheme: &str, records: &[Record], merge: bool) -> Result<(), String> {
    let path = bench_dir().join(mcu).join(format!("{scheme}.json"));
    let mut all: Vec<Record> = if merge && path.exists() {
        read_records(&path)?
    } else {
        Vec::new()
    };
    for r in records {
        match all.iter_mut().find(|a| {
            a.variant == r.variant && a.operation == r.operation && a.table_placement() == r.table_placement()
        }) {
            Some(a) => *a = r.clone(),
            None => all.push(r.clone()),
        }
    }
    let json = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
    write(&path, &(json + "\n"))
}

/// The variant of the primitives' rows measured with the compact
/// assemblies (the looped Keccak-f\[1600\], the tiny X25519 field).
pub const COMPACT_VARIANT: &str = "avr-asm-compact";

/// The recorded table of `cargo xtask mqtt --key-readers` (every suite):
/// `benchmarks/<mcu>/<this>.md`.
pub const KEY_READERS_TABLE: &str = "kem-mqtt-key-readers";

/// The records of one `benchmarks/**.json` file.
pub fn read_records(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every stored record: `benchmarks/<mcu>/*.json`, sorted by MCU and file.
pub fn all_records() -> Result<Vec<Record>, String> {
    let mut files = Vec::new();
    let Ok(mcus) = std::fs::read_dir(bench_dir()) else {
        return Ok(Vec::new());
    };
    for d in mcus.flatten().filter(|d| d.path().is_dir()) {
        for f in std::fs::read_dir(d.path()).map_err(|e| e.to_string())?.flatten() {
            if f.path().extension().is_some_and(|e| e == "json") {
                files.push(f.path());
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        out.extend(read_records(&f)?);
    }
    Ok(out)
}

/// Writes a fit table measured on an MCU without a simavr model
/// (`benchmarks/<mcu>/<name>.md`; `docs/benchmarks.md` includes it).
pub fn record_fit_table(mcu: &str, name: &str, table: &str) -> Result<(), String> {
    let dir = bench_dir().join(mcu);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    write(&dir.join(format!("{name}.md")), table)
}

/// Where `cargo xtask mqtt-load` stores its run (beside `latest.json`: the
/// per-MCU directories hold cycle records only).
pub fn load_path() -> PathBuf {
    bench_dir().join("kem-mqtt-load.json")
}

/// One `cargo xtask mqtt-load` run: the machine, the fleet, a row per
/// (mode, suite). Not cycle counts: wall-clock rates on a host, so the
/// machine is part of the result.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LoadRun {
    /// CPU model and core count.
    pub machine: String,
    /// mosquitto's version line.
    pub broker: String,
    /// The git revision measured.
    pub git_revision: String,
    /// Sensors per suite.
    pub sensors: usize,
    /// Sensors handshaking at a time.
    pub concurrency: usize,
    /// Readings per sensor.
    pub records: u32,
    /// The rows.
    pub rows: Vec<LoadRow>,
}

/// One (mode, suite) of a [`LoadRun`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LoadRow {
    /// What `kem-mqtt load` measured.
    #[serde(flatten)]
    pub result: kem_mqtt_host::load::LoadResult,
    /// Gateway instances (topic mode; 0 in AUTH mode).
    pub gateways: usize,
    /// CPU time of mosquitto per established handshake (its handshake and
    /// its records), µs.
    pub broker_cpu_us: f64,
    /// CPU time of the gateway processes per established handshake, µs (topic mode).
    pub gateway_cpu_us: f64,
    /// mosquitto's resident set after the run, KiB.
    pub broker_rss_kib: u64,
    /// mosquitto's peak resident set, KiB.
    pub broker_peak_rss_kib: u64,
}

/// The stored load run, if any.
pub fn load_run() -> Option<LoadRun> {
    load_run_at(&load_path())
}

/// The load run of the last revision whose every MQTT client was the
/// crate's own codec (a52f8d9, the parent of the commit that moved topic
/// mode to `rumqttc`), measured by its own `cargo xtask mqtt-load`: the
/// "before" of the report's side-by-side table.
pub fn load_before_rumqttc_path() -> PathBuf {
    bench_dir().join("kem-mqtt-load-before-rumqttc.json")
}

/// The load run stored at `path`, if any.
pub fn load_run_at(path: &Path) -> Option<LoadRun> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Where `cargo xtask registry` stores its run.
pub fn registry_path() -> PathBuf {
    bench_dir().join("registry.json")
}

/// One `cargo xtask registry` run: enrolment and revocation against a
/// registry of `sensors` sensors, in each store.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RegistryRun {
    /// CPU model and core count.
    pub machine: String,
    /// The git revision measured.
    pub git_revision: String,
    /// Sensors in the registry before the measured steps.
    pub sensors: usize,
    /// The suite of every sensor.
    pub suite: String,
    /// Nodes watching the registry for the revocation.
    pub nodes: usize,
    /// Runs of each measured command (the median is kept).
    pub runs: usize,
    /// The rows, one per store.
    pub rows: Vec<RegistryRow>,
}

/// One store of a [`RegistryRun`]; times in milliseconds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RegistryRow {
    /// `registry.json`, `sqlite` or `postgresql`.
    pub store: String,
    /// The registry's size on disk, bytes (`None`: a server's).
    pub bytes: Option<u64>,
    /// `kem-mqtt provision` of one more sensor (the whole command: its
    /// start, the broker's keys loaded and checked, the key pair made, the
    /// key file and the registry written), median.
    pub enrol_command_ms: f64,
    /// The registry's part of it alone (`RegistryStore::enrol`), median.
    pub enrol_step_ms: f64,
    /// `kem-mqtt revoke` of one sensor (the whole command), median.
    pub revoke_command_ms: f64,
    /// From the start of `kem-mqtt revoke` until every node's watch has put
    /// a registry without the sensor in place, median.
    pub revocation_bite_ms: f64,
    /// A node's start: the whole registry read and validated.
    pub node_load_ms: f64,
}

/// The stored registry run, if any.
pub fn registry_run() -> Option<RegistryRun> {
    let text = std::fs::read_to_string(registry_path()).ok()?;
    serde_json::from_str(&text).ok()
}

/// The compiler and release profile the AVR images are built with.
pub fn toolchain() -> String {
    let rustc = crate::opts::output(std::process::Command::new("/usr/bin/rustc").arg("--version"))
        .unwrap_or_else(|_| "rustc ?".into());
    let cargo_toml = std::fs::read_to_string(util::workspace_root().join("Cargo.toml")).unwrap_or_default();
    let mut in_release = false;
    let mut opt = String::from("?");
    for line in cargo_toml.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_release = l == "[profile.release]";
        } else if in_release && l.starts_with("opt-level") {
            opt = l.split('=').nth(1).unwrap_or("?").trim().trim_matches('"').to_string();
        }
    }
    format!("{}, avr-none, opt-level {opt}, lto", rustc.trim())
}

/// The cycles of `r` inside Keccak-f\[1600\] and Ascon-p\[12\]: its
/// permutation calls times the permutations' own cycles on the same MCU
/// (scheme `primitives`), as pqm4 reports hashing. `None` without either.
pub fn hashing_cycles(records: &[Record], r: &Record) -> Option<u64> {
    let [keccak, ascon] = r.permutation_calls?;
    let cost = |op: &str| {
        records
            .iter()
            .find(|p| p.mcu == r.mcu && p.scheme == "primitives" && p.operation == op)
            .map(|p| p.cycles)
    };
    Some(keccak * cost("keccak-f1600")? + ascon * cost("ascon-p12")?)
}

/// [`hashing_cycles`] as a share of `r`'s cycles.
pub fn hashing_share(records: &[Record], r: &Record) -> Option<f64> {
    let hashing = hashing_cycles(records, r)?;
    (r.cycles > 0).then(|| hashing as f64 / r.cycles as f64)
}
