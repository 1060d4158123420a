//! The firmware examples under `examples/` (issue #35): each is its own
//! Cargo project that `cargo run --release` builds for an AVR and runs in
//! simavr through `examples/run-avr`, as its README tells a user. CI runs
//! every one that way and compares what it prints with the example's
//! `expected-output.txt`.

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

/// The name of the file holding what an example must print.
const EXPECTED: &str = "expected-output.txt";

/// Every example project with an `expected-output.txt`, sorted by name.
pub fn all() -> Result<Vec<PathBuf>, String> {
    let dir = util::workspace_root().join("examples");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(EXPECTED).is_file())
        .collect();
    found.sort();
    Ok(found)
}

/// `cargo ARGS` in `example`, as a user runs it there.
fn cargo_in(example: &Path, args: &[&str]) -> Command {
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

/// Runs one example as its README does and returns what it printed.
pub fn run(example: &Path) -> Result<String, String> {
    let mut cmd = cargo_in(example, &["run", "--release", "-q"]);
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

/// The round-trip example built for the Arduino Uno's ATmega328p (2 KB of
/// SRAM) must fail in `kyber512-avr`'s build script with a message naming
/// the crate, the MCU and the bytes needed, not with a linker error. The
/// extra `build.rustflags` comes after the example's own, and rustc (and so
/// the build script) takes the last `-C target-cpu`.
pub fn check_refusal() -> Result<(), String> {
    let example = util::workspace_root().join("examples/avr-kem-roundtrip");
    let rustflags = r#"build.rustflags=["-C","target-cpu=atmega328p"]"#;
    let mut cmd = cargo_in(
        &example,
        &[
            "build",
            "--release",
            "--config",
            rustflags,
            "--target-dir",
            "target/uno-refusal",
        ],
    );
    eprintln!("xtask: running {cmd:?} (must fail)");
    let out = cmd.output().map_err(|e| format!("cannot start cargo: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    let wanted = "kyber512-avr cannot run on the atmega328p (Arduino Uno): its lightest operation needs";
    if out.status.success() || !err.contains(wanted) || err.contains("not within region") {
        return Err(format!(
            "building {} for the atmega328p should fail with \"{wanted} …\"; it ended with {}:\n{err}",
            example.display(),
            out.status
        ));
    }
    eprintln!("xtask: the atmega328p build is refused by name and bytes");
    Ok(())
}

/// Runs every example; each must print exactly its `expected-output.txt`.
pub fn check_all() -> Result<(), String> {
    let examples = all()?;
    if examples.is_empty() {
        return Err("no example with an expected-output.txt under examples/".into());
    }
    for example in &examples {
        let expected_file = example.join(EXPECTED);
        let expected = std::fs::read_to_string(&expected_file)
            .map_err(|e| format!("cannot read {}: {e}", expected_file.display()))?;
        let printed = run(example)?;
        if printed != expected {
            return Err(format!(
                "{} printed\n{printed}\ninstead of ({}):\n{expected}",
                example.display(),
                expected_file.display()
            ));
        }
        eprintln!("xtask: {} printed its expected output", example.display());
    }
    check_refusal()
}
