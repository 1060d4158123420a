//! `cargo xtask bench`: cycles, stack and code size of every firmware operation
//! in simavr, beside the published figures; JSON results and generated docs.

use std::time::Instant;

use avr_wire::frame::{EMPTY_WINDOW, OP_EMPTY};
use avr_wire::kem::{kem_op_id, KemOp};
use avr_wire::rings::{op_id, Ring};
use kem_registry::Kem;

use crate::build::avr::{self, CallGraph};
use crate::measure::simtest;
use crate::opts::Rng;
use crate::progress::Progress;
use crate::report::published;
use crate::report::records::{save, Record, APP_SCHEME, MQTT_SCHEME, SCHEME};
use crate::report::regenerate;
use crate::report::table::markdown_table;
use crate::run::device::{encode, Device};
use crate::run::kems as kemsim;
use crate::target;

/// Runs `op` on `payload` and returns (cycles including the empty window's,
/// stack, painted stack); see [`Device::measure_window`].
fn measure(dev: &mut Device, id: u8, payload: &[u8]) -> Result<(u64, u32, u32), String> {
    let ((), w) = dev.measure_window(id, |d| d.call(id, payload).map(drop))?;
    let painted = dev.painted_stack()?;
    Ok((w.cycles, w.stack, painted))
}

/// Context shared by every benchmark of one run.
struct Ctx {
    mcu: target::Mcu,
    toolchain: String,
    revision: String,
    simulator: String,
    /// A board on a serial port (path, baud) instead of simavr.
    board: Option<(String, u32)>,
}

impl Ctx {
    /// The MCU as the records name it: a board's rows apart from the simulator's.
    fn label(&self) -> String {
        match self.board {
            Some(_) => format!("{}-board", self.mcu.name),
            None => self.mcu.name.into(),
        }
    }

    /// The firmware `elf` in simavr, or the board (which must run that image).
    fn device(&self, elf: &std::path::Path) -> Result<Device, String> {
        match &self.board {
            Some((path, baud)) => Device::open_board(path, *baud, BOARD_TIMEOUT),
            None => Device::open(elf, self.mcu.name),
        }
    }

    fn record(&self, scheme: &str, variant: &str, operation: &str) -> Record {
        Record {
            toolchain: self.toolchain.clone(),
            git_revision: self.revision.clone(),
            simulator: self.simulator.clone(),
            ..Record::unmeasured(&self.label(), scheme, variant, operation)
        }
    }
}

/// The cost of an empty window (the fewest cycles of three): subtracted from
/// every measurement.
fn empty_window(dev: &mut Device) -> Result<u64, String> {
    let mut empty = u64::MAX;
    for _ in 0..3 {
        let ((), w) = dev.measure_window(EMPTY_WINDOW, |d| d.call(OP_EMPTY, &[]).map(drop))?;
        empty = empty.min(w.cycles);
    }
    if !dev.is_board() {
        eprintln!(
            "xtask: on-chip timers: every window's count is its marker count + {} cycles (checked per operation)",
            dev.timer_offset
        );
    }
    Ok(empty)
}

