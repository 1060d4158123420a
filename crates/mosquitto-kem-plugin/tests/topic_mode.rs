//! Topic mode against Debian's `/usr/sbin/mosquitto` without the plugin, with
//! `crates/kem-mqtt-host/mosquitto-gateway.conf` and `gateway.acl` as shipped
//! (docs/gateway.md): `kem-mqtt gateway` instances log in as `gateway`,
//! `mosquitto_sub`/`mosquitto_pub` are the application (`dashboard`), host
//! sensors connect without an account.
//!
//! - a reading reaches the application as plaintext, a tampered record and a
//!   forged plaintext never do, a command reaches the sensor (issue #24);
//! - two gateway instances share one fleet through an MQTT v5 shared
//!   subscription: every sensor's handshake completes, whichever instance
//!   the broker hands each flight to, and every reading and command is
//!   delivered exactly once.

mod common;
use common::*;

use std::sync::Arc;
use std::time::Duration;

use kem_mqtt::Suite;
use kem_mqtt_host::gateway::{Cluster, Gateway, GatewayConfig, GatewayThread};
use kem_mqtt_host::keys::{BrokerState, SensorKeys};
use kem_mqtt_host::mqtt::Connection;
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::HostError;

const TIMEOUT: Duration = Duration::from_secs(10);

/// A gateway on its own thread ([`Gateway::spawn`]), logged in as `gateway`.
fn start_gateway(broker: &Broker, state: &Arc<BrokerState>, cluster: Option<Cluster>) -> GatewayThread {
    let config = GatewayConfig {
        cluster,
        ..GatewayConfig::default()
    };
    let login = Some((GATEWAY_USER, GATEWAY_PASSWORD));
    Gateway::connect_login(&broker.addr(), state.clone(), config, login)
        .and_then(Gateway::spawn)
        .unwrap()
}

fn fleet(suites: &[Suite]) -> (Arc<BrokerState>, Vec<SensorKeys>) {
    let ids: Vec<String> = (0..suites.len()).map(|i| format!("s{i}")).collect();
    let sensors: Vec<(&str, Suite)> = ids.iter().map(String::as_str).zip(suites.iter().copied()).collect();
    let (secrets, registry, keys) = enrol(&sensors);
    (Arc::new(BrokerState { secrets, registry }), keys)
}

/// A reading published on `sub`, after a tampered one on the same topic.
fn send_reading_after_a_tampered_one(c: &mut SensorClient, id: &str, text: &str) {
    let topic = format!("kem-mqtt/data/{id}/c2b/t");
    let mut rec = vec![0u8; 64];
    let n = c.session().seal(topic.as_bytes(), b"99.9 C forged", &mut rec).unwrap();
    rec[8] ^= 1;
    c.publish_raw(&topic, &rec[..n]).unwrap();
    c.send_on("t", text.as_bytes()).unwrap();
}

#[test]
fn topic_mode_through_mosquitto_delivers_readings_and_commands() {
    let suites = [
        suite("ctru-light-ascon+x25519"),
        suite("ml-kem-512"),
        suite("lightsaber+x25519"),
    ];
    let (state, keys) = fleet(&suites);
    let broker = Broker::start_topic_mode("topic-mode");
    let gw = start_gateway(&broker, &state, None);
    let app = subscriber(&broker, "plain/#", keys.len(), 60);

    // A client without an account can neither forge a reading nor write
    // on another client id's record topics (the ACL drops both).
    let mut forger = Connection::connect(&broker.addr()).unwrap();
    forger.mqtt_connect("mallory").unwrap();
    forger.publish("plain/s0/t", b"forged reading").unwrap();
    forger.publish("kem-mqtt/data/s0/c2b/t", b"forged record").unwrap();

    let mut expected = vec![];
    for k in &keys {
        let name = k.suite.name();
        let mut c =
            SensorClient::connect_topic_mode(&broker.addr(), k, TIMEOUT).unwrap_or_else(|e| panic!("{name}: {e}"));
        let reading = format!("21.5 C from {name}");
        send_reading_after_a_tampered_one(&mut c, &k.client_id, &reading);
        expected.push(format!("plain/{}/t {reading}", k.client_id));
        assert!(app_publish(&broker, &format!("cmd/{}/led", k.client_id), "on"));
        assert_eq!(
            c.recv_command().unwrap_or_else(|e| panic!("{name}: {e}")),
            ("led".to_string(), b"on".to_vec())
        );
        c.disconnect().unwrap();
    }
    assert_eq!(app.lines().unwrap(), expected, "what the application received");
    let stats = gw.stop().unwrap();
    assert_eq!((stats.established, stats.records_opened), (3, 3), "{stats}");
    assert_eq!((stats.records_rejected, stats.commands_sealed), (3, 3), "{stats}");
}

