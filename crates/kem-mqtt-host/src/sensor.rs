//! The sensor side over MQTT: topic mode and AUTH mode (MQTT v5 enhanced authentication).

use std::time::{Duration, Instant};

use crate::OsRng;
use kem_mqtt::{SensorHandshake, Session, Suite, AUTH_METHOD, MAX_CLIENT_HELLO_LEN, RECORD_OVERHEAD};

use crate::client::{MqttClient, Reliability};
use crate::keys::SensorKeys;
use crate::mqtt::{self, Connection, Packet};
use crate::topics::{sealed_b2c, sealed_c2b};
use crate::transport::Endpoint;
use crate::{data_b2c, data_c2b, hs_b2c, hs_c2b, HostError};

/// What one handshake cost.
#[derive(Clone, Copy, Debug)]
pub struct HandshakeStats {
    /// The suite.
    pub suite: Suite,
    /// ClientHello bytes.
    pub client_hello: usize,
    /// BrokerHello bytes.
    pub broker_hello: usize,
    /// ClientFinished bytes.
    pub client_finished: usize,
    /// Time the sensor spent computing (both of its steps).
    pub sensor_compute: Duration,
    /// Wall time from the first byte sent to the established session.
    pub total: Duration,
}

/// The sensor's MQTT connection: topic mode on the maintained client,
/// AUTH mode on this crate's codec (the only one here that carries
/// enhanced authentication).
enum Link {
    Topic(Box<MqttClient>),
    Auth(Connection),
}

impl Link {
    fn publish(&mut self, topic: &str, payload: &[u8]) -> Result<(), HostError> {
        match self {
            Link::Topic(c) => c.publish(topic, payload),
            Link::Auth(c) => Ok(c.publish(topic, payload)?),
        }
    }

    fn subscribe(&mut self, filters: &[&str]) -> Result<(), HostError> {
        match self {
            Link::Topic(c) => c.subscribe(filters),
            Link::Auth(c) => Ok(c.subscribe(2, filters)?),
        }
    }

    fn recv(&mut self) -> Result<(String, Vec<u8>), HostError> {
        match self {
            Link::Topic(c) => c.recv(),
            Link::Auth(c) => loop {
                match c.recv()? {
                    Packet::Publish { topic, payload } => return Ok((topic, payload)),
                    Packet::PingResp => {}
                    other => return Err(HostError::Unexpected(format!("{other:?}"))),
                }
            },
        }
    }

    fn set_timeout(&mut self, timeout: Duration) -> Result<(), HostError> {
        match self {
            Link::Topic(c) => {
                c.set_timeout(Some(timeout));
                Ok(())
            }
            Link::Auth(c) => Ok(c.set_timeout(Some(timeout))?),
        }
    }

    fn disconnect(self) -> Result<(), HostError> {
        match self {
            Link::Topic(c) => (*c).disconnect(),
            Link::Auth(mut c) => Ok(c.send(&Packet::Disconnect { reason: 0 })?),
        }
    }
}

/// A sensor with an established session.
pub struct SensorClient {
    conn: Link,
    session: Session,
    client_id: String,
    /// Records from the gateway opened while waiting for the confirmation: (sub, plaintext).
    early: std::collections::VecDeque<(String, Vec<u8>)>,
    /// Records on this sensor's broker → sensor topics that did not open.
    dropped: u64,
    /// Handshake sizes and timings.
    pub stats: HandshakeStats,
}

