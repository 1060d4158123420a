//! The KEM-MQTT/1 sensor on the AVR: the firmware runs the sensor's two
//! steps (`firmware::mqtt`), the host plays the broker with `kem_mqtt`'s
//! `BrokerHandshake` and checks every flight and a record sealed under the new key.
//!
//! The host first runs the same handshake itself with a recording RNG: the
//! tape it drew makes the firmware's ClientHello reproducible byte for byte,
//! so the BrokerHello can be prepared in advance (which the batch-mode
//! yasimavr run of the ATmega4808 needs).

use avr_harness::protocol::OP_STACK;
use firmware::mqtt::{self as fw, Layout};
use kem_mqtt::testing::{broker_fixture, sensor_fixture, BrokerFixture};
use kem_mqtt::{BrokerHandshake, KemId, SensorHandshake, Suite, SuiteSet};

use crate::device::Device;
use crate::kems::{self, Measured, Recorder, TestRng};
use crate::opts::Rng;

/// The message layout of `kem`'s image.
pub fn layout(kem: KemId) -> Layout {
    Layout {
        pk: kem.pk_len(),
        sk: kem.sk_len(),
        ct: kem.ct_len(),
    }
}

/// One prepared handshake: the requests for the firmware and what its replies must be.
pub struct Case {
    /// The suite.
    pub suite: Suite,
    /// Request of `OP_START`.
    pub start_request: Vec<u8>,
    /// Request of `OP_FINISH`.
    pub finish_request: Vec<u8>,
    tape_len: usize,
    client_hello: Vec<u8>,
    broker_hello: Vec<u8>,
    client_finished: Vec<u8>,
    broker: kem_mqtt::AwaitClientFinished,
}

/// Flight sizes of a handshake, bytes: ClientHello, BrokerHello, ClientFinished, first record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flights {
    /// ClientHello.
    pub client_hello: usize,
    /// BrokerHello.
    pub broker_hello: usize,
    /// ClientFinished.
    pub client_finished: usize,
    /// The sealed record.
    pub record: usize,
}

fn fixtures(suite: Suite, seed: u64) -> (BrokerFixture, kem_mqtt::testing::SensorFixture) {
    let mut rng = TestRng(Rng::new(seed));
    let broker = broker_fixture(suite, &mut rng);
    let sensor = sensor_fixture(suite, &mut rng);
    let broker = broker.with_client(&sensor, SuiteSet::for_kem(suite.kem(), false));
    (broker, sensor)
}

/// Prepares the handshake of `suite` from `seed` (keys, tape, the broker's answer).
pub fn prepare(suite: Suite, seed: u64) -> Result<Case, String> {
    let kem = suite.kem();
    let l = layout(kem);
    let (broker, sensor) = fixtures(suite, seed);
    let creds = sensor.credentials(&broker);
    let err = |what: &str, e: kem_mqtt::Error| format!("{}: host {what}: {e}", suite.name());
    let mut rec = Recorder::new(TestRng(Rng::new(seed ^ 0x7A9E)));
    let mut ch = vec![0u8; kem_mqtt::MAX_CLIENT_HELLO_LEN];
    let (state, n1) = SensorHandshake::start(suite, creds, &mut rec, &mut ch).map_err(|e| err("start", e))?;
    ch.truncate(n1);
    let tape = rec.take();
    if tape.len() > fw::TAPE_LEN {
        return Err(format!(
            "{}: tape of {} bytes > {}",
            suite.name(),
            tape.len(),
            fw::TAPE_LEN
        ));
    }
    let mut brng = TestRng(Rng::new(seed ^ 0xB40C));
    let mut bh = vec![0u8; kem_mqtt::MAX_BROKER_HELLO_LEN];
    let (await_cf, n2) = BrokerHandshake::accept(&broker, &ch, &mut brng, &mut bh).map_err(|e| err("accept", e))?;
    bh.truncate(n2);
    let mut cf = [0u8; fw::CF_LEN];
    state
        .receive_broker_hello(&bh, &mut cf)
        .map_err(|e| err("receive_broker_hello", e))?;

    let mut start = vec![suite.id(), sensor.client_id().len() as u8];
    let mut id = sensor.client_id().to_vec();
    id.resize(fw::MAX_ID_LEN, 0);
    start.extend_from_slice(&id);
    start.extend_from_slice(creds.kem_sk);
    start.extend_from_slice(&sensor.x_sk);
    start.extend_from_slice(creds.broker_kem_pk);
    start.extend_from_slice(&broker.x_pk);
    let mut t = tape.clone();
    t.resize(fw::TAPE_LEN, 0);
    start.extend_from_slice(&t);
    let mut finish = (bh.len() as u16).to_le_bytes().to_vec();
    finish.extend_from_slice(&bh);
    finish.resize(l.finish_request_len(), 0);
    if start.len() != l.start_request_len() {
        return Err(format!("{}: start request of {} bytes", suite.name(), start.len()));
    }
    Ok(Case {
        suite,
        start_request: start,
        finish_request: finish,
        tape_len: tape.len(),
        client_hello: ch,
        broker_hello: bh,
        client_finished: cf.to_vec(),
        broker: await_cf,
    })
}

