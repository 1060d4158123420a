//! `cargo xtask setup`: makes this machine able to build, simulate and test.
//!
//! It checks *capabilities*, not package names: a package can be installed
//! and still be useless (Debian bookworm's main `rustc-web` 1.85 has no
//! `avr-none` target; the version the project needs comes from
//! bookworm-security). [`probe`] reads the machine into [`Capabilities`],
//! [`plan`] decides from them alone what to do (unit-tested for every state
//! without touching the machine), and [`setup`] carries the plan out:
//! `apt-get update` first whenever anything is to be installed (a new
//! machine's package lists are old), then one `apt-get install`, then a
//! second probe that must find everything.

use std::path::Path;
use std::process::Command;

use crate::util;

/// The oldest Debian `rustc-web` the AVR build is made with. Older ones lack
/// the `avr-none` target, and the benchmark tables (the Rust glue's cycles)
/// were measured with this LLVM: a user reproducing them needs the same.
pub const MIN_AVR_RUSTC: (u32, u32) = (1, 96);

/// The AVR compiler and cargo from Debian's rustc-web/cargo-web (the rustup host toolchain stays untouched).
pub const AVR_RUSTC: &str = "/usr/bin/rustc";
/// The cargo of Debian's rustc-web, which builds the AVR images.
pub const AVR_CARGO: &str = "/usr/bin/cargo";

/// The core library's source that `-Zbuild-std=core` compiles (rust-web-src).
const RUST_SRC: &str = "/usr/lib/rustlib/src/rust/library/core/Cargo.toml";
/// Headers the simulator binding (crate `avr-sim`) compiles against.
const SIMAVR_HEADERS: &[&str] = &["/usr/include/simavr/sim_avr.h", "/usr/include/libelf.h"];
/// avr-libc's device headers (the firmware's C start-up and the assembly include them).
const AVR_LIBC: &str = "/usr/lib/avr/include/avr/io.h";
/// The broker and the plugin API the KEM-MQTT integration tests build
/// against, `mosquitto_sub`/`mosquitto_pub`, their applications, and
/// `openssl`, with which docs/broker.md makes the TLS certificates (a test
/// runs those commands).
const MOSQUITTO: &[&str] = &[
    "/usr/sbin/mosquitto",
    "/usr/include/mosquitto_plugin.h",
    "/usr/bin/mosquitto_sub",
    "/usr/bin/mosquitto_pub",
    "/usr/bin/openssl",
];

/// PostgreSQL's server and `pg_isready`, which hold the registry for
/// kem-mqtt-host's database tests and `cargo xtask registry`
/// (`avr_lab::mqtt::registry_db`, under Debian's versioned directory).
const POSTGRESQL: &str = "/usr/lib/postgresql";

/// RabbitMQ, the clustered MQTT broker of `cargo xtask fleet`
/// (`avr_lab::mqtt::rabbitmq`).
const RABBITMQ: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

/// avrdude, which `cargo xtask flash` runs (its test flashes a simulated bootloader).
const AVRDUDE: &str = "/usr/bin/avrdude";

/// Environment guard: set on the one re-run of the xtask after it was rebuilt
/// with the simulator, so that a rebuild that still lacks it is an error, not a loop.
pub const REEXEC_GUARD: &str = "XTASK_REBUILT_WITH_SIMULATOR";

/// What the machine can do, as far as this project is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Debian's rustc at [`AVR_RUSTC`]: its (major, minor) version, if it runs.
    pub avr_rustc: Option<(u32, u32)>,
    /// Whether that rustc lists the `avr-none` target.
    pub avr_none: bool,
    /// Debian's cargo at [`AVR_CARGO`] and the core library source.
    pub avr_cargo_and_src: bool,
    /// avr-gcc, avr-libc and the binutils the build and the size report run.
    pub avr_gcc: bool,
    /// The simavr and libelf headers (and so their libraries) are installed.
    pub simavr_headers: bool,
    /// `pkg-config` (the simulator's and mosquitto's -sys builds ask it).
    pub pkg_config: bool,
    /// Debian's mosquitto broker, its plugin headers and its command-line clients
    /// (the end-to-end tests' applications).
    pub mosquitto: bool,
    /// Debian's PostgreSQL server (the registry database's tests).
    pub postgresql: bool,
    /// Debian's RabbitMQ server (the fleet's clustered broker).
    pub rabbitmq: bool,
    /// avrdude (flashing boards).
    pub avrdude: bool,
    /// This xtask binary was compiled with the simulator (`avr_sim::AVAILABLE`).
    pub binding_built: bool,
}

