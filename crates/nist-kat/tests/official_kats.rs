//! Every scheme reproduces its official KAT file byte for byte after the
//! header line, all 100 records.

use nist_kat::{rsp, schemes, DEFAULT_MASTER_SEED};

fn check(name: &str) {
    let scheme = schemes::find(name).expect("scheme registered");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../kat-vectors/");
    let expected = std::fs::read_to_string(format!("{path}{}", scheme.reference_file)).expect("KAT file present");
    let records = scheme.generate(&DEFAULT_MASTER_SEED, 100).expect("KEM runs");
    assert_eq!(rsp::parse(&expected).expect("reference parses").len(), 100);
    let ours = rsp::write(scheme.header, &records);
    assert!(rsp::body(&ours).len() > 100 * 4000, "a real body was compared");
    if rsp::body(&ours) != rsp::body(&expected) {
        let theirs = rsp::parse(&expected).expect("reference parses");
        let first = records.iter().zip(&theirs).position(|(a, b)| a != b);
        panic!(
            "{name}: output differs from {}; first differing record: {first:?}",
            scheme.reference_file
        );
    }
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
