//! `cargo xtask ci`: the steps CI runs, in order, each a call into the lab
//! (or a cargo command); each step's time is printed.

use std::process::Command;

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use avr_lab::build::{avr, flash};
use avr_lab::measure::{bench, ct, simtest};
use avr_lab::mqtt::{e2e, fleet, handshake};
use avr_lab::release::{examples, packaged};
use avr_lab::{args, progress, setup, target, util};

/// Everything CI checks: the host checks, then the AVR builds and the simulated differential test.
pub fn run() -> Result<(), String> {
    // (The Debian packages were installed by `main`.) yasimavr, the 4808's
    // simulator, builds from source (≈ 2 min on one core) while the tests
    // run, which leave a core idle much of the time; the 4808 steps wait
    // for it.
    let yasimavr = Background::new(setup::setup_yasimavr);
    // The fuzz targets' build (nightly, AddressSanitizer: ≈ 2 min on 2
    // cores) runs, at low priority, beside the tests, whose run leaves the
    // cores idle much of the time (brokers, simulators, timeouts); the fuzz
    // step then only runs them. (Started beside the simulator steps, it
    // was the last thing CI waited for.)
    let fuzz_build = Background::new(build_fuzz_targets);
    let fuzz_smoke = Background::new(run_fuzz_smoke);
    let cargo = |args: &'static [&'static str]| move || util::run(Command::new("cargo").args(args));
    let root = util::workspace_root();
    // The ATmega4808 part (yasimavr, one core) runs as a process of its own
    // (`cargo xtask ci4808`) beside the steps after the tests, once
    // yasimavr is built: the examples and the simulator steps keep one core
    // busy most of the time. (Started after the AVR builds, it was the
    // longest of CI's last steps.)
    let part_4808 = Background::new(run_4808_beside);
    let steps: Vec<(&str, Step)> = vec![
        ("cargo fmt --check", Box::new(cargo(&["fmt", "--all", "--check"]))),
        (
            "cargo clippy (warnings denied)",
            Box::new(cargo(&[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])),
        ),
        // The API docs build without a broken or private link.
        (
            "cargo doc (warnings denied)",
            Box::new(|| {
                util::run(
                    Command::new("cargo")
                        .args(["doc", "--workspace", "--no-deps", "-q"])
                        .env("RUSTDOCFLAGS", "-D warnings"),
                )
            }),
        ),
        (
            "cargo test --workspace",
            Box::new({
                let (yasimavr, fuzz_build) = (yasimavr.clone(), fuzz_build.clone());
                move || {
                    // Built first, so the simulator's build does not compete with it.
                    util::run(Command::new("cargo").args(["test", "--workspace", "--no-run"]))?;
                    yasimavr.start();
                    fuzz_build.start();
                    util::run(Command::new("cargo").args(["test", "--workspace"]))?;
                    // The sensor handshake with its keys behind readers (a
                    // classic AVR's flash): a feature no host build enables.
                    util::run(Command::new("cargo").args([
                        "test",
                        "-p",
                        "kem-mqtt",
                        "--features",
                        "program-memory-keys",
                        "--test",
                        "handshake",
                    ]))
                }
            }),
        ),
        // An application outside the workspace with RustCrypto's current
        // ml-kem, kem and rand next to our crates: one generic function over
        // every KEM (issue #22).
        (
            "outside application (ml-kem 0.3 + our KEMs, one generic function)",
            Box::new(cargo(&[
                "run",
                "-q",
                "--manifest-path",
                "examples/outside-app/Cargo.toml",
            ])),
        ),
        // The firmware examples a user copies: `cargo run --release` in each
        // builds it for the ATmega1284p and runs it in simavr (issue #35).
        (
            "examples: cargo run in simavr prints each one's expected output",
            Box::new({
                let (yasimavr, part_4808) = (yasimavr.clone(), part_4808.clone());
                move || {
                    yasimavr.wait()?;
                    part_4808.start();
                    examples::check_on_own_mcu()
                }
            }),
        ),
        // The crates as they leave the repository: every crate packed and
        // built from its pack against the others' (issues #34, #51), then a
        // KEM crate's pack built for the ATmega1284p, its KAT record checked
        // in simavr.
        ("cargo package --workspace", Box::new(packaged::package_workspace)),
        (
            "packaged: kyber512-avr from its .crate on the ATmega1284p, KAT record 0 in simavr",
            Box::new(packaged::check),
        ),
        (
            "AVR builds (every MCU's rings image, every 1284p KEM image)",
            Box::new(|| {
                for mcu in target::MCUS {
                    avr::build(*mcu)?;
                }
                // The KEM images of the 1284p, one build at a time.
                let m1284 = target::mcu("atmega1284p")?;
                for image in target::all_images(m1284).iter().skip(1) {
                    avr::build_image(m1284, image)?;
                }
                Ok(())
            }),
        ),
        (
            "sim-test (rings, KATs, CTRU-Light product) in simavr",
            Box::new({
                let fuzz_smoke = fuzz_smoke.clone();
                move || {
                    // The fuzzers, one at a time, on the core the
                    // simulator steps leave (the 4808 part is done by now).
                    fuzz_smoke.start();
                    simtest::run(&args(&["sim-test", "--no-build"])?)
                }
            }),
        ),
        // The KEM-MQTT/1 sensor of every suite against the host broker, three
        // keys and randomness each: the cycles must not change (X25519 both
        // ways, the key schedule, the KEMs; CTRU-Light's public retries aside).
        (
            "KEM-MQTT sensor of every suite, 3 seeds",
            Box::new(|| handshake::cmd(&args(&["mqtt", "--seeds", "3"])?)),
        ),
        // The same with the KEMs reading the keys through readers, as the
        // ATmega2560 sensor reads them from flash (one suite here; `cargo
        // xtask mqtt --key-readers --seeds 3` runs all twelve).
        (
            "KEM-MQTT sensor with its keys behind readers (ml-kem-512+x25519), 3 seeds",
            Box::new(|| {
                handshake::cmd(&args(&[
                    "mqtt",
                    "--key-readers",
                    "--seeds",
                    "3",
                    "--suite",
                    "ml-kem-512+x25519",
                ])?)
            }),
        ),
        // The AVR sensor through real mosquitto, plugin and gateway: the
        // application must see the reading sealed on the AVR.
        (
            "primitives (Keccak-f[1600], Ascon-p[12], X25519) in simavr = the host's references",
            Box::new(bench::primitives_check),
        ),
        // The code that talks to a board, against the simulator on a pty.
        (
            "board path: bench --device over a pty = simavr, cycle for cycle",
            Box::new(|| bench::device_check(&["rings", "mqtt-ml-kem-512-x25519"])),
        ),
        (
            "flash: avrdude into a simulated Optiboot on a pty",
            Box::new(flash::check),
        ),
        (
            "KEM-MQTT end to end: AVR sensor → mosquitto (plugin, gateway) → mosquitto_sub",
            Box::new(|| e2e::run(&args(&["e2e", "--no-build"])?)),
        ),
        // The broker side on a cluster: three RabbitMQ nodes, one killed
        // under load, a revocation through PostgreSQL (issue #52; `cargo
        // xtask fleet` runs 3,000 sensors).
        (
            "KEM-MQTT fleet: 3 RabbitMQ nodes, 60 sensors, a node killed (with and without a gateway on it), a sensor revoked",
            Box::new(|| {
                // The gateways on the nodes that survive: nothing lost, nothing twice.
                fleet::run(&args(&["fleet", "--sensors", "60"])?)?;
                // A gateway on the node killed too: its failover loses nothing.
                fleet::run(&args(&["fleet", "--sensors", "60", "--gateways-everywhere"])?)
            }),
        ),
        // Every KEM operation must take the same cycles for every input.
        (
            "ct: constant cycles in simavr",
            Box::new(|| ct::run(&args(&["ct", "--count", "8", "--no-build"])?)),
        ),
        // The host secret-independence check (valgrind memcheck) and a short
        // fuzzing run of every target (SECURITY.md has the long runs).
        (
            "ct-valgrind (host secret independence)",
            Box::new({
                let script = root.join("ci/ct-valgrind.sh");
                move || util::run(Command::new("bash").arg(&script).args(["1", "all"]))
            }),
        ),
        (
            "fuzz smoke (5 s per target, beside the simulator steps)",
            Box::new({
                let (fuzz_build, fuzz_smoke) = (fuzz_build.clone(), fuzz_smoke.clone());
                // (The smoke's own build waits for the background one.)
                move || fuzz_build.wait().and_then(|()| fuzz_smoke.wait())
            }),
        ),
        (
            "ATmega4808 (beside the steps above): the sensor example, smoke test, KATs, constant time, sensor fit, application",
            Box::new({
                let part = part_4808.clone();
                move || part.wait()
            }),
        ),
    ];
    let result = run_steps("ci", &steps);
    if result.is_err() {
        // The jobs beside the failed step (the 4808 part, the fuzzers and
        // what they started) would go on after this process ends.
        stop_descendants();
    }
    result
}

