//! The topic-mode gateway: answers handshakes published on
//! `kem-mqtt/hs/+/c2b`, opens records on `kem-mqtt/data/c2b/+[/…]` and
//! publishes their plaintext on `plain/<id>[/…]`, and seals the commands
//! applications publish on `cmd/<id>[/…]` to the sensor (see
//! [`crate::topics`]). Any broker will do; the broker's ACL decides who may
//! read `plain/#` and write `cmd/#`, and must let only gateways write
//! `plain/#`, `kem-mqtt/data/b2c/#` and `kem-mqtt/cluster/#`
//! (`docs/gateway.md`).
//!
//! **Several instances** ([`Cluster`]) share one fleet through an MQTT v5
//! shared subscription: the broker hands each ClientHello to one instance,
//! which runs that handshake and then owns the sensor's session until the
//! sensor's next handshake. A client's handshake and session stay on one
//! instance, so no secret ever leaves the process that made it, and the
//! replay window of a session lives in exactly one place:
//! - a ClientFinished that no pending handshake of the instance it reached
//!   verifies is forwarded, unchanged, on
//!   `kem-mqtt/cluster/<group>/finished/<id>`, which every instance reads;
//!   the one holding the handshake it belongs to verifies it, the others
//!   drop it, and a forwarded one is never forwarded again. An instance
//!   that holds pending handshakes of the id — someone's injected hellos,
//!   or the sensor's own abandoned attempts — still forwards what none of
//!   them verifies, so those cannot swallow the sensor's flight 3.
//!   Forwarding adds nothing an attacker could not publish on the
//!   handshake topic itself;
//! - records and commands reach every instance (plain subscriptions); only
//!   the session's owner opens or seals, the others skip them (counted);
//! - an instance that establishes a session announces it on
//!   `kem-mqtt/cluster/<group>/owner/<id>` (retained, so an instance that
//!   starts later learns it too); another instance that still holds an
//!   older session of that sensor drops it, so a command is never sealed
//!   under a session the sensor has left. Sessions are ordered by an
//!   *epoch*, a hybrid logical clock: an instance stamps a new session with
//!   its wall clock, or with one more than the newest epoch it has seen for
//!   that sensor if that is later. A sensor's new handshake starts only
//!   after the previous owner's notice went out (the notice is published
//!   before the confirmation record that tells the sensor its session
//!   exists), so the new session's epoch is larger whatever the instances'
//!   clocks say. The notice carries the epoch and a MAC under a key every
//!   instance derives from the broker's secret keys (which they all hold):
//!   one that does not verify, or whose epoch is more than
//!   [`NOTICE_FRESHNESS`] ahead of the receiver's clock, changes nothing,
//!   and one that does verify drops only a session with a smaller epoch,
//!   so a replayed notice never drops a sensor's current session.
//!
//! Anyone who can publish on a broker can publish on these topics, and a
//! handshake message is not authenticated until its ClientFinished, so the
//! gateway's state must be one that third parties cannot disturb:
//!
//! - **Pending handshakes are kept, never replaced.** An id may have several
//!   pending handshakes (at most [`GatewayConfig::max_pending_per_id`]). A new
//!   ClientHello adds one; it never replaces or discards another, because the
//!   gateway cannot tell a fresh hello from a replayed or forged one until the
//!   ClientFinished arrives — only the sensor that made a hello knows the
//!   ephemeral secret its ClientFinished needs.
//! - **A ClientFinished is verified before anything is discarded.** It is
//!   checked (in constant time) against every pending handshake of the id,
//!   with the state kept in place; only one that verifies removes the id's
//!   pending handshakes and installs the session. A forged or replayed
//!   ClientFinished is counted and changes nothing.
//! - **Pending handshakes time out** after [`GatewayConfig::pending_lifetime`].
//! - **Repeated hellos cost nothing.** A byte-identical copy of a pending
//!   hello (a retransmission, or a replay) is answered with the same
//!   BrokerHello again, from memory; a copy of one of the last completed
//!   hellos of the id is dropped. Neither spends a decapsulation nor a token.
//! - **New hellos are rate limited before any decapsulation**
//!   ([`crate::admission`]): after the checks that cost nothing (format,
//!   registered id, allowed suite), a hello needs a token of its id's bucket
//!   and of the global one. The gateway sees no source address (every
//!   message comes through the broker), so it has no per-source bucket.
//! - **The sensor learns the outcome.** When a ClientFinished verifies, the
//!   gateway's first record on `kem-mqtt/data/b2c/<id>` is an empty one,
//!   sealed with the new session: the confirmation. A sensor that does not
//!   receive it in time knows its handshake failed (dropped hello, refused
//!   or lost flight, expired state) and starts a new one
//!   ([`crate::sensor::SensorClient::connect_topic_mode`] returns
//!   [`HostError::Timeout`]). An unauthenticated error flight is not sent:
//!   anyone could forge it and abort sensors' handshakes, the attack this
//!   design removes on the gateway's side.
//! - **Every drop is counted** ([`GatewayStats`], [`Gateway::stats`]).
//!
//! Time is passed in to [`GatewayCore`], the sans-IO part, so tests drive
//! expiry and rate limits; [`Gateway`] is the MQTT connection around it.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::OsRng;
use kem_mqtt::sym::Xof;
use kem_mqtt::{
    AwaitClientFinished, BrokerHandshake, BrokerKeys, Family, Session, Suite, MAX_BROKER_HELLO_LEN,
    MSG_CLIENT_FINISHED, MSG_CLIENT_HELLO, RECORD_OVERHEAD,
};

use crate::admission::{Admission, AdmissionConfig, Refusal};
use crate::client::{MqttClient, Reliability};
use crate::keys::{BrokerState, Registry};
use crate::reload::RegistryWatch;
use crate::topics::{self, Delivery, CLUSTER, HS};
use crate::transport::Endpoint;
use crate::{data_b2c, hs_b2c, HostError};

