//! The firmware examples under `examples/` (issue #35): each is its own
//! Cargo project that `cargo run --release` builds for an AVR and runs in
//! simavr through `examples/run-avr`, as its README tells a user. CI runs
//! every one that way and compares what it prints with the example's
//! `expected-output.txt`, or, for an example that computes a known-answer
//! record on the device, with that record of the official file
//! (`expected-kat-record.txt`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;

/// What `cargo xtask` inherits from the workspace's cargo and must not
/// reach an example's: its compiler, target and flags are its own.
const INHERITED: &[&str] = &[
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
];

/// The file holding what an example must print, verbatim.
const EXPECTED: &str = "expected-output.txt";
/// The file naming the KAT record an example must print: `SCHEME COUNT`
/// (after `#` comment lines), e.g. `ml-kem-512 0`.
const EXPECTED_KAT_RECORD: &str = "expected-kat-record.txt";
/// The file of an example whose firmware compiles a sensor's keys in: the
/// `kem-mqtt provision` arguments (after `--dir`, `#` lines aside) that
/// enrol it. The run gets a fresh key folder and the sensor's key file in
/// [`SENSOR_KEY_VAR`], as the example's README tells a user.
const PROVISION_ARGS: &str = "provision-args.txt";
/// The variable naming the sensor's key file to the example's build script
/// and runner.
const SENSOR_KEY_VAR: &str = "KEM_MQTT_SENSOR_KEY";

/// Every example project with an expectation, sorted by name.
pub fn all() -> Result<Vec<PathBuf>, String> {
    let dir = util::workspace_root().join("examples");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(EXPECTED).is_file() || p.join(EXPECTED_KAT_RECORD).is_file())
        .collect();
    found.sort();
    Ok(found)
}

/// What `example` must print: its `expected-output.txt`, or the record its
/// `expected-kat-record.txt` names, as the official `.rsp` file writes it.
pub fn expected(example: &Path) -> Result<String, String> {
    let read = |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()));
    let verbatim = example.join(EXPECTED);
    if verbatim.is_file() {
        return read(&verbatim);
    }
    let naming = read(&example.join(EXPECTED_KAT_RECORD))?;
    let line = naming
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    let bad = || {
        format!(
            "{}: expected `SCHEME COUNT`, found {line:?}",
            example.join(EXPECTED_KAT_RECORD).display()
        )
    };
    let (name, count) = line.split_once(' ').ok_or_else(bad)?;
    let scheme = kem_registry::Scheme::from_name(name).ok_or_else(bad)?;
    let count: usize = count.trim().parse().map_err(|_| bad())?;
    let file = util::workspace_root().join(scheme.kat_file().ok_or_else(bad)?);
    let records = nist_kat::rsp::parse(&read(&file)?)?;
    let record = records
        .into_iter()
        .find(|r| r.count == count)
        .ok_or_else(|| format!("{} has no record {count}", file.display()))?;
    Ok(nist_kat::rsp::write(None, &[record]))
}

/// `cargo ARGS` in `example`, as a user runs it there.
pub(crate) fn cargo_in(example: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(example)
        .args(args)
        // The `[unstable]` table (`build-std`) on a stable cargo.
        .env("RUSTC_BOOTSTRAP", "1");
    for var in INHERITED {
        cmd.env_remove(var);
    }
    cmd
}

/// Where every example builds when the xtask runs it: one folder, so that
/// `core` and the crates the examples share (same target, MCU and profile)
/// are compiled once per CI run instead of once per example (issue #33).
/// Cargo keys each artifact by its package's source, so an example and its
/// packaged copy (`cargo xtask packaged`) never take each other's build.
pub(crate) fn shared_target_dir() -> PathBuf {
    util::workspace_root().join("target/examples")
}

/// For an example with [`PROVISION_ARGS`]: a new key folder for it (the
/// broker's keys, the registry, the sensor's key file) written by `kem-mqtt
/// provision`, and the sensor's key file.
fn provision(example: &Path) -> Result<Option<PathBuf>, String> {
    let Some(args) = provision_args(example)? else {
        return Ok(None);
    };
    let name = example.file_name().map_or("example".into(), |n| n.to_string_lossy());
    provision_into(&shared_target_dir().join(format!("keys-{name}")), &args).map(Some)
}

/// The arguments of an example's [`PROVISION_ARGS`], if it has that file.
fn provision_args(example: &Path) -> Result<Option<Vec<String>>, String> {
    let args_file = example.join(PROVISION_ARGS);
    if !args_file.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&args_file).map_err(|e| format!("{}: {e}", args_file.display()))?;
    Ok(Some(
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .flat_map(str::split_whitespace)
            .map(str::to_owned)
            .collect(),
    ))
}

