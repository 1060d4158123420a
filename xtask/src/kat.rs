//! `cargo xtask kat`: write NIST-format KAT files for any scheme, and check
//! them against the official files in `kat-vectors/`.

use nist_kat::{rsp, schemes, DEFAULT_MASTER_SEED};

use crate::util::workspace_root;

/// Options of `cargo xtask kat`.
#[derive(clap::Parser, Debug)]
pub struct KatArgs {
    /// The scheme: ml-kem-512, kyber512-r3, lightsaber, ctru-light-sha3, ctru-light-ascon
    #[arg(long)]
    pub scheme: String,
    /// The NIST DRBG master seed, 48 bytes in hex (default: 00 01 … 2F)
    #[arg(long, value_parser = master_seed)]
    pub master_seed: Option<[u8; 48]>,
    /// Records to generate
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,
    /// Write the file here instead of printing it
    #[arg(long)]
    pub write: Option<std::path::PathBuf>,
    /// Compare with the official file in kat-vectors/
    #[arg(long)]
    pub check: bool,
}

fn master_seed(hex: &str) -> Result<[u8; 48], String> {
    rsp::hex_decode(hex)?
        .try_into()
        .map_err(|b: Vec<u8>| format!("needs 48 bytes, got {}", b.len()))
}

/// Generates, writes or checks.
pub fn run(o: &KatArgs) -> Result<(), String> {
    let seed = o.master_seed.unwrap_or(DEFAULT_MASTER_SEED);
    let (count, check, name) = (o.count as usize, o.check, o.scheme.as_str());
    let names: Vec<&str> = schemes::ALL.iter().map(|s| s.name).collect();
    let scheme = schemes::find(name).ok_or_else(|| format!("unknown scheme `{name}` (one of {})", names.join(", ")))?;
    let records = scheme.generate(&seed, count)?;
    let text = rsp::write(scheme.header, &records);
    match &o.write {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("xtask: wrote {count} {name} records to {}", path.display());
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