/// What the gateway saw.
#[derive(Debug)]
pub enum GatewayEvent {
    /// A BrokerHello was sent.
    HelloAnswered {
        /// Client id.
        client_id: String,
        /// BrokerHello length.
        broker_hello: usize,
    },
    /// A copy of a pending ClientHello: its BrokerHello was sent again.
    HelloRepeated {
        /// Client id.
        client_id: String,
    },
    /// A handshake completed (and its confirmation record was sent).
    Established {
        /// Client id.
        client_id: String,
        /// Suite.
        suite: Suite,
    },
    /// A record was opened (and its plaintext published on `plain/<id>[/<sub>]`).
    Message {
        /// Client id.
        client_id: String,
        /// The subtopic (`""` for `kem-mqtt/data/c2b/<id>` itself).
        sub: String,
        /// Plaintext.
        payload: Vec<u8>,
    },
    /// A command was sealed to a sensor.
    Command {
        /// Client id.
        client_id: String,
        /// The subtopic.
        sub: String,
    },
    /// A ClientFinished this instance has no handshake for was forwarded to
    /// the other instances (cluster mode).
    Forwarded {
        /// Client id.
        client_id: String,
    },
    /// Another instance established a session of this sensor; this
    /// instance's older one was dropped (cluster mode).
    Superseded {
        /// Client id.
        client_id: String,
    },
    /// A handshake message or record was rejected by the protocol.
    Rejected {
        /// Client id from the topic.
        client_id: String,
        /// Why.
        error: kem_mqtt::Error,
    },
    /// A well-formed ClientHello was dropped without being processed.
    Dropped {
        /// Client id.
        client_id: String,
        /// Why.
        reason: DropReason,
    },
    /// The registry file changed and was put in place; the sessions and
    /// pending handshakes of the ids it revoked (gone, or with other keys or
    /// policy) were dropped.
    Reloaded {
        /// Registered sensors now.
        clients: usize,
        /// The ids revoked.
        revoked: Vec<String>,
    },
    /// The registry file changed but does not load: the registry in use stays.
    ReloadRefused {
        /// Why.
        error: String,
    },
    /// Some other packet (ignored).
    Other,
}

/// Why a well-formed ClientHello was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// A rate limit ([`crate::admission`]).
    RateLimited(Refusal),
    /// A copy of a completed handshake's hello.
    Replayed,
    /// The id already has [`GatewayConfig::max_pending_per_id`] live
    /// pending handshakes, or the gateway [`GatewayConfig::max_pending`].
    PendingFull,
}

/// What the gateway counted since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GatewayStats {
    /// ClientHellos answered with a new BrokerHello (each one decapsulation).
    pub hellos_answered: u64,
    /// Copies of pending hellos answered from memory.
    pub hellos_repeated: u64,
    /// Copies of completed hellos dropped.
    pub hellos_replayed: u64,
    /// Hellos refused by a rate limit.
    pub hellos_rate_limited: u64,
    /// Hellos dropped because the pending table was full.
    pub hellos_pending_full: u64,
    /// Hellos the protocol refused (malformed, unknown id, policy, wrong topic, …).
    pub hellos_rejected: u64,
    /// Handshakes established.
    pub established: u64,
    /// ClientFinished messages that verified against no pending handshake.
    pub finished_invalid: u64,
    /// ClientFinished messages for an id with no pending handshake.
    pub finished_unexpected: u64,
    /// Pending handshakes that timed out.
    pub pending_expired: u64,
    /// Records opened.
    pub records_opened: u64,
    /// Records refused (authentication, replay, unknown client, …).
    pub records_rejected: u64,
    /// Commands sealed to a sensor.
    pub commands_sealed: u64,
    /// Commands for a sensor without a session.
    pub commands_dropped: u64,
    /// ClientFinished messages forwarded to the other instances.
    pub finished_forwarded: u64,
    /// Records and commands of sensors another instance owns, and (with a
    /// [`Shard`]) every message of a sensor outside this instance's shard:
    /// skipped.
    pub not_owned: u64,
    /// Sessions dropped because another instance established a newer one.
    pub superseded: u64,
    /// Owner notices refused: a MAC that does not verify, or a time too far from ours.
    pub notices_refused: u64,
    /// Sessions dropped after [`GatewayConfig::session_idle`] without an authentic record.
    pub sessions_expired: u64,
    /// Messages of an unknown type on a handshake topic.
    pub other_rejected: u64,
    /// Sessions ended because a registry reload revoked their sensor.
    pub sessions_revoked: u64,
}

impl std::fmt::Display for GatewayStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "hellos: {} answered, {} repeated, {} replayed, {} rate-limited, {} pending-full, {} rejected; \
             finished: {} established, {} invalid, {} unexpected; {} pending expired; \
             records: {} opened, {} rejected; commands: {} sealed, {} dropped; \
             cluster: {} forwarded, {} not owned, {} superseded, {} notices refused; {} sessions expired, {} revoked; \
             {} other rejected",
            self.hellos_answered,
            self.hellos_repeated,
            self.hellos_replayed,
            self.hellos_rate_limited,
            self.hellos_pending_full,
            self.hellos_rejected,
            self.established,
            self.finished_invalid,
            self.finished_unexpected,
            self.pending_expired,
            self.records_opened,
            self.records_rejected,
            self.commands_sealed,
            self.commands_dropped,
            self.finished_forwarded,
            self.not_owned,
            self.superseded,
            self.notices_refused,
            self.sessions_expired,
            self.sessions_revoked,
            self.other_rejected
        )
    }
}

/// How far ahead of the receiver's clock an owner notice's epoch may be:
/// the bound on the instances' clock skew (an epoch never runs ahead of the
/// fastest instance's clock by more than a few milliseconds, so a notice
/// further ahead comes from a clock set wrong).
pub const NOTICE_FRESHNESS: Duration = Duration::from_secs(60);

