//! The MQTT client of topic mode, on the maintained `rumqttc` (its
//! blocking API, TLS through rustls): the gateway, the host sensor, the
//! load tool, the fleet and the serial bridge publish and receive through
//! it. It speaks MQTT v5 or, for brokers that have no v5 (RabbitMQ 3.10's
//! MQTT plugin, the fleet's cluster), MQTT 3.1.1 ([`MqttVersion`]); topic
//! mode needs nothing of v5.
//!
//! What it does not carry: MQTT v5 enhanced authentication. `rumqttc`
//! 0.25 expects a CONNACK right after CONNECT and treats the AUTH packet
//! that AUTH mode's BrokerHello travels in as an error (`NotConnAck`), so
//! AUTH mode stays on this crate's own codec ([`crate::mqtt`]).
//!
//! By default everything goes at QoS 0, as before: a record carries its
//! own sequence number and replay window, and a lost one is a lost
//! reading, not a protocol failure. Where a reading must not be lost
//! ([`Reliability`]), publishes go at QoS 1 and wait for their PUBACK, and
//! a persistent session's messages are acknowledged only once the caller
//! has handled them: at least once. A record that arrives twice is refused
//! by the receiving session's replay window; any other message may arrive
//! twice.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rumqttc::Outgoing;
use rumqttc::{NetworkOptions, TlsConfiguration, Transport};

use crate::transport::{Endpoint, MqttVersion};
use crate::{mqtt, HostError};

/// Largest packet the client accepts (a LightSaber hybrid BrokerHello is
/// about 2.6 KB; records are small).
const MAX_PACKET: u32 = 256 * 1024;
/// Unacknowledged QoS 1 publishes the client keeps track of (it waits for
/// each PUBACK before the next publish, so one would do).
const INFLIGHT: u16 = 8;
/// Requests (publishes, subscriptions) queued before the event loop sends
/// them: the loop runs only while this client waits for something.
const QUEUE: usize = 4096;

/// What a client promises about its messages. The default is QoS 0
/// throughout and a clean session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reliability {
    /// Publishes go at QoS 1, and each waits for its PUBACK: an error or
    /// a timeout means the broker may not have it (publish it again,
    /// through another broker node if need be).
    pub acknowledged_publish: bool,
    /// The broker keeps the session (clean session off: its
    /// subscriptions and the messages they queue outlive a lost
    /// connection); subscriptions are at QoS 1, and a message is
    /// acknowledged when [`MqttClient::recv`] is called again, that is,
    /// after the caller handled it. A message that was delivered but not
    /// acknowledged when the connection was lost comes again.
    pub persistent_session: bool,
}

/// A message received and not yet acknowledged (persistent sessions).
enum Ack {
    V5(rumqttc::v5::mqttbytes::v5::Publish),
    V311(rumqttc::Publish),
}

/// The two protocol versions' client halves (rumqttc has a type for each).
enum Link {
    V5(rumqttc::v5::Client, Box<rumqttc::v5::Connection>),
    V311(rumqttc::Client, Box<rumqttc::Connection>),
}

/// A connected MQTT client (topic mode). `rumqttc`'s blocking client
/// runs its event loop only while someone waits on it, so every call here
/// that sends waits until the packet is written (or, with
/// [`Reliability::acknowledged_publish`], acknowledged), and PUBLISHes that
/// arrive meanwhile are kept for [`MqttClient::recv`].
pub struct MqttClient {
    link: Link,
    reliability: Reliability,
    timeout: Option<Duration>,
    /// How long a publish waits for its PUBACK: the connection's timeout,
    /// not the receive timeout, which a caller may keep short to look at
    /// other things between messages.
    ack_timeout: Duration,
    inbox: VecDeque<(String, Vec<u8>, Option<Ack>)>,
    /// The message [`MqttClient::recv`] returned last, acknowledged at the next call.
    unacked: Option<Ack>,
    /// The connection failed. rumqttc's event loop, polled again, would
    /// connect once more to the same node and resume there (sending its
    /// unacknowledged publishes again, and acknowledgements with packet
    /// ids of the old connection): a failed client is never polled again.
    dead: bool,
}

impl std::fmt::Debug for MqttClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MqttClient")
            .field("reliability", &self.reliability)
            .finish_non_exhaustive()
    }
}

fn io_error(e: impl std::fmt::Display) -> HostError {
    HostError::Io(std::io::Error::other(e.to_string()))
}

