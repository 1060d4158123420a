//! `cargo xtask …`: the project's tasks as plain Rust (cargo-xtask pattern).

use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

mod avr;
mod avrxt;
mod bench;
mod chart;
mod ct;
mod device;
mod e2e;
mod flash;
mod hosteval;
mod kat;
mod kems;
mod live;
mod mega0;
mod mega0_link;
mod mqtt;
mod mqtt_load;
mod opts;
mod progress;
mod pty;
mod published;
mod records;
mod report;
mod sensor;
mod setup;
mod simtest;
mod symbols;
mod target;
mod util;

/// `cargo xtask <command>`: the project's tasks.
#[derive(Parser, Debug)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Build, simulate, test and benchmark the AVR post-quantum KEMs",
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// What CI runs: fmt, clippy and rustdoc (warnings denied), every test, the AVR
    /// builds, the simulated differential and KAT tests, the AVR constant-time
    /// check, the valgrind secret-independence check and a short fuzzing run
    Ci,
    /// Check what this machine can do (Debian rustc-web with avr-none, avr-gcc, the
    /// simulator headers, mosquitto) and, as root, apt-get update + install what is
    /// missing or too old; otherwise print the commands
    Setup(setup::SetupArgs),
    /// Cross-build firmware images and report flash and static RAM
    BuildAvr(avr::BuildArgs),
    /// Randomised differential test of the ring operations (firmware in simavr vs
    /// modarith) and official KAT records reproduced by the firmware
    SimTest(simtest::SimTestArgs),
    /// Constant-time check in simavr: every KEM operation takes the same cycles
    /// (and per-address instruction counts) for every input
    Ct(ct::CtArgs),
    /// Cycles, stack and code size of every operation in simavr (with --device: on a
    /// board over its serial port); writes benchmarks/MCU/*.json, benchmarks/latest.json
    /// and docs/benchmarks.*
    Bench(bench::BenchArgs),
    /// Write a firmware image to a board with avrdude (bootloader or UPDI adapter)
    Flash(flash::FlashArgs),
    /// A simulated ATmega1284p board on a pseudo-terminal: try `bench --device`
    /// and `kem-mqtt serial-bridge` without a board
    SimPty(bench::SimPtyArgs),
    /// The KEM-MQTT/1 sensor handshake of every suite on the AVR against the host broker
    /// (with --broker: one suite's sensor against a real MQTT broker over TCP)
    Mqtt(mqtt::MqttArgs),
    /// The simulated AVR sensor end to end through mosquitto (plugin, and gateway):
    /// mosquitto_sub must print its reading
    E2e(e2e::E2eArgs),
    /// A fleet of host sensors against mosquitto (plugin, and gateway) on loopback:
    /// handshakes/s, latency, records/s, broker CPU and RSS → docs/benchmarks.md
    MqttLoad(mqtt_load::MqttLoadArgs),
    /// NIST-format KAT file from the NIST DRBG; --check compares with kat-vectors/
    Kat(kat::KatArgs),
    /// CTRU-Light decryption-failure rate (revision 1): the exact noise law, the decoder's
    /// failure region, block-shared secrets, checked against the real code path
    /// (runs the `ctru-light-dfr` binary; its options follow, see `--help`)
    #[command(disable_help_flag = true)]
    Dfr {
        /// Options of `ctru-light-dfr` (`--keys`, `--per-key`, `--seed`, `--mc`, `--help`)
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Regenerate benchmarks/latest.json and docs/ from benchmarks/*/*.json
    Report,
}

impl Cmd {
    /// Whether the command builds or simulates firmware (and so needs the machine set up).
    fn needs_machine(&self) -> bool {
        matches!(
            self,
            Cmd::Ci
                | Cmd::Bench(_)
                | Cmd::Flash(_)
                | Cmd::SimPty(_)
                | Cmd::SimTest(_)
                | Cmd::Ct(_)
                | Cmd::Mqtt(_)
                | Cmd::E2e(_)
                | Cmd::BuildAvr(_)
        )
    }
}

/// The xtask's modules, lowest layer first; each may use only modules before
/// it (checked by a test), so the layers import downwards and never in a circle:
/// support → toolchain set-up → what to build and what was measured →
/// running firmware (device, KEM and sensor drivers) → building → measuring →
/// reporting → commands.
pub const LAYERS: &[&str] = &[
    // support
    "util",
    "opts",
    "progress",
    // toolchain
    "setup",
    // what can be built, the published figures, the stored measurements
    "target",
    "published",
    "hosteval",
    "records",
    // running firmware in a simulator, and the host side of each exchange
    "device",
    "pty",
    "kems",
    "sensor",
    // building
    "mega0_link",
    "avr",
    // measuring and reporting
    "symbols",
    "avrxt",
    "chart",
    "report",
    // commands
    "mega0",
    "simtest",
    "ct",
    // the live sensor against a real broker (`mqtt --broker`)
    "live",
    "mqtt",
    "e2e",
    "mqtt_load",
    "bench",
    "flash",
    "kat",
];

/// Parses a fixed internal argument list (the tasks CI chains): a parse error
/// here is a bug in this file, reported like any other error.
pub fn args<T: Parser>(argv: &[&str]) -> Result<T, String> {
    T::try_parse_from(argv).map_err(|e| format!("internal arguments {argv:?}: {e}"))
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    // clap prints --help and usage errors itself (exit 0 for help, 2 for errors).
    let cli = Cli::parse();
    // Commands that build or simulate need the Debian packages; on a new
    // machine this binary was compiled before they existed, without the
    // simulator, so after installing them it is rebuilt and run again, once.
    if cli.command.needs_machine() {
        let rebuild = setup::ensure_machine().and_then(|rebuild| {
            if matches!(cli.command, Cmd::Ci) {
                setup::setup_yasimavr()?;
            }
            Ok(rebuild)
        });
        let rerun = match rebuild {
            Err(e) => Err(e),
            Ok(true) => setup::rebuild_and_rerun(&raw),
            Ok(false) => return finish(run(cli.command)),
        };
        return finish(rerun);
    }
    finish(run(cli.command))
}

fn run(command: Cmd) -> Result<(), String> {
    match command {
        Cmd::Ci => ci(),
        Cmd::Setup(a) => setup::setup(&a),
        Cmd::BuildAvr(a) => avr::build_cmd(&a),
        Cmd::SimTest(a) => simtest::run(&a),
        Cmd::Bench(a) => bench::run(&a),
        Cmd::Flash(a) => flash::run(&a),
        Cmd::SimPty(a) => bench::sim_pty(&a),
        Cmd::Report => report::regenerate(),
        Cmd::Kat(a) => kat::run(&a),
        Cmd::Dfr { args } => util::run(
            Command::new("cargo")
                .args(["run", "-q", "-p", "ctru-light-dfr", "--"])
                .args(args),
        ),
        Cmd::Ct(a) => ct::run(&a),
        Cmd::Mqtt(a) => mqtt::cmd(&a),
        Cmd::E2e(a) => e2e::run(&a),
        Cmd::MqttLoad(a) => mqtt_load::run(&a),
    }
}

fn finish(result: Result<(), String>) -> ExitCode {
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
    let cargo = |args: &'static [&'static str]| move || util::run(Command::new("cargo").args(args));
    let root = util::workspace_root();
    type Step = Box<dyn Fn() -> Result<(), String>>;
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
        ("cargo test --workspace", Box::new(cargo(&["test", "--workspace"]))),
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
            Box::new(|| simtest::run(&args(&["sim-test", "--no-build"])?)),
        ),
        // The KEM-MQTT/1 sensor of every suite against the host broker, three
        // keys and randomness each: the cycles must not change (X25519 both
        // ways, the key schedule, the KEMs; CTRU-Light's public retries aside).
        (
            "KEM-MQTT sensor of every suite, 3 seeds",
            Box::new(|| mqtt::cmd(&args(&["mqtt", "--seeds", "3"])?)),
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
            "fuzz smoke (5 s per target)",
            Box::new({
                let script = root.join("ci/fuzz-smoke.sh");
                move || util::run(Command::new("bash").arg(&script).env("FUZZ_SECONDS", "5"))
            }),
        ),
        (
            "ATmega4808 smoke test in yasimavr",
            Box::new(|| simtest::run(&args(&["sim-test", "--mcu", "atmega4808", "--no-build"])?)),
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
            "ATmega4808 sensor fit: all 10 suites, 512 B of SRAM to spare",
            Box::new(|| mqtt::cmd(&args(&["mqtt", "--mcu", "atmega4808", "--require-fit"])?)),
        ),
    ];
    let mut progress = progress::Progress::new("ci", steps.len() as u64);
    for (name, step) in &steps {
        progress.step(name);
        step().map_err(|e| format!("ci step `{name}`: {e}"))?;
    }
    progress.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("xtask").chain(argv.iter().copied()))
    }

    fn error(argv: &[&str]) -> (ErrorKind, String) {
        let e = parse(argv).expect_err("must be refused");
        (e.kind(), e.to_string())
    }

    #[test]
    fn every_command_has_help() {
        for cmd in [
            "ci",
            "setup",
            "build-avr",
            "sim-test",
            "ct",
            "bench",
            "mqtt",
            "kat",
            "report",
        ] {
            assert_eq!(error(&[cmd, "--help"]).0, ErrorKind::DisplayHelp, "{cmd} --help");
        }
        assert_eq!(error(&["--help"]).0, ErrorKind::DisplayHelp);
    }

    #[test]
    fn unknown_commands_and_options_are_refused_by_name() {
        let (kind, text) = error(&["frobnicate"]);
        assert_eq!(kind, ErrorKind::InvalidSubcommand);
        assert!(text.contains("frobnicate"), "{text}");
        let (kind, text) = error(&["bench", "--fast"]);
        assert_eq!(kind, ErrorKind::UnknownArgument);
        assert!(text.contains("--fast"), "{text}");
    }

    #[test]
    fn numbers_are_parsed_or_refused() {
        let (kind, text) = error(&["ct", "--count", "abc"]);
        assert_eq!(kind, ErrorKind::ValueValidation);
        assert!(text.contains("--count") && text.contains("abc"), "{text}");
        // Below the minimum: refused, not silently raised.
        assert_eq!(error(&["ct", "--count", "1"]).0, ErrorKind::ValueValidation);
        assert_eq!(error(&["mqtt", "--seeds", "0"]).0, ErrorKind::ValueValidation);
        assert_eq!(
            error(&["kat", "--scheme", "lightsaber", "--count", "0"]).0,
            ErrorKind::ValueValidation
        );
        match parse(&["ct", "--count", "8", "--jobs", "1"]).unwrap().command {
            Cmd::Ct(a) => assert_eq!((a.count, a.jobs), (8, 1)),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn unknown_mcus_name_the_supported_ones() {
        let (kind, text) = error(&["sim-test", "--mcu", "atmega328p"]);
        assert_eq!(kind, ErrorKind::ValueValidation);
        assert!(
            text.contains("atmega328p") && text.contains("atmega1284p, atmega4808"),
            "{text}"
        );
        match parse(&["bench", "--mcu", "atmega4808"]).unwrap().command {
            Cmd::Bench(a) => assert_eq!(a.mcu.name, "atmega4808"),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn dfr_hands_every_option_to_its_binary() {
        match parse(&["dfr", "--keys", "5", "--help"]).unwrap().command {
            Cmd::Dfr { args } => assert_eq!(args, ["--keys", "5", "--help"]),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn kat_needs_a_scheme_and_a_48_byte_seed() {
        assert_eq!(error(&["kat"]).0, ErrorKind::MissingRequiredArgument);
        let (kind, text) = error(&["kat", "--scheme", "lightsaber", "--master-seed", "00ff"]);
        assert_eq!(kind, ErrorKind::ValueValidation);
        assert!(text.contains("48 bytes, got 2"), "{text}");
    }

    #[test]
    fn only_building_commands_set_up_the_machine() {
        assert!(parse(&["bench"]).unwrap().command.needs_machine());
        assert!(parse(&["ci"]).unwrap().command.needs_machine());
        assert!(!parse(&["report"]).unwrap().command.needs_machine());
        assert!(!parse(&["kat", "--scheme", "lightsaber"])
            .unwrap()
            .command
            .needs_machine());
    }

    /// The modules a source file names through `crate::…`.
    fn used_modules(text: &str) -> Vec<String> {
        let mut used = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                // `use crate::{a, b::c, …}`
                Some(group) => group[..group.find('}').unwrap_or(0)]
                    .split(',')
                    .map(|n| n.trim().split("::").next().unwrap_or(""))
                    .collect(),
                None => vec![rest
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")],
            };
            for n in names {
                let n = n.split_whitespace().next().unwrap_or("");
                if !n.is_empty() && n.chars().next().is_some_and(|c| c.is_lowercase()) && !used.iter().any(|u| u == n) {
                    used.push(n.to_string());
                }
            }
        }
        used
    }

    #[test]
    fn modules_import_only_lower_layers() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(&src).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if name == "main" {
                continue;
            }
            // A module is a file, or a folder of submodules beside it.
            let files: Vec<std::path::PathBuf> = if path.is_dir() {
                std::fs::read_dir(&path).unwrap().flatten().map(|e| e.path()).collect()
            } else {
                vec![path.clone()]
            };
            let rank = LAYERS
                .iter()
                .position(|m| *m == name)
                .unwrap_or_else(|| panic!("module `{name}` is not in LAYERS"));
            for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")) {
                let text = std::fs::read_to_string(file).unwrap();
                for used in used_modules(&text) {
                    if used == name {
                        continue;
                    }
                    let used_rank = LAYERS.iter().position(|m| *m == used);
                    assert!(
                        used_rank.is_some_and(|r| r < rank),
                        "{} uses `{used}`, which is not below `{name}` in LAYERS",
                        file.display()
                    );
                }
            }
            seen.push(name);
        }
        for m in LAYERS {
            assert!(seen.iter().any(|s| s == m), "LAYERS names `{m}`, which has no source");
        }
    }

    #[test]
    fn the_import_scan_sees_every_form() {
        let text = "use crate::{kems as kemsim, published::X, util};\nlet b = crate::avr::build(m);";
        assert_eq!(used_modules(text), ["kems", "published", "util", "avr"]);
    }

    #[test]
    fn ci_internal_argument_lists_parse() {
        args::<simtest::SimTestArgs>(&["sim-test", "--mcu", "atmega4808", "--kat", "1", "--require-fit"]).unwrap();
        args::<mqtt::MqttArgs>(&["mqtt", "--seeds", "3"]).unwrap();
        assert!(args::<ct::CtArgs>(&["ct", "--count", "x"]).is_err());
    }
}
