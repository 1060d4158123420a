//! The official known-answer file (provenance: `kat-vectors/README.md`,
//! digest: `kat-vectors/SHA256SUMS`) reproduced byte for byte, header line
//! and all 100 records, from the NIST DRBG.

use nist_kat::{KemOutput, NistDrbg};

#[test]
fn lightsaber_reproduces_its_nist_kat_file() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../kat-vectors/lightsaber/LightSaber_PQCkemKAT_1568.rsp"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut run = |rng: &mut NistDrbg| -> Result<KemOutput, String> {
        let (sk, pk) = lightsaber_avr::keygen(rng).map_err(|e| e.to_string())?;
        let (ct, ss) = lightsaber_avr::encapsulate(&pk, rng).map_err(|e| e.to_string())?;
        let decapsulated = lightsaber_avr::decapsulate(&sk, &ct);
        nist_kat::outputs(
            pk.as_bytes(),
            sk.as_bytes(),
            ct.as_bytes(),
            ss.as_bytes(),
            decapsulated.as_bytes(),
        )
    };
    assert_eq!(nist_kat::reproduce(&text, &mut run), Ok(100));
}