/// The MAC key of a group's owner notices, from the broker's X25519 secret
/// key (every instance loads the same key files).
fn notice_key(state: &BrokerState, group: &str) -> zeroize::Zeroizing<[u8; 32]> {
    let mut key = zeroize::Zeroizing::new([0u8; 32]);
    kem_mqtt::sym::kdf(
        Family::Sha3,
        b"gateway owner notice key",
        &[&state.secrets.x25519_sk[..], group.as_bytes()],
        &mut key[..],
    );
    key
}

/// The MAC of an owner notice: `client_id` established with epoch `time_ms`
/// (Unix milliseconds, or later: see the module documentation) by `instance`.
fn notice_mac(key: &[u8; 32], client_id: &str, instance: &[u8], time_ms: u64) -> [u8; 32] {
    let mut mac = [0u8; 32];
    kem_mqtt::sym::kdf(
        Family::Sha3,
        b"gateway owner notice",
        &[key, client_id.as_bytes(), instance, &time_ms.to_be_bytes()],
        &mut mac,
    );
    mac
}

/// Constant-time equality of two MACs (a forger learns nothing from the time a refusal takes).
fn macs_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One instance of several sharing a fleet (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// The shared-subscription group (`$share/<group>/…`), the same for every instance.
    pub group: String,
    /// This instance's name, unique in the group (also its MQTT client id suffix).
    pub instance: String,
}

impl Cluster {
    /// Checks both names (topic-level safe: 1 to 64 of `A-Z a-z 0-9 . _ -`).
    pub fn new(group: &str, instance: &str) -> Result<Cluster, String> {
        for (what, v) in [("group", group), ("instance", instance)] {
            if !kem_mqtt::valid_client_id(v.as_bytes()) {
                return Err(format!("cluster {what} {v:?}: 1 to 64 of A-Z a-z 0-9 . _ -"));
            }
        }
        Ok(Cluster {
            group: group.into(),
            instance: instance.into(),
        })
    }

    fn finished_topic(&self, client_id: &str) -> String {
        format!("{CLUSTER}{}/finished/{client_id}", self.group)
    }

    fn owner_topic(&self, client_id: &str) -> String {
        format!("{CLUSTER}{}/owner/{client_id}", self.group)
    }

    /// Whether `topic` is one of this group's owner notices (published
    /// retained: the broker keeps the newest per sensor for instances that
    /// start later).
    fn is_owner_topic(&self, topic: &str) -> bool {
        topic
            .strip_prefix(CLUSTER)
            .and_then(|t| t.strip_prefix(self.group.as_str()))
            .is_some_and(|t| t.starts_with("/owner/"))
    }
}

/// One instance of several that split a fleet by sensor id, for brokers
/// without shared subscriptions (RabbitMQ's MQTT plugin): every instance
/// receives every message and handles only those of its shard's sensors,
/// so a sensor's handshake and session always live on one instance, the
/// same one every time. Ids are public, so the split needs no secret; it
/// is fixed, so an instance that is down leaves its shard unserved until
/// it is back (run it under a supervisor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This instance's shard, `0..count`.
    pub index: u32,
    /// How many shards (instances) there are.
    pub count: u32,
}

impl Shard {
    /// `K/N`, with `K < N`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("shard {s:?}: K/N with 0 <= K < N, e.g. 0/3");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether `client_id` is in this shard: FNV-1a of the id, modulo the
    /// shard count (a split every instance computes alike).
    pub fn contains(&self, client_id: &str) -> bool {
        let hash = client_id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        hash % u64::from(self.count) == u64::from(self.index)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Limits of the gateway's state, and where it delivers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayConfig {
    /// Rate limits on new hellos (the per-source limit is unused here).
    pub admission: AdmissionConfig,
    /// How long a pending handshake waits for its ClientFinished.
    pub pending_lifetime: Duration,
    /// Live pending handshakes per id. The default is one more than the
    /// per-id rate limit admits within `pending_lifetime`, so hellos that
    /// others inject under an id can never fill its slots while the
    /// sensor's own handshake is pending.
    pub max_pending_per_id: usize,
    /// Live pending handshakes in all.
    pub max_pending: usize,
    /// Completed hellos remembered per id (their copies are dropped).
    pub remembered_hellos: usize,
    /// A session without an authentic record from its sensor for this long
    /// is dropped, its keys wiped. The gateway cannot see a sensor's MQTT
    /// connection end (the broker does not tell a client), so this, and the
    /// sensor's next handshake, which replaces the session, are what end
    /// one in topic mode.
    pub session_idle: Duration,
    /// Where readings and commands travel for applications.
    pub delivery: Delivery,
    /// `Some`: one instance of several ([`Cluster`]).
    pub cluster: Option<Cluster>,
    /// `Some`: one instance of several that split the fleet by id ([`Shard`]).
    pub shard: Option<Shard>,
    /// The MQTT session: [`Reliability::persistent_session`] and
    /// [`Reliability::acknowledged_publish`] on a clustered broker, so
    /// that a reading survives the loss of the node the gateway is on (a
    /// record redelivered after it was opened is refused by its session's
    /// replay window).
    pub reliability: Reliability,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        let admission = AdmissionConfig::default();
        let pending_lifetime = Duration::from_secs(30);
        let per_id = admission.per_id;
        let refills = pending_lifetime.as_nanos() / per_id.interval.as_nanos().max(1);
        GatewayConfig {
            admission,
            pending_lifetime,
            max_pending_per_id: per_id.burst as usize + refills as usize + 1,
            max_pending: 4096,
            remembered_hellos: 8,
            session_idle: Duration::from_secs(24 * 3600),
            delivery: Delivery::default(),
            cluster: None,
            shard: None,
            reliability: Reliability::default(),
        }
    }
}

/// One handshake awaiting its ClientFinished.
struct Pending {
    state: AwaitClientFinished,
    /// Digest of the ClientHello (to recognise copies).
    hello: [u8; 32],
    broker_hello: Vec<u8>,
    expires: Instant,
}