#[test]
fn two_gateway_instances_share_one_fleet() {
    let suites = [suite("ctru-light-ascon+x25519"); 8];
    let (state, keys) = fleet(&suites);
    let broker = Broker::start_topic_mode("cluster");
    let instances = [
        start_gateway(&broker, &state, Some(Cluster::new("gw", "a").unwrap())),
        start_gateway(&broker, &state, Some(Cluster::new("gw", "b").unwrap())),
    ];
    // Sensor 0 hands three more handshakes to the pair: its session moves
    // between the instances, and the one it left must let go.
    let rounds = keys.len() + 3;
    let app = subscriber(&broker, "plain/#", rounds, 90);
    // Other clients' traffic on the handshake topic: mosquitto hands the
    // shared subscription's messages out in turn, so without it a
    // sensor's hello and finished would always alternate between the two
    // instances in the same order. A message of an unknown type costs the
    // gateway nothing.
    let mut noise = Connection::connect(&broker.addr()).unwrap();
    noise.mqtt_connect("nobody").unwrap();
    let mut expected = vec![];
    for round in 0..rounds {
        if round % 2 == 1 {
            noise.publish("kem-mqtt/hs/nobody/c2b", &[1, 0xEE]).unwrap();
        }
        let k = if round < 4 { &keys[0] } else { &keys[round - 3] };
        let mut c = SensorClient::connect_topic_mode(&broker.addr(), k, TIMEOUT)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let reading = format!("reading {round}");
        c.send_on("t", reading.as_bytes()).unwrap();
        expected.push(format!("plain/{}/t {reading}", k.client_id));
        assert!(app_publish(
            &broker,
            &format!("cmd/{}/led", k.client_id),
            &format!("on {round}")
        ));
        // Exactly one command, sealed under this session: a copy sealed
        // by an instance holding an older session would not open.
        assert_eq!(
            c.recv_command().unwrap_or_else(|e| panic!("round {round}: {e}")),
            ("led".to_string(), format!("on {round}").into_bytes())
        );
        c.set_timeout(Duration::from_millis(300)).unwrap();
        assert!(
            matches!(c.recv_command(), Err(HostError::Timeout)),
            "round {round}: a second copy of the command"
        );
        c.disconnect().unwrap();
    }
    assert_eq!(app.lines().unwrap(), expected, "every reading exactly once");
    let [a, b] = instances.map(|g| g.stop().unwrap());
    eprintln!("instance a: {a}\ninstance b: {b}");
    assert_eq!(a.established + b.established, rounds as u64);
    assert!(
        a.hellos_answered > 0 && b.hellos_answered > 0,
        "the broker handed every hello to one instance"
    );
    assert_eq!(a.records_opened + b.records_opened, rounds as u64);
    assert_eq!(a.commands_sealed + b.commands_sealed, rounds as u64);
    assert_eq!(a.records_rejected + b.records_rejected, 0);
    assert!(
        a.finished_forwarded + b.finished_forwarded > 0,
        "no ClientFinished reached the other instance: forwarding untested"
    );
    assert!(
        a.superseded + b.superseded > 0,
        "sensor 0's session never moved between the instances"
    );
}

/// The tests run `mosquitto-gateway.conf` and `gateway.acl` as shipped; the
/// guide must show those same files.
#[test]
fn the_gateway_guide_shows_the_shipped_files() {
    let guide = include_str!("../../../docs/gateway.md");
    for (name, text) in [
        ("mosquitto-gateway.conf", mosquitto_site::GATEWAY_CONF),
        ("gateway.acl", mosquitto_site::GATEWAY_ACL),
    ] {
        assert!(
            guide.contains(text),
            "docs/gateway.md does not contain {name} as shipped"
        );
    }
}
