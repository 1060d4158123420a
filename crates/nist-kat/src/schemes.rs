//! Every KEM of the workspace as a KAT runner: one `PQCgenKAT_kem` record
//! (keypair, enc, dec with the decapsulated secret checked) from a DRBG.

use crate::{KemOutput, NistDrbg, Record};

/// A scheme the KAT tooling knows.
#[derive(Clone, Copy, Debug)]
pub struct Scheme {
    /// Command-line name (`cargo xtask kat --scheme NAME`).
    pub name: &'static str,
    /// The `# ` header line of the official file, verbatim (`None`: it has
    /// none), so that [`crate::rsp::write`] of the generated records
    /// reproduces that file byte for byte. Provenance lives in
    /// `kat-vectors/README.md`, not here.
    pub header: Option<&'static str>,
    /// The official file under `kat-vectors/`.
    pub reference_file: &'static str,
    run: fn(&mut NistDrbg) -> Result<KemOutput, String>,
}

impl Scheme {
    /// Generates `count` records from the master seed.
    pub fn generate(&self, master_seed: &[u8; 48], count: usize) -> Result<Vec<Record>, String> {
        let mut run = self.run;
        crate::generate(master_seed, count, &mut run)
    }
}

/// A KEM module with free `keygen`/`encapsulate`/`decapsulate` functions.
macro_rules! module_runner {
    ($module:path) => {{
        use $module as kem;
        |rng: &mut NistDrbg| {
            let (ek, dk) = kem::keygen(rng).map_err(|e| e.to_string())?;
            let (ct, ss) = kem::encapsulate(&ek, rng).map_err(|e| e.to_string())?;
            if kem::decapsulate(&dk, &ct) != ss {
                return Err("decapsulation disagrees with encapsulation".into());
            }
            Ok((
                ek.as_bytes().to_vec(),
                dk.as_bytes().to_vec(),
                ct.as_bytes().to_vec(),
                ss.as_bytes().to_vec(),
            ))
        }
    }};
}

macro_rules! ctru_runner {
    ($kem:ty) => {{
        type Kem = $kem;
        |rng: &mut NistDrbg| {
            let (pk, sk) = Kem::keygen(rng).map_err(|e| e.to_string())?;
            let (ct, ss) = Kem::encapsulate(&pk, rng).map_err(|e| e.to_string())?;
            if Kem::decapsulate(&sk, &ct) != ss {
                return Err("decapsulation disagrees with encapsulation".into());
            }
            Ok((
                pk.as_bytes().to_vec(),
                sk.as_bytes().to_vec(),
                ct.as_bytes().to_vec(),
                ss.as_bytes().to_vec(),
            ))
        }
    }};
}

/// All schemes, in the order `--help` lists them.
pub const ALL: &[Scheme] = &[
    Scheme {
        name: "ml-kem-512",
        header: Some("ML-KEM-512"),
        reference_file: "ml-kem-512/ML-KEM-512_nistdrbg_kat.rsp",
        run: module_runner!(kyber512_avr::ml_kem_512),
    },
    Scheme {
        name: "kyber512-r3",
        header: None,
        reference_file: "kyber512-r3/Kyber512_r3_PQCkemKAT_1632.rsp",
        run: module_runner!(kyber512_avr::kyber512_r3),
    },
    Scheme {
        name: "lightsaber",
        header: Some("LightSaber"),
        reference_file: "lightsaber/LightSaber_PQCkemKAT_1568.rsp",
        run: module_runner!(lightsaber_avr),
    },
    Scheme {
        name: "ctru-light-sha3",
        // The shared folder's header (its relative path is the shared folder's).
        header: Some(
            "CTRU-Light rev 1, sha3 back-end (= the authors' reference C code under the NIST DRBG; see ../../specs/ctru-light.md)",
        ),
        reference_file: "ctru-light/ctru-light-sha3_PQCkemKAT_864.rsp",
        run: ctru_runner!(ctru_light::CtruLightSha3),
    },
    Scheme {
        name: "ctru-light-ascon",
        header: Some("CTRU-Light rev 1, ascon back-end (see ../../specs/ctru-light.md)"),
        reference_file: "ctru-light/ctru-light-ascon_PQCkemKAT_864.rsp",
        run: ctru_runner!(ctru_light::CtruLightAscon),
    },
];

/// Looks a scheme up by its command-line name.
pub fn find(name: &str) -> Option<&'static Scheme> {
    ALL.iter().find(|s| s.name == name)
}
