//! The KEMs on the host (reference results, tapes) and on the device (the
//! firmware's KEM ops through the harness protocol).

use avr_wire::kem::{
    compact_key_request_len, kem_op_id, request_len, CompactKeyOp, KemOp, PREFIX_LEN, SS_LEN, TAPE_LEN,
};
use kem_common::{BufferKem, Tape};
use kem_registry::with_kem;
use kem_registry::Kem;
use rand_core::{Infallible, TryCryptoRng, TryRng};

use crate::opts::Rng;
use crate::run::device::Device;

/// Wraps an RNG and records every byte it hands out: the tape the firmware replays.
pub struct Recorder<R> {
    inner: R,
    /// The bytes drawn so far.
    pub bytes: Vec<u8>,
}

impl<R> Recorder<R> {
    /// Starts recording `inner`.
    pub fn new(inner: R) -> Recorder<R> {
        Recorder {
            inner,
            bytes: Vec::new(),
        }
    }

    /// Returns the tape recorded since the last call and starts a new one.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }
}

impl<R: TryRng> TryRng for Recorder<R> {
    type Error = R::Error;
    fn try_next_u32(&mut self) -> Result<u32, R::Error> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_next_u64(&mut self) -> Result<u64, R::Error> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), R::Error> {
        self.inner.try_fill_bytes(dest)?;
        self.bytes.extend_from_slice(dest);
        Ok(())
    }
}

impl<R: TryCryptoRng> TryCryptoRng for Recorder<R> {}

/// The xtask's seeded ChaCha20 ([`Rng`]) as an RNG for test inputs (deterministic: test tooling only).
pub struct TestRng(pub Rng);

impl TryRng for TestRng {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.0.next_u64() as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.0.next_u64())
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dest.chunks_mut(8) {
            chunk.copy_from_slice(&self.0.next_u64().to_le_bytes()[..chunk.len()]);
        }
        Ok(())
    }
}

impl TryCryptoRng for TestRng {}

/// `bytes` in a KEM's fixed-size buffer `zero` (`K::EK_ZERO`, …): an error
/// unless the lengths agree.
fn buffer<B: AsMut<[u8]>>(mut zero: B, bytes: &[u8]) -> Result<B, String> {
    let b = zero.as_mut();
    if b.len() != bytes.len() {
        return Err(format!("{} bytes where {} are needed", bytes.len(), b.len()));
    }
    b.copy_from_slice(bytes);
    Ok(zero)
}

/// Host key generation: (pk, sk).
pub fn keygen<R: TryCryptoRng>(kem: Kem, rng: &mut R) -> Result<(Vec<u8>, Vec<u8>), String> {
    with_kem!(kem, K => {
        let (mut ek, mut dk) = (K::EK_ZERO, K::DK_ZERO);
        K::keygen_into(rng, &mut ek, &mut dk).map_err(|e| format!("{}: keygen: {e}", kem.name()))?;
        Ok((ek.as_ref().to_vec(), dk.as_ref().to_vec()))
    })
}

/// Host encapsulation: (ct, ss).
pub fn encaps<R: TryCryptoRng>(kem: Kem, pk: &[u8], rng: &mut R) -> Result<(Vec<u8>, Vec<u8>), String> {
    with_kem!(kem, K => {
        let mut ct = K::CT_ZERO;
        let ss = K::encapsulate_into(&buffer(K::EK_ZERO, pk)?, rng, &mut ct)
            .map_err(|e| format!("{}: encaps: {e}", kem.name()))?;
        Ok((ct.as_ref().to_vec(), ss.as_bytes().to_vec()))
    })
}

/// Host decapsulation: ss.
pub fn decaps(kem: Kem, sk: &[u8], ct: &[u8]) -> Result<Vec<u8>, String> {
    with_kem!(kem, K => {
        let ss = K::decapsulate_into(&buffer(K::DK_ZERO, sk)?, &buffer(K::CT_ZERO, ct)?);
        Ok(ss.as_bytes().to_vec())
    })
}

