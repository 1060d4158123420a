//! `cargo xtask mqtt`: the KEM-MQTT/1 sensor on the AVR (the handshake
//! driver is `crate::run::sensor`): the firmware runs the sensor's two
//! steps (`firmware::mqtt`), the host plays the broker with `kem_mqtt`'s
//! `BrokerHandshake` and checks every flight and a record sealed under the new key.
//! With `--broker`, the same two steps run against a real MQTT broker
//! instead (`crate::mqtt::live`: AUTH mode or topic mode).
//!
//! The host first runs the same handshake itself with a recording RNG: the
//! tape it drew makes the firmware's ClientHello reproducible byte for byte,
//! so the BrokerHello can be prepared in advance (which the batch-mode
//! yasimavr run of the ATmega4808 needs).

use crate::build::avr;
use avr_wire::mqtt as fw;
use kem_mqtt::Suite;

use crate::run::device::Device;
use crate::run::sensor;

/// Where the sensor's `start` and `finish` spend their instructions, by
/// function (`cargo xtask mqtt --profile`).
fn profile(dev: &mut Device, elf: &std::path::Path, suite: Suite, seed: u64) -> Result<String, String> {
    let syms = crate::run::symbols::symbols(elf)?;
    let case = sensor::prepare(suite, seed)?;
    let mut s = crate::run::symbols::profile_top(dev, &syms, fw::OP_START, "start", &case.start_request)?;
    let [head, rest] = &case.finish_requests;
    s += &crate::run::symbols::profile_top(dev, &syms, fw::OP_FINISH, "finish (first part)", head)?;
    s += &crate::run::symbols::profile_top(dev, &syms, fw::OP_FINISH_REST, "finish (rest)", rest)?;
    Ok(s)
}

/// Options of `cargo xtask mqtt`.
#[derive(clap::Parser, Debug)]
pub struct MqttArgs {
    /// The MCU (atmega1284p in simavr; atmega4808: which suites fit, run in yasimavr)
    #[arg(long, default_value = "atmega1284p", value_parser = crate::target::mcu)]
    pub mcu: crate::target::Mcu,
    /// Only suites whose name contains this text (e.g. ctru-light, x25519)
    #[arg(long, default_value = "")]
    pub filter: String,
    /// Only this suite, by name (e.g. ml-kem-768, ml-kem-768+x25519)
    #[arg(long, value_parser = crate::target::suite, conflicts_with = "filter")]
    pub suite: Option<kem_mqtt::Suite>,
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
    /// The KEMs read the sensor's keys through readers, as from a classic
    /// AVR's flash (`kem_common::KeyBytes::Reader`; the ATmega2560 sensor's
    /// path), here from the harness's copy of the keys a request carries.
    /// With every suite (no --filter, no --suite), each one runs again with
    /// its keys in slices, and the comparison is recorded for
    /// docs/benchmarks.md
    #[arg(long)]
    pub key_readers: bool,
    /// Run the sensor (simulated atmega1284p) against this real MQTT broker
    /// instead of the benchmark table; needs --key
    #[arg(long, value_name = "HOST:PORT", requires = "key", value_parser = broker_addr,
          conflicts_with_all = ["profile", "require_fit"])]
    pub broker: Option<kem_mqtt_host::addr::BrokerAddr>,
    /// The sensor key file (`kem-mqtt provision`) of the live run; its client
    /// id must be the one in the firmware's record topic (avr-1)
    #[arg(long, value_name = "FILE", requires = "broker")]
    pub key: Option<std::path::PathBuf>,
    /// How the live run's handshake travels: auth (MQTT v5 enhanced
    /// authentication, mosquitto with the KEM-MQTT plugin) or topic
    /// (kem-mqtt/hs/ID/… topics, a `kem-mqtt gateway` beside the broker)
    #[arg(long, value_enum, default_value = "auth")]
    pub mode: crate::mqtt::live::Mode,
}

