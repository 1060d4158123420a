//! `cargo xtask …`: the project's tasks as plain Rust (cargo-xtask pattern).

use std::process::{Command, ExitCode};

mod avr;
mod bench;
mod ct;
mod device;
mod dfr;
mod hosteval;
mod kat;
mod kems;
mod mega0;
mod mqtt;
mod opts;
mod published;
mod setup;
mod simtest;
mod util;

pub use opts::Opts;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci        fmt check, clippy and rustdoc (warnings denied), every test, the AVR builds, the
            simulated differential and KAT tests, the AVR constant-time check,
            the valgrind secret-independence check and a short fuzzing run —
            what CI runs
  setup     [--yasimavr]
            check what this machine can do (Debian rustc-web with avr-none,
            avr-gcc, the simulator headers, mosquitto) and, as root, apt-get
            update + install what is missing or too old; otherwise print the
            commands; --yasimavr: also yasimavr into .venv (ATmega4808)
  build-avr [--mcu atmega1284p|atmega4808] [--image rings|kyber|saber|ctru-sha3|ctru-ascon|<kem>|mqtt-<kem>[-x25519]|all]
            cross-build a firmware image, report flash and static RAM
  sim-test  [--mcu M] [--trials N] [--kat N] [--seed S] [--filter S] [--no-build]
            [--require-fit]
            randomized differential test of the ring ops (firmware in simavr vs
            modarith) and the first N (3) official KAT records of every KEM
            variant reproduced by the firmware; --mcu atmega4808 --kat 1: KAT
            record 0 of every KEM that fits, in yasimavr (--require-fit: a KEM
            that does not fit is a failure)
  ct        [--count N] [--mcu M] [--filter S] [--seed S] [--jobs J] [--explain] [--no-build]
            constant-time check in simavr: keygen/encaps/decaps of every KEM
            variant on N (100) random inputs must take min == max cycles
  bench     [--mcu M] [--filter S] [--no-build]
            cycles, stack and code size of every operation in simavr; writes
            benchmarks/<mcu>/<scheme>.json, benchmarks/latest.json,
            docs/benchmarks.md and docs/benchmarks.svg; --mcu atmega4808 (no
            simavr model): which KEMs and KEM-MQTT suites fit, run in yasimavr,
            recorded in benchmarks/atmega4808/*.md and docs/benchmarks.md
  mqtt      [--mcu M] [--filter S] [--no-build] [--profile] [--require-fit] [--seeds N]
            the KEM-MQTT/1 sensor handshake of every suite on the AVR (firmware
            images mqtt-<kem>[-x25519]) against the host broker: flights and a
            record checked, cycles and stack per step; --mcu atmega4808: which
            suites fit (flash, SRAM), run in yasimavr (--require-fit: a selected
            suite that does not fit is a failure); --profile: where start and
            finish spend their instructions, by function; --seeds N: N keys and
            randomness per suite, cycles must not change (CTRU-Light exempt:
            public key-generation retries)
  kat       --scheme ml-kem-512|kyber512-r3|lightsaber|ctru-light-sha3|ctru-light-ascon
            [--master-seed HEX48] [--count N] [--write FILE] [--check]
            NIST-format KAT file from the NIST DRBG; --check compares with kat-vectors/
  dfr       CTRU-Light decryption-failure rate by convolution of its noise model
  report    regenerate benchmarks/latest.json and docs/ from benchmarks/*/*.json
  help      this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Commands that build or simulate need the Debian packages; on a new
    // machine this binary was compiled before they existed, without the
    // simulator, so after installing them it is rebuilt and run again, once.
    if matches!(
        args.first().map(String::as_str),
        Some("ci" | "bench" | "sim-test" | "ct" | "mqtt" | "build-avr")
    ) {
        let rebuild = setup::ensure_machine().and_then(|rebuild| {
            if args[0] == "ci" {
                setup::setup_yasimavr()?;
            }
            Ok(rebuild)
        });
        match rebuild {
            Err(e) => {
                eprintln!("xtask: {e}");
                return ExitCode::FAILURE;
            }
            Ok(true) => {
                return match setup::rebuild_and_rerun(&args) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("xtask: {e}");
                        ExitCode::FAILURE
                    }
                };
            }
            Ok(false) => {}
        }
    }
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("setup") => setup::setup(&args[1..]),
        Some("build-avr") => avr::build_cmd(&args[1..]),
        Some("sim-test") => simtest::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("report") => bench::regenerate(),
        Some("kat") => kat::run(&args[1..]),
        Some("dfr") => dfr::run(&args[1..]),
        Some("ct") => ct::run(&args[1..]),
        Some("mqtt") => mqtt::cmd(&args[1..]),
        None | Some("help") | Some("--help") | Some("-h") => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Everything CI checks: the host checks, then the AVR builds and the simulated differential test.
fn ci() -> Result<(), String> {
    // (The Debian packages and yasimavr were installed by `main`.)
    util::run(Command::new("cargo").args(["fmt", "--all", "--check"]))?;
    util::run(Command::new("cargo").args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    // The API docs build without a broken or private link.
    util::run(
        Command::new("cargo")
            .args(["doc", "--workspace", "--no-deps", "-q"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    util::run(Command::new("cargo").args(["test", "--workspace"]))?;
    for mcu in avr::MCUS {
        avr::build(*mcu)?;
    }
    // The KEM images of the 1284p, one build at a time.
    let m1284 = avr::mcu("atmega1284p")?;
    for image in avr::all_images(m1284).iter().skip(1) {
        avr::build_image(m1284, image)?;
    }
    simtest::run(&["--no-build".to_string()])?;
    // The KEM-MQTT/1 sensor of every suite against the host broker, three
    // keys and randomness each: the cycles must not change (X25519 both
    // ways, the key schedule, the KEMs; CTRU-Light's public retries aside).
    mqtt::cmd(&["--seeds".into(), "3".into()])?;
    // Every KEM operation must take the same cycles for every input.
    ct::run(&["--count".into(), "8".into(), "--no-build".into()])?;
    // The host secret-independence check (valgrind memcheck) and a short
    // fuzzing run of every target (SECURITY.md has the long runs).
    let root = util::workspace_root();
    util::run(
        Command::new("bash")
            .arg(root.join("ci/ct-valgrind.sh"))
            .args(["1", "all"]),
    )?;
    util::run(
        Command::new("bash")
            .arg(root.join("ci/fuzz-smoke.sh"))
            .env("FUZZ_SECONDS", "5"),
    )?;
    if util::workspace_root().join(".venv/bin/python").exists() {
        simtest::run(&["--mcu".into(), "atmega4808".into(), "--no-build".into()])?;
        // Every KEM variant in its own 4808 image: KAT record 0 in 6 KB of SRAM.
        simtest::run(&[
            "--mcu".into(),
            "atmega4808".into(),
            "--kat".into(),
            "1".into(),
            "--require-fit".into(),
        ])?;
        // The CTRU-Light sensor (pure and hybrid, both families) keeps fitting the 4808.
        mqtt::cmd(&[
            "--mcu".into(),
            "atmega4808".into(),
            "--filter".into(),
            "ctru-light".into(),
            "--require-fit".into(),
        ])?;
    }
    Ok(())
}