/// What the firmware's keygen or encaps returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The KEM succeeded.
    pub ok: bool,
    /// Tape bytes consumed.
    pub used: usize,
    /// pk ‖ sk (keygen) or ct ‖ ss (encaps).
    pub body: Vec<u8>,
}

fn padded_tape(tape: &[u8]) -> Result<Vec<u8>, String> {
    if tape.len() > TAPE_LEN {
        return Err(format!(
            "tape of {} bytes exceeds the firmware's {TAPE_LEN}",
            tape.len()
        ));
    }
    let mut t = tape.to_vec();
    t.resize(TAPE_LEN, 0);
    Ok(t)
}

/// Splits a keygen/encaps reply into status, tape bytes used and body.
pub fn parse_reply(raw: Vec<u8>) -> Result<Reply, String> {
    if raw.len() < PREFIX_LEN {
        return Err(format!("short reply ({} bytes)", raw.len()));
    }
    Ok(Reply {
        ok: raw[0] == 0,
        used: u16::from_le_bytes([raw[1], raw[2]]) as usize,
        body: raw[PREFIX_LEN..].to_vec(),
    })
}

/// The request payload of `op` (keygen: tape; encaps: pk, tape; decaps: sk, ct).
pub fn request(kem: Kem, op: KemOp, key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    let mut p = match op {
        KemOp::Keygen => padded_tape(data)?,
        KemOp::Encaps => [key, &padded_tape(data)?].concat(),
        KemOp::Decaps => [key, data].concat(),
    };
    if p.len() != request_len(kem, op) as usize {
        p.clear();
        return Err(format!("{} {}: bad request length", kem.name(), op.name()));
    }
    Ok(p)
}

/// Host key generation into `kem`'s compact secret key (the public key
/// inside it), from `tape` as the firmware's compact keygen draws it;
/// `None` where `kem` has no compact key.
pub fn compact_keygen(kem: Kem, tape: &[u8]) -> Result<Option<Vec<u8>>, String> {
    if !kem.scheme().has_compact_key() {
        return Ok(None);
    }
    let mut sk = vec![0u8; kem.scheme().compact_sk_len()];
    kem_registry::keygen_compact_into(kem, &mut Tape::new(tape), &mut sk)
        .map_err(|e| format!("{}: compact keygen: {e}", kem.name()))?;
    Ok(Some(sk))
}

/// The request payload of a compact-key operation (keygen: tape; decaps: sk, ct).
pub fn compact_key_request(kem: Kem, op: CompactKeyOp, key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    let p = match op {
        CompactKeyOp::Keygen => padded_tape(data)?,
        CompactKeyOp::Decaps => [key, data].concat(),
    };
    if p.len() != compact_key_request_len(kem, op) as usize {
        return Err(format!("{} {}: bad request length", kem.name(), op.name()));
    }
    Ok(p)
}

/// Firmware keygen from `tape`.
pub fn dev_keygen(dev: &mut Device, kem: Kem, tape: &[u8]) -> Result<Reply, String> {
    let req = request(kem, KemOp::Keygen, &[], tape)?;
    parse_reply(dev.call(kem_op_id(kem, KemOp::Keygen), &req)?)
}

/// Firmware encaps to `pk` from `tape`.
pub fn dev_encaps(dev: &mut Device, kem: Kem, pk: &[u8], tape: &[u8]) -> Result<Reply, String> {
    let req = request(kem, KemOp::Encaps, pk, tape)?;
    parse_reply(dev.call(kem_op_id(kem, KemOp::Encaps), &req)?)
}

/// Firmware decaps of `ct` with `sk`: ss.
pub fn dev_decaps(dev: &mut Device, kem: Kem, sk: &[u8], ct: &[u8]) -> Result<Vec<u8>, String> {
    let req = request(kem, KemOp::Decaps, sk, ct)?;
    let ss = dev.call(kem_op_id(kem, KemOp::Decaps), &req)?;
    if ss.len() != SS_LEN {
        return Err(format!("decaps reply of {} bytes", ss.len()));
    }
    Ok(ss)
}

/// A marker-window measurement of one firmware call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measured {
    /// Cycles of the window (the empty window's cost included).
    pub cycles: u64,
    /// Stack bytes (simulator SP tracking; on a board, the painted measure).
    pub stack: u32,
}

