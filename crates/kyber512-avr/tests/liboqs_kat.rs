//! The NIST-DRBG KAT files of the three ML-KEM sets against digests no one
//! here wrote: the SHA-256 values liboqs publishes of its own KAT output
//! (GitHub `open-quantum-safe/liboqs`, `tests/KATs/kem/kats.json`, commit
//! 04e1b32), "all" for the 100 records and "single" for record 0 in the
//! layout of its `tests/kat_kem.c`. liboqs draws ML-KEM's randomness as the
//! files here do (d‖z from one 64-byte draw, then m from one 32-byte draw),
//! so equal digests mean the files hold liboqs's bytes; `tests/kat.rs`
//! checks that this crate reproduces every byte of them.

use sha2::{Digest, Sha256};

/// (file under `kat-vectors/`, liboqs's "all" digest, its "single" digest).
const LIBOQS: [(&str, &str, &str); 3] = [
    (
        "ml-kem-512/ML-KEM-512_nistdrbg_kat.rsp",
        "74b470e797cbdbd589a31d387d36c72aad5033446ab5159bf4014c24652b1173",
        "c70041a761e01cd6426fa60e9fd6a4412c2be817386c8d0f3334898082512782",
    ),
    (
        "ml-kem-768/ML-KEM-768_nistdrbg_kat.rsp",
        "e5d6911117c708d8342702db222f66bef5ac5b0314fb8bc36eb22a536c9b34fb",
        "5352539586b6c3df58be6158a6250aeff402bd73060b0a3de68850ac074c17c3",
    ),
    (
        "ml-kem-1024/ML-KEM-1024_nistdrbg_kat.rsp",
        "81d1ae0468f62154885b6f2a293c0eb48f9339645357a88bbbc186c57ab0ace0",
        "f580d851e5fb27e6876e5e203fa18be4cdbfd49e05d48fec3d3992c8f43a13e6",
    ),
];

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn every_ml_kem_kat_file_holds_the_bytes_liboqs_publishes_digests_of() {
    for (file, all, single) in LIBOQS {
        let path = format!("{}/../../kat-vectors/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // liboqs's file: the records without our `# ` header line, ending
        // in one newline.
        let body = nist_kat::rsp::body(&text).trim_end_matches('\n').to_string() + "\n";
        assert_eq!(sha256_hex(&body), all, "{file}: all 100 records");
        let r = &nist_kat::rsp::parse(&text).unwrap()[0];
        let hex = nist_kat::rsp::hex_upper;
        let first = format!(
            "count = 0\nseed = {}\npk = {}\nsk = {}\nct = {}\nss = {}\n",
            hex(&r.seed),
            hex(&r.pk),
            hex(&r.sk),
            hex(&r.ct),
            hex(&r.ss)
        );
        assert_eq!(sha256_hex(&first), single, "{file}: record 0");
    }
}
