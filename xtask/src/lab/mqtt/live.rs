//! `cargo xtask mqtt --broker HOST:PORT --key FILE [--mode auth|topic]`: the
//! AVR sensor (the firmware in simavr, ATmega1284p) against a real MQTT
//! broker over TCP.
//!
//! The firmware computes everything the sensor computes: its ClientHello
//! ([`fw::OP_START`], with the keys of a `kem-mqtt provision` key file and
//! fresh randomness from the operating system), its ClientFinished and a
//! record sealing [`fw::PAYLOAD`] on [`fw::TOPIC`] ([`fw::OP_FINISH`]). The
//! host only carries those bytes over MQTT v5 ([`kem_mqtt_host::mqtt`]); it
//! never computes the sensor's cryptography.
//!
//! - AUTH mode (mosquitto with the project's plugin): CONNECT with the
//!   Authentication Method [`kem_mqtt::AUTH_METHOD`] and the ClientHello as
//!   Authentication Data; AUTH 0x18 brings the BrokerHello, AUTH 0x18 takes
//!   the ClientFinished back, CONNACK 0x00 establishes the session; then the
//!   record is published on [`fw::TOPIC`].
//! - Topic mode (a `kem-mqtt gateway` beside a plain broker): plain CONNECT,
//!   the flights as PUBLISH payloads on `kem-mqtt/hs/<id>/c2b` and `…/b2c`,
//!   the gateway's confirmation on `kem-mqtt/data/b2c/<id>`, then the record.
//!
//! The record's topic is its associated data and is compiled into the
//! firmware (`kem-mqtt/data/c2b/avr-1/t`), so the key file's client id must
//! be `avr-1`: another id is refused before anything runs.
//!
//! Every wait has a deadline ([`WAIT`]); every failure is a [`LiveError`].

use std::path::Path;
use std::time::Duration;

use avr_wire::mqtt::{self as fw, Layout};
use kem_mqtt::Suite;
use kem_mqtt_host::addr::BrokerAddr;
use kem_mqtt_host::board;
use kem_mqtt_host::bridge::{self, Finished, Hello, RemoteSensor};
use kem_mqtt_host::keys::SensorKeys;

use crate::run::device::Device;
use crate::run::kems::{self, Measured};
use crate::run::sensor;
use crate::target::Mcu;

/// How long each wait lasts: for the TCP connection, for each answer of the
/// broker or the gateway (simavr runs the sensor's KEM steps in a few
/// seconds, outside these waits).
pub const WAIT: Duration = Duration::from_secs(20);

/// Start requests tried before giving up: a CTRU-Light key generation that
/// retries (f not invertible) may exhaust the [`fw::TAPE_LEN`]-byte tape
/// (status 2), and then the start runs again with a new tape.
const START_ATTEMPTS: u32 = 5;

pub use kem_mqtt_host::Mode;

pub use kem_mqtt_host::bridge::BridgeError as LiveError;

/// The record topic compiled into the firmware, as an MQTT topic name.
pub fn record_topic() -> Result<&'static str, LiveError> {
    std::str::from_utf8(fw::TOPIC)
        .map_err(|_| LiveError::Setup("avr_wire::mqtt::TOPIC is not UTF-8, so it is no MQTT topic".into()))
}

/// The client id the firmware's record topic names
/// (`kem-mqtt/data/c2b/<id>[/<sub>]`): the only id a live run can use.
pub fn firmware_client_id() -> Result<&'static str, LiveError> {
    let topic = record_topic()?;
    kem_mqtt_host::topics::parse_sealed_c2b(topic)
        .map(|(id, _)| id)
        .ok_or_else(|| {
            LiveError::Setup(format!(
                "avr_wire::mqtt::TOPIC {topic:?} is not a sealed sensor → broker topic ({}<id>[/<sub>])",
                avr_wire::topics::DATA_C2B
            ))
        })
}

/// Refuses keys whose client id is not the one the firmware's record topic names.
pub fn check_client_id(keys: &SensorKeys) -> Result<(), LiveError> {
    let want = firmware_client_id()?;
    if keys.client_id == want {
        return Ok(());
    }
    Err(LiveError::Setup(format!(
        "the key file is for client {:?}, but the AVR firmware seals its record on {} (avr_wire::mqtt::TOPIC), \
         and a record's topic is its associated data: the live run needs the client id {want:?} \
         (kem-mqtt provision --client {want} …)",
        keys.client_id,
        record_topic()?
    )))
}

/// The `OP_START` request: `suite ‖ keys ‖ tape` (the key fields of
/// [`sensor::provisioned_keys`]; see `firmware::mqtt`).
fn start_request(keys: &SensorKeys, tape: &[u8; fw::TAPE_LEN]) -> Result<Vec<u8>, LiveError> {
    let mut r = vec![keys.suite.id()];
    r.extend_from_slice(&sensor::provisioned_keys(keys).map_err(LiveError::Setup)?);
    r.extend_from_slice(tape);
    Ok(r)
}

