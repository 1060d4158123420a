//! Shared plumbing of the fuzz targets: a deterministic RNG (libFuzzer needs
//! every input to behave the same on every run), key "repair" helpers that
//! turn arbitrary bytes into keys that pass import validation, and KEM-MQTT
//! fixtures built once per process.
//!
//! The targets must run with debug assertions and overflow checks (an
//! arithmetic overflow is a finding, not a wrap-around): `ci/fuzz-smoke.sh`
//! builds with `cargo fuzz build -O -a`, and a build without them fails
//! here, at compile time. (`cfg(overflow_checks)` needs nightly, which
//! cargo-fuzz needs anyway.)
#![feature(cfg_overflow_checks)]

#[cfg(not(debug_assertions))]
compile_error!("fuzz targets need debug assertions: cargo fuzz build/run -O -a (--debug-assertions)");
#[cfg(not(overflow_checks))]
compile_error!("fuzz targets need overflow checks: cargo fuzz build/run -O -a, without -C overflow-checks=off");

use std::sync::OnceLock;

use kem_mqtt::testing::{broker_fixture, sensor_fixture, BrokerFixture, SensorFixture};
use kem_mqtt::{BrokerHandshake, SensorHandshake, Suite, SuiteSet, MAX_BROKER_HELLO_LEN, MAX_CLIENT_HELLO_LEN};

/// The workspace's seeded test generator (ChaCha20, `kem_common::test_rng`):
/// deterministic, NOT for real keys.
pub struct FuzzRng(rand_chacha::ChaCha20Rng);

impl FuzzRng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        FuzzRng(kem_common::test_rng(seed))
    }

    /// A generator seeded from (up to) the first 8 bytes of `data`.
    pub fn from_bytes(data: &[u8]) -> Self {
        let mut s = [0u8; 8];
        for (o, b) in s.iter_mut().zip(data) {
            *o = *b;
        }
        Self::new(u64::from_le_bytes(s))
    }
}

impl rand_core::TryRng for FuzzRng {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        rand_core::TryRng::try_next_u32(&mut self.0)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        rand_core::TryRng::try_next_u64(&mut self.0)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Self::Error> {
        rand_core::TryRng::try_fill_bytes(&mut self.0, dest)
    }
}
impl rand_core::TryCryptoRng for FuzzRng {}

/// `N` bytes from `data` (zero-padded), e.g. a fixed-size key or ciphertext.
pub fn fixed<const N: usize>(data: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    for (o, b) in a.iter_mut().zip(data) {
        *o = *b;
    }
    a
}

/// Re-packs `count` little-endian `d`-bit values of `bytes`, mapping each value through `f`.
pub fn remap_bits(bytes: &mut [u8], d: u32, count: usize, f: impl Fn(u16) -> u16) {
    let mut v = vec![0u16; count];
    kem_common::unpack_bits(d, count, bytes, |i, x| v[i] = f(x));
    kem_common::pack_bits(d, count, bytes, |i| v[i]);
}

/// Splits `data` at `at` (or at its end).
pub fn split(data: &[u8], at: usize) -> (&[u8], &[u8]) {
    data.split_at(at.min(data.len()))
}

/// A broker with keys for `suite`'s KEM and the sensor `sensor-1` registered
/// (pure and hybrid allowed), plus that sensor; built once per suite.
pub fn fixture(suite: Suite) -> &'static (BrokerFixture, SensorFixture) {
    static FIXTURES: OnceLock<Vec<(BrokerFixture, SensorFixture)>> = OnceLock::new();
    let all = FIXTURES.get_or_init(|| {
        Suite::ALL
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let mut rng = FuzzRng::new(0x5EED_0000 + i as u64);
                let broker = broker_fixture(s, &mut rng);
                let sensor = sensor_fixture(s, &mut rng);
                let broker = broker.with_client(&sensor, SuiteSet::for_kem(s.kem(), false));
                (broker, sensor)
            })
            .collect()
    });
    let i = Suite::ALL.iter().position(|s| *s == suite).unwrap_or(0);
    &all[i]
}

/// The suite picked by one fuzz byte.
pub fn pick_suite(b: u8) -> Suite {
    Suite::ALL[b as usize % Suite::ALL.len()]
}

/// ClientHello, BrokerHello, ClientFinished.
pub type Flights = (Vec<u8>, Vec<u8>, Vec<u8>);

/// One honest handshake's flights for `suite` (ClientHello, BrokerHello,
/// ClientFinished), with fixed RNG seeds; built once per suite. Targets
/// mutate them so libFuzzer gets past the length and MAC checks.
pub fn honest_flights(suite: Suite) -> &'static Flights {
    static FLIGHTS: OnceLock<Vec<Flights>> = OnceLock::new();
    let all = FLIGHTS.get_or_init(|| {
        Suite::ALL
            .iter()
            .map(|&s| {
                let (broker, sensor) = fixture(s);
                let mut rs = FuzzRng::new(1);
                let mut rb = FuzzRng::new(2);
                let mut ch = vec![0u8; MAX_CLIENT_HELLO_LEN];
                let mut bh = vec![0u8; MAX_BROKER_HELLO_LEN];
                let mut cf = vec![0u8; 64];
                let (st, n1) = SensorHandshake::start(s, sensor.credentials(broker), &mut rs, &mut ch)
                    .expect("honest ClientHello");
                let (bst, n2) = BrokerHandshake::accept(broker, &ch[..n1], &mut rb, &mut bh).expect("honest accept");
                let (_s, n3) = st.receive_broker_hello(&bh[..n2], &mut cf).expect("honest BrokerHello");
                bst.receive_client_finished(&cf[..n3]).expect("honest ClientFinished");
                ch.truncate(n1);
                bh.truncate(n2);
                cf.truncate(n3);
                (ch, bh, cf)
            })
            .collect()
    });
    let i = Suite::ALL.iter().position(|s| *s == suite).unwrap_or(0);
    &all[i]
}

