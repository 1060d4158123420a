//! The plugin's decisions, free of FFI: what each authentication event
//! answers, given the bytes and what mosquitto knows of the connection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use kem_mqtt::{
    AwaitClientFinished, BrokerHandshake, BrokerKeys, Session, AUTH_METHOD, MAX_BROKER_HELLO_LEN, RECORD_OVERHEAD,
};
use kem_mqtt_host::admission::{self, parse_duration, parse_rate, Admission, AdmissionConfig};
use kem_mqtt_host::keys::{BrokerSecrets, BrokerState, Registry};
use kem_mqtt_host::metrics::{admission_reason, error_reason, Metrics, MetricsServer};
use kem_mqtt_host::reload::RegistryWatch;
use kem_mqtt_host::store::RegistryLocation;
use kem_mqtt_host::topics::{self, Delivery};
use kem_mqtt_host::OsRng;

/// A handshake waiting for its ClientFinished longer than this is dropped
/// (with its keys): mosquitto may not report every connection that dies
/// mid-handshake, and the table must not grow with abandoned ones. A sensor
/// on an 8-bit MCU needs a few seconds for its second step.
const PENDING_TIMEOUT: Duration = Duration::from_secs(60);

/// What mosquitto knows of the connection an event is for.
#[derive(Clone, Copy, Debug)]
pub struct Connection<'a> {
    /// Any key unique among the live connections (the `struct mosquitto *`).
    pub key: usize,
    /// The client id of the CONNECT (mosquitto's, after its own processing).
    pub client_id: Option<&'a str>,
    /// The connection's username (for a sensor, the plugin sets it to the
    /// authenticated id).
    pub username: Option<&'a str>,
    /// The peer's address, if mosquitto gives one.
    pub address: Option<IpAddr>,
}

/// Why a connection was refused (logged; the client sees CONNACK 0x87 for all).
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The ClientHello fails a check that needs no key.
    Malformed(kem_mqtt::Error),
    /// The ClientHello names another identity than the CONNECT's client id
    /// (misbinding; on re-authentication: a change of identity).
    ClientIdMismatch {
        /// The client id of the CONNECT.
        connect: String,
        /// The client id inside the ClientHello.
        hello: String,
    },
    /// No registry entry for the ClientHello's client id.
    UnknownClient,
    /// A rate limit (see [`kem_mqtt_host::admission`]).
    RateLimited(admission::Refusal),
    /// The handshake failed (policy, keys, ClientFinished).
    Handshake(kem_mqtt::Error),
    /// A ClientFinished with no handshake started on this connection.
    NoPendingHandshake,
}

impl Refusal {
    /// Its label in the metrics (`kem_mqtt_refusals{reason=…}`): a fixed
    /// name, never the ids a refusal names.
    pub fn reason(&self) -> String {
        match self {
            Refusal::Malformed(e) | Refusal::Handshake(e) => error_reason(e),
            Refusal::ClientIdMismatch { .. } => "client_id_mismatch".into(),
            Refusal::UnknownClient => "UnknownClient".into(),
            Refusal::RateLimited(r) => admission_reason(*r).into(),
            Refusal::NoPendingHandshake => "no_pending_handshake".into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Malformed(e) => write!(f, "malformed ClientHello: {e}"),
            Refusal::ClientIdMismatch { connect, hello } => write!(
                f,
                "ClientHello for {hello:?} on a connection whose client id is {connect:?}"
            ),
            Refusal::UnknownClient => f.write_str("client id not registered"),
            Refusal::RateLimited(r) => write!(f, "{r}"),
            Refusal::Handshake(e) => write!(f, "handshake failed: {e}"),
            Refusal::NoPendingHandshake => f.write_str("ClientFinished without a handshake"),
        }
    }
}

/// What one authentication event decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Send this AUTH data and continue.
    Continue(Vec<u8>),
    /// Authenticated as this sensor id: the connection's username becomes it.
    Success {
        /// The sensor id the handshake authenticated (= the client id).
        identity: String,
    },
    /// Refuse (CONNACK 0x87).
    Refuse(Refusal),
    /// Not our method (CONNACK 0x8C).
    NotSupported,
}

/// What the plugin does with one PUBLISH (`MOSQ_EVT_MESSAGE`).
#[derive(Debug, PartialEq, Eq)]
pub enum Message {
    /// Not a record, not a command: mosquitto routes it as usual.
    Pass,
    /// Route the message as usual, and also publish this one, as the
    /// broker, to every subscriber allowed to read it (`to: None`) or to
    /// the connected sensor `to` only.
    PassAndPublish {
        /// `Some(id)`: only to that client.
        to: Option<String>,
        /// Topic.
        topic: String,
        /// Payload.
        payload: Vec<u8>,
    },
    /// Route the message as usual and publish nothing: a record that does
    /// not open, or a command for a sensor without a session (counted; a
    /// sealed record is ciphertext to anyone who may read its topic).
    Dropped(Undelivered),
    /// Refuse the PUBLISH: a sensor on the plain or the sealed broker →
    /// sensor topics, which only the broker side writes.
    Refuse,
}