/// Parses `--broker` (HOST, HOST:PORT or `[IPv6]:PORT`; port 1883 by default).
fn broker_addr(s: &str) -> Result<kem_mqtt_host::addr::BrokerAddr, String> {
    s.parse().map_err(|e: kem_mqtt_host::addr::AddrError| e.to_string())
}

/// `cargo xtask mqtt [--mcu M] [--filter S | --suite S] [--no-build] [--profile] [--require-fit] [--seeds N]`:
/// the sensor's handshake of every selected suite in the simulator against
/// the host broker. With `--broker HOST:PORT --key FILE [--mode auth|topic]`
/// instead: the key file's suite on the simulated ATmega1284p against a real
/// MQTT broker over TCP (`crate::mqtt::live`). With `--seeds N`, each suite runs N
/// times with other keys and randomness, and its start and finish must take the same cycles and
/// run every instruction address the same number of times (X25519, the key
/// schedule, ML-KEM, Kyber, LightSaber); CTRU-Light suites are reported but
/// exempt: their key generation retries, publicly, when f is not
/// invertible.
pub fn cmd(o: &MqttArgs) -> Result<(), String> {
    let seeds = o.seeds;
    let mcu = o.mcu;
    let suites = crate::target::Suites::new(o.suite, &o.filter);
    let no_build = o.no_build;
    if let Some(broker) = &o.broker {
        let key = o
            .key
            .as_deref()
            .ok_or("--broker needs --key FILE (a `kem-mqtt provision` sensor key file)")?;
        return crate::mqtt::live::cmd(mcu, broker, key, o.mode, no_build);
    }
    if !mcu.simulated {
        return mega0(mcu, &suites, no_build, false, o.require_fit);
    }
    let totals = handshakes(mcu, &suites, o.key_readers, no_build, seeds, o.profile)?;
    // Every suite through readers: what they cost, against the same
    // suites with their keys in slices (`docs/benchmarks.md`).
    if o.key_readers && o.suite.is_none() && o.filter.is_empty() {
        let slices = handshakes(mcu, &suites, false, no_build, 1, false)?;
        let table = key_readers_table(&slices, &totals);
        print!("{table}");
        crate::report::records::record_fit_table(mcu.name, crate::report::records::KEY_READERS_TABLE, &table)?;
    }
    Ok(())
}

