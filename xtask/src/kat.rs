//! `cargo xtask kat`: write NIST-format KAT files for any scheme, and check
//! them against the official files in `kat-vectors/`.

use nist_kat::{rsp, schemes, DEFAULT_MASTER_SEED};

use crate::util::workspace_root;

const USAGE: &str = "usage: cargo xtask kat --scheme NAME [--master-seed HEX48] [--count N] [--write FILE] [--check]";

/// Parses the options and runs.
pub fn run(args: &[String]) -> Result<(), String> {
    let mut scheme = None;
    let mut seed = DEFAULT_MASTER_SEED;
    let mut count = 100usize;
    let mut write = None;
    let mut check = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--scheme" => scheme = Some(value()?),
            "--master-seed" => {
                let bytes = rsp::hex_decode(&value()?)?;
                seed = bytes
                    .try_into()
                    .map_err(|b: Vec<u8>| format!("--master-seed needs 48 bytes, got {}", b.len()))?;
            }
            "--count" => {
                count = value()?
                    .parse()
                    .map_err(|_| format!("--count needs a number\n{USAGE}"))?
            }
            "--write" => write = Some(value()?),
            "--check" => check = true,
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    let names: Vec<&str> = schemes::ALL.iter().map(|s| s.name).collect();
    let name = scheme.ok_or_else(|| format!("--scheme is required (one of {})\n{USAGE}", names.join(", ")))?;
    let scheme =
        schemes::find(&name).ok_or_else(|| format!("unknown scheme `{name}` (one of {})", names.join(", ")))?;
    let records = scheme.generate(&seed, count)?;
    let text = rsp::write(scheme.header, &records);
    match &write {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| format!("cannot write {path}: {e}"))?;
            eprintln!("xtask: wrote {count} {name} records to {path}");
        }
        None if !check => print!("{text}"),
        None => {}
    }
    if check {
        let path = workspace_root().join("kat-vectors").join(scheme.reference_file);
        let official = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let theirs = rsp::parse(&official)?;
        // All records: the whole file, header line included, byte for byte.
        let same = if records.len() == theirs.len() {
            text == official
        } else {
            records.len() < theirs.len() && records.iter().zip(&theirs).all(|(a, b)| a == b)
        };
        if !same || seed != DEFAULT_MASTER_SEED {
            return Err(format!(
                "{name}: records differ from {} (or a non-default master seed)",
                path.display()
            ));
        }
        if records.len() == theirs.len() {
            println!(
                "{name}: all {count} records; the file equals {} byte for byte",
                scheme.reference_file
            );
        } else {
            println!("{name}: the first {count} records equal {}'s", scheme.reference_file);
        }
    }
    Ok(())
}