/// Options of `cargo xtask bench`.
#[derive(clap::Parser, Debug)]
pub struct BenchArgs {
    /// The MCU (atmega1284p in simavr; atmega4808: which KEMs and KEM-MQTT
    /// suites fit, run in yasimavr, recorded in benchmarks/atmega4808/*.md)
    #[arg(long, default_value = "atmega1284p", value_parser = target::mcu)]
    pub mcu: target::Mcu,
    /// Only operations whose name contains this text (e.g. kyber512-r3, ntt, kem-mqtt)
    #[arg(long, default_value = "")]
    pub filter: String,
    /// Only this KEM: a scheme of the registry (all its variants and
    /// suites, e.g. ml-kem-768) or one variant (e.g. ctru-light-sha3/kred2x)
    #[arg(long, value_parser = crate::target::kem_selector, conflicts_with = "filter")]
    pub kem: Option<String>,
    /// Use the images already built
    #[arg(long)]
    pub no_build: bool,
    /// Run on a board on this serial port instead of simavr (flashed with
    /// `--image`, e.g. by `cargo xtask flash`); cycles by its on-chip timers
    #[arg(long, value_name = "PORT", requires = "image")]
    pub device: Option<String>,
    /// The image the board runs (with --device): rings, a KEM image
    /// (kyber512-r3, ml-kem-512, lightsaber, ctru-…) or a sensor image (mqtt-…)
    #[arg(long, requires = "device", value_parser = crate::target::image_name)]
    pub image: Option<String>,
    /// The board's UART speed (default: what the firmware sets at 20 MHz,
    /// 2,500,000 on the ATmega1284p, 1,250,000 on the ATmega4808)
    #[arg(long, requires = "device")]
    pub baud: Option<u32>,
}

/// How long a board may take to answer one request (the slowest operation
/// included: ~50 M cycles at 20 MHz is 2.5 s).
const BOARD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The UART speed the firmware sets at 20 MHz (avr-harness `Uart::init`).
pub fn default_baud(mcu: target::Mcu) -> u32 {
    if mcu.simulated {
        2_500_000
    } else {
        1_250_000
    }
}

