//! `cargo xtask bench`: cycles, stack and code size of every firmware operation
//! in simavr, beside the published figures; JSON results and generated docs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use avr_harness::protocol::{EMPTY_WINDOW, OP_EMPTY, OP_STACK};
use avr_sim::windows;
use firmware::{kem_op_id, op_id, Kem, KemOp, Ring};
use serde::{Deserialize, Serialize};

use crate::avr::{self, CallGraph};
use crate::device::{encode, Device};
use crate::opts::{output, Rng};
use crate::progress::Progress;
use crate::{kems as kemsim, published, simtest, util};

/// The scheme name of the NTT-arithmetic benchmarks.
pub const SCHEME: &str = "modarith";

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
    /// Code bytes: the measured function and everything it calls.
    pub code_bytes: u32,
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
}

fn toolchain() -> String {
    let rustc = output(Command::new("/usr/bin/rustc").arg("--version")).unwrap_or_else(|_| "rustc ?".into());
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

fn git_revision() -> String {
    let root = util::workspace_root();
    let rev = output(
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(["rev-parse", "--short=12", "HEAD"]),
    )
    .map(|s| s.trim().to_string())
    .unwrap_or_else(|_| "unknown".into());
    let dirty =
        output(
            Command::new("git")
                .arg("-C")
                .arg(&root)
                .args(["status", "--porcelain", "--", "crates", "firmware"]),
        )
        .map(|s| !s.trim().is_empty())
        .unwrap_or(false);
    if dirty {
        format!("{rev}-dirty")
    } else {
        rev
    }
}

/// Runs `op` on `inputs` and returns (cycles including the marker overhead, sim stack, painted stack).
fn measure(dev: &mut Device, id: u8, payload: &[u8]) -> Result<(u64, u32, u32), String> {
    dev.take_markers();
    dev.call(id, payload)?;
    let w = windows(&dev.take_markers()).map_err(|e| e.to_string())?;
    let [w] = w.as_slice() else {
        return Err(format!("op 0x{id:02x}: expected one marker window, got {w:?}"));
    };
    if w.id != id {
        return Err(format!("op 0x{id:02x}: marker window {} instead", w.id));
    }
    let painted = dev.call(OP_STACK, &[])?;
    let painted = u16::from_le_bytes([painted[0], painted[1]]) as u32;
    Ok((w.cycles, w.stack_bytes as u32, painted))
}

/// Context shared by every benchmark of one run.
struct Ctx {
    mcu: avr::Mcu,
    toolchain: String,
    revision: String,
    simulator: String,
}

impl Ctx {
    fn record(&self, scheme: &str, variant: &str, operation: &str) -> Record {
        Record {
            mcu: self.mcu.name.into(),
            scheme: scheme.into(),
            variant: variant.into(),
            operation: operation.into(),
            cycles: 0,
            stack_bytes: 0,
            stack_bytes_painted: None,
            code_bytes: 0,
            toolchain: self.toolchain.clone(),
            git_revision: self.revision.clone(),
            simulator: self.simulator.clone(),
            published_cycles: None,
            published_reference: None,
            published_stack_bytes: None,
            published_code_bytes: None,
            flight_bytes: None,
        }
    }
}

/// The cost of an empty marker window: subtracted from every measurement.
fn empty_window(dev: &mut Device) -> Result<u64, String> {
    let mut empty = u64::MAX;
    for _ in 0..3 {
        dev.take_markers();
        dev.call(OP_EMPTY, &[])?;
        let w = windows(&dev.take_markers()).map_err(|e| e.to_string())?;
        match w.as_slice() {
            [w] if w.id == EMPTY_WINDOW => empty = empty.min(w.cycles),
            other => return Err(format!("empty window: unexpected markers {other:?}")),
        }
    }
    Ok(empty)
}

/// Options of `cargo xtask bench`.
#[derive(clap::Parser, Debug)]
pub struct BenchArgs {
    /// The MCU (atmega1284p in simavr; atmega4808: which KEMs and KEM-MQTT
    /// suites fit, run in yasimavr, recorded in benchmarks/atmega4808/*.md)
    #[arg(long, default_value = "atmega1284p", value_parser = avr::mcu)]
    pub mcu: avr::Mcu,
    /// Only operations whose name contains this text (e.g. kyber512-r3, ntt, kem-mqtt)
    #[arg(long, default_value = "")]
    pub filter: String,
    /// Use the images already built
    #[arg(long)]
    pub no_build: bool,
}

/// `cargo xtask bench [--mcu M] [--filter S] [--no-build]`.
pub fn run(o: &BenchArgs) -> Result<(), String> {
    let mcu = o.mcu;
    let filter = o.filter.to_lowercase();
    let no_build = o.no_build;
    if !mcu.simulated {
        // No cycle-accurate model (simavr has no megaAVR-0): what fits, run in
        // yasimavr; recorded only by an unfiltered run (a filtered one would
        // replace the tables with a part of them).
        let record = filter.is_empty();
        crate::mega0::kat(mcu, &filter, no_build, false, record)?;
        crate::mqtt::mega0(mcu, &filter, no_build, record, false)?;
        return regenerate();
    }
    let ctx = Ctx {
        mcu,
        toolchain: toolchain(),
        revision: git_revision(),
        simulator: format!(
            "simavr {} @ {} MHz (libsimavr, avr-sim)",
            mcu.name,
            avr_sim::DEFAULT_FREQUENCY / 1_000_000
        ),
    };
    let start = Instant::now();
    let mut simulated = 0;
    let mut all = Vec::new();
    // What the filter selects, decided up front so progress can count it.
    let rings_selected = firmware::ops()
        .any(|(r, k)| format!("{}.{}", r.name(), k.name()).to_lowercase().contains(&filter))
        && avr::runnable(mcu, &avr::Image::rings(), no_build);
    let kem_images = avr::kem_images_matching(mcu, &filter, no_build);
    // The default run measures the two suites issue #8 compares (the others
    // with `--filter kem-mqtt`): each image is a build of its own.
    let mqtt_images: Vec<avr::Image> = crate::mqtt::images(mcu, &filter)
        .into_iter()
        .filter(|i| avr::runnable(mcu, i, no_build))
        .filter(|i| !filter.is_empty() || MQTT_DEFAULT_IMAGES.contains(&i.name.as_str()))
        .collect();
    let steps = u64::from(rings_selected) + kem_images.len() as u64 + mqtt_images.len() as u64;
    let mut progress = Progress::new("bench", steps);
    if rings_selected {
        progress.step("rings: build, then the 25 ring operations");
        let (records, cycles) = bench_rings(&ctx, &filter, no_build)?;
        save(mcu.name, SCHEME, &records, !filter.is_empty())?;
        simulated += cycles;
        all.extend(records);
    }
    for (image, kems) in kem_images {
        let names: Vec<&str> = kems.iter().map(|k| k.name()).collect();
        progress.step(&format!("{}: build, then {}", image.name, names.join(", ")));
        let (records, cycles) = bench_kems(&ctx, &image, &kems, no_build)?;
        let mut schemes: Vec<&str> = kems.iter().map(|k| k.scheme()).collect();
        schemes.dedup();
        for scheme in schemes {
            let rs: Vec<Record> = records.iter().filter(|r| r.scheme == scheme).cloned().collect();
            save(mcu.name, scheme, &rs, true)?;
        }
        simulated += cycles;
        all.extend(records);
    }
    let mut mqtt_records = Vec::new();
    for image in &mqtt_images {
        progress.step(&format!("{}: build, then the sensor handshake", image.name));
        let (records, cycles) = bench_mqtt(&ctx, std::slice::from_ref(image), &filter, no_build)?;
        simulated += cycles;
        mqtt_records.extend(records);
    }
    if !mqtt_records.is_empty() {
        save(mcu.name, MQTT_SCHEME, &mqtt_records, true)?;
        all.extend(mqtt_records);
    }
    progress.finish();
    if all.is_empty() {
        return Err(format!("no operation matches --filter `{filter}`"));
    }
    let secs = start.elapsed().as_secs_f64();
    print!("{}", markdown_table(&all));
    println!();
    println!(
        "simulated {simulated} cycles in {secs:.1} s (builds included) = {:.1} M cycles/s",
        simulated as f64 / secs / 1e6
    );
    regenerate()
}

/// The 25 ring operations of the `rings` image.
fn bench_rings(ctx: &Ctx, filter: &str, no_build: bool) -> Result<(Vec<Record>, u64), String> {
    let mcu = ctx.mcu;
    let elf = simtest::image_elf(mcu, &avr::Image::rings(), no_build)?;
    let graph = CallGraph::load(&elf)?;
    let mut dev = Device::open(&elf, mcu.name)?;
    let empty = empty_window(&mut dev)?;
    let mut rng = Rng::new(0xBE_4C4);
    let mut records = Vec::new();
    for (ring, kind) in firmware::ops() {
        let name = format!("{}.{}", ring.name(), kind.name());
        if !name.to_lowercase().contains(filter) {
            continue;
        }
        let id = op_id(ring, kind);
        // Two random inputs: the figures must not depend on the data.
        let mut runs = Vec::new();
        for t in [4, 5] {
            let payload = encode(&simtest::inputs(ring, kind, t, &mut rng));
            runs.push(measure(&mut dev, id, &payload)?);
        }
        if runs[0].0 != runs[1].0 {
            eprintln!(
                "xtask: warning: {name} took {} and {} cycles on two inputs",
                runs[0].0, runs[1].0
            );
        }
        // Saber3329 is the same type as Kyber: the linker may fold its functions into Kyber's.
        let module = ring.name().to_lowercase();
        let function = format!("k_{}", kind.name());
        let found = graph.find(&module, &function).or_else(|| match ring {
            Ring::Saber3329 => graph.find("kyber", &function),
            _ => None,
        });
        let code = match found {
            Some(sym) => graph.reachable_size(sym),
            None => {
                eprintln!("xtask: warning: no symbol for {module}::k_{}", kind.name());
                0
            }
        };
        let published = published::cycles(ring, kind);
        let mut r = ctx.record(SCHEME, ring.name(), kind.name());
        r.cycles = runs.iter().map(|r| r.0).max().unwrap_or(0) - empty;
        r.stack_bytes = runs.iter().map(|r| r.1).max().unwrap_or(0);
        r.stack_bytes_painted = Some(runs.iter().map(|r| r.2).max().unwrap_or(0));
        r.code_bytes = code;
        r.published_cycles = published;
        r.published_reference = published.map(|_| published::label(ring));
        records.push(r);
    }
    let simulated = dev.cycle();
    dev.close()?;
    Ok((records, simulated))
}

/// The scheme name of the KEM-MQTT/1 sensor handshake records.
pub const MQTT_SCHEME: &str = "kem-mqtt";

/// The KEM-MQTT images a filter-less `bench` measures.
const MQTT_DEFAULT_IMAGES: &[&str] = &["mqtt-ctru-light-ascon-x25519", "mqtt-ml-kem-512-x25519"];

/// The sensor's KEM-MQTT/1 handshake of every suite the images serve: one
/// record per step (`start`, `finish`) and one for the whole sensor work
/// (`handshake`, beside the published KEM-MQTT figure).
fn bench_mqtt(ctx: &Ctx, images: &[avr::Image], filter: &str, no_build: bool) -> Result<(Vec<Record>, u64), String> {
    let mcu = ctx.mcu;
    let mut records = Vec::new();
    let mut simulated = 0;
    for image in images {
        let elf = simtest::image_elf(mcu, image, no_build)?;
        let graph = CallGraph::load(&elf)?;
        let roots: Vec<&str> = ["k_start", "k_finish"]
            .iter()
            .filter_map(|f| graph.find("mqtt", f))
            .collect();
        let code = graph.reachable_size_union(&roots);
        let mut dev = Device::open(&elf, mcu.name)?;
        let empty = empty_window(&mut dev)?;
        let mut failed_image = false;
        for suite in crate::mqtt::suites_of(image) {
            if !format!("kem-mqtt/{}", suite.name()).contains(filter) {
                continue;
            }
            let r = match crate::mqtt::run(&mut dev, suite, crate::mqtt::SEED) {
                Ok(r) => r,
                // Out of SRAM (LightSaber on the 1284p): report it, measure the others.
                Err(e) => {
                    eprintln!("xtask: warning: {} not measured: {e}", suite.name());
                    failed_image = true;
                    break;
                }
            };
            let f = r.flights;
            let flights = [f.client_hello, f.broker_hello, f.client_finished, f.record].map(|x| x as u32);
            let (a, b) = (r.start.cycles - empty, r.finish.cycles - empty);
            for (op, cycles, stack, painted) in [
                ("start", a, r.start.stack, r.painted[0]),
                ("finish", b, r.finish.stack, r.painted[1]),
                (
                    "handshake",
                    a + b,
                    r.start.stack.max(r.finish.stack),
                    r.painted[0].max(r.painted[1]),
                ),
            ] {
                let mut rec = ctx.record(MQTT_SCHEME, suite.name(), op);
                rec.cycles = cycles;
                rec.stack_bytes = stack;
                rec.stack_bytes_painted = Some(painted);
                rec.code_bytes = code;
                rec.flight_bytes = Some(flights);
                if let Some(level) = crate::avr::Image::mqtt(suite.kem(), true).opt_level {
                    rec.toolchain = rec.toolchain.replace("opt-level 3", &format!("opt-level {level}"));
                }
                if op == "handshake" {
                    rec.published_cycles = Some(published::KEM_MQTT_SENSOR_CYCLES);
                    rec.published_reference = Some(published::KEM_MQTT_REFERENCE.into());
                }
                records.push(rec);
            }
        }
        simulated += dev.cycle();
        if !failed_image {
            dev.close()?;
        }
    }
    Ok((records, simulated))
}

/// Keygen, encaps and decaps of every KEM of `image` on two KAT records.
///
/// Cycles are the larger of the two runs minus the empty window; stack the
/// larger; code is the scheme's: every function reachable from its three
/// measured `k_*` functions, each counted once (the same on all three rows).
fn bench_kems(ctx: &Ctx, image: &avr::Image, kems: &[Kem], no_build: bool) -> Result<(Vec<Record>, u64), String> {
    let mcu = ctx.mcu;
    let elf = simtest::image_elf(mcu, image, no_build)?;
    let graph = CallGraph::load(&elf)?;
    let mut dev = Device::open(&elf, mcu.name)?;
    let empty = empty_window(&mut dev)?;
    let mut records = Vec::new();
    for &kem in kems {
        let cases = kemsim::kat_cases(kem, 2)?;
        let roots: Vec<&str> = KemOp::ALL
            .iter()
            .filter_map(|op| graph.find(kem.module(), &format!("k_{}", op.name())))
            .collect();
        if roots.len() != 3 {
            eprintln!("xtask: warning: {} has {} of 3 k_* symbols", kem.name(), roots.len());
        }
        let code = graph.reachable_size_union(&roots);
        for op in KemOp::ALL {
            let id = kem_op_id(kem, op);
            let mut runs = Vec::new();
            for c in &cases {
                let r = &c.record;
                let payload = match op {
                    KemOp::Keygen => kemsim::request(kem, op, &[], &c.keygen_tape)?,
                    KemOp::Encaps => kemsim::request(kem, op, &r.pk, &c.encaps_tape)?,
                    KemOp::Decaps => kemsim::request(kem, op, &r.sk, &r.ct)?,
                };
                runs.push(measure(&mut dev, id, &payload)?);
            }
            let mut rec = ctx.record(kem.scheme(), kem.variant(), op.name());
            rec.cycles = runs.iter().map(|r| r.0).max().unwrap_or(0) - empty;
            rec.stack_bytes = runs.iter().map(|r| r.1).max().unwrap_or(0);
            rec.stack_bytes_painted = Some(runs.iter().map(|r| r.2).max().unwrap_or(0));
            rec.code_bytes = code;
            if let Some((c, st, cd)) = published::kem_figures(kem, op) {
                rec.published_cycles = Some(c);
                rec.published_stack_bytes = Some(st);
                rec.published_code_bytes = Some(cd);
                rec.published_reference = published::kem_reference(kem).map(|r| r.name.to_string());
            }
            records.push(rec);
        }
    }
    let simulated = dev.cycle();
    dev.close()?;
    Ok((records, simulated))
}

fn ratio(ours: u64, theirs: Option<u64>) -> String {
    theirs
        .map(|t| format!("{:.2}", ours as f64 / t as f64))
        .unwrap_or_default()
}

fn kcycles(c: Option<u64>) -> String {
    c.map(|c| format!("{:.1}", c as f64 / 1000.0)).unwrap_or_default()
}

/// The Markdown table of `records`.
pub fn markdown_table(records: &[Record]) -> String {
    let mut s = String::from(
        "| operation | cycles | k-cycles | stack B | code B | published k-cycles | ours/published |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in records {
        let _ = writeln!(
            s,
            "| {}.{} | {} | {} | {} | {} | {} | {} |",
            r.variant,
            r.operation,
            r.cycles,
            kcycles(Some(r.cycles)),
            r.stack_bytes,
            r.code_bytes,
            kcycles(r.published_cycles),
            ratio(r.cycles, r.published_cycles)
        );
    }
    s
}

pub(crate) fn bench_dir() -> std::path::PathBuf {
    util::workspace_root().join("benchmarks")
}

fn write(path: &Path, contents: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("xtask: wrote {}", path.display());
    Ok(())
}

/// Writes `benchmarks/<mcu>/<scheme>.json`; with `merge`, keeps the records not re-measured.
fn save(mcu: &str, scheme: &str, records: &[Record], merge: bool) -> Result<(), String> {
    let path = bench_dir().join(mcu).join(format!("{scheme}.json"));
    let mut all: Vec<Record> = if merge && path.exists() {
        read_records(&path)?
    } else {
        Vec::new()
    };
    for r in records {
        match all
            .iter_mut()
            .find(|a| a.variant == r.variant && a.operation == r.operation)
        {
            Some(a) => *a = r.clone(),
            None => all.push(r.clone()),
        }
    }
    let json = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
    write(&path, &(json + "\n"))
}

pub(crate) fn read_records(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every stored record: `benchmarks/<mcu>/*.json`, sorted by MCU and file.
fn all_records() -> Result<Vec<Record>, String> {
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

/// `cargo xtask report`: regenerates `benchmarks/latest.json`, `docs/benchmarks.md` and the SVG chart.
pub fn regenerate() -> Result<(), String> {
    let records = all_records()?;
    let json = serde_json::to_string_pretty(&records).map_err(|e| e.to_string())?;
    write(&bench_dir().join("latest.json"), &(json + "\n"))?;
    let docs = util::workspace_root().join("docs");
    write(&docs.join("benchmarks.md"), &docs_markdown(&records))?;
    write(&docs.join("benchmarks.svg"), &svg_chart(&records))?;
    let readme = util::workspace_root().join("README.md");
    let text = std::fs::read_to_string(&readme).map_err(|e| format!("cannot read {}: {e}", readme.display()))?;
    write(&readme, &replace_between_markers(&text, &readme_glance(&records))?)
}

/// README markers around the generated "Results at a glance" table.
const GLANCE_BEGIN: &str = "<!-- glance:begin (generated by `cargo xtask bench` / `report`; do not edit) -->\n";
const GLANCE_END: &str = "<!-- glance:end -->";

/// The README's rows: the best variant of each scheme on the ATmega1284p.
const GLANCE_ROWS: &[(&str, &str, &str)] = &[
    ("ctru-light-sha3", "kred2x", "CTRU-Light, SHA3, K-RED2X (default)"),
    ("ctru-light-ascon", "kred2x", "CTRU-Light, Ascon, K-RED2X (default)"),
    ("kyber512-r3", "default", "Kyber512 (round 3)"),
    ("ml-kem-512", "default", "ML-KEM-512 (beside the same row)"),
    ("lightsaber", "default", "LightSaber"),
];

/// 1234567 → "1,234,567".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn readme_glance(records: &[Record]) -> String {
    let mut s = String::from(
        "| scheme | keygen / encaps / decaps k-cycles | ratio | stack B (K/E/D) | published stack |\n|---|---|---|---|---|\n",
    );
    let groups = kem_groups(records);
    for (scheme, variant, label) in GLANCE_ROWS {
        let Some(g) = groups
            .iter()
            .find(|g| g[0].mcu == "atmega1284p" && g[0].scheme == *scheme && g[0].variant == *variant)
        else {
            continue;
        };
        let three = |f: &dyn Fn(&Record) -> String| g.iter().map(|r| f(r)).collect::<Vec<_>>().join(" / ");
        let published_stack = if g.iter().all(|r| r.published_stack_bytes.is_some()) {
            three(&|r| grouped(r.published_stack_bytes.unwrap_or_default() as u64))
        } else {
            "—".into()
        };
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {published_stack} |",
            three(&|r| grouped((r.cycles + 500) / 1000)),
            three(&|r| ratio(r.cycles, r.published_cycles)),
            three(&|r| grouped(r.stack_bytes as u64)),
        );
    }
    let handshake = |suite: &str| {
        records.iter().find(|r| {
            r.mcu == "atmega1284p" && r.scheme == MQTT_SCHEME && r.variant == suite && r.operation == "handshake"
        })
    };
    if let (Some(ml), Some(hybrid)) = (handshake("ml-kem-512"), handshake("ctru-light-sha3+x25519")) {
        let _ = writeln!(
            s,
            "\nThe KEM-MQTT/1 sensor handshake takes {:.2} M cycles with ML-KEM-512 and {:.2} M with \
             CTRU-Light (SHA3) + X25519 (published: {:.1} M, Kyber-512 alone).",
            ml.cycles as f64 / 1e6,
            hybrid.cycles as f64 / 1e6,
            ml.published_cycles.unwrap_or_default() as f64 / 1e6
        );
    }
    s
}

/// `text` with the part between the glance markers replaced by `body`.
fn replace_between_markers(text: &str, body: &str) -> Result<String, String> {
    let (Some(b), Some(e)) = (text.find(GLANCE_BEGIN), text.find(GLANCE_END)) else {
        return Err(format!("README.md lacks the markers {GLANCE_BEGIN:?} … {GLANCE_END:?}"));
    };
    let start = b + GLANCE_BEGIN.len();
    if e < start {
        return Err("README.md: glance markers out of order".into());
    }
    Ok(format!("{}{body}{}", &text[..start], &text[e..]))
}

/// Writes a fit table measured on an MCU without a simavr model
/// (`benchmarks/<mcu>/<name>.md`; `docs/benchmarks.md` includes it).
pub fn record_fit_table(mcu: &str, name: &str, table: &str) -> Result<(), String> {
    let dir = bench_dir().join(mcu);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    write(&dir.join(format!("{name}.md")), table)
}

/// The recorded fit tables, as sections of `docs/benchmarks.md`.
fn fit_sections() -> String {
    let mut s = String::new();
    for mcu in avr::MCUS.iter().filter(|m| !m.simulated) {
        for (name, title) in [
            ("kem-fit", "KEM operations (KAT record 0)"),
            ("kem-mqtt-fit", "KEM-MQTT/1 sensor handshake"),
        ] {
            let path = bench_dir().join(mcu.name).join(format!("{name}.md"));
            if let Ok(table) = std::fs::read_to_string(&path) {
                let _ = writeln!(
                    s,
                    "## {}: {title} — what fits\n\n\
                     Measured by `cargo xtask bench --mcu {}` (yasimavr; from `benchmarks/{}/{name}.md`).\n\n{table}",
                    mcu.name, mcu.name, mcu.name
                );
            }
        }
    }
    s
}

fn docs_markdown(records: &[Record]) -> String {
    let mut s = String::from(
        "<!-- Generated by `cargo xtask bench` / `cargo xtask report` from benchmarks/*/*.json. Do not edit. -->\n\
         # Benchmarks\n\n\
         Cycles are measured in simavr (cycle-accurate for the classic AVR core) between two\n\
         GPIOR0 marker writes around an `#[inline(never)]` call, minus the cost of an empty\n\
         window. Stack is the lowest SP inside the window (simulator), cross-checked by a\n\
         painted-stack scan in the firmware. Code is the measured function plus everything it\n\
         calls (static call graph). On the ATmega1284p our twiddle tables live in SRAM (`.data`).\n\n\
         Published figures: CTRU-Light paper artifact, ATmega1284p @ 20 MHz, avr-gcc 14.1 -O3\n\
         († tables in flash, ‡ in SRAM); ratio < 1 means we are faster.\n\n",
    );
    let mut by_mcu: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in records {
        by_mcu.entry(&r.mcu).or_default().push(r);
    }
    for (mcu, rs) in by_mcu {
        let _ = writeln!(s, "## {mcu}\n");
        if let Some(r) = rs.first() {
            let _ = writeln!(
                s,
                "Toolchain: {} · revision `{}` · {}\n",
                r.toolchain, r.git_revision, r.simulator
            );
        }
        s.push_str("| scheme | variant | operation | cycles | stack B (sim / painted) | code B | published k-cycles | reference | ours/published |\n");
        s.push_str("|---|---|---|---:|---:|---:|---:|---|---:|\n");
        for r in rs {
            let painted = r
                .stack_bytes_painted
                .map(|p| p.to_string())
                .unwrap_or_else(|| "–".into());
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} / {} | {} | {} | {} | {} |",
                r.scheme,
                r.variant,
                r.operation,
                r.cycles,
                r.stack_bytes,
                painted,
                r.code_bytes,
                kcycles(r.published_cycles),
                r.published_reference.as_deref().unwrap_or(""),
                ratio(r.cycles, r.published_cycles)
            );
        }
        s.push('\n');
    }
    s.push_str(&kem_summary(records));
    s.push_str(&mqtt_summary(records));
    s.push_str(&fit_sections());
    s.push_str("![ours vs published](benchmarks.svg)\n\n## Published NTT table (embedded in the xtask)\n\n");
    s.push_str("| ring | implementation | NTT | iNTT | base mult | base inv |\n|---|---|---:|---:|---:|---:|\n");
    for r in published::NTT_TABLE {
        let mark = match r.tables {
            published::Tables::Flash => "†",
            published::Tables::Sram => "‡",
        };
        let k: Vec<String> = r
            .kcycles
            .iter()
            .map(|c| c.map(|c| format!("{c:.1}")).unwrap_or("–".into()))
            .collect();
        let _ = writeln!(s, "| {} | {}{mark} | {} |", r.ring, r.implementation, k.join(" | "));
    }
    s
}

