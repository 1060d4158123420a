//! Fault tests against Debian's `/usr/sbin/mosquitto` with this plugin
//! (127.0.0.1 only, every loop bounded in count and time):
//!
//! - the broker is killed (SIGKILL) and restarted mid-handshake and
//!   mid-session: the sensor needs a fresh handshake, a half-done handshake
//!   cannot be completed or replayed, no record is accepted twice and nothing
//!   is published in plaintext;
//! - malformed, truncated, oversized and aborted authentications never
//!   crash the broker;
//! - 120 clients handshake at once and all succeed or fail cleanly.

mod common;
use common::{plugin_path, Broker, Conf, NO_RATE_LIMITS};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use kem_mqtt::{AwaitBrokerHello, SensorHandshake, Suite, AUTH_METHOD, MAX_CLIENT_HELLO_LEN};
use kem_mqtt_host::gateway::{Gateway, GatewayEvent};
use kem_mqtt_host::keys::{BrokerSecrets, BrokerState, Registry, SensorKeys};
use kem_mqtt_host::mqtt::{self, Connection, Packet};
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::OsRng;
use kem_mqtt_host::{data_c2b, HostError};
use rand_core::Rng as _;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The shipped configuration without rate limits: these tests send many
/// hellos for one id on purpose (their subject is the plugin's robustness,
/// `tests/flood.rs` tests the limits).
fn start_site(name: &str, secrets: &BrokerSecrets, registry: &Registry) -> Broker {
    Broker::start(
        &format!("faults-{name}"),
        secrets,
        registry,
        Conf::DocumentedWith(NO_RATE_LIMITS),
        &plugin_path(),
    )
}

/// Sensors `f0`, `f1`, … of these suites.
fn enrol(suites: &[Suite]) -> (BrokerSecrets, Registry, Vec<SensorKeys>) {
    let ids: Vec<String> = (0..suites.len()).map(|i| format!("f{i}")).collect();
    let pairs: Vec<(&str, Suite)> = ids.iter().map(String::as_str).zip(suites.iter().copied()).collect();
    common::enrol(&pairs)
}

fn suite(name: &str) -> Suite {
    common::suite(name)
}

/// Flight 1 in CONNECT; returns the connection, ClientHello, BrokerHello and the sensor state.
fn start_auth<'a>(
    addr: &str,
    keys: &'a SensorKeys,
    ch_buf: &mut [u8],
) -> (Connection, Vec<u8>, Vec<u8>, AwaitBrokerHello<'a>) {
    let mut conn = Connection::connect(addr).unwrap();
    conn.set_timeout(Some(TIMEOUT)).unwrap();
    let (state, n) = SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, ch_buf).unwrap();
    let ch = ch_buf[..n].to_vec();
    conn.send(&Packet::Connect {
        client_id: keys.client_id.clone(),
        keep_alive: 60,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(ch.clone()),
    })
    .unwrap();
    let bh = match conn.recv().unwrap() {
        Packet::Auth {
            reason: mqtt::CONTINUE_AUTHENTICATION,
            auth_data: Some(d),
            ..
        } => d,
        p => panic!("expected AUTH, got {p:?}"),
    };
    (conn, ch, bh, state)
}

/// Sends flight 1 and flight 3 as given (no computation) and returns the CONNACK reason or error.
fn replay_auth(addr: &str, client_id: &str, ch: &[u8], cf: &[u8]) -> Result<u8, std::io::Error> {
    let mut conn = Connection::connect(addr)?;
    conn.set_timeout(Some(TIMEOUT))?;
    conn.send(&Packet::Connect {
        client_id: client_id.into(),
        keep_alive: 60,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(ch.to_vec()),
    })?;
    match conn.recv()? {
        Packet::Auth { .. } => {}
        Packet::ConnAck { reason, .. } => return Ok(reason),
        p => panic!("{p:?}"),
    }
    conn.send(&Packet::Auth {
        reason: mqtt::CONTINUE_AUTHENTICATION,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(cf.to_vec()),
    })?;
    match conn.recv()? {
        Packet::ConnAck { reason, .. } => Ok(reason),
        p => panic!("{p:?}"),
    }
}