/// Ends (SIGTERM) every process this one started, directly or not.
fn stop_descendants() {
    let mut parents = vec![std::process::id()];
    let mut descendants = Vec::new();
    // Each process's parent, from /proc/<pid>/stat ("pid (comm) state ppid …",
    // comm may hold spaces and parentheses: read after the last ')').
    let table: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    while let Some(parent) = parents.pop() {
        for &(pid, ppid) in &table {
            if ppid == parent && !descendants.contains(&pid) {
                descendants.push(pid);
                parents.push(pid);
            }
        }
    }
    if descendants.is_empty() {
        return;
    }
    eprintln!(
        "xtask: stopping {} process(es) CI started beside the failed step",
        descendants.len()
    );
    let _ = Command::new("kill")
        .arg("-TERM")
        .args(descendants.iter().map(u32::to_string))
        .status();
}

/// A step: its name and what it runs.
type Step = Box<dyn Fn() -> Result<(), String>>;

/// Runs `steps` in order, each timed under `label`; the first failure
/// ends the run, naming its step.
fn run_steps(label: &'static str, steps: &[(&str, Step)]) -> Result<(), String> {
    let mut progress = progress::Progress::new(label, steps.len() as u64);
    for (name, step) in steps {
        progress.step(name);
        step().map_err(|e| format!("{label} step `{name}`: {e}"))?;
    }
    progress.finish();
    Ok(())
}

