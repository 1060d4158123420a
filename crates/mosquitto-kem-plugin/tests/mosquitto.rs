//! Runs Debian's `/usr/sbin/mosquitto` with this plugin on a free loopback
//! port and performs the AUTH-mode handshake for every suite.
//! Needs the Debian packages `mosquitto` and `mosquitto-dev`.

mod common;
use common::{plugin_path, Broker, Conf};
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
    let secrets = generate_broker(&kem_mqtt::KemId::ALL, &mut OsRng);
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
    // A separate identity for the subscriber: the shipped ACL lets
    // "dashboard" read every sensor's topics.
    let watcher = provision_sensor(
        &secrets,
        &mut registry,
        "dashboard",
        Suite::ALL[1],
        SuiteSet::EMPTY.with(Suite::ALL[1]),
        &mut OsRng,
    )
    .unwrap();
    // The shipped configuration (default rate limits: 14 hellos from one
    // address stay within its burst of 16).
    let broker = Broker::start("mosquitto", &secrets, &registry, Conf::Documented, &plugin_path());
    let addr = broker.addr();

    let mut sub = SensorClient::connect_auth_mode(&addr, &watcher, TIMEOUT).unwrap();
    sub.subscribe(&["sensors/#"]).unwrap();
    for keys in &sensors {
        let mut c = SensorClient::connect_auth_mode(&addr, keys, TIMEOUT)
            .unwrap_or_else(|e| panic!("{}: {e}", keys.suite.name()));
        assert_eq!(c.stats.broker_hello, keys.suite.broker_hello_len());
        let topic = format!("sensors/{}/t", keys.client_id);
        let n = c.publish_record(&topic, b"21.5").unwrap();
        let (got_topic, payload) = sub.recv_raw().unwrap();
        assert_eq!((got_topic, payload.len()), (topic, n), "{}", keys.suite.name());
        c.disconnect().unwrap();
    }

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
