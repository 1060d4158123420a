//! The MQTT v5 client of topic mode, on the maintained `rumqttc` (its
//! blocking API, TLS through rustls): the gateway, the host sensor, the
//! load tool and the serial bridge publish and receive through it.
//!
//! What it does not carry: MQTT v5 enhanced authentication. `rumqttc`
//! 0.25 expects a CONNACK right after CONNECT and treats the AUTH packet
//! that AUTH mode's BrokerHello travels in as an error (`NotConnAck`), so
//! AUTH mode stays on this crate's own codec ([`crate::mqtt`]).
//!
//! Everything goes at QoS 0, as before: a record carries its own sequence
//! number and replay window, and a lost one is a lost reading, not a
//! protocol failure.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rumqttc::v5::mqttbytes::v5::{ConnectReturnCode, Packet, SubscribeReasonCode};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{Client, Connection, ConnectionError, Event, MqttOptions, RecvTimeoutError};
use rumqttc::Outgoing;
use rumqttc::{NetworkOptions, TlsConfiguration, Transport};

use crate::transport::Endpoint;
use crate::{mqtt, HostError};

/// Largest packet the client accepts (a LightSaber hybrid BrokerHello is
/// about 2.6 KB; records are small).
const MAX_PACKET: u32 = 256 * 1024;
/// Unacknowledged QoS 1/2 publishes the client keeps track of (it sends
/// none: everything goes at QoS 0).
const INFLIGHT: u16 = 8;
/// Requests (publishes, subscriptions) queued before the event loop sends
/// them: the loop runs only while this client waits for something.
const QUEUE: usize = 4096;

/// A connected MQTT v5 client (topic mode). `rumqttc`'s blocking client
/// runs its event loop only while someone waits on it, so every call here
/// that sends waits until the packet is written, and PUBLISHes that arrive
/// meanwhile are kept for [`MqttClient::recv`].
pub struct MqttClient {
    client: Client,
    connection: Connection,
    timeout: Option<Duration>,
    inbox: VecDeque<(String, Vec<u8>)>,
}

impl std::fmt::Debug for MqttClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MqttClient").finish_non_exhaustive()
    }
}

fn io_error(e: impl std::fmt::Display) -> HostError {
    HostError::Io(std::io::Error::other(e.to_string()))
}

fn connection_error(e: ConnectionError) -> HostError {
    match e {
        ConnectionError::ConnectionRefused(code) => HostError::Refused(refusal_code(code)),
        ConnectionError::Io(e) => HostError::Io(e),
        e => io_error(e),
    }
}

/// The MQTT v5 reason code of a refused CONNECT.
fn refusal_code(code: ConnectReturnCode) -> u8 {
    match code {
        ConnectReturnCode::NotAuthorized => mqtt::NOT_AUTHORIZED,
        ConnectReturnCode::BadAuthenticationMethod => mqtt::BAD_AUTHENTICATION_METHOD,
        ConnectReturnCode::BadUserNamePassword => 0x86,
        ConnectReturnCode::ClientIdentifierNotValid => 0x85,
        _ => 0x80,
    }
}

/// What the event loop did that a caller may wait for.
enum Step {
    ConnAck,
    SubAck(bool),
    Sent,
    Disconnected,
    Other,
}