/// Why a record or a command was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undelivered {
    /// A record on another sensor's topic than the publisher's.
    Foreign,
    /// A record from a connection without a KEM-MQTT session.
    NoSession,
    /// A record that failed to open: tampered, moved, replayed, too old.
    Record(kem_mqtt::Error),
    /// A command for a sensor that is not connected with a session.
    CommandNoSession,
}

/// What the data path counted since the broker started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryStats {
    /// Records opened and delivered as plaintext.
    pub delivered: u64,
    /// Records that failed authentication (tampered, moved to another topic, wrong keys).
    pub rejected: u64,
    /// Records replayed or older than the replay window.
    pub replayed: u64,
    /// Records on another sensor's topic, or from a connection without a session.
    pub foreign: u64,
    /// Commands sealed to a sensor.
    pub commands: u64,
    /// Commands for a sensor without a session.
    pub commands_dropped: u64,
    /// PUBLISHes refused on the plain or the sealed broker → sensor topics.
    pub refused: u64,
}

impl std::fmt::Display for DeliveryStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "records from sensors: {} opened and delivered, {} failed to authenticate, {} replayed or too old, \
             {} not the publisher's (another sensor's topic, or no session); commands from applications: \
             {} sealed to a sensor, {} for a sensor without a session; {} PUBLISHes refused on topics only the \
             broker writes",
            self.delivered,
            self.rejected,
            self.replayed,
            self.foreign,
            self.commands,
            self.commands_dropped,
            self.refused
        )
    }
}

/// What the plugin does on its broker (`plugin_opt_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `auth` (the default): the broker side of KEM-MQTT/1 inside MQTT v5
    /// enhanced authentication, the data path, and the topic guard.
    Auth,
    /// `topic`: a `kem-mqtt gateway` beside the broker runs the protocol;
    /// the plugin holds no key and only guards the `kem-mqtt/` topics
    /// ([`guard_refuses`]).
    TopicGuard,
}

/// Whether the topic guard refuses `client_id` every access to `topic`: a
/// client id with `/` on the `kem-mqtt/` topics. The shipped ACLs grant a
/// client the topics of its own id (`pattern write kem-mqtt/data/c2b/%c/#`),
/// and mosquitto expands `%c` with its `/`s (it refuses only `+` and `#`),
/// so client `alice/c2b` would write `kem-mqtt/data/c2b/alice/c2b/…`, which
/// the gateway reads as alice's records. No KEM-MQTT id contains `/`
/// ([`kem_mqtt::valid_client_id`]), so no sensor is refused.
pub fn guard_refuses(client_id: Option<&str>, topic: &str) -> bool {
    topic.starts_with(kem_mqtt_host::topics::ROOT) && client_id.is_some_and(|id| id.contains('/'))
}

/// `plugin_opt_*` settings (the `plugin_opt_` prefix removed).
#[derive(Debug)]
pub struct Options {
    /// What the plugin does.
    pub mode: Mode,
    /// Directory with `broker-key.json` and `registry.json` (AUTH mode;
    /// empty in topic mode).
    pub keys_dir: String,
    /// Where the registry is, if not the key directory's `registry.json`
    /// (`plugin_opt_registry`: `sqlite:PATH` or `postgres://…`).
    pub registry: Option<RegistryLocation>,
    /// ClientHello rate limits.
    pub limits: AdmissionConfig,
    /// Where readings and commands travel for applications.
    pub delivery: Delivery,
    /// How often the counters are logged (when they changed).
    pub stats_interval: Duration,
    /// Where the metrics endpoint listens (`GET /metrics`), if anywhere.
    pub metrics: Option<std::net::SocketAddr>,
    /// Test-only faults (feature `fault-injection`).
    #[cfg(feature = "fault-injection")]
    pub faults: crate::fault::Faults,
}