impl Case {
    /// Checks the firmware's two replies: the ClientHello (byte for byte the
    /// host's), the ClientFinished (accepted by the broker) and the record
    /// (opened by the broker's session). Returns the flight sizes.
    pub fn check(self, start_reply: &[u8], finish_reply: &[u8]) -> Result<Flights, String> {
        let name = self.suite.name();
        let l = layout(self.suite.kem());
        if start_reply.len() != l.start_reply_len() || finish_reply.len() != l.finish_reply_len() {
            return Err(format!(
                "{name}: reply lengths {} / {}",
                start_reply.len(),
                finish_reply.len()
            ));
        }
        if start_reply[0] != 0 {
            return Err(format!("{name}: start failed: {}", fw::error_name(start_reply[0])));
        }
        let used = u16::from_le_bytes([start_reply[1], start_reply[2]]) as usize;
        let n = u16::from_le_bytes([start_reply[3], start_reply[4]]) as usize;
        let ch = start_reply.get(5..5 + n).unwrap_or(&[]);
        if used != self.tape_len || ch != self.client_hello.as_slice() {
            return Err(format!(
                "{name}: the AVR ClientHello ({n} B, {used} tape bytes) differs from the host's ({} B, {} tape bytes)",
                self.client_hello.len(),
                self.tape_len
            ));
        }
        if finish_reply[0] != 0 {
            return Err(format!(
                "{name}: receive_broker_hello failed: {}",
                fw::error_name(finish_reply[0])
            ));
        }
        let cf = &finish_reply[1..1 + fw::CF_LEN];
        if cf != self.client_finished.as_slice() {
            return Err(format!("{name}: the AVR ClientFinished differs from the host's"));
        }
        let mut session = self
            .broker
            .receive_client_finished(cf)
            .map_err(|e| format!("{name}: the broker rejects the AVR ClientFinished: {e}"))?;
        let record = &finish_reply[1 + fw::CF_LEN..];
        let mut pt = [0u8; 64];
        let m = session
            .open(fw::TOPIC, record, &mut pt)
            .map_err(|e| format!("{name}: the broker cannot open the AVR record: {e}"))?;
        if &pt[..m] != fw::PAYLOAD {
            return Err(format!("{name}: the AVR record decrypts to something else"));
        }
        Ok(Flights {
            client_hello: self.client_hello.len(),
            broker_hello: self.broker_hello.len(),
            client_finished: cf.len(),
            record: record.len(),
        })
    }
}

/// One simulated handshake's measurements.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// `SensorHandshake::start` (cycles include the empty window).
    pub start: Measured,
    /// `receive_broker_hello`.
    pub finish: Measured,
    /// Painted-stack measures of the two.
    pub painted: [u32; 2],
    /// Flight sizes.
    pub flights: Flights,
}

fn painted(dev: &mut Device) -> Result<u32, String> {
    let p = dev.call(OP_STACK, &[])?;
    Ok(u16::from_le_bytes([p[0], p[1]]) as u32)
}

/// Runs the sensor's handshake of `suite` on `dev` (simavr) against the host broker.
pub fn run(dev: &mut Device, suite: Suite, seed: u64) -> Result<Run, String> {
    run_with(dev, suite, seed, false).map(|(r, _)| r)
}

