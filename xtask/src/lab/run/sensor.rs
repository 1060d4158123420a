//! The KEM-MQTT/1 sensor on the AVR: the firmware runs the sensor's two
//! steps (`firmware::mqtt`), the host plays the broker with `kem_mqtt`'s
//! `BrokerHandshake` and checks every flight and a record sealed under the new key.
//!
//! The host first runs the same handshake itself with a recording RNG: the
//! tape it drew makes the firmware's ClientHello reproducible byte for byte,
//! so the BrokerHello can be prepared in advance (which the batch-mode
//! yasimavr run of the ATmega4808 needs).

use avr_wire::frame::OP_STACK;
use avr_wire::mqtt::{self as fw, Layout};
use kem_mqtt::testing::{broker_fixture, sensor_fixture, BrokerFixture};
use kem_mqtt::{BrokerHandshake, Scheme, SensorHandshake, Suite, SuiteSet};

use crate::opts::Rng;
use crate::run::device::Device;
use crate::run::kems::{self, Measured, Recorder, TestRng};

/// The message layout of `kem`'s image.
pub fn layout(kem: Scheme) -> Layout {
    Layout::of(kem)
}

/// One prepared handshake: the requests for the firmware and what its replies must be.
pub struct Case {
    /// The suite.
    pub suite: Suite,
    /// Request of `OP_START`.
    pub start_request: Vec<u8>,
    /// Requests of the finish's two ops ([`fw::FINISH_OPS`]).
    pub finish_requests: [Vec<u8>; 2],
    pub(crate) tape_len: usize,
    client_hello: Vec<u8>,
    broker_hello: Vec<u8>,
    client_finished: Vec<u8>,
    broker: kem_mqtt::AwaitClientFinished,
}

/// Flight sizes of a handshake, bytes: ClientHello, BrokerHello, ClientFinished, first record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flights {
    /// ClientHello.
    pub client_hello: usize,
    /// BrokerHello.
    pub broker_hello: usize,
    /// ClientFinished.
    pub client_finished: usize,
    /// The sealed record.
    pub record: usize,
}

fn fixtures(suite: Suite, seed: u64) -> (BrokerFixture, kem_mqtt::testing::SensorFixture) {
    let mut rng = TestRng(Rng::new(seed));
    let broker = broker_fixture(suite, &mut rng);
    let sensor = sensor_fixture(suite, &mut rng);
    let broker = broker.with_client(&sensor, SuiteSet::for_kem(suite.kem(), false));
    (broker, sensor)
}

/// Prepares the handshake of `suite` from `seed` (keys, tape, the broker's answer).
pub fn prepare(suite: Suite, seed: u64) -> Result<Case, String> {
    prepare_with(suite, seed, seed)
}

/// [`prepare`] with the keys from `key_seed` and the randomness of both
/// sides from `run_seed`: another handshake of the same keys (an image with
/// provisioned keys takes no other).
pub fn prepare_with(suite: Suite, key_seed: u64, run_seed: u64) -> Result<Case, String> {
    let seed = run_seed;
    let kem = suite.kem();
    let l = layout(kem);
    let (broker, sensor) = fixtures(suite, key_seed);
    let creds = sensor.credentials(&broker);
    let err = |what: &str, e: kem_mqtt::Error| format!("{}: host {what}: {e}", suite.name());
    let mut rec = Recorder::new(TestRng(Rng::new(seed ^ 0x7A9E)));
    let mut ch = vec![0u8; kem_mqtt::MAX_CLIENT_HELLO_LEN];
    let (state, n1) = SensorHandshake::start(suite, creds, &mut rec, &mut ch).map_err(|e| err("start", e))?;
    ch.truncate(n1);
    let tape = rec.take();
    if tape.len() > fw::TAPE_LEN {
        return Err(format!(
            "{}: tape of {} bytes > {}",
            suite.name(),
            tape.len(),
            fw::TAPE_LEN
        ));
    }
    let mut brng = TestRng(Rng::new(seed ^ 0xB40C));
    let mut bh = vec![0u8; kem_mqtt::MAX_BROKER_HELLO_LEN];
    let (await_cf, n2) = BrokerHandshake::accept(&broker, &ch, &mut brng, &mut bh).map_err(|e| err("accept", e))?;
    bh.truncate(n2);
    let mut cf = [0u8; fw::CF_LEN];
    state
        .receive_broker_hello(&bh, &mut cf)
        .map_err(|e| err("receive_broker_hello", e))?;

    let mut start = vec![suite.id(), sensor.client_id().len() as u8];
    let mut id = sensor.client_id().to_vec();
    id.resize(fw::MAX_ID_LEN, 0);
    start.extend_from_slice(&id);
    let bytes = |key: kem_mqtt::KeyBytes| {
        use kem_common::KeySource;
        let mut out = vec![0u8; key.len()];
        key.read(0, &mut out);
        out
    };
    start.extend_from_slice(&bytes(creds.kem_sk));
    start.extend_from_slice(&sensor.x_sk);
    start.extend_from_slice(&bytes(creds.broker_kem_pk));
    start.extend_from_slice(&broker.x_pk);
    let mut t = tape.clone();
    t.resize(fw::TAPE_LEN, 0);
    start.extend_from_slice(&t);
    let finish = kem_mqtt_host::board::finish_requests(l, &bh)?;
    if start.len() != l.start_request_len() {
        return Err(format!("{}: start request of {} bytes", suite.name(), start.len()));
    }
    Ok(Case {
        suite,
        start_request: start,
        finish_requests: finish,
        tape_len: tape.len(),
        client_hello: ch,
        broker_hello: bh,
        client_finished: cf.to_vec(),
        broker: await_cf,
    })
}

