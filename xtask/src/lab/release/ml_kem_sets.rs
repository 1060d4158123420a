//! `cargo xtask ml-kem-sets`: `examples/avr-ml-kem-sets` built as a user
//! builds it and run in the simulated ATmega1284p, its marker windows read
//! back: cycles and stack of every operation of every FIPS 203 set. Not in
//! CI (a 79 KB image to build for numbers CI does not check); the host
//! tests check the sets' bytes (ACVP, RustCrypto `ml-kem`) and
//! `examples/avr-kem-roundtrip` that each round-trips on the AVR.

use crate::release::examples::{cargo_in, shared_target_dir};
use crate::util;

const EXAMPLE: &str = "examples/avr-ml-kem-sets";
/// The window the firmware opens last when every round trip agreed.
const AGREED: u8 = 0x7E;
/// Cycles the whole run may take in the simulator (it needs about 70 M).
const BUDGET: u64 = 500_000_000;

/// Builds, runs and prints the table.
pub fn run() -> Result<(), String> {
    let example = util::workspace_root().join(EXAMPLE);
    let mut build = cargo_in(&example, &["build", "--release", "-q"]);
    build.env("CARGO_TARGET_DIR", shared_target_dir());
    util::run(&mut build)?;
    let elf = shared_target_dir().join("avr-none/release/avr-ml-kem-sets.elf");
    let mut sim = avr_sim::Sim::load(&elf, "atmega1284p").map_err(|e| format!("{}: {e}", elf.display()))?;
    // The firmware sleeps with interrupts off at the end: the budget ends the run.
    let _ = sim.run_to_exit(BUDGET);
    let windows = avr_sim::windows(&sim.take_markers()).map_err(|e| format!("{}: {e}", elf.display()))?;
    if !windows.iter().any(|w| w.id == AGREED) {
        return Err(format!("{}: a round trip disagreed or did not finish", elf.display()));
    }
    println!("| set | keygen cycles | encaps cycles | decaps cycles | stack B (K/E/D) |");
    println!("|---|---:|---:|---:|---|");
    for (set, base) in [("ML-KEM-512", 0x10u8), ("ML-KEM-768", 0x20), ("ML-KEM-1024", 0x30)] {
        let op = |i: u8| windows.iter().find(|w| w.id == base + i);
        let (Some(k), Some(e), Some(d)) = (op(0), op(1), op(2)) else {
            return Err(format!("{}: no windows for {set}", elf.display()));
        };
        println!(
            "| {set} | {} | {} | {} | {} / {} / {} |",
            k.cycles, e.cycles, d.cycles, k.stack_bytes, e.stack_bytes, d.stack_bytes
        );
    }
    Ok(())
}
