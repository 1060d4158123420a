//! Support for the differential tests of hand-written assembly (`tests/avr_*.rs`
//! in fips202, ascon-sponge, modarith, ctru-light and x25519-avr): build a
//! small C harness around one routine with avr-gcc, stop it and read its
//! timed calls, and check that generated assembly is what its generator
//! prints today.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The generator the tests draw their random inputs from: the workspace's
/// one seeded ChaCha20 (`kem_common::test_rng`), 64 bits a call,
/// reproducible from `seed`.
pub fn random(seed: u64) -> impl FnMut() -> u64 {
    let mut rng = kem_common::test_rng(seed);
    move || kem_common::rand_core::Rng::next_u64(&mut rng)
}

/// The timed calls of a harness run: each call is one GPIOR0 window.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Timed calls.
    pub calls: usize,
    /// Fewest cycles of a call.
    pub min: u64,
    /// Most cycles of a call.
    pub max: u64,
    /// Largest stack of a call, bytes.
    pub stack: u16,
}

/// Sends a harness the end request (a 0 byte), runs it to its exit and
/// returns its timed calls.
pub fn stop_and_time(sim: &mut crate::Sim) -> Result<Timing, String> {
    sim.send(&[0]);
    sim.run_to_exit(1_000_000)
        .map_err(|e| format!("harness does not stop: {e}"))?;
    let windows = crate::windows(&sim.take_markers()).map_err(|e| format!("unpaired markers: {e}"))?;
    Ok(Timing {
        calls: windows.len(),
        min: windows.iter().map(|w| w.cycles).min().unwrap_or(0),
        max: windows.iter().map(|w| w.cycles).max().unwrap_or(0),
        stack: windows.iter().map(|w| w.stack_bytes).max().unwrap_or(0),
    })
}

/// Compiles and links `sources` (C and `.S` files) for `mcu` with
/// `avr-gcc -Os` into `out`.
pub fn build_elf(mcu: &str, out: &Path, sources: &[PathBuf]) -> Result<(), String> {
    let status = Command::new("avr-gcc")
        .arg(format!("-mmcu={mcu}"))
        .args(["-Os", "-o"])
        .arg(out)
        .args(sources)
        .status()
        .map_err(|e| format!("cannot run avr-gcc ({e}): run `cargo xtask setup`"))?;
    if !status.success() {
        return Err(format!("avr-gcc failed to build {}", out.display()));
    }
    Ok(())
}

/// Whether `python3 generator` prints exactly the committed file `generated`
/// (trailing whitespace aside).
pub fn is_generated_by(generated: &Path, generator: &Path) -> Result<bool, String> {
    is_generated_by_with(generated, generator, &[])
}

/// [`is_generated_by`] for a generator run with `args`.
pub fn is_generated_by_with(generated: &Path, generator: &Path, args: &[&str]) -> Result<bool, String> {
    let out = Command::new("python3")
        .arg(generator)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run python3 ({e})"))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            generator.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let committed =
        std::fs::read_to_string(generated).map_err(|e| format!("cannot read {}: {e}", generated.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim_end() == committed.trim_end())
}