impl Case {
    /// Checks the firmware's three replies: the ClientHello (byte for byte
    /// the host's), the finish's first part (status 0), the ClientFinished
    /// (accepted by the broker) and the record (opened by the broker's
    /// session). Returns the flight sizes.
    pub fn check(self, start_reply: &[u8], head_reply: &[u8], finish_reply: &[u8]) -> Result<Flights, String> {
        let name = self.suite.name();
        let l = layout(self.suite.kem());
        if start_reply.len() != l.start_reply_len() || finish_reply.len() != l.finish_rest_reply_len() {
            return Err(format!(
                "{name}: reply lengths {} / {}",
                start_reply.len(),
                finish_reply.len()
            ));
        }
        if start_reply[0] != 0 {
            return Err(format!("{name}: start failed: {}", fw::error_name(start_reply[0])));
        }
        let used = u16::from_le_bytes([start_reply[1], start_reply[2]]) as usize;
        let n = u16::from_le_bytes([start_reply[3], start_reply[4]]) as usize;
        let ch = start_reply.get(5..5 + n).unwrap_or(&[]);
        if used != self.tape_len || ch != self.client_hello.as_slice() {
            return Err(format!(
                "{name}: the AVR ClientHello ({n} B, {used} tape bytes) differs from the host's ({} B, {} tape bytes)",
                self.client_hello.len(),
                self.tape_len
            ));
        }
        kem_mqtt_host::board::parse_finish_head_reply(l, head_reply).map_err(|e| format!("{name}: {e}"))?;
        if finish_reply[0] != 0 {
            return Err(format!(
                "{name}: receive_broker_hello_rest failed: {}",
                fw::error_name(finish_reply[0])
            ));
        }
        let cf = &finish_reply[1..1 + fw::CF_LEN];
        if cf != self.client_finished.as_slice() {
            return Err(format!("{name}: the AVR ClientFinished differs from the host's"));
        }
        let mut session = self
            .broker
            .receive_client_finished(cf)
            .map_err(|e| format!("{name}: the broker rejects the AVR ClientFinished: {e}"))?;
        let record = &finish_reply[1 + fw::CF_LEN..];
        let mut pt = [0u8; 64];
        let m = session
            .open(fw::TOPIC, record, &mut pt)
            .map_err(|e| format!("{name}: the broker cannot open the AVR record: {e}"))?;
        if &pt[..m] != fw::PAYLOAD {
            return Err(format!("{name}: the AVR record decrypts to something else"));
        }
        Ok(Flights {
            client_hello: self.client_hello.len(),
            broker_hello: self.broker_hello.len(),
            client_finished: cf.len(),
            record: record.len(),
        })
    }
}

