//! Every command of `cargo xtask` and its options (each options type is the
//! lab's, beside the code that reads it).

use clap::{Parser, Subcommand};

/// `cargo xtask <command>`: the project's tasks.
#[derive(Parser, Debug)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Build, simulate, test and benchmark the AVR post-quantum KEMs",
    arg_required_else_help = true
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// What CI runs: fmt, clippy and rustdoc (warnings denied), every test, the AVR
    /// builds, the simulated differential and KAT tests, the AVR constant-time
    /// check, the valgrind secret-independence check and a short fuzzing run
    Ci,
    /// The ATmega4808 part of CI (yasimavr), which `ci` runs as a process of
    /// its own beside its simavr steps
    #[command(hide = true)]
    Ci4808,
    /// Check what this machine can do (Debian rustc-web with avr-none, avr-gcc, the
    /// simulator headers, mosquitto) and, as root, apt-get update + install what is
    /// missing or too old; otherwise print the commands
    Setup(avr_lab::setup::SetupArgs),
    /// Cross-build firmware images and report flash and static RAM
    BuildAvr(avr_lab::build::build_avr::BuildArgs),
    /// Randomised differential test of the ring operations (firmware in simavr vs
    /// modarith) and official KAT records reproduced by the firmware
    SimTest(avr_lab::measure::simtest::SimTestArgs),
    /// Constant-time check in simavr: every KEM operation takes the same cycles
    /// (and per-address instruction counts) for every input
    Ct(avr_lab::measure::ct::CtArgs),
    /// Cycles, stack and code size of every operation in simavr (with --device: on a
    /// board over its serial port); writes benchmarks/MCU/*.json, benchmarks/latest.json
    /// and docs/benchmarks.*
    Bench(avr_lab::measure::bench::BenchArgs),
    /// Write a firmware image to a board with avrdude (bootloader or UPDI adapter)
    Flash(avr_lab::build::flash::FlashArgs),
    /// A simulated ATmega1284p board on a pseudo-terminal: try `bench --device`
    /// and `kem-mqtt serial-bridge` without a board
    SimPty(avr_lab::measure::bench::SimPtyArgs),
    /// The KEM-MQTT/1 sensor handshake of every suite on the AVR against the host broker
    /// (with --broker: one suite's sensor against a real MQTT broker over TCP)
    Mqtt(avr_lab::mqtt::handshake::MqttArgs),
    /// The simulated AVR sensor end to end through mosquitto (plugin, and gateway):
    /// mosquitto_sub must print its reading
    E2e(avr_lab::mqtt::e2e::E2eArgs),
    /// Your own sensor firmware (an ELF with its keys) in simavr on a pty, with
    /// `kem-mqtt serial-bridge` and mosquitto with the plugin: prints what
    /// `mosquitto_sub -t 'plain/#' -v` receives (examples/avr-mqtt-sensor's runner)
    SensorSim(avr_lab::mqtt::e2e_session::SensorSimArgs),
    /// A fleet of host sensors against mosquitto (plugin, and gateway) on loopback:
    /// handshakes/s, latency, records/s, broker CPU and RSS → docs/benchmarks.md
    MqttLoad(avr_lab::mqtt::mqtt_load::MqttLoadArgs),
    /// Enrolment and revocation against a 100,000-sensor registry in each store
    /// (registry.json, SQLite, PostgreSQL): `kem-mqtt provision`/`revoke` and the
    /// time until every node has the revocation → docs/benchmarks.md
    Registry(avr_lab::mqtt::registry_bench::RegistryArgs),
    /// A fleet on a clustered broker: PostgreSQL, three RabbitMQ nodes, three
    /// gateways, N host sensors sending QoS 1 readings; one node killed in the
    /// middle, one sensor revoked; ends with lost/duplicated counts
    Fleet(avr_lab::mqtt::fleet::FleetArgs),
    /// NIST-format KAT file from the NIST DRBG; --check compares with kat-vectors/
    Kat(avr_lab::measure::kat::KatArgs),
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
    /// Which KEM and which KEM-MQTT suite fits which board (Uno, Mega 2560,
    /// ATmega1284p, Nano Every, ATmega4808): builds and runs each in the
    /// simulator → benchmarks/boards.json, docs/boards.md
    Boards(avr_lab::measure::boards::BoardsArgs),
    /// ML-KEM-512, -768 and -1024 on the simulated ATmega1284p: cycles and stack of
    /// each operation (examples/avr-ml-kem-sets)
    MlKemSets,
    /// Build and run every firmware example in examples/ as its README does
    /// (`cargo run --release`: simavr) and check what each prints
    Examples,
    /// Pack every publishable crate (`cargo package`), build
    /// examples/avr-kem-kat for the ATmega1284p against the packs and check
    /// its ML-KEM-512 KAT record in simavr
    Packaged,
}