impl MqttClient {
    /// Connects to `endpoint` as `client_id` (clean start, keep-alive 60 s),
    /// with a username and password if given, and waits up to `timeout`
    /// for the CONNACK.
    pub fn connect(
        endpoint: &Endpoint,
        client_id: &str,
        login: Option<(&str, &str)>,
        timeout: Duration,
    ) -> Result<MqttClient, HostError> {
        let (host, port) = endpoint.host_port()?;
        let mut options = MqttOptions::new(client_id, host, port);
        options.set_keep_alive(Duration::from_secs(60));
        options.set_clean_start(true);
        options.set_max_packet_size(Some(MAX_PACKET));
        let connect_s = timeout.as_secs().max(1);
        options.set_connection_timeout(connect_s);
        // rumqttc sizes its table of unacknowledged publishes by this limit
        // when the client is made (u16::MAX when unset: a 14 MB vector,
        // written in full, for every sensor that connects). Everything here
        // goes at QoS 0, which leaves nothing unacknowledged. `cargo xtask
        // mqtt-load` measured topic mode at 28–114 handshakes/s, p99
        // 2.0–4.8 s, before this line (issue #37).
        options.set_outgoing_inflight_upper_limit(INFLIGHT);
        // Every packet of a handshake is small and answered at once: no
        // waiting for more bytes to fill a segment (Nagle's algorithm,
        // rumqttc's default).
        let mut network = NetworkOptions::new();
        network.set_tcp_nodelay(true);
        network.set_connection_timeout(connect_s);
        options.set_network_options(network);
        if let Some((user, password)) = login {
            options.set_credentials(user, password);
        }
        if let Some(tls) = &endpoint.tls {
            options.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(tls.config.clone())));
        }
        let (client, connection) = Client::new(options, QUEUE);
        let mut c = MqttClient {
            client,
            connection,
            timeout: Some(timeout),
            inbox: VecDeque::new(),
        };
        c.run_until(|s| matches!(s, Step::ConnAck))?;
        Ok(c)
    }

    /// One turn of the event loop: an incoming PUBLISH goes to the inbox.
    fn step(&mut self, deadline: Option<Instant>) -> Result<Step, HostError> {
        let event = match deadline {
            None => self
                .connection
                .recv()
                .map_err(|_| io_error("the MQTT connection is closed"))?,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(HostError::Timeout);
                }
                match self.connection.recv_timeout(left) {
                    Ok(e) => e,
                    Err(RecvTimeoutError::Timeout) => return Err(HostError::Timeout),
                    Err(RecvTimeoutError::Disconnected) => return Err(io_error("the MQTT connection is closed")),
                }
            }
        };
        Ok(match event.map_err(connection_error)? {
            Event::Incoming(Packet::Publish(p)) => {
                let topic = String::from_utf8(p.topic.to_vec())
                    .map_err(|_| HostError::Unexpected("a topic that is not UTF-8".into()))?;
                self.inbox.push_back((topic, p.payload.to_vec()));
                Step::Other
            }
            Event::Incoming(Packet::ConnAck(_)) => Step::ConnAck,
            Event::Incoming(Packet::SubAck(ack)) => Step::SubAck(
                ack.return_codes
                    .iter()
                    .all(|r| matches!(r, SubscribeReasonCode::Success(_))),
            ),
            Event::Incoming(Packet::Disconnect(_)) => Step::Disconnected,
            Event::Outgoing(Outgoing::Publish(_)) => Step::Sent,
            Event::Outgoing(Outgoing::Disconnect) => Step::Disconnected,
            _ => Step::Other,
        })
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

    /// Subscribes to `filters` (QoS 0) and waits for each SUBACK; a refused
    /// filter is an error.
    pub fn subscribe(&mut self, filters: &[&str]) -> Result<(), HostError> {
        for f in filters {
            self.client.try_subscribe(*f, QoS::AtMostOnce).map_err(io_error)?;
            if let Step::SubAck(false) = self.run_until(|s| matches!(s, Step::SubAck(_)))? {
                return Err(HostError::Unexpected(format!("subscription to {f} refused")));
            }
        }
        Ok(())
    }

    /// Publishes at QoS 0 and waits until it is written to the connection.
    pub fn publish(&mut self, topic: &str, payload: &[u8]) -> Result<(), HostError> {
        self.send(topic, payload, false)
    }

    /// [`MqttClient::publish`] with the RETAIN flag.
    pub fn publish_retained(&mut self, topic: &str, payload: &[u8]) -> Result<(), HostError> {
        self.send(topic, payload, true)
    }

    fn send(&mut self, topic: &str, payload: &[u8], retain: bool) -> Result<(), HostError> {
        self.client
            .try_publish(topic, QoS::AtMostOnce, retain, payload.to_vec())
            .map_err(io_error)?;
        self.run_until(|s| matches!(s, Step::Sent)).map(|_| ())
    }

    /// The next PUBLISH: (topic, payload). [`HostError::Timeout`] after the
    /// timeout ([`MqttClient::set_timeout`]).
    pub fn recv(&mut self) -> Result<(String, Vec<u8>), HostError> {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(m) = self.inbox.pop_front() {
                return Ok(m);
            }
            if let Step::Disconnected = self.step(deadline)? {
                return Err(io_error("the broker ended the connection"));
            }
        }
    }

    /// Sends DISCONNECT and waits (at most 2 s) until the broker closes the
    /// connection.
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
        self.client.try_disconnect().map_err(io_error)?;
        let deadline = Some(Instant::now() + Duration::from_secs(2));
        // The first error is the broker's close (or the deadline); the
        // event loop is not polled after it, or it would reconnect.
        while self.step(deadline).is_ok() {}
        Ok(())
    }
}