#[test]
fn broker_killed_mid_handshake_then_fresh_handshake_and_no_replay() {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, sensors) = enrol(&[s, suite("ml-kem-512+x25519")]);
    let mut site = start_site("hs", &secrets, &registry);
    let addr = site.addr();
    let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];

    for keys in &sensors {
        // (a) Killed between flight 1 and flight 2: the sensor sees an error, not a hang.
        let mut conn = Connection::connect(&addr).unwrap();
        conn.set_timeout(Some(TIMEOUT)).unwrap();
        let (_, n) = SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf).unwrap();
        site.kill();
        let sent = conn.send(&Packet::Connect {
            client_id: keys.client_id.clone(),
            keep_alive: 60,
            auth_method: Some(AUTH_METHOD.into()),
            auth_data: Some(buf[..n].to_vec()),
        });
        assert!(sent.is_err() || conn.recv().is_err(), "a dead broker answered");
        site.restart();

        // (b) Killed between flight 2 and flight 3: the sensor's ClientFinished goes nowhere.
        let mut ch_buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
        let (mut conn, ch, bh, state) = start_auth(&addr, keys, &mut ch_buf);
        assert_eq!(bh.len(), keys.suite.broker_hello_len());
        let (_session, n3) = state.receive_broker_hello(&bh, &mut buf).unwrap();
        let cf = buf[..n3].to_vec();
        site.kill();
        let sent = conn.send(&Packet::Auth {
            reason: mqtt::CONTINUE_AUTHENTICATION,
            auth_method: Some(AUTH_METHOD.into()),
            auth_data: Some(cf.clone()),
        });
        assert!(sent.is_err() || conn.recv().is_err(), "a dead broker answered");
        site.restart();

        // (c) The half-done handshake cannot be completed after the restart:
        // replaying flight 1 gets a fresh BrokerHello, so the old flight 3 is refused.
        let mut ch_buf2 = vec![0u8; MAX_CLIENT_HELLO_LEN];
        let (mut c2, _, bh2, _) = start_auth(&addr, keys, &mut ch_buf2);
        assert_ne!(bh, bh2, "two handshakes got the same BrokerHello");
        drop(c2.send(&Packet::Disconnect { reason: 0 }));
        assert_eq!(
            replay_auth(&addr, &keys.client_id, &ch, &cf).unwrap(),
            mqtt::NOT_AUTHORIZED
        );

        // (d) A fresh handshake succeeds.
        let mut c = SensorClient::connect_auth_mode(&addr, keys, TIMEOUT).unwrap();
        c.send_on("t", b"after restart").unwrap();
        c.disconnect().unwrap();
    }
    site.assert_alive();
}

#[test]
fn auth_mode_completed_handshake_cannot_be_replayed_after_restart() {
    let s = suite("lightsaber+x25519");
    let (secrets, registry, sensors) = enrol(&[s]);
    let mut site = start_site("replay", &secrets, &registry);
    let addr = site.addr();
    let keys = &sensors[0];
    // Record flights 1 and 3 of an honest, completed handshake.
    let flights = std::sync::Mutex::new((vec![], vec![]));
    let c = SensorClient::connect_auth_mode_with(&addr, keys, TIMEOUT, |f, m| {
        let mut fl = flights.lock().unwrap();
        if f == 1 {
            fl.0 = m.clone();
        } else {
            fl.1 = m.clone();
        }
    })
    .unwrap();
    drop(c);
    let (ch, cf) = flights.into_inner().unwrap();
    // Replayed to the same broker and to a restarted one: refused both times.
    assert_eq!(
        replay_auth(&addr, &keys.client_id, &ch, &cf).unwrap(),
        mqtt::NOT_AUTHORIZED
    );
    site.kill();
    site.restart();
    assert_eq!(
        replay_auth(&addr, &keys.client_id, &ch, &cf).unwrap(),
        mqtt::NOT_AUTHORIZED
    );
    site.assert_alive();
}

/// Runs a topic-mode gateway in a thread until its connection dies or `stop` is set.
fn spawn_gateway(
    addr: &str,
    state: Arc<BrokerState>,
    stop: Arc<AtomicBool>,
) -> (mpsc::Receiver<GatewayEvent>, std::thread::JoinHandle<()>) {
    let mut gw = Gateway::connect(addr, state).unwrap();
    gw.set_timeout(Some(Duration::from_millis(200)));
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            match gw.poll() {
                Ok(GatewayEvent::Other) => {}
                Ok(e) => {
                    if tx.send(e).is_err() {
                        return;
                    }
                }
                Err(HostError::Timeout) => {}
                Err(_) => return, // the broker went away
            }
        }
    });
    (rx, t)
}

fn spy(addr: &str) -> Connection {
    let mut spy = Connection::connect(addr).unwrap();
    spy.set_timeout(Some(Duration::from_millis(300))).unwrap();
    spy.mqtt_connect("spy").unwrap();
    spy.subscribe(1, &["#"]).unwrap();
    spy
}