fn connection_error_v5(e: rumqttc::v5::ConnectionError) -> HostError {
    use rumqttc::v5::mqttbytes::v5::ConnectReturnCode as Code;
    use rumqttc::v5::ConnectionError as E;
    match e {
        E::ConnectionRefused(code) => HostError::Refused(match code {
            Code::NotAuthorized => mqtt::NOT_AUTHORIZED,
            Code::BadAuthenticationMethod => mqtt::BAD_AUTHENTICATION_METHOD,
            Code::BadUserNamePassword => 0x86,
            Code::ClientIdentifierNotValid => 0x85,
            _ => 0x80,
        }),
        E::Io(e) => HostError::Io(e),
        e => io_error(e),
    }
}

/// A refused MQTT 3.1.1 CONNECT, reported with the v5 reason code of the
/// same meaning (one error type for both versions).
fn connection_error_v311(e: rumqttc::ConnectionError) -> HostError {
    use rumqttc::ConnectReturnCode as Code;
    use rumqttc::ConnectionError as E;
    match e {
        E::ConnectionRefused(code) => HostError::Refused(match code {
            Code::NotAuthorized => mqtt::NOT_AUTHORIZED,
            Code::BadUserNamePassword => 0x86,
            Code::BadClientId => 0x85,
            Code::ServiceUnavailable => 0x88,
            _ => 0x80,
        }),
        E::Io(e) => HostError::Io(e),
        e => io_error(e),
    }
}

/// What the event loop did that a caller may wait for.
enum Step {
    ConnAck,
    SubAck(bool),
    /// A PUBLISH was written (its packet id; 0 at QoS 0).
    Sent(u16),
    PubAck(u16),
    Disconnected,
    Other,
}

fn topic_of(bytes: &[u8]) -> Result<String, HostError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| HostError::Unexpected("a topic that is not UTF-8".into()))
}

impl Link {
    fn new(
        endpoint: &Endpoint,
        client_id: &str,
        login: Option<(&str, &str)>,
        clean: bool,
        connect_s: u64,
    ) -> Result<Link, HostError> {
        let (host, port) = endpoint.host_port()?;
        // Every packet of a handshake is small and answered at once: no
        // waiting for more bytes to fill a segment (Nagle's algorithm,
        // rumqttc's default).
        let mut network = NetworkOptions::new();
        network.set_tcp_nodelay(true);
        network.set_connection_timeout(connect_s);
        let transport = endpoint
            .tls
            .as_ref()
            .map(|tls| Transport::tls_with_config(TlsConfiguration::Rustls(tls.config.clone())));
        Ok(match endpoint.version {
            MqttVersion::V5 => {
                let mut options = rumqttc::v5::MqttOptions::new(client_id, host, port);
                options.set_keep_alive(Duration::from_secs(60));
                options.set_clean_start(clean);
                options.set_max_packet_size(Some(MAX_PACKET));
                options.set_connection_timeout(connect_s);
                // rumqttc sizes its table of unacknowledged publishes by this
                // limit when the client is made (u16::MAX when unset: a 14 MB
                // vector, written in full, for every sensor that connects).
                // `cargo xtask mqtt-load` measured topic mode at 28–114
                // handshakes/s, p99 2.0–4.8 s, before this line (issue #37).
                options.set_outgoing_inflight_upper_limit(INFLIGHT);
                options.set_manual_acks(true);
                options.set_network_options(network);
                if let Some((user, password)) = login {
                    options.set_credentials(user, password);
                }
                if let Some(t) = transport {
                    options.set_transport(t);
                }
                let (client, connection) = rumqttc::v5::Client::new(options, QUEUE);
                Link::V5(client, Box::new(connection))
            }
            MqttVersion::V311 => {
                let mut options = rumqttc::MqttOptions::new(client_id, host, port);
                options.set_keep_alive(Duration::from_secs(60));
                options.set_clean_session(clean);
                options.set_max_packet_size(MAX_PACKET as usize, MAX_PACKET as usize);
                options.set_inflight(INFLIGHT);
                options.set_manual_acks(true);
                if let Some((user, password)) = login {
                    options.set_credentials(user, password);
                }
                if let Some(t) = transport {
                    options.set_transport(t);
                }
                let (client, mut connection) = rumqttc::Client::new(options, QUEUE);
                connection.eventloop.set_network_options(network);
                Link::V311(client, Box::new(connection))
            }
        })
    }

