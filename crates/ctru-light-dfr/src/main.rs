//! `ctru-light-dfr` (also `cargo xtask dfr`): prints CTRU-Light's
//! decryption-failure computation with every assumption, and fails when the
//! checks disagree.

use std::process::ExitCode;

use clap::Parser;

/// CTRU-Light's decryption-failure rate (definition revision 1), its noise
/// model checked against the real code path.
#[derive(Parser, Debug)]
struct Args {
    /// Keys of the empirical check against the real code path
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(2..))]
    keys: u64,
    /// Ciphertexts per key
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..))]
    per_key: u64,
    /// Seed of the keys and ciphertexts
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Importance-sampled Monte Carlo draws per support pattern
    #[arg(long, default_value_t = 4000, value_parser = clap::value_parser!(u64).range(1..))]
    mc: u64,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let options = ctru_light_dfr::Options {
        keys: a.keys,
        per_key: a.per_key,
        seed: a.seed,
        mc: a.mc,
    };
    match ctru_light_dfr::run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctru-light-dfr: {e}");
            ExitCode::FAILURE
        }
    }
}