/// One simulated handshake's measurements.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// `SensorHandshake::start` (cycles include the empty window).
    pub start: Measured,
    /// The finish: `receive_broker_hello_head` and `_rest` (cycles and
    /// empty windows summed, the larger stack).
    pub finish: Measured,
    /// Painted-stack measures of the two.
    pub painted: [u32; 2],
    /// Flight sizes.
    pub flights: Flights,
}

fn painted(dev: &mut Device) -> Result<u32, String> {
    let p = dev.call(OP_STACK, &[])?;
    Ok(u16::from_le_bytes([p[0], p[1]]) as u32)
}

/// Runs the sensor's handshake of `suite` on `dev` (simavr) against the host broker.
pub fn run(dev: &mut Device, suite: Suite, seed: u64) -> Result<Run, String> {
    run_with(dev, suite, seed, false).map(|(r, _)| r)
}

/// The simulator's per-address instruction counts of `start` and `finish`.
pub type StepCounts = [Vec<u32>; 2];

/// [`run`], and with `trace` the per-address instruction counts of each step.
pub fn run_with(dev: &mut Device, suite: Suite, seed: u64, trace: bool) -> Result<(Run, Option<StepCounts>), String> {
    let case = prepare(suite, seed)?;
    dev.set_profiling(trace);
    dev.take_profile();
    let mut step = |op: u8, request: &[u8]| -> Result<(Vec<u8>, Measured, Vec<u32>, u32), String> {
        let (reply, m) = kems::measured(dev, op, |d| d.call(op, request))?;
        let counts = dev.take_profile();
        let painted = painted(dev)?;
        dev.take_profile();
        Ok((reply, m, counts, painted))
    };
    let [head, rest] = &case.finish_requests;
    let steps = step(fw::OP_START, &case.start_request).and_then(|a| {
        let h = step(fw::OP_FINISH, head)?;
        step(fw::OP_FINISH_REST, rest).map(|r| (a, h, r))
    });
    dev.set_profiling(false);
    let ((a, start, start_counts, pa), (h, first, first_counts, ph), (b, second, second_counts, pr)) = steps?;
    // The finish is its two windows together.
    let finish = Measured {
        cycles: first.cycles + second.cycles,
        stack: first.stack.max(second.stack),
    };
    let finish_counts: Vec<u32> = first_counts.iter().zip(&second_counts).map(|(x, y)| x + y).collect();
    let pb = ph.max(pr);
    let flights = case.check(&a, &h, &b).map_err(|e| {
        format!(
            "{e} (stack start {} / finish {} B, painted {pa} / {pb} B)",
            start.stack, finish.stack
        )
    })?;
    let run = Run {
        start,
        finish,
        painted: [pa, pb],
        flights,
    };
    Ok((run, trace.then_some([start_counts, finish_counts])))
}

/// The suites an image serves: the KEM's pure suite, and its hybrid one if the image has X25519.
pub fn suites_of(image: &crate::target::Image) -> Vec<Suite> {
    let kem = kem_mqtt::KEMS
        .into_iter()
        .find(|k| image.features.contains(&format!("mqtt-{}", k.name()).as_str()));
    let Some(kem) = kem else { return Vec::new() };
    let hybrid = image.features.contains(&"mqtt-x25519");
    if image.is_sensor_app() {
        // The application runs one suite: the hybrid one if it has X25519.
        return vec![Suite::new(kem, hybrid)];
    }
    let mut v = vec![Suite::new(kem, false)];
    if hybrid {
        v.push(Suite::new(kem, true));
    }
    v
}

/// The KEM-MQTT images serving a suite of `suites` on `mcu`, ready to build
/// ([`with_keys`]): on the ATmega1284p the hybrid images (each serves its
/// KEM's pure suite too); on the ATmega4808 (48 KB) also the pure ones,
/// whose flash is the pure suite's own.
pub fn images(mcu: crate::target::Mcu, suites: &crate::target::Suites) -> Result<Vec<crate::target::Image>, String> {
    images_with(mcu, suites, false)
}

/// [`images`], with `key_readers` each one's KEMs reading the keys through
/// readers ([`crate::target::Image::key_readers`]).
pub fn images_with(
    mcu: crate::target::Mcu,
    suites: &crate::target::Suites,
    key_readers: bool,
) -> Result<Vec<crate::target::Image>, String> {
    crate::target::Image::all_mqtt()
        .into_iter()
        .filter(|i| !mcu.simulated || i.features.contains(&"mqtt-x25519"))
        .filter(|i| {
            suites_of(i)
                .iter()
                .any(|&s| suites.admits(crate::report::records::MQTT_SCHEME, s))
        })
        .map(|i| if key_readers { i.key_readers() } else { i })
        .map(|i| with_keys(mcu, i))
        .collect()
}

