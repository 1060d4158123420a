//! The MQTT side of a sensor whose cryptography runs elsewhere: a board on
//! a serial port (`kem-mqtt serial-bridge`) or the simulated AVR
//! (`cargo xtask mqtt --broker`). The bridge carries the flights and the
//! sealed record between the sensor and the broker; it holds no key and
//! computes nothing of the handshake ([`RemoteSensor`] does).
//!
//! - AUTH mode (mosquitto with the project's plugin): CONNECT with the
//!   Authentication Method [`kem_mqtt::AUTH_METHOD`] and the ClientHello as
//!   Authentication Data; AUTH 0x18 brings the BrokerHello, AUTH 0x18 takes
//!   the ClientFinished back, CONNACK 0x00 establishes the session; then the
//!   record is published.
//! - Topic mode (a `kem-mqtt gateway` beside a plain broker): plain CONNECT,
//!   the flights as PUBLISH payloads on `kem-mqtt/hs/<id>/c2b` and `…/b2c`,
//!   the gateway's confirmation on `kem-mqtt/data/b2c/<id>`, then the record.
//!
//! The client id is the one the ClientHello names. Every wait has a
//! deadline; every failure is a [`BridgeError`].
//!
//! This module carries one handshake of a *harness* image, driven from the
//! host (`serial-bridge --suite …`); [`session`] carries the whole life of
//! a sensor *application* image, which drives itself.

pub mod session;

use std::fmt;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::addr::BrokerAddr;
use crate::mqtt::{self as wire, Connection, Packet};
use crate::transport::Tls;
use crate::Mode;

/// The sensor's side of the handshake, computed wherever the sensor is.
pub trait RemoteSensor {
    /// The sensor's ClientHello (it draws its own randomness or is given it).
    fn hello(&mut self) -> Result<Hello, String>;
    /// The BrokerHello in; the ClientFinished and the first sealed record out.
    fn finish(&mut self, broker_hello: &[u8]) -> Result<Finished, String>;
}

/// What the sensor's first step produced.
#[derive(Clone, Debug)]
pub struct Hello {
    /// The ClientHello.
    pub client_hello: Vec<u8>,
    /// What the log line adds (the sensor's cost, say).
    pub note: String,
}

/// What the sensor's second step produced.
#[derive(Clone, Debug)]
pub struct Finished {
    /// The ClientFinished.
    pub client_finished: Vec<u8>,
    /// The first record the sensor sealed under the new session.
    pub record: Vec<u8>,
    /// What the log line adds.
    pub note: String,
}

/// Why a bridged handshake failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BridgeError {
    /// Before any traffic: what the sensor sent is not a ClientHello.
    Setup(String),
    /// The sensor: a failed call, or a step that answered an error status.
    Sensor(String),
    /// No TCP connection to the broker.
    Connect {
        /// The broker.
        addr: String,
        /// The last address's error.
        error: std::io::Error,
    },
    /// Sending or receiving failed.
    Io {
        /// What was going on.
        during: String,
        /// The error.
        error: std::io::Error,
    },
    /// Nothing arrived in time.
    Timeout {
        /// What was awaited.
        waiting_for: String,
        /// For how long.
        after: Duration,
    },
    /// The board's serial port failed (unplugged, hung up): what failed.
    Port(String),
    /// The broker closed the connection.
    Closed {
        /// What was awaited.
        waiting_for: String,
    },
    /// The broker refused: a CONNACK or SUBACK with a failure reason code.
    Refused {
        /// Which step.
        during: String,
        /// The reason code.
        reason: u8,
    },
    /// A packet that does not belong at this point of the exchange.
    Unexpected {
        /// What was awaited.
        waiting_for: String,
        /// What came.
        packet: String,
    },
}

