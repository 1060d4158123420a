//! Small helpers shared by the tasks.

use std::path::PathBuf;
use std::process::Command;

/// Runs a command with inherited stdio; a non-zero exit is an error naming it.
pub fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd.status().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

/// Like [`run`], with stderr passed through and, on failure, its lines
/// matching any of `keep` added to the error (e.g. the linker's overflow).
pub fn run_keeping(cmd: &mut Command, keep: &[&str]) -> Result<(), String> {
    eprintln!("xtask: running {cmd:?}");
    let out = cmd.output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    std::io::Write::write_all(&mut std::io::stdout(), &out.stdout).ok();
    std::io::Write::write_all(&mut std::io::stderr(), &out.stderr).ok();
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kept: Vec<&str> = stderr
        .lines()
        .filter(|l| keep.iter().any(|k| l.contains(k)))
        .map(|l| l.rsplit("ld: ").next().unwrap_or(l).trim())
        .collect();
    Err(format!("{cmd:?} failed with {}: {}", out.status, kept.join("; ")))
}

/// The workspace root (the folder above this crate, `xtask`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the xtask lives in the workspace's root folder")
        .to_path_buf()
}

/// The host's CPU model and core count: part of every wall-clock result.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cores} cores")
}
