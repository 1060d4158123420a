//! A minimal MQTT v5 codec (the packets KEM-MQTT needs: CONNECT, CONNACK,
//! PUBLISH at QoS 0 and 1, PUBACK, SUBSCRIBE, SUBACK, AUTH, PINGREQ/PINGRESP, DISCONNECT)
//! and a blocking packet stream over TCP or TLS: for AUTH mode, whose
//! enhanced authentication the maintained client (`rumqttc`) does not
//! carry, and for tests and fuzzing that need raw packets.

use std::io::{self, Read, Write};
use std::net::TcpStream;

/// Reason code: success.
pub const SUCCESS: u8 = 0x00;
/// Reason code: continue authentication.
pub const CONTINUE_AUTHENTICATION: u8 = 0x18;
/// Reason code: not authorized.
pub const NOT_AUTHORIZED: u8 = 0x87;
/// Reason code: bad authentication method.
pub const BAD_AUTHENTICATION_METHOD: u8 = 0x8C;
/// Largest packet this codec accepts.
pub const MAX_PACKET: usize = 256 * 1024;

/// One MQTT v5 control packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet {
    /// CONNECT (clean start).
    Connect {
        /// Client identifier.
        client_id: String,
        /// Keep-alive in seconds.
        keep_alive: u16,
        /// Authentication Method property.
        auth_method: Option<String>,
        /// Authentication Data property.
        auth_data: Option<Vec<u8>>,
    },
    /// CONNACK.
    ConnAck {
        /// Reason code.
        reason: u8,
        /// Authentication Method property.
        auth_method: Option<String>,
        /// Authentication Data property.
        auth_data: Option<Vec<u8>>,
    },
    /// PUBLISH (QoS 0 when encoded; QoS 1/2 packet ids are skipped when decoded).
    Publish {
        /// Topic name.
        topic: String,
        /// Payload.
        payload: Vec<u8>,
    },
    /// PUBLISH at QoS 1 (the broker answers with a [`Packet::PubAck`]).
    PublishQos1 {
        /// Packet identifier (non-zero).
        packet_id: u16,
        /// Topic name.
        topic: String,
        /// Payload.
        payload: Vec<u8>,
    },
    /// PUBACK.
    PubAck {
        /// Packet identifier.
        packet_id: u16,
        /// Reason code (0x00 success, 0x10 no matching subscribers; ≥ 0x80 refused).
        reason: u8,
    },
    /// SUBSCRIBE at QoS 0.
    Subscribe {
        /// Packet identifier.
        packet_id: u16,
        /// Topic filters.
        filters: Vec<String>,
    },
    /// SUBACK.
    SubAck {
        /// Packet identifier.
        packet_id: u16,
        /// One reason code per filter.
        reasons: Vec<u8>,
    },
    /// AUTH.
    Auth {
        /// Reason code.
        reason: u8,
        /// Authentication Method property.
        auth_method: Option<String>,
        /// Authentication Data property.
        auth_data: Option<Vec<u8>>,
    },
    /// PINGREQ.
    PingReq,
    /// PINGRESP.
    PingResp,
    /// DISCONNECT.
    Disconnect {
        /// Reason code.
        reason: u8,
    },
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

fn put_varint(out: &mut Vec<u8>, mut v: usize) {
    loop {
        let mut b = (v % 128) as u8;
        v /= 128;
        if v > 0 {
            b |= 0x80;
        }
        out.push(b);
        if v == 0 {
            break;
        }
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s);
}

fn auth_props(method: &Option<String>, data: &Option<Vec<u8>>) -> Vec<u8> {
    let mut p = vec![];
    if let Some(m) = method {
        p.push(0x15);
        put_str(&mut p, m.as_bytes());
    }
    if let Some(d) = data {
        p.push(0x16);
        put_str(&mut p, d);
    }
    p
}

fn put_props(out: &mut Vec<u8>, props: &[u8]) {
    put_varint(out, props.len());
    out.extend_from_slice(props);
}