impl fmt::Display for BridgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BridgeError::Setup(s) => f.write_str(s),
            BridgeError::Sensor(s) => write!(f, "the sensor: {s}"),
            BridgeError::Connect { addr, error } => write!(f, "cannot connect to the broker at {addr}: {error}"),
            BridgeError::Io { during, error } => write!(f, "{during}: {error}"),
            BridgeError::Port(error) => f.write_str(error),
            BridgeError::Timeout { waiting_for, after } => {
                write!(f, "timed out after {} s waiting for {waiting_for}", after.as_secs_f32())
            }
            BridgeError::Closed { waiting_for } => {
                write!(f, "the broker closed the connection while we waited for {waiting_for}")
            }
            BridgeError::Refused { during, reason } => {
                write!(
                    f,
                    "{during}: refused, reason code {reason:#04x} ({})",
                    reason_name(*reason)
                )
            }
            BridgeError::Unexpected { waiting_for, packet } => {
                write!(f, "waiting for {waiting_for}, the broker sent {packet}")
            }
        }
    }
}

impl std::error::Error for BridgeError {}

impl From<BridgeError> for String {
    fn from(e: BridgeError) -> String {
        e.to_string()
    }
}

/// MQTT v5 reason codes a broker refuses with.
fn reason_name(code: u8) -> &'static str {
    match code {
        0x00 => "success",
        0x18 => "continue authentication",
        0x80 => "unspecified error",
        0x81 => "malformed packet",
        0x82 => "protocol error",
        0x83 => "implementation specific error",
        0x84 => "unsupported protocol version",
        0x85 => "client identifier not valid",
        0x86 => "bad user name or password",
        0x87 => "not authorized",
        0x88 => "server unavailable",
        0x89 => "server busy",
        0x8A => "banned",
        0x8C => "bad authentication method",
        0x8F => "topic filter invalid",
        0x97 => "quota exceeded",
        _ => "see the MQTT v5 reason codes",
    }
}

/// A short description of a packet (no payload bytes).
fn describe(p: &Packet) -> String {
    match p {
        Packet::Connect { client_id, .. } => format!("CONNECT ({client_id})"),
        Packet::ConnAck { reason, .. } => format!("CONNACK {reason:#04x} ({})", reason_name(*reason)),
        Packet::Publish { topic, payload } => format!("PUBLISH on {topic} ({} B)", payload.len()),
        Packet::PublishQos1 {
            packet_id,
            topic,
            payload,
        } => format!("PUBLISH QoS 1 on {topic} (id {packet_id}, {} B)", payload.len()),
        Packet::PubAck { packet_id, reason } => {
            format!("PUBACK (id {packet_id}) {reason:#04x} ({})", reason_name(*reason))
        }
        Packet::Subscribe { packet_id, .. } => format!("SUBSCRIBE (id {packet_id})"),
        Packet::SubAck { packet_id, reasons } => format!("SUBACK (id {packet_id}, {reasons:02x?})"),
        Packet::Auth { reason, auth_data, .. } => format!(
            "AUTH {reason:#04x} ({}, {} B of data)",
            reason_name(*reason),
            auth_data.as_ref().map_or(0, Vec::len)
        ),
        Packet::PingReq => "PINGREQ".into(),
        Packet::PingResp => "PINGRESP".into(),
        Packet::Disconnect { reason } => format!("DISCONNECT {reason:#04x} ({})", reason_name(*reason)),
    }
}

/// A packet other than the awaited one: a CONNACK refusing (`during` that
/// step), or anything else while `waiting_for`.
fn not_the_answer(p: Packet, during: &str, waiting_for: &str) -> BridgeError {
    match p {
        Packet::ConnAck { reason, .. } => BridgeError::Refused {
            during: during.into(),
            reason,
        },
        other => BridgeError::Unexpected {
            waiting_for: waiting_for.into(),
            packet: describe(&other),
        },
    }
}

/// The client id a ClientHello names (`version ‖ type ‖ suite ‖ id_len ‖ id ‖ …`).
pub fn client_id_of(client_hello: &[u8]) -> Result<&str, BridgeError> {
    let n = *client_hello
        .get(3)
        .ok_or_else(|| BridgeError::Setup(format!("a ClientHello of {} bytes", client_hello.len())))?
        as usize;
    client_hello
        .get(4..4 + n)
        .and_then(|id| std::str::from_utf8(id).ok())
        .ok_or_else(|| BridgeError::Setup("the ClientHello's client id is cut short or not UTF-8".into()))
}