/// The simulator's per-address instruction counts of `start` and `finish`.
type StepCounts = [Vec<u32>; 2];

/// [`run`], and with `trace` the per-address instruction counts of each step.
fn run_with(dev: &mut Device, suite: Suite, seed: u64, trace: bool) -> Result<(Run, Option<StepCounts>), String> {
    let case = prepare(suite, seed)?;
    dev.set_profiling(trace);
    dev.take_profile();
    let mut step = |op: u8, request: &[u8]| -> Result<(Vec<u8>, Measured, Vec<u32>, u32), String> {
        let (reply, m) = kems::measured(dev, op, |d| d.call(op, request))?;
        let counts = dev.take_profile();
        let painted = painted(dev)?;
        dev.take_profile();
        Ok((reply, m, counts, painted))
    };
    let steps =
        step(fw::OP_START, &case.start_request).and_then(|a| step(fw::OP_FINISH, &case.finish_request).map(|b| (a, b)));
    dev.set_profiling(false);
    let ((a, start, start_counts, pa), (b, finish, finish_counts, pb)) = steps?;
    let flights = case.check(&a, &b).map_err(|e| {
        format!(
            "{e} (stack start {} / finish {} B, painted {pa} / {pb} B)",
            start.stack, finish.stack
        )
    })?;
    let run = Run {
        start,
        finish,
        painted: [pa, pb],
        flights,
    };
    Ok((run, trace.then_some([start_counts, finish_counts])))
}

/// Where the sensor's `start` and `finish` spend their instructions, by
/// function (`cargo xtask mqtt --profile`).
fn profile(dev: &mut Device, elf: &std::path::Path, suite: Suite, seed: u64) -> Result<String, String> {
    let syms = crate::ct::symbols(elf)?;
    let case = prepare(suite, seed)?;
    let mut s = crate::ct::profile_top(dev, &syms, fw::OP_START, "start", &case.start_request)?;
    s += &crate::ct::profile_top(dev, &syms, fw::OP_FINISH, "finish", &case.finish_request)?;
    Ok(s)
}

/// The suites an image serves: the KEM's pure suite, and its hybrid one if the image has X25519.
pub fn suites_of(image: &crate::avr::Image) -> Vec<Suite> {
    let kem = KemId::ALL
        .into_iter()
        .find(|k| image.features.contains(&format!("mqtt-{}", k.name()).as_str()));
    let Some(kem) = kem else { return Vec::new() };
    let mut v = vec![Suite::new(kem, false)];
    if image.features.contains(&"mqtt-x25519") {
        v.push(Suite::new(kem, true));
    }
    v
}

/// The KEM-MQTT images `--filter` selects for `mcu`: on the ATmega1284p the
/// hybrid images (each serves its KEM's pure suite too); on the ATmega4808
/// (48 KB) also the pure ones, whose flash is the pure suite's own.
pub fn images(mcu: crate::avr::Mcu, filter: &str) -> Vec<crate::avr::Image> {
    let all = crate::avr::Image::all_mqtt();
    all.into_iter()
        .filter(|i| !mcu.simulated || i.features.contains(&"mqtt-x25519"))
        .filter(|i| {
            suites_of(i)
                .iter()
                .any(|s| format!("kem-mqtt/{}", s.name()).contains(filter))
        })
        .collect()
}