/// A message for the MQTT side to publish: (topic, payload).
pub type Outgoing = (String, Vec<u8>);

/// The gateway's state and logic without I/O: messages in, events and
/// messages to publish out, time passed in.
pub struct GatewayCore {
    state: Arc<BrokerState>,
    config: GatewayConfig,
    admission: Admission<()>,
    pending: HashMap<String, Vec<Pending>>,
    pending_count: usize,
    completed: HashMap<String, VecDeque<[u8; 32]>>,
    /// Sensor id → (when its sensor was last heard, authentically; the
    /// session's epoch; the session).
    sessions: HashMap<String, (Instant, u64, Session)>,
    /// Sensor id → the largest session epoch seen for it, ours or another
    /// instance's (registered ids only).
    epochs: HashMap<String, u64>,
    /// The owner notices' MAC key (cluster mode).
    notice_key: Option<zeroize::Zeroizing<[u8; 32]>>,
    /// The wall clock at construction, for the owner notices' epochs: an
    /// `Instant` passed in maps to `clock.1 + (instant - clock.0)`.
    clock: (Instant, u64),
    stats: GatewayStats,
    next_sweep: Option<Instant>,
}

/// SHA3-256 (with the protocol's label prefix) of a ClientHello: equal for
/// byte-identical copies only.
fn digest(msg: &[u8]) -> [u8; 32] {
    let mut x = Xof::transcript(Family::Sha3);
    x.absorb(msg);
    x.snapshot()
}

impl GatewayCore {
    /// A gateway with `config`'s limits.
    pub fn new(state: Arc<BrokerState>, config: GatewayConfig) -> Self {
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Self::with_wall_clock(state, config, Instant::now(), unix_ms)
    }

    /// [`GatewayCore::new`] whose wall clock reads `unix_ms` at `at` (tests
    /// give instances clocks that disagree).
    pub fn with_wall_clock(state: Arc<BrokerState>, config: GatewayConfig, at: Instant, unix_ms: u64) -> Self {
        GatewayCore {
            notice_key: config.cluster.as_ref().map(|c| notice_key(&state, &c.group)),
            clock: (at, unix_ms),
            state,
            admission: Admission::new(config.admission),
            config,
            pending: HashMap::new(),
            pending_count: 0,
            completed: HashMap::new(),
            sessions: HashMap::new(),
            epochs: HashMap::new(),
            stats: GatewayStats::default(),
            next_sweep: None,
        }
    }

    /// The counters.
    pub fn stats(&self) -> GatewayStats {
        self.stats
    }

    /// Live pending handshakes of `client_id`.
    pub fn pending(&self, client_id: &str, now: Instant) -> usize {
        self.pending
            .get(client_id)
            .map_or(0, |v| v.iter().filter(|p| p.expires > now).count())
    }

    /// Handles one PUBLISH received on `topic` at `now`; returns what
    /// happened and what to publish.
    pub fn handle(&mut self, topic: &str, payload: &[u8], now: Instant) -> (GatewayEvent, Vec<Outgoing>) {
        self.sweep(now);
        if let Some(cluster) = &self.config.cluster {
            let prefix = format!("{CLUSTER}{}/", cluster.group);
            if let Some(rest) = topic.strip_prefix(&prefix) {
                return match rest.split_once('/') {
                    Some(("finished", id)) => self.client_finished(id.to_string(), payload, now, true),
                    Some(("owner", id)) => (self.owner_notice(id, payload, now), vec![]),
                    _ => (GatewayEvent::Other, vec![]),
                };
            }
        }
        if let Some(shard) = self.config.shard {
            let id = topics::parse_sealed_c2b(topic)
                .map(|(id, _)| id)
                .or_else(|| self.config.delivery.parse_command(topic).map(|(id, _)| id))
                .or_else(|| topics::parse_hs_c2b(topic));
            if id.is_some_and(|id| !shard.contains(id)) {
                self.stats.not_owned += 1;
                return (GatewayEvent::Other, vec![]);
            }
        }
        if let Some((id, sub)) = topics::parse_sealed_c2b(topic) {
            return self.record(id.to_string(), sub.to_string(), topic, payload, now);
        }
        if let Some((id, sub)) = self.config.delivery.parse_command(topic) {
            return self.command(id.to_string(), sub, payload);
        }
        let Some(client_id) = topics::parse_hs_c2b(topic).map(str::to_string) else {
            return (GatewayEvent::Other, vec![]);
        };
        match payload.get(1).copied() {
            Some(MSG_CLIENT_HELLO) => self.client_hello(client_id, payload, now),
            Some(MSG_CLIENT_FINISHED) => self.client_finished(client_id, payload, now, false),
            t => {
                self.stats.other_rejected += 1;
                let error = kem_mqtt::Error::UnexpectedMessage {
                    expected: MSG_CLIENT_HELLO,
                    got: t.unwrap_or(0),
                };
                (GatewayEvent::Rejected { client_id, error }, vec![])
            }
        }
    }

    /// `now` as Unix milliseconds.
    fn unix_ms(&self, now: Instant) -> u64 {
        let (base, base_ms) = self.clock;
        let since = now.saturating_duration_since(base).as_millis() as u64;
        base_ms.saturating_add(since)
    }

    /// The owner notice of a session of `client_id` with epoch `epoch`:
    /// `epoch (u64, Unix ms) ‖ MAC (32) ‖ instance`.
    fn owner_notice_payload(&self, client_id: &str, epoch: u64) -> Option<Vec<u8>> {
        let (cluster, key) = (self.config.cluster.as_ref()?, self.notice_key.as_ref()?);
        let instance = cluster.instance.as_bytes();
        let mut out = epoch.to_be_bytes().to_vec();
        out.extend_from_slice(&notice_mac(key, client_id, instance, epoch));
        out.extend_from_slice(instance);
        Some(out)
    }

