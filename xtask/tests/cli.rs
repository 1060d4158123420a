//! The `cargo xtask` binary as a user's shell runs it.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// `cargo xtask … | head` (issue #35): with its output's reader already
/// gone, a command that prints ends by SIGPIPE, quietly, instead of
/// panicking ("failed printing to stdout", exit 134). The command needs no
/// machine set-up and writes nothing (`kat --check` compares one record).
#[test]
fn a_closed_output_pipe_ends_a_command_quietly() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["kat", "--scheme", "ml-kem-512", "--count", "1", "--check"])
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(13), "ended by {:?}: {stderr}", out.status);
}