/// Writes the key fields of `image`'s measured handshake (its last suite,
/// [`SEED`]) where an image with provisioned keys is built from, and
/// returns that path.
pub fn provision(mcu: crate::avr::Mcu, image: &crate::avr::Image) -> Result<std::path::PathBuf, String> {
    let suite = *suites_of(image).last().ok_or("image without suite")?;
    let case = prepare(suite, SEED)?;
    let keys = case
        .start_request
        .get(1..1 + layout(suite.kem()).keys_len())
        .ok_or("start request shorter than its keys")?;
    let dir = image.target_dir(mcu);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("provisioned-keys.bin");
    // Rewritten only when it changes, so cargo does not rebuild for nothing.
    if std::fs::read(&path).ok().as_deref() != Some(keys) {
        std::fs::write(&path, keys).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(path)
}

/// Seed of the keys and randomness of the measured handshakes.
pub const SEED: u64 = 0x4D51_5454;

/// Options of `cargo xtask mqtt`.
#[derive(clap::Parser, Debug)]
pub struct MqttArgs {
    /// The MCU (atmega1284p in simavr; atmega4808: which suites fit, run in yasimavr)
    #[arg(long, default_value = "atmega1284p", value_parser = crate::avr::mcu)]
    pub mcu: crate::avr::Mcu,
    /// Only suites whose name contains this text (e.g. ctru-light, x25519)
    #[arg(long, default_value = "")]
    pub filter: String,
    /// Use the images already built
    #[arg(long)]
    pub no_build: bool,
    /// Print where start and finish spend their instructions, by function
    #[arg(long)]
    pub profile: bool,
    /// A selected suite that does not fit the MCU is a failure
    #[arg(long)]
    pub require_fit: bool,
    /// Run each suite with N keys and randomness; the cycles must not change
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub seeds: u64,
}

/// `cargo xtask mqtt [--mcu M] [--filter S] [--no-build] [--profile] [--require-fit] [--seeds N]`:
/// the sensor's handshake of every selected suite in the simulator against
/// the host broker. With `--seeds N`, each suite runs N times with other keys
/// and randomness, and its start and finish must take the same cycles and
/// run every instruction address the same number of times (X25519, the key
/// schedule, ML-KEM, Kyber, LightSaber); CTRU-Light suites are reported but
/// exempt: their key generation retries, publicly, when f is not
/// invertible.
pub fn cmd(o: &MqttArgs) -> Result<(), String> {
    let seeds = o.seeds;
    let mcu = o.mcu;
    let filter = o.filter.to_lowercase();
    let no_build = o.no_build;
    if !mcu.simulated {
        return mega0(mcu, &filter, no_build, false, o.require_fit);
    }
    let mut n = 0;
    println!(
        "| suite | start cycles | finish cycles | total | stack B start/finish (sim) | painted | CH/BH/CF/record B |"
    );
    println!("|---|---:|---:|---:|---|---|---|");
    for image in images(mcu, &filter)
        .into_iter()
        .filter(|i| crate::avr::runnable(mcu, i, no_build))
    {
        let elf = crate::simtest::image_elf(mcu, &image, no_build)?;
        let mut dev = Device::open(&elf, mcu.name)?;
        for suite in suites_of(&image) {
            if !format!("kem-mqtt/{}", suite.name()).contains(&filter) {
                continue;
            }
            let r = run(&mut dev, suite, SEED)?;
            if o.profile {
                // With --seeds, every seed's profile (to find what varies).
                for i in 0..seeds {
                    let seed = seed_number(i);
                    eprint!(
                        "{} (seed {seed:#x}): {}",
                        suite.name(),
                        profile(&mut dev, &elf, suite, seed)?
                    );
                }
            }
            if seeds > 1 {
                constant_over_seeds(&mut dev, &elf, suite, seeds)?;
            }
            let f = r.flights;
            println!(
                "| {} | {} | {} | {} | {}/{} | {}/{} | {}/{}/{}/{} |",
                suite.name(),
                r.start.cycles,
                r.finish.cycles,
                r.start.cycles + r.finish.cycles,
                r.start.stack,
                r.finish.stack,
                r.painted[0],
                r.painted[1],
                f.client_hello,
                f.broker_hello,
                f.client_finished,
                f.record
            );
            n += 1;
        }
        dev.close()?;
    }
    if n == 0 {
        return Err(format!("no KEM-MQTT suite matches --filter `{filter}`"));
    }
    println!("{n} passed, 0 failed");
    Ok(())
}

/// The `i`-th seed of `--seeds` (0: [`SEED`], the benchmarked one).
fn seed_number(i: u64) -> u64 {
    SEED.wrapping_add(i.wrapping_mul(0x9E37_79B9))
}

/// Runs `suite` with `seeds` seeds, each step with the simulator's
/// per-address instruction counts on; an error if a step's cycles or counts
/// differ between seeds where they must not (see [`cmd`]). Equal counts at
/// every address are stronger than equal cycles: a branch on a secret that
/// happens to take the same cycles both ways still shows. CTRU-Light's
/// `start` is exempt (its key generation retries publicly), its `finish`
/// is not.
fn constant_over_seeds(dev: &mut Device, elf: &std::path::Path, suite: Suite, seeds: u64) -> Result<(), String> {
    const STEPS: [&str; 2] = ["start", "finish"];
    let syms = crate::ct::symbols(elf)?;
    let retries = matches!(suite.kem(), KemId::CtruLightAscon | KemId::CtruLightSha3);
    let mut first: Option<StepCounts> = None;
    let mut cycles = [(u64::MAX, 0u64); 2];
    let mut differs: [Option<String>; 2] = [None, None];
    for i in 0..seeds {
        let (r, counts) = run_with(dev, suite, seed_number(i), true)?;
        let counts = counts.unwrap_or_default();
        for (range, c) in cycles.iter_mut().zip([r.start.cycles, r.finish.cycles]) {
            *range = (range.0.min(c), range.1.max(c));
        }
        let Some(reference) = &first else {
            first = Some(counts);
            continue;
        };
        for (step, ((a, b), d)) in reference.iter().zip(counts.iter()).zip(differs.iter_mut()).enumerate() {
            if let (Some(addr), None) = (crate::ct::first_difference(a, b), &d) {
                let w = addr as usize / 2;
                *d = Some(format!(
                    "{}: instruction at {addr:#x} ({}) ran {} times with seed 0, {} with seed {i}",
                    STEPS[step],
                    crate::ct::function_at(&syms, addr),
                    a.get(w).copied().unwrap_or(0),
                    b.get(w).copied().unwrap_or(0)
                ));
            }
        }
    }
    // Which steps must be constant: both, or only finish for CTRU-Light.
    let checked = if retries { 1..2 } else { 0..2 };
    let constant = |s: usize| cycles[s].0 == cycles[s].1 && differs[s].is_none();
    let ok = checked.clone().all(constant);
    eprintln!(
        "{}: {seeds} seeds: start {}..{} cycles, finish {}..{} cycles, per-address counts {}: {}",
        suite.name(),
        cycles[0].0,
        cycles[0].1,
        cycles[1].0,
        cycles[1].1,
        if differs.iter().all(Option::is_none) {
            "equal"
        } else {
            "differ"
        },
        match (ok, constant(0)) {
            (true, true) => "constant",
            (true, false) => "start varies (CTRU-Light key generation retries publicly); finish constant",
            (false, _) => "VARIES",
        }
    );
    for d in differs.iter().flatten() {
        eprintln!("  first difference: {d}");
    }
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{}: the sensor's execution depends on its keys or randomness",
            suite.name()
        ))
    }
}

