//! `cargo xtask …`: parses the command line (`flags`) and dispatches to the
//! AVR lab (the library `avr_lab`, `src/lab/`); the CI recipe is `ci`.

use std::process::{Command, ExitCode};

use clap::Parser;

mod ci;
mod flags;
#[cfg(test)]
mod tidy;

use flags::{Cli, Cmd};

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    // clap prints --help and usage errors itself (exit 0 for help, 2 for errors).
    let cli = Cli::parse();
    // When the reader of the output goes away (`cargo xtask … | head`), end
    // quietly as other Unix tools do, not with a panic on a failed print.
    // Not in the fleet, whose sensors write to sockets of the broker node
    // it kills: SIGPIPE would end the run instead of moving them.
    if !matches!(cli.command, Cmd::Fleet(_)) {
        sigpipe::reset();
    }
    // Commands that build or simulate need the Debian packages; on a new
    // machine this binary was compiled before they existed, without the
    // simulator, so after installing them it is rebuilt and run again, once.
    if cli.command.needs_machine() {
        // (CI builds yasimavr, the 4808's simulator, while its tests run.)
        let rerun = match avr_lab::setup::ensure_machine() {
            Err(e) => Err(e),
            Ok(true) => avr_lab::setup::rebuild_and_rerun(&raw),
            Ok(false) => return finish(run(cli.command)),
        };
        return finish(rerun);
    }
    finish(run(cli.command))
}

fn run(command: Cmd) -> Result<(), String> {
    match command {
        Cmd::Ci => ci::run(),
        Cmd::Ci4808 => ci::run_4808(),
        Cmd::Setup(a) => avr_lab::setup::setup(&a),
        Cmd::BuildAvr(a) => avr_lab::build::build_avr::run(&a),
        Cmd::SimTest(a) => avr_lab::measure::simtest::run(&a),
        Cmd::Bench(a) => avr_lab::measure::bench::run(&a),
        Cmd::Flash(a) => avr_lab::build::flash::run(&a),
        Cmd::SimPty(a) => avr_lab::measure::bench::sim_pty(&a),
        Cmd::Report => avr_lab::report::regenerate(),
        Cmd::Kat(a) => avr_lab::measure::kat::run(&a),
        Cmd::Dfr { args } => avr_lab::util::run(
            Command::new("cargo")
                .args(["run", "-q", "-p", "ctru-light-dfr", "--"])
                .args(args),
        ),
        Cmd::Ct(a) => avr_lab::measure::ct::run(&a),
        Cmd::Mqtt(a) => avr_lab::mqtt::handshake::cmd(&a),
        Cmd::E2e(a) => avr_lab::mqtt::e2e::run(&a),
        Cmd::SensorSim(a) => avr_lab::mqtt::e2e_session::sensor_sim(&a),
        Cmd::MqttLoad(a) => avr_lab::mqtt::mqtt_load::run(&a),
        Cmd::Registry(a) => avr_lab::mqtt::registry_bench::run(&a),
        Cmd::Fleet(a) => avr_lab::mqtt::fleet::run(&a),
        Cmd::Examples => avr_lab::release::examples::check_all(),
        Cmd::MlKemSets => avr_lab::release::ml_kem_sets::run(),
        Cmd::Packaged => avr_lab::release::packaged::check(),
        Cmd::Boards(a) => avr_lab::measure::boards::run(&a),
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