impl Capabilities {
    /// Whether the AVR compiler is recent enough and targets `avr-none`.
    pub fn rustc_ok(&self) -> bool {
        self.avr_none && self.avr_rustc.is_some_and(|v| v >= MIN_AVR_RUSTC)
    }
}

/// What [`setup`] has to do about a set of [`Capabilities`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Debian packages to install or upgrade (empty: nothing to do).
    pub packages: Vec<&'static str>,
    /// Run `apt-get update` before installing: always when installing,
    /// since a new machine's lists name old versions (rustc-web 1.85).
    pub update: bool,
    /// The xtask binary must be rebuilt (once) to get the simulator.
    pub rebuild: bool,
    /// Why, one line per missing capability, for the user.
    pub reasons: Vec<String>,
}

/// Decides what to install, from the capabilities alone.
pub fn plan(c: &Capabilities) -> Plan {
    let mut packages: Vec<&'static str> = Vec::new();
    let mut reasons = Vec::new();
    let mut need = |ok: bool, pkgs: &[&'static str], why: String| {
        if !ok {
            for p in pkgs {
                if !packages.contains(p) {
                    packages.push(p);
                }
            }
            reasons.push(why);
        }
    };
    let (maj, min) = MIN_AVR_RUSTC;
    let rustc_why = match c.avr_rustc {
        None => format!("{AVR_RUSTC} is missing (Debian rustc-web ≥ {maj}.{min})"),
        Some((a, b)) if !c.avr_none => {
            format!("{AVR_RUSTC} {a}.{b} has no avr-none target (needs rustc-web ≥ {maj}.{min})")
        }
        Some((a, b)) => format!("{AVR_RUSTC} {a}.{b} is older than {maj}.{min}"),
    };
    // rustc-web, cargo-web and rust-web-src must be one version: upgrade together.
    let rust = ["rustc-web", "cargo-web", "rust-web-src"];
    need(c.rustc_ok(), &rust, rustc_why);
    need(
        c.avr_cargo_and_src,
        &rust,
        format!("{AVR_CARGO} or the core source {RUST_SRC} is missing"),
    );
    need(
        c.avr_gcc,
        &["gcc-avr", "avr-libc", "binutils-avr"],
        "avr-gcc, avr-libc or the AVR binutils are missing".into(),
    );
    need(
        c.simavr_headers,
        &["simavr", "libsimavr-dev", "libelf-dev"],
        format!("the simulator headers {} are missing", SIMAVR_HEADERS.join(", ")),
    );
    need(c.pkg_config, &["pkg-config"], "pkg-config is missing".into());
    need(
        c.mosquitto,
        &["mosquitto", "mosquitto-dev", "mosquitto-clients", "openssl"],
        format!(
            "the broker, its plugin headers or its clients ({}) are missing",
            MOSQUITTO.join(", ")
        ),
    );
    need(
        c.postgresql,
        &["postgresql"],
        format!("the PostgreSQL server ({POSTGRESQL}/*/bin/postgres) is missing"),
    );
    need(
        c.rabbitmq,
        &["rabbitmq-server"],
        format!("the RabbitMQ server ({RABBITMQ}) is missing"),
    );
    need(c.avrdude, &["avrdude"], format!("{AVRDUDE} is missing"));
    // The binding is compiled when the xtask is: once the headers are there
    // (now or after the install) a binary built without them must be rebuilt.
    let rebuild = !c.binding_built;
    if rebuild {
        reasons.push("this xtask binary was built without the simulator".into());
    }
    Plan {
        update: !packages.is_empty(),
        packages,
        rebuild,
        reasons,
    }
}

