//! The `.rsp` reader and writer on every official file (each KEM crate's
//! `tests/kat.rs` reproduces its own files from the DRBG).

use nist_kat::rsp;

const KAT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../kat-vectors/");

/// Every `.rsp` file under `kat-vectors/` is in the layout `rsp::write`
/// produces: its header and parsed records give it back byte for byte (so
/// a file written by `cargo xtask kat --write` can equal an outside
/// generator's).
#[test]
fn every_rsp_file_round_trips_byte_for_byte() {
    let mut files = 0;
    for dir in std::fs::read_dir(KAT_DIR).expect("kat-vectors/ present") {
        let dir = dir.expect("directory entry").path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).expect("readable folder") {
            let path = file.expect("directory entry").path();
            if path.extension().is_some_and(|e| e == "rsp") {
                let text = std::fs::read_to_string(&path).expect("readable file");
                let records = rsp::parse(&text).expect("parses");
                assert!(records.len() >= 100, "{}", path.display());
                assert!(
                    rsp::write(rsp::header(&text), &records) == text,
                    "{} does not round-trip",
                    path.display()
                );
                files += 1;
            }
        }
    }
    assert_eq!(files, 8, "every .rsp file of kat-vectors/ was read");
}