    fn subscribe(&self, filter: &str, qos1: bool) -> Result<(), HostError> {
        match self {
            Link::V5(c, _) => {
                use rumqttc::v5::mqttbytes::QoS;
                c.try_subscribe(filter, if qos1 { QoS::AtLeastOnce } else { QoS::AtMostOnce })
                    .map_err(io_error)
            }
            Link::V311(c, _) => {
                use rumqttc::QoS;
                c.try_subscribe(filter, if qos1 { QoS::AtLeastOnce } else { QoS::AtMostOnce })
                    .map_err(io_error)
            }
        }
    }

    fn publish(&self, topic: &str, payload: &[u8], retain: bool, qos1: bool) -> Result<(), HostError> {
        match self {
            Link::V5(c, _) => {
                use rumqttc::v5::mqttbytes::QoS;
                let qos = if qos1 { QoS::AtLeastOnce } else { QoS::AtMostOnce };
                c.try_publish(topic, qos, retain, payload.to_vec()).map_err(io_error)
            }
            Link::V311(c, _) => {
                use rumqttc::QoS;
                let qos = if qos1 { QoS::AtLeastOnce } else { QoS::AtMostOnce };
                c.try_publish(topic, qos, retain, payload.to_vec()).map_err(io_error)
            }
        }
    }

    fn ack(&self, ack: &Ack) -> Result<(), HostError> {
        match (self, ack) {
            (Link::V5(c, _), Ack::V5(p)) => c.try_ack(p).map_err(io_error),
            (Link::V311(c, _), Ack::V311(p)) => c.try_ack(p).map_err(io_error),
            _ => Ok(()),
        }
    }

    fn disconnect(&self) -> Result<(), HostError> {
        match self {
            Link::V5(c, _) => c.try_disconnect().map_err(io_error),
            Link::V311(c, _) => c.try_disconnect().map_err(io_error),
        }
    }

    /// One turn of the event loop: an incoming PUBLISH goes to `inbox`.
    fn step(
        &mut self,
        deadline: Option<Instant>,
        inbox: &mut VecDeque<(String, Vec<u8>, Option<Ack>)>,
    ) -> Result<Step, HostError> {
        let closed = || io_error("the MQTT connection is closed");
        let left = match deadline {
            None => None,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(HostError::Timeout);
                }
                Some(left)
            }
        };
        // The two arms mirror each other: rumqttc has its own packet and
        // event types for each protocol version.
        match self {
            Link::V5(_, connection) => {
                use rumqttc::v5::mqttbytes::v5::{Packet, SubscribeReasonCode};
                use rumqttc::v5::{Event, RecvTimeoutError};
                let event = match left {
                    None => connection.recv().map_err(|_| closed())?,
                    Some(left) => match connection.recv_timeout(left) {
                        Ok(e) => e,
                        Err(RecvTimeoutError::Timeout) => return Err(HostError::Timeout),
                        Err(RecvTimeoutError::Disconnected) => return Err(closed()),
                    },
                };
                Ok(match event.map_err(connection_error_v5)? {
                    Event::Incoming(Packet::Publish(p)) => {
                        let topic = topic_of(&p.topic)?;
                        let payload = p.payload.to_vec();
                        let ack = (p.qos != rumqttc::v5::mqttbytes::QoS::AtMostOnce).then_some(Ack::V5(p));
                        inbox.push_back((topic, payload, ack));
                        Step::Other
                    }
                    Event::Incoming(Packet::ConnAck(_)) => Step::ConnAck,
                    Event::Incoming(Packet::SubAck(ack)) => Step::SubAck(
                        ack.return_codes
                            .iter()
                            .all(|r| matches!(r, SubscribeReasonCode::Success(_))),
                    ),
                    Event::Incoming(Packet::PubAck(ack)) => Step::PubAck(ack.pkid),
                    Event::Incoming(Packet::Disconnect(_)) => Step::Disconnected,
                    Event::Outgoing(Outgoing::Publish(pkid)) => Step::Sent(pkid),
                    Event::Outgoing(Outgoing::Disconnect) => Step::Disconnected,
                    _ => Step::Other,
                })
            }
            Link::V311(_, connection) => {
                use rumqttc::{Event, Packet, RecvTimeoutError, SubscribeReasonCode};
                let event = match left {
                    None => connection.recv().map_err(|_| closed())?,
                    Some(left) => match connection.recv_timeout(left) {
                        Ok(e) => e,
                        Err(RecvTimeoutError::Timeout) => return Err(HostError::Timeout),
                        Err(RecvTimeoutError::Disconnected) => return Err(closed()),
                    },
                };
                Ok(match event.map_err(connection_error_v311)? {
                    Event::Incoming(Packet::Publish(p)) => {
                        let topic = p.topic.clone();
                        let payload = p.payload.to_vec();
                        let ack = (p.qos != rumqttc::QoS::AtMostOnce).then_some(Ack::V311(p));
                        inbox.push_back((topic, payload, ack));
                        Step::Other
                    }
                    Event::Incoming(Packet::ConnAck(_)) => Step::ConnAck,
                    Event::Incoming(Packet::SubAck(ack)) => Step::SubAck(
                        ack.return_codes
                            .iter()
                            .all(|r| matches!(r, SubscribeReasonCode::Success(_))),
                    ),
                    Event::Incoming(Packet::PubAck(ack)) => Step::PubAck(ack.pkid),
                    Event::Incoming(Packet::Disconnect) => Step::Disconnected,
                    Event::Outgoing(Outgoing::Publish(pkid)) => Step::Sent(pkid),
                    Event::Outgoing(Outgoing::Disconnect) => Step::Disconnected,
                    _ => Step::Other,
                })
            }
        }
    }
}