/// Overwrites a buffer that held secrets.
fn wipe(buf: &mut [u8]) {
    buf.fill(0);
    std::hint::black_box(buf);
}

/// What the AVR's `start` produced.
struct Started {
    client_hello: Vec<u8>,
    measured: Measured,
    tape_used: usize,
    attempts: u32,
}

/// Runs `OP_START` with fresh tapes until the key generation fits one.
fn avr_start(dev: &mut Device, keys: &SensorKeys) -> Result<Started, LiveError> {
    let l = sensor::layout(keys.suite.kem());
    for attempt in 1..=START_ATTEMPTS {
        let mut tape = [0u8; fw::TAPE_LEN];
        rand_core::Rng::fill_bytes(&mut kem_mqtt_host::OsRng, &mut tape);
        let mut request = start_request(keys, &tape)?;
        wipe(&mut tape);
        let r = kems::measured(dev, fw::OP_START, |d| d.call(fw::OP_START, &request));
        wipe(&mut request);
        let (reply, measured) = r.map_err(LiveError::Sensor)?;
        let reply = board::parse_start_reply(l, &reply).map_err(LiveError::Sensor)?;
        match reply.status {
            0 => {}
            2 if attempt < START_ATTEMPTS => {
                println!(
                    "live: AVR start #{attempt}: random tape exhausted (CTRU-Light key generation retried), \
                     {} cycles; again with a new tape",
                    measured.cycles
                );
                continue;
            }
            s => {
                return Err(LiveError::Sensor(format!(
                    "start answered status {s} ({}) after {attempt} attempt(s)",
                    fw::error_name(s)
                )))
            }
        }
        return Ok(Started {
            client_hello: reply.client_hello,
            measured,
            tape_used: reply.tape_used,
            attempts: attempt,
        });
    }
    Err(LiveError::Sensor(format!(
        "start exhausted {START_ATTEMPTS} random tapes"
    )))
}

/// What the AVR's `finish` produced.
struct AvrFinished {
    client_finished: Vec<u8>,
    record: Vec<u8>,
    measured: Measured,
}

/// Runs the finish's two ops on the BrokerHello (its two windows together).
fn avr_finish(dev: &mut Device, l: Layout, broker_hello: &[u8]) -> Result<AvrFinished, LiveError> {
    let [head, rest] = board::finish_requests(l, broker_hello).map_err(LiveError::Sensor)?;
    let (reply, first) =
        kems::measured(dev, fw::OP_FINISH, |d| d.call(fw::OP_FINISH, &head)).map_err(LiveError::Sensor)?;
    board::parse_finish_head_reply(l, &reply).map_err(LiveError::Sensor)?;
    let (reply, second) =
        kems::measured(dev, fw::OP_FINISH_REST, |d| d.call(fw::OP_FINISH_REST, &rest)).map_err(LiveError::Sensor)?;
    let (client_finished, record) = board::parse_finish_reply(l, &reply).map_err(LiveError::Sensor)?;
    Ok(AvrFinished {
        client_finished,
        record,
        measured: Measured {
            cycles: first.cycles + second.cycles,
            stack: first.stack.max(second.stack),
        },
    })
}

/// The image of `mcu` that serves `suite`.
fn image_for(mcu: Mcu, suite: Suite) -> Result<crate::target::Image, LiveError> {
    sensor::images(mcu, &crate::target::Suites::One(suite))
        .map_err(LiveError::Setup)?
        .into_iter()
        .find(|i| sensor::suites_of(i).contains(&suite))
        .ok_or_else(|| LiveError::Setup(format!("no KEM-MQTT image of {} serves {}", mcu.name, suite.name())))
}

/// `cargo xtask mqtt --broker … --key … [--mode …]`: loads the key file,
/// builds (unless `no_build`) and opens the image that serves its suite, and
/// runs the handshake and the record against the broker at `broker`.
pub fn cmd(mcu: Mcu, broker: &BrokerAddr, key: &Path, mode: Mode, no_build: bool) -> Result<(), String> {
    if !(mcu.simulated && mcu.name == "atmega1284p") {
        return Err(format!(
            "--broker runs the sensor in simavr, which simulates the atmega1284p, not the {} \
             (its yasimavr run is batch-mode and cannot wait for a broker's answer)",
            mcu.name
        ));
    }
    let keys = SensorKeys::load(key)
        .map_err(|e| format!("--key {}: {e} (write one with `kem-mqtt provision`)", key.display()))?;
    run_on_image(mcu, &keys, broker, mode, no_build)
}

