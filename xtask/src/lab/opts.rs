//! Process output and the reproducible PRNG of the AVR tasks.

use std::process::Command;

/// Runs a command and returns its stdout; a failure is an error with its stderr.
pub fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The deterministic generator of tests and benchmarks, so runs are reproducible from a seed.
#[derive(Clone, Debug)]
pub struct Rng(rand_chacha::ChaCha20Rng);

impl Rng {
    /// Seeds the generator (the workspace's one seeded ChaCha20,
    /// `kem_common::test_rng`).
    pub fn new(seed: u64) -> Rng {
        Rng(kem_common::test_rng(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        rand_core::Rng::next_u64(&mut self.0)
    }

    /// Uniform in `0..bound` (multiply-shift, no division).
    pub fn below(&mut self, bound: u32) -> u32 {
        (((self.next_u64() >> 32) * bound as u64) >> 32) as u32
    }
}

/// The measured revision: `git rev-parse --short=12 HEAD`, `-dirty` when the
/// crates, the assembly or the firmware have uncommitted changes.
pub fn git_revision() -> String {
    let root = crate::util::workspace_root();
    let rev = output(
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(["rev-parse", "--short=12", "HEAD"]),
    )
    .map(|s| s.trim().to_string())
    .unwrap_or_else(|_| "unknown".into());
    let dirty = output(Command::new("git").arg("-C").arg(&root).args([
        "status",
        "--porcelain",
        "--",
        "crates",
        "asm-avr",
        "firmware",
    ]))
    .map(|s| !s.trim().is_empty())
    .unwrap_or(false);
    if dirty {
        format!("{rev}-dirty")
    } else {
        rev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_bounds() {
        let mut r = Rng::new(1);
        assert!((0..10_000).all(|_| r.below(7) < 7));
        let mut seen = [false; 5];
        (0..1000).for_each(|_| seen[r.below(5) as usize] = true);
        assert!(seen.iter().all(|&s| s));
    }
}
