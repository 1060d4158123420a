//! A fleet of host sensors against a broker (`kem-mqtt load`): how many
//! handshakes per second a broker and its KEM-MQTT side take, how long a
//! sensor waits for its handshake, how many records per second reach an
//! application. `cargo xtask mqtt-load` runs it against mosquitto with the
//! plugin and against the gateway, on loopback, and writes the table in
//! `docs/benchmarks.md`.
//!
//! Two phases, each bounded in time:
//! 1. **Handshakes**: `concurrency` workers take the sensors one after the
//!    other; each connects and runs its handshake (AUTH or topic mode) and
//!    keeps the connection open. The latency of a handshake is the time from
//!    the TCP connect to the established session, as the sensor sees it.
//! 2. **Records**: the same workers publish `records` sealed readings per
//!    sensor; an application subscribed to `plain/#` counts what arrives
//!    opened. Records per second = delivered / (last delivery − first send).
//!
//! The sensors run on the same machine as the broker: their own
//! cryptography competes with the broker's for the cores, so the rates are
//! lower bounds for a broker with the machine to itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kem_mqtt::{BrokerHandshake, SensorHandshake, Suite, SuiteSet, MAX_BROKER_HELLO_LEN, MAX_CLIENT_HELLO_LEN};

use crate::client::MqttClient;
use crate::keys::{BrokerState, Registry, SensorKeys};
use crate::provision::{generate_broker, provision_sensor};
use crate::sensor::SensorClient;
use crate::transport::Endpoint;
use crate::{HostError, Mode, OsRng};

/// What one run does.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The broker: `HOST:PORT`, over TCP or TLS.
    pub broker: Endpoint,
    /// AUTH or topic mode.
    pub mode: Mode,
    /// Workers (sensors handshaking at the same time).
    pub concurrency: usize,
    /// Readings each sensor publishes after all handshakes.
    pub records: u32,
    /// The application's login (username, password), to count deliveries on
    /// `plain/#`; `None`: deliveries are not counted.
    pub app_login: Option<(String, String)>,
    /// Longest wait for one handshake, and for the deliveries.
    pub timeout: Duration,
}

/// What one run measured.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadResult {
    /// Suite name.
    pub suite: String,
    /// `auth` or `topic`.
    pub mode: String,
    /// Sensors in the fleet.
    pub sensors: usize,
    /// Workers.
    pub concurrency: usize,
    /// Handshakes that completed.
    pub established: usize,
    /// Handshakes that failed (and the first error).
    pub failed: usize,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Wall time of the handshake phase, seconds.
    pub handshake_seconds: f64,
    /// Completed handshakes per second of that phase.
    pub handshakes_per_second: f64,
    /// Median handshake latency, milliseconds.
    pub latency_p50_ms: f64,
    /// 99th-percentile handshake latency, milliseconds.
    pub latency_p99_ms: f64,
    /// Slowest handshake, milliseconds.
    pub latency_max_ms: f64,
    /// Records published.
    pub records_sent: u64,
    /// Records the application received opened (0 without `app_login`).
    pub records_delivered: u64,
    /// Delivered records per second.
    pub records_per_second: f64,
    /// The broker side's cryptography per handshake, measured alone (µs).
    pub broker_crypto_us: f64,
    /// Of which X25519 (the hybrid suite's work minus its pure KEM's), µs.
    pub broker_x25519_us: f64,
}

/// The `p`-quantile (0..=1) of sorted `v`, nearest rank.
fn quantile(v: &[Duration], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i].as_secs_f64() * 1e3
}

/// Median time (µs) of the broker's part of a handshake of `suite`
/// (`BrokerHandshake::accept` and `receive_client_finished`), over
/// `iterations` handshakes with keys made here.
pub fn broker_crypto_us(suite: Suite, iterations: usize) -> Result<f64, HostError> {
    let secrets = generate_broker(&[suite.kem()], &mut OsRng);
    let mut registry = Registry::default();
    let keys = provision_sensor(
        &secrets,
        &mut registry,
        "probe",
        suite,
        SuiteSet::EMPTY.with(suite),
        &mut OsRng,
    )?;
    let state = BrokerState { secrets, registry };
    let mut times = Vec::with_capacity(iterations);
    let (mut ch, mut bh, mut cf) = (
        vec![0u8; MAX_CLIENT_HELLO_LEN],
        vec![0u8; MAX_BROKER_HELLO_LEN],
        vec![0u8; MAX_CLIENT_HELLO_LEN],
    );
    for _ in 0..iterations.max(1) {
        let (sensor, n1) = SensorHandshake::start(suite, keys.credentials(), &mut OsRng, &mut ch)?;
        let t = Instant::now();
        let (broker, n2) = BrokerHandshake::accept(&state, &ch[..n1], &mut OsRng, &mut bh)?;
        let mut spent = t.elapsed();
        let (_, n3) = sensor.receive_broker_hello(&bh[..n2], &mut cf)?;
        let t = Instant::now();
        broker.receive_client_finished(&cf[..n3])?;
        spent += t.elapsed();
        times.push(spent);
    }
    times.sort();
    Ok(quantile(&times, 0.5) * 1e3)
}

