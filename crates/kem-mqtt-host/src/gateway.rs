//! The topic-mode gateway: answers handshakes published on
//! `kem-mqtt/hs/+/c2b` and opens records on `kem-mqtt/data/+/c2b`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kem_mqtt::{
    AwaitClientFinished, BrokerHandshake, Session, Suite, MAX_BROKER_HELLO_LEN, MSG_CLIENT_FINISHED, MSG_CLIENT_HELLO,
    RECORD_OVERHEAD,
};
use rand_core::OsRng;

use crate::keys::BrokerState;
use crate::mqtt::{Connection, Packet};
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
    /// A handshake completed.
    Established {
        /// Client id.
        client_id: String,
        /// Suite.
        suite: Suite,
    },
    /// A record was opened.
    Message {
        /// Client id.
        client_id: String,
        /// Plaintext.
        payload: Vec<u8>,
    },
    /// A handshake message or record was rejected.
    Rejected {
        /// Client id from the topic.
        client_id: String,
        /// Why.
        error: kem_mqtt::Error,
    },
    /// Some other packet (ignored).
    Other,
}

/// The gateway service.
pub struct Gateway {
    conn: Connection,
    state: Arc<BrokerState>,
    pending: HashMap<String, AwaitClientFinished>,
    sessions: HashMap<String, Session>,
}

impl Gateway {
    /// Connects to the broker at `addr` as `kem-mqtt-gateway` and subscribes.
    pub fn connect(addr: &str, state: Arc<BrokerState>) -> Result<Self, HostError> {
        let mut conn = Connection::connect(addr)?;
        conn.set_timeout(Some(Duration::from_secs(10)))?;
        conn.mqtt_connect("kem-mqtt-gateway")?;
        conn.subscribe(1, &["kem-mqtt/hs/+/c2b", "kem-mqtt/data/+/c2b"])?;
        Ok(Gateway {
            conn,
            state,
            pending: HashMap::new(),
            sessions: HashMap::new(),
        })
    }

    /// Sets how long [`Gateway::poll`] waits (`None`: forever).
    pub fn set_timeout(&self, t: Option<Duration>) -> Result<(), HostError> {
        Ok(self.conn.set_timeout(t)?)
    }

    /// Handles the next packet.
    pub fn poll(&mut self) -> Result<GatewayEvent, HostError> {
        let (topic, payload) = match self.conn.recv()? {
            Packet::Publish { topic, payload } => (topic, payload),
            _ => return Ok(GatewayEvent::Other),
        };
        let parts: Vec<&str> = topic.split('/').collect();
        let (kind, client_id) = match parts.as_slice() {
            ["kem-mqtt", kind, id, "c2b"] => (*kind, id.to_string()),
            _ => return Ok(GatewayEvent::Other),
        };
        let rejected = |error| GatewayEvent::Rejected {
            client_id: client_id.clone(),
            error,
        };
        match (kind, payload.get(1).copied()) {
            ("hs", Some(MSG_CLIENT_HELLO)) => {
                let mut buf = vec![0u8; MAX_BROKER_HELLO_LEN];
                match BrokerHandshake::accept(&*self.state, &payload, &mut OsRng, &mut buf) {
                    // The client id inside the hello must be the one in the topic.
                    Ok((p, _)) if p.client_id() != client_id.as_bytes() => {
                        Ok(rejected(kem_mqtt::Error::InvalidClientId))
                    }
                    Ok((p, n)) => {
                        self.pending.insert(client_id.clone(), p);
                        self.conn.publish(&hs_b2c(&client_id), &buf[..n])?;
                        Ok(GatewayEvent::HelloAnswered {
                            client_id,
                            broker_hello: n,
                        })
                    }
                    Err(e) => Ok(rejected(e)),
                }
            }
            ("hs", Some(MSG_CLIENT_FINISHED)) => {
                let Some(p) = self.pending.remove(&client_id) else {
                    return Ok(rejected(kem_mqtt::Error::UnexpectedMessage {
                        expected: MSG_CLIENT_HELLO,
                        got: MSG_CLIENT_FINISHED,
                    }));
                };
                let suite = p.suite();
                match p.receive_client_finished(&payload) {
                    Ok(s) => {
                        self.sessions.insert(client_id.clone(), s);
                        Ok(GatewayEvent::Established { client_id, suite })
                    }
                    Err(e) => Ok(rejected(e)),
                }
            }
            ("data", _) => {
                let Some(s) = self.sessions.get_mut(&client_id) else {
                    return Ok(rejected(kem_mqtt::Error::UnknownClient));
                };
                let mut pt = vec![0u8; payload.len().saturating_sub(RECORD_OVERHEAD)];
                match s.open(topic.as_bytes(), &payload, &mut pt) {
                    Ok(n) => {
                        pt.truncate(n);
                        Ok(GatewayEvent::Message { client_id, payload: pt })
                    }
                    Err(e) => Ok(rejected(e)),
                }
            }
            (_, t) => Ok(rejected(kem_mqtt::Error::UnexpectedMessage {
                expected: MSG_CLIENT_HELLO,
                got: t.unwrap_or(0),
            })),
        }
    }

    /// Seals `payload` for `client_id` and publishes it on `kem-mqtt/data/<id>/b2c`.
    pub fn send(&mut self, client_id: &str, payload: &[u8]) -> Result<usize, HostError> {
        let s = self
            .sessions
            .get_mut(client_id)
            .ok_or(HostError::Protocol(kem_mqtt::Error::UnknownClient))?;
        let topic = data_b2c(client_id);
        let mut rec = vec![0u8; payload.len() + RECORD_OVERHEAD];
        let n = s.seal(topic.as_bytes(), payload, &mut rec)?;
        self.conn.publish(&topic, &rec[..n])?;
        Ok(n)
    }
}
