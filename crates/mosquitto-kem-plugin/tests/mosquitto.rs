//! Runs Debian's `/usr/sbin/mosquitto` with this plugin on a free loopback
//! port, the shipped configuration, and for every suite: the AUTH-mode
//! handshake, a reading delivered as plaintext to an application
//! (`mosquitto_sub`), a tampered record that never reaches it, and a
//! command from an application (`mosquitto_pub`) that reaches the sensor.
//! Needs the Debian packages `mosquitto`, `mosquitto-dev` and `mosquitto-clients`.

mod common;
use common::{app_publish, plugin_path, site, subscriber, Broker, Conf};
use std::time::Duration;

use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::keys::Registry;
use kem_mqtt_host::mqtt::{self, Connection, Packet};
use kem_mqtt_host::provision::{generate_broker, provision_sensor};
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::HostError;
use kem_mqtt_host::OsRng;

const TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn auth_mode_through_mosquitto_for_every_suite() {
    let secrets = generate_broker(&kem_mqtt::KEMS, &mut OsRng);
    let mut registry = Registry::default();
    let sensors: Vec<_> = Suite::ALL
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            provision_sensor(
                &secrets,
                &mut registry,
                &format!("s{i}"),
                s,
                SuiteSet::EMPTY.with(s),
                &mut OsRng,
            )
            .unwrap()
        })
        .collect();
    // The shipped configuration (default rate limits: 14 hellos from one
    // address stay within its burst of 16).
    let broker = Broker::start("mosquitto", &secrets, &registry, Conf::Documented, &plugin_path());
    let addr = broker.addr();

    // The application: every reading, as plaintext.
    let app = subscriber(&broker, "plain/#", sensors.len(), 60);
    let mut expected = vec![];
    for keys in &sensors {
        let name = keys.suite.name();
        let mut c = SensorClient::connect_auth_mode(&addr, keys, TIMEOUT).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.stats.broker_hello, keys.suite.broker_hello_len());
        // A tampered record first: the application must never see it.
        let topic = format!("kem-mqtt/data/c2b/{}/t", keys.client_id);
        let mut rec = vec![0u8; 64];
        let n = c.session().seal(topic.as_bytes(), b"99.9 C forged", &mut rec).unwrap();
        rec[n - 1] ^= 0x80;
        c.publish_raw(&topic, &rec[..n]).unwrap();
        let reading = format!("21.5 C from {name}");
        c.send_on("t", reading.as_bytes()).unwrap();
        expected.push(format!("plain/{}/t {reading}", keys.client_id));
        // A command from an application, sealed to this sensor alone.
        assert!(app_publish(&broker, &format!("cmd/{}/led", keys.client_id), "on"));
        assert_eq!(
            c.recv_command().unwrap_or_else(|e| panic!("{name}: {e}")),
            ("led".to_string(), b"on".to_vec()),
            "{name}"
        );
        c.disconnect().unwrap();
    }
    assert_eq!(app.lines().unwrap(), expected, "what the application received");

    // Tampered ClientFinished → 0x87.
    let err = SensorClient::connect_auth_mode_with(&addr, &sensors[1], TIMEOUT, |f, m| {
        if f == 3 {
            m[10] ^= 1;
        }
    })
    .unwrap_err();
    assert!(matches!(err, HostError::Refused(mqtt::NOT_AUTHORIZED)), "{err}");
    // Downgrade hybrid → pure against a hybrid-only policy → 0x87.
    let mut pure = sensors[1].clone();
    pure.suite = Suite::new(pure.suite.kem(), false);
    let err = SensorClient::connect_auth_mode(&addr, &pure, TIMEOUT).unwrap_err();
    assert!(matches!(err, HostError::Refused(mqtt::NOT_AUTHORIZED)), "{err}");
    // Unknown client → 0x87.
    let mut stranger = sensors[1].clone();
    stranger.client_id = "stranger".into();
    let err = SensorClient::connect_auth_mode(&addr, &stranger, TIMEOUT).unwrap_err();
    assert!(matches!(err, HostError::Refused(mqtt::NOT_AUTHORIZED)), "{err}");
    // Another authentication method → 0x8C.
    let mut conn = Connection::connect(&addr).unwrap();
    conn.set_timeout(Some(TIMEOUT)).unwrap();
    conn.send(&Packet::Connect {
        client_id: "x".into(),
        keep_alive: 10,
        auth_method: Some("SCRAM-SHA-1".into()),
        auth_data: Some(vec![1, 2]),
    })
    .unwrap();
    match conn.recv().unwrap() {
        Packet::ConnAck { reason, .. } => assert_eq!(reason, mqtt::BAD_AUTHENTICATION_METHOD),
        p => panic!("{p:?}"),
    }
}

/// Issue #47: the shipped configuration keeps QoS 1 sessions across a
/// broker restart (`persistence true`). An application with a persistent
/// session is offline while a sensor's QoS 1 reading arrives; the broker is
/// stopped as `systemctl stop` stops it and started again; the application
/// comes back and gets the reading.
#[test]
fn a_reading_queued_for_an_offline_application_survives_a_broker_restart() {
    use common::{auth_attempt_session, enrol, suite, Attempt, APP_PASSWORD, APP_USER};
    use std::process::Command;
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s)]);
    let mut broker = Broker::start("persist", &secrets, &registry, Conf::Documented, &plugin_path());
    let port = broker.port.to_string();
    // The application: a persistent session (-c: it never expires) at QoS 1.
    let app = |extra: &[&str]| {
        Command::new(site::MOSQUITTO_SUB)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-V",
                "mqttv5",
                "-u",
                APP_USER,
                "-P",
                APP_PASSWORD,
            ])
            .args(["-c", "-i", "dashboard-1", "-q", "1", "-t", "plain/#", "-v"])
            .args(extra)
            .output()
            .unwrap()
    };
    let subscribed = app(&["-E"]);
    assert!(
        subscribed.status.success(),
        "{}",
        String::from_utf8_lossy(&subscribed.stderr)
    );
    let (mut alice, outcome, session) = auth_attempt_session(&broker.addr(), &keys[0], "alice", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    let topic = "kem-mqtt/data/c2b/alice/t";
    let mut rec = vec![0u8; 64];
    let n = session.unwrap().seal(topic.as_bytes(), b"21.5 C", &mut rec).unwrap();
    alice
        .send(&Packet::PublishQos1 {
            packet_id: 1,
            topic: topic.into(),
            payload: rec[..n].to_vec(),
        })
        .unwrap();
    alice.set_timeout(Some(TIMEOUT)).unwrap();
    assert!(matches!(alice.recv().unwrap(), Packet::PubAck { packet_id: 1, reason } if reason < 0x80));
    broker.terminate();
    broker.restart();
    let back = app(&["-C", "1", "-W", "10"]);
    assert_eq!(
        String::from_utf8_lossy(&back.stdout).trim(),
        "plain/alice/t 21.5 C",
        "the queued reading did not survive the restart: {}",
        broker.log()
    );
}
