//! What an operator scrapes from a broker side: its counters in the
//! OpenMetrics text format (`prometheus-client`), served over HTTP/1.0
//! on `GET /metrics` ([`Metrics::serve`]: one thread, one connection at a
//! time) — `kem-mqtt gateway --metrics ADDR` in
//! topic mode, `plugin_opt_metrics ADDR` of the mosquitto plugin in AUTH
//! mode.
//!
//! The gateway feeds [`Metrics::observe_gateway`] each [`GatewayEvent`] its
//! poll returns, with its own counters ([`GatewayStats`]) and gauges; the
//! plugin counts in its callbacks ([`Metrics::update`]). A scrape encodes
//! the counters as they are, so serving never touches a handshake, a
//! session or a key. The families:
//!
//! - `kem_mqtt_handshakes` (counter, label `suite`): sessions established;
//! - `kem_mqtt_refusals` (counter, label `reason`): handshake messages and
//!   records the protocol refused (the [`kem_mqtt::Error`] variant), and
//!   hellos dropped unprocessed (`rate_limited_client_id`,
//!   `rate_limited_source`, `rate_limited_global`, `replayed`,
//!   `pending_full`): the admission refusals;
//! - `kem_mqtt_records` (counter, label `direction`: `in` opened, `out`
//!   sealed commands, `rejected`, `dropped` commands for a sensor without a
//!   session);
//! - `kem_mqtt_sessions` and `kem_mqtt_pending_handshakes` (gauges);
//! - `kem_mqtt_revocations` (counter): sessions ended by a registry change;
//! - `kem_mqtt_registry_sensors` (gauge) and `kem_mqtt_registry_loads`
//!   (counter: the registry's version as this process saw it, 1 at start
//!   and one more per reload put in place), `kem_mqtt_registry_refused`
//!   (counter: changed registries that did not load).
//!
//! Labels take only fixed values (suite names, error variants, refusal
//! kinds), never a client id: the endpoint tells no one which sensors exist.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::admission::Refusal;
use crate::gateway::{DropReason, Gateway, GatewayEvent, GatewayStats};
use crate::HostError;

/// The media type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The counters and gauges of one broker side: a gateway, or the plugin
/// in mosquitto (AUTH mode), each filling them from its own events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Sessions established, by suite name.
    pub handshakes: BTreeMap<String, u64>,
    /// Refusals by reason ([`error_reason`], [`admission_reason`], or the
    /// broker side's own fixed names).
    pub refusals: BTreeMap<String, u64>,
    /// Records opened and delivered.
    pub records_in: u64,
    /// Commands sealed to a sensor.
    pub records_out: u64,
    /// Records that did not open (tampered, replayed, another's topic).
    pub records_rejected: u64,
    /// Commands for a sensor without a session.
    pub commands_dropped: u64,
    /// Live sessions.
    pub sessions: u64,
    /// Handshakes awaiting their ClientFinished.
    pub pending: u64,
    /// Sessions ended by a registry change.
    pub revocations: u64,
    /// Sensors in the registry in use.
    pub registry_sensors: u64,
    /// Registries put in place since the start (1: the first load).
    pub registry_loads: u64,
    /// Changed registries that did not load.
    pub registry_refused: u64,
}

impl Counters {
    /// One more refusal for `reason`.
    pub fn refused(&mut self, reason: &str) {
        *self.refusals.entry(reason.to_owned()).or_default() += 1;
    }
}

/// One broker side's metrics, shared between the code that counts
/// ([`Metrics::update`], [`Metrics::observe_gateway`]) and the endpoint
/// that encodes them on each scrape ([`Metrics::encode`], [`Metrics::serve`]).
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    counters: Arc<Mutex<Counters>>,
}

/// The label of a protocol error: the variant name of its `Debug` form
/// (`Truncated { .. }` → `Truncated`), a value from the enum's fixed set,
/// without the lengths or ids a variant carries.
pub fn error_reason(error: &kem_mqtt::Error) -> String {
    let debug = format!("{error:?}");
    debug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The label of an admission refusal.
pub fn admission_reason(refusal: Refusal) -> &'static str {
    match refusal {
        Refusal::ClientId => "rate_limited_client_id",
        Refusal::Source => "rate_limited_source",
        Refusal::Global => "rate_limited_global",
    }
}

/// The label of a hello the gateway dropped unprocessed.
fn drop_reason(reason: &DropReason) -> &'static str {
    match reason {
        DropReason::RateLimited(r) => admission_reason(*r),
        DropReason::Replayed => "replayed",
        DropReason::PendingFull => "pending_full",
    }
}

impl Metrics {
    /// Metrics of a broker side whose registry holds `sensors` (its first load).
    pub fn new(sensors: usize) -> Self {
        let metrics = Metrics::default();
        metrics.update(|c| {
            c.registry_sensors = sensors as u64;
            c.registry_loads = 1;
        });
        metrics
    }

