//! The official known-answer files (provenance: `kat-vectors/README.md`,
//! digests: `kat-vectors/SHA256SUMS`) reproduced byte for byte, header
//! line and all 100 records, from the NIST DRBG.

use nist_kat::{KemOutput, NistDrbg};

fn official(file: &str) -> String {
    let path = format!("{}/../../kat-vectors/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One `PQCgenKAT_kem` record through a variant's typed API.
macro_rules! run {
    ($variant:path) => {
        |rng: &mut NistDrbg| -> Result<KemOutput, String> {
            use $variant as kem;
            let (dk, ek) = kem::keygen(rng).map_err(|e| e.to_string())?;
            let (ct, ss) = kem::encapsulate(&ek, rng).map_err(|e| e.to_string())?;
            let decapsulated = kem::decapsulate(&dk, &ct);
            nist_kat::outputs(
                ek.as_bytes(),
                dk.as_bytes(),
                ct.as_bytes(),
                ss.as_bytes(),
                decapsulated.as_bytes(),
            )
        }
    };
}

#[test]
fn ml_kem_512_reproduces_its_nist_kat_file() {
    let text = official("ml-kem-512/ML-KEM-512_nistdrbg_kat.rsp");
    assert_eq!(nist_kat::reproduce(&text, &mut run!(kyber512_avr::ml_kem_512)), Ok(100));
}

#[test]
fn ml_kem_768_reproduces_its_nist_kat_file() {
    let text = official("ml-kem-768/ML-KEM-768_nistdrbg_kat.rsp");
    assert_eq!(nist_kat::reproduce(&text, &mut run!(kyber512_avr::ml_kem_768)), Ok(100));
}

#[test]
fn ml_kem_1024_reproduces_its_nist_kat_file() {
    let text = official("ml-kem-1024/ML-KEM-1024_nistdrbg_kat.rsp");
    assert_eq!(
        nist_kat::reproduce(&text, &mut run!(kyber512_avr::ml_kem_1024)),
        Ok(100)
    );
}

#[test]
fn kyber512_r3_reproduces_its_nist_kat_file() {
    let text = official("kyber512-r3/Kyber512_r3_PQCkemKAT_1632.rsp");
    assert_eq!(
        nist_kat::reproduce(&text, &mut run!(kyber512_avr::kyber512_r3)),
        Ok(100)
    );
}
