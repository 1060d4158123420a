//! Issue #52: what an operator scrapes from the broker in AUTH mode
//! (`plugin_opt_metrics`), during a run: a refused CONNECT, a sensor's
//! handshake, a tampered record and a reading, a revocation, each in its family, and no client
//! id anywhere in the text.

mod common;
use common::*;

use std::time::{Duration, Instant};

use kem_mqtt::SuiteSet;
use kem_mqtt_host::keys::Registry;
use kem_mqtt_host::provision::provision_sensor;
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::OsRng;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The endpoint's text once `done` holds for it (or the last text, when
/// `TIMEOUT` passes first).
fn scrape_until(endpoint: &str, done: impl Fn(&str) -> bool) -> String {
    let t = Instant::now();
    loop {
        let (status, text) = scrape(endpoint);
        assert!(status.ends_with(" 200 OK"), "{status}");
        if done(&text) || t.elapsed() > TIMEOUT {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `GET /metrics`: the status line and the body.
fn scrape(endpoint: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(endpoint).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

fn assert_lines(text: &str, lines: &[&str]) {
    for line in lines {
        assert!(text.contains(line), "no {line:?} in\n{text}");
    }
}

#[test]
fn the_plugin_serves_its_metrics_during_a_run() {
    let s = suite("ml-kem-512+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s), ("bob", s)]);
    // mallory has keys from this broker, but no entry in its registry.
    let mallory = provision_sensor(
        &secrets,
        &mut Registry::default(),
        "mallory",
        s,
        SuiteSet::EMPTY.with(s),
        &mut OsRng,
    )
    .unwrap();
    let port = free_port();
    let endpoint = format!("127.0.0.1:{port}");
    let conf = format!("plugin_opt_metrics {endpoint}\n");
    let mut broker = Broker::start(
        "metrics",
        &secrets,
        &registry,
        Conf::DocumentedWith(&conf),
        &plugin_path(),
    );
    let addr = broker.addr();
    let text = scrape(&endpoint).1;
    assert_lines(
        &text,
        &["kem_mqtt_registry_sensors 2\n", "kem_mqtt_registry_loads_total 1\n"],
    );

    assert!(SensorClient::connect_auth_mode(&addr, &mallory, TIMEOUT).is_err());
    let app = subscriber(&broker, "plain/#", 1, 30);
    let mut alice = SensorClient::connect_auth_mode(&addr, &keys[0], TIMEOUT).unwrap();
    let _bob = SensorClient::connect_auth_mode(&addr, &keys[1], TIMEOUT).unwrap();
    // A tampered record first: refused by its reason, never delivered.
    let topic = "kem-mqtt/data/c2b/alice/t";
    let mut rec = vec![0u8; 64];
    let n = alice
        .session()
        .seal(topic.as_bytes(), b"99.9 C forged", &mut rec)
        .unwrap();
    rec[n - 1] ^= 0x80;
    alice.publish_raw(topic, &rec[..n]).unwrap();
    alice.send_on("t", b"21.5 C").unwrap();
    assert_eq!(app.lines().unwrap(), ["plain/alice/t 21.5 C"]);
    let text = scrape_until(&endpoint, |t| {
        t.contains("kem_mqtt_records_total{direction=\"in\"} 1\n")
    });
    assert_lines(
        &text,
        &[
            "kem_mqtt_handshakes_total{suite=\"ml-kem-512+x25519\"} 2\n",
            "kem_mqtt_refusals_total{reason=\"UnknownClient\"} 1\n",
            "kem_mqtt_records_total{direction=\"in\"} 1\n",
            "kem_mqtt_records_total{direction=\"rejected\"} 1\n",
            "kem_mqtt_refusals_total{reason=\"RecordAuthFailed\"} 1\n",
            "kem_mqtt_sessions 2\n",
            "kem_mqtt_pending_handshakes 0\n",
            "kem_mqtt_revocations_total 0\n",
            "# EOF\n",
        ],
    );

    // bob revoked in the registry file: the broker's next check (once a
    // second) ends his session and moves the registry's version.
    let path = broker.dir.join("registry.json");
    let mut r = Registry::load_or_empty(&path).unwrap();
    r.clients.remove("bob");
    r.save(&path).unwrap();
    let text = scrape_until(&endpoint, |t| t.contains("kem_mqtt_revocations_total 1\n"));
    assert_lines(
        &text,
        &[
            "kem_mqtt_revocations_total 1\n",
            "kem_mqtt_sessions 1\n",
            "kem_mqtt_registry_sensors 1\n",
            "kem_mqtt_registry_loads_total 2\n",
        ],
    );
    for id in ["alice", "bob", "mallory"] {
        assert!(!text.contains(id), "the endpoint names {id}:\n{text}");
    }
    broker.assert_alive();
}