/// Counts PUBLISHes on `plain/#` until `expected` arrived or `deadline`:
/// (count, time of the last).
fn count_deliveries(mut app: MqttClient, expected: Arc<AtomicUsize>, deadline: Instant) -> (u64, Option<Instant>) {
    let (mut n, mut last) = (0u64, None);
    app.set_timeout(Some(Duration::from_millis(100)));
    loop {
        let want = expected.load(Ordering::SeqCst);
        if (want != usize::MAX && n >= want as u64) || Instant::now() > deadline {
            return (n, last);
        }
        match app.recv() {
            Ok(_) => {
                n += 1;
                last = Some(Instant::now());
            }
            Err(HostError::Timeout) => {}
            Err(_) => return (n, last),
        }
    }
}

/// Runs the fleet `keys` (one suite) against the broker.
pub fn run(keys: Vec<SensorKeys>, config: &LoadConfig) -> Result<LoadResult, HostError> {
    let suite = keys
        .first()
        .map(|k| k.suite)
        .ok_or_else(|| HostError::Unexpected("no sensors".into()))?;
    if keys.iter().any(|k| k.suite != suite) {
        return Err(HostError::Unexpected(
            "a load run takes the sensors of one suite".into(),
        ));
    }
    let sensors = keys.len();
    let workers = config.concurrency.clamp(1, sensors);

    // The application, subscribed before anything is sent.
    let expected = Arc::new(AtomicUsize::new(usize::MAX));
    let app = match &config.app_login {
        Some((user, password)) => {
            let mut app = MqttClient::connect(
                &config.broker,
                "kem-mqtt-load-app",
                Some((user, password)),
                config.timeout,
            )?;
            app.subscribe(&["plain/#"])?;
            let (expected, deadline) = (expected.clone(), Instant::now() + config.timeout * 20);
            Some(std::thread::spawn(move || count_deliveries(app, expected, deadline)))
        }
        None => None,
    };

    // 1. Handshakes.
    let keys = Arc::new(keys);
    let next = Arc::new(AtomicUsize::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(sensors)));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            let (keys, next, latencies, failures, config) = (
                keys.clone(),
                next.clone(),
                latencies.clone(),
                failures.clone(),
                config.clone(),
            );
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(k) = keys.get(i) else { break };
                    let t = Instant::now();
                    let r = match config.mode {
                        Mode::Auth => SensorClient::connect_auth_mode(&config.broker, k, config.timeout),
                        Mode::Topic => SensorClient::connect_topic_mode(&config.broker, k, config.timeout),
                    };
                    match r {
                        Ok(c) => {
                            latencies.lock().unwrap_or_else(|e| e.into_inner()).push(t.elapsed());
                            mine.push(c);
                        }
                        Err(e) => failures
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(format!("{}: {e}", k.client_id)),
                    }
                }
                mine
            })
        })
        .collect();
    let mut groups = Vec::with_capacity(workers);
    for t in threads {
        groups.push(
            t.join()
                .map_err(|_| HostError::Unexpected("a sensor worker panicked".into()))?,
        );
    }
    let handshake_seconds = start.elapsed().as_secs_f64();
    let mut lat = std::mem::take(&mut *latencies.lock().unwrap_or_else(|e| e.into_inner()));
    lat.sort();
    let failures = std::mem::take(&mut *failures.lock().unwrap_or_else(|e| e.into_inner()));
    let established = lat.len();

    // 2. Records.
    let records_sent = established as u64 * u64::from(config.records);
    expected.store(records_sent as usize, Ordering::SeqCst);
    let first_send = Instant::now();
    let threads: Vec<_> = groups
        .into_iter()
        .map(|mut group| {
            let records = config.records;
            std::thread::spawn(move || -> Result<Vec<SensorClient>, HostError> {
                for r in 0..records {
                    for c in &mut group {
                        c.send_on("t", format!("reading {r}").as_bytes())?;
                    }
                }
                Ok(group)
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(established);
    for t in threads {
        clients.extend(
            t.join()
                .map_err(|_| HostError::Unexpected("a sensor worker panicked".into()))??,
        );
    }
    let (records_delivered, last) = match app {
        Some(t) => t
            .join()
            .map_err(|_| HostError::Unexpected("the application panicked".into()))?,
        None => (0, None),
    };
    let records_per_second = match last {
        Some(l) if records_delivered > 0 => records_delivered as f64 / l.duration_since(first_send).as_secs_f64(),
        _ => 0.0,
    };
    for c in clients {
        let _ = c.disconnect();
    }

    let broker_crypto_us = broker_crypto_us(suite, 20)?;
    let broker_x25519_us = if suite.is_hybrid() {
        (broker_crypto_us - broker_crypto_us_of_pure(suite)?).max(0.0)
    } else {
        0.0
    };
    Ok(LoadResult {
        suite: suite.name().to_string(),
        mode: config.mode.name().to_string(),
        sensors,
        concurrency: workers,
        established,
        failed: failures.len(),
        first_error: failures.into_iter().next(),
        handshake_seconds,
        handshakes_per_second: established as f64 / handshake_seconds,
        latency_p50_ms: quantile(&lat, 0.5),
        latency_p99_ms: quantile(&lat, 0.99),
        latency_max_ms: quantile(&lat, 1.0),
        records_sent,
        records_delivered,
        records_per_second,
        broker_crypto_us,
        broker_x25519_us,
    })
}

fn broker_crypto_us_of_pure(suite: Suite) -> Result<f64, HostError> {
    broker_crypto_us(Suite::new(suite.kem(), false), 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_the_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