    /// The epoch of a session of `client_id` established at `now`: the wall
    /// clock, or one more than the largest epoch seen for the sensor.
    fn next_epoch(&mut self, client_id: &str, now: Instant) -> u64 {
        let seen = self.epochs.get(client_id).copied().unwrap_or(0);
        let epoch = self.unix_ms(now).max(seen.saturating_add(1));
        self.epochs.insert(client_id.to_string(), epoch);
        epoch
    }

    /// Another instance announced a session of `client_id`: its epoch is
    /// learnt, and ours goes if the notice verifies and its session is the
    /// newer one (a larger epoch; equal epochs are ordered by instance name).
    fn owner_notice(&mut self, client_id: &str, payload: &[u8], now: Instant) -> GatewayEvent {
        let (Some(cluster), Some(key)) = (self.config.cluster.as_ref(), self.notice_key.as_ref()) else {
            return GatewayEvent::Other;
        };
        let (Some(epoch), Some(mac), Some(instance)) = (payload.get(..8), payload.get(8..40), payload.get(40..)) else {
            self.stats.notices_refused += 1;
            return GatewayEvent::Other;
        };
        if instance == cluster.instance.as_bytes() {
            return GatewayEvent::Other; // our own, back from the broker
        }
        let mut e = [0u8; 8];
        e.copy_from_slice(epoch);
        let epoch = u64::from_be_bytes(e);
        let mut got = [0u8; 32];
        got.copy_from_slice(mac);
        let ahead = epoch.saturating_sub(self.unix_ms(now));
        if !macs_equal(&got, &notice_mac(key, client_id, instance, epoch))
            || ahead > NOTICE_FRESHNESS.as_millis() as u64
            || self.state.client(client_id.as_bytes()).is_none()
        {
            self.stats.notices_refused += 1;
            return GatewayEvent::Other;
        }
        let seen = self.epochs.entry(client_id.to_string()).or_insert(0);
        *seen = (*seen).max(epoch);
        // The sensor proved its key to another instance: it is a returning
        // one here too (the broker hands its next hello to either).
        self.admission.completed(client_id.as_bytes(), None, now);
        let ours = cluster.instance.as_bytes();
        match self.sessions.get(client_id) {
            Some((_, our_epoch, _)) if (*our_epoch, ours) < (epoch, instance) => {
                self.sessions.remove(client_id);
                self.stats.superseded += 1;
                GatewayEvent::Superseded {
                    client_id: client_id.to_string(),
                }
            }
            _ => GatewayEvent::Other,
        }
    }

    fn client_hello(&mut self, client_id: String, msg: &[u8], now: Instant) -> (GatewayEvent, Vec<Outgoing>) {
        let rejected = |stats: &mut GatewayStats, client_id, error| {
            stats.hellos_rejected += 1;
            (GatewayEvent::Rejected { client_id, error }, vec![])
        };
        // The checks that cost nothing, first: a hello that fails them never
        // takes a token, so garbage cannot drain a sensor's bucket.
        let suite = match self.cheap_checks(&client_id, msg) {
            Ok(s) => s,
            Err(error) => return rejected(&mut self.stats, client_id, error),
        };
        let d = digest(msg);
        if let Some(p) = self
            .pending
            .get(&client_id)
            .and_then(|v| v.iter().find(|p| p.hello == d && p.expires > now))
        {
            self.stats.hellos_repeated += 1;
            let out = vec![(hs_b2c(&client_id), p.broker_hello.clone())];
            return (GatewayEvent::HelloRepeated { client_id }, out);
        }
        if self.completed.get(&client_id).is_some_and(|v| v.contains(&d)) {
            self.stats.hellos_replayed += 1;
            let reason = DropReason::Replayed;
            return (GatewayEvent::Dropped { client_id, reason }, vec![]);
        }
        let live = self.pending(&client_id, now);
        if live >= self.config.max_pending_per_id || self.pending_count >= self.config.max_pending {
            self.stats.hellos_pending_full += 1;
            let reason = DropReason::PendingFull;
            return (GatewayEvent::Dropped { client_id, reason }, vec![]);
        }
        if let Err(r) = self.admission.admit(client_id.as_bytes(), None, now) {
            self.stats.hellos_rate_limited += 1;
            let reason = DropReason::RateLimited(r);
            return (GatewayEvent::Dropped { client_id, reason }, vec![]);
        }
        let mut buf = vec![0u8; MAX_BROKER_HELLO_LEN];
        match BrokerHandshake::accept(&*self.state, msg, &mut OsRng, &mut buf) {
            Ok((state, n)) => {
                debug_assert_eq!(state.suite(), suite);
                buf.truncate(n);
                let slot = self.pending.entry(client_id.clone()).or_default();
                // Expired states of this id make room first.
                let before = slot.len();
                slot.retain(|p| p.expires > now);
                self.stats.pending_expired += (before - slot.len()) as u64;
                self.pending_count -= before - slot.len();
                slot.push(Pending {
                    state,
                    hello: d,
                    broker_hello: buf.clone(),
                    expires: now + self.config.pending_lifetime,
                });
                self.pending_count += 1;
                self.stats.hellos_answered += 1;
                let out = vec![(hs_b2c(&client_id), buf)];
                (
                    GatewayEvent::HelloAnswered {
                        client_id,
                        broker_hello: n,
                    },
                    out,
                )
            }
            Err(error) => rejected(&mut self.stats, client_id, error),
        }
    }

    /// Format, topic id = hello id, registered id, allowed suite, the
    /// ephemeral key's import check: no secret key, no KEM work.
    fn cheap_checks(&self, topic_id: &str, msg: &[u8]) -> Result<Suite, kem_mqtt::Error> {
        let (_, id) = BrokerHandshake::peek(msg)?;
        // The client id inside the hello must be the one in the topic.
        if id != topic_id.as_bytes() {
            return Err(kem_mqtt::Error::InvalidClientId);
        }
        BrokerHandshake::screen(&*self.state, msg).map(|(suite, _)| suite)
    }