impl MqttClient {
    /// Connects to `endpoint` as `client_id` (clean session, keep-alive
    /// 60 s, QoS 0), with a username and password if given, and waits up
    /// to `timeout` for the CONNACK.
    pub fn connect(
        endpoint: &Endpoint,
        client_id: &str,
        login: Option<(&str, &str)>,
        timeout: Duration,
    ) -> Result<MqttClient, HostError> {
        Self::connect_with(endpoint, client_id, login, timeout, Reliability::default())
    }

    /// [`MqttClient::connect`] with the given [`Reliability`].
    pub fn connect_with(
        endpoint: &Endpoint,
        client_id: &str,
        login: Option<(&str, &str)>,
        timeout: Duration,
        reliability: Reliability,
    ) -> Result<MqttClient, HostError> {
        let connect_s = timeout.as_secs().max(1);
        let link = Link::new(endpoint, client_id, login, !reliability.persistent_session, connect_s)?;
        let mut c = MqttClient {
            link,
            reliability,
            timeout: Some(timeout),
            ack_timeout: timeout,
            inbox: VecDeque::new(),
            unacked: None,
            dead: false,
        };
        c.run_until(|s| matches!(s, Step::ConnAck))?;
        Ok(c)
    }

    /// What this client promises about its messages.
    pub fn reliability(&self) -> Reliability {
        self.reliability
    }

    /// One turn of the event loop; any error but a timeout ends the client
    /// ([`MqttClient::dead`]).
    fn step(&mut self, deadline: Option<Instant>) -> Result<Step, HostError> {
        if self.dead {
            return Err(io_error("the MQTT connection failed earlier"));
        }
        let step = self.link.step(deadline, &mut self.inbox);
        if matches!(&step, Ok(Step::Disconnected)) || matches!(&step, Err(e) if !matches!(e, HostError::Timeout)) {
            self.dead = true;
            self.unacked = None;
        }
        step
    }

    /// Runs the event loop until a step satisfies `done`, within the timeout.
    fn run_until(&mut self, done: impl Fn(&Step) -> bool) -> Result<Step, HostError> {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        loop {
            let step = self.step(deadline)?;
            if done(&step) {
                return Ok(step);
            }
            if matches!(step, Step::Disconnected) {
                return Err(io_error("the broker ended the connection"));
            }
        }
    }

    /// How long [`MqttClient::recv`] and the other waits last (`None`: forever).
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// Subscribes to `filters` (QoS 0; QoS 1 in a persistent session) and
    /// waits for each SUBACK; a refused filter is an error.
    pub fn subscribe(&mut self, filters: &[&str]) -> Result<(), HostError> {
        for f in filters {
            self.link.subscribe(f, self.reliability.persistent_session)?;
            if let Step::SubAck(false) = self.run_until(|s| matches!(s, Step::SubAck(_)))? {
                return Err(HostError::Unexpected(format!("subscription to {f} refused")));
            }
        }
        Ok(())
    }

