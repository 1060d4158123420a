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

/// Issue #52: the registry on a PostgreSQL server (`plugin_opt_registry`),
/// revoked there by another process's transaction: the plugin ends the
/// sensor's connection and refuses its next handshake, as with the file.
#[test]
fn auth_mode_revocation_in_a_postgresql_registry_reaches_the_plugin() {
    use kem_mqtt_host::store::{self, RegistryLocation};
    let pg = avr_lab::mqtt::registry_db::Postgres::start("plugin-revocation");
    let location = RegistryLocation::parse(&pg.url()).unwrap();
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s), ("bob", s)]);
    let mut db = store::open(&location).unwrap();
    let sensors: Vec<_> = registry.clients.clone().into_iter().collect();
    db.enrol(&sensors, false).unwrap();
    // The key directory's registry.json is empty: the plugin must read the database.
    let option = format!("plugin_opt_registry {}\n", pg.url());
    let mut broker = Broker::start(
        "revoke-pg",
        &secrets,
        &Registry::default(),
        Conf::DocumentedWith(&option),
        &plugin_path(),
    );
    let addr = broker.addr();
    let mut alice = SensorClient::connect_auth_mode(&addr, &keys[0], TIMEOUT).unwrap();
    let (mut bob, outcome) = auth_attempt(&addr, &keys[1], "bob", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS), "{}", broker.log());
    db.revoke(&["bob".to_string()]).unwrap();
    assert!(
        closed_by_peer(&mut bob, Duration::from_secs(5)),
        "bob's connection outlived his revocation: {}",
        broker.log()
    );
    let (_, outcome) = auth_attempt(&addr, &keys[1], "bob", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::NOT_AUTHORIZED));
    alice.send_on("t", b"alice").unwrap();
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

/// Every PUBLISH `conn` receives within `quiet` of the last one: (topic, payload).
fn received(conn: &mut mqtt::Connection, quiet: Duration) -> Vec<(String, Vec<u8>)> {
    let mut got = vec![];
    while let Some(p) = next_publish(conn, quiet) {
        got.push(p);
    }
    got
}

/// Issue #47: a record a sensor published with the retain flag (a thief
/// with its leaked key chose the reading) is delivered live, but nothing
/// of it is kept: after the sensor's revocation a new subscriber to every
/// topic receives neither the reading on `plain/…` nor the sealed record.
#[test]
fn a_revoked_sensors_retained_reading_is_not_served_afterwards() {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s), ("bob", s)]);
    // Every client may read every topic (the spy below reads the sealed ones too).
    let mut broker = Broker::start(
        "revoke-retain",
        &secrets,
        &registry,
        Conf::TopicModeAnonymous,
        &plugin_path(),
    );
    let addr = broker.addr();
    let app = subscriber(&broker, "plain/#", 1, 30);
    let (mut alice, outcome, session) = auth_attempt_session(&addr, &keys[0], "alice", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    let mut session = session.unwrap();
    let topic = "kem-mqtt/data/c2b/alice/t";
    let mut rec = vec![0u8; 64];
    let n = session
        .seal(topic.as_bytes(), b"chosen by the thief", &mut rec)
        .unwrap();
    alice.publish_retained(topic, &rec[..n]).unwrap();
    assert_eq!(app.lines().unwrap(), ["plain/alice/t chosen by the thief"]);

    revoke(&broker.dir, "alice");
    assert!(
        closed_by_peer(&mut alice, Duration::from_secs(5)),
        "alice's connection outlived her revocation: {}",
        broker.log()
    );
    let mut late = mqtt::Connection::connect(&addr).unwrap();
    late.mqtt_connect("late-subscriber").unwrap();
    late.subscribe(1, &["#"]).unwrap();
    let kept: Vec<String> = received(&mut late, Duration::from_secs(1))
        .into_iter()
        .map(|(t, p)| format!("{t} ({} bytes)", p.len()))
        .collect();
    assert!(kept.is_empty(), "served after the revocation: {kept:?}");
    broker.assert_alive();
}

/// Issue #47: the plugin looks at the registry before it opens a record or
/// seals a command, not only on its once-a-second check: a record that
/// follows the revocation at once is not opened, a command is not sealed.
#[test]
fn auth_mode_opens_no_record_sent_right_after_the_revocation() {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s), ("bob", s)]);
    let mut broker = Broker::start(
        "revoke-now",
        &secrets,
        &registry,
        Conf::TopicModeAnonymous,
        &plugin_path(),
    );
    let addr = broker.addr();
    let mut spy = mqtt::Connection::connect(&addr).unwrap();
    spy.mqtt_connect("spy").unwrap();
    spy.subscribe(1, &["plain/#", "kem-mqtt/data/b2c/#"]).unwrap();
    let (mut bob, outcome, session) = auth_attempt_session(&addr, &keys[1], "bob", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    let mut session = session.unwrap();
    let topic = "kem-mqtt/data/c2b/bob/t";
    publish_sealed(&mut bob, &mut session, topic, b"bob before");
    assert_eq!(
        next_publish(&mut spy, TIMEOUT),
        Some(("plain/bob/t".to_string(), b"bob before".to_vec()))
    );
    // Five rounds, each within a few milliseconds of its revocation (the
    // once-a-second check alone lets nearly every one through).
    let mut app = mqtt::Connection::connect(&addr).unwrap();
    app.mqtt_connect("app").unwrap();
    for round in 0..5 {
        if round > 0 {
            // bob enrolled again (new keys: a new registry entry) and back.
            let path = broker.dir.join("registry.json");
            let mut r = Registry::load_or_empty(&path).unwrap();
            r.clients.insert("bob".into(), registry.clients["bob"].clone());
            r.save(&path).unwrap();
            std::thread::sleep(Duration::from_millis(1100));
            let (conn, outcome, s) = auth_attempt_session(&addr, &keys[1], "bob", None);
            assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS), "round {round}");
            (bob, session) = (conn, s.unwrap());
        }
        revoke(&broker.dir, "bob");
        publish_sealed(&mut bob, &mut session, topic, b"bob after");
        app.publish("cmd/bob/led", b"on").unwrap();
        let got = received(&mut spy, Duration::from_millis(500));
        assert!(got.is_empty(), "round {round}: delivered after the revocation: {got:?}");
    }
    let log = broker.log();
    assert!(log.contains("revoked [\"bob\"]"), "{log}");
    broker.assert_alive();
}