impl Options {
    /// Parses mosquitto's options; a later value of a key overrides an
    /// earlier one (as mosquitto does for its own settings). Unknown keys are
    /// an error, so a misspelt limit does not silently leave the default.
    pub fn parse<'a>(opts: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Options, String> {
        let mut mode = Mode::Auth;
        let mut keys_dir = None;
        let mut limits = AdmissionConfig::default();
        let (mut plain, mut command) = (
            topics::DEFAULT_PLAIN_PREFIX.to_string(),
            topics::DEFAULT_COMMAND_PREFIX.to_string(),
        );
        let mut stats_interval = Duration::from_secs(60);
        let mut metrics = None;
        let mut registry = None;
        #[cfg(feature = "fault-injection")]
        let mut faults = crate::fault::Faults::default();
        for (k, v) in opts {
            match k {
                "mode" => {
                    mode = match v.trim() {
                        "auth" => Mode::Auth,
                        "topic" => Mode::TopicGuard,
                        _ => return Err(format!("plugin_opt_mode {v:?}: expected auth or topic")),
                    }
                }
                "keys_dir" => keys_dir = Some(v.to_string()),
                "registry" => {
                    registry = Some(RegistryLocation::parse(v).map_err(|e| format!("plugin_opt_registry {v:?}: {e}"))?)
                }
                "limit_per_id" => limits.per_id = parse_rate(v)?,
                "limit_per_source" => limits.per_source = parse_rate(v)?,
                "limit_global" => limits.global = parse_rate(v)?,
                "limit_reserved" => limits.reserved = parse_rate(v)?,
                "limit_reserve_per_id" => limits.reserve_per_key = parse_rate(v)?,
                "returning_for" => {
                    limits.returning_for = parse_duration(v).ok_or_else(|| {
                        format!("plugin_opt_returning_for {v:?}: expected a duration such as 24h or 30m")
                    })?
                }
                "max_returning" => {
                    limits.max_returning = v.trim().parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                        format!("plugin_opt_max_returning {v:?}: expected a number of sensors such as 65536")
                    })?
                }
                "plain_prefix" => plain = v.trim().to_string(),
                "command_prefix" => command = v.trim().to_string(),
                "stats_interval" => {
                    stats_interval = parse_duration(v).ok_or_else(|| {
                        format!("plugin_opt_stats_interval {v:?}: expected a duration such as 60s or 500ms")
                    })?
                }
                "metrics" => {
                    metrics = Some(v.trim().parse().map_err(|_| {
                        format!("plugin_opt_metrics {v:?}: expected an address and port such as 127.0.0.1:9465")
                    })?)
                }
                #[cfg(feature = "fault-injection")]
                k if faults.set(k, v) => {}
                _ => return Err(format!("unknown option plugin_opt_{k}")),
            }
        }
        let keys_dir = match (mode, keys_dir) {
            (Mode::Auth, Some(dir)) => dir,
            (Mode::Auth, None) => return Err("plugin_opt_keys_dir is required".into()),
            (Mode::TopicGuard, None) => String::new(),
            // A key directory that is not used would suggest it is.
            (Mode::TopicGuard, Some(_)) => {
                return Err("plugin_opt_keys_dir: in topic mode the gateway holds the keys, not the plugin".into())
            }
        };
        if mode == Mode::TopicGuard && registry.is_some() {
            return Err("plugin_opt_registry: in topic mode the gateway holds the registry, not the plugin".into());
        }
        Ok(Options {
            mode,
            keys_dir,
            registry,
            limits,
            delivery: Delivery::new(&plain, &command)?,
            stats_interval,
            metrics,
            #[cfg(feature = "fault-injection")]
            faults,
        })
    }
}

/// A lock that survives a panic of another holder: the plugin contains
/// panics (see `lib.rs`), and each critical section below leaves its map
/// consistent at every step, so the data behind a poisoned lock is sound.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A registry reload: how many sensors the new registry has, and the ids
/// it revoked (gone, or with other keys or policy) — their sessions and
/// pending handshakes are gone; the caller closes their connections.
#[derive(Debug, PartialEq, Eq)]
pub struct Reload {
    /// Registered sensors after the reload.
    pub clients: usize,
    /// Sensor ids revoked by it.
    pub revoked: Vec<String>,
}

/// The plugin's state: keys, registry, rate limits, the handshakes
/// awaiting a ClientFinished and the established sessions.
pub struct Plugin {
    /// Keys and registry; a reload swaps in a new one whole, and a
    /// handshake uses the one it started with.
    state: RwLock<Arc<BrokerState>>,
    /// `registry.json`, watched for changes (revocation without a restart).
    watch: Mutex<RegistryWatch>,
    admission: Mutex<Admission<IpAddr>>,
    pending: Mutex<HashMap<usize, (Instant, AwaitClientFinished)>>,
    /// Sensor id → (the connection that authenticated it, its session).
    /// Only in broker memory; removed (keys wiped) when that connection
    /// goes; a new connection needs a new handshake.
    sessions: Mutex<HashMap<String, (usize, Session)>>,
    delivery: Delivery,
    stats: Mutex<DeliveryStats>,
    /// How often, and when last, the counters were logged.
    stats_log: Mutex<(Duration, Instant, DeliveryStats)>,
    /// Reloads made on the data path ([`Plugin::message`]), for the next
    /// tick to log and to close the revoked sensors' connections (not from
    /// inside the message callback, whose own connection may be one).
    deferred: Mutex<Vec<Result<Reload, String>>>,
    /// What an operator scrapes (`plugin_opt_metrics`); counted whether or
    /// not it is served.
    metrics: Metrics,
    /// The endpoint, stopped when the plugin is freed.
    endpoint: Option<MetricsServer>,
    #[cfg(feature = "fault-injection")]
    faults: crate::fault::Faults,
}