/// The ATmega4808 part of CI (`cargo xtask ci4808`), in yasimavr: the
/// sensor example's both suites, then the part's own checks.
pub fn run_4808() -> Result<(), String> {
    setup::setup_yasimavr()?;
    let steps: Vec<(&str, Step)> = vec![
        (
            "examples: the sensor's hybrid and pure suites on the ATmega4808",
            Box::new(|| examples::check_on("atmega4808")),
        ),
        (
            "ATmega4808 smoke test in yasimavr",
            // Built here (a no-op after `ci`'s AVR builds), so that
            // `cargo xtask ci4808` runs on its own too.
            Box::new(|| simtest::run(&args(&["sim-test", "--mcu", "atmega4808"])?)),
        ),
        // Every KEM variant in its own 4808 image: KAT record 0 in 6 KB of SRAM.
        (
            "ATmega4808 KAT record 0 of every KEM",
            Box::new(|| {
                simtest::run(&args(&[
                    "sim-test",
                    "--mcu",
                    "atmega4808",
                    "--kat",
                    "1",
                    "--require-fit",
                ])?)
            }),
        ),
        // The primitives on the 4808's own build take one instruction path
        // for every input (the trace found a branch on the X25519 swap bit).
        (
            "ATmega4808 constant time (instruction paths): the primitives",
            Box::new(|| ct::run(&args(&["ct", "--mcu", "atmega4808", "--filter", "primitives"])?)),
        ),
        // Every sensor suite (pure and hybrid) completes the handshake on the
        // 4808 with 512 B of SRAM to spare (static RAM + painted stack).
        (
            "ATmega4808 sensor fit: every suite within the SRAM by the numbers, 512 B to spare",
            Box::new(|| handshake::cmd(&args(&["mqtt", "--mcu", "atmega4808", "--require-fit"])?)),
        ),
        // The sensor application on the 4808: a handshake, a temperature
        // reading, a command, the EEPROM counter (yasimavr; the whole e2e
        // session runs on the simulated 1284p above).
        (
            "ATmega4808 sensor application in yasimavr (ctru-light-ascon+x25519)",
            Box::new(|| {
                handshake::app_fit(
                    target::mcu("atmega4808")?,
                    &target::Suites::One(target::suite("ctru-light-ascon+x25519")?),
                    false,
                    true,
                )
            }),
        ),
    ];
    run_steps("ci4808", &steps)
}