/// The peak stack of `suite`'s sensor on the ATmega1284p, from its recorded
/// benchmark (`benchmarks/atmega1284p/kem-mqtt.json`), if there is one.
fn stack_need_1284p(suite: Suite) -> Option<u32> {
    let path = crate::bench::bench_dir().join("atmega1284p/kem-mqtt.json");
    let records = crate::bench::read_records(&path).ok()?;
    records
        .iter()
        .filter(|r| r.variant == suite.name() && (r.operation == "start" || r.operation == "finish"))
        .map(|r| r.stack_bytes)
        .max()
}

/// What the linker's refusal says, in numbers: flash (`region `text'
/// overflowed by N bytes`) and static RAM (`address A of … section `.bss'
/// is not within region `data'`).
fn link_overflow(err: &str, mcu: crate::avr::Mcu) -> String {
    let mut why = Vec::new();
    if let Some(n) = err
        .split("region `text' overflowed by ")
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
        // The 4808's SRAM starts at data address 0x802800 (linker view).
        let used = end.saturating_sub(0x80_2800);
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

/// The ATmega4808: every selected image (pure and hybrid) built; each whose
/// flash fits runs its suite (the hybrid image: the hybrid suite) in
/// yasimavr, handshake checked, painted stack read. Prints what fits with
/// the numbers; a crash or stack overflow is "does not fit", not a failure.
/// With `record`, the table also goes to `benchmarks/<mcu>/kem-mqtt-fit.md`.
/// With `require_fit`, a selected suite that does not fit is a failure (CI:
/// the CTRU-Light sensor must keep fitting the ATmega4808).
pub fn mega0(
    mcu: crate::avr::Mcu,
    filter: &str,
    no_build: bool,
    record: bool,
    require_fit: bool,
) -> Result<(), String> {
    let root = crate::util::workspace_root();
    let python = root.join(".venv/bin/python");
    let mut table = String::from(
        "| suite | image | flash B | static RAM B | handshake | painted stack start/finish B | cycles start/finish (yasimavr, approx.) | fits |\n\
         |---|---|---:|---:|---|---|---|---|\n",
    );
    let (mut passed, mut failed, mut selected) = (0u32, 0u32, 0u32);
    for image in images(mcu, filter) {
        selected += 1;
        let suite = *suites_of(&image).last().ok_or("image without suite")?;
        let built = if no_build {
            crate::avr::sizes(mcu, &image.elf(mcu))
        } else {
            crate::avr::compile(mcu, &image)
        };
        let b = match built {
            Ok(b) => b,
            // The linker refuses what exceeds the flash region (its message above says by how much).
            Err(e) => {
                eprintln!("xtask: {} does not link for {}: {e}", image.name, mcu.name);
                table.push_str(&format!(
                    "| {} | {} | – | – | not run | – | – | no: {} |\n",
                    suite.name(),
                    image.name,
                    link_overflow(&e, mcu)
                ));
                continue;
            }
        };
        let mut row = |verdict: &str, stack: &str, cycles: &str, fits: String| {
            table.push_str(&format!(
                "| {} | {} | {} | {} | {verdict} | {stack} | {cycles} | {fits} |\n",
                suite.name(),
                image.name,
                b.flash(),
                b.ram()
            ))
        };
        if b.flash() > mcu.flash {
            row(
                "not run",
                "–",
                "–",
                format!("no: flash {} B > {} B", b.flash(), mcu.flash),
            );
            continue;
        }
        if !python.exists() {
            return Err(format!("{} needs yasimavr (cargo xtask setup --yasimavr)", mcu.name));
        }
        let case = prepare(suite, SEED)?;
        let hex = |v: &[u8]| v.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let lines = format!(
            "{:02x} {}\n{OP_STACK:02x}\n{:02x} {}\n{OP_STACK:02x}\n",
            fw::OP_START,
            hex(&case.start_request),
            fw::OP_FINISH,
            hex(&case.finish_request)
        );
        let req = image.target_dir(mcu).join("mqtt-requests.txt");
        std::fs::write(&req, lines).map_err(|e| format!("cannot write {}: {e}", req.display()))?;
        eprintln!("xtask: {} on {} in yasimavr …", suite.name(), mcu.name);
        let out = std::process::Command::new(&python)
            .arg(root.join("firmware/avr/yasim_run.py"))
            .arg(&b.elf)
            .arg(&req)
            .output()
            .map_err(|e| format!("cannot run yasimavr: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let replies: Vec<(Vec<u8>, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let status = it.next()?;
                let body = it.next().unwrap_or("");
                let cycles = it.next().unwrap_or("").to_string();
                let bytes = (0..body.len() / 2)
                    .filter_map(|i| u8::from_str_radix(&body[2 * i..2 * i + 2], 16).ok())
                    .collect();
                (status == "00").then_some((bytes, cycles))
            })
            .collect();
        let stack = |i: usize| {
            replies
                .get(i)
                .filter(|(s, _)| s.len() == 2)
                .map(|(s, _)| u16::from_le_bytes([s[0], s[1]]) as u32)
        };
        let stacks = [stack(1), stack(3)];
        let overflow = stacks.contains(&Some(avr_harness::protocol::STACK_OVERFLOW as u32));
        let show = |s: Option<u32>| match s {
            Some(x) if x == avr_harness::protocol::STACK_OVERFLOW as u32 => "overflow".to_string(),
            Some(x) => x.to_string(),
            None => "–".into(),
        };
        let cyc = |i: usize| replies.get(i).map(|r| r.1.clone()).unwrap_or("–".into());
        let checked = match (replies.first(), replies.get(2)) {
            (Some(a), Some(c)) => case.check(&a.0, &c.0),
            _ => Err("no reply (crashed)".into()),
        };
        let peak = stacks.iter().flatten().copied().max().unwrap_or(0);
        let ok = checked.is_ok() && !overflow;
        // The painted measure cannot see a stack that ran through static
        // data; the 1284p run of the suite says what it needs.
        let need = stack_need_1284p(suite);
        let beyond = need.is_some_and(|n| b.ram() + n > mcu.sram);
        let fits = ok && b.ram() + peak <= mcu.sram;
        let verdict = match &checked {
            Ok(_) if overflow => "replies, but the stack overflowed into static data".to_string(),
            Ok(_) => "ok (flights, ClientFinished, record checked)".into(),
            Err(e) => e.clone(),
        };
        let note = if fits {
            format!("yes: {} + {peak} B of {} B SRAM", b.ram(), mcu.sram)
        } else {
            format!(
                "no: {} B static RAM leaves {} B for the stack{}",
                b.ram(),
                mcu.sram.saturating_sub(b.ram()),
                if checked.is_ok() && peak > 0 && !overflow {
                    format!(", {peak} B needed")
                } else if let (true, Some(n)) = (beyond, need) {
                    // The 1284p image may differ (LightSaber's key
                    // generation order): a reference, not this image's need.
                    format!("; the ATmega1284p image's run peaked at {n} B")
                } else {
                    // A failed run stops early: its stack says nothing of the need.
                    " (the run failed: see the handshake column)".to_string()
                }
            )
        };
        if ok {
            passed += 1;
        } else if !(overflow || replies.is_empty() || beyond) {
            // A wrong answer without a crash, an overflow or a known lack of
            // SRAM is a real failure.
            failed += 1;
        }
        row(
            &verdict,
            &format!("{}/{}", show(stacks[0]), show(stacks[1])),
            &format!("{}/{}", cyc(0), cyc(2)),
            note,
        );
    }
    print!("{table}");
    let legend = "(yasimavr, AVRe+ timings: cycles approximate and include the UART transfer; flash = text + data image + rodata. \
         The 4808 images keep the sensor's keys in flash (provisioned at build time: firmware feature \
         `mqtt-provisioned`), the ephemeral key in caller storage (`SensorHandshake::start_in`), process \
         the BrokerHello in place (`receive_broker_hello_in`) and use the compact X25519 field \
         (`fe25519_compact.S`, slower than the 1284p's unrolled one: squaring is a multiplication).)";
    println!("{legend}");
    if record {
        crate::bench::record_fit_table(mcu.name, "kem-mqtt-fit", &format!("{table}\n{legend}\n"))?;
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        return Err(format!("{failed} KEM-MQTT run(s) failed on {}", mcu.name));
    }
    if require_fit && passed < selected {
        return Err(format!(
            "{} of {selected} selected suite(s) do not fit {} (--require-fit)",
            selected - passed,
            mcu.name
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host side alone: the prepared requests have the firmware's
    /// lengths and the expected replies pass the check.
    #[test]
    fn prepared_case_checks_its_own_answers() {
        let suite = Suite::new(KemId::CtruLightAscon, false);
        let case = prepare(suite, 1).unwrap();
        let l = layout(suite.kem());
        assert_eq!(case.finish_request.len(), l.finish_request_len());
        let mut a = vec![0u8, case.tape_len as u8, 0];
        a.extend_from_slice(&(case.client_hello.len() as u16).to_le_bytes());
        a.extend_from_slice(&case.client_hello);
        a.resize(l.start_reply_len(), 0);
        // No record from a real session here: the check must stop at the record.
        let mut b = vec![0u8];
        b.extend_from_slice(&case.client_finished);
        b.resize(l.finish_reply_len(), 0);
        let e = case.check(&a, &b).unwrap_err();
        assert!(e.contains("cannot open the AVR record"), "{e}");
    }

    #[test]
    fn images_serve_their_suites() {
        let i = crate::avr::Image::mqtt(KemId::MlKem512, true);
        assert_eq!(i.name, "mqtt-ml-kem-512-x25519");
        assert_eq!(suites_of(&i).len(), 2);
        assert_eq!(suites_of(&crate::avr::Image::mqtt(KemId::LightSaber, false)).len(), 1);
    }
}
