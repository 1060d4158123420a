//! The authenticated sensor id is the MQTT identity (issue #21), against
//! Debian's `/usr/sbin/mosquitto` running the shipped `mosquitto.conf` and
//! `kem-mqtt.acl` (only paths and port replaced), 127.0.0.1 only:
//!
//! - a sensor that proves its own key but CONNECTs as another client id is
//!   refused (0x87) and the other sensor keeps its connection;
//! - the username a CONNECT carries is replaced by the authenticated id, so
//!   `%u` ACL rules cannot be claimed;
//! - the ACL confines each sensor to its own topics;
//! - a re-authentication (AUTH 0x19) cannot change the identity;
//! - a CONNECT without KEM-MQTT/1 is refused, whatever it carries;
//! - docs/broker.md shows the shipped files as they are.

mod common;
use common::*;

use std::time::Duration;

use kem_mqtt::{SensorHandshake, AUTH_METHOD, MAX_CLIENT_HELLO_LEN};
use kem_mqtt_host::keys::SensorKeys;
use kem_mqtt_host::mqtt::{self, Connection, Packet};
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::OsRng;

const TIMEOUT: Duration = Duration::from_secs(10);
/// How long a PUBLISH the ACL lets through may take to arrive on loopback.
const DELIVERY: Duration = Duration::from_secs(2);

/// bob (the victim), mallory (a registered sensor with its own key, the
/// attacker), eve (a second identity mallory also holds), dashboard (the
/// consumer the shipped ACL lets read every sensor).
fn site(name: &str) -> (Broker, Vec<SensorKeys>) {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("bob", s), ("mallory", s), ("eve", s), ("dashboard", s)]);
    let broker = Broker::start(name, &secrets, &registry, Conf::Documented, &plugin_path());
    (broker, keys)
}

/// The consumer, subscribed to every sensor's topics.
///
/// It also claims its username in the CONNECT: the plugin sets the same one,
/// and a plugin that kept the claimed username (the defect these tests
/// catch) still gives the dashboard its read access, so each test fails for
/// its own reason there.
fn dashboard(addr: &str, keys: &SensorKeys) -> Connection {
    let (mut d, outcome) = auth_attempt(addr, keys, "dashboard", Some(("dashboard", b"")));
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    d.subscribe(1, &["sensors/#"]).unwrap();
    d
}

/// The next message the dashboard gets: topic and payload length.
fn delivered(dash: &mut Connection) -> Option<(String, usize)> {
    next_publish(dash, DELIVERY).map(|(t, p)| (t, p.len()))
}

/// AUTH reason code: re-authenticate.
const REAUTHENTICATE: u8 = 0x19;

#[test]
fn misbinding_is_refused_and_the_honest_sensor_keeps_its_connection() {
    let (mut broker, keys) = site("misbinding");
    let addr = broker.addr();
    let (bob, mallory) = (&keys[0], &keys[1]);
    let mut dash = dashboard(&addr, &keys[3]);
    let mut honest = SensorClient::connect_auth_mode(&addr, bob, TIMEOUT).unwrap();

    // mallory completes the handshake with its own key, CONNECT client id "bob".
    let (mut conn, outcome) = auth_attempt(&addr, mallory, "bob", None);
    // bob was not thrown off (mosquitto's take-over of a client id): it
    // still publishes, and the dashboard gets it.
    let n = honest.publish_record("sensors/bob/t", b"21.5").unwrap();
    assert_eq!(
        delivered(&mut dash),
        Some(("sensors/bob/t".to_string(), n)),
        "the honest bob lost its connection"
    );
    assert_eq!(outcome, Attempt::ConnAck(mqtt::NOT_AUTHORIZED), "misbinding accepted");
    assert!(closed_by_peer(&mut conn, TIMEOUT), "refused connection left open");
    // The same with bob's id as username too.
    let (_, outcome) = auth_attempt(&addr, mallory, "bob", Some(("bob", b"x")));
    assert_eq!(outcome, Attempt::ConnAck(mqtt::NOT_AUTHORIZED));
    let n = honest.publish_record("sensors/bob/t", b"22.0").unwrap();
    assert_eq!(
        delivered(&mut dash),
        Some(("sensors/bob/t".to_string(), n)),
        "the honest bob lost its connection"
    );
    assert!(!broker.log().contains("already connected"), "{}", broker.log());
    assert!(
        broker.log().contains("on a connection whose client id is \"bob\""),
        "the refusal is logged with its reason:\n{}",
        broker.log()
    );
    broker.assert_alive();
}