/// Builds (unless `no_build`) and opens the image of `mcu` that serves the
/// suite of `keys`, runs [`run`] on it and closes the simulator, whatever
/// happened on the network.
pub fn run_on_image(
    mcu: Mcu,
    keys: &SensorKeys,
    broker: &BrokerAddr,
    mode: Mode,
    no_build: bool,
) -> Result<(), String> {
    check_client_id(keys)?;
    let image = image_for(mcu, keys.suite)?;
    if no_build && !image.elf(mcu).exists() {
        return Err(format!(
            "--no-build, and {} is not built (cargo xtask build-avr --mcu {} --image {})",
            image.name, mcu.name, image.name
        ));
    }
    let elf = crate::build::avr::image_elf(mcu, &image, no_build)?;
    let mut dev = Device::open(&elf, mcu.name)?;
    println!(
        "live: {} as {} ({}), broker {broker}, image {} on the simulated {}",
        keys.suite.name(),
        keys.client_id,
        mode,
        image.name,
        mcu.name
    );
    let result = run(&mut dev, keys, broker, mode, WAIT);
    let closed = dev.close();
    result?;
    closed
}

/// The simulated AVR as the bridge's sensor: the host gives it the keys
/// and fresh randomness (the 1284p images are not provisioned).
struct SimulatedSensor<'a> {
    dev: &'a mut Device,
    keys: &'a SensorKeys,
}

impl RemoteSensor for SimulatedSensor<'_> {
    fn hello(&mut self) -> Result<Hello, String> {
        let s = avr_start(self.dev, self.keys).map_err(|e| e.to_string())?;
        Ok(Hello {
            note: format!(
                " on the AVR: {} cycles, stack {} B, {} tape bytes{}",
                s.measured.cycles,
                s.measured.stack,
                s.tape_used,
                if s.attempts > 1 {
                    format!(" (attempt {})", s.attempts)
                } else {
                    String::new()
                }
            ),
            client_hello: s.client_hello,
        })
    }

    fn finish(&mut self, broker_hello: &[u8]) -> Result<Finished, String> {
        let f = avr_finish(self.dev, sensor::layout(self.keys.suite.kem()), broker_hello).map_err(|e| e.to_string())?;
        Ok(Finished {
            note: format!(
                " on the AVR: {} cycles, stack {} B",
                f.measured.cycles, f.measured.stack
            ),
            client_finished: f.client_finished,
            record: f.record,
        })
    }
}

/// The live handshake and record of `keys` on `dev` against `broker`
/// ([`kem_mqtt_host::bridge::run`] carries the flights).
pub fn run(
    dev: &mut Device,
    keys: &SensorKeys,
    broker: &BrokerAddr,
    mode: Mode,
    wait: Duration,
) -> Result<(), LiveError> {
    check_client_id(keys)?;
    let topic = record_topic()?;
    let mut sensor = SimulatedSensor { dev, keys };
    bridge::run(&mut sensor, broker, None, mode, wait, topic, &mut |line| {
        println!("live: {line}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_firmware_topic_names_the_live_client() {
        assert_eq!(record_topic().unwrap(), "kem-mqtt/data/c2b/avr-1/t");
        assert_eq!(firmware_client_id().unwrap(), "avr-1");
        assert_eq!(
            kem_mqtt_host::topics::parse_sealed_c2b(record_topic().unwrap()),
            Some(("avr-1", "t"))
        );
        assert!(fw::TOPIC.len() <= kem_mqtt::MAX_TOPIC_LEN);
    }

    fn keys(id: &str, suite: Suite) -> SensorKeys {
        let kem = suite.kem();
        SensorKeys {
            client_id: id.into(),
            suite,
            kem_sk: vec![1; kem.sk_len()].into(),
            kem_pk: vec![2; kem.pk_len()],
            x25519_sk: [3; 32].into(),
            x25519_pk: [4; 32],
            broker_kem_pk: vec![5; kem.pk_len()],
            broker_x25519_pk: [6; 32],
        }
    }

    #[test]
    fn start_requests_have_the_firmware_layout_and_other_ids_are_refused() {
        for suite in Suite::ALL {
            let k = keys("avr-1", suite);
            let r = start_request(&k, &[7; fw::TAPE_LEN]).unwrap();
            let l = sensor::layout(suite.kem());
            assert_eq!(r.len(), l.start_request_len(), "{}", suite.name());
            assert_eq!(&r[..7], &[suite.id(), 5, b'a', b'v', b'r', b'-', b'1']);
            assert_eq!(r[2 + fw::MAX_ID_LEN], 1, "the KEM secret key follows the padded id");
            assert_eq!(r[l.start_request_len() - fw::TAPE_LEN - 1], 6);
            check_client_id(&k).unwrap();
        }
        let e = check_client_id(&keys("s1", Suite::ALL[0])).unwrap_err().to_string();
        assert!(e.contains("\"s1\"") && e.contains("\"avr-1\""), "{e}");
    }
}