impl Plugin {
    /// Loads `broker-key.json` and `registry.json` from the keys directory.
    pub fn load(options: Options) -> Result<Plugin, String> {
        let dir = Path::new(&options.keys_dir);
        let secrets = BrokerSecrets::load(&dir.join("broker-key.json")).map_err(|e| e.to_string())?;
        let location = options
            .registry
            .clone()
            .unwrap_or_else(|| RegistryLocation::in_dir(dir));
        let (watch, registry) = RegistryWatch::open(&location).map_err(|e| e.to_string())?;
        let metrics = Metrics::new(registry.clients.len());
        let endpoint = match options.metrics {
            Some(addr) => Some(metrics.serve(addr).map_err(|e| e.to_string())?),
            None => None,
        };
        Ok(Plugin {
            state: RwLock::new(Arc::new(BrokerState { secrets, registry })),
            watch: Mutex::new(watch),
            admission: Mutex::new(Admission::new(options.limits)),
            pending: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            delivery: options.delivery,
            stats: Mutex::new(DeliveryStats::default()),
            stats_log: Mutex::new((options.stats_interval, Instant::now(), DeliveryStats::default())),
            deferred: Mutex::new(Vec::new()),
            metrics,
            endpoint,
            #[cfg(feature = "fault-injection")]
            faults: options.faults,
        })
    }

