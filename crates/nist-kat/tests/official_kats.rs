//! Every scheme reproduces its official KAT file byte for byte, header line
//! and all 100 records: `rsp::write` of the generated records is the file.

use nist_kat::{rsp, schemes, DEFAULT_MASTER_SEED};

const KAT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../kat-vectors/");

fn check(name: &str) {
    let scheme = schemes::find(name).expect("scheme registered");
    let expected = std::fs::read_to_string(format!("{KAT_DIR}{}", scheme.reference_file)).expect("KAT file present");
    let records = scheme.generate(&DEFAULT_MASTER_SEED, 100).expect("KEM runs");
    let theirs = rsp::parse(&expected).expect("reference parses");
    assert_eq!(theirs.len(), 100);
    assert_eq!(scheme.header, rsp::header(&expected), "{name}: header line");
    let ours = rsp::write(scheme.header, &records);
    assert!(ours.len() > 100 * 4000, "a real file was compared");
    if ours != expected {
        let first = records.iter().zip(&theirs).position(|(a, b)| a != b);
        panic!(
            "{name}: output differs from {}; first differing record: {first:?}",
            scheme.reference_file
        );
    }
}

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
    assert_eq!(files, 6, "every .rsp file of kat-vectors/ was read");
}

#[test]
fn ml_kem_512_matches_nist_kat() {
    check("ml-kem-512");
}

#[test]
fn kyber512_r3_matches_nist_kat() {
    check("kyber512-r3");
}

#[test]
fn ctru_light_sha3_matches_kat() {
    check("ctru-light-sha3");
}

#[test]
fn ctru_light_ascon_matches_kat() {
    check("ctru-light-ascon");
}

#[test]
fn lightsaber_matches_kat() {
    check("lightsaber");
}