/// `cargo xtask bench [--mcu M] [--filter S] [--no-build]`.
pub fn run(o: &BenchArgs) -> Result<(), String> {
    let mcu = o.mcu;
    let filter = target::selection(&o.kem, &o.filter);
    let no_build = o.no_build;
    if let (Some(port), Some(image)) = (&o.device, &o.image) {
        let baud = o.baud.unwrap_or(default_baud(mcu));
        let (records, _) = bench_image(&board_ctx(mcu, port, baud), image, &filter, no_build)?;
        let label = format!("{}-board", mcu.name);
        let mut schemes: Vec<&str> = records.iter().map(|r| r.scheme.as_str()).collect();
        schemes.dedup();
        for scheme in schemes {
            let rs: Vec<Record> = records.iter().filter(|r| r.scheme == scheme).cloned().collect();
            save(&label, scheme, &rs, true)?;
        }
        print!("{}", markdown_table(&records));
        return regenerate();
    }
    if !mcu.simulated {
        // No cycle-accurate model (simavr has no megaAVR-0): what fits, run in
        // yasimavr; recorded only by an unfiltered run (a filtered one would
        // replace the tables with a part of them).
        let record = filter.is_empty();
        // `--filter kem-mqtt-app[/SUITE]`: only the application images (all
        // of them recorded; one suite's only run).
        if !filter.starts_with(APP_SCHEME) {
            crate::measure::mega0::kat(mcu, &filter, no_build, false, record)?;
            crate::measure::mega0::primitives(mcu, &filter, no_build, record)?;
            crate::mqtt::handshake::mega0(mcu, &target::Suites::new(None, &filter), no_build, record, false)?;
        }
        if filter.is_empty() || filter.starts_with(APP_SCHEME) {
            crate::mqtt::handshake::app_fit(
                mcu,
                &target::Suites::new(None, &filter),
                record || filter == APP_SCHEME,
                false,
            )?;
        }
        return regenerate();
    }
    let ctx = sim_ctx(mcu);
    let start = Instant::now();
    let mut simulated = 0;
    let mut all = Vec::new();
    // What the filter selects, decided up front so progress can count it.
    let any_ring =
        avr_wire::rings::ops().any(|(r, k)| format!("{}.{}", r.name(), k.name()).to_lowercase().contains(&filter));
    // The ring operations in both table placements.
    let ring_images: Vec<target::Image> = [target::Image::rings(), target::Image::rings().sram_tables()]
        .into_iter()
        .filter(|i| any_ring && target::runnable(mcu, i, no_build))
        .collect();
    let kem_images = target::kem_images_matching(mcu, &filter, no_build);
    // The default run measures the two suites issue #8 compares (the others
    // with `--filter kem-mqtt`): each image is a build of its own.
    let mqtt_images: Vec<target::Image> = crate::run::sensor::images(mcu, &target::Suites::new(None, &filter))?
        .into_iter()
        .filter(|i| target::runnable(mcu, i, no_build))
        .filter(|i| !filter.is_empty() || MQTT_DEFAULT_IMAGES.contains(&i.name.as_str()))
        .collect();
    let primitives_selected = avr_wire::primitives::PRIMITIVES
        .iter()
        .any(|p| p.name.contains(&filter) || kemsim::PRIMITIVES_SCHEME.contains(&filter))
        && target::runnable(mcu, &target::Image::primitives(), no_build);
    // The sensor application: the same two suites by default, every suite with a filter.
    let app_suites: Vec<kem_mqtt::Suite> = kem_mqtt::Suite::ALL
        .into_iter()
        .filter(|s| format!("{APP_SCHEME}/{}", s.name()).contains(&filter))
        .filter(|s| {
            !filter.is_empty()
                || MQTT_DEFAULT_IMAGES.contains(&target::Image::mqtt(s.kem(), s.is_hybrid()).name.as_str())
        })
        .collect();
    let steps = ring_images.len() as u64
        + u64::from(primitives_selected)
        + kem_images.len() as u64
        + mqtt_images.len() as u64
        + app_suites.len() as u64;
    let mut progress = Progress::new("bench", steps);
    let mut ring_records = Vec::new();
    for image in &ring_images {
        progress.step(&format!("{}: build, then the 25 ring operations", image.name));
        let (records, cycles) = bench_rings(&ctx, image, &filter, no_build)?;
        simulated += cycles;
        ring_records.extend(records);
    }
    if !ring_records.is_empty() {
        save(
            mcu.name,
            SCHEME,
            &ring_records,
            !filter.is_empty() || ring_images.len() < 2,
        )?;
        all.extend(ring_records);
    }
    if primitives_selected {
        progress.step("primitives: build, then Keccak-f[1600], Ascon-p[12], X25519");
        let (records, cycles) = bench_primitives(&ctx, &filter, no_build)?;
        save(mcu.name, kemsim::PRIMITIVES_SCHEME, &records, !filter.is_empty())?;
        simulated += cycles;
        all.extend(records);
    }
    for (image, kems) in kem_images {
        let names: Vec<&str> = kems.iter().map(|k| k.name()).collect();
        progress.step(&format!("{}: build, then {}", image.name, names.join(", ")));
        let (records, cycles) = bench_kems(&ctx, &image, &kems, no_build)?;
        let mut schemes: Vec<&str> = kems.iter().map(|k| k.scheme().name()).collect();
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
    let mut app_records = Vec::new();
    for suite in app_suites {
        progress.step(&format!(
            "the sensor application of {}: build, then a session",
            suite.name()
        ));
        let (records, cycles) = bench_app(&ctx, suite, no_build)?;
        simulated += cycles;
        app_records.extend(records);
    }
    if !app_records.is_empty() {
        save(mcu.name, APP_SCHEME, &app_records, true)?;
        all.extend(app_records);
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

fn sim_ctx(mcu: target::Mcu) -> Ctx {
    Ctx {
        mcu,
        toolchain: crate::report::records::toolchain(),
        revision: crate::opts::git_revision(),
        simulator: format!(
            "simavr {} @ {} MHz (libsimavr, avr-sim)",
            mcu.name,
            avr_sim::DEFAULT_FREQUENCY / 1_000_000
        ),
        board: None,
    }
}

fn board_ctx(mcu: target::Mcu, port: &str, baud: u32) -> Ctx {
    Ctx {
        simulator: format!(
            "hardware: a {} board on {port} at {baud} Bd; cycles by its on-chip timers",
            mcu.name
        ),
        board: Some((port.to_string(), baud)),
        ..sim_ctx(mcu)
    }
}

/// An image `bench` measures, by name.
enum Named {
    Rings(target::Image),
    Primitives,
    Kems(target::Image, Vec<Kem>),
    Sensor(target::Image),
}

impl Named {
    /// The image `name` (as `build-avr --image` and `flash` name them) and
    /// what its benchmark measures.
    fn find(mcu: target::Mcu, name: &str) -> Result<Named, String> {
        let images = target::images(mcu, name)?;
        let [image] = images.as_slice() else {
            return Err(format!(
                "--image {name} names {} images: one runs on a board",
                images.len()
            ));
        };
        if image.features.contains(&"rings") {
            return Ok(Named::Rings(image.clone()));
        }
        if image.name == target::Image::primitives().name {
            return Ok(Named::Primitives);
        }
        if !crate::run::sensor::suites_of(image).is_empty() {
            return Ok(Named::Sensor(crate::run::sensor::with_keys(mcu, image.clone())?));
        }
        // A group's image serves its KEMs, a KEM's image that one.
        let base = image.name.trim_end_matches("-sram-tables");
        let kems: Vec<Kem> = Kem::ALL
            .into_iter()
            .filter(|k| target::Image::kem(*k).name == base || target::Image::group(k.group()).name == base)
            .collect();
        match kems.is_empty() {
            false => Ok(Named::Kems(image.clone(), kems)),
            true => Err(format!("`{name}` is no image `bench` measures")),
        }
    }

    fn image(&self) -> target::Image {
        match self {
            Named::Rings(i) => i.clone(),
            Named::Primitives => target::Image::primitives(),
            Named::Kems(i, _) | Named::Sensor(i) => i.clone(),
        }
    }
}

/// The benchmark of one image by name (`rings`, a KEM image, a sensor
/// image), as `bench` runs it: on the board of `ctx` if it has one.
fn bench_image(ctx: &Ctx, name: &str, filter: &str, no_build: bool) -> Result<(Vec<Record>, u64), String> {
    match Named::find(ctx.mcu, name)? {
        Named::Rings(image) => bench_rings(ctx, &image, filter, no_build),
        Named::Primitives => bench_primitives(ctx, filter, no_build),
        Named::Kems(image, kems) => {
            let kems: Vec<Kem> = kems
                .into_iter()
                .filter(|k| k.name().to_lowercase().contains(filter))
                .collect();
            bench_kems(ctx, &image, &kems, no_build)
        }
        Named::Sensor(image) => bench_mqtt(ctx, &[image], filter, no_build),
    }
}

/// Options of `cargo xtask sim-pty`.
#[derive(clap::Parser, Debug)]
pub struct SimPtyArgs {
    /// The image the simulated ATmega1284p runs (rings, a KEM image, a sensor image)
    #[arg(long, value_parser = crate::target::image_name)]
    pub image: String,
    /// Use the image already built
    #[arg(long)]
    pub no_build: bool,
}

/// `cargo xtask sim-pty --image I [--no-build]`: simavr runs the image
/// behind a pty until the firmware stops (`OP_EXIT`, which `bench --device`
/// sends at its end) or the command is interrupted.
pub fn sim_pty(o: &SimPtyArgs) -> Result<(), String> {
    let mcu = target::mcu("atmega1284p")?;
    let elf = avr::image_elf(mcu, &Named::find(mcu, &o.image)?.image(), o.no_build)?;
    let pty = crate::run::pty::SimOnPty::start(&elf, mcu.name)?;
    println!(
        "the simulated {} runs `{}` on {} (at any baud rate); Ctrl-C stops it",
        mcu.name,
        o.image,
        pty.path()
    );
    pty.wait()
}

/// CI: Keccak-f\[1600\], Ascon-p\[12\] and X25519 (the `primitives` image)
/// in simavr against the host's references (RustCrypto's portable Keccak
/// and Ascon, x25519-dalek), nothing recorded.
pub fn primitives_check() -> Result<(), String> {
    let (records, _) = bench_primitives(&sim_ctx(target::mcu("atmega1284p")?), "", false)?;
    for r in &records {
        println!(
            "{}: {} cycles, equal to the host's output on 2 random inputs",
            r.operation, r.cycles
        );
    }
    Ok(())
}

/// CI: `bench --device` against the simulated ATmega1284p behind a pty
/// (`pty::SimOnPty`), for each of `images` (built): every row must equal
/// the simulator's own run: the timers' cycles (minus the empty window's)
/// the markers', the painted stack the painted stack. The board path runs
/// the serial code a real board gets.
pub fn device_check(images: &[&str]) -> Result<(), String> {
    let mcu = target::mcu("atmega1284p")?;
    for &name in images {
        let elf = avr::image_elf(mcu, &Named::find(mcu, name)?.image(), true)?;
        let (simulated, _) = bench_image(&sim_ctx(mcu), name, "", true)?;
        let pty = crate::run::pty::SimOnPty::start(&elf, mcu.name)?;
        let board = bench_image(&board_ctx(mcu, pty.path(), default_baud(mcu)), name, "", true);
        pty.finish()?;
        let (board, _) = board?;
        if board.len() != simulated.len() {
            return Err(format!(
                "{name}: {} rows over the pty, {} in simavr",
                board.len(),
                simulated.len()
            ));
        }
        for (b, s) in board.iter().zip(&simulated) {
            let what = format!("{name}: {} {} {}", s.scheme, s.variant, s.operation);
            if (&b.scheme, &b.variant, &b.operation) != (&s.scheme, &s.variant, &s.operation) {
                return Err(format!(
                    "{what}: the pty run measured {} {} instead",
                    b.variant, b.operation
                ));
            }
            if b.cycles != s.cycles || b.stack_bytes_painted != s.stack_bytes_painted {
                return Err(format!(
                    "{what}: {} cycles / {:?} B painted over the pty, {} / {:?} in simavr",
                    b.cycles, b.stack_bytes_painted, s.cycles, s.stack_bytes_painted
                ));
            }
        }
        println!(
            "{name}: {} operations over a serial port (pty) = simavr, cycle for cycle",
            board.len()
        );
    }
    Ok(())
}

/// Keccak-f\[1600\], Ascon-p\[12\] and X25519 (the `primitives` image): two
/// random inputs each, output checked against the host's reference.
fn bench_primitives(ctx: &Ctx, filter: &str, no_build: bool) -> Result<(Vec<Record>, u64), String> {
    let mcu = ctx.mcu;
    let elf = avr::image_elf(mcu, &target::Image::primitives(), no_build)?;
    let graph = CallGraph::load(&elf)?;
    let mut dev = ctx.device(&elf)?;
    let empty = empty_window(&mut dev)?;
    let mut rng = Rng::new(0x5052_494D);
    let mut records = Vec::new();
    for p in avr_wire::primitives::PRIMITIVES {
        if !p.name.contains(filter) && !kemsim::PRIMITIVES_SCHEME.contains(filter) {
            continue;
        }
        let mut runs = Vec::new();
        for _ in 0..2 {
            let input: Vec<u8> = (0..p.request_len).map(|_| rng.next_u64() as u8).collect();
            let (reply, w) = dev.measure_window(p.id, |d| d.call(p.id, &input))?;
            if Some(&reply) != kemsim::primitive_reference(p.id, &input).as_ref() {
                return Err(format!(
                    "{}: the AVR's output differs from the host's reference",
                    p.name
                ));
            }
            runs.push((w.cycles, w.stack, dev.painted_stack()?));
        }
        if runs[0].0 != runs[1].0 {
            eprintln!(
                "xtask: warning: {} took {} and {} cycles on two inputs",
                p.name, runs[0].0, runs[1].0
            );
        }
        // The code that ran inside the window (the profile), on a board the handler's reach.
        dev.set_profiling(true);
        let input = vec![0u8; p.request_len as usize];
        dev.measure_window(p.id, |d| d.call(p.id, &input))?;
        let profile = dev.take_profile();
        dev.set_profiling(false);
        let executed = graph.executed(&profile);
        let code = if executed.is_empty() {
            let handler = p.name.split('-').next().unwrap_or(p.name);
            graph.find("primitives", handler).map_or(0, |f| graph.reachable_size(f))
        } else {
            graph.reachable_size_union(&executed)
        };
        let mut r = ctx.record(kemsim::PRIMITIVES_SCHEME, "avr-asm", p.name);
        r.cycles = runs.iter().map(|r| r.0).max().unwrap_or(0) - empty;
        r.stack_bytes = runs.iter().map(|r| r.1).max().unwrap_or(0);
        r.stack_bytes_painted = Some(runs.iter().map(|r| r.2).max().unwrap_or(0));
        r.code_bytes = code;
        if let Some((cycles, reference)) = published::primitive(p.name) {
            r.published_cycles = Some(cycles);
            r.published_reference = Some(reference.into());
        }
        records.push(r);
    }
    let simulated = dev.cycle();
    dev.close()?;
    Ok((records, simulated))
}

/// The 25 ring operations of the `rings` image.
fn bench_rings(ctx: &Ctx, image: &target::Image, filter: &str, no_build: bool) -> Result<(Vec<Record>, u64), String> {
    let mcu = ctx.mcu;
    let elf = avr::image_elf(mcu, image, no_build)?;
    let tables = published::Tables::from_name(Some(image.tables()));
    let graph = CallGraph::load(&elf)?;
    let mut dev = ctx.device(&elf)?;
    let empty = empty_window(&mut dev)?;
    let mut rng = Rng::new(0xBE_4C4);
    let mut records = Vec::new();
    for (ring, kind) in avr_wire::rings::ops() {
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
        let published = published::cycles(ring, kind, tables);
        let mut r = ctx.record(SCHEME, ring.name(), kind.name());
        r.tables = Some(image.tables().into());
        r.cycles = runs.iter().map(|r| r.0).max().unwrap_or(0) - empty;
        r.stack_bytes = runs.iter().map(|r| r.1).max().unwrap_or(0);
        r.stack_bytes_painted = Some(runs.iter().map(|r| r.2).max().unwrap_or(0));
        r.code_bytes = code;
        r.published_cycles = published;
        r.published_reference = published.and_then(|_| published::label(ring, tables));
        records.push(r);
    }
    let simulated = dev.cycle();
    dev.close()?;
    Ok((records, simulated))
}

/// How often the window of `profile` entered Keccak-f\[1600\] and
/// Ascon-p\[12\] (the execution count of each assembly routine's first
/// instruction; KEMs call Ascon with 12 rounds only): with the permutations'
/// own cycle counts (scheme `primitives`) the report's hashing share.
/// `None` without a profile (a board).
fn permutation_calls(graph: &CallGraph, profile: &[u32]) -> Option<[u64; 2]> {
    if profile.is_empty() {
        return None;
    }
    Some(["keccak_f1600_avr", "ascon_permute_avr"].map(|f| graph.entries(profile, f)))
}

/// The KEM-MQTT images a filter-less `bench` measures.
const MQTT_DEFAULT_IMAGES: &[&str] = &["mqtt-ctru-light-ascon-x25519", "mqtt-ml-kem-512-x25519"];

/// The sensor's KEM-MQTT/1 handshake of every suite the images serve: one
/// record per step (`start`, `finish`) and one for the whole sensor work
/// (`handshake`, beside the published KEM-MQTT figure).
fn bench_mqtt(ctx: &Ctx, images: &[target::Image], filter: &str, no_build: bool) -> Result<(Vec<Record>, u64), String> {
    let mcu = ctx.mcu;
    let mut records = Vec::new();
    let mut simulated = 0;
    for image in images {
        let elf = avr::image_elf(mcu, image, no_build)?;
        let graph = CallGraph::load(&elf)?;
        // The sensor's steps (`kem_mqtt_sensor::steps`): a renamed module or
        // function is an error here, not a code size of 0 in the tables.
        let roots = ["k_start", "k_finish", "k_finish_rest"]
            .iter()
            .map(|f| {
                graph
                    .find("steps", f)
                    .ok_or_else(|| format!("{}: no steps::{f} in {}", image.name, elf.display()))
            })
            .collect::<Result<Vec<&str>, String>>()?;
        let code = graph.reachable_size_union(&roots);
        let mut dev = ctx.device(&elf)?;
        let empty = empty_window(&mut dev)?;
        let mut failed_image = false;
        for suite in crate::run::sensor::suites_of(image) {
            if !format!("kem-mqtt/{}", suite.name()).contains(filter) {
                continue;
            }
            let r = match crate::run::sensor::run(&mut dev, suite, crate::run::sensor::SEED) {
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
            // The finish is two windows: two empty windows' cost.
            let finish_windows = avr_wire::mqtt::FINISH_OPS.len() as u64;
            let (a, b) = (r.start.cycles - empty, r.finish.cycles - finish_windows * empty);
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
                if let Some(level) = crate::target::Image::mqtt(suite.kem(), true).opt_level {
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

/// The sensor application of `suite` (`crate::mqtt::app_cost`): its handshake, a
/// reading sealed and a command opened, each with the deepest stack of the
/// step counted from the top of SRAM; code = the image's flash, static RAM
/// its .data + .bss.
fn bench_app(ctx: &Ctx, suite: kem_mqtt::Suite, no_build: bool) -> Result<(Vec<Record>, u64), String> {
    let (cost, elf) = crate::mqtt::app_cost::measure(ctx.mcu, suite, no_build)?;
    let size = avr::sizes(ctx.mcu, &elf)?;
    let mut records = Vec::new();
    for (op, cycles, stack) in [
        ("handshake", cost.handshake_cycles, cost.handshake_stack),
        ("seal reading", cost.seal_cycles, cost.seal_stack),
        ("open command", cost.open_cycles, cost.open_stack),
    ] {
        let mut rec = ctx.record(APP_SCHEME, suite.name(), op);
        rec.cycles = cycles;
        rec.stack_bytes = stack;
        rec.code_bytes = size.flash();
        rec.static_ram_bytes = Some(size.ram());
        if let Some(level) = target::Image::sensor_app(suite).opt_level {
            rec.toolchain = rec.toolchain.replace("opt-level 3", &format!("opt-level {level}"));
        }
        records.push(rec);
    }
    Ok((records, cost.total_cycles))
}

/// The peak stack (simavr's stack-pointer tracking) over keygen, encaps
/// and decaps of `kem` on its built `image` for `mcu`, two KAT records each
/// (`cargo xtask boards`).
pub fn kem_peak_stack(mcu: target::Mcu, image: &target::Image, kem: Kem) -> Result<u32, String> {
    let (records, _) = bench_kems(&sim_ctx(mcu), image, &[kem], true)?;
    records
        .iter()
        .map(|r| r.stack_bytes)
        .max()
        .ok_or_else(|| format!("{} measured nothing on {}", kem.name(), mcu.name))
}

/// Keygen, encaps and decaps of every KEM of `image` on two KAT records.
///
/// Cycles are the larger of the two runs minus the empty window; stack the
/// larger; code is the scheme's: every function reachable from its three
/// measured `k_*` functions, each counted once (the same on all three rows).
fn bench_kems(ctx: &Ctx, image: &target::Image, kems: &[Kem], no_build: bool) -> Result<(Vec<Record>, u64), String> {
    let mcu = ctx.mcu;
    let elf = avr::image_elf(mcu, image, no_build)?;
    let graph = CallGraph::load(&elf)?;
    let mut dev = ctx.device(&elf)?;
    let empty = empty_window(&mut dev)?;
    let tables = published::Tables::from_name(Some(image.tables()));
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
        let mut runs_of = Vec::new();
        let mut executed: Vec<String> = Vec::new();
        for op in KemOp::ALL {
            let id = kem_op_id(kem, op);
            let mut runs = Vec::new();
            let mut calls = None;
            for (i, c) in cases.iter().enumerate() {
                let r = &c.record;
                let payload = match op {
                    KemOp::Keygen => kemsim::request(kem, op, &[], &c.keygen_tape)?,
                    KemOp::Encaps => kemsim::request(kem, op, &r.pk, &c.encaps_tape)?,
                    KemOp::Decaps => kemsim::request(kem, op, &r.sk, &r.ct)?,
                };
                runs.push(measure(&mut dev, id, &payload)?);
                // Once more with the instruction profile: which functions ran
                // (the profile counts only inside the marker window).
                if i == 0 {
                    dev.set_profiling(true);
                    dev.call(id, &payload)?;
                    let profile = dev.take_profile();
                    dev.set_profiling(false);
                    dev.take_markers();
                    executed.extend(graph.executed(&profile).into_iter().map(String::from));
                    calls = permutation_calls(&graph, &profile);
                }
            }
            runs_of.push((op, runs, calls));
        }
        let mut all_roots: Vec<&str> = roots.clone();
        all_roots.extend(executed.iter().map(String::as_str));
        let code = graph.reachable_size_union(&all_roots);
        let statics = graph.scheme_statics();
        for (op, runs, calls) in runs_of {
            let mut rec = ctx.record(kem.scheme().name(), kem.variant(), op.name());
            rec.permutation_calls = calls;
            rec.tables = Some(image.tables().into());
            rec.cycles = runs.iter().map(|r| r.0).max().unwrap_or(0) - empty;
            rec.stack_bytes = runs.iter().map(|r| r.1).max().unwrap_or(0);
            rec.stack_bytes_painted = Some(runs.iter().map(|r| r.2).max().unwrap_or(0));
            rec.code_bytes = code;
            rec.static_ram_bytes = Some(statics);
            if let Some((c, st, cd)) = published::kem_figures(kem, op, tables) {
                rec.published_cycles = Some(c);
                rec.published_stack_bytes = Some(st);
                rec.published_code_bytes = cd;
                rec.published_reference = published::kem_reference(kem, tables).map(|r| r.name.to_string());
            }
            records.push(rec);
        }
    }
    let simulated = dev.cycle();
    dev.close()?;
    Ok((records, simulated))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_named_as_build_avr_and_flash_name_them() {
        let m = target::mcu("atmega1284p").unwrap();
        assert!(matches!(Named::find(m, "rings"), Ok(Named::Rings(_))));
        assert!(matches!(Named::find(m, "rings-sram-tables"), Ok(Named::Rings(i)) if i.tables() == "sram"));
        assert!(matches!(Named::find(m, "primitives"), Ok(Named::Primitives)));
        match Named::find(m, "ml-kem-512") {
            Ok(Named::Kems(i, k)) => assert_eq!((i.name.as_str(), k), ("ml-kem-512", vec![Kem::MlKem512])),
            _ => panic!("ml-kem-512"),
        }
        match Named::find(m, "kyber") {
            Ok(Named::Kems(_, k)) => assert_eq!(k, vec![Kem::MlKem512, Kem::Kyber512R3]),
            _ => panic!("kyber"),
        }
        assert!(matches!(
            Named::find(m, "mqtt-ctru-light-ascon-x25519"),
            Ok(Named::Sensor(_))
        ));
        assert!(Named::find(m, "all").is_err());
        assert!(Named::find(m, "kyber1024").is_err());
    }

    /// The CI step on its own (needs the built images).
    #[test]
    #[ignore]
    fn the_board_path_over_a_pty_equals_simavr() {
        super::device_check(&["rings", "mqtt-ml-kem-512-x25519"]).unwrap();
    }
}