/// Everything the spy has received so far: (topic, payload).
fn drain(spy: &mut Connection, into: &mut Vec<(String, Vec<u8>)>) {
    while let Ok(p) = spy.recv() {
        if let Packet::Publish { topic, payload } = p {
            into.push((topic, payload));
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn broker_killed_mid_session_records_never_accepted_twice_nor_in_plaintext() {
    let s = suite("ctru-light-sha3+x25519");
    let (secrets, registry, sensors) = enrol(&[s]);
    // Topic mode: the gateway, the spies and the sensor CONNECT without
    // enhanced authentication, which the documented configuration refuses.
    let mut site = Broker::start(
        "faults-session",
        &secrets,
        &registry,
        Conf::TopicModeAnonymous,
        &plugin_path(),
    );
    let addr = site.addr();
    let keys = &sensors[0];
    let state = Arc::new(BrokerState { secrets, registry });
    let mut wire = vec![];
    let mut accepted: Vec<Vec<u8>> = vec![];
    let mut rejected = vec![];
    let collect =
        |rx: &mpsc::Receiver<GatewayEvent>, accepted: &mut Vec<Vec<u8>>, rejected: &mut Vec<kem_mqtt::Error>| {
            while let Ok(e) = rx.recv_timeout(Duration::from_millis(500)) {
                match e {
                    GatewayEvent::Message { payload, .. } => accepted.push(payload),
                    GatewayEvent::Rejected { error, .. } => rejected.push(error),
                    _ => {}
                }
            }
        };

    // Session 1.
    let stop = Arc::new(AtomicBool::new(false));
    let mut spy1 = spy(&addr);
    let (rx, gw) = spawn_gateway(&addr, state.clone(), stop.clone());
    let mut c = SensorClient::connect_topic_mode(&addr, keys, TIMEOUT).unwrap();
    for i in 0..5 {
        c.send(format!("secret-reading-{i}").as_bytes()).unwrap();
    }
    collect(&rx, &mut accepted, &mut rejected);
    drain(&mut spy1, &mut wire);
    let old_records: Vec<Vec<u8>> = wire
        .iter()
        .filter(|(t, _)| *t == data_c2b(&keys.client_id))
        .map(|(_, p)| p.clone())
        .collect();
    assert_eq!(old_records.len(), 5);

    // Crash mid-session: the old connection is dead for sending (within a few writes).
    site.kill();
    gw.join().unwrap();
    let dead = (0..20).any(|i| {
        std::thread::sleep(Duration::from_millis(10));
        c.send(format!("lost-{i}").as_bytes()).is_err()
    });
    assert!(dead, "the sensor kept sending into a killed broker");
    site.restart();

    // Session 2: a fresh handshake with a new gateway process state.
    let mut spy2 = spy(&addr);
    let (rx, gw) = spawn_gateway(&addr, state.clone(), stop.clone());
    let mut c = SensorClient::connect_topic_mode(&addr, keys, TIMEOUT).unwrap();
    c.send(b"secret-reading-5").unwrap();
    // Replays of session-1 records into session 2, twice each.
    for r in old_records.iter().chain(old_records.iter()) {
        spy2.publish(&data_c2b(&keys.client_id), r).unwrap();
    }
    collect(&rx, &mut accepted, &mut rejected);
    let mut wire2 = vec![];
    drain(&mut spy2, &mut wire2);
    // Replays of the session-2 record.
    let new_record = wire2
        .iter()
        .find(|(t, _)| *t == data_c2b(&keys.client_id))
        .map(|(_, p)| p.clone())
        .expect("session-2 record on the wire");
    for _ in 0..3 {
        spy2.publish(&data_c2b(&keys.client_id), &new_record).unwrap();
    }
    collect(&rx, &mut accepted, &mut rejected);
    drain(&mut spy2, &mut wire2);
    wire.extend(wire2);
    stop.store(true, Ordering::SeqCst);
    gw.join().unwrap();

    let expected: Vec<Vec<u8>> = (0..6).map(|i| format!("secret-reading-{i}").into_bytes()).collect();
    assert_eq!(accepted, expected, "each record accepted exactly once, in order");
    let unique: HashSet<_> = accepted.iter().collect();
    assert_eq!(unique.len(), accepted.len());
    assert_eq!(rejected.len(), 2 * 5 + 3, "{rejected:?}");
    // Old-session records fail authentication under the new keys (or, for a
    // sequence number the new window already holds, the replay check first).
    use kem_mqtt::Error::{RecordAuthFailed, RecordReplayed};
    assert!(
        rejected[..10]
            .iter()
            .all(|e| matches!(e, RecordAuthFailed | RecordReplayed)),
        "{rejected:?}"
    );
    assert!(rejected[10..].iter().all(|e| *e == RecordReplayed), "{rejected:?}");
    // Plaintext only where the gateway delivers it to applications, each
    // accepted reading once; nothing on any other topic.
    assert!(!wire.is_empty());
    let delivered: Vec<&Vec<u8>> = wire
        .iter()
        .filter(|(t, _)| t.starts_with("plain/"))
        .map(|(_, p)| p)
        .collect();
    assert_eq!(delivered, expected.iter().collect::<Vec<_>>());
    for (topic, payload) in wire.iter().filter(|(t, _)| !t.starts_with("plain/")) {
        assert!(!contains(payload, b"secret-reading"), "plaintext on {topic}");
        assert!(!contains(payload, b"lost-"), "plaintext on {topic}");
    }
    site.assert_alive();
}

#[test]
fn plugin_survives_malformed_truncated_oversized_and_aborted_auth() {
    let s = suite("kyber512-r3+x25519");
    let (secrets, registry, sensors) = enrol(&[s]);
    let mut site = start_site("garbage", &secrets, &registry);
    let addr = site.addr();
    let keys = &sensors[0];
    let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
    let (_, n) = SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf).unwrap();
    let honest_ch = buf[..n].to_vec();
    let mut payloads: Vec<Vec<u8>> = vec![vec![], vec![1], vec![1, 1], vec![0xFF; 65535], vec![0; 4000]];
    for cut in [3, 4, 36, n / 2, n - 1] {
        payloads.push(honest_ch[..cut].to_vec());
    }
    let mut longer = honest_ch.clone();
    longer.push(0);
    payloads.push(longer);
    for _ in 0..40 {
        let mut m = honest_ch.clone();
        let i = OsRng.next_u32() as usize % m.len();
        m[i] ^= 1 << (OsRng.next_u32() % 8);
        payloads.push(m);
        let mut r = vec![0u8; OsRng.next_u32() as usize % 2000];
        OsRng.fill_bytes(&mut r);
        payloads.push(r);
    }
    let t = Instant::now();
    let mut refused = 0;
    for p in &payloads {
        match replay_auth(&addr, &keys.client_id, p, &[1, 3]) {
            Ok(reason) => {
                assert_ne!(reason, mqtt::SUCCESS, "garbage authenticated");
                refused += 1;
            }
            Err(_) => refused += 1, // the broker closed the connection: also a clean failure
        }
    }
    assert_eq!(refused, payloads.len());
    // Aborted handshakes: flight 1 then hang up, 50 times (pending state must be dropped).
    for _ in 0..50 {
        let (conn, _, _, _) = start_auth(&addr, keys, &mut buf);
        drop(conn);
    }
    // AUTH CONTINUE without a START, and a second CONNECT on the same connection.
    let mut conn = Connection::connect(&addr).unwrap();
    conn.set_timeout(Some(TIMEOUT)).unwrap();
    let _ = conn.send(&Packet::Auth {
        reason: mqtt::CONTINUE_AUTHENTICATION,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(vec![1, 3, 9, 9]),
    });
    let _ = conn.recv();
    let (mut conn, ch, _, _) = start_auth(&addr, keys, &mut buf);
    let _ = conn.send(&Packet::Connect {
        client_id: keys.client_id.clone(),
        keep_alive: 60,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(ch),
    });
    let _ = conn.recv();
    assert!(t.elapsed() < Duration::from_secs(30));
    site.assert_alive();
    // And the broker still serves an honest sensor.
    SensorClient::connect_auth_mode(&addr, keys, TIMEOUT)
        .unwrap()
        .disconnect()
        .unwrap();
    site.assert_alive();
}

#[test]
fn hundred_and_twenty_concurrent_handshakes() {
    const CLIENTS: usize = 120;
    let suites: Vec<Suite> = (0..CLIENTS).map(|i| Suite::ALL[i % Suite::ALL.len()]).collect();
    let (secrets, registry, sensors) = enrol(&suites);
    let mut site = start_site("load", &secrets, &registry);
    let addr = site.addr();
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let t = Instant::now();
    let threads: Vec<_> = sensors
        .into_iter()
        .map(|keys| {
            let (addr, barrier) = (addr.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let r = SensorClient::connect_auth_mode(&addr, &keys, Duration::from_secs(20));
                r.map(|mut c| c.send_on("t", b"1").map(|_| ()).and_then(|_| c.disconnect()))
            })
        })
        .collect();
    let mut ok = 0;
    let mut failed = vec![];
    for th in threads {
        match th.join().expect("a client thread panicked") {
            Ok(Ok(())) => ok += 1,
            Ok(Err(e)) | Err(e) => failed.push(e.to_string()),
        }
    }
    let elapsed = t.elapsed();
    eprintln!("{ok}/{CLIENTS} concurrent handshakes in {elapsed:?}; failures: {failed:?}");
    // Every failure must be a clean one (an error value, checked above); on
    // loopback we expect none at all.
    assert_eq!(ok, CLIENTS, "failures: {failed:?}");
    assert!(elapsed < Duration::from_secs(40));
    site.assert_alive();
}
