//! Shared by the integration tests: enrolment of test sensors, key files,
//! a metrics scrape.
#![allow(dead_code)] // each test file uses a part

use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::keys::{BrokerState, Registry, SensorKeys};
use kem_mqtt_host::provision::{generate_broker, provision_sensor};
use kem_mqtt_host::OsRng;

/// A broker with keys for the KEMs of `suites` and one sensor per suite,
/// `sensor-<i>`, with policy `allowed(suite)`.
pub fn enrol(suites: &[Suite], allowed: impl Fn(Suite) -> SuiteSet) -> (BrokerState, Vec<SensorKeys>) {
    let mut kems: Vec<_> = suites.iter().map(|s| s.kem()).collect();
    kems.sort();
    kems.dedup();
    let secrets = generate_broker(&kems, &mut OsRng);
    let mut registry = Registry::default();
    let sensors = suites
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            provision_sensor(
                &secrets,
                &mut registry,
                &format!("sensor-{i}"),
                s,
                allowed(s),
                &mut OsRng,
            )
            .unwrap()
        })
        .collect();
    (BrokerState { secrets, registry }, sensors)
}

/// Writes `text` to `path` with mode 0600, as a key file must have (a
/// file with secret keys that others may read is refused on load).
pub fn write_private(path: &std::path::Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// `GET path` at a metrics endpoint: the status line and the body.
pub fn scrape(addr: &str, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: metrics\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}