/// Runs `call` on `dev` and returns its result with the measure of the
/// one window `id` it must open ([`Device::measure_window`]: in simavr the
/// markers, checked against the on-chip timers; on a board the timers).
pub fn measured<T>(
    dev: &mut Device,
    id: u8,
    call: impl FnOnce(&mut Device) -> Result<T, String>,
) -> Result<(T, Measured), String> {
    let (r, w) = dev.measure_window(id, call)?;
    Ok((
        r,
        Measured {
            cycles: w.cycles,
            stack: w.stack,
        },
    ))
}

/// Tape bytes a key generation draws when it needs no retry.
pub fn keygen_tape_len(kem: Kem) -> usize {
    kem.scheme().keygen_random_bytes()
}

/// One KAT record with the tapes its keygen and encaps drew from the NIST DRBG.
#[derive(Clone, Debug)]
pub struct KatCase {
    /// What the case is, for messages ("record 3", "draft standard E.5").
    pub label: String,
    /// The official record.
    pub record: nist_kat::Record,
    /// Keygen's randomness.
    pub keygen_tape: Vec<u8>,
    /// Encaps' randomness.
    pub encaps_tape: Vec<u8>,
}

/// The first `count` records of `kem`'s official KAT file, with the tapes
/// recorded from the host run of each record's DRBG (which must reproduce the record).
/// For a scheme without a KAT file, its NIST ACVP cases ([`acvp_cases`]).
pub fn kat_cases(kem: Kem, count: usize) -> Result<Vec<KatCase>, String> {
    let Some(file) = kem.scheme().kat_file() else {
        return acvp_cases(kem, count);
    };
    let path = crate::util::workspace_root().join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let records = nist_kat::rsp::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for record in records.into_iter().take(count) {
        let seed: [u8; 48] = record
            .seed
            .as_slice()
            .try_into()
            .map_err(|_| "KAT seed is not 48 bytes".to_string())?;
        let mut rng = Recorder::new(nist_kat::NistDrbg::new(&seed));
        let (pk, sk) = keygen(kem, &mut rng)?;
        let keygen_tape = rng.take();
        let (ct, ss) = encaps(kem, &pk, &mut rng)?;
        let encaps_tape = rng.take();
        if (&pk, &sk, &ct, &ss) != (&record.pk, &record.sk, &record.ct, &record.ss) {
            return Err(format!(
                "{}: the host does not reproduce KAT record {}",
                kem.name(),
                record.count
            ));
        }
        out.push(KatCase {
            label: format!("record {}", record.count),
            record,
            keygen_tape,
            encaps_tape,
        });
    }
    Ok(out)
}

/// One of NIST's ACVP test cases for FIPS 203 (`kem_registry::ACVP_DIR`).
pub struct AcvpCase {
    /// `tcId` and the function, for messages.
    pub label: String,
    /// The case's fields by name (`d`, `z`, `ek`, `dk`, `m`, `c`, `k`; a
    /// decapsulation case has its group's `ek` and `dk`).
    pub fields: std::collections::BTreeMap<String, Vec<u8>>,
}

impl AcvpCase {
    /// The field `name` (an error names the case if it is missing).
    pub fn get(&self, name: &str) -> Result<&[u8], String> {
        self.fields
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| format!("{}: no field `{name}`", self.label))
    }
}