/// The KEM-MQTT/1 table: the sensor's handshake work per suite beside the published KEM-MQTT figure.
fn mqtt_summary(records: &[Record]) -> String {
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.scheme == MQTT_SCHEME && r.operation == "handshake")
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "## KEM-MQTT/1 sensor handshake\n\n\
         The firmware (`mqtt-<kem>[-x25519]` images, opt-level 2: at 3 the LightSaber hybrid image\n\
         exceeds 128 KB) runs the sensor: `start` = `SensorHandshake::start` (KEM keygen + encaps, hybrid:\n\
         X25519 key generation; the static-static X25519 secret is computed when the keys are\n\
         loaded, as spec §3 allows, outside the measurement), `finish` = `receive_broker_hello`\n\
         (two decaps, hybrid: one X25519, `crates/x25519-avr`); the host plays the broker (`BrokerHandshake`) and\n\
         checks the ClientHello byte for byte, the ClientFinished and a record sealed under the\n\
         new key. Flights: ClientHello / BrokerHello / ClientFinished / first record (8-byte\n\
         client id). Published: KEM-MQTT (ePrint 2025/563), Kyber-512 sensor handshake work on an\n\
         ATmega4808, 31.8 M cycles.\n\n\
         | MCU | suite | start M | finish M | total M | stack B start/finish | code B | flights B | published M | ours/published |\n\
         |---|---|---:|---:|---:|---|---:|---|---:|---:|\n",
    );
    let find = |r: &Record, op: &str| {
        records
            .iter()
            .find(|x| x.mcu == r.mcu && x.scheme == r.scheme && x.variant == r.variant && x.operation == op)
    };
    let m = |c: u64| format!("{:.2}", c as f64 / 1e6);
    for r in rows {
        let (Some(a), Some(b)) = (find(r, "start"), find(r, "finish")) else {
            continue;
        };
        let f = r.flight_bytes.unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {}/{} | {} | {}/{}/{}/{} | {} | {} |",
            r.mcu,
            r.variant,
            m(a.cycles),
            m(b.cycles),
            m(r.cycles),
            a.stack_bytes,
            b.stack_bytes,
            r.code_bytes,
            f[0],
            f[1],
            f[2],
            f[3],
            r.published_cycles.map(m).unwrap_or_default(),
            ratio(r.cycles, r.published_cycles)
        );
    }
    s.push('\n');
    s
}