/// Carries one handshake of `sensor` to the broker at `broker` in `mode`,
/// then the sensor's first record, published on `topic`. Each broker answer
/// is awaited at most `wait`; `log` gets one line per step.
pub fn run(
    sensor: &mut dyn RemoteSensor,
    broker: &BrokerAddr,
    tls: Option<&Tls>,
    mode: Mode,
    wait: Duration,
    topic: &str,
    log: &mut dyn FnMut(&str),
) -> Result<(), BridgeError> {
    let s = sensor.hello().map_err(BridgeError::Sensor)?;
    let id = client_id_of(&s.client_hello)?.to_string();
    let id = id.as_str();
    log(&format!(
        "sensor start: ClientHello {} B for {id}{}",
        s.client_hello.len(),
        s.note
    ));
    // A record's topic is its associated data: one sealed for another
    // client's topic would be refused by the broker, and by the ACL first.
    if crate::topics::parse_sealed_c2b(topic).map(|(owner, _)| owner) != Some(id) {
        return Err(BridgeError::Setup(format!(
            "the sensor is {id:?} but seals its reading on {topic}, which is not its own \
             {} topic (provision it with the id that topic names)",
            crate::topics::sealed_c2b(id, "…")
        )));
    }
    let mut link = Link::open(broker, tls, wait)?;
    let broker_hello = match mode {
        Mode::Auth => {
            link.send(&Packet::Connect {
                client_id: id.into(),
                keep_alive: 60,
                auth_method: Some(kem_mqtt::AUTH_METHOD.into()),
                auth_data: Some(s.client_hello.clone()),
            })?;
            let waiting = "AUTH 0x18 with the BrokerHello";
            let bh = match link.recv(waiting, Instant::now() + wait)? {
                Packet::Auth {
                    reason: wire::CONTINUE_AUTHENTICATION,
                    auth_data: Some(d),
                    ..
                } => d,
                other => {
                    let during = format!("CONNECT with the ClientHello ({})", kem_mqtt::AUTH_METHOD);
                    return Err(not_the_answer(other, &during, waiting));
                }
            };
            log(&format!(
                "CONNECT (method {}, ClientHello {} B) → AUTH 0x18, BrokerHello {} B",
                kem_mqtt::AUTH_METHOD,
                s.client_hello.len(),
                bh.len()
            ));
            bh
        }
        Mode::Topic => {
            link.plain_connect(id)?;
            let (hs_b2c, data_b2c) = (crate::hs_b2c(id), crate::data_b2c(id));
            link.subscribe(&[&hs_b2c, &data_b2c])?;
            link.publish(&crate::hs_c2b(id), &s.client_hello)?;
            let bh = link.wait_publish(
                &hs_b2c,
                &format!("the BrokerHello on {hs_b2c} (is a kem-mqtt gateway running?)"),
            )?;
            log(&format!(
                "CONNECT, SUBSCRIBE {hs_b2c} + {data_b2c}, PUBLISH ClientHello {} B on {} → BrokerHello {} B",
                s.client_hello.len(),
                crate::hs_c2b(id),
                bh.len()
            ));
            bh
        }
    };

    let f = sensor.finish(&broker_hello).map_err(BridgeError::Sensor)?;
    log(&format!(
        "sensor finish: BrokerFinished verified, ClientFinished {} B, record {} B sealed on {topic}{}",
        f.client_finished.len(),
        f.record.len(),
        f.note
    ));

    match mode {
        Mode::Auth => {
            link.send(&Packet::Auth {
                reason: wire::CONTINUE_AUTHENTICATION,
                auth_method: Some(kem_mqtt::AUTH_METHOD.into()),
                auth_data: Some(f.client_finished.clone()),
            })?;
            let waiting = "CONNACK after the ClientFinished";
            match link.recv(waiting, Instant::now() + wait)? {
                Packet::ConnAck {
                    reason: wire::SUCCESS, ..
                } => {}
                other => return Err(not_the_answer(other, "AUTH with the ClientFinished", waiting)),
            }
            log(&format!(
                "AUTH 0x18 (ClientFinished {} B) → CONNACK 0x00: session established",
                f.client_finished.len()
            ));
        }
        Mode::Topic => {
            let hs_c2b = crate::hs_c2b(id);
            let data_b2c = crate::data_b2c(id);
            link.publish(&hs_c2b, &f.client_finished)?;
            // The gateway's confirmation is the session's first b2c record,
            // which only a gateway that verified this ClientFinished can
            // seal. The sensor firmware has no op to open records and the
            // bridge does not hold the session keys (they live on the
            // sensor), so any
            // PUBLISH on that topic counts; without one the gateway holds no
            // session and the record would be lost.
            let confirmation = link.wait_publish(
                &data_b2c,
                &format!("the gateway's confirmation on {data_b2c} (it dropped or refused the ClientFinished?)"),
            )?;
            log(&format!(
                "PUBLISH ClientFinished {} B on {hs_c2b} → confirmation {} B on {data_b2c}: session established",
                f.client_finished.len(),
                confirmation.len()
            ));
        }
    }

    link.publish(topic, &f.record)?;
    log(&format!(
        "PUBLISH {topic}: record {} B sealed by the sensor (sequence {})",
        f.record.len(),
        f.record
            .first_chunk::<{ kem_mqtt::SEQ_LEN }>()
            .map_or(0, |s| u64::from_be_bytes(*s)),
    ));
    link.disconnect()
}