impl std::fmt::Debug for SensorClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SensorClient")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl SensorClient {
    /// Topic mode: plain MQTT CONNECT, then the three flights as PUBLISH
    /// payloads on `kem-mqtt/hs/<id>/…`, answered by a gateway, then the
    /// gateway's confirmation: the session's first record on
    /// `kem-mqtt/data/b2c/<id>` (empty), which only a gateway that verified
    /// this ClientFinished can seal.
    ///
    /// [`HostError::Timeout`] if no BrokerHello or no confirmation arrives
    /// within `timeout` (each): the gateway dropped or refused a flight, or
    /// its pending state expired, and it holds no session for this sensor —
    /// records sent anyway would be lost. Start a new handshake
    /// ([`SensorClient::connect_topic_mode_retrying`]).
    pub fn connect_topic_mode(
        addr: impl Into<Endpoint>,
        keys: &SensorKeys,
        timeout: Duration,
    ) -> Result<Self, HostError> {
        Self::connect_topic_mode_with(addr, keys, timeout, Reliability::default())
    }

    /// [`SensorClient::connect_topic_mode`] on a client with `reliability`
    /// (with [`Reliability::acknowledged_publish`], every record waits for
    /// the broker's PUBACK: see [`SensorClient::reconnect`]).
    pub fn connect_topic_mode_with(
        addr: impl Into<Endpoint>,
        keys: &SensorKeys,
        timeout: Duration,
        reliability: Reliability,
    ) -> Result<Self, HostError> {
        let mut conn = Self::topic_link(&addr.into(), &keys.client_id, timeout, reliability)?;
        let start = Instant::now();
        let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
        let t = Instant::now();
        let (state, ch) = SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf)?;
        let mut compute = t.elapsed();
        conn.publish(&hs_c2b(&keys.client_id), &buf[..ch])?;
        let bh = loop {
            let (topic, payload) = conn.recv()?;
            if topic == hs_b2c(&keys.client_id) {
                break payload;
            }
        };
        let t = Instant::now();
        let (mut session, cf) = state.receive_broker_hello(&bh, &mut buf)?;
        compute += t.elapsed();
        conn.publish(&hs_c2b(&keys.client_id), &buf[..cf])?;
        // Wait for the confirmation; records that do not open (someone
        // else's, on a topic anyone can publish to) are skipped.
        let data = data_b2c(&keys.client_id);
        let deadline = Instant::now() + timeout;
        let mut early = std::collections::VecDeque::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(HostError::Timeout);
            }
            conn.set_timeout(Some(left));
            let (topic, payload) = conn.recv()?;
            if topic != data {
                continue;
            }
            // The confirmation is empty; anything else is a command that
            // overtook it.
            let mut pt = vec![0u8; payload.len().saturating_sub(RECORD_OVERHEAD)];
            if let Ok(n) = session.open(topic.as_bytes(), &payload, &mut pt) {
                if n > 0 {
                    pt.truncate(n);
                    early.push_back((String::new(), pt));
                }
                break;
            }
        }
        conn.set_timeout(Some(timeout));
        let conn = Link::Topic(Box::new(conn));
        Ok(SensorClient {
            conn,
            session,
            client_id: keys.client_id.clone(),
            early,
            dropped: 0,
            stats: HandshakeStats {
                suite: keys.suite,
                client_hello: ch,
                broker_hello: bh.len(),
                client_finished: cf,
                sensor_compute: compute,
                total: start.elapsed(),
            },
        })
    }

    /// A topic-mode connection subscribed to the sensor's handshake and
    /// broker → sensor topics.
    fn topic_link(
        endpoint: &Endpoint,
        client_id: &str,
        timeout: Duration,
        reliability: Reliability,
    ) -> Result<MqttClient, HostError> {
        let mut conn = MqttClient::connect_with(endpoint, client_id, None, timeout, reliability)?;
        // `…/b2c/<id>/#` also matches `…/b2c/<id>` itself (the
        // confirmation): one filter, or overlapping ones would deliver each
        // record twice.
        let sealed = sealed_b2c(client_id, "#");
        conn.subscribe(&[&hs_b2c(client_id), &sealed])?;
        Ok(conn)
    }

    /// Topic mode: a new MQTT connection to `addr` (another node of a
    /// clustered broker, after the one in use failed), keeping the
    /// session: the gateway's session does not depend on which broker
    /// node carries the records. A record whose publish failed may be
    /// published again as it was sealed ([`SensorClient::seal_on`],
    /// [`SensorClient::publish_raw`]): if the broker had it after all, the
    /// gateway's replay window refuses the copy.
    pub fn reconnect(&mut self, addr: impl Into<Endpoint>, timeout: Duration) -> Result<(), HostError> {
        let Link::Topic(old) = &mut self.conn else {
            return Err(HostError::Unexpected("reconnect is for topic mode".into()));
        };
        let reliability = old.reliability();
        // A dead connection fails at once; a live one ends before the new
        // one starts under the same client id.
        let _ = old.close();
        let conn = Self::topic_link(&addr.into(), &self.client_id, timeout, reliability)?;
        self.conn = Link::Topic(Box::new(conn));
        Ok(())
    }

    /// [`SensorClient::connect_topic_mode`], up to `attempts` times while it
    /// times out (each attempt a new connection and a new handshake, one
    /// second apart); the last error otherwise.
    pub fn connect_topic_mode_retrying(
        addr: impl Into<Endpoint>,
        keys: &SensorKeys,
        timeout: Duration,
        attempts: u32,
    ) -> Result<Self, HostError> {
        let addr = addr.into();
        let mut last = HostError::Timeout;
        for i in 0..attempts.max(1) {
            if i > 0 {
                std::thread::sleep(Duration::from_secs(1));
            }
            match Self::connect_topic_mode(&addr, keys, timeout) {
                Err(HostError::Timeout) => last = HostError::Timeout,
                r => return r,
            }
        }
        Err(last)
    }

    /// AUTH mode: CONNECT carries the ClientHello as Authentication Data,
    /// AUTH (0x18) the BrokerHello and the ClientFinished; CONNACK 0x00
    /// establishes the session, any other reason code is [`HostError::Refused`].
    pub fn connect_auth_mode(
        addr: impl Into<Endpoint>,
        keys: &SensorKeys,
        timeout: Duration,
    ) -> Result<Self, HostError> {
        Self::connect_auth_mode_with(addr, keys, timeout, |_, _| {})
    }

    /// [`SensorClient::connect_auth_mode`] with a hook that may modify each
    /// outgoing flight (1 and 3) — for negative tests.
    pub fn connect_auth_mode_with(
        addr: impl Into<Endpoint>,
        keys: &SensorKeys,
        timeout: Duration,
        mut tamper: impl FnMut(u8, &mut Vec<u8>),
    ) -> Result<Self, HostError> {
        let mut conn = Connection::open(&addr.into())?;
        conn.set_timeout(Some(timeout))?;
        let start = Instant::now();
        let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
        let t = Instant::now();
        let (state, ch) = SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf)?;
        let mut compute = t.elapsed();
        let mut flight1 = buf[..ch].to_vec();
        tamper(1, &mut flight1);
        conn.send(&Packet::Connect {
            client_id: keys.client_id.clone(),
            keep_alive: 60,
            auth_method: Some(AUTH_METHOD.into()),
            auth_data: Some(flight1),
        })?;
        let bh = match conn.recv()? {
            Packet::Auth {
                reason: mqtt::CONTINUE_AUTHENTICATION,
                auth_data: Some(d),
                ..
            } => d,
            Packet::ConnAck { reason, .. } => return Err(HostError::Refused(reason)),
            other => return Err(HostError::Unexpected(format!("{other:?}"))),
        };
        let t = Instant::now();
        let (session, cf) = state.receive_broker_hello(&bh, &mut buf)?;
        compute += t.elapsed();
        let mut flight3 = buf[..cf].to_vec();
        tamper(3, &mut flight3);
        conn.send(&Packet::Auth {
            reason: mqtt::CONTINUE_AUTHENTICATION,
            auth_method: Some(AUTH_METHOD.into()),
            auth_data: Some(flight3),
        })?;
        match conn.recv()? {
            Packet::ConnAck {
                reason: mqtt::SUCCESS, ..
            } => {}
            Packet::ConnAck { reason, .. } => return Err(HostError::Refused(reason)),
            other => return Err(HostError::Unexpected(format!("{other:?}"))),
        }
        Ok(SensorClient {
            conn: Link::Auth(conn),
            session,
            client_id: keys.client_id.clone(),
            early: std::collections::VecDeque::new(),
            dropped: 0,
            stats: HandshakeStats {
                suite: keys.suite,
                client_hello: ch,
                broker_hello: bh.len(),
                client_finished: cf,
                sensor_compute: compute,
                total: start.elapsed(),
            },
        })
    }

    /// Seals `payload` as a record bound to `topic` and publishes it there.
    pub fn publish_record(&mut self, topic: &str, payload: &[u8]) -> Result<usize, HostError> {
        let mut rec = vec![0u8; payload.len() + RECORD_OVERHEAD];
        let n = self.session.seal(topic.as_bytes(), payload, &mut rec)?;
        self.conn.publish(topic, &rec[..n])?;
        Ok(n)
    }

    /// Seals `payload` for `kem-mqtt/data/c2b/<id>/<sub>` without sending
    /// it: (topic, record), for [`SensorClient::publish_raw`], which may
    /// send it more than once.
    pub fn seal_on(&mut self, sub: &str, payload: &[u8]) -> Result<(String, Vec<u8>), HostError> {
        let topic = sealed_c2b(&self.client_id, sub);
        let mut rec = vec![0u8; payload.len() + RECORD_OVERHEAD];
        let n = self.session.seal(topic.as_bytes(), payload, &mut rec)?;
        rec.truncate(n);
        Ok((topic, rec))
    }

    /// Sends `payload` on `kem-mqtt/data/c2b/<id>`; returns the record size.
    pub fn send(&mut self, payload: &[u8]) -> Result<usize, HostError> {
        let topic = data_c2b(&self.client_id);
        self.publish_record(&topic, payload)
    }

    /// Sends `payload` on `kem-mqtt/data/c2b/<id>/<sub>` (delivered to
    /// applications on `plain/<id>/<sub>`); returns the record size.
    pub fn send_on(&mut self, sub: &str, payload: &[u8]) -> Result<usize, HostError> {
        let topic = sealed_c2b(&self.client_id, sub);
        self.publish_record(&topic, payload)
    }

    /// Publishes `payload` as it is on `topic` (a record from
    /// [`SensorClient::seal_on`]; unsealed bytes in negative tests).
    pub fn publish_raw(&mut self, topic: &str, payload: &[u8]) -> Result<(), HostError> {
        self.conn.publish(topic, payload)
    }

    /// Subscribes to more topics.
    pub fn subscribe(&mut self, filters: &[&str]) -> Result<(), HostError> {
        self.conn.subscribe(filters)
    }

    /// Waits for the next PUBLISH on any subscribed topic: (topic, raw payload).
    pub fn recv_raw(&mut self) -> Result<(String, Vec<u8>), HostError> {
        self.conn.recv()
    }

    /// Waits for the next record sealed for this sensor and opens it.
    pub fn recv(&mut self) -> Result<Vec<u8>, HostError> {
        self.recv_command().map(|(_, pt)| pt)
    }

    /// Waits for the next record on `kem-mqtt/data/b2c/<id>[/<sub>]` (a
    /// command an application sent on `cmd/<id>[/<sub>]`) and opens it:
    /// `(sub, plaintext)`. Messages on other topics are skipped. A record
    /// that does not open (forged, moved, replayed) is skipped too and
    /// counted ([`SensorClient::dropped`]): whoever can publish on the
    /// sensor's topics must not be able to end its session with one bad
    /// record. Only the connection's errors (and [`HostError::Timeout`])
    /// end the wait.
    pub fn recv_command(&mut self) -> Result<(String, Vec<u8>), HostError> {
        if let Some(c) = self.early.pop_front() {
            return Ok(c);
        }
        loop {
            let (topic, payload) = self.recv_raw()?;
            let Some((id, sub)) = crate::topics::parse_sealed_b2c(&topic) else {
                continue;
            };
            if id != self.client_id {
                continue;
            }
            let mut pt = vec![0u8; payload.len().saturating_sub(RECORD_OVERHEAD)];
            match self.session.open(topic.as_bytes(), &payload, &mut pt) {
                Ok(n) => {
                    pt.truncate(n);
                    return Ok((sub.to_string(), pt));
                }
                Err(_) => self.dropped += 1,
            }
        }
    }

    /// Records on this sensor's broker → sensor topics that did not open
    /// and were skipped.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Opens a record received on `topic` with this session (AUTH mode tests).
    pub fn session(&mut self) -> &mut Session {
        &mut self.session
    }

    /// How long [`SensorClient::recv_command`] and the other receives wait.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), HostError> {
        self.conn.set_timeout(timeout)
    }

    /// Sends DISCONNECT.
    pub fn disconnect(self) -> Result<(), HostError> {
        self.conn.disconnect()
    }
}
