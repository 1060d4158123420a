//! The authenticated sensor id is the MQTT identity (issue #21), against
//! Debian's `/usr/sbin/mosquitto` running the shipped `mosquitto.conf` and
//! `kem-mqtt.acl` (only paths and port replaced), 127.0.0.1 only:
//!
//! - a sensor that proves its own key but CONNECTs as another client id is
//!   refused (0x87) and the other sensor keeps its connection;
//! - the username a CONNECT carries is replaced by the authenticated id, so
//!   `%u` ACL rules cannot be claimed;
//! - the ACL confines each sensor to its own topics;
//! - the plugin opens each sensor's records and delivers only the authentic
//!   ones, as plaintext on `plain/<id>/…` (issue #24);
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
/// consumer the shipped ACL lets read every sensor's readings; here
/// enrolled with a KEM-MQTT key, an application logs in with a password).
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
    // Readings, and every sealed topic it may not read (never delivered).
    d.subscribe(1, &["plain/#", "kem-mqtt/#"]).unwrap();
    d
}

/// The next message the dashboard gets: topic and payload as text.
fn delivered(dash: &mut Connection) -> Option<(String, String)> {
    next_publish(dash, DELIVERY).map(|(t, p)| (t, String::from_utf8_lossy(&p).into_owned()))
}

