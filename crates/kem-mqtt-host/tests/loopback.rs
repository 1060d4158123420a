//! End-to-end tests against the embedded broker on 127.0.0.1 (bounded by timeouts).

use std::sync::Arc;
use std::time::Duration;

use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::broker::EmbeddedBroker;
use kem_mqtt_host::gateway::{Gateway, GatewayEvent};
use kem_mqtt_host::keys::{BrokerSecrets, Registry, SensorKeys};
use kem_mqtt_host::mqtt::{self, Connection};
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::{data_c2b, HostError};

mod common;
use common::enrol;

const TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn topic_mode_every_suite_through_the_embedded_broker() {
    let (state, sensors) = enrol(&Suite::ALL, |s| SuiteSet::EMPTY.with(s));
    let broker = EmbeddedBroker::start().unwrap();
    let addr = broker.addr().to_string();
    assert!(addr.starts_with("127.0.0.1:"));
    let mut gw = Gateway::connect(&addr, Arc::new(state)).unwrap();
    let n = sensors.len();
    let gw_thread = std::thread::spawn(move || {
        let (mut established, mut messages) = (0, 0);
        while messages < n {
            match gw.poll().unwrap() {
                GatewayEvent::Established { .. } => established += 1,
                GatewayEvent::Message { client_id, payload, .. } => {
                    messages += 1;
                    let mut reply = b"ack:".to_vec();
                    reply.extend_from_slice(&payload);
                    gw.send(&client_id, &reply).unwrap();
                }
                GatewayEvent::Rejected { client_id, error } => panic!("{client_id}: {error}"),
                _ => {}
            }
        }
        established
    });
    for keys in &sensors {
        let mut c = SensorClient::connect_topic_mode(&addr, keys, TIMEOUT).unwrap();
        let s = c.stats;
        assert_eq!(s.client_hello, keys.suite.client_hello_len(keys.client_id.len()));
        assert_eq!(s.broker_hello, keys.suite.broker_hello_len());
        assert_eq!(s.client_finished, 34);
        let msg = format!("reading from {}", keys.client_id);
        assert_eq!(c.send(msg.as_bytes()).unwrap(), msg.len() + kem_mqtt::RECORD_OVERHEAD);
        assert_eq!(c.recv().unwrap(), [b"ack:".as_slice(), msg.as_bytes()].concat());
        c.disconnect().unwrap();
    }
    assert_eq!(gw_thread.join().unwrap(), n);
    broker.stop();
}

/// A client that connects right after another one disconnected keeps its
/// connection: the embedded broker (rumqttd 0.20) reuses the freed
/// connection id, and a DISCONNECT followed at once by a socket close made
/// it drop the next client (see `MqttClient::disconnect`). One such
/// hand-over in about six failed before the fix; this makes a hundred.
#[test]
fn a_client_connecting_after_a_disconnect_keeps_its_connection() {
    let broker = EmbeddedBroker::start().unwrap();
    let endpoint = kem_mqtt_host::transport::Endpoint::tcp(broker.addr().to_string());
    for i in 0..100 {
        let id = format!("client-{i}");
        let mut c = kem_mqtt_host::client::MqttClient::connect(&endpoint, &id, None, TIMEOUT).unwrap();
        c.subscribe(&[&format!("t/{id}/a"), &format!("t/{id}/b")])
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        c.disconnect().unwrap();
    }
    broker.stop();
}