    /// A ClientFinished, from the handshake topic or (`forwarded`) from
    /// another instance.
    fn client_finished(
        &mut self,
        client_id: String,
        msg: &[u8],
        now: Instant,
        forwarded: bool,
    ) -> (GatewayEvent, Vec<Outgoing>) {
        // Verify first, against every live state of the id, each left in place.
        let mut error = None;
        let mut verified = None;
        for p in self
            .pending
            .get(&client_id)
            .into_iter()
            .flatten()
            .filter(|p| p.expires > now)
        {
            match p.state.check_client_finished(msg) {
                Ok(session) => {
                    verified = Some((session, p.state.suite(), p.hello));
                    break;
                }
                Err(e) => error = Some(e),
            }
        }
        let Some((mut session, suite, hello)) = verified else {
            if let Some(cluster) = &self.config.cluster {
                // No handshake here verifies it: another instance may hold
                // the one it belongs to, whatever this one holds for the id.
                // A forwarded one is never forwarded again.
                if forwarded {
                    return (GatewayEvent::Other, vec![]);
                }
                self.stats.finished_forwarded += 1;
                let out = vec![(cluster.finished_topic(&client_id), msg.to_vec())];
                return (GatewayEvent::Forwarded { client_id }, out);
            }
            let error = match error {
                Some(e) => {
                    self.stats.finished_invalid += 1;
                    e
                }
                None => {
                    self.stats.finished_unexpected += 1;
                    kem_mqtt::Error::UnexpectedMessage {
                        expected: MSG_CLIENT_HELLO,
                        got: MSG_CLIENT_FINISHED,
                    }
                }
            };
            return (GatewayEvent::Rejected { client_id, error }, vec![]);
        };
        // Verified: the id's other pending handshakes were someone else's
        // (or older attempts of the sensor), and go.
        if let Some(v) = self.pending.remove(&client_id) {
            self.pending_count -= v.len();
        }
        let memory = self.completed.entry(client_id.clone()).or_default();
        memory.push_back(hello);
        while memory.len() > self.config.remembered_hellos {
            memory.pop_front();
        }
        // The owner notice goes out before the confirmation: the sensor
        // learns its session exists (and may start its next handshake) only
        // after every instance could have learnt this session's epoch.
        let epoch = self.next_epoch(&client_id, now);
        let mut out = vec![];
        if let (Some(cluster), Some(notice)) = (
            self.config.cluster.as_ref(),
            self.owner_notice_payload(&client_id, epoch),
        ) {
            out.push((cluster.owner_topic(&client_id), notice));
        }
        // The confirmation: an empty record, the session's first b2c record.
        let topic = data_b2c(&client_id);
        let mut rec = vec![0u8; RECORD_OVERHEAD];
        if let Ok(n) = session.seal(topic.as_bytes(), &[], &mut rec) {
            rec.truncate(n);
            out.push((topic, rec));
        }
        self.sessions.insert(client_id.clone(), (now, epoch, session));
        self.admission.completed(client_id.as_bytes(), None, now);
        self.stats.established += 1;
        (GatewayEvent::Established { client_id, suite }, out)
    }

    fn record(
        &mut self,
        client_id: String,
        sub: String,
        topic: &str,
        payload: &[u8],
        now: Instant,
    ) -> (GatewayEvent, Vec<Outgoing>) {
        let Some((heard, _, s)) = self.sessions.get_mut(&client_id) else {
            if self.config.cluster.is_some() {
                // Another instance's sensor (or nobody's: each instance
                // sees every record, only the owner can tell).
                self.stats.not_owned += 1;
                return (GatewayEvent::Other, vec![]);
            }
            self.stats.records_rejected += 1;
            let error = kem_mqtt::Error::UnknownClient;
            return (GatewayEvent::Rejected { client_id, error }, vec![]);
        };
        let mut pt = vec![0u8; payload.len().saturating_sub(RECORD_OVERHEAD)];
        match s.open(topic.as_bytes(), payload, &mut pt) {
            Ok(n) => {
                *heard = now;
                pt.truncate(n);
                self.stats.records_opened += 1;
                let out = vec![(self.config.delivery.plain_topic(&client_id, &sub), pt.clone())];
                (
                    GatewayEvent::Message {
                        client_id,
                        sub,
                        payload: pt,
                    },
                    out,
                )
            }
            Err(error) => {
                self.stats.records_rejected += 1;
                (GatewayEvent::Rejected { client_id, error }, vec![])
            }
        }
    }

    /// An application's command for `client_id`: sealed under its session
    /// to `kem-mqtt/data/b2c/<id>[/<sub>]`.
    fn command(&mut self, client_id: String, sub: &str, payload: &[u8]) -> (GatewayEvent, Vec<Outgoing>) {
        let Some((_, _, s)) = self.sessions.get_mut(&client_id) else {
            if self.config.cluster.is_some() {
                self.stats.not_owned += 1;
            } else {
                self.stats.commands_dropped += 1;
            }
            return (GatewayEvent::Other, vec![]);
        };
        let topic = topics::sealed_b2c(&client_id, sub);
        let mut rec = vec![0u8; payload.len() + RECORD_OVERHEAD];
        match s.seal(topic.as_bytes(), payload, &mut rec) {
            Ok(n) => {
                rec.truncate(n);
                self.stats.commands_sealed += 1;
                let sub = sub.to_string();
                (GatewayEvent::Command { client_id, sub }, vec![(topic, rec)])
            }
            Err(error) => {
                self.stats.commands_dropped += 1;
                (GatewayEvent::Rejected { client_id, error }, vec![])
            }
        }
    }

    /// Drops expired pending handshakes (at most once a second: the table
    /// is bounded, and expired states are also skipped where they are read).
    fn sweep(&mut self, now: Instant) {
        if self.next_sweep.is_some_and(|t| now < t) {
            return;
        }
        self.next_sweep = Some(now + Duration::from_secs(1));
        let mut expired = 0;
        self.pending.retain(|_, v| {
            let before = v.len();
            v.retain(|p| p.expires > now);
            expired += before - v.len();
            !v.is_empty()
        });
        self.pending_count -= expired;
        self.stats.pending_expired += expired as u64;
        let idle = self.config.session_idle;
        let before = self.sessions.len();
        // Dropping a session wipes its keys.
        self.sessions
            .retain(|_, (heard, _, _)| now.saturating_duration_since(*heard) < idle);
        self.stats.sessions_expired += (before - self.sessions.len()) as u64;
    }