impl Packet {
    /// Encodes the packet.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = vec![];
        let first = match self {
            Packet::Connect {
                client_id,
                keep_alive,
                auth_method,
                auth_data,
            } => {
                put_str(&mut body, b"MQTT");
                body.push(5);
                body.push(0x02); // clean start
                body.extend_from_slice(&keep_alive.to_be_bytes());
                put_props(&mut body, &auth_props(auth_method, auth_data));
                put_str(&mut body, client_id.as_bytes());
                0x10
            }
            Packet::ConnAck {
                reason,
                auth_method,
                auth_data,
            } => {
                body.push(0);
                body.push(*reason);
                put_props(&mut body, &auth_props(auth_method, auth_data));
                0x20
            }
            Packet::Publish { topic, payload } => {
                put_str(&mut body, topic.as_bytes());
                put_props(&mut body, &[]);
                body.extend_from_slice(payload);
                0x30
            }
            Packet::PublishQos1 {
                packet_id,
                topic,
                payload,
            } => {
                put_str(&mut body, topic.as_bytes());
                body.extend_from_slice(&packet_id.to_be_bytes());
                put_props(&mut body, &[]);
                body.extend_from_slice(payload);
                0x32
            }
            Packet::PubAck { packet_id, reason } => {
                body.extend_from_slice(&packet_id.to_be_bytes());
                body.push(*reason);
                put_props(&mut body, &[]);
                0x40
            }
            Packet::Subscribe { packet_id, filters } => {
                body.extend_from_slice(&packet_id.to_be_bytes());
                put_props(&mut body, &[]);
                for f in filters {
                    put_str(&mut body, f.as_bytes());
                    body.push(0);
                }
                0x82
            }
            Packet::SubAck { packet_id, reasons } => {
                body.extend_from_slice(&packet_id.to_be_bytes());
                put_props(&mut body, &[]);
                body.extend_from_slice(reasons);
                0x90
            }
            Packet::Auth {
                reason,
                auth_method,
                auth_data,
            } => {
                body.push(*reason);
                put_props(&mut body, &auth_props(auth_method, auth_data));
                0xF0
            }
            Packet::PingReq => 0xC0,
            Packet::PingResp => 0xD0,
            Packet::Disconnect { reason } => {
                body.push(*reason);
                put_props(&mut body, &[]);
                0xE0
            }
        };
        let mut out = vec![first];
        put_varint(&mut out, body.len());
        out.extend_from_slice(&body);
        out
    }

    /// Decodes one packet from its first byte and body.
    pub fn decode(first: u8, body: &[u8]) -> io::Result<Packet> {
        let mut r = Reader { buf: body, pos: 0 };
        let p = match first >> 4 {
            1 => {
                if r.string()? != "MQTT" || r.u8()? != 5 {
                    return Err(bad("not MQTT v5"));
                }
                let flags = r.u8()?;
                if flags & 0xC4 != 0 {
                    // Will, user name and password are not used by KEM-MQTT.
                    return Err(bad("CONNECT flags not supported"));
                }
                let keep_alive = r.u16()?;
                let (auth_method, auth_data) = r.props()?;
                let client_id = r.string()?;
                Packet::Connect {
                    client_id,
                    keep_alive,
                    auth_method,
                    auth_data,
                }
            }
            2 => {
                r.u8()?;
                let reason = r.u8()?;
                let (auth_method, auth_data) = if r.remaining() > 0 { r.props()? } else { (None, None) };
                Packet::ConnAck {
                    reason,
                    auth_method,
                    auth_data,
                }
            }
            3 => {
                let topic = r.string()?;
                let packet_id = if (first >> 1) & 3 != 0 { Some(r.u16()?) } else { None };
                r.props()?;
                let payload = r.rest().to_vec();
                match packet_id {
                    Some(packet_id) if (first >> 1) & 3 == 1 => Packet::PublishQos1 {
                        packet_id,
                        topic,
                        payload,
                    },
                    // QoS 2 (never subscribed to here): its id is skipped.
                    _ => Packet::Publish { topic, payload },
                }
            }
            4 => {
                let packet_id = r.u16()?;
                // A PUBACK of two bytes means success (MQTT v5 3.4.2.1).
                let reason = if r.remaining() > 0 { r.u8()? } else { SUCCESS };
                if r.remaining() > 0 {
                    r.props()?;
                }
                Packet::PubAck { packet_id, reason }
            }
            8 => {
                let packet_id = r.u16()?;
                r.props()?;
                let mut filters = vec![];
                while r.remaining() > 0 {
                    filters.push(r.string()?);
                    r.u8()?;
                }
                Packet::Subscribe { packet_id, filters }
            }
            9 => {
                let packet_id = r.u16()?;
                r.props()?;
                Packet::SubAck {
                    packet_id,
                    reasons: r.rest().to_vec(),
                }
            }
            15 => {
                let reason = if r.remaining() > 0 { r.u8()? } else { SUCCESS };
                let (auth_method, auth_data) = if r.remaining() > 0 { r.props()? } else { (None, None) };
                Packet::Auth {
                    reason,
                    auth_method,
                    auth_data,
                }
            }
            12 => Packet::PingReq,
            13 => Packet::PingResp,
            14 => Packet::Disconnect {
                reason: if r.remaining() > 0 { r.u8()? } else { SUCCESS },
            },
            t => return Err(bad(&format!("packet type {t} not supported"))),
        };
        Ok(p)
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        let s = self
            .buf
            .get(self.pos..self.pos + n)
            .ok_or_else(|| bad("packet truncated"))?;
        self.pos += n;
        Ok(s)
    }
    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        s
    }
    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> io::Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn varint(&mut self) -> io::Result<usize> {
        let mut v = 0usize;
        for i in 0..4 {
            let b = self.u8()?;
            v |= ((b & 0x7F) as usize) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("variable integer too long"))
    }
    fn binary(&mut self) -> io::Result<&'a [u8]> {
        let n = self.u16()? as usize;
        self.take(n)
    }
    fn string(&mut self) -> io::Result<String> {
        String::from_utf8(self.binary()?.to_vec()).map_err(|_| bad("invalid UTF-8"))
    }
    /// Parses a property list, returning the authentication method and data and skipping the rest.
    fn props(&mut self) -> io::Result<(Option<String>, Option<Vec<u8>>)> {
        let len = self.varint()?;
        let mut p = Reader {
            buf: self.take(len)?,
            pos: 0,
        };
        let (mut method, mut data) = (None, None);
        while p.remaining() > 0 {
            match p.u8()? {
                0x15 => method = Some(p.string()?),
                0x16 => data = Some(p.binary()?.to_vec()),
                0x01 | 0x17 | 0x19 | 0x24 | 0x25 | 0x28 | 0x29 | 0x2A => {
                    p.u8()?;
                }
                0x13 | 0x21 | 0x22 | 0x23 => {
                    p.u16()?;
                }
                0x02 | 0x11 | 0x18 | 0x27 => {
                    p.take(4)?;
                }
                0x0B => {
                    p.varint()?;
                }
                0x03 | 0x08 | 0x09 | 0x12 | 0x1A | 0x1C | 0x1F => {
                    p.binary()?;
                }
                0x26 => {
                    p.binary()?;
                    p.binary()?;
                }
                id => return Err(bad(&format!("unknown property {id:#04x}"))),
            }
        }
        Ok((method, data))
    }
}