    /// Changes the counters (under their lock: keep `f` short).
    pub fn update(&self, f: impl FnOnce(&mut Counters)) {
        // A panic elsewhere while counting leaves counts, not broken state.
        f(&mut self.counters.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The counters now.
    pub fn snapshot(&self) -> Counters {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Counts `event`, which `gateway`'s last poll returned, and takes the
    /// gateway's counters and gauges.
    pub fn observe_gateway(&self, gateway: &Gateway, event: &GatewayEvent) {
        let stats: GatewayStats = gateway.stats();
        let (sessions, pending) = (gateway.sessions() as u64, gateway.pending_handshakes() as u64);
        self.update(|c| {
            match event {
                GatewayEvent::Established { suite, .. } => {
                    *c.handshakes.entry(suite.name().to_owned()).or_default() += 1
                }
                GatewayEvent::Rejected { error, .. } => c.refused(&error_reason(error)),
                GatewayEvent::Dropped { reason, .. } => c.refused(drop_reason(reason)),
                GatewayEvent::Reloaded { clients, .. } => {
                    c.registry_loads += 1;
                    c.registry_sensors = *clients as u64;
                }
                GatewayEvent::ReloadRefused { .. } => c.registry_refused += 1,
                _ => {}
            }
            c.records_in = stats.records_opened;
            c.records_out = stats.commands_sealed;
            c.records_rejected = stats.records_rejected;
            c.commands_dropped = stats.commands_dropped;
            c.revocations = stats.sessions_revoked;
            c.sessions = sessions;
            c.pending = pending;
        });
    }

    /// The OpenMetrics text of the counters now.
    pub fn encode(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }

    /// Serves [`Metrics::encode`] on `GET /metrics` at `addr`, on one
    /// thread of its own, until the returned server is dropped.
    ///
    /// One connection at a time, each given [`SCRAPE_TIMEOUT`] to send its
    /// request head (at most [`MAX_REQUEST_HEAD`] bytes) and then closed:
    /// whoever reaches the port can delay a scrape, but cannot make the
    /// process (the gateway, or mosquitto with the plugin) hold more than
    /// one thread and one socket for it. A server whose thread pool grows
    /// with the open connections (`tiny_http`'s does) would let idle
    /// connections grow the broker's threads without bound.
    pub fn serve(&self, addr: SocketAddr) -> Result<MetricsServer, HostError> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| HostError::Io(std::io::Error::new(e.kind(), format!("metrics endpoint {addr}: {e}"))))?;
        // Non-blocking accept: the loop sees the stop flag within ACCEPT_POLL.
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (metrics, flag) = (self.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("kem-mqtt-metrics".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    match listener.accept() {
                        // A scraper that hung up or stalled gets nothing; the next one is served.
                        Ok((stream, _)) => drop(answer(stream, &metrics)),
                        Err(_) => std::thread::sleep(ACCEPT_POLL),
                    }
                }
            })?;
        Ok(MetricsServer {
            addr: local,
            stop,
            thread: Some(thread),
        })
    }
}

/// How long a scraper has to send its request head.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_millis(500);
/// The longest request head read (a request line and a few headers).
pub const MAX_REQUEST_HEAD: usize = 2048;
/// How often the endpoint looks for a connection (and for its stop flag).
const ACCEPT_POLL: Duration = Duration::from_millis(20);

