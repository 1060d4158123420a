//! What an operator scrapes from a broker side: its counters in the
//! OpenMetrics text format (`prometheus-client`), served over HTTP
//! (`tiny_http`) on `GET /metrics` — `kem-mqtt gateway --metrics ADDR` in
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

    /// Serves [`Metrics::encode`] on `GET /metrics` at `addr` (on a thread
    /// of its own, until the returned server is dropped).
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