/// One MQTT connection with a deadline on every wait.
struct Link {
    conn: Connection,
    wait: Duration,
}

impl Link {
    /// Connects to the first address of `broker` that answers within
    /// `wait`, over TLS if `tls` says so (the certificate checked against
    /// the broker's host name).
    fn open(broker: &BrokerAddr, tls: Option<&Tls>, wait: Duration) -> Result<Link, BridgeError> {
        let mut last = std::io::Error::other("the address resolved to nothing");
        for a in broker.socket_addrs() {
            match TcpStream::connect_timeout(a, wait) {
                Ok(stream) => {
                    stream.set_write_timeout(Some(wait)).map_err(|error| BridgeError::Io {
                        during: "setting the write timeout".into(),
                        error,
                    })?;
                    let conn = match tls {
                        None => Connection::new(stream),
                        Some(tls) => {
                            stream.set_read_timeout(Some(wait)).map_err(|error| BridgeError::Io {
                                during: "setting the read timeout".into(),
                                error,
                            })?;
                            Connection::secured(stream, tls, broker.host()).map_err(|e| BridgeError::Connect {
                                addr: broker.to_string(),
                                error: std::io::Error::other(format!("TLS: {e}")),
                            })?
                        }
                    };
                    return Ok(Link { conn, wait });
                }
                Err(e) => last = e,
            }
        }
        Err(BridgeError::Connect {
            addr: broker.to_string(),
            error: last,
        })
    }

    fn send(&mut self, p: &Packet) -> Result<(), BridgeError> {
        self.conn.send(p).map_err(|error| BridgeError::Io {
            during: format!("sending {}", describe(p)),
            error,
        })
    }

    fn publish(&mut self, topic: &str, payload: &[u8]) -> Result<(), BridgeError> {
        self.send(&Packet::Publish {
            topic: topic.into(),
            payload: payload.to_vec(),
        })
    }

