//! `cargo xtask …`: the project's tasks as plain Rust (cargo-xtask pattern).

use std::process::{Command, ExitCode};

mod util;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci        fmt check, clippy (warnings denied) and every test — what CI runs
  help      this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
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

/// Everything CI checks on the host.
fn ci() -> Result<(), String> {
    util::run(Command::new("cargo").args(["fmt", "--all", "--check"]))?;
    util::run(Command::new("cargo").args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    util::run(Command::new("cargo").args(["test", "--workspace"]))?;
    Ok(())
}
