//! What an operator scrapes from a topic-mode gateway: its counters in the
//! OpenMetrics text format (`prometheus-client`), served over HTTP
//! (`tiny_http`) on `GET /metrics` (`kem-mqtt gateway --metrics ADDR`).
//!
//! [`GatewayMetrics::observe`] takes each [`GatewayEvent`] the gateway's
//! poll returns, with the gateway's own counters ([`GatewayStats`]) and
//! gauges; a scrape encodes the last snapshot, so serving never touches
//! the gateway's state or its keys. The families:
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
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

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

/// The counters and gauges of one gateway, as of its last event.
#[derive(Clone, Debug, Default)]
struct Snapshot {
    stats: GatewayStats,
    handshakes: BTreeMap<&'static str, u64>,
    refusals: BTreeMap<String, u64>,
    sessions: u64,
    pending: u64,
    sensors: u64,
    registry_loads: u64,
    registry_refused: u64,
}

/// One gateway's metrics: fed by [`GatewayMetrics::observe`], read by
/// [`GatewayMetrics::encode`] and the HTTP endpoint ([`GatewayMetrics::serve`]).
#[derive(Clone, Debug, Default)]
pub struct GatewayMetrics {
    snapshot: Arc<Mutex<Snapshot>>,
}

/// The variant name of an error's `Debug` form (`Truncated { .. }` →
/// `Truncated`): a label value from the enum's fixed set, without the
/// lengths or ids a variant carries.
fn variant(error: &kem_mqtt::Error) -> String {
    let debug = format!("{error:?}");
    debug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The label of a dropped hello.
fn drop_reason(reason: &DropReason) -> &'static str {
    match reason {
        DropReason::RateLimited(Refusal::ClientId) => "rate_limited_client_id",
        DropReason::RateLimited(Refusal::Source) => "rate_limited_source",
        DropReason::RateLimited(Refusal::Global) => "rate_limited_global",
        DropReason::Replayed => "replayed",
        DropReason::PendingFull => "pending_full",
    }
}

impl GatewayMetrics {
    /// Metrics of a gateway whose registry holds `sensors` (its first load).
    pub fn new(sensors: usize) -> Self {
        let metrics = GatewayMetrics::default();
        {
            let mut s = metrics.lock();
            s.sensors = sensors as u64;
            s.registry_loads = 1;
        }
        metrics
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Snapshot> {
        // A panic elsewhere while counting leaves counts, not broken state.
        self.snapshot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts `event`, which `gateway`'s last poll returned, and takes the
    /// gateway's counters and gauges.
    pub fn observe(&self, gateway: &Gateway, event: &GatewayEvent) {
        let mut s = self.lock();
        match event {
            GatewayEvent::Established { suite, .. } => *s.handshakes.entry(suite.name()).or_default() += 1,
            GatewayEvent::Rejected { error, .. } => *s.refusals.entry(variant(error)).or_default() += 1,
            GatewayEvent::Dropped { reason, .. } => *s.refusals.entry(drop_reason(reason).into()).or_default() += 1,
            GatewayEvent::Reloaded { clients, .. } => {
                s.registry_loads += 1;
                s.sensors = *clients as u64;
            }
            GatewayEvent::ReloadRefused { .. } => s.registry_refused += 1,
            _ => {}
        }
        s.stats = gateway.stats();
        s.sessions = gateway.sessions() as u64;
        s.pending = gateway.pending_handshakes() as u64;
    }

    /// The OpenMetrics text of the last snapshot.
    pub fn encode(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }

    /// Serves [`GatewayMetrics::encode`] on `GET /metrics` at `addr` (on
    /// a thread of its own, until the returned server is dropped).
    pub fn serve(&self, addr: SocketAddr) -> Result<MetricsServer, HostError> {
        let server = tiny_http::Server::http(addr)
            .map_err(|e| HostError::Io(std::io::Error::other(format!("metrics endpoint {addr}: {e}"))))?;
        let local = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| HostError::Io(std::io::Error::other("metrics endpoint: not an IP address")))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (metrics, flag) = (self.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("kem-mqtt-metrics".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    let Ok(Some(request)) = server.recv_timeout(Duration::from_millis(100)) else {
                        continue;
                    };
                    let response = if request.url() == "/metrics" && *request.method() == tiny_http::Method::Get {
                        let header =
                            tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE).expect("a valid header");
                        tiny_http::Response::from_string(metrics.encode()).with_header(header)
                    } else {
                        tiny_http::Response::from_string("GET /metrics\n").with_status_code(404)
                    };
                    // A scraper that hung up gets nothing; the next one is served.
                    let _ = request.respond(response);
                }
            })?;
        Ok(MetricsServer {
            addr: local,
            stop,
            thread: Some(thread),
        })
    }
}

/// Encodes one counter family: `(label value, count)` pairs under `label`,
/// or one unlabelled value.
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

impl Collector for GatewayMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = self.lock().clone();
        let e = &mut encoder;
        let handshakes: Vec<(&str, u64)> = s.handshakes.iter().map(|(k, v)| (*k, *v)).collect();
        counter_family(
            e,
            "kem_mqtt_handshakes",
            "Sessions established, by suite",
            "suite",
            &handshakes,
        )?;
        let refusals: Vec<(&str, u64)> = s.refusals.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        counter_family(
            e,
            "kem_mqtt_refusals",
            "Handshake messages and records refused, and hellos dropped by admission, by reason",
            "reason",
            &refusals,
        )?;
        let st = s.stats;
        counter_family(
            e,
            "kem_mqtt_records",
            "Records opened (in), commands sealed (out), records refused, commands without a session",
            "direction",
            &[
                ("in", st.records_opened),
                ("out", st.commands_sealed),
                ("rejected", st.records_rejected),
                ("dropped", st.commands_dropped),
            ],
        )?;
        gauge(e, "kem_mqtt_sessions", "Live sessions", s.sessions)?;
        gauge(
            e,
            "kem_mqtt_pending_handshakes",
            "Handshakes awaiting their ClientFinished",
            s.pending,
        )?;
        counter(
            e,
            "kem_mqtt_revocations",
            "Sessions ended by a registry change",
            st.sessions_revoked,
        )?;
        gauge(
            e,
            "kem_mqtt_registry_sensors",
            "Sensors in the registry in use",
            s.sensors,
        )?;
        counter(
            e,
            "kem_mqtt_registry_loads",
            "Registries put in place (1 at start, one per reload): the registry's version here",
            s.registry_loads,
        )?;
        counter(
            e,
            "kem_mqtt_registry_refused",
            "Changed registries that did not load (the one in use stayed)",
            s.registry_refused,
        )?;
        Ok(())
    }
}

/// The running endpoint; dropping it stops the thread (within 100 ms).
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