    /// The metrics endpoint's address, if it serves one.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.endpoint.as_ref().map(MetricsServer::addr)
    }

    /// Counts an authentication event's outcome (`suite`: of the session
    /// it established) and takes the gauges.
    fn count(&self, outcome: &Outcome, suite: Option<kem_mqtt::Suite>) {
        self.metrics.update(|c| match (outcome, suite) {
            (Outcome::Refuse(why), _) => c.refused(&why.reason()),
            (Outcome::Success { .. }, Some(suite)) => *c.handshakes.entry(suite.name().to_owned()).or_default() += 1,
            _ => {}
        });
        self.take_gauges();
    }

    /// Puts the live sessions and pending handshakes into the metrics.
    fn take_gauges(&self) {
        let (sessions, pending) = (self.sessions() as u64, self.pending() as u64);
        self.metrics.update(|c| {
            c.sessions = sessions;
            c.pending = pending;
        });
    }

    /// Registered clients.
    pub fn clients(&self) -> usize {
        self.state().registry.clients.len()
    }

    /// The keys and registry in use.
    fn state(&self) -> Arc<BrokerState> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `MOSQ_EVT_TICK`: if `registry.json` changed (checked at most once a
    /// second), puts the new registry in place (see `Plugin::apply`).
    /// `Some(Err)`: the new file does not load; the registry in use stays.
    pub fn reload_if_changed(&self, now: Instant) -> Option<Result<Reload, String>> {
        let loaded = lock(&self.watch).poll(now)?;
        Some(self.apply_loaded(loaded))
    }

    /// Looks at `registry.json` now (one `stat`), before a record is opened
    /// or a command sealed: a revocation written before the message arrived
    /// applies to it, not only from the next tick on. A new registry is put
    /// in place at once (the revoked sessions end here); its outcome waits
    /// in [`Plugin::deferred_reloads`].
    fn reload_now(&self) {
        let Some(loaded) = lock(&self.watch).poll_now() else {
            return;
        };
        let outcome = self.apply_loaded(loaded);
        lock(&self.deferred).push(outcome);
    }

    /// The reloads made on the data path since the last call: the tick logs
    /// them and closes the connections of the sensors they revoked.
    pub fn deferred_reloads(&self) -> Vec<Result<Reload, String>> {
        std::mem::take(&mut *lock(&self.deferred))
    }

    /// `MOSQ_EVT_RELOAD` (mosquitto got SIGHUP): loads `registry.json` now.
    pub fn reload(&self) -> Result<Reload, String> {
        let loaded = lock(&self.watch).reload();
        self.apply_loaded(loaded)
    }

    /// [`Plugin::apply`] of a registry that loaded; the error of one that
    /// did not (the registry in use stays).
    fn apply_loaded(&self, loaded: Result<Registry, kem_mqtt_host::keys::KeyError>) -> Result<Reload, String> {
        let applied = loaded.map(|r| self.apply(r)).map_err(|e| e.to_string());
        if applied.is_err() {
            self.metrics.update(|c| c.registry_refused += 1);
        }
        applied
    }

    /// Puts `registry` in place in one step, then ends what it revoked:
    /// the sessions (keys wiped) and pending handshakes of every id that is
    /// gone or changed. Other sensors are untouched.
    fn apply(&self, registry: Registry) -> Reload {
        let revoked = {
            let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
            let revoked = state.registry.changed_ids(&registry);
            *state = Arc::new(BrokerState {
                secrets: state.secrets.clone(),
                registry,
            });
            revoked
        };
        let is_revoked = |id: &[u8]| revoked.iter().any(|r| r.as_bytes() == id);
        let ended = {
            let mut sessions = lock(&self.sessions);
            let before = sessions.len();
            sessions.retain(|id, _| !is_revoked(id.as_bytes()));
            (before - sessions.len()) as u64
        };
        lock(&self.pending).retain(|_, (_, p)| !is_revoked(p.client_id()));
        let clients = self.clients() as u64;
        self.metrics.update(|c| {
            c.revocations += ended;
            c.registry_loads += 1;
            c.registry_sensors = clients;
        });
        self.take_gauges();
        Reload {
            clients: self.clients(),
            revoked,
        }
    }

    /// `MOSQ_EVT_EXT_AUTH_START` (a CONNECT, or an AUTH 0x19 re-authentication).
    ///
    /// Every check that costs nothing comes before the rate limits, and the
    /// rate limits before the decapsulation: a refused hello costs the
    /// broker a parse and a table look-up, not a handshake.
    pub fn start(&self, conn: &Connection, method: Option<&str>, data: &[u8], now: Instant) -> Outcome {
        let outcome = self.start_counted(conn, method, data, now);
        self.count(&outcome, None);
        outcome
    }

    /// [`Plugin::start`]'s outcome.
    fn start_counted(&self, conn: &Connection, method: Option<&str>, data: &[u8], now: Instant) -> Outcome {
        if method != Some(AUTH_METHOD) {
            return Outcome::NotSupported;
        }
        // A new START replaces whatever this connection had pending.
        lock(&self.pending).remove(&conn.key);
        let (_, id) = match BrokerHandshake::peek(data) {
            Ok(x) => x,
            Err(e) => return Outcome::Refuse(Refusal::Malformed(e)),
        };
        // The identity binding: the sensor id the handshake will prove is the
        // connection's client id, so mosquitto's session take-over (same
        // client id), `%c` in ACLs and the client id in logs all mean the
        // authenticated sensor. On re-authentication the client id is the
        // one bound at CONNECT, so the identity cannot change either.
        if conn.client_id.map(str::as_bytes) != Some(id) {
            return Outcome::Refuse(Refusal::ClientIdMismatch {
                connect: conn.client_id.unwrap_or("").to_string(),
                hello: String::from_utf8_lossy(id).into_owned(),
            });
        }
        // Every check that needs no secret key (registered id, policy, the
        // ephemeral key's import check) before any rate-limit token: only a
        // hello that could be a sensor's takes one.
        let state = self.state();
        match BrokerHandshake::screen(&*state, data) {
            Ok(_) => {}
            Err(kem_mqtt::Error::UnknownClient) => return Outcome::Refuse(Refusal::UnknownClient),
            Err(e) => return Outcome::Refuse(Refusal::Handshake(e)),
        }
        let source = conn.address.map(admission::source_of);
        if let Err(r) = lock(&self.admission).admit(id, source.as_ref(), now) {
            return Outcome::Refuse(Refusal::RateLimited(r));
        }
        let mut buf = vec![0u8; MAX_BROKER_HELLO_LEN];
        match BrokerHandshake::accept(&*state, data, &mut OsRng, &mut buf) {
            Ok((pending, n)) => {
                let mut table = lock(&self.pending);
                table.retain(|_, (since, _)| now.saturating_duration_since(*since) < PENDING_TIMEOUT);
                #[cfg(feature = "fault-injection")]
                self.faults.on_start(id);
                table.insert(conn.key, (now, pending));
                buf.truncate(n);
                Outcome::Continue(buf)
            }
            Err(e) => Outcome::Refuse(Refusal::Handshake(e)),
        }
    }

    /// `MOSQ_EVT_EXT_AUTH_CONTINUE`: the ClientFinished. A verified one
    /// also makes the connection's (sensor id, source) a returning key of
    /// the rate limits ([`kem_mqtt_host::admission`]).
    pub fn continue_auth(&self, conn: &Connection, method: Option<&str>, data: &[u8], now: Instant) -> Outcome {
        let (outcome, suite) = self.continue_counted(conn, method, data, now);
        self.count(&outcome, suite);
        outcome
    }

    /// [`Plugin::continue_auth`]'s outcome, and the suite of a session it established.
    fn continue_counted(
        &self,
        conn: &Connection,
        method: Option<&str>,
        data: &[u8],
        now: Instant,
    ) -> (Outcome, Option<kem_mqtt::Suite>) {
        let pending = lock(&self.pending).remove(&conn.key);
        // mosquitto 2.0 passes no method on CONTINUE; the pending handshake identifies ours.
        if method.is_some_and(|m| m != AUTH_METHOD) {
            return (Outcome::NotSupported, None);
        }
        let Some((_, pending)) = pending else {
            return (Outcome::Refuse(Refusal::NoPendingHandshake), None);
        };
        let identity = String::from_utf8_lossy(pending.client_id()).into_owned();
        // Revoked while pending (a reload removes such states; this covers
        // a handshake that started on the registry before).
        if self.state().client(pending.client_id()).is_none() {
            return (Outcome::Refuse(Refusal::UnknownClient), None);
        }
        // Checked at START already; the client id of a connection does not
        // change in between, but the binding is the point of this plugin.
        if conn.client_id != Some(identity.as_str()) {
            let refusal = Refusal::ClientIdMismatch {
                connect: conn.client_id.unwrap_or("").to_string(),
                hello: identity,
            };
            return (Outcome::Refuse(refusal), None);
        }
        let suite = pending.suite();
        match pending.receive_client_finished(data) {
            // The session replaces any earlier one of this id (a
            // re-authentication, or a take-over whose old connection
            // mosquitto is about to close); the old keys are wiped.
            Ok(session) => {
                let source = conn.address.map(admission::source_of);
                lock(&self.admission).completed(identity.as_bytes(), source.as_ref(), now);
                lock(&self.sessions).insert(identity.clone(), (conn.key, session));
                (Outcome::Success { identity }, Some(suite))
            }
            Err(e) => (Outcome::Refuse(Refusal::Handshake(e)), None),
        }
    }

    /// `MOSQ_EVT_DISCONNECT`: forgets the connection's pending handshake
    /// and its session (whose keys are wiped as it drops).
    pub fn disconnect(&self, conn: &Connection) {
        #[cfg(feature = "fault-injection")]
        self.faults.on_disconnect(conn.client_id);
        lock(&self.pending).remove(&conn.key);
        if let Some(id) = conn.client_id {
            let mut sessions = lock(&self.sessions);
            // Only this connection's: after a take-over the id's session
            // belongs to the new connection.
            if sessions.get(id).is_some_and(|(key, _)| *key == conn.key) {
                sessions.remove(id);
            }
        }
        self.take_gauges();
    }

    /// Established sessions.
    pub fn sessions(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// `MOSQ_EVT_MESSAGE`: a PUBLISH from `conn`, after mosquitto's ACL
    /// allowed it.
    ///
    /// - A record on `kem-mqtt/data/c2b/<id>[/<sub>]` from the connection
    ///   that authenticated `<id>` is opened with its session (topic-bound,
    ///   replay window) and its plaintext published on `<plain>/<id>[/<sub>]`;
    ///   anything else there is dropped and counted, never delivered.
    /// - A command on `<command>/<id>[/<sub>]` is sealed under `<id>`'s
    ///   session and sent to that sensor alone on
    ///   `kem-mqtt/data/b2c/<id>[/<sub>]`.
    /// - A sensor's PUBLISH on the plain topics or the sealed broker → sensor
    ///   topics is refused, whatever the ACL says. Other clients (an
    ///   application, a topic-mode gateway on the same broker) are the
    ///   ACL's to allow or deny: the shipped one grants no one those topics.
    pub fn message(&self, conn: &Connection, topic: &str, payload: &[u8]) -> Message {
        if self.is_data_topic(topic) {
            self.reload_now();
        }
        let message = self.route(conn, topic, payload);
        let stats = {
            let mut stats = lock(&self.stats);
            match &message {
                Message::Pass => {}
                Message::PassAndPublish { to: None, .. } => stats.delivered += 1,
                Message::PassAndPublish { to: Some(_), .. } => stats.commands += 1,
                Message::Dropped(Undelivered::Foreign | Undelivered::NoSession) => stats.foreign += 1,
                Message::Dropped(Undelivered::Record(
                    kem_mqtt::Error::RecordReplayed | kem_mqtt::Error::RecordTooOld,
                )) => stats.replayed += 1,
                Message::Dropped(Undelivered::Record(_)) => stats.rejected += 1,
                Message::Dropped(Undelivered::CommandNoSession) => stats.commands_dropped += 1,
                Message::Refuse => stats.refused += 1,
            }
            *stats
        };
        self.metrics.update(|c| {
            // A record that does not open is a refusal by its reason too,
            // as the gateway counts it.
            if let Message::Dropped(Undelivered::Record(e)) = &message {
                c.refused(&error_reason(e));
            }
            c.records_in = stats.delivered;
            c.records_out = stats.commands;
            c.records_rejected = stats.rejected + stats.replayed + stats.foreign;
            c.commands_dropped = stats.commands_dropped;
        });
        message
    }

    /// Whether `topic` is a sensor's record topic or an application's
    /// command topic: where a session is used.
    fn is_data_topic(&self, topic: &str) -> bool {
        topics::parse_sealed_c2b(topic).is_some() || self.delivery.parse_command(topic).is_some()
    }

    /// Whether a PUBLISH on `topic` loses its retain flag: a sensor's record
    /// is never kept by the broker, nor is the reading opened from it
    /// (`plain/<id>/…`), so nothing a sensor published is served to a later
    /// subscriber, after the sensor's revocation or re-enrolment included.
    pub fn refuses_retain(&self, topic: &str) -> bool {
        topics::parse_sealed_c2b(topic).is_some()
    }

    /// `MOSQ_EVT_ACL_CHECK` for a write: whether the plugin refuses it
    /// (`false`: the ACL file decides). It refuses a sensor's writes on the
    /// topics only the broker side publishes (the plain topics, the sealed
    /// broker → sensor topics), whatever the ACL says, for every way a
    /// message enters: a PUBLISH and a Last Will alike (mosquitto checks a
    /// will when it is about to publish it).
    pub fn refuses_write(&self, conn: &Connection, topic: &str) -> bool {
        (self.delivery.is_plain(topic) || topics::is_sealed_b2c(topic)) && self.is_sensor(conn)
    }

    fn route(&self, conn: &Connection, topic: &str, payload: &[u8]) -> Message {
        if self.refuses_write(conn, topic) {
            return Message::Refuse;
        }
        if let Some((id, sub)) = topics::parse_sealed_c2b(topic) {
            if conn.client_id != Some(id) {
                return Message::Dropped(Undelivered::Foreign);
            }
            let mut sessions = lock(&self.sessions);
            let Some((_, session)) = sessions.get_mut(id).filter(|(key, _)| *key == conn.key) else {
                return Message::Dropped(Undelivered::NoSession);
            };
            let mut pt = vec![0u8; payload.len().saturating_sub(RECORD_OVERHEAD)];
            return match session.open(topic.as_bytes(), payload, &mut pt) {
                Ok(n) => {
                    pt.truncate(n);
                    Message::PassAndPublish {
                        to: None,
                        topic: self.delivery.plain_topic(id, sub),
                        payload: pt,
                    }
                }
                Err(e) => Message::Dropped(Undelivered::Record(e)),
            };
        }
        if let Some((id, sub)) = self.delivery.parse_command(topic) {
            let mut sessions = lock(&self.sessions);
            let Some((_, session)) = sessions.get_mut(id) else {
                return Message::Dropped(Undelivered::CommandNoSession);
            };
            let sealed = topics::sealed_b2c(id, sub);
            let mut rec = vec![0u8; payload.len() + RECORD_OVERHEAD];
            return match session.seal(sealed.as_bytes(), payload, &mut rec) {
                Ok(n) => {
                    rec.truncate(n);
                    Message::PassAndPublish {
                        to: Some(id.to_string()),
                        topic: sealed,
                        payload: rec,
                    }
                }
                // A topic too long to bind, or the sequence numbers spent.
                Err(_) => Message::Dropped(Undelivered::CommandNoSession),
            };
        }
        Message::Pass
    }

    /// Whether `conn` is a sensor's: a registered id whose username is its
    /// client id, as the plugin sets it for every connection it
    /// authenticates. Not the session table: mosquitto checks a Last Will
    /// after the plugin has seen the connection end and dropped its session.
    /// (An application account named like a sensor counts as that sensor
    /// here, and is refused the same topics: SECURITY.md, account naming.)
    fn is_sensor(&self, conn: &Connection) -> bool {
        conn.client_id
            .is_some_and(|id| conn.username == Some(id) && self.state().client(id.as_bytes()).is_some())
    }

    /// The counters.
    pub fn delivery_stats(&self) -> DeliveryStats {
        *lock(&self.stats)
    }

    /// The counters, if they changed and the logging interval passed since
    /// they were last returned (`MOSQ_EVT_TICK` logs them).
    pub fn stats_due(&self, now: Instant) -> Option<DeliveryStats> {
        let stats = self.delivery_stats();
        let mut log = lock(&self.stats_log);
        let (interval, last, logged) = *log;
        if stats == logged || now.saturating_duration_since(last) < interval {
            return None;
        }
        *log = (interval, now, stats);
        Some(stats)
    }

    /// Handshakes awaiting a ClientFinished.
    pub fn pending(&self) -> usize {
        lock(&self.pending).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #47: the stats line names what each counter counts.
    #[test]
    fn the_stats_line_names_what_each_counter_counts() {
        let stats = DeliveryStats {
            delivered: 1,
            rejected: 2,
            replayed: 3,
            foreign: 4,
            commands: 5,
            commands_dropped: 6,
            refused: 7,
        };
        assert_eq!(
            stats.to_string(),
            "records from sensors: 1 opened and delivered, 2 failed to authenticate, 3 replayed or too old, \
             4 not the publisher's (another sensor's topic, or no session); commands from applications: \
             5 sealed to a sensor, 6 for a sensor without a session; 7 PUBLISHes refused on topics only the \
             broker writes"
        );
    }

    #[test]
    fn the_guard_refuses_client_ids_with_a_slash_on_the_kem_mqtt_topics_only() {
        for id in ["alice/c2b", "s0/b2c/x", "/", "x/"] {
            for topic in [
                "kem-mqtt/data/c2b/alice/c2b/t",
                "kem-mqtt/hs/x/c2b",
                "kem-mqtt/cluster/g/owner/a",
            ] {
                assert!(guard_refuses(Some(id), topic), "{id} on {topic}");
            }
            assert!(!guard_refuses(Some(id), "plain/alice/t"), "{id}: not a kem-mqtt/ topic");
        }
        for id in ["alice", "kem-mqtt-gateway-a", "mosq-Xy9.z_1"] {
            assert!(!guard_refuses(Some(id), "kem-mqtt/data/c2b/alice/t"), "{id}");
        }
        assert!(!guard_refuses(None, "kem-mqtt/data/c2b/alice/t"));
    }

    #[test]
    fn options_last_value_wins_and_unknown_keys_are_refused() {
        let o = Options::parse([
            ("keys_dir", "/a"),
            ("limit_per_id", "4/5s"),
            ("keys_dir", "/b"),
            ("limit_per_id", "9/1s"),
        ])
        .unwrap();
        assert_eq!(o.keys_dir, "/b");
        assert_eq!(o.limits.per_id.burst, 9);
        assert_eq!(o.limits.per_source, AdmissionConfig::default().per_source);
        assert!(Options::parse([("keys_dir", "/a"), ("limit_per_ids", "1/1s")]).is_err());
        assert!(
            Options::parse([("limit_global", "1/1s")]).is_err(),
            "keys_dir is required"
        );
        let guard = Options::parse([("mode", "topic")]).unwrap();
        assert_eq!((guard.mode, guard.keys_dir.as_str()), (Mode::TopicGuard, ""));
        assert!(Options::parse([("mode", "topic"), ("keys_dir", "/a")]).is_err());
        assert!(Options::parse([("keys_dir", "/a"), ("mode", "gateway")]).is_err());
        let o = Options::parse([("keys_dir", "/a"), ("max_returning", "333334")]).unwrap();
        assert_eq!(o.limits.max_returning, 333_334);
        for bad in ["0", "-1", "lots"] {
            let e = Options::parse([("keys_dir", "/a"), ("max_returning", bad)]).unwrap_err();
            assert!(e.contains("plugin_opt_max_returning"), "{e}");
        }
        let metrics = Options::parse([("keys_dir", "/a"), ("metrics", "127.0.0.1:9465")]).unwrap();
        assert_eq!(metrics.metrics, Some("127.0.0.1:9465".parse().unwrap()));
        let bad = Options::parse([("keys_dir", "/a"), ("metrics", "localhost")]).unwrap_err();
        assert!(bad.contains("plugin_opt_metrics"), "{bad}");
        assert_eq!(
            Options::parse([("keys_dir", "/a"), ("mode", "auth")]).unwrap().mode,
            Mode::Auth
        );
        #[cfg(not(feature = "fault-injection"))]
        assert!(
            Options::parse([("keys_dir", "/a"), ("fault_panic_start_id", "x")]).is_err(),
            "fault options exist only in test builds"
        );
    }
}
