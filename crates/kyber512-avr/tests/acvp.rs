//! NIST's ACVP vectors for FIPS 203 (the "internal projection" files of the
//! ML-KEM keyGen and encapDecap test directories of `usnistgov/ACVP-Server`;
//! provenance and digests in `kat-vectors/README.md`), for all three
//! parameter sets: key generation from (d, z), encapsulation from (ek, m),
//! and decapsulation of valid and of modified ciphertexts (the implicit
//! rejection key).

use serde_json::Value;

fn vectors(file: &str) -> Value {
    let path = format!("{}/../../kat-vectors/ml-kem-acvp/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn bytes(case: &Value, field: &str) -> Vec<u8> {
    let hex = case[field].as_str().unwrap_or_else(|| panic!("no {field} in {case}"));
    base16ct::mixed::decode_vec(hex).unwrap_or_else(|e| panic!("{field}: {e}"))
}

fn array<const N: usize>(case: &Value, field: &str) -> [u8; N] {
    let v = bytes(case, field);
    v.as_slice()
        .try_into()
        .unwrap_or_else(|_| panic!("{field}: {} bytes, not {N}", v.len()))
}

/// The test groups of `file` for `set` with `function` (any, if `None`).
fn groups<'a>(file: &'a Value, set: &str, function: Option<&str>) -> Vec<&'a Value> {
    let all = file["testGroups"].as_array().expect("testGroups");
    let found: Vec<_> = all
        .iter()
        .filter(|g| g["parameterSet"] == set && function.is_none_or(|f| g["function"] == f))
        .collect();
    assert!(!found.is_empty(), "no {set} {function:?} group");
    found
}

macro_rules! acvp {
    ($test:ident, $set:literal, $module:ident) => {
        #[test]
        fn $test() {
            use kyber512_avr::$module::{hazmat, params};
            let (mut keygens, mut encaps, mut decaps) = (0, 0, 0);

            for group in groups(&vectors("key-gen.json"), $set, None) {
                for case in group["tests"].as_array().expect("tests") {
                    let (ek, dk) = hazmat::key_gen_internal(&array(case, "d"), &array(case, "z"));
                    assert_eq!(ek.as_slice(), bytes(case, "ek"), "ek, tcId {}", case["tcId"]);
                    assert_eq!(dk.as_slice(), bytes(case, "dk"), "dk, tcId {}", case["tcId"]);
                    keygens += 1;
                }
            }

            let encap_decap = vectors("encap-decap.json");
            for group in groups(&encap_decap, $set, Some("encapsulation")) {
                for case in group["tests"].as_array().expect("tests") {
                    let ek: [u8; params::EK_BYTES] = array(case, "ek");
                    let (k, c) = hazmat::encaps_internal(&ek, &array(case, "m")).expect("a valid ek");
                    assert_eq!(c.as_slice(), bytes(case, "c"), "c, tcId {}", case["tcId"]);
                    assert_eq!(k.as_slice(), bytes(case, "k"), "k, tcId {}", case["tcId"]);
                    encaps += 1;
                }
            }
            for group in groups(&encap_decap, $set, Some("decapsulation")) {
                let dk: [u8; params::DK_BYTES] = array(group, "dk");
                for case in group["tests"].as_array().expect("tests") {
                    let k = hazmat::decaps(&dk, &array(case, "c")).expect("a valid dk");
                    assert_eq!(
                        k.as_slice(),
                        bytes(case, "k"),
                        "k, tcId {} ({})",
                        case["tcId"],
                        case["reason"]
                    );
                    decaps += 1;
                }
            }
            // The file's counts: 25 key pairs, 25 encapsulations, 10 decapsulations.
            assert_eq!((keygens, encaps, decaps), (25, 25, 10));
        }
    };
}

acvp!(ml_kem_512_passes_nist_acvp_vectors, "ML-KEM-512", ml_kem_512);
acvp!(ml_kem_768_passes_nist_acvp_vectors, "ML-KEM-768", ml_kem_768);
acvp!(ml_kem_1024_passes_nist_acvp_vectors, "ML-KEM-1024", ml_kem_1024);