/// The first `count` cases of `kem`'s parameter set in the ACVP file
/// `file` (`key-gen.json` or `encap-decap.json`) for `function` (the
/// encap-decap file's `encapsulation` or `decapsulation`; `None` for
/// key generation).
pub fn acvp(kem: Kem, file: &str, function: Option<&str>, count: usize) -> Result<Vec<AcvpCase>, String> {
    let set = kem
        .scheme()
        .acvp_parameter_set()
        .ok_or_else(|| format!("{} has no ACVP vectors", kem.name()))?;
    let path = crate::util::workspace_root().join(kem_registry::ACVP_DIR).join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let groups = json["testGroups"]
        .as_array()
        .ok_or_else(|| format!("{}: no testGroups", path.display()))?;
    let mut out = Vec::new();
    for g in groups
        .iter()
        .filter(|g| g["parameterSet"] == set && function.is_none_or(|f| g["function"] == f))
    {
        for t in g["tests"].as_array().into_iter().flatten() {
            let mut fields = std::collections::BTreeMap::new();
            for (obj, names) in [
                (g, ["ek", "dk"].as_slice()),
                (t, ["d", "z", "ek", "dk", "m", "c", "k"].as_slice()),
            ] {
                for &name in names {
                    if let Some(hex) = obj[name].as_str() {
                        let bytes =
                            nist_kat::rsp::hex_decode(hex).map_err(|e| format!("{}: `{name}`: {e}", path.display()))?;
                        fields.insert(name.to_string(), bytes);
                    }
                }
            }
            out.push(AcvpCase {
                label: format!("ACVP {set} {} tcId {}", function.unwrap_or("keyGen"), t["tcId"]),
                fields,
            });
            if out.len() == count {
                return Ok(out);
            }
        }
    }
    if out.is_empty() {
        return Err(format!("{}: no {set} case", path.display()));
    }
    Ok(out)
}

/// KAT cases from ACVP's key generation vectors: keygen's tape is d ‖ z and
/// its output the official (ek, dk); encapsulation to that ek draws `m` of
/// the encapsulation case with the same index, its (c, K) computed by the
/// host (whose encapsulation passes every official case:
/// `crates/kyber512-avr/tests/acvp.rs`; `sim-test` also runs those cases
/// through the device, [`acvp`]).
pub fn acvp_cases(kem: Kem, count: usize) -> Result<Vec<KatCase>, String> {
    let keygens = acvp(kem, "key-gen.json", None, count)?;
    let encaps_cases = acvp(kem, "encap-decap.json", Some("encapsulation"), count)?;
    let mut out = Vec::new();
    for (i, (kg, en)) in keygens.iter().zip(&encaps_cases).enumerate() {
        let keygen_tape = [kg.get("d")?, kg.get("z")?].concat();
        let encaps_tape = en.get("m")?.to_vec();
        let (pk, sk) = keygen(kem, &mut Tape::new(&keygen_tape))?;
        if (pk.as_slice(), sk.as_slice()) != (kg.get("ek")?, kg.get("dk")?) {
            return Err(format!("{}: the host does not reproduce {}", kem.name(), kg.label));
        }
        let (ct, ss) = encaps(kem, &pk, &mut Tape::new(&encaps_tape))?;
        out.push(KatCase {
            label: kg.label.clone(),
            record: nist_kat::Record {
                count: i,
                seed: Vec::new(),
                pk,
                sk,
                ct,
                ss,
            },
            keygen_tape,
            encaps_tape,
        });
    }
    Ok(out)
}

/// The worked example of the draft standard's Annex E.5 (CTRU-Light, the
/// authors' `sha3` definition) as a case: key generation draws its seed,
/// then z; encapsulation draws m. The host must reproduce it first.
pub fn e5_case(kem: Kem) -> Result<KatCase, String> {
    let path = crate::util::workspace_root().join("kat-vectors/ctru-light/ctru-light_draft-standard_E5.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let field = |name: &str| -> Result<Vec<u8>, String> {
        let hex = json[name]
            .as_str()
            .ok_or_else(|| format!("{}: no field `{name}`", path.display()))?;
        nist_kat::rsp::hex_decode(hex).map_err(|e| format!("{}: `{name}`: {e}", path.display()))
    };
    let keygen_tape = [field("keygen_seed")?, field("z")?].concat();
    let encaps_tape = field("encaps_m")?;
    let record = nist_kat::Record {
        count: 0,
        seed: Vec::new(),
        pk: field("pk")?,
        sk: field("sk")?,
        ct: field("ct")?,
        ss: field("K")?,
    };
    let (pk, sk) = keygen(kem, &mut Tape::new(&keygen_tape))?;
    let (ct, ss) = encaps(kem, &pk, &mut Tape::new(&encaps_tape))?;
    if (&pk, &sk, &ct, &ss) != (&record.pk, &record.sk, &record.ct, &record.ss) {
        return Err(format!(
            "{}: the host does not reproduce the draft standard's E.5",
            kem.name()
        ));
    }
    Ok(KatCase {
        label: "draft standard E.5".into(),
        record,
        keygen_tape,
        encaps_tape,
    })
}