    /// Established sessions.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Handshakes awaiting their ClientFinished (expired ones included
    /// until a hello of their id or the next sweep drops them).
    pub fn pending_handshakes(&self) -> usize {
        self.pending_count
    }

    /// Puts a new registry in place (the broker's keys stay) and drops the
    /// sessions, pending handshakes and rate-limit standing of every id it
    /// revokes: gone, or with other keys or policy. Returns those ids.
    pub fn replace_registry(&mut self, registry: Registry) -> Vec<String> {
        let revoked = self.state.registry.changed_ids(&registry);
        self.state = Arc::new(BrokerState {
            secrets: self.state.secrets.clone(),
            registry,
        });
        for id in &revoked {
            if let Some(v) = self.pending.remove(id) {
                self.pending_count -= v.len();
            }
            if self.sessions.remove(id).is_some() {
                self.stats.sessions_revoked += 1;
            }
            self.completed.remove(id);
            self.epochs.remove(id);
        }
        revoked
    }

    /// Registered sensors.
    pub fn clients(&self) -> usize {
        self.state.registry.clients.len()
    }

    /// Whether an outgoing message on `topic` is published retained.
    pub fn retained(&self, topic: &str) -> bool {
        self.config.cluster.as_ref().is_some_and(|c| c.is_owner_topic(topic))
    }

    /// Seals `payload` for `client_id`: the record topic and the record.
    pub fn seal(&mut self, client_id: &str, payload: &[u8]) -> Result<Outgoing, HostError> {
        let (_, _, s) = self
            .sessions
            .get_mut(client_id)
            .ok_or(HostError::Protocol(kem_mqtt::Error::UnknownClient))?;
        let topic = data_b2c(client_id);
        let mut rec = vec![0u8; payload.len() + RECORD_OVERHEAD];
        let n = s.seal(topic.as_bytes(), payload, &mut rec)?;
        rec.truncate(n);
        Ok((topic, rec))
    }
}

/// A [`Gateway`] serving on a thread of its own ([`Gateway::spawn`]).
pub struct GatewayThread {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<GatewayStats, HostError>>,
}

impl GatewayThread {
    /// Stops the thread (within 100 ms) and returns the gateway's counters,
    /// or the error that ended it earlier (its broker connection failed).
    pub fn stop(self) -> Result<GatewayStats, HostError> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .join()
            .map_err(|_| HostError::Unexpected("the gateway thread panicked".into()))?
    }
}

/// The gateway service: a [`GatewayCore`] on an MQTT connection
/// ([`MqttClient`], over TCP or TLS).
pub struct Gateway {
    conn: MqttClient,
    core: GatewayCore,
    /// The registry file, if it is watched ([`Gateway::watch_registry`]).
    watch: Option<RegistryWatch>,
    /// A message received just as the registry changed: handled at the
    /// next poll, under the new registry, after the reload is reported.
    held: Option<(String, Vec<u8>)>,
    /// The poll timeout, kept for a new connection ([`Gateway::reconnect`]).
    conn_timeout: Option<Duration>,
    /// Messages to publish that a lost connection left unpublished.
    unsent: VecDeque<Outgoing>,
}

impl Gateway {
    /// Connects to the broker at `addr` (an address, or an [`Endpoint`]
    /// with TLS) as `kem-mqtt-gateway` and subscribes (default limits).
    pub fn connect(addr: impl Into<Endpoint>, state: Arc<BrokerState>) -> Result<Self, HostError> {
        Self::connect_with(addr, state, GatewayConfig::default())
    }

    /// [`Gateway::connect`] with `config`'s limits.
    ///
    /// Subscribes to the handshake topic (shared, `$share/<group>/…`, in
    /// cluster mode), every sensor's records, every command and (cluster
    /// mode) the group's cluster topics; the client id is
    /// `kem-mqtt-gateway` or `kem-mqtt-gateway-<instance>`.
    pub fn connect_with(
        addr: impl Into<Endpoint>,
        state: Arc<BrokerState>,
        config: GatewayConfig,
    ) -> Result<Self, HostError> {
        Self::connect_login(addr, state, config, None)
    }

    /// [`Gateway::connect_with`], logging in with `(username, password)`
    /// (a broker whose ACL lets only gateways write `plain/#`).
    pub fn connect_login(
        addr: impl Into<Endpoint>,
        state: Arc<BrokerState>,
        config: GatewayConfig,
        login: Option<(&str, &str)>,
    ) -> Result<Self, HostError> {
        Self::connect_core(addr, GatewayCore::new(state, config), login)
    }

    /// [`Gateway::connect_login`] around a core made by the caller (e.g.
    /// [`GatewayCore::with_wall_clock`]).
    pub fn connect_core(
        addr: impl Into<Endpoint>,
        core: GatewayCore,
        login: Option<(&str, &str)>,
    ) -> Result<Self, HostError> {
        let conn = Self::subscribed(&addr.into(), &core.config, login)?;
        Ok(Gateway {
            conn,
            core,
            watch: None,
            held: None,
            conn_timeout: Some(Duration::from_secs(10)),
            unsent: VecDeque::new(),
        })
    }

    /// The client id of an instance with `config`: stable, so that a
    /// persistent session is found again after a reconnection.
    fn client_id(config: &GatewayConfig) -> String {
        match (&config.cluster, config.shard) {
            (Some(c), _) => format!("kem-mqtt-gateway-{}", c.instance),
            (None, Some(s)) => format!("kem-mqtt-gateway-shard-{}-of-{}", s.index, s.count),
            (None, None) => "kem-mqtt-gateway".to_string(),
        }
    }