/// `kem-mqtt provision --dir DIR ARGS` into a new `dir`; the one sensor
/// key file it wrote.
fn provision_into(dir: &Path, args: &[String]) -> Result<PathBuf, String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
    }
    let bin = crate::mqtt::e2e_session::kem_mqtt_cli()?;
    util::run(Command::new(bin).arg("provision").arg("--dir").arg(dir).args(args))?;
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("sensor-"))
        })
        .collect();
    match &found[..] {
        [key] => Ok(key.clone()),
        _ => Err(format!(
            "kem-mqtt provision {} wrote {} sensor key files into {}, not one",
            args.join(" "),
            found.len(),
            dir.display()
        )),
    }
}

/// Runs one example as its README does and returns what it printed.
pub fn run(example: &Path) -> Result<String, String> {
    let mut cmd = cargo_in(example, &["run", "--release", "-q"]);
    cmd.env("CARGO_TARGET_DIR", shared_target_dir());
    if let Some(key) = provision(example)? {
        cmd.env(SENSOR_KEY_VAR, key);
    }
    output_of(cmd, example)
}

/// Runs `cmd` (a `cargo run` in `example`) and returns what it printed.
fn output_of(mut cmd: Command, example: &Path) -> Result<String, String> {
    eprintln!("xtask: running {cmd:?} in {}", example.display());
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start cargo in {}: {e}", example.display()))?;
    if !out.status.success() {
        return Err(format!(
            "`cargo run --release` in {} failed with {}:\n{}",
            example.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("{} printed something that is not UTF-8", example.display()))
}

/// The round-trip example and the sensor example built for the Arduino
/// Uno's ATmega328p (2 KB of SRAM) must fail in a KEM crate's build script
/// with a message naming the crate, the MCU and the bytes needed, not with
/// a linker error or a stack that overruns at run time. The extra
/// `build.rustflags` comes after the example's own, and rustc (and so the
/// build script) takes the last `-C target-cpu`.
///
/// `cargo check`: the build script runs exactly as in `cargo build` (the
/// refusal is its doing), without generating code for a `core` that no
/// linker will see; a build would compile all of `core` for the
/// ATmega328p first, about a minute of CI (issue #33).
pub fn check_refusal() -> Result<(), String> {
    let root = util::workspace_root();
    // The sensor's refusal names whichever KEM crate's build script runs
    // first: `kem-mqtt` takes every KEM crate's lengths (kem-registry's
    // default), not only its suite's.
    for (example, crate_name) in [("avr-kem-roundtrip", "kyber512-avr "), ("avr-mqtt-sensor", "")] {
        let example = root.join("examples").join(example);
        let rustflags = r#"build.rustflags=["-C","target-cpu=atmega328p"]"#;
        let mut cmd = cargo_in(&example, &["check", "--release", "--config", rustflags]);
        cmd.env("CARGO_TARGET_DIR", shared_target_dir());
        if let Some(key) = provision(&example)? {
            cmd.env(SENSOR_KEY_VAR, key);
        }
        eprintln!("xtask: running {cmd:?} (must fail)");
        let out = cmd.output().map_err(|e| format!("cannot start cargo: {e}"))?;
        let err = String::from_utf8_lossy(&out.stderr);
        let wanted = format!("{crate_name}cannot run on the atmega328p (Arduino Uno): its lightest operation needs");
        if out.status.success() || !err.contains(&wanted) || err.contains("not within region") {
            return Err(format!(
                "building {} for the atmega328p should fail with \"{wanted} …\"; it ended with {}:\n{err}",
                example.display(),
                out.status
            ));
        }
        let line = err.lines().find(|l| l.contains(&wanted)).unwrap_or_default();
        eprintln!(
            "xtask: the atmega328p build of {} is refused: {}",
            example.display(),
            line.trim()
        );
    }
    Ok(())
}

/// Runs `example` (its own folder, or a copy at `dir`) and checks that it
/// prints what [`expected`] says.
pub fn check(example: &Path, dir: &Path) -> Result<(), String> {
    let expected = expected(example)?;
    let printed = run(dir)?;
    if printed != expected {
        return Err(format!("{} printed\n{printed}\ninstead of:\n{expected}", dir.display()));
    }
    eprintln!("xtask: {} printed its expected output", dir.display());
    Ok(())
}

/// The MCUs a sensor example runs on: its own first (its
/// `.cargo/config.toml`'s, the ATmega1284p in simavr), then the ATmega4808
/// (yasimavr), a `target-cpu` away.
pub const SENSOR_MCUS: [&str; 2] = ["atmega1284p", "atmega4808"];

/// A sensor example (one with [`PROVISION_ARGS`], for a hybrid suite)
/// also runs for the pure suite of the same KEM (its key file, and the
/// example without its default feature `hybrid`), and both suites run on
/// each of [`SENSOR_MCUS`] with `target-cpu` the one thing changed
/// (issue #50): here those on `mcu`. Each run must print the expected
/// readings, their ADC values aside (the 4808 reads its temperature
/// sensor, the 1284p ADC0).
fn check_sensor_variants(example: &Path, mcu: &str) -> Result<(), String> {
    let Some(mut args) = provision_args(example)? else {
        return Ok(());
    };
    let at = args.iter().position(|a| a == "--suite").map(|i| i + 1);
    let Some(suite) = at.and_then(|i| args.get(i)).and_then(|n| kem_mqtt::Suite::from_name(n)) else {
        return Err(format!(
            "{}: no `--suite SUITE` kem-mqtt knows",
            example.join(PROVISION_ARGS).display()
        ));
    };
    if !suite.is_hybrid() {
        return Ok(());
    }
    // Key folders of their own per MCU: CI runs the MCUs side by side.
    let name = example.file_name().map_or("example".into(), |n| n.to_string_lossy());
    let keys = |tag: &str, args: &[String]| {
        provision_into(&shared_target_dir().join(format!("keys-{name}-{tag}-{mcu}")), args)
    };
    let own = mcu == SENSOR_MCUS[0];
    // On its own MCU `check` ran the hybrid suite, its output compared verbatim.
    let hybrid_key = if own { None } else { Some(keys("hybrid", &args)?) };
    let pure = kem_mqtt::Suite::new(suite.kem(), false);
    if let Some(i) = at {
        args[i] = pure.name().to_owned();
    }
    let pure_key = Some(keys("pure", &args)?);
    let want = without_adc_values(&expected(example)?);
    {
        for (suite, key) in [(suite, &hybrid_key), (pure, &pure_key)] {
            let Some(key) = key else { continue };
            let rustflags = format!(r#"build.rustflags=["-C","target-cpu={mcu}"]"#);
            let mut cargo_args = vec!["run", "--release", "-q"];
            if !own {
                cargo_args.extend(["--config", &rustflags]);
            }
            if !suite.is_hybrid() {
                cargo_args.push("--no-default-features");
            }
            let mut cmd = cargo_in(example, &cargo_args);
            // A folder per other part: cargo would rebuild `core` and every
            // crate each time the flags change.
            let dir = if own {
                shared_target_dir()
            } else {
                shared_target_dir().join(mcu)
            };
            cmd.env("CARGO_TARGET_DIR", dir).env(SENSOR_KEY_VAR, key);
            eprintln!("xtask: running {} for {} on the {mcu}", example.display(), suite.name());
            let printed = output_of(cmd, example)?;
            if without_adc_values(&printed) != want {
                return Err(format!(
                    "{} ({}, {mcu}) printed\n{printed}\ninstead of (ADC values aside):\n{want}",
                    example.display(),
                    suite.name()
                ));
            }
        }
    }
    eprintln!(
        "xtask: {} ran {} and {} on the {mcu}",
        example.display(),
        suite.name(),
        pure.name()
    );
    Ok(())
}

/// `text` with every `adc=<number>` as `adc=…`.
fn without_adc_values(text: &str) -> String {
    text.split(' ')
        .map(|w| if w.starts_with("adc=") { "adc=…" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs every example; each must print exactly what it expects.
pub fn check_all() -> Result<(), String> {
    check_on_own_mcu()?;
    check_on(SENSOR_MCUS[1])
}

/// Every example on its own MCU (a sensor's pure suite too), and the
/// ATmega328p refusals.
pub fn check_on_own_mcu() -> Result<(), String> {
    let examples = all()?;
    if examples.is_empty() {
        return Err("no example with an expected output under examples/".into());
    }
    for example in &examples {
        check(example, example)?;
        check_sensor_variants(example, SENSOR_MCUS[0])?;
    }
    check_refusal()
}

/// The sensor examples on `mcu`, one of [`SENSOR_MCUS`] other than their
/// own: both suites.
pub fn check_on(mcu: &str) -> Result<(), String> {
    for example in &all()? {
        check_sensor_variants(example, mcu)?;
    }
    Ok(())
}