/// Scheme name of the primitive ops' records.
pub const PRIMITIVES_SCHEME: &str = "primitives";

/// What the host computes for a primitive op's request (the reference the
/// AVR's output must equal): RustCrypto's portable Keccak and Ascon (the
/// host builds of fips202 and ascon-sponge), x25519-dalek.
pub fn primitive_reference(id: u8, input: &[u8]) -> Option<Vec<u8>> {
    use avr_wire::primitives::{OP_ASCON_P12, OP_KECCAK_F1600, OP_X25519};
    match id {
        OP_KECCAK_F1600 => {
            let mut s: [u8; 200] = input.try_into().ok()?;
            fips202::permute(&mut s);
            Some(s.to_vec())
        }
        OP_ASCON_P12 => {
            let mut s: [u8; 40] = input.try_into().ok()?;
            ascon_sponge::permute(&mut s, 12);
            Some(s.to_vec())
        }
        OP_X25519 => {
            let (k, u) = input.split_first_chunk::<32>()?;
            Some(x25519_dalek::x25519(*k, u.try_into().ok()?).to_vec())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draft_standards_example_replays_on_the_host() {
        let case = e5_case(Kem::CtruSha3Kred).unwrap();
        assert_eq!(case.keygen_tape.len(), 64, "seed ‖ z");
        assert_eq!(case.encaps_tape.len(), 32, "m");
        // The example's K decapsulates from its ct with its sk.
        assert_eq!(
            decaps(Kem::CtruSha3Kred, &case.record.sk, &case.record.ct).unwrap(),
            case.record.ss
        );
        // Too little randomness is an error, not a panic or a guess.
        assert!(keygen(Kem::CtruSha3Kred, &mut Tape::new(&case.keygen_tape[..40])).is_err());
    }

    #[test]
    fn host_kat_tapes() {
        for kem in [Kem::MlKem512, Kem::Kyber512R3, Kem::LightSaber, Kem::CtruAsconMont] {
            let cases = kat_cases(kem, 1).unwrap();
            let c = &cases[0];
            assert!(!c.keygen_tape.is_empty() && c.keygen_tape.len() <= TAPE_LEN, "{kem:?}");
            assert_eq!(c.encaps_tape.len(), 32, "{kem:?}");
            assert_eq!(decaps(kem, &c.record.sk, &c.record.ct).unwrap(), c.record.ss);
            // Replaying the tape reproduces the record.
            let mut replay = Recorder::new(Tape::new(&c.keygen_tape));
            assert_eq!(keygen(kem, &mut replay).unwrap().0, c.record.pk);
        }
    }

    #[test]
    fn compact_keys_carry_the_records_public_key() {
        for kem in [Kem::MlKem512, Kem::LightSaber] {
            let c = &kat_cases(kem, 1).unwrap()[0];
            let sk = compact_keygen(kem, &c.keygen_tape).unwrap().unwrap();
            let at = kem.scheme().compact_sk_pk_offset();
            assert_eq!(&sk[at..at + kem.pk_len()], &c.record.pk[..], "{kem:?}");
            assert!(compact_key_request(kem, CompactKeyOp::Decaps, &sk, &c.record.ct).is_ok());
        }
        assert_eq!(compact_keygen(Kem::CtruSha3Kred, &[0; 64]).unwrap(), None);
    }

    #[test]
    fn requests_have_the_catalog_lengths() {
        for kem in Kem::ALL {
            for op in KemOp::ALL {
                let key = vec![
                    0u8;
                    if op == KemOp::Decaps {
                        kem.sk_len()
                    } else {
                        kem.pk_len()
                    }
                ];
                let data = vec![0u8; if op == KemOp::Decaps { kem.ct_len() } else { 32 }];
                assert!(request(kem, op, &key, &data).is_ok(), "{kem:?} {op:?}");
            }
        }
    }
}