#[test]
fn topic_mode_gateway_rejects_replays_moves_and_policy_violations() {
    let hybrid = Suite::from_name("ctru-light-ascon+x25519").unwrap();
    let pure = Suite::from_name("ctru-light-ascon").unwrap();
    let (state, sensors) = enrol(&[hybrid], |s| SuiteSet::EMPTY.with(s));
    let broker = EmbeddedBroker::start().unwrap();
    let addr = broker.addr().to_string();
    let mut gw = Gateway::connect(&addr, Arc::new(state)).unwrap();
    gw.set_timeout(Some(TIMEOUT));
    let keys = &sensors[0];

    // A spy sees every record on the wire.
    let mut spy = Connection::connect(&addr).unwrap();
    spy.set_timeout(Some(TIMEOUT)).unwrap();
    spy.mqtt_connect("spy").unwrap();
    spy.subscribe(1, &["kem-mqtt/data/#"]).unwrap();

    let sensor = std::thread::spawn({
        let (addr, keys) = (addr.clone(), keys.clone());
        move || {
            let mut c = SensorClient::connect_topic_mode(&addr, &keys, TIMEOUT).unwrap();
            c.send(b"first").unwrap();
            c
        }
    });
    let mut events = vec![];
    while events.len() < 3 {
        match gw.poll().unwrap() {
            GatewayEvent::Other => {}
            e => events.push(e),
        }
    }
    assert!(matches!(&events[1], GatewayEvent::Established { suite, .. } if *suite == hybrid));
    assert!(matches!(&events[2], GatewayEvent::Message { payload, .. } if payload == b"first"));
    let mut client = sensor.join().unwrap();
    let record = loop {
        match spy.recv().unwrap() {
            mqtt::Packet::Publish { topic, payload } if topic == data_c2b(&keys.client_id) => break payload,
            _ => {}
        }
    };
    // Replayed record.
    spy.publish(&data_c2b(&keys.client_id), &record).unwrap();
    assert!(matches!(
        gw.poll().unwrap(),
        GatewayEvent::Rejected {
            error: kem_mqtt::Error::RecordReplayed,
            ..
        }
    ));
    // A record sealed for another topic, moved onto the gateway's topic.
    let mut moved = vec![0u8; 3 + kem_mqtt::RECORD_OVERHEAD];
    client.session().seal(b"sensors/elsewhere", b"abc", &mut moved).unwrap();
    spy.publish(&data_c2b(&keys.client_id), &moved).unwrap();
    assert!(matches!(
        gw.poll().unwrap(),
        GatewayEvent::Rejected {
            error: kem_mqtt::Error::RecordAuthFailed,
            ..
        }
    ));
    // The session still works.
    client.send(b"second").unwrap();
    assert!(matches!(gw.poll().unwrap(), GatewayEvent::Message { payload, .. } if payload == b"second"));

    // The sensor's side: a forged record and a replayed one on its own
    // broker → sensor topic (the embedded broker has no ACL) are skipped and
    // counted; the genuine record behind them is delivered (issue #32: one
    // bad record must not end a sensor).
    let b2c = kem_mqtt_host::data_b2c(&keys.client_id);
    gw.send(&keys.client_id, b"genuine 1").unwrap();
    assert_eq!(client.recv().unwrap(), b"genuine 1");
    let sealed = loop {
        match spy.recv().unwrap() {
            mqtt::Packet::Publish { topic, payload } if topic == b2c => break payload,
            _ => {}
        }
    };
    spy.publish(&b2c, &[0u8; 40]).unwrap();
    spy.publish(&b2c, &sealed).unwrap();
    gw.send(&keys.client_id, b"genuine 2").unwrap();
    assert_eq!(client.recv().unwrap(), b"genuine 2");
    // Whatever order the broker delivered the three in: nothing else opens.
    client.set_timeout(Duration::from_millis(500)).unwrap();
    assert!(matches!(client.recv(), Err(HostError::Timeout)));
    assert_eq!(client.dropped(), 2);

    // Downgrade: the same sensor offering the pure suite is refused by policy.
    let mut downgraded = keys.clone();
    downgraded.suite = pure;
    let d =
        std::thread::spawn(move || SensorClient::connect_topic_mode(&addr, &downgraded, Duration::from_millis(1500)));
    loop {
        match gw.poll().unwrap() {
            GatewayEvent::Rejected { error, .. } => {
                assert_eq!(error, kem_mqtt::Error::SuiteNotAllowed(pure.id()));
                break;
            }
            GatewayEvent::Other => {}
            e => panic!("{e:?}"),
        }
    }
    assert!(matches!(d.join().unwrap(), Err(HostError::Timeout)));
    broker.stop();
}