    /// The next packet, before `deadline`.
    fn recv(&mut self, waiting_for: &str, deadline: Instant) -> Result<Packet, BridgeError> {
        let wait = self.wait;
        let timeout = || BridgeError::Timeout {
            waiting_for: waiting_for.into(),
            after: wait,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timeout());
        }
        self.conn.set_timeout(Some(left)).map_err(|error| BridgeError::Io {
            during: "setting the read timeout".into(),
            error,
        })?;
        self.conn.recv().map_err(|error| match error.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => timeout(),
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted => BridgeError::Closed {
                waiting_for: waiting_for.into(),
            },
            _ => BridgeError::Io {
                during: format!("waiting for {waiting_for}"),
                error,
            },
        })
    }

    /// The payload of the next PUBLISH on `topic` (other PUBLISHes and
    /// PINGRESPs are skipped), within one [`Link::wait`].
    fn wait_publish(&mut self, topic: &str, waiting_for: &str) -> Result<Vec<u8>, BridgeError> {
        let deadline = Instant::now() + self.wait;
        loop {
            match self.recv(waiting_for, deadline)? {
                Packet::Publish { topic: t, payload } if t == topic => return Ok(payload),
                Packet::Publish { .. } | Packet::PingResp => {}
                other => {
                    return Err(BridgeError::Unexpected {
                        waiting_for: waiting_for.into(),
                        packet: describe(&other),
                    })
                }
            }
        }
    }

    /// Plain CONNECT (no enhanced authentication), CONNACK 0x00 expected.
    fn plain_connect(&mut self, client_id: &str) -> Result<(), BridgeError> {
        self.send(&Packet::Connect {
            client_id: client_id.into(),
            keep_alive: 60,
            auth_method: None,
            auth_data: None,
        })?;
        let deadline = Instant::now() + self.wait;
        match self.recv("CONNACK", deadline)? {
            Packet::ConnAck {
                reason: wire::SUCCESS, ..
            } => Ok(()),
            Packet::ConnAck { reason, .. } => Err(BridgeError::Refused {
                during: "plain CONNECT".into(),
                reason,
            }),
            other => Err(BridgeError::Unexpected {
                waiting_for: "CONNACK".into(),
                packet: describe(&other),
            }),
        }
    }

    /// SUBSCRIBE at QoS 0, SUBACK without a failure expected.
    fn subscribe(&mut self, filters: &[&str]) -> Result<(), BridgeError> {
        const ID: u16 = 1;
        self.send(&Packet::Subscribe {
            packet_id: ID,
            filters: filters.iter().map(|f| f.to_string()).collect(),
        })?;
        let deadline = Instant::now() + self.wait;
        loop {
            match self.recv("SUBACK", deadline)? {
                Packet::SubAck { packet_id: ID, reasons } => {
                    return match reasons.iter().find(|r| **r >= 0x80) {
                        Some(&reason) => Err(BridgeError::Refused {
                            during: format!("SUBSCRIBE {filters:?}"),
                            reason,
                        }),
                        None => Ok(()),
                    };
                }
                Packet::Publish { .. } | Packet::PingResp => {}
                other => {
                    return Err(BridgeError::Unexpected {
                        waiting_for: "SUBACK".into(),
                        packet: describe(&other),
                    })
                }
            }
        }
    }

    /// DISCONNECT (normal); the connection closes when the link is dropped.
    fn disconnect(mut self) -> Result<(), BridgeError> {
        self.send(&Packet::Disconnect { reason: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_id_comes_from_the_client_hello() {
        assert_eq!(
            client_id_of(&[1, 1, 0x21, 5, b'a', b'v', b'r', b'-', b'1', 9]).unwrap(),
            "avr-1"
        );
        for short in [
            &[1u8, 1, 0x21][..],
            &[1, 1, 0x21, 5, b'a'],
            &[1, 1, 0x21, 2, 0xFF, 0xFE],
        ] {
            assert!(matches!(client_id_of(short), Err(BridgeError::Setup(_))), "{short:?}");
        }
    }

    /// A broker that accepts the connection and says nothing: every wait
    /// ends with a timeout error, not a hang or a panic.
    #[test]
    fn a_silent_broker_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr: BrokerAddr = listener.local_addr().unwrap().to_string().parse().unwrap();
        let mut link = Link::open(&addr, None, Duration::from_millis(200)).unwrap();
        let _peer = listener.accept().unwrap();
        let e = link.plain_connect("s1").unwrap_err();
        assert!(matches!(e, BridgeError::Timeout { .. }), "{e}");
        let e = link.wait_publish("x", "the BrokerHello").unwrap_err().to_string();
        assert!(e.contains("timed out") && e.contains("the BrokerHello"), "{e}");
    }

    /// A broker that closes the connection is reported as such.
    #[test]
    fn a_closed_connection_is_reported() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr: BrokerAddr = listener.local_addr().unwrap().to_string().parse().unwrap();
        let mut link = Link::open(&addr, None, Duration::from_secs(5)).unwrap();
        drop(listener.accept().unwrap());
        let e = link.plain_connect("s1").unwrap_err();
        assert!(matches!(e, BridgeError::Closed { .. } | BridgeError::Io { .. }), "{e}");
    }
}