/// Runs [`run_4808`] as a child process, its output in
/// `target/ci4808.log`, which is printed when it ends (so that it does not
/// interleave with the steps running meanwhile).
fn run_4808_beside() -> Result<(), String> {
    // A later build of the xtask (the tests build it too) may have replaced
    // this binary while it ran; Linux then names it "<path> (deleted)", and
    // the new build of the same sources is at the path.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let exe = std::path::PathBuf::from(exe.to_string_lossy().trim_end_matches(" (deleted)"));
    let log_path = util::workspace_root().join("target/ci4808.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    eprintln!(
        "xtask: the ATmega4808 part runs beside the other steps: {} ci4808 > {}",
        exe.display(),
        log_path.display()
    );
    // At a lower priority than the steps it runs beside, which have
    // wall-clock timeouts (the end-to-end run's bridge and broker).
    let status = Command::new("nice")
        .args(["-n", "5"])
        .arg(&exe)
        .arg("ci4808")
        .stdout(log)
        .stderr(err)
        .status();
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    eprintln!("xtask: the ATmega4808 part's output ({}):\n{text}", log_path.display());
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the ATmega4808 part failed ({s}); its output is above")),
        Err(e) => Err(format!("cannot run {} ci4808: {e}", exe.display())),
    }
}

/// Builds the fuzz targets (`ci/fuzz-smoke.sh` with `FUZZ_BUILD_ONLY=1`)
/// at low priority; its output is shown only if it fails, so that it does
/// not interleave with the step running meanwhile.
fn build_fuzz_targets() -> Result<(), String> {
    let script = util::workspace_root().join("ci/fuzz-smoke.sh");
    let mut cmd = Command::new("nice");
    cmd.args(["-n", "10", "bash"]).arg(&script).env("FUZZ_BUILD_ONLY", "1");
    eprintln!("xtask: building the fuzz targets in the background: {cmd:?}");
    let out = cmd.output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    std::io::Write::write_all(&mut std::io::stderr(), &out.stdout).ok();
    std::io::Write::write_all(&mut std::io::stderr(), &out.stderr).ok();
    Err(format!("{cmd:?} failed with {}", out.status))
}

/// Runs every fuzz target for 5 s, one at a time, at low priority (the
/// simulator steps beside it have wall-clock timeouts), once the
/// background build is done; its output is shown when it ends.
fn run_fuzz_smoke() -> Result<(), String> {
    let script = util::workspace_root().join("ci/fuzz-smoke.sh");
    let mut cmd = Command::new("nice");
    cmd.args(["-n", "5", "bash"])
        .arg(&script)
        .env("FUZZ_SECONDS", "5")
        .env("FUZZ_JOBS", "1");
    let out = cmd.output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    eprintln!("xtask: the fuzz smoke's output:");
    std::io::Write::write_all(&mut std::io::stderr(), &out.stdout).ok();
    std::io::Write::write_all(&mut std::io::stderr(), &out.stderr).ok();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {}", out.status))
    }
}

/// A set-up task run on a thread of its own while the steps go on; the
/// steps that need it wait for it and see its error.
#[derive(Clone)]
struct Background {
    task: fn() -> Result<(), String>,
    state: Arc<Mutex<State>>,
}

enum State {
    NotStarted,
    Running(JoinHandle<Result<(), String>>),
    Finished,
}

impl Background {
    fn new(task: fn() -> Result<(), String>) -> Self {
        Background {
            task,
            state: Arc::new(Mutex::new(State::NotStarted)),
        }
    }

    fn start(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*state, State::NotStarted) {
            *state = State::Running(std::thread::spawn(self.task));
        }
    }

    /// Waits for the task (running it here if no step started it) and
    /// returns its result; once it has succeeded, returns at once.
    fn wait(&self) -> Result<(), String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let result = match std::mem::replace(&mut *state, State::Finished) {
            State::NotStarted => (self.task)(),
            State::Running(h) => h.join().map_err(|_| "the background set-up panicked".to_string())?,
            State::Finished => Ok(()),
        };
        if result.is_err() {
            *state = State::NotStarted;
        }
        result
    }
}