/// `image` ready to build on `mcu`: one that compiles its sensor keys in
/// ([`crate::target::Image::needs_keys`]) and has none yet gets the
/// measured handshake's ([`provision`]); any other is returned as it is.
pub fn with_keys(mcu: crate::target::Mcu, mut image: crate::target::Image) -> Result<crate::target::Image, String> {
    if image.needs_keys(mcu) && image.keys.is_none() {
        image.keys = Some(provision(mcu, &image)?);
    }
    Ok(image)
}

/// Writes the key file of `image`'s measured handshake (its last suite,
/// [`SEED`]) where an image with provisioned keys is built from, and
/// returns that path.
pub fn provision(mcu: crate::target::Mcu, image: &crate::target::Image) -> Result<std::path::PathBuf, String> {
    let suite = *suites_of(image).last().ok_or("image without suite")?;
    let case = prepare(suite, SEED)?;
    let keys = case
        .start_request
        .get(1..1 + layout(suite.kem()).keys_len())
        .ok_or("start request shorter than its keys")?;
    let dir = image.target_dir(mcu);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("sensor-key.json");
    write_key_file(&path, suite, keys)?;
    Ok(path)
}

/// Writes `keys` (the key fields, as [`provisioned_keys`] lays them out)
/// as the key file `kem-mqtt-sensor`'s build reads (`KEM_MQTT_SENSOR_KEY`):
/// the fields of a `kem-mqtt provision` sensor key file that the firmware
/// compiles in. Rewritten only when it changes, so cargo does not rebuild
/// for nothing.
fn write_key_file(path: &std::path::Path, suite: Suite, keys: &[u8]) -> Result<(), String> {
    let l = layout(suite.kem());
    if keys.len() != l.keys_len() {
        return Err(format!(
            "{}: key fields of {} bytes, not {}",
            suite.name(),
            keys.len(),
            l.keys_len()
        ));
    }
    let (id_len, rest) = keys.split_first().ok_or("no key fields")?;
    let (id, rest) = rest.split_at(fw::MAX_ID_LEN);
    let id = std::str::from_utf8(&id[..usize::from(*id_len).min(fw::MAX_ID_LEN)])
        .map_err(|_| "client id is not UTF-8".to_string())?;
    let (kem_sk, rest) = rest.split_at(l.sk);
    let (x25519_sk, rest) = rest.split_at(fw::X25519_LEN);
    let (broker_kem_pk, broker_x25519_pk) = rest.split_at(l.pk);
    let hex = |b: &[u8]| base16ct::lower::encode_string(b);
    let file = serde_json::json!({
        "format": "kem-mqtt/sensor-key",
        "client_id": id,
        "suite": suite.name(),
        "kem_sk": hex(kem_sk),
        "x25519_sk": hex(x25519_sk),
        "broker_kem_pk": hex(broker_kem_pk),
        "broker_x25519_pk": hex(broker_x25519_pk),
    });
    let text = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
    if std::fs::read_to_string(path).ok().as_deref() == Some(text.as_str()) {
        return Ok(());
    }
    // Secret keys: readable by the owner only (as `kem-mqtt provision`
    // writes them), through a new file renamed into place.
    let tmp = path.with_extension("json.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The key fields of a sensor image (`avr_wire::mqtt::Layout::keys_len`
/// bytes: `id_len ‖ id[MAX_ID_LEN] ‖ kem_sk ‖ x25519_sk ‖ broker_kem_pk ‖
/// broker_x25519_pk`) from a `kem-mqtt provision` key file: what a start
/// request carries, and what a provisioned image compiles in
/// (`kem-mqtt-sensor` lays them out alike from the key file).
pub fn provisioned_keys(keys: &kem_mqtt_host::keys::SensorKeys) -> Result<Vec<u8>, String> {
    let l = layout(keys.suite.kem());
    let id = keys.client_id.as_bytes();
    if id.len() > fw::MAX_ID_LEN {
        return Err(format!("client id of {} bytes > {}", id.len(), fw::MAX_ID_LEN));
    }
    let mut r = Vec::with_capacity(l.keys_len());
    r.push(id.len() as u8);
    r.extend_from_slice(id);
    r.resize(1 + fw::MAX_ID_LEN, 0);
    r.extend_from_slice(&keys.kem_sk);
    // Present in every key file; the firmware ignores it for pure suites.
    r.extend_from_slice(&*keys.x25519_sk);
    r.extend_from_slice(&keys.broker_kem_pk);
    r.extend_from_slice(&keys.broker_x25519_pk);
    if r.len() != l.keys_len() {
        return Err(format!(
            "{}: key fields of {} bytes, the firmware takes {}",
            keys.suite.name(),
            r.len(),
            l.keys_len()
        ));
    }
    Ok(r)
}

/// Writes [`provisioned_keys`] of `keys` for `image` (in its build
/// directory) and returns the image that compiles them in.
pub fn provisioned_image(
    mcu: crate::target::Mcu,
    image: crate::target::Image,
    keys: &kem_mqtt_host::keys::SensorKeys,
) -> Result<crate::target::Image, String> {
    if !suites_of(&image).contains(&keys.suite) {
        return Err(format!(
            "{} does not serve {} (the key file's suite)",
            image.name,
            keys.suite.name()
        ));
    }
    let bytes = provisioned_keys(keys)?;
    let dir = crate::util::workspace_root()
        .join("target")
        .join(format!("provisioned-{}", mcu.name));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(format!("{}-{}.json", image.name, keys.client_id));
    write_key_file(&path, keys.suite, &bytes)?;
    Ok(image.provisioned(path))
}

/// New broker keys for `suite`, and one sensor `id` enrolled with them:
/// `(broker secrets, registry, the sensor's key file)`.
pub fn provision_one(
    suite: Suite,
    id: &str,
) -> Result<
    (
        kem_mqtt_host::keys::BrokerSecrets,
        kem_mqtt_host::keys::Registry,
        kem_mqtt_host::keys::SensorKeys,
    ),
    String,
> {
    let secrets = kem_mqtt_host::provision::generate_broker(&[suite.kem()], &mut kem_mqtt_host::OsRng);
    let mut registry = kem_mqtt_host::keys::Registry::default();
    let keys = kem_mqtt_host::provision::provision_sensor(
        &secrets,
        &mut registry,
        id,
        suite,
        SuiteSet::EMPTY.with(suite),
        &mut kem_mqtt_host::OsRng,
    )
    .map_err(|e| e.to_string())?;
    Ok((secrets, registry, keys))
}

/// Seed of the keys and randomness of the measured handshakes.
pub const SEED: u64 = 0x4D51_5454;

#[cfg(test)]
mod tests {
    use super::*;

    /// The host side alone: the prepared requests have the firmware's
    /// lengths and the expected replies pass the check.
    #[test]
    fn prepared_case_checks_its_own_answers() {
        let suite = Suite::new(Scheme::CtruLightAscon, false);
        let case = prepare(suite, 1).unwrap();
        let l = layout(suite.kem());
        assert_eq!(case.finish_requests[0].len(), l.finish_request_len());
        assert_eq!(case.finish_requests[1].len(), l.finish_rest_request_len());
        let mut a = vec![0u8, case.tape_len as u8, 0];
        a.extend_from_slice(&(case.client_hello.len() as u16).to_le_bytes());
        a.extend_from_slice(&case.client_hello);
        a.resize(l.start_reply_len(), 0);
        // No record from a real session here: the check must stop at the record.
        let mut b = vec![0u8];
        b.extend_from_slice(&case.client_finished);
        b.resize(l.finish_rest_reply_len(), 0);
        let e = case.check(&a, &[0], &b).unwrap_err();
        assert!(e.contains("cannot open the AVR record"), "{e}");
    }

    #[test]
    fn images_serve_their_suites() {
        let i = crate::target::Image::mqtt(Scheme::MlKem512, true);
        assert_eq!(i.name, "mqtt-ml-kem-512-x25519");
        assert_eq!(suites_of(&i).len(), 2);
        assert_eq!(
            suites_of(&crate::target::Image::mqtt(Scheme::LightSaber, false)).len(),
            1
        );
    }
}
