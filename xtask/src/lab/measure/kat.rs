//! `cargo xtask kat`: write NIST-format KAT files for any scheme, and check
//! them against the official files in `kat-vectors/`.

use kem_common::BufferKem;
use kem_registry::{with_kem, Scheme};
use nist_kat::{rsp, KemOutput, NistDrbg, DEFAULT_MASTER_SEED};

use crate::util::workspace_root;

/// Options of `cargo xtask kat`.
#[derive(clap::Parser, Debug)]
pub struct KatArgs {
    /// The scheme: ml-kem-512, ml-kem-768, ml-kem-1024, kyber512-r3, lightsaber, ctru-light-sha3, ctru-light-ascon
    #[arg(long, value_parser = scheme_name)]
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

/// A scheme name as the command line gives it, checked against the
/// registry (a usage error, exit 2, before anything runs).
fn scheme_name(name: &str) -> Result<String, String> {
    match Scheme::from_name(name) {
        Some(_) => Ok(name.to_string()),
        None => {
            let names: Vec<_> = Scheme::ALL.iter().map(|s| s.name()).collect();
            Err(format!("unknown scheme `{name}` (one of {})", names.join(", ")))
        }
    }
}

/// One `PQCgenKAT_kem` record of `scheme` (its default variant: every
/// variant gives the same bytes) through its byte-buffer API.
fn record(scheme: Scheme, rng: &mut NistDrbg) -> Result<KemOutput, String> {
    with_kem!(scheme.default_kem(), K => {
        let (mut ek, mut dk, mut ct) = (K::EK_ZERO, K::DK_ZERO, K::CT_ZERO);
        K::keygen_into(rng, &mut ek, &mut dk).map_err(|e| e.to_string())?;
        let ss = K::encapsulate_into(&ek, rng, &mut ct).map_err(|e| e.to_string())?;
        let decapsulated = K::decapsulate_into(&dk, &ct);
        nist_kat::outputs(ek.as_ref(), dk.as_ref(), ct.as_ref(), ss.as_bytes(), decapsulated.as_bytes())
    })
}

/// Generates, writes or checks.
pub fn run(o: &KatArgs) -> Result<(), String> {
    let seed = o.master_seed.unwrap_or(DEFAULT_MASTER_SEED);
    let (count, check, name) = (o.count as usize, o.check, o.scheme.as_str());
    let names: Vec<&str> = Scheme::ALL.iter().map(|s| s.name()).collect();
    let scheme =
        Scheme::from_name(name).ok_or_else(|| format!("unknown scheme `{name}` (one of {})", names.join(", ")))?;
    let kat_file = scheme.kat_file().ok_or_else(|| {
        format!("{name} has no NIST-DRBG KAT file: its official vectors are ACVP's (`cargo test -p kyber512-avr --test acvp`)")
    })?;
    let records = nist_kat::generate(&seed, count, &mut |rng| record(scheme, rng))?;
    // The official file's header line, reproduced verbatim.
    let path = workspace_root().join(kat_file);
    let official = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = rsp::write(rsp::header(&official), &records);
    match &o.write {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("xtask: wrote {count} {name} records to {}", path.display());
        }
        None if !check => print!("{text}"),
        None => {}
    }
    if check {
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
            println!("{name}: all {count} records; the file equals {kat_file} byte for byte");
        } else {
            println!("{name}: the first {count} records equal {kat_file}'s");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-buffer API this command runs gives each official file's
    /// first record (the crates' `tests/kat.rs` check all of them through
    /// their typed API).
    #[test]
    fn every_scheme_gives_its_first_official_record() {
        for scheme in Scheme::ALL {
            let Some(file) = scheme.kat_file() else { continue };
            let text = std::fs::read_to_string(workspace_root().join(file)).unwrap();
            let first = rsp::parse(&text).unwrap().remove(0);
            let ours = nist_kat::generate(&DEFAULT_MASTER_SEED, 1, &mut |rng| record(scheme, rng)).unwrap();
            assert_eq!(ours, [first], "{}", scheme.name());
        }
    }
}