    /// Publishes and waits until it is written to the connection (QoS 0),
    /// or until the broker acknowledged it
    /// ([`Reliability::acknowledged_publish`]).
    pub fn publish(&mut self, topic: &str, payload: &[u8]) -> Result<(), HostError> {
        self.send(topic, payload, false)
    }

    /// [`MqttClient::publish`] with the RETAIN flag.
    pub fn publish_retained(&mut self, topic: &str, payload: &[u8]) -> Result<(), HostError> {
        self.send(topic, payload, true)
    }

    fn send(&mut self, topic: &str, payload: &[u8], retain: bool) -> Result<(), HostError> {
        let qos1 = self.reliability.acknowledged_publish;
        if self.dead {
            return Err(io_error("the MQTT connection failed earlier"));
        }
        self.link.publish(topic, payload, retain, qos1)?;
        // Both waits last the connection's timeout, whatever the receive
        // timeout: a publish that timed out here would be queued in the
        // client all the same and go out later, and one that the caller
        // published again would then arrive twice. Past it, the connection
        // counts as broken (an error, so that the caller moves to another
        // node rather than publishing again on this one).
        let deadline = Instant::now() + self.ack_timeout;
        let mut sent = None;
        loop {
            match self.step(Some(deadline)) {
                Ok(Step::Sent(id)) if sent.is_none() => {
                    sent = Some(id);
                    if !qos1 {
                        return Ok(());
                    }
                }
                Ok(Step::PubAck(id)) if sent == Some(id) => return Ok(()),
                Ok(Step::Disconnected) => return Err(io_error("the broker ended the connection")),
                Ok(_) => {}
                Err(HostError::Timeout) => {
                    // Not polled again: what it queued must not go out later.
                    self.dead = true;
                    return Err(io_error(format!(
                        "publish not {} within {:?}",
                        if sent.is_some() { "acknowledged" } else { "sent" },
                        self.ack_timeout
                    )));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The next PUBLISH: (topic, payload). [`HostError::Timeout`] after the
    /// timeout ([`MqttClient::set_timeout`]). In a persistent session, the
    /// message returned by the previous call is acknowledged first.
    pub fn recv(&mut self) -> Result<(String, Vec<u8>), HostError> {
        if let Some(ack) = self.unacked.take() {
            if !self.dead {
                self.link.ack(&ack)?;
            }
        }
        let deadline = self.timeout.map(|t| Instant::now() + t);
        loop {
            if let Some((topic, payload, ack)) = self.inbox.pop_front() {
                self.unacked = ack;
                return Ok((topic, payload));
            }
            if let Step::Disconnected = self.step(deadline)? {
                return Err(io_error("the broker ended the connection"));
            }
        }
    }

    /// Sends DISCONNECT and waits (at most 2 s) until the broker closes the
    /// connection. The message [`MqttClient::recv`] returned last is
    /// acknowledged first.
    ///
    /// Why not close it first: a broker must close the connection on
    /// DISCONNECT (MQTT v5 §3.14.4), and `rumqttd` 0.20 (the embedded
    /// broker) mishandles a client that is faster. Its router forgets the
    /// connection on the DISCONNECT and hands the freed connection id to
    /// the next client; when the socket then closes under the old link, the
    /// link reports that id as disconnected and the router drops the new
    /// client (seen as "Connection closed by peer abruptly" in its first
    /// SUBSCRIBE, about one run in six of the loopback tests). When the
    /// broker closes first, the link ends without reporting anything.
    pub fn disconnect(mut self) -> Result<(), HostError> {
        if let Some(ack) = self.unacked.take() {
            if !self.dead {
                self.link.ack(&ack)?;
            }
        }
        self.close()
    }

    /// [`MqttClient::disconnect`] without giving the client up (it is
    /// useless afterwards) and without acknowledging the last message,
    /// which the caller may not have finished with (the broker delivers it
    /// again on the next connection): a connection about to be replaced
    /// under the same client id ends first, so the broker does not see two
    /// at once (RabbitMQ then closed the new one). A failed connection is
    /// left alone.
    pub fn close(&mut self) -> Result<(), HostError> {
        self.unacked = None;
        if self.dead {
            return Ok(());
        }
        self.dead = true;
        self.link.disconnect()?;
        let deadline = Some(Instant::now() + Duration::from_secs(2));
        // The first error is the broker's close (or the deadline); the
        // event loop is not polled after it, or it would reconnect.
        while self.link.step(deadline, &mut self.inbox).is_ok() {}
        Ok(())
    }
}