/// Parses `rustc 1.85.0 (…)` into (1, 85).
pub fn parse_rustc_version(text: &str) -> Option<(u32, u32)> {
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn stdout_of(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Reads the machine's capabilities (runs a few `--version`s, checks files).
pub fn probe() -> Capabilities {
    let avr_rustc = stdout_of(Command::new(AVR_RUSTC).arg("--version"))
        .as_deref()
        .and_then(parse_rustc_version);
    let avr_none = avr_rustc.is_some()
        && stdout_of(Command::new(AVR_RUSTC).args(["--print", "target-list"]))
            .is_some_and(|list| list.lines().any(|t| t.trim() == "avr-none"));
    let exist = |paths: &[&str]| paths.iter().all(|p| Path::new(p).exists());
    Capabilities {
        avr_rustc,
        avr_none,
        avr_cargo_and_src: exist(&[AVR_CARGO, RUST_SRC]),
        avr_gcc: exist(&[AVR_LIBC]) && ["avr-gcc", "avr-size", "avr-objdump", "avr-nm"].into_iter().all(runs),
        simavr_headers: exist(SIMAVR_HEADERS),
        pkg_config: runs("pkg-config"),
        mosquitto: exist(MOSQUITTO),
        postgresql: std::fs::read_dir(POSTGRESQL).is_ok_and(|versions| {
            versions
                .filter_map(|v| v.ok())
                .any(|v| v.path().join("bin/postgres").exists() && v.path().join("bin/pg_isready").exists())
        }),
        rabbitmq: exist(&[RABBITMQ]),
        avrdude: exist(&[AVRDUDE]),
        binding_built: avr_sim::AVAILABLE,
    }
}

fn is_root() -> bool {
    stdout_of(Command::new("id").arg("-u")).is_some_and(|s| s.trim() == "0")
}

/// The exact commands that carry out `plan`'s installs.
fn commands(plan: &Plan) -> Vec<String> {
    vec![
        "apt-get update".to_string(),
        format!("apt-get install -y --no-install-recommends {}", plan.packages.join(" ")),
    ]
}

/// Installs what is missing; returns whether the xtask binary must be rebuilt
/// (it was compiled before the simulator's headers existed).
pub fn ensure_machine() -> Result<bool, String> {
    let before = probe();
    let plan = plan(&before);
    if plan.packages.is_empty() {
        if !plan.rebuild {
            eprintln!("xtask: the AVR toolchain, simulator and broker are ready");
        }
        return Ok(plan.rebuild);
    }
    let cmds = commands(&plan);
    if !is_root() {
        return Err(format!(
            "this machine cannot build or simulate the firmware yet:\n  - {}\nrun as root:\n  {}",
            plan.reasons.join("\n  - "),
            cmds.join(" && ")
        ));
    }
    eprintln!(
        "xtask: setting up this machine (apt-get update, then the missing packages):\n  - {}",
        plan.reasons.join("\n  - ")
    );
    util::run(
        Command::new("apt-get")
            .arg("update")
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    util::run(
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(&plan.packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    let after = self::plan(&probe());
    if !after.packages.is_empty() {
        return Err(format!(
            "after `{}` this machine still lacks:\n  - {}\n(is bookworm-security in the apt sources? rustc-web ≥ {}.{} comes from there)",
            cmds.join(" && "),
            after.reasons.join("\n  - "),
            MIN_AVR_RUSTC.0,
            MIN_AVR_RUSTC.1
        ));
    }
    Ok(after.rebuild)
}

/// Options of `cargo xtask setup`.
#[derive(clap::Parser, Debug)]
pub struct SetupArgs {
    /// Also build yasimavr (the ATmega4808 simulator, PyPI) into .venv
    #[arg(long)]
    pub yasimavr: bool,
}

/// `cargo xtask setup [--yasimavr]`: installs what is missing (idempotent);
/// with `--yasimavr`, also yasimavr (PyPI) into `.venv` for the ATmega4808.
pub fn setup(opts: &SetupArgs) -> Result<(), String> {
    if ensure_machine()? {
        eprintln!("xtask: the simulator is installed; the next xtask command rebuilds the xtask with it");
    }
    if opts.yasimavr {
        setup_yasimavr()?;
    }
    Ok(())
}

/// The Python of the yasimavr environment (`.venv`) to run a script on
/// `mcu` (`YASIM_MCU`, which `firmware/avr/yasim_uart.py` loads),
/// installing yasimavr first if it is not there (as [`ensure_machine`]
/// installs the Debian packages): every megaAVR 0-series run needs it.
pub fn yasim(mcu: &str) -> Result<Command, String> {
    let python = util::workspace_root().join(".venv/bin/python");
    if !python.exists() {
        eprintln!("xtask: the {mcu} runs need yasimavr, which is not installed yet");
        setup_yasimavr()?;
    }
    let mut cmd = Command::new(python);
    cmd.env("YASIM_MCU", mcu);
    Ok(cmd)
}

/// yasimavr (the ATmega4808 simulator) into `.venv`; it builds from source (≈ 2 min).
pub fn setup_yasimavr() -> Result<(), String> {
    let venv = util::workspace_root().join(".venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        util::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    let have = Command::new(&python)
        .args(["-c", "import yasimavr"])
        .output()
        .is_ok_and(|o| o.status.success());
    // yasimavr checks every NVM write against the flash sections' access
    // rights, EEPROM writes too, with the EEPROM offset taken for a flash
    // address: the 4808's EEPROM page-buffer store (the sensor's handshake
    // counter) crashes it with "CPU writing a locked flash address". Built
    // with YASIMAVR_NO_ACC_CTRL, the check is compiled out; our firmware
    // never writes flash, so nothing it could catch is lost.
    let marker = venv.join("yasimavr-no-acc-ctrl");
    if !have || !marker.exists() {
        eprintln!(
            "xtask: building yasimavr from PyPI into {} without flash access control (≈ 2 minutes)",
            venv.display()
        );
        util::run(
            Command::new(&python)
                .args(["-m", "pip", "install", "-q", "--force-reinstall", "--no-deps"])
                .args(["--no-binary", "yasimavr", "--no-cache-dir", "yasimavr"])
                .env("CFLAGS", "-DYASIMAVR_NO_ACC_CTRL")
                .env("CXXFLAGS", "-DYASIMAVR_NO_ACC_CTRL"),
        )?;
        if !have {
            // Its dependencies, which --no-deps left out on a first install.
            util::run(Command::new(&python).args(["-m", "pip", "install", "-q", "yasimavr"]))?;
        }
        std::fs::write(&marker, "built with -DYASIMAVR_NO_ACC_CTRL\n")
            .map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    }
    eprintln!("xtask: yasimavr available in {}", venv.display());
    Ok(())
}

/// Rebuilds and re-runs the xtask once, now that the simulator is installed.
///
/// Cargo would not rebuild the binding by itself: its build script watches
/// `sim_avr.h`, but dpkg gives the new header the package's old mtime, so the
/// script's output (`cfg(no_simavr)`) looks fresh forever. `cargo clean -p
/// avr-sim` removes that output, so the next build runs the script again and
/// finds the headers. [`REEXEC_GUARD`] makes a second attempt an error.
pub fn rebuild_and_rerun(args: &[String]) -> Result<(), String> {
    if std::env::var_os(REEXEC_GUARD).is_some() {
        return Err(format!(
            "the xtask was rebuilt but still has no simulator although {} exist; \
             look for avr-sim's build-script warning above",
            SIMAVR_HEADERS.join(" and ")
        ));
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("xtask: rebuilding the xtask with the simulator (once)");
    util::run(Command::new(&cargo).args(["clean", "--package", "avr-pqc-sim"]))?;
    // Through the alias, so the rebuild uses the same profile as the first build.
    util::run(
        Command::new(&cargo)
            .current_dir(util::workspace_root())
            .arg("xtask")
            .args(args)
            .env(REEXEC_GUARD, "1"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_good() -> Capabilities {
        Capabilities {
            avr_rustc: Some(MIN_AVR_RUSTC),
            avr_none: true,
            avr_cargo_and_src: true,
            avr_gcc: true,
            simavr_headers: true,
            pkg_config: true,
            mosquitto: true,
            postgresql: true,
            rabbitmq: true,
            avrdude: true,
            binding_built: true,
        }
    }

    #[test]
    fn nothing_installed_installs_everything_after_an_update() {
        let c = Capabilities {
            avr_rustc: None,
            avr_none: false,
            avr_cargo_and_src: false,
            avr_gcc: false,
            simavr_headers: false,
            pkg_config: false,
            mosquitto: false,
            postgresql: false,
            rabbitmq: false,
            avrdude: false,
            binding_built: false,
        };
        let p = plan(&c);
        assert!(p.update);
        assert!(p.rebuild);
        for pkg in [
            "rustc-web",
            "cargo-web",
            "rust-web-src",
            "gcc-avr",
            "avr-libc",
            "binutils-avr",
            "simavr",
            "libsimavr-dev",
            "libelf-dev",
            "pkg-config",
            "mosquitto",
            "mosquitto-dev",
            "mosquitto-clients",
            "openssl",
            "postgresql",
            "rabbitmq-server",
            "avrdude",
        ] {
            assert!(p.packages.contains(&pkg), "{pkg} missing from {:?}", p.packages);
        }
        let mut unique = p.packages.clone();
        unique.dedup();
        assert_eq!(unique.len(), p.packages.len(), "no package twice");
    }

    #[test]
    fn stale_rustc_without_avr_none_is_upgraded_after_an_update() {
        // Debian bookworm main: rustc-web 1.85, no avr-none; everything else present.
        let c = Capabilities {
            avr_rustc: Some((1, 85)),
            avr_none: false,
            ..all_good()
        };
        let p = plan(&c);
        assert!(p.update, "the lists must be refreshed: they name 1.85");
        assert_eq!(p.packages, vec!["rustc-web", "cargo-web", "rust-web-src"]);
        assert!(!p.rebuild);
        assert!(p.reasons[0].contains("1.85") && p.reasons[0].contains("avr-none"));
    }

    #[test]
    fn rustc_with_avr_none_but_older_than_needed_is_upgraded() {
        let c = Capabilities {
            avr_rustc: Some((MIN_AVR_RUSTC.0, MIN_AVR_RUSTC.1 - 1)),
            ..all_good()
        };
        assert_eq!(plan(&c).packages, vec!["rustc-web", "cargo-web", "rust-web-src"]);
    }

    #[test]
    fn headers_present_but_binding_built_without_them_rebuilds_only() {
        let c = Capabilities {
            binding_built: false,
            ..all_good()
        };
        let p = plan(&c);
        assert!(p.packages.is_empty());
        assert!(!p.update, "nothing to install, no update");
        assert!(p.rebuild);
    }

    #[test]
    fn missing_simulator_headers_install_and_rebuild() {
        // The state: libsimavr-dev absent, so the binding was built without it.
        let c = Capabilities {
            simavr_headers: false,
            binding_built: false,
            ..all_good()
        };
        let p = plan(&c);
        assert!(p.update);
        assert_eq!(p.packages, vec!["simavr", "libsimavr-dev", "libelf-dev"]);
        assert!(p.rebuild);
    }

    #[test]
    fn all_good_does_nothing() {
        let p = plan(&all_good());
        assert_eq!(
            p,
            Plan {
                packages: vec![],
                update: false,
                rebuild: false,
                reasons: vec![]
            }
        );
    }

    #[test]
    fn commands_update_before_installing() {
        let p = plan(&Capabilities {
            pkg_config: false,
            ..all_good()
        });
        assert_eq!(
            commands(&p),
            vec![
                "apt-get update".to_string(),
                "apt-get install -y --no-install-recommends pkg-config".to_string()
            ]
        );
    }

    #[test]
    fn rustc_versions_parse() {
        assert_eq!(
            parse_rustc_version("rustc 1.85.0 (4d91de4e4 2025-02-17) (built from a source tarball)"),
            Some((1, 85))
        );
        assert_eq!(parse_rustc_version("rustc 1.96.1"), Some((1, 96)));
        assert_eq!(parse_rustc_version("garbage"), None);
        assert_eq!(parse_rustc_version(""), None);
    }
}