impl Cmd {
    /// Whether the command builds or simulates firmware (and so needs the machine set up).
    pub fn needs_machine(&self) -> bool {
        matches!(
            self,
            Cmd::Ci
                | Cmd::Ci4808
                | Cmd::Bench(_)
                | Cmd::Flash(_)
                | Cmd::SimPty(_)
                | Cmd::SimTest(_)
                | Cmd::Ct(_)
                | Cmd::Mqtt(_)
                | Cmd::E2e(_)
                | Cmd::SensorSim(_)
                | Cmd::BuildAvr(_)
                | Cmd::Examples
                | Cmd::MlKemSets
                | Cmd::Packaged
                | Cmd::Boards(_)
                | Cmd::Fleet(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    use super::*;
    use avr_lab::args;
    use avr_lab::measure::{ct, simtest};
    use avr_lab::mqtt::handshake;

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
            "sensor-sim",
            "kat",
            "report",
            "boards",
            "examples",
            "packaged",
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
    fn sensor_sim_needs_its_firmware_and_key_file() {
        assert_eq!(
            error(&["sensor-sim", "--key", "k.json"]).0,
            ErrorKind::MissingRequiredArgument
        );
        assert_eq!(
            error(&["sensor-sim", "--elf", "s.elf"]).0,
            ErrorKind::MissingRequiredArgument
        );
        let (kind, text) = error(&["sensor-sim", "--elf", "s.elf", "--key", "k.json", "--mcu", "atmega8"]);
        assert_eq!(kind, ErrorKind::ValueValidation);
        assert!(text.contains("atmega8"), "{text}");
        match parse(&["sensor-sim", "--elf", "s.elf", "--key", "k.json"])
            .unwrap()
            .command
        {
            Cmd::SensorSim(a) => assert_eq!((a.mcu.name, a.readings), ("atmega1284p", 3)),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn unknown_mcus_name_the_supported_ones() {
        let (kind, text) = error(&["sim-test", "--mcu", "atmega8"]);
        assert_eq!(kind, ErrorKind::ValueValidation);
        assert!(
            text.contains("atmega8") && text.contains("atmega1284p, atmega4808, atmega328p, atmega2560, atmega4809"),
            "{text}"
        );
        match parse(&["bench", "--mcu", "atmega4808"]).unwrap().command {
            Cmd::Bench(a) => assert_eq!(a.mcu.name, "atmega4808"),
            other => panic!("parsed as {other:?}"),
        }
    }

    /// Issue #35: a misspelt image or scheme is a usage error (exit 2)
    /// while parsing, which `main` does before the machine check (which, as
    /// root, may run apt-get).
    #[test]
    fn unknown_images_and_schemes_are_refused_while_parsing() {
        for argv in [
            &["build-avr", "--image", "kyberr"][..],
            &["flash", "--image", "kyberr", "--port", "/dev/ttyUSB0"],
            &["sim-pty", "--image", "kyberr"],
            &["bench", "--device", "/dev/ttyUSB0", "--image", "kyberr"],
        ] {
            let (kind, text) = error(argv);
            assert_eq!(kind, ErrorKind::ValueValidation, "{argv:?}");
            assert!(
                text.contains("unknown image `kyberr`") && text.contains("known: all"),
                "{text}"
            );
        }
        let (kind, text) = error(&["kat", "--scheme", "nope"]);
        assert_eq!(kind, ErrorKind::ValueValidation);
        assert!(
            text.contains("unknown scheme `nope`") && text.contains("ml-kem-512"),
            "{text}"
        );
        for image in ["rings", "all", "kyber", "mqtt-ml-kem-512-x25519"] {
            parse(&["build-avr", "--image", image]).unwrap_or_else(|e| panic!("{image}: {e}"));
        }
        parse(&["kat", "--scheme", "ctru-light-ascon"]).unwrap();
    }

    /// A KEM-MQTT suite is chosen by its exact name (`ml-kem-768` is not
    /// `ml-kem-768+x25519`), and a misspelt one is refused with the list.
    #[test]
    fn suites_are_chosen_by_name() {
        for cmd in ["mqtt", "mqtt-load"] {
            let (kind, text) = error(&[cmd, "--suite", "ml-kem-769"]);
            assert_eq!(kind, ErrorKind::ValueValidation, "{cmd}");
            assert!(
                text.contains("unknown suite `ml-kem-769`") && text.contains("ml-kem-768+x25519"),
                "{text}"
            );
            assert_eq!(
                error(&[cmd, "--suite", "ml-kem-768", "--filter", "x"]).0,
                ErrorKind::ArgumentConflict
            );
        }
        let Ok(Cli {
            command: Cmd::Mqtt(args),
        }) = parse(&["mqtt", "--suite", "ml-kem-768"])
        else {
            panic!("mqtt --suite ml-kem-768 does not parse");
        };
        let suites = avr_lab::target::Suites::new(args.suite, &args.filter);
        let named = |name| avr_lab::target::suite(name).expect(name);
        assert!(suites.admits("kem-mqtt", named("ml-kem-768")));
        assert!(!suites.admits("kem-mqtt", named("ml-kem-768+x25519")));
        // The text filter, by contrast, takes both.
        let text = avr_lab::target::Suites::new(None, "ml-kem-768");
        assert!(text.admits("kem-mqtt", named("ml-kem-768")) && text.admits("kem-mqtt", named("ml-kem-768+x25519")));
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

    #[test]
    fn ci_internal_argument_lists_parse() {
        args::<simtest::SimTestArgs>(&["sim-test", "--mcu", "atmega4808", "--kat", "1", "--require-fit"]).unwrap();
        args::<handshake::MqttArgs>(&["mqtt", "--seeds", "3"]).unwrap();
        assert!(args::<ct::CtArgs>(&["ct", "--count", "x"]).is_err());
    }
}