/// The handshake of every suite of `suites` on the simulated `mcu` (its
/// keys through readers with `key_readers`), a row printed for each:
/// each suite's start + finish cycles.
fn handshakes(
    mcu: crate::target::Mcu,
    suites: &crate::target::Suites,
    key_readers: bool,
    no_build: bool,
    seeds: u64,
    with_profile: bool,
) -> Result<Vec<(Suite, u64)>, String> {
    let mut totals = Vec::new();
    println!(
        "| suite | start cycles | finish cycles | total | stack B start/finish (sim) | painted | CH/BH/CF/record B |"
    );
    println!("|---|---:|---:|---:|---|---|---|");
    for image in sensor::images_with(mcu, suites, key_readers)?
        .into_iter()
        .filter(|i| crate::target::runnable(mcu, i, no_build))
    {
        let elf = avr::image_elf(mcu, &image, no_build)?;
        let mut dev = Device::open(&elf, mcu.name)?;
        for suite in sensor::suites_of(&image) {
            if !suites.admits(crate::report::records::MQTT_SCHEME, suite) {
                continue;
            }
            let r = sensor::run(&mut dev, suite, sensor::SEED)?;
            if with_profile {
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
            totals.push((suite, r.start.cycles + r.finish.cycles));
        }
        dev.close()?;
    }
    if totals.is_empty() {
        return Err(format!("no KEM-MQTT suite matches {suites}"));
    }
    println!("{} passed, 0 failed", totals.len());
    Ok(totals)
}

/// The readers' cost, suite by suite: start + finish with the keys in
/// slices and through readers.
fn key_readers_table(slices: &[(Suite, u64)], readers: &[(Suite, u64)]) -> String {
    let mut t = String::from(
        "| suite | keys in slices: start + finish cycles | through readers | readers / slices |\n|---|---:|---:|---:|\n",
    );
    for (suite, with_readers) in readers {
        let Some((_, plain)) = slices.iter().find(|(s, _)| s == suite) else {
            continue;
        };
        t.push_str(&format!(
            "| {} | {plain} | {with_readers} | {:.3} |\n",
            suite.name(),
            *with_readers as f64 / *plain as f64
        ));
    }
    t
}

/// The `i`-th seed of `--seeds` (0: [`sensor::SEED`], the benchmarked one).
fn seed_number(i: u64) -> u64 {
    sensor::SEED.wrapping_add(i.wrapping_mul(0x9E37_79B9))
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
    let syms = crate::run::symbols::symbols(elf)?;
    let retries = suite.kem().keygen_retries();
    let mut first: Option<sensor::StepCounts> = None;
    let mut cycles = [(u64::MAX, 0u64); 2];
    let mut differs: [Option<String>; 2] = [None, None];
    for i in 0..seeds {
        let (r, counts) = sensor::run_with(dev, suite, seed_number(i), true)?;
        let counts = counts.unwrap_or_default();
        for (range, c) in cycles.iter_mut().zip([r.start.cycles, r.finish.cycles]) {
            *range = (range.0.min(c), range.1.max(c));
        }
        let Some(reference) = &first else {
            first = Some(counts);
            continue;
        };
        for (step, ((a, b), d)) in reference.iter().zip(counts.iter()).zip(differs.iter_mut()).enumerate() {
            if let (Some(addr), None) = (crate::run::symbols::first_difference(a, b), &d) {
                let w = addr as usize / 2;
                *d = Some(format!(
                    "{}: instruction at {addr:#x} ({}) ran {} times with seed 0, {} with seed {i}",
                    STEPS[step],
                    crate::run::symbols::function_at(&syms, addr),
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
pub fn stack_need_1284p(suite: Suite) -> Option<u32> {
    let path = crate::report::records::bench_dir().join("atmega1284p/kem-mqtt.json");
    let records = crate::report::records::read_records(&path).ok()?;
    records
        .iter()
        .filter(|r| r.variant == suite.name() && (r.operation == "start" || r.operation == "finish"))
        .map(|r| r.stack_bytes)
        .max()
}

/// The sensor application images of `suites` on `mcu`
/// (a megaAVR-0, in yasimavr): built with keys, their flash and static RAM,
/// whether they link, whether a session runs and the stack's painted peak
/// in it ([`crate::mqtt::app_cost::run_on_mega0`]), and so the SRAM they leave
/// spare. With `record`, the table goes
/// to `benchmarks/<mcu>/kem-mqtt-app-fit.md` and the images whose session
/// ran to `benchmarks/<mcu>/kem-mqtt-app.json` (operation `image`). With
/// `require_run`, a session that fails is an error.
pub fn app_fit(
    mcu: crate::target::Mcu,
    suites: &crate::target::Suites,
    record: bool,
    require_run: bool,
) -> Result<(), String> {
    let mut table = String::from(
        "| suite | image | flash B | static RAM B | stack peak B | SRAM spare B | links | in yasimavr (handshake, reading, command) |\n\
         |---|---|---:|---:|---:|---:|---|---|\n",
    );
    let mut records = Vec::new();
    let mut failed = Vec::new();
    for suite in kem_mqtt::Suite::ALL {
        if !suites.admits(crate::report::records::APP_SCHEME, suite) {
            continue;
        }
        let image = crate::target::Image::sensor_app(suite);
        let (secrets, registry, keys) = crate::run::sensor::provision_one(suite, "avr-1")?;
        let state = kem_mqtt_host::keys::BrokerState { secrets, registry };
        let provisioned = crate::run::sensor::provisioned_image(mcu, image.clone(), &keys)?;
        // Built even under --no-build: the keys are this run's.
        let built = avr::image_elf(mcu, &provisioned, false).and_then(|elf| avr::sizes(mcu, &elf));
        let row = match built {
            Ok(b) => {
                let ran = crate::mqtt::app_cost::run_on_mega0(mcu, suite, &b.elf, &state);
                let (stack, spare, said) = match &ran {
                    // The suites that run, as rows the report prices.
                    Ok(run) => {
                        // The image row carries the session's painted peak,
                        // the windows their own (painted again at their start).
                        for (op, cycles, stack) in [
                            ("image", 0, run.stack),
                            ("seal reading", run.seal_cycles, run.seal_stack),
                            ("open command", run.open_cycles, run.open_stack),
                        ] {
                            let mut r = crate::run::yasim::yasim_record(
                                mcu,
                                crate::report::records::APP_SCHEME,
                                suite.name(),
                                op,
                                Some(stack),
                            );
                            r.cycles = cycles;
                            r.code_bytes = b.flash();
                            r.static_ram_bytes = Some(b.ram());
                            records.push(r);
                        }
                        let spare = i64::from(mcu.sram) - i64::from(b.ram()) - i64::from(run.stack);
                        let keeps = spare >= i64::from(crate::run::yasim::SPARE_SRAM);
                        let spare = match keeps {
                            true => spare.to_string(),
                            false => format!("{spare} (under {})", crate::run::yasim::SPARE_SRAM),
                        };
                        let said = format!(
                            "session ok, EEPROM counter block reserved ({}); seal {} / open {} cycles, \
                             {} / {} B of stack",
                            run.counter,
                            crate::report::table::grouped(run.seal_cycles),
                            crate::report::table::grouped(run.open_cycles),
                            run.seal_stack,
                            run.open_stack
                        );
                        (run.stack.to_string(), spare, said)
                    }
                    Err(e) => {
                        failed.push(e.clone());
                        let said = format!("failed: {}", e.replace('\n', "; ").replace('|', "/"));
                        ("–".into(), "–".into(), said)
                    }
                };
                format!(
                    "| {} | {} | {} | {} | {stack} | {spare} | yes | {said} |",
                    suite.name(),
                    image.name,
                    b.flash(),
                    b.ram(),
                )
            }
            Err(e) => format!(
                "| {} | {} | – | – | – | – | no: {} | – |",
                suite.name(),
                image.name,
                avr::link_overflow(&e, mcu)
            ),
        };
        println!("{row}");
        table.push_str(&row);
        table.push('\n');
    }
    let legend = format!(
        "(flash = text + data image + rodata of the application image with keys, built at opt-level s. The \
         last column: the image in yasimavr (`firmware/avr/yasim_app.py`, yasimavr built without its flash \
         access check, which refuses EEPROM page-buffer writes; its missing watchdog registers read as 0) \
         against the host playing bridge and broker: a handshake, the first reading (the {} internal \
         temperature sensor), a command opened and answered, and the EEPROM handshake counter's first block \
         reserved; the seal and open windows as the application counts them on chip (TCB0 at the CPU \
         clock, an empty window's count subtracted; classic-core timings), as yasimavr stamps no marker \
         windows, and their stack (SRAM below the stack pointer painted again as each opens). Stack \
         peak: yasimavr tracks no stack pointer, so the script fills SRAM above static data \
         with a pattern before the first instruction and finds the lowest byte that lost it after the \
         session: the peak counted from the top of SRAM, the application's own frames included. SRAM \
         spare = SRAM − static RAM − stack peak; \"under {spare}\": less than the {spare} B the harness \
         images keep (room for what the paint cannot see).)",
        mcu.name,
        spare = crate::run::yasim::SPARE_SRAM
    );
    if record {
        crate::report::records::record_fit_table(mcu.name, "kem-mqtt-app-fit", &format!("{table}\n{legend}\n"))?;
        crate::report::records::save(mcu.name, crate::report::records::APP_SCHEME, &records, false)?;
    }
    if require_run && !failed.is_empty() {
        return Err(format!(
            "{} application session(s) failed in yasimavr:\n{}",
            failed.len(),
            failed.join("\n")
        ));
    }
    Ok(())
}

/// The ATmega4808: every selected image (pure and hybrid) built; each whose
/// flash fits runs its suite (the hybrid image: the hybrid suite) in
/// yasimavr, handshake checked, painted stack read. Prints what fits with
/// the numbers; a crash or stack overflow is "does not fit", not a failure.
/// With `record`, the table also goes to `benchmarks/<mcu>/kem-mqtt-fit.md`.
/// With `require_fit`, a selected suite that does not fit is a failure (CI:
/// the CTRU-Light sensor must keep fitting the ATmega4808).
pub fn mega0(
    mcu: crate::target::Mcu,
    suites: &crate::target::Suites,
    no_build: bool,
    record: bool,
    require_fit: bool,
) -> Result<(), String> {
    let mut records = Vec::new();
    let mut table = String::from(
        "| suite | image | flash B | static RAM B | handshake | painted stack start/finish B | cycles start/finish (I/O excluded, classic-core timings) | AVRxt cycles start/finish | fits |\n\
         |---|---|---:|---:|---|---|---|---|---|\n",
    );
    let (mut passed, mut failed, mut selected) = (0u32, 0u32, 0u32);
    // Suites whose static RAM here plus their stack on the ATmega1284p
    // exceed the SRAM: beyond it by the numbers, which `require_fit` does
    // not ask to fit (the table says why).
    let mut beyond_sram = 0u32;
    for image in sensor::images(mcu, suites)? {
        // Each image runs its last suite (a hybrid image its hybrid one):
        // an image chosen for its pure suite alone is that suite's pure image.
        let suite = *sensor::suites_of(&image).last().ok_or("image without suite")?;
        if !suites.admits(crate::report::records::MQTT_SCHEME, suite) {
            continue;
        }
        selected += 1;
        let built = if no_build {
            avr::sizes(mcu, &image.elf(mcu))
        } else {
            avr::compile(mcu, &image)
        };
        let b = match built {
            Ok(b) => b,
            // The linker refuses what exceeds the flash region (its message above says by how much).
            Err(e) => {
                eprintln!("xtask: {} does not link for {}: {e}", image.name, mcu.name);
                table.push_str(&format!(
                    "| {} | {} | – | – | not run | – | – | – | no: {} |\n",
                    suite.name(),
                    image.name,
                    avr::link_overflow(&e, mcu)
                ));
                continue;
            }
        };
        let mut row = |verdict: &str, stack: &str, cycles: &str, avrxt: &str, fits: String| {
            table.push_str(&format!(
                "| {} | {} | {} | {} | {verdict} | {stack} | {cycles} | {avrxt} | {fits} |\n",
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
                "–",
                format!("no: flash {} B > {} B", b.flash(), mcu.flash),
            );
            continue;
        }
        let case = sensor::prepare(suite, sensor::SEED)?;
        eprintln!("xtask: {} on {} in yasimavr …", suite.name(), mcu.name);
        let replies = crate::run::yasim::run_requests(
            mcu,
            &b.elf,
            &[
                (fw::OP_START, case.start_request.clone()),
                (fw::OP_FINISH, case.finish_requests[0].clone()),
                (fw::OP_FINISH_REST, case.finish_requests[1].clone()),
            ],
            &image.target_dir(mcu).join("mqtt-requests.txt"),
            record,
        )?;
        // Start, then the finish's two windows as one step: cycles summed,
        // the larger stack (an overflow in either is an overflow).
        let stack_of = |i: usize| replies.get(i).and_then(|m| m.stack).map(u32::from);
        let overflowed = avr_wire::frame::STACK_OVERFLOW as u32;
        let finish_stack = match (stack_of(1), stack_of(2)) {
            (Some(x), _) | (_, Some(x)) if x == overflowed => Some(overflowed),
            (x, y) => x.max(y),
        };
        let stacks = [stack_of(0), finish_stack];
        let overflow = stacks.contains(&Some(overflowed));
        let step = |i: usize, of: fn(&crate::run::yasim::Measured) -> Option<u64>| match i {
            0 => replies.first().and_then(of),
            _ => replies
                .get(1)
                .and_then(of)
                .zip(replies.get(2).and_then(of))
                .map(|(x, y)| x + y),
        };
        let step_cycles = |i: usize| step(i, |m| m.cycles);
        let step_avrxt = |i: usize| step(i, |m| m.avrxt);
        let show = |s: Option<u32>| match s {
            Some(x) if x == avr_wire::frame::STACK_OVERFLOW as u32 => "overflow".to_string(),
            Some(x) => x.to_string(),
            None => "–".into(),
        };
        let cyc = |i: usize| {
            step_cycles(i)
                .filter(|_| !overflow)
                .map_or("–".into(), |c| c.to_string())
        };
        let xt = |i: usize| {
            step_avrxt(i)
                .filter(|_| !overflow)
                .map_or("–".into(), |c| c.to_string())
        };
        let checked = match (replies.first(), replies.get(1), replies.get(2)) {
            (Some(a), Some(h), Some(c)) => case.check(&a.body, &h.body, &c.body),
            _ => Err("no reply (crashed)".into()),
        };
        let peak = stacks.iter().flatten().copied().max().unwrap_or(0);
        let ok = checked.is_ok() && !overflow;
        // The painted measure cannot see a stack that ran through static
        // data; the 1284p run of the suite says what it needs.
        let need = stack_need_1284p(suite);
        let beyond = need.is_some_and(|n| b.ram() + n > mcu.sram);
        let spare = mcu.sram as i64 - (b.ram() + peak) as i64;
        let fits = ok && spare >= crate::run::yasim::SPARE_SRAM as i64;
        // The guard: the painted stack measure sees the first byte after
        // static data overwritten. What the run answered after that is the
        // corruption speaking, not the protocol: "does not fit".
        let verdict = match &checked {
            _ if overflow => "does not fit: the stack ran into static data".to_string(),
            Err(_) if beyond => "does not fit: the run crashed where the stack outgrew the SRAM left".into(),
            Ok(_) => "ok (flights, ClientFinished, record checked)".into(),
            Err(e) => e.clone(),
        };
        let note = if fits {
            format!("yes: {} + {peak} B of {} B SRAM, {spare} B spare", b.ram(), mcu.sram)
        } else if ok {
            format!(
                "no: {} + {peak} B of {} B SRAM leaves {spare} B, less than {} B spare",
                b.ram(),
                mcu.sram,
                crate::run::yasim::SPARE_SRAM
            )
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
        if let (true, Ok(f), Some(a), Some(c)) = (fits, &checked, step_cycles(0), step_cycles(1)) {
            let flights = [f.client_hello, f.broker_hello, f.client_finished, f.record].map(|x| x as u32);
            let (xa, xc) = (step_avrxt(0), step_avrxt(1));
            for (op, cycles, avrxt, stack) in [
                ("start", a, xa, stacks[0]),
                ("finish", c, xc, stacks[1]),
                ("handshake", a + c, xa.zip(xc).map(|(x, y)| x + y), Some(peak)),
            ] {
                let mut r =
                    crate::run::yasim::yasim_record(mcu, crate::report::records::MQTT_SCHEME, suite.name(), op, stack);
                r.cycles = cycles;
                r.cycles_avrxt = avrxt;
                r.code_bytes = b.flash();
                r.static_ram_bytes = Some(b.ram());
                if op == "handshake" {
                    r.published_cycles = Some(crate::report::published::KEM_MQTT_SENSOR_CYCLES);
                    r.published_reference = Some(crate::report::published::KEM_MQTT_REFERENCE.into());
                }
                r.flight_bytes = Some(flights);
                records.push(r);
            }
        }
        if ok {
            passed += 1;
        } else if beyond {
            beyond_sram += 1;
        } else if !(overflow || replies.is_empty()) {
            // A wrong answer without a crash, an overflow or a known lack of
            // SRAM is a real failure.
            failed += 1;
        }
        row(
            &verdict,
            &format!("{}/{}", show(stacks[0]), show(stacks[1])),
            &format!("{}/{}", cyc(0), cyc(1)),
            &format!("{}/{}", xt(0), xt(1)),
            note,
        );
    }
    print!("{table}");
    let legend =
        "(yasimavr; cycles by the on-chip timers between the markers (UART transfer excluded) under yasimavr's \
         classic-core (AVRe+) instruction timings, the timing the published 4808 figures were measured with; \
         AVRxt: the same windows on the 4808's AVRxt core, priced from an instruction trace and checked against \
         the timers (`xtask/src/lab/run/avrxt.rs`; loads from the mapped flash, which reads the provisioned keys, not \
         charged their extra cycle); flash = text + data image + rodata. \
         The 4808 images keep the sensor's keys in flash (provisioned at build time: firmware feature \
         `mqtt-provisioned`), build the handshake state in place and send the ephemeral public key from the \
         ephemeral key (`SensorHandshake::start_split`), take the BrokerHello in two parts, the rest into the \
         used-up ephemeral key (`receive_broker_hello_head`, `_rest`; finish = the two windows) and use the compact X25519 field \
         (`fe25519_compact.S`, slower than the 1284p's unrolled one: its loops fit the 48 KB).)";
    println!("{legend}");
    if record {
        crate::report::records::record_fit_table(mcu.name, "kem-mqtt-fit", &format!("{table}\n{legend}\n"))?;
        // The suites that fit, as rows beside the ATmega1284p's (a full run replaces the file).
        crate::report::records::save(mcu.name, crate::report::records::MQTT_SCHEME, &records, false)?;
    }
    println!("{passed} passed, {failed} failed, {beyond_sram} beyond the SRAM by the numbers");
    if failed > 0 {
        return Err(format!("{failed} KEM-MQTT sensor::run(s) failed on {}", mcu.name));
    }
    if require_fit && passed + beyond_sram < selected {
        return Err(format!(
            "{} of {selected} selected suite(s) do not fit {} (--require-fit)",
            selected - passed - beyond_sram,
            mcu.name
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn broker_options_parse_and_depend_on_each_other() {
        let o = MqttArgs::try_parse_from(["mqtt", "--broker", "127.0.0.1:18830", "--key", "k.json"]).unwrap();
        assert_eq!(o.broker.unwrap().port(), 18830);
        assert_eq!(o.mode, crate::mqtt::live::Mode::Auth);
        let o = MqttArgs::try_parse_from(["mqtt", "--broker", "127.0.0.1", "--key", "k", "--mode", "topic"]).unwrap();
        assert_eq!(
            (o.broker.unwrap().port(), o.mode),
            (1883, crate::mqtt::live::Mode::Topic)
        );
        // --broker needs --key, and --key --broker; a bad address or mode is refused by clap.
        for argv in [
            &["mqtt", "--broker", "127.0.0.1:18830"][..],
            &["mqtt", "--key", "k"],
            &["mqtt", "--broker", "127.0.0.1:0x", "--key", "k"],
            &["mqtt", "--broker", "127.0.0.1", "--key", "k", "--mode", "tls"],
            &["mqtt", "--broker", "127.0.0.1", "--key", "k", "--profile"],
        ] {
            assert!(MqttArgs::try_parse_from(argv).is_err(), "{argv:?}");
        }
        // The benchmark options keep their defaults without --broker.
        let o = MqttArgs::try_parse_from(["mqtt", "--seeds", "3"]).unwrap();
        assert!(o.broker.is_none() && o.key.is_none());
    }

    #[test]
    fn broker_needs_the_simulated_atmega1284p() {
        let o = MqttArgs::try_parse_from([
            "mqtt",
            "--mcu",
            "atmega4808",
            "--broker",
            "127.0.0.1:18830",
            "--key",
            "/nonexistent.json",
        ])
        .unwrap();
        let e = cmd(&o).unwrap_err();
        assert!(e.contains("atmega1284p") && e.contains("atmega4808"), "{e}");
    }
}