#[test]
fn the_username_of_the_connect_is_replaced_by_the_authenticated_id() {
    let (mut broker, keys) = site("username");
    let addr = broker.addr();
    let mallory = &keys[1];
    let mut dash = dashboard(&addr, &keys[3]);
    // Binding respected (client id mallory), but the CONNECT claims username "bob".
    let (mut conn, outcome) = auth_attempt(&addr, mallory, "mallory", Some(("bob", b"anything")));
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    // With %u = "bob", `pattern readwrite sensors/%u/#` would let this through.
    conn.publish("sensors/bob/t", b"forged").unwrap();
    conn.publish("sensors/mallory/t", b"own").unwrap();
    assert_eq!(
        next_publish(&mut dash, DELIVERY),
        Some(("sensors/mallory/t".to_string(), b"own".to_vec())),
        "mallory wrote to bob's topic with a claimed username"
    );
    // Nor does it read bob's topics (mosquitto 2.0 may grant the
    // subscription; the ACL is checked on every message it would deliver).
    assert_reads_nothing_of_bob(&addr, &keys[0], &mut conn, &mut dash);
    broker.assert_alive();
}

#[test]
fn the_acl_confines_each_sensor_to_its_own_topics() {
    let (mut broker, keys) = site("acl");
    let addr = broker.addr();
    let mut dash = dashboard(&addr, &keys[3]);
    let mut mallory = SensorClient::connect_auth_mode(&addr, &keys[1], TIMEOUT).unwrap();
    // Another sensor's topic: dropped by the broker.
    mallory.publish_record("sensors/bob/t", b"forged").unwrap();
    let n = mallory.publish_record("sensors/mallory/t", b"own").unwrap();
    assert_eq!(
        delivered(&mut dash),
        Some(("sensors/mallory/t".to_string(), n)),
        "only the sensor's own topic gets through, first"
    );
    // The dashboard reads, but writes nowhere outside its own subtree.
    dash.publish("sensors/bob/t", b"forged").unwrap();
    assert_eq!(next_publish(&mut dash, DELIVERY), None);
    // mallory reads nothing of bob's (a second connection with its id
    // takes its session over: same identity, allowed).
    let (mut raw, outcome) = auth_attempt(&addr, &keys[1], "mallory", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    assert_reads_nothing_of_bob(&addr, &keys[0], &mut raw, &mut dash);
    // Its own subtree it reads.
    raw.subscribe(2, &["sensors/mallory/#"]).unwrap();
    raw.publish("sensors/mallory/t", b"own").unwrap();
    assert_eq!(
        next_publish(&mut raw, DELIVERY).map(|(t, _)| t),
        Some("sensors/mallory/t".to_string())
    );
    broker.assert_alive();
}

/// `reader` subscribes to bob's topics and to everything; bob publishes (the
/// dashboard sees it); `reader` receives nothing.
fn assert_reads_nothing_of_bob(addr: &str, bob: &SensorKeys, reader: &mut Connection, dash: &mut Connection) {
    // mosquitto 2.0 grants the subscriptions and checks read access on
    // every message it would deliver; a refusal (0x87) would do as well.
    for (id, filter) in [(11, "sensors/bob/#"), (12, "#")] {
        let _ = reader.subscribe(id, &[filter]);
    }
    let mut b = SensorClient::connect_auth_mode(addr, bob, TIMEOUT).unwrap();
    let n = b.publish_record("sensors/bob/t", b"21.5").unwrap();
    assert_eq!(delivered(dash), Some(("sensors/bob/t".to_string(), n)));
    assert_eq!(next_publish(reader, DELIVERY), None, "read another sensor's topic");
    b.disconnect().unwrap();
}

/// After CONNACK the plugin is out of the data path: a record the sensor
/// seals reaches subscribers as ciphertext (sequence number in clear,
/// length = plaintext + 24), and an unsealed PUBLISH is forwarded as it is
/// — the broker neither opens records nor requires them.
#[test]
fn the_broker_neither_opens_nor_requires_records() {
    let (mut broker, keys) = site("records");
    let addr = broker.addr();
    let mut dash = dashboard(&addr, &keys[3]);
    let mut bob = SensorClient::connect_auth_mode(&addr, &keys[0], TIMEOUT).unwrap();
    let secret = b"reading 21.5 C";
    for seq in 0..2u64 {
        let n = bob.publish_record("sensors/bob/t", secret).unwrap();
        assert_eq!(n, secret.len() + kem_mqtt::RECORD_OVERHEAD);
        let (topic, payload) = next_publish(&mut dash, DELIVERY).expect("record delivered");
        assert_eq!((topic.as_str(), payload.len()), ("sensors/bob/t", n));
        assert_eq!(payload[..8], seq.to_be_bytes(), "the sequence number travels in clear");
        assert!(
            !payload.windows(secret.len()).any(|w| w == secret),
            "plaintext on the wire"
        );
    }
    let (mut raw, outcome) = auth_attempt(&addr, &keys[0], "bob", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    raw.publish("sensors/bob/t", secret).unwrap();
    assert_eq!(
        next_publish(&mut dash, DELIVERY),
        Some(("sensors/bob/t".to_string(), secret.to_vec())),
        "an unsealed payload from an authenticated sensor"
    );
    broker.assert_alive();
}

/// AUTH 0x19 with `keys`' ClientHello on an established connection; the
/// answer to the ClientFinished (or to the hello, if it is refused).
fn reauthenticate(conn: &mut Connection, keys: &SensorKeys) -> Option<Packet> {
    let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
    let (state, n) = SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf).unwrap();
    conn.send(&Packet::Auth {
        reason: REAUTHENTICATE,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(buf[..n].to_vec()),
    })
    .ok()?;
    conn.set_timeout(Some(TIMEOUT)).unwrap();
    let bh = match conn.recv().ok()? {
        Packet::Auth {
            reason: mqtt::CONTINUE_AUTHENTICATION,
            auth_data: Some(d),
            ..
        } => d,
        other => return Some(other),
    };
    let (_, n3) = state.receive_broker_hello(&bh, &mut buf).unwrap();
    conn.send(&Packet::Auth {
        reason: mqtt::CONTINUE_AUTHENTICATION,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(buf[..n3].to_vec()),
    })
    .ok()?;
    conn.recv().ok()
}

#[test]
fn reauthentication_cannot_change_the_identity() {
    let (mut broker, keys) = site("reauth");
    let addr = broker.addr();
    let (mallory, eve) = (&keys[1], &keys[2]);
    let mut dash = dashboard(&addr, &keys[3]);

    // mallory holds eve's key too: re-authenticating as eve is refused
    // (mosquitto 2.0 answers a failed re-authentication with CONNACK 0x87)
    // and the connection is closed; it never writes as eve.
    let (mut conn, outcome) = auth_attempt(&addr, mallory, "mallory", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    let answer = reauthenticate(&mut conn, eve);
    assert!(
        matches!(
            answer,
            None | Some(Packet::ConnAck {
                reason: mqtt::NOT_AUTHORIZED,
                ..
            })
        ),
        "re-authentication as another sensor: {answer:?}"
    );
    assert!(
        closed_by_peer(&mut conn, TIMEOUT),
        "connection kept after a refused re-authentication"
    );
    let _ = conn.publish("sensors/eve/t", b"as eve");
    assert_eq!(next_publish(&mut dash, DELIVERY), None);

    // Control: re-authenticating as itself succeeds and the connection goes on.
    let (mut conn, outcome) = auth_attempt(&addr, mallory, "mallory", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    match reauthenticate(&mut conn, mallory) {
        Some(Packet::Auth {
            reason: mqtt::SUCCESS, ..
        }) => {}
        other => panic!("re-authentication as the same sensor: {other:?}"),
    }
    conn.publish("sensors/mallory/t", b"still me").unwrap();
    assert_eq!(
        next_publish(&mut dash, DELIVERY).map(|(t, _)| t),
        Some("sensors/mallory/t".to_string())
    );
    broker.assert_alive();
}

#[test]
fn a_connect_without_kem_mqtt_is_refused_under_the_documented_configuration() {
    let (mut broker, _keys) = site("plain");
    let addr = broker.addr();
    let cases: [(&str, Vec<u8>, u8); 6] = [
        ("v5", raw_connect(5, "bob", None, None), mqtt::NOT_AUTHORIZED),
        (
            "v5 + login",
            raw_connect(5, "bob", Some(("bob", b"pw")), None),
            mqtt::NOT_AUTHORIZED,
        ),
        ("v3.1.1", raw_connect(4, "bob", None, None), 5),
        ("v3.1.1 + login", raw_connect(4, "bob", Some(("bob", b"pw")), None), 5),
        // Our method without a ClientHello, and someone else's method.
        (
            "v5 KEM-MQTT/1, no data",
            raw_connect(5, "bob", None, Some((AUTH_METHOD, b""))),
            mqtt::NOT_AUTHORIZED,
        ),
        (
            "v5 SCRAM",
            raw_connect(5, "bob", None, Some(("SCRAM-SHA-1", b"x"))),
            mqtt::BAD_AUTHENTICATION_METHOD,
        ),
    ];
    for (what, connect, expected) in cases {
        let (mut conn, answer) = send_raw(&addr, &connect);
        match answer.unwrap_or_else(|e| panic!("{what}: {e}")) {
            Packet::ConnAck { reason, .. } => assert_eq!(reason, expected, "{what}"),
            p => panic!("{what}: {p:?}"),
        }
        assert!(closed_by_peer(&mut conn, TIMEOUT), "{what}: connection left open");
    }
    broker.assert_alive();
}

/// The tests run `mosquitto.conf` and `kem-mqtt.acl` as shipped; the guide
/// must show those same files, not a copy that drifts.
#[test]
fn the_broker_guide_shows_the_shipped_files() {
    let guide = include_str!("../../../docs/broker.md");
    for (name, text) in [("mosquitto.conf", SHIPPED_CONF), ("kem-mqtt.acl", SHIPPED_ACL)] {
        assert!(
            guide.contains(text),
            "docs/broker.md does not contain {name} as shipped"
        );
    }
    assert!(SHIPPED_CONF.contains("\nallow_anonymous false\n"));
}