/// Applies a fuzz-chosen edit to an honest message: `edit` is a list of
/// (offset u16 BE, xor byte) triples; a leading byte selects truncation or
/// extension. Keeps most of the message valid so deep checks are reached.
pub fn mutate(honest: &[u8], edit: &[u8]) -> Vec<u8> {
    let mut m = honest.to_vec();
    let Some((&mode, rest)) = edit.split_first() else {
        return m;
    };
    for t in rest.chunks_exact(3) {
        let off = u16::from_be_bytes([t[0], t[1]]) as usize;
        if !m.is_empty() {
            let i = off % m.len();
            m[i] ^= t[2];
        }
    }
    match mode % 4 {
        1 => {
            let cut = (mode as usize * 7) % (m.len() + 1);
            m.truncate(cut);
        }
        2 => m.extend_from_slice(&rest[..rest.len().min(8)]),
        _ => {}
    }
    m
}

/// The body of the ML-KEM (512, 768, 1024) and Kyber512 (round 3) targets
/// (same API; each module names its lengths in its `params`).
///
/// First byte: 0 = decode arbitrary bytes as ek, dk, ct; 1 = decapsulate an
/// arbitrary ciphertext with a fixed honest key (typed and `raw` APIs agree,
/// and an honest encapsulation round-trips); 2 = decapsulate with an
/// arbitrary key that passed import (H(ek) repaired, ek coefficients reduced).
#[macro_export]
macro_rules! kyber_target {
    ($m:path, $repair_hash:expr) => {{
        use $m as k;
        use k::params::{CT_BYTES, DK_BYTES, EK_BYTES, K};
        |data: &[u8]| {
            let Some((&mode, rest)) = data.split_first() else {
                return;
            };
            match mode % 3 {
                0 => {
                    let _ = k::EncapsulationKey::from_bytes(rest);
                    let _ = k::DecapsulationKey::from_bytes(rest);
                    let _ = k::Ciphertext::from_bytes(rest);
                    if let Ok(ek) = k::EncapsulationKey::from_bytes(rest) {
                        let (ct, _) = k::encapsulate(&ek, &mut $crate::FuzzRng::new(7)).unwrap();
                        assert_eq!(ct.as_bytes().len(), CT_BYTES);
                    }
                }
                1 => {
                    static KEYS: std::sync::OnceLock<(k::DecapsulationKey, k::EncapsulationKey)> =
                        std::sync::OnceLock::new();
                    let (dk, ek) = KEYS.get_or_init(|| k::keygen(&mut $crate::FuzzRng::new(3)).unwrap());
                    let ct_bytes: [u8; CT_BYTES] = $crate::fixed(rest);
                    let ct = k::Ciphertext::from_bytes(&ct_bytes).unwrap();
                    let ss = k::decapsulate(dk, &ct);
                    let raw = k::raw::decapsulate_into(dk.as_bytes(), &ct_bytes);
                    assert_eq!(ss.as_bytes(), raw.as_bytes());
                    let (ct2, ss2) = k::encapsulate(ek, &mut $crate::FuzzRng::from_bytes(rest)).unwrap();
                    assert_eq!(k::decapsulate(dk, &ct2).as_bytes(), ss2.as_bytes());
                }
                _ => {
                    let (dk_part, ct_part) = $crate::split(rest, DK_BYTES);
                    let mut dk: [u8; DK_BYTES] = $crate::fixed(dk_part);
                    let ek_at = DK_BYTES - 64 - EK_BYTES;
                    // Reduce the 256·k coefficients of t̂ mod q so the §7.2 check passes.
                    $crate::remap_bits(&mut dk[ek_at..ek_at + EK_BYTES - 32], 12, 256 * K, |v| v % 3329);
                    if $repair_hash {
                        let h = fips202::sha3_256(&[&dk[ek_at..ek_at + EK_BYTES]]);
                        dk[ek_at + EK_BYTES..ek_at + EK_BYTES + 32].copy_from_slice(&h);
                    }
                    let dk_typed = k::DecapsulationKey::from_bytes(&dk).expect("repaired key imports");
                    let ct_bytes: [u8; CT_BYTES] = $crate::fixed(ct_part);
                    let ct = k::Ciphertext::from_bytes(&ct_bytes).unwrap();
                    let ss = k::decapsulate(&dk_typed, &ct);
                    assert_eq!(ss.as_bytes(), k::raw::decapsulate_into(&dk, &ct_bytes).as_bytes());
                    let ek = k::EncapsulationKey::from_bytes(&dk[ek_at..ek_at + EK_BYTES]).expect("embedded ek");
                    let _ = k::encapsulate(&ek, &mut $crate::FuzzRng::new(5)).unwrap();
                }
            }
        }
    }};
}
