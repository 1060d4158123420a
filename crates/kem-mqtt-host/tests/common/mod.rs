//! Shared by the integration tests: enrolment of test sensors, key files.
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
