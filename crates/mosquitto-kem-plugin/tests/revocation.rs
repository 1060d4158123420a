//! Issue #37: revoking a sensor takes effect on a running broker, in both
//! modes, without a restart. Removing the sensor from `registry.json` (as
//! `kem-mqtt revoke` does: a new file renamed over the old one) is seen
//! within a second: the revoked sensor's live session ends, its next
//! handshake is refused, and the other sensor is untouched.

mod common;
use common::*;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kem_mqtt_host::gateway::{Gateway, GatewayConfig};
use kem_mqtt_host::keys::{BrokerState, Registry};
use kem_mqtt_host::mqtt;
use kem_mqtt_host::reload::RegistryWatch;
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::HostError;

const TIMEOUT: Duration = Duration::from_secs(10);

/// `registry.json` in `dir` without `id`, written as provisioning writes it.
fn revoke(dir: &Path, id: &str) {
    let path = dir.join("registry.json");
    let mut registry = Registry::load_or_empty(&path).unwrap();
    assert!(registry.clients.remove(id).is_some());
    registry.save(&path).unwrap();
}

#[test]
fn auth_mode_revocation_ends_the_session_and_refuses_the_next_handshake() {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s), ("bob", s)]);
    let mut broker = Broker::start("revoke-auth", &secrets, &registry, Conf::Documented, &plugin_path());
    let addr = broker.addr();
    let app = subscriber(&broker, "plain/#", 3, 60);
    let mut alice = SensorClient::connect_auth_mode(&addr, &keys[0], TIMEOUT).unwrap();
    let (mut bob, outcome) = auth_attempt(&addr, &keys[1], "bob", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    alice.send_on("t", b"alice 1").unwrap();

    revoke(&broker.dir, "bob");
    // The plugin closes bob's connection (it checks the file once a second).
    assert!(
        closed_by_peer(&mut bob, Duration::from_secs(5)),
        "bob's connection outlived his revocation: {}",
        broker.log()
    );
    // bob's next handshake is refused.
    let (_, outcome) = auth_attempt(&addr, &keys[1], "bob", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::NOT_AUTHORIZED));
    // alice kept her connection and her session: a reading and a command.
    alice.send_on("t", b"alice 2").unwrap();
    assert!(app_publish(&broker, "cmd/alice/led", "on"));
    assert_eq!(alice.recv_command().unwrap(), ("led".to_string(), b"on".to_vec()));
    alice.send_on("t", b"alice 3").unwrap();
    assert_eq!(
        app.lines().unwrap(),
        [
            "plain/alice/t alice 1",
            "plain/alice/t alice 2",
            "plain/alice/t alice 3"
        ]
    );
    let log = broker.log();
    assert!(log.contains("registry reloaded: 1 sensors, revoked [\"bob\"]"), "{log}");
    broker.assert_alive();
}

#[test]
fn topic_mode_revocation_ends_the_session_and_refuses_the_next_handshake() {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s), ("bob", s)]);
    let broker = Broker::start_topic_mode("revoke-topic");
    // The gateway's key directory, watched.
    let dir = broker.dir.join("gateway-keys");
    std::fs::create_dir_all(&dir).unwrap();
    registry.save(&dir.join("registry.json")).unwrap();
    let (watch, registry) = RegistryWatch::load(&dir.join("registry.json")).unwrap();
    let state = Arc::new(BrokerState { secrets, registry });
    let login = Some((GATEWAY_USER, GATEWAY_PASSWORD));
    let mut gateway = Gateway::connect_login(broker.addr(), state, GatewayConfig::default(), login).unwrap();
    gateway.watch_registry(watch);
    let gw = gateway.spawn().unwrap();
    let app = subscriber(&broker, "plain/#", 3, 60);
    let mut alice = SensorClient::connect_topic_mode(broker.addr(), &keys[0], TIMEOUT).unwrap();
    let mut bob = SensorClient::connect_topic_mode(broker.addr(), &keys[1], TIMEOUT).unwrap();
    alice.send_on("t", b"alice 1").unwrap();
    bob.send_on("t", b"bob 1").unwrap();

    revoke(&dir, "bob");
    // The gateway drops bob's session (it checks the file once a second):
    // his readings are no longer opened, no command is sealed to him …
    std::thread::sleep(Duration::from_millis(1500));
    bob.send_on("t", b"bob 2").unwrap();
    assert!(app_publish(&broker, "cmd/bob/led", "on"));
    bob.set_timeout(Duration::from_millis(500)).unwrap();
    assert!(
        matches!(bob.recv_command(), Err(HostError::Timeout)),
        "a command sealed to bob"
    );
    // … and his next handshake gets no answer.
    let t = Instant::now();
    let again = SensorClient::connect_topic_mode(broker.addr(), &keys[1], Duration::from_secs(2));
    assert!(
        matches!(again, Err(HostError::Timeout)),
        "bob's handshake after revocation: {again:?}"
    );
    assert!(t.elapsed() >= Duration::from_secs(2));
    // alice is untouched.
    assert!(app_publish(&broker, "cmd/alice/led", "on"));
    assert_eq!(alice.recv_command().unwrap(), ("led".to_string(), b"on".to_vec()));
    alice.send_on("t", b"alice 2").unwrap();
    // Two sensors' readings: no order between them.
    let mut lines = app.lines().unwrap();
    lines.sort();
    assert_eq!(
        lines,
        ["plain/alice/t alice 1", "plain/alice/t alice 2", "plain/bob/t bob 1"]
    );
    let stats = gw.stop().unwrap();
    assert_eq!(stats.sessions_revoked, 1, "{stats}");
    assert_eq!(stats.established, 2, "{stats}");
}