/// `(topic, text)` as [`delivered`] returns them.
fn reading(topic: &str, text: &str) -> Option<(String, String)> {
    Some((topic.to_string(), text.to_string()))
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
    honest.send_on("t", b"21.5").unwrap();
    assert_eq!(
        delivered(&mut dash),
        reading("plain/bob/t", "21.5"),
        "the honest bob lost its connection"
    );
    assert_eq!(outcome, Attempt::ConnAck(mqtt::NOT_AUTHORIZED), "misbinding accepted");
    assert!(closed_by_peer(&mut conn, TIMEOUT), "refused connection left open");
    // The same with bob's id as username too.
    let (_, outcome) = auth_attempt(&addr, mallory, "bob", Some(("bob", b"x")));
    assert_eq!(outcome, Attempt::ConnAck(mqtt::NOT_AUTHORIZED));
    honest.send_on("t", b"22.0").unwrap();
    assert_eq!(
        delivered(&mut dash),
        reading("plain/bob/t", "22.0"),
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
    let (mut conn, outcome, session) = auth_attempt_session(&addr, mallory, "mallory", Some(("bob", b"anything")));
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    let mut session = session.unwrap();
    // With %u = "bob", `pattern write kem-mqtt/data/c2b/%u/#` would let
    // this through (and the plugin, which checks the topic against the
    // authenticated id, would drop it).
    publish_sealed(&mut conn, &mut session, "kem-mqtt/data/c2b/bob/t", b"forged");
    publish_sealed(&mut conn, &mut session, "kem-mqtt/data/c2b/mallory/t", b"own");
    assert_eq!(
        delivered(&mut dash),
        reading("plain/mallory/t", "own"),
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
    mallory.publish_record("kem-mqtt/data/c2b/bob/t", b"forged").unwrap();
    mallory.send_on("t", b"own").unwrap();
    assert_eq!(
        delivered(&mut dash),
        reading("plain/mallory/t", "own"),
        "only the sensor's own topic gets through, first"
    );
    // Neither a sensor nor an application writes readings or sealed
    // commands: only the plugin does.
    mallory.publish_raw("plain/bob/t", b"forged").unwrap();
    dash.publish("plain/bob/t", b"forged").unwrap();
    dash.publish("kem-mqtt/data/b2c/bob/t", b"forged").unwrap();
    assert_eq!(next_publish(&mut dash, DELIVERY), None);
    // mallory reads nothing of bob's (a second connection with its id
    // takes its session over: same identity, allowed).
    let (mut raw, outcome, _session) = auth_attempt_session(&addr, &keys[1], "mallory", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    assert_reads_nothing_of_bob(&addr, &keys[0], &mut raw, &mut dash);
    // What is sealed for it, it reads.
    raw.subscribe(2, &["kem-mqtt/data/b2c/mallory/#"]).unwrap();
    dash.publish("cmd/mallory/led", b"on").unwrap();
    assert_eq!(
        next_publish(&mut raw, DELIVERY).map(|(t, p)| (t, p.len())),
        Some((
            "kem-mqtt/data/b2c/mallory/led".to_string(),
            2 + kem_mqtt::RECORD_OVERHEAD
        ))
    );
    broker.assert_alive();
}

/// `reader` subscribes to bob's topics and to everything; bob publishes (the
/// dashboard sees it); `reader` receives nothing.
fn assert_reads_nothing_of_bob(addr: &str, bob: &SensorKeys, reader: &mut Connection, dash: &mut Connection) {
    // mosquitto 2.0 grants the subscriptions and checks read access on
    // every message it would deliver; a refusal (0x87) would do as well.
    for (id, filter) in [(11, "kem-mqtt/data/bob/#"), (12, "plain/#"), (13, "#")] {
        let _ = reader.subscribe(id, &[filter]);
    }
    let mut b = SensorClient::connect_auth_mode(addr, bob, TIMEOUT).unwrap();
    b.send_on("t", b"21.5").unwrap();
    assert_eq!(delivered(dash), reading("plain/bob/t", "21.5"));
    // A command for bob: sealed to bob alone.
    dash.publish("cmd/bob/led", b"on").unwrap();
    assert_eq!(b.recv_command().unwrap(), ("led".to_string(), b"on".to_vec()));
    assert_eq!(next_publish(reader, DELIVERY), None, "read another sensor's topic");
    b.disconnect().unwrap();
}

/// Defence in depth: under an ACL that (wrongly) lets sensors write readings
/// and sealed commands, the plugin itself refuses a sensor's PUBLISH there,
/// and no application or sensor receives it.
#[test]
fn the_plugin_refuses_a_sensors_forgeries_even_under_a_permissive_acl() {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("mallory", s), ("dashboard", s)]);
    let acl = format!(
        "# Misconfigured on purpose:\npattern write plain/#\npattern write kem-mqtt/data/b2c/%u/#\n{}",
        shipped(Shipped::AuthAcl)
    );
    let mut broker = Broker::start(
        "permissive",
        &secrets,
        &registry,
        Conf::AclInstead(&acl),
        &plugin_path(),
    );
    let addr = broker.addr();
    let mut dash = dashboard(&addr, &keys[1]);
    let (mut forger, outcome) = auth_attempt(&addr, &keys[0], "mallory", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    forger.subscribe(2, &["kem-mqtt/data/b2c/mallory/#"]).unwrap();
    // mosquitto 2.0.11 drops what the plugin refuses ("Denied PUBLISH");
    // whether it closed the connection would not matter, delivering would.
    let _ = forger.publish("plain/mallory/t", b"forged reading");
    let _ = forger.publish("kem-mqtt/data/b2c/mallory/led", b"forged command");
    assert_eq!(
        next_publish(&mut dash, DELIVERY),
        None,
        "a forged reading reached the application"
    );
    assert_eq!(
        next_publish(&mut forger, DELIVERY),
        None,
        "a forged sealed command was routed"
    );
    let log = broker.log();
    assert!(
        log.contains("refused a PUBLISH on plain/mallory/t from \"mallory\"")
            && log.contains("refused a PUBLISH on kem-mqtt/data/b2c/mallory/led"),
        "{log}"
    );
    // The honest path still works.
    let mut c = SensorClient::connect_auth_mode(&addr, &keys[0], TIMEOUT).unwrap();
    c.send_on("t", b"21.5").unwrap();
    assert_eq!(delivered(&mut dash), reading("plain/mallory/t", "21.5"));
    broker.assert_alive();
}

/// Issue #32, defect 5: a Last Will enters the broker without a PUBLISH
/// (mosquitto publishes it when the connection dies), so the plugin's
/// guard on the topics only the broker side writes covers it too: under
/// the same permissive ACL, a sensor's Will on `plain/…` or on its sealed
/// broker → sensor topic is never published, retained or not.
#[test]
fn a_sensors_last_will_on_the_broker_side_topics_is_never_published() {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("mallory", s), ("dashboard", s)]);
    let acl = format!(
        "# Misconfigured on purpose:\npattern write plain/#\npattern write kem-mqtt/data/b2c/%u/#\n{}",
        shipped(Shipped::AuthAcl)
    );
    let mut broker = Broker::start("will", &secrets, &registry, Conf::AclInstead(&acl), &plugin_path());
    let addr = broker.addr();
    let mut dash = dashboard(&addr, &keys[1]);
    for topic in ["plain/mallory/t", "kem-mqtt/data/b2c/mallory/led"] {
        let will = (topic, b"forged by a will".as_slice(), true);
        let (conn, outcome, _) = auth_attempt_will(&addr, &keys[0], "mallory", None, Some(will));
        assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
        // An unclean end: no DISCONNECT, so mosquitto sends the will (if allowed).
        drop(conn);
        assert_eq!(
            next_publish(&mut dash, DELIVERY),
            None,
            "the will on {topic} was published"
        );
    }
    // Nor kept as a retained message for later subscribers.
    let mut late = dashboard(&addr, &keys[1]);
    assert_eq!(next_publish(&mut late, DELIVERY), None, "a will was retained on plain/");
    let (mut again, outcome) = auth_attempt(&addr, &keys[0], "mallory", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    again.subscribe(3, &["kem-mqtt/data/b2c/mallory/#"]).unwrap();
    assert_eq!(
        next_publish(&mut again, DELIVERY),
        None,
        "a will was retained on the sealed topic"
    );
    broker.assert_alive();
}

/// The plugin opens each record with the sensor's session and delivers
/// the plaintext on `plain/<id>/<sub>`; the sealed record itself reaches no
/// one the ACL does not let read it; a tampered, replayed or unsealed one is
/// never delivered.
#[test]
fn the_broker_opens_records_and_delivers_only_authentic_ones() {
    let (mut broker, keys) = site("records");
    let addr = broker.addr();
    let mut dash = dashboard(&addr, &keys[3]);
    let (mut conn, outcome, session) = auth_attempt_session(&addr, &keys[0], "bob", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    let mut session = session.unwrap();
    let topic = "kem-mqtt/data/c2b/bob/t";
    let secret = b"reading 21.5 C";
    let mut first = None;
    for _ in 0..2 {
        let rec = publish_sealed(&mut conn, &mut session, topic, secret);
        assert_eq!(delivered(&mut dash), reading("plain/bob/t", "reading 21.5 C"));
        first.get_or_insert(rec);
    }
    let first = first.unwrap();
    // Replayed, tampered (a ciphertext bit, the sequence number), unsealed,
    // moved to another subtopic: none is delivered.
    conn.publish(topic, &first).unwrap();
    let mut rec = vec![0u8; secret.len() + kem_mqtt::RECORD_OVERHEAD];
    let n = session.seal(topic.as_bytes(), secret, &mut rec).unwrap();
    let mut flipped = rec[..n].to_vec();
    flipped[9] ^= 1;
    conn.publish(topic, &flipped).unwrap();
    let mut reseq = rec[..n].to_vec();
    reseq[7] ^= 1;
    conn.publish(topic, &reseq).unwrap();
    conn.publish(topic, secret).unwrap();
    conn.publish("kem-mqtt/data/c2b/bob/other", &rec[..n]).unwrap();
    assert_eq!(next_publish(&mut dash, DELIVERY), None, "a bad record was delivered");
    // The untouched record still opens: the bad ones did not move the window.
    conn.publish(topic, &rec[..n]).unwrap();
    assert_eq!(delivered(&mut dash), reading("plain/bob/t", "reading 21.5 C"));
    broker.assert_alive();
}

/// AUTH 0x19 with `keys`' ClientHello on an established connection; the
/// answer to the ClientFinished (or to the hello, if it is refused), and the
/// sensor's new session.
fn reauthenticate(conn: &mut Connection, keys: &SensorKeys) -> (Option<Packet>, Option<kem_mqtt::Session>) {
    let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
    let (state, n) = SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf).unwrap();
    conn.send(&Packet::Auth {
        reason: REAUTHENTICATE,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(buf[..n].to_vec()),
    })
    .ok()
    .map_or((None, None), |()| {
        conn.set_timeout(Some(TIMEOUT)).unwrap();
        let bh = match conn.recv() {
            Ok(Packet::Auth {
                reason: mqtt::CONTINUE_AUTHENTICATION,
                auth_data: Some(d),
                ..
            }) => d,
            other => return (other.ok(), None),
        };
        let (session, n3) = state.receive_broker_hello(&bh, &mut buf).unwrap();
        let sent = conn.send(&Packet::Auth {
            reason: mqtt::CONTINUE_AUTHENTICATION,
            auth_method: Some(AUTH_METHOD.into()),
            auth_data: Some(buf[..n3].to_vec()),
        });
        (sent.and_then(|()| conn.recv()).ok(), Some(session))
    })
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
    let (answer, _) = reauthenticate(&mut conn, eve);
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
    let _ = conn.publish("kem-mqtt/data/c2b/eve/t", b"as eve");
    assert_eq!(next_publish(&mut dash, DELIVERY), None);

    // Control: re-authenticating as itself succeeds and the connection goes on.
    let (mut conn, outcome) = auth_attempt(&addr, mallory, "mallory", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));
    let mut session = match reauthenticate(&mut conn, mallory) {
        (
            Some(Packet::Auth {
                reason: mqtt::SUCCESS, ..
            }),
            Some(session),
        ) => session,
        (other, _) => panic!("re-authentication as the same sensor: {other:?}"),
    };
    // The plugin holds the new session: a record sealed under it opens.
    publish_sealed(&mut conn, &mut session, "kem-mqtt/data/c2b/mallory/t", b"still me");
    assert_eq!(delivered(&mut dash), reading("plain/mallory/t", "still me"));
    broker.assert_alive();
}