/// One KEM variant's three records, in operation order.
fn kem_groups(records: &[Record]) -> Vec<[&Record; 3]> {
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.scheme != SCHEME && r.operation == "keygen") {
        let find = |op: &str| {
            records
                .iter()
                .find(|x| x.mcu == r.mcu && x.scheme == r.scheme && x.variant == r.variant && x.operation == op)
        };
        if let (Some(e), Some(d)) = (find("encaps"), find("decaps")) {
            out.push([r, e, d]);
        }
    }
    out
}

/// The KEM table: ours beside the published row of each variant, and the published table.
fn kem_summary(records: &[Record]) -> String {
    let groups = kem_groups(records);
    let mut s = String::new();
    if !groups.is_empty() {
        s.push_str(
            "## KEMs\n\n\
             Each operation runs on two KAT records (randomness replayed from the NIST DRBG);\n\
             k-cycles are the larger run. Stack is the simulator's SP-tracking measure of the KEM\n\
             call alone; code is every function reachable from the scheme's three measured\n\
             functions (static call graph, each function once; constant tables in `.data`/`.rodata`\n\
             not included). Published: CTRU-Light paper artifact (avr-gcc 14.1 -O3, ATmega1284p).\n\
             Our Kyber512-r3 is compared with their Kyber512 (round 3); ML-KEM-512 is shown beside\n\
             the same row.\n\n\
             Variants (CTRU-Light; they never change an output byte) choose the reduction of the\n\
             q = 769 NTT (key generation, encryption, re-encryption): `montgomery-opt` is\n\
             NTT-friendly Montgomery (q = k·2^8 + 1, so the products by q⁻¹ and q are products by\n\
             the small k: two byte products per reduction), assembly; `montgomery` is\n\
             plain Montgomery (general 16-bit q⁻¹ and q: seven byte products), assembly;\n\
             `kred2x` is K-RED2X (k²·C0 − k·C1 + C2, two byte products, no 2^16 scaling),\n\
             assembly. Decryption's c·f is the same in all three: Karatsuba modulo q2 = 256 with a\n\
             32×32 assembly base case (the method the paper's tables imply lifts two NTT products,\n\
             mod 769 and mod 3329, by CRT; the definition allows any exact method, §6).\n\
             `default` (Kyber, LightSaber) is NTT-friendly Montgomery assembly. Twiddle tables are in SRAM (`.data`) on the 1284p, in flash on the 4808.\n\n\
             | MCU | scheme | variant | keygen k | encaps k | decaps k | stack K/E/D | code B | published row | pub. k K/E/D | pub. stack K/E/D | pub. code | ratio K/E/D |\n\
             |---|---|---|---:|---:|---:|---|---:|---|---|---|---:|---|\n",
        );
    }
    for [k, e, d] in &groups {
        let three = |f: &dyn Fn(&Record) -> String| format!("{}/{}/{}", f(k), f(e), f(d));
        let published = k.published_cycles.is_some();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            k.mcu,
            k.scheme,
            k.variant,
            kcycles(Some(k.cycles)),
            kcycles(Some(e.cycles)),
            kcycles(Some(d.cycles)),
            three(&|r| r.stack_bytes.to_string()),
            k.code_bytes,
            k.published_reference.as_deref().unwrap_or("–"),
            if published {
                three(&|r| kcycles(r.published_cycles))
            } else {
                "–".into()
            },
            if published {
                three(&|r| r.published_stack_bytes.map(|x| x.to_string()).unwrap_or_default())
            } else {
                "–".into()
            },
            k.published_code_bytes.map(|x| x.to_string()).unwrap_or("–".into()),
            if published {
                three(&|r| ratio(r.cycles, r.published_cycles))
            } else {
                "–".into()
            },
        );
    }
    s.push_str("\n### Published KEM table (embedded in the xtask)\n\n");
    s.push_str(
        "| scheme, variant | keygen k | encaps k | decaps k | stack K/E/D | code B |\n|---|---:|---:|---:|---|---:|\n",
    );
    for r in published::KEM_TABLE {
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} | {:.1} | {}/{}/{} | {} |",
            r.name, r.kcycles[0], r.kcycles[1], r.kcycles[2], r.stack[0], r.stack[1], r.stack[2], r.code
        );
    }
    s.push('\n');
    s
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A horizontal bar chart, ours vs published, of every record with a published figure.
fn svg_chart(records: &[Record]) -> String {
    // The KEM-MQTT handshakes (tens to hundreds of M cycles) have their own table.
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.published_cycles.is_some() && r.scheme != MQTT_SCHEME)
        .collect();
    // NTT operations and KEM operations differ by 100×: each has its own scale.
    let section_max = |kem: bool| {
        rows.iter()
            .filter(|r| (r.scheme != SCHEME) == kem)
            .map(|r| r.cycles.max(r.published_cycles.unwrap_or(0)))
            .max()
            .unwrap_or(1)
            .max(1) as f64
    };
    let (ntt_max, kem_max) = (section_max(false), section_max(true));
    let (label_w, bar_w, row_h, top) = (360.0, 560.0, 30.0, 40.0);
    let height = top + row_h * rows.len() as f64 + 20.0;
    let width = label_w + bar_w + 120.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <!-- Generated by cargo xtask; do not edit. -->\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"18\" font-size=\"14\">k-cycles, ours (blue) vs published (grey); NTT and KEM rows scaled separately</text>\n"
    );
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let max = if r.scheme == SCHEME { ntt_max } else { kem_max };
        let ours = r.cycles as f64 / max * bar_w;
        let theirs = r.published_cycles.unwrap_or(0) as f64 / max * bar_w;
        let label = if r.scheme == SCHEME {
            xml_escape(&format!("{} {}.{}", r.mcu, r.variant, r.operation))
        } else {
            xml_escape(&format!("{} {}/{}.{}", r.mcu, r.scheme, r.variant, r.operation))
        };
        let _ = write!(
            s,
            "<text x=\"{x}\" y=\"{ty}\" text-anchor=\"end\">{label}</text>\n\
             <rect x=\"{lx}\" y=\"{y}\" width=\"{ours:.1}\" height=\"11\" fill=\"#3366cc\"/>\n\
             <text x=\"{ox:.1}\" y=\"{oy}\" font-size=\"10\">{ok:.1}</text>\n\
             <rect x=\"{lx}\" y=\"{y2}\" width=\"{theirs:.1}\" height=\"11\" fill=\"#999999\"/>\n\
             <text x=\"{px:.1}\" y=\"{py}\" font-size=\"10\">{pk:.1}</text>\n",
            x = label_w - 8.0,
            ty = y + 16.0,
            lx = label_w,
            ox = label_w + ours + 4.0,
            oy = y + 10.0,
            ok = r.cycles as f64 / 1000.0,
            y2 = y + 12.0,
            px = label_w + theirs + 4.0,
            py = y + 22.0,
            pk = r.published_cycles.unwrap_or(0) as f64 / 1000.0,
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: &str, cycles: u64, published: Option<u64>) -> Record {
        Record {
            mcu: "atmega1284p".into(),
            scheme: SCHEME.into(),
            variant: "Kyber".into(),
            operation: op.into(),
            cycles,
            stack_bytes: 10,
            stack_bytes_painted: Some(10),
            code_bytes: 100,
            toolchain: "t".into(),
            git_revision: "r".into(),
            simulator: "s".into(),
            published_cycles: published,
            published_reference: published.map(|_| "ref".into()),
            published_stack_bytes: None,
            published_code_bytes: None,
            flight_bytes: None,
        }
    }

    #[test]
    fn reports_render() {
        let rs = [rec("forward", 50_000, Some(58_100)), rec("base_mul_acc", 1000, None)];
        let t = markdown_table(&rs);
        assert!(
            t.contains("| Kyber.forward | 50000 | 50.0 | 10 | 100 | 58.1 | 0.86 |"),
            "{t}"
        );
        let svg = svg_chart(&rs);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<rect").count(), 1 + 2);
        let md = docs_markdown(&rs);
        assert!(md.contains("Do not edit") && md.contains("## atmega1284p"));
        let json = serde_json::to_string(&rs).unwrap();
        assert_eq!(serde_json::from_str::<Vec<Record>>(&json).unwrap(), rs);
    }
}