    /// A connection to `endpoint` subscribed to what `config` serves.
    fn subscribed(
        endpoint: &Endpoint,
        config: &GatewayConfig,
        login: Option<(&str, &str)>,
    ) -> Result<MqttClient, HostError> {
        let commands = config.delivery.command_filter();
        let records = topics::sealed_c2b("+", "#");
        let filters = match &config.cluster {
            None => vec![format!("{HS}+/c2b"), records, commands],
            Some(c) => vec![
                format!("$share/{}/{HS}+/c2b", c.group),
                format!("{CLUSTER}{}/+/+", c.group),
                records,
                commands,
            ],
        };
        let client_id = Self::client_id(config);
        let mut conn =
            MqttClient::connect_with(endpoint, &client_id, login, Duration::from_secs(10), config.reliability)?;
        let filters: Vec<&str> = filters.iter().map(String::as_str).collect();
        conn.subscribe(&filters)?;
        Ok(conn)
    }

    /// A new connection to `addr` (another node of a clustered broker,
    /// after the one in use failed), keeping the gateway's handshakes and
    /// sessions. With a persistent session
    /// ([`GatewayConfig::reliability`]) the broker delivers what arrived
    /// meanwhile, and again what was delivered but not acknowledged.
    pub fn reconnect(&mut self, addr: impl Into<Endpoint>, login: Option<(&str, &str)>) -> Result<(), HostError> {
        let timeout = self.conn_timeout;
        let _ = self.conn.close();
        let mut conn = Self::subscribed(&addr.into(), &self.core.config, login)?;
        conn.set_timeout(timeout);
        self.conn = conn;
        Ok(())
    }

    /// Sets how long [`Gateway::poll`] waits (`None`: forever). The client
    /// keeps the connection alive (PINGREQ) while it waits.
    pub fn set_timeout(&mut self, t: Option<Duration>) {
        self.conn_timeout = t;
        self.conn.set_timeout(t);
    }

    /// The counters.
    pub fn stats(&self) -> GatewayStats {
        self.core.stats()
    }

    /// Established sessions ([`GatewayCore::sessions`]).
    pub fn sessions(&self) -> usize {
        self.core.sessions()
    }

    /// Registered sensors ([`GatewayCore::clients`]).
    pub fn clients(&self) -> usize {
        self.core.clients()
    }

    /// Pending handshakes ([`GatewayCore::pending_handshakes`]).
    pub fn pending_handshakes(&self) -> usize {
        self.core.pending_handshakes()
    }

    /// Serves on a thread of its own, every packet handled as
    /// [`Gateway::poll`] does (events are counted, not returned), until
    /// [`GatewayThread::stop`].
    pub fn spawn(mut self) -> Result<GatewayThread, HostError> {
        self.set_timeout(Some(Duration::from_millis(100)));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("kem-mqtt-gateway".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    match self.poll() {
                        Ok(_) | Err(HostError::Timeout) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(self.stats())
            })?;
        Ok(GatewayThread { stop, thread })
    }

    /// Watches the registry file `watch` was loaded from: when it changes,
    /// [`Gateway::poll`] puts the new registry in place
    /// ([`GatewayCore::replace_registry`]) and returns
    /// [`GatewayEvent::Reloaded`] (revocation without a restart).
    pub fn watch_registry(&mut self, watch: RegistryWatch) {
        self.watch = Some(watch);
    }

    /// A changed registry file, put in place (one `stat` a call).
    fn reload_if_changed(&mut self) -> Option<GatewayEvent> {
        let loaded = self.watch.as_mut()?.poll_now()?;
        Some(match loaded {
            Ok(registry) => {
                let revoked = self.core.replace_registry(registry);
                GatewayEvent::Reloaded {
                    clients: self.core.clients(),
                    revoked,
                }
            }
            Err(e) => GatewayEvent::ReloadRefused { error: e.to_string() },
        })
    }

    /// Puts a changed registry file in place, or handles the next packet.
    ///
    /// The registry file is looked at before every message is handled, not
    /// only before the wait for it: `recv` may wait for the whole poll
    /// timeout, and a sensor revoked meanwhile must not have its record
    /// opened nor a command sealed to it. A message that arrives as the
    /// file changes is kept and handled at the next poll, under the new
    /// registry, after this one reports the reload.
    pub fn poll(&mut self) -> Result<GatewayEvent, HostError> {
        self.flush()?;
        if let Some(event) = self.reload_if_changed() {
            return Ok(event);
        }
        let (topic, payload) = match self.held.take() {
            Some(message) => message,
            None => self.conn.recv()?,
        };
        if let Some(event) = self.reload_if_changed() {
            self.held = Some((topic, payload));
            return Ok(event);
        }
        let (event, out) = self.core.handle(&topic, &payload, Instant::now());
        self.unsent.extend(out);
        self.flush()?;
        Ok(event)
    }

    /// Publishes what handling a message produced. What a lost connection
    /// left unpublished stays, and goes first on the next poll, before the
    /// message is acknowledged (persistent sessions): the record it came
    /// from was opened, so a redelivered copy is refused as a replay and
    /// would not produce it again.
    fn flush(&mut self) -> Result<(), HostError> {
        while let Some((topic, payload)) = self.unsent.front() {
            if self.core.retained(topic) {
                self.conn.publish_retained(topic, payload)?;
            } else {
                self.conn.publish(topic, payload)?;
            }
            self.unsent.pop_front();
        }
        Ok(())
    }

    /// Seals `payload` for `client_id` and publishes it on `kem-mqtt/data/b2c/<id>`
    /// (as a command on `cmd/<id>` would be).
    pub fn send(&mut self, client_id: &str, payload: &[u8]) -> Result<usize, HostError> {
        let (topic, rec) = self.core.seal(client_id, payload)?;
        self.conn.publish(&topic, &rec)?;
        Ok(rec.len())
    }
}