#[test]
fn a_connect_without_kem_mqtt_or_an_application_password_is_refused() {
    let (mut broker, _keys) = site("plain");
    let addr = broker.addr();
    let cases: [(&str, Vec<u8>, u8); 8] = [
        // The application's account in the password file gets in…
        (
            "v5 application login",
            raw_connect(5, "app", Some((APP_USER, APP_PASSWORD.as_bytes())), None),
            mqtt::SUCCESS,
        ),
        // …with its password only.
        (
            "v5 application, wrong password",
            raw_connect(5, "app", Some((APP_USER, b"guess")), None),
            mqtt::NOT_AUTHORIZED,
        ),
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
        if expected != mqtt::SUCCESS {
            assert!(closed_by_peer(&mut conn, TIMEOUT), "{what}: connection left open");
        }
    }
    broker.assert_alive();
}

/// The tests run `mosquitto.conf` and `kem-mqtt.acl` as shipped; the guide
/// must show those same files, not a copy that drifts.
#[test]
fn the_broker_guide_shows_the_shipped_files() {
    let guide = include_str!("../../../docs/broker.md");
    for (name, file) in [
        ("mosquitto.conf", Shipped::AuthConf),
        ("kem-mqtt.acl", Shipped::AuthAcl),
    ] {
        assert!(
            guide.contains(&shipped(file)),
            "docs/broker.md does not contain {name} as shipped"
        );
    }
    assert!(shipped(Shipped::AuthConf).contains("\nallow_anonymous false\n"));
}