#[test]
fn key_files_round_trip_and_refuse_other_versions() {
    let dir = std::env::temp_dir().join(format!("kem-mqtt-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let suite = Suite::from_name("lightsaber+x25519").unwrap();
    let (state, sensors) = enrol(&[suite], |s| SuiteSet::for_kem(s.kem(), true));
    state.secrets.save(&dir.join("broker.json")).unwrap();
    state.registry.save(&dir.join("registry.json")).unwrap();
    sensors[0].save(&dir.join("sensor.json")).unwrap();
    let b = BrokerSecrets::load(&dir.join("broker.json")).unwrap();
    assert_eq!(b.x25519_pk, state.secrets.x25519_pk);
    let r = Registry::load_or_empty(&dir.join("registry.json")).unwrap();
    assert_eq!(r.clients["sensor-0"].allowed, SuiteSet::for_kem(suite.kem(), true));
    let s = SensorKeys::load(&dir.join("sensor.json")).unwrap();
    assert_eq!(s.kem_pk, sensors[0].kem_pk);

    let text = std::fs::read_to_string(dir.join("sensor.json")).unwrap();
    common::write_private(&dir.join("v2.json"), &text.replace("\"version\": 1", "\"version\": 2"));
    let e = SensorKeys::load(&dir.join("v2.json")).err().unwrap();
    assert!(matches!(e.inner(), kem_mqtt_host::keys::KeyError::Format(_)), "{e:?}");
    // A public key that does not belong to the secret key.
    let mut f = sensors[0].to_file();
    f.kem_pk = sensors[0].to_file().broker_kem_pk.clone();
    assert!(SensorKeys::from_file(&f).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cli_provision_then_demo() {
    let exe = env!("CARGO_BIN_EXE_kem-mqtt");
    let dir = std::env::temp_dir().join(format!("kem-mqtt-cli-{}", std::process::id()));
    let out = std::process::Command::new(exe)
        .args([
            "provision",
            "--dir",
            dir.to_str().unwrap(),
            "--client",
            "s1",
            "--suite",
            "ctru-light-ascon+x25519",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let keys = SensorKeys::load(&dir.join("sensor-s1.json")).unwrap();
    assert_eq!(keys.suite.name(), "ctru-light-ascon+x25519");
    std::fs::remove_dir_all(&dir).unwrap();
    let out = std::process::Command::new(exe)
        .args(["demo", "--count", "2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // The demo's suite and client id; sizes from the code (CTRU-Light's
    // encodings may change between revisions of its definition).
    let demo = Suite::from_name("ctru-light-ascon+x25519").unwrap();
    let sizes = format!(
        "ClientHello {:>5} B  BrokerHello {:>5} B  ClientFinished {:>3} B",
        demo.client_hello_len("sensor-1".len()),
        demo.broker_hello_len(),
        demo.client_finished_len()
    );
    assert!(stdout.contains(&sizes), "{sizes}\n{stdout}");
    // A reading reaches the application as plaintext, a command the sensor.
    assert!(
        stdout.contains("application on plain/sensor-1/t: {\"seq\":1,\"temp_c\":21.1}; application → command led1: on"),
        "{stdout}"
    );
}

/// Topic mode on the second broker implementation (rumqttd, embedded): two
/// gateway instances share the fleet through an MQTT v5 shared
/// subscription, as against mosquitto in
/// `crates/mosquitto-kem-plugin/tests/topic_mode.rs`. Every sensor's
/// handshake completes whichever instance gets each flight; one sensor
/// handshakes four times, its session moving between the instances; every
/// reading reaches the application once and every command opens under the
/// sensor's current session.
#[test]
fn two_gateway_instances_share_one_fleet_on_rumqttd() {
    use kem_mqtt_host::client::MqttClient;
    use kem_mqtt_host::gateway::{Cluster, GatewayConfig};
    let suite = Suite::from_name("ctru-light-ascon+x25519").unwrap();
    let (state, sensors) = enrol(&[suite; 4], |s| SuiteSet::EMPTY.with(s));
    let state = Arc::new(state);
    let broker = EmbeddedBroker::start().unwrap();
    let addr = broker.addr().to_string();
    let instances = ["a", "b"].map(|name| {
        let config = GatewayConfig {
            cluster: Some(Cluster::new("gw", name).unwrap()),
            ..GatewayConfig::default()
        };
        Gateway::connect_with(&addr, state.clone(), config)
            .and_then(Gateway::spawn)
            .unwrap()
    });
    let mut app = MqttClient::connect(&addr.as_str().into(), "application", None, TIMEOUT).unwrap();
    app.subscribe(&["plain/#"]).unwrap();
    // Another client's message on the handshake topic between rounds moves
    // the next hello to the other instance (the broker hands shared
    // messages out in turn).
    let mut noise = MqttClient::connect(&addr.as_str().into(), "nobody", None, TIMEOUT).unwrap();
    let rounds = sensors.len() + 3;
    let mut received = vec![];
    let mut open = vec![];
    for round in 0..rounds {
        let k = if round < 4 { &sensors[0] } else { &sensors[round - 3] };
        let mut c =
            SensorClient::connect_topic_mode(&addr, k, TIMEOUT).unwrap_or_else(|e| panic!("round {round}: {e}"));
        c.send_on("t", format!("reading {round}").as_bytes()).unwrap();
        received.push(app.recv().unwrap());
        let command = format!("on {round}");
        app.publish(&format!("cmd/{}/led", k.client_id), command.as_bytes())
            .unwrap();
        assert_eq!(
            c.recv_command().unwrap_or_else(|e| panic!("round {round}: {e}")),
            ("led".to_string(), command.into_bytes())
        );
        c.set_timeout(Duration::from_millis(300)).unwrap();
        assert!(
            matches!(c.recv_command(), Err(HostError::Timeout)),
            "round {round}: a second command"
        );
        assert_eq!(c.dropped(), 0, "round {round}: a command sealed under a stale session");
        // Not disconnected: rumqttd 0.20 reuses a closed connection's slot
        // for the next client, and the late second half of the closed one's
        // clean-up then drops the new one ("no-connection id N is already
        // gone", seen here: 3 runs in 12 failed). A sensor's next
        // connection takes its client id over instead.
        open.push(c);
        noise.publish("kem-mqtt/hs/nobody/c2b", &[1, 0xEE]).unwrap();
    }
    let expected: Vec<(String, Vec<u8>)> = (0..rounds)
        .map(|round| {
            let k = if round < 4 { &sensors[0] } else { &sensors[round - 3] };
            (
                format!("plain/{}/t", k.client_id),
                format!("reading {round}").into_bytes(),
            )
        })
        .collect();
    assert_eq!(received, expected);
    app.set_timeout(Some(Duration::from_millis(300)));
    assert!(
        matches!(app.recv(), Err(HostError::Timeout)),
        "a reading delivered twice"
    );
    let [a, b] = instances.map(|g| g.stop().unwrap());
    assert_eq!(a.established + b.established, rounds as u64, "{a}\n{b}");
    assert!(
        a.hellos_answered > 0 && b.hellos_answered > 0,
        "one instance got every hello:\n{a}\n{b}"
    );
    assert!(
        a.superseded + b.superseded > 0,
        "sensor 0's session never moved:\n{a}\n{b}"
    );
    broker.stop();
}