/// Reads one request head from `stream` and answers it (HTTP/1.0, then
/// the connection closes): `GET /metrics` gets the text, anything else
/// 404, a head that is too long or too slow 400.
fn answer(mut stream: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(SCRAPE_TIMEOUT))?;
    stream.set_write_timeout(Some(SCRAPE_TIMEOUT))?;
    let deadline = Instant::now() + SCRAPE_TIMEOUT;
    let mut head = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    let complete = loop {
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            break true;
        }
        if head.len() >= MAX_REQUEST_HEAD || Instant::now() >= deadline {
            break false;
        }
        match stream.read(&mut buf) {
            Ok(0) => break false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(_) => break false,
        }
    };
    let (status, content_type, body) = if !complete {
        let limits = format!(
            "a request head within {MAX_REQUEST_HEAD} bytes and {} ms\n",
            SCRAPE_TIMEOUT.as_millis()
        );
        ("400 Bad Request", "text/plain", limits)
    } else if head.starts_with(b"GET /metrics ") {
        ("200 OK", CONTENT_TYPE, metrics.encode())
    } else {
        ("404 Not Found", "text/plain", "GET /metrics\n".to_owned())
    };
    write!(
        stream,
        "HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// Encodes one counter family: `(label value, count)` pairs under `label`.
fn counter_family(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    label: &str,
    values: &[(&str, u64)],
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, ConstCounter::new(0u64).metric_type())?;
    for &(value, count) in values {
        let labels = [(label, value)];
        ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Encodes one unlabelled counter.
fn counter(encoder: &mut DescriptorEncoder<'_>, name: &str, help: &str, count: u64) -> Result<(), std::fmt::Error> {
    let c = ConstCounter::new(count);
    c.encode(encoder.encode_descriptor(name, help, None, c.metric_type())?)
}

/// Encodes one unlabelled gauge.
fn gauge(encoder: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: u64) -> Result<(), std::fmt::Error> {
    let g = ConstGauge::new(value as i64);
    g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)
}

impl Collector for Metrics {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let c = self.snapshot();
        let e = &mut encoder;
        let handshakes: Vec<(&str, u64)> = c.handshakes.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        counter_family(
            e,
            "kem_mqtt_handshakes",
            "Sessions established, by suite",
            "suite",
            &handshakes,
        )?;
        let refusals: Vec<(&str, u64)> = c.refusals.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        counter_family(
            e,
            "kem_mqtt_refusals",
            "Handshake messages and records refused, and hellos dropped by admission, by reason",
            "reason",
            &refusals,
        )?;
        counter_family(
            e,
            "kem_mqtt_records",
            "Records opened (in), commands sealed (out), records refused, commands without a session",
            "direction",
            &[
                ("in", c.records_in),
                ("out", c.records_out),
                ("rejected", c.records_rejected),
                ("dropped", c.commands_dropped),
            ],
        )?;
        gauge(e, "kem_mqtt_sessions", "Live sessions", c.sessions)?;
        gauge(
            e,
            "kem_mqtt_pending_handshakes",
            "Handshakes awaiting their ClientFinished",
            c.pending,
        )?;
        counter(
            e,
            "kem_mqtt_revocations",
            "Sessions ended by a registry change",
            c.revocations,
        )?;
        gauge(
            e,
            "kem_mqtt_registry_sensors",
            "Sensors in the registry in use",
            c.registry_sensors,
        )?;
        counter(
            e,
            "kem_mqtt_registry_loads",
            "Registries put in place (1 at start, one per reload): the registry's version here",
            c.registry_loads,
        )?;
        counter(
            e,
            "kem_mqtt_registry_refused",
            "Changed registries that did not load (the one in use stayed)",
            c.registry_refused,
        )?;
        Ok(())
    }
}

/// The running endpoint; dropping it stops the thread (within
/// [`SCRAPE_TIMEOUT`] of the scrape it may be answering).
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// The address it listens on (the port the system chose for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request at `addr`: the status line and the body.
    fn request(addr: SocketAddr, head: &[u8]) -> (String, String) {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(head).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (status, body) = text.split_once("\r\n\r\n").unwrap();
        (status.lines().next().unwrap().to_owned(), body.to_owned())
    }

    /// Connections that send nothing, or too much, are closed within
    /// their time and the next scrape is answered: the one thread is never
    /// held for longer than that.
    #[test]
    fn stalled_and_oversized_requests_do_not_keep_the_endpoint() {
        let metrics = Metrics::new(3);
        let server = metrics.serve("127.0.0.1:0".parse().unwrap()).unwrap();
        let idle: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(server.addr()).unwrap()).collect();
        let t = Instant::now();
        let (status, body) = request(server.addr(), b"GET /metrics HTTP/1.0\r\n\r\n");
        assert_eq!(status, "HTTP/1.0 200 OK");
        assert!(body.contains("kem_mqtt_registry_sensors 3\n"), "{body}");
        // Each idle connection had its SCRAPE_TIMEOUT and no more.
        assert!(
            t.elapsed() < 4 * SCRAPE_TIMEOUT + Duration::from_secs(1),
            "{:?}",
            t.elapsed()
        );
        drop(idle);
        // A head past the limit: the 400, or a reset where the kernel
        // drops the unread rest of it; either way the connection is over.
        let long = format!("GET /metrics HTTP/1.0\r\nX: {}\r\n\r\n", "a".repeat(MAX_REQUEST_HEAD));
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(long.as_bytes()).unwrap();
        let mut reply = String::new();
        match s.read_to_string(&mut reply) {
            Ok(_) => assert!(reply.starts_with("HTTP/1.0 400 Bad Request\r\n"), "{reply}"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
        assert_eq!(
            request(server.addr(), b"GET /metrics HTTP/1.0\r\n\r\n").0,
            "HTTP/1.0 200 OK"
        );
        assert_eq!(
            request(server.addr(), b"GET / HTTP/1.0\r\n\r\n").0,
            "HTTP/1.0 404 Not Found"
        );
        assert_eq!(
            request(server.addr(), b"POST /metrics HTTP/1.0\r\n\r\n").0,
            "HTTP/1.0 404 Not Found"
        );
    }
}