/// Reads one packet from a byte stream.
pub fn read_packet(r: &mut impl Read) -> io::Result<Packet> {
    let mut first = [0u8; 1];
    r.read_exact(&mut first)?;
    let mut len = 0usize;
    for i in 0..4 {
        let mut b = [0u8; 1];
        r.read_exact(&mut b)?;
        len |= ((b[0] & 0x7F) as usize) << (7 * i);
        if b[0] & 0x80 == 0 {
            break;
        }
        if i == 3 {
            return Err(bad("remaining length too long"));
        }
    }
    if len > MAX_PACKET {
        return Err(bad("packet too large"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Packet::decode(first[0], &body)
}

/// The bytes under a [`Connection`]: plain TCP, or TLS over it.
#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Tcp(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A blocking MQTT connection, over TCP or TLS. What the maintained client
/// (`rumqttc`, [`crate::client`]) cannot do travels here: AUTH mode's
/// enhanced authentication, and the raw packets of attack tests.
#[derive(Debug)]
pub struct Connection {
    stream: Stream,
}

impl Connection {
    /// Wraps a connected TCP stream.
    pub fn new(stream: TcpStream) -> Self {
        let _ = stream.set_nodelay(true);
        Connection {
            stream: Stream::Tcp(stream),
        }
    }

    /// Whether a packet has begun to arrive (or the connection closed), so
    /// that a [`Connection::recv`] will not wait for one that may never
    /// come: the idle poll of a long-lived connection, which must not time
    /// out in the middle of a packet.
    pub fn readable(&mut self) -> io::Result<bool> {
        if let Stream::Tls(s) = &mut self.stream {
            let buffered = s
                .conn
                .process_new_packets()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
                .plaintext_bytes_to_read();
            if buffered > 0 {
                return Ok(true);
            }
        }
        let tcp = self.stream.tcp();
        tcp.set_nonblocking(true)?;
        let peeked = tcp.peek(&mut [0u8; 1]);
        tcp.set_nonblocking(false)?;
        match peeked {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Connects to `addr` over TCP.
    pub fn connect(addr: &str) -> io::Result<Self> {
        Ok(Self::new(TcpStream::connect(addr)?))
    }

    /// Connects to `endpoint`: over TLS, the handshake completes (and the
    /// broker's certificate is checked) before this returns.
    pub fn open(endpoint: &crate::transport::Endpoint) -> Result<Self, crate::HostError> {
        let tcp = TcpStream::connect(&endpoint.addr)?;
        match &endpoint.tls {
            None => Ok(Self::new(tcp)),
            Some(tls) => Self::secured(tcp, tls, &endpoint.host_port()?.0),
        }
    }

    /// TLS over the connected `tcp`, the broker's certificate checked
    /// against `tls`'s CA certificates and `host` (a DNS name or an IP
    /// address); the handshake completes before this returns.
    pub fn secured(tcp: TcpStream, tls: &crate::transport::Tls, host: &str) -> Result<Self, crate::HostError> {
        let _ = tcp.set_nodelay(true);
        let name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| crate::HostError::Unexpected(format!("TLS server name {host:?}: {e}")))?;
        let session = rustls::ClientConnection::new(tls.config.clone(), name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let mut stream = rustls::StreamOwned::new(session, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(Connection {
            stream: Stream::Tls(Box::new(stream)),
        })
    }

    /// Sends a packet.
    pub fn send(&mut self, p: &Packet) -> io::Result<()> {
        self.stream.write_all(&p.encode())
    }

    /// Receives the next packet (honouring the read timeout).
    pub fn recv(&mut self) -> io::Result<Packet> {
        read_packet(&mut self.stream)
    }

    /// Sets the read timeout.
    pub fn set_timeout(&self, t: Option<std::time::Duration>) -> io::Result<()> {
        self.stream.tcp().set_read_timeout(t)
    }

    /// Subscribes to `filters` and waits for the SUBACK.
    pub fn subscribe(&mut self, packet_id: u16, filters: &[&str]) -> io::Result<()> {
        self.send(&Packet::Subscribe {
            packet_id,
            filters: filters.iter().map(|s| s.to_string()).collect(),
        })?;
        loop {
            match self.recv()? {
                Packet::SubAck { packet_id: id, reasons } if id == packet_id => {
                    return if reasons.iter().all(|r| *r < 0x80) {
                        Ok(())
                    } else {
                        Err(bad("subscription refused"))
                    };
                }
                Packet::Publish { .. } | Packet::PingResp => {}
                other => return Err(bad(&format!("unexpected {other:?} while subscribing"))),
            }
        }
    }

    /// Publishes at QoS 0.
    pub fn publish(&mut self, topic: &str, payload: &[u8]) -> io::Result<()> {
        self.send(&Packet::Publish {
            topic: topic.to_string(),
            payload: payload.to_vec(),
        })
    }

    /// Publishes at QoS 0 with the RETAIN flag: the broker keeps it as the
    /// topic's last message for later subscribers.
    pub fn publish_retained(&mut self, topic: &str, payload: &[u8]) -> io::Result<()> {
        let mut bytes = Packet::Publish {
            topic: topic.to_string(),
            payload: payload.to_vec(),
        }
        .encode();
        bytes[0] |= 0x01;
        self.stream.write_all(&bytes)
    }

    /// Plain CONNECT without enhanced authentication; fails unless CONNACK is success.
    pub fn mqtt_connect(&mut self, client_id: &str) -> io::Result<()> {
        self.mqtt_connect_login(client_id, None)
    }

    /// [`Connection::mqtt_connect`] with a username and password (an account
    /// of a broker's password file).
    pub fn mqtt_connect_login(&mut self, client_id: &str, login: Option<(&str, &str)>) -> io::Result<()> {
        match login {
            None => self.send(&Packet::Connect {
                client_id: client_id.into(),
                keep_alive: 60,
                auth_method: None,
                auth_data: None,
            })?,
            Some((user, password)) => {
                // The Packet codec leaves logins out (KEM-MQTT sensors never
                // send one); this CONNECT is built here: MQTT v5, clean
                // start, username and password flags, no properties.
                let mut body = vec![];
                put_str(&mut body, b"MQTT");
                body.push(5);
                body.push(0xC2);
                body.extend_from_slice(&60u16.to_be_bytes());
                put_props(&mut body, &[]);
                put_str(&mut body, client_id.as_bytes());
                put_str(&mut body, user.as_bytes());
                put_str(&mut body, password.as_bytes());
                let mut out = vec![0x10];
                put_varint(&mut out, body.len());
                out.extend_from_slice(&body);
                self.stream.write_all(&out)?;
            }
        }
        match self.recv()? {
            Packet::ConnAck { reason: SUCCESS, .. } => Ok(()),
            other => Err(bad(&format!("connect refused: {other:?}"))),
        }
    }
}

/// Whether `topic` matches the subscription `filter` (`+` and `#` wildcards).
pub fn topic_matches(filter: &str, topic: &str) -> bool {
    let mut f = filter.split('/');
    let mut t = topic.split('/');
    loop {
        match (f.next(), t.next()) {
            (Some("#"), _) => return true,
            (Some("+"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip() {
        let packets = [
            Packet::Connect {
                client_id: "s1".into(),
                keep_alive: 30,
                auth_method: Some("KEM-MQTT/1".into()),
                auth_data: Some(vec![1; 1300]),
            },
            Packet::ConnAck {
                reason: 0x87,
                auth_method: None,
                auth_data: None,
            },
            Packet::Publish {
                topic: "a/b".into(),
                payload: vec![9; 200],
            },
            Packet::PublishQos1 {
                packet_id: 9,
                topic: "a/b".into(),
                payload: vec![4, 5],
            },
            Packet::PubAck {
                packet_id: 9,
                reason: 0x87,
            },
            Packet::Subscribe {
                packet_id: 7,
                filters: vec!["a/+".into(), "b/#".into()],
            },
            Packet::SubAck {
                packet_id: 7,
                reasons: vec![0, 0],
            },
            Packet::Auth {
                reason: 0x18,
                auth_method: Some("KEM-MQTT/1".into()),
                auth_data: Some(vec![2; 34]),
            },
            Packet::PingReq,
            Packet::PingResp,
            Packet::Disconnect { reason: 0 },
        ];
        for p in packets {
            let bytes = p.encode();
            assert_eq!(read_packet(&mut &bytes[..]).unwrap(), p);
        }
    }

    #[test]
    fn wildcards() {
        assert!(topic_matches("kem-mqtt/hs/+/c2b", "kem-mqtt/hs/s1/c2b"));
        assert!(!topic_matches("kem-mqtt/hs/+/c2b", "kem-mqtt/hs/s1/b2c"));
        assert!(topic_matches("a/#", "a/b/c"));
        assert!(!topic_matches("a/b", "a/b/c"));
    }
}
