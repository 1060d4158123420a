//! The bridge of a sensor *application* image (`kem-mqtt serial-bridge`
//! without `--suite`): the board drives its own session over the link of
//! [`avr_wire::app`] — handshakes, readings, re-keying — and this side
//! carries each request to the broker and answers it. It holds no key and
//! sees no plaintext.
//!
//! | board asks | the bridge does | and answers |
//! |---|---|---|
//! | `NONCE_REQ` | ends any broker connection, draws 32 bytes from the OS | `NONCE` |
//! | `CLIENT_HELLO` | connects as the id the hello names (AUTH: CONNECT with it; topic: PUBLISH on `kem-mqtt/hs/<id>/c2b`) | `BROKER_HELLO_HEAD` or `REFUSED` |
//! | `REST_REQ` | — | `BROKER_HELLO_REST` |
//! | `CLIENT_FINISHED` | AUTH 0x18 → CONNACK; topic: PUBLISH, the gateway's confirmation | `ESTABLISHED` or `REFUSED` |
//! | `RECORD` | PUBLISH at QoS 1 on `kem-mqtt/data/c2b/<id>/<sub>`, waits for the PUBACK | `ACK` (+ the oldest command) |
//!
//! Anything it cannot carry (no connection, the broker gone, a PUBACK that
//! refuses) is answered `LINK_DOWN`: the board starts a new handshake. The
//! commands the broker seals for the sensor (`kem-mqtt/data/b2c/<id>/<sub>`)
//! wait here for the board's next record; a new handshake drops them (they
//! were sealed under the old session's keys, so the board could not open
//! them). Between requests the bridge keeps the MQTT connection alive.
//!
//! A port that fails (a USB adapter unplugged hangs it up) does not end the
//! bridge: [`serve_reopening`] logs it, ends the broker connection, and
//! opens the port again once a second until it is back (the board then
//! starts a new handshake), for at most [`Reopen::for_at_most`].

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use avr_wire::app::{self as wire, Deframed, Deframer};
use kem_mqtt::Suite;

use super::{client_id_of, describe, BridgeError, Link};
use crate::addr::BrokerAddr;
use crate::mqtt::{Packet, CONTINUE_AUTHENTICATION, SUCCESS};
use crate::transport::Tls;
use crate::Mode;

/// Seconds of MQTT keep-alive the bridge announces; it pings at half.
const KEEP_ALIVE_S: u16 = 60;
/// Commands kept for a board at most (the oldest goes first).
const MAX_QUEUED_COMMANDS: usize = 16;

/// Where the bridge carries the board's session.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The broker.
    pub broker: BrokerAddr,
    /// TLS to the broker, if any.
    pub tls: Option<Tls>,
    /// AUTH mode (the plugin) or topic mode (a gateway).
    pub mode: Mode,
    /// How long each broker answer may take.
    pub wait: Duration,
}

/// What the bridge carried.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Frames from the board with a good CRC.
    pub frames: u64,
    /// Frames dropped (bad CRC, too long, an unknown kind).
    pub dropped: u64,
    /// Handshakes the broker accepted.
    pub handshakes: u64,
    /// Requests answered `REFUSED` (the broker, or the bridge, said no).
    pub refused: u64,
    /// Records the broker acknowledged.
    pub records: u64,
    /// Commands handed to the board.
    pub commands: u64,
    /// Requests answered `LINK_DOWN`.
    pub link_down: u64,
}

impl std::fmt::Display for SessionStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} frames ({} dropped), {} handshakes ({} refused), {} records, {} commands, {} link-down answers",
            self.frames, self.dropped, self.handshakes, self.refused, self.records, self.commands, self.link_down
        )
    }
}

/// How [`serve_reopening`] waits for a lost port to come back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reopen {
    /// The pause between two attempts to open it.
    pub every: Duration,
    /// How long it tries before the bridge ends with the error (a service
    /// manager then restarts it: docs/broker.md has a systemd unit).
    pub for_at_most: Duration,
}

impl Default for Reopen {
    fn default() -> Self {
        Reopen {
            every: Duration::from_secs(1),
            for_at_most: Duration::from_secs(600),
        }
    }
}

/// [`serve`] on the port `open` gives; when that port fails, again on a new
/// one: the loss is logged, and `open` is tried every [`Reopen::every`]
/// until it succeeds, `stop` is set, or [`Reopen::for_at_most`] has passed
/// (then the error that ended the last attempt). The first `open` is not
/// retried: a port that never opened is a mistake to report at once.
pub fn serve_reopening<P: Read + Write>(
    open: &mut dyn FnMut() -> Result<P, String>,
    cfg: &SessionConfig,
    stop: &AtomicBool,
    reopen: Reopen,
    log: &mut dyn FnMut(&str),
) -> Result<SessionStats, BridgeError> {
    let mut total = SessionStats::default();
    let mut port = open().map_err(BridgeError::Setup)?;
    loop {
        let lost = match serve_counting(&mut port, cfg, stop, log, &mut total) {
            Ok(()) => return Ok(total),
            Err(BridgeError::Port(error)) => error,
            Err(e) => return Err(e),
        };
        drop(port);
        log(&format!(
            "the board's port failed ({lost}); opening it again every {} s for up to {} s",
            reopen.every.as_secs_f32(),
            reopen.for_at_most.as_secs()
        ));
        let since = Instant::now();
        port = loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(total);
            }
            std::thread::sleep(reopen.every);
            match open() {
                Ok(p) => break p,
                Err(e) if since.elapsed() >= reopen.for_at_most => {
                    return Err(BridgeError::Setup(format!(
                        "the board's port did not come back within {} s: {e}",
                        reopen.for_at_most.as_secs()
                    )))
                }
                Err(_) => {}
            }
        };
        log(&format!(
            "the board's port is back after {:.1} s",
            since.elapsed().as_secs_f32()
        ));
    }
}

/// The broker side of one board session.
struct Upstream {
    link: Link,
    id: String,
    broker_hello: Vec<u8>,
    /// Bytes of the BrokerHello the board takes first.
    head: usize,
    established: bool,
    /// `(sub, record)` sealed for the board, oldest first.
    commands: VecDeque<(String, Vec<u8>)>,
    next_packet_id: u16,
    last_sent: Instant,
}

/// An answer to the board: its kind and payload.
type Reply = (u8, Vec<u8>);

/// Serves the board on `port` until `stop` is set or the port fails;
/// `log` gets one line per event.
pub fn serve<P: Read + Write>(
    port: &mut P,
    cfg: &SessionConfig,
    stop: &AtomicBool,
    log: &mut dyn FnMut(&str),
) -> Result<SessionStats, BridgeError> {
    let mut stats = SessionStats::default();
    serve_counting(port, cfg, stop, log, &mut stats).map(|()| stats)
}

/// [`serve`], counting into `stats` (which keep what was carried when the
/// port fails).
fn serve_counting<P: Read + Write>(
    port: &mut P,
    cfg: &SessionConfig,
    stop: &AtomicBool,
    log: &mut dyn FnMut(&str),
    stats: &mut SessionStats,
) -> Result<(), BridgeError> {
    let mut bridge = Bridge {
        cfg,
        suite: None,
        up: None,
        stats,
    };
    let mut deframer: Box<Deframer<{ wire::MAX_PAYLOAD }>> = Box::default();
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        let n = match port.read(&mut buf) {
            Ok(n) => n,
            // A signal (SIGTERM: the loop ends next) interrupts a read too.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) =>
            {
                0
            }
            Err(error) => {
                bridge.close(log);
                return Err(BridgeError::Port(format!("reading the board's port: {error}")));
            }
        };
        for &b in &buf[..n] {
            let (kind, tag, reply) = match deframer.push(b) {
                Deframed::Pending => continue,
                Deframed::Dropped(e) => {
                    bridge.stats.dropped += 1;
                    log(&format!("board: a frame dropped ({e:?})"));
                    continue;
                }
                Deframed::Frame { kind, tag, payload } => {
                    bridge.stats.frames += 1;
                    (kind, tag, bridge.handle(kind, payload, log))
                }
            };
            let Some((answer, payload)) = reply else {
                bridge.stats.dropped += 1;
                log(&format!("board: frame kind {kind:#04x} is no request; dropped"));
                continue;
            };
            match answer {
                wire::LINK_DOWN => bridge.stats.link_down += 1,
                wire::REFUSED => bridge.stats.refused += 1,
                _ => {}
            }
            // Every answer is far below MAX_PAYLOAD (a BrokerHello ≤ 1.6 KB).
            let out = wire::frame(answer, tag, &payload).unwrap_or_default();
            if let Err(error) = port.write_all(&out).and_then(|()| port.flush()) {
                bridge.close(log);
                return Err(BridgeError::Port(format!("writing to the board's port: {error}")));
            }
        }
        if n == 0 {
            bridge.idle(log);
        }
    }
    bridge.close(log);
    Ok(())
}

struct Bridge<'a> {
    cfg: &'a SessionConfig,
    /// The suite of the handshake the board asked a nonce for.
    suite: Option<Suite>,
    up: Option<Upstream>,
    stats: &'a mut SessionStats,
}

impl Bridge<'_> {
    /// The answer to one request; `None` for a frame that is no request.
    fn handle(&mut self, kind: u8, payload: &[u8], log: &mut dyn FnMut(&str)) -> Option<Reply> {
        Some(match kind {
            wire::NONCE_REQ => self.nonce(payload, log),
            wire::CLIENT_HELLO => self.client_hello(payload, log),
            wire::REST_REQ => match &self.up {
                Some(up) if !up.established => (wire::BROKER_HELLO_REST, up.broker_hello[up.head..].to_vec()),
                _ => (wire::LINK_DOWN, vec![]),
            },
            wire::CLIENT_FINISHED => self.client_finished(payload, log),
            wire::RECORD => self.record(payload, log),
            _ => return None,
        })
    }

    /// Ends the broker connection (DISCONNECT when it still stands).
    fn close(&mut self, log: &mut dyn FnMut(&str)) {
        if let Some(up) = self.up.take() {
            if up.established {
                log(&format!("{}: session ended, DISCONNECT", up.id));
            }
            let _ = up.link.disconnect();
        }
    }

    /// A failed broker step: the connection goes, the board hears
    /// `REFUSED` (the broker said no) or `LINK_DOWN`.
    fn failed(&mut self, during: &str, e: BridgeError, log: &mut dyn FnMut(&str)) -> Reply {
        log(&format!("{during}: {e}"));
        self.close(log);
        match e {
            BridgeError::Refused { reason, .. } => (wire::REFUSED, vec![reason]),
            _ => (wire::LINK_DOWN, vec![]),
        }
    }

    fn nonce(&mut self, payload: &[u8], log: &mut dyn FnMut(&str)) -> Reply {
        self.close(log);
        self.suite = None;
        let suite = match payload {
            [id] => Suite::from_id(*id).ok().filter(|s| s.enabled()),
            _ => None,
        };
        let Some(suite) = suite else {
            log(&format!(
                "board: a handshake for suite {payload:02x?}, which this bridge does not know"
            ));
            return (wire::REFUSED, vec![0x80]);
        };
        self.suite = Some(suite);
        let mut nonce = vec![0u8; wire::NONCE_LEN];
        rand_core::Rng::fill_bytes(&mut crate::OsRng, &mut nonce);
        (wire::NONCE, nonce)
    }

    fn client_hello(&mut self, hello: &[u8], log: &mut dyn FnMut(&str)) -> Reply {
        let Some(suite) = self.suite.take() else {
            return (wire::LINK_DOWN, vec![]);
        };
        // `version ‖ type ‖ suite ‖ id_len ‖ id ‖ …`: the suite the board
        // asked its nonce for, and a client id.
        let id = match client_id_of(hello) {
            Ok(id) if hello.get(2) == Some(&suite.id()) => id.to_string(),
            _ => {
                log("board: a ClientHello that names no client id, or another suite");
                return (wire::REFUSED, vec![0x80]);
            }
        };
        let layout = crate::board::layout(suite.kem());
        let step = || -> Result<(Link, Vec<u8>), BridgeError> {
            let mut link = Link::open(&self.cfg.broker, self.cfg.tls.as_ref(), self.cfg.wait)?;
            let bh = match self.cfg.mode {
                Mode::Auth => {
                    link.send(&Packet::Connect {
                        client_id: id.clone(),
                        keep_alive: KEEP_ALIVE_S,
                        auth_method: Some(kem_mqtt::AUTH_METHOD.into()),
                        auth_data: Some(hello.to_vec()),
                    })?;
                    let waiting = "AUTH 0x18 with the BrokerHello";
                    match link.recv(waiting, Instant::now() + self.cfg.wait)? {
                        Packet::Auth {
                            reason: CONTINUE_AUTHENTICATION,
                            auth_data: Some(d),
                            ..
                        } => d,
                        other => return Err(super::not_the_answer(other, "CONNECT with the ClientHello", waiting)),
                    }
                }
                Mode::Topic => {
                    link.plain_connect(&id)?;
                    let (hs_b2c, commands) = (crate::hs_b2c(&id), command_filter(&id));
                    link.subscribe(&[&hs_b2c, &commands])?;
                    link.publish(&crate::hs_c2b(&id), hello)?;
                    link.wait_publish(&hs_b2c, &format!("the BrokerHello on {hs_b2c} (is a gateway running?)"))?
                }
            };
            if bh.len() > layout.max_broker_hello() {
                return Err(BridgeError::Setup(format!(
                    "a BrokerHello of {} bytes, more than the board takes",
                    bh.len()
                )));
            }
            Ok((link, bh))
        };
        match step() {
            Ok((link, broker_hello)) => {
                let head = broker_hello.len().min(layout.broker_hello_head());
                let reply = (wire::BROKER_HELLO_HEAD, broker_hello[..head].to_vec());
                log(&format!(
                    "{id}: ClientHello {} B ({}) → BrokerHello {} B",
                    hello.len(),
                    suite.name(),
                    broker_hello.len()
                ));
                self.up = Some(Upstream {
                    link,
                    id,
                    broker_hello,
                    head,
                    established: false,
                    commands: VecDeque::new(),
                    next_packet_id: 1,
                    last_sent: Instant::now(),
                });
                reply
            }
            Err(e) => self.failed(&format!("{id}: the ClientHello"), e, log),
        }
    }

    fn client_finished(&mut self, cf: &[u8], log: &mut dyn FnMut(&str)) -> Reply {
        let Some(up) = self.up.as_mut().filter(|u| !u.established) else {
            return (wire::LINK_DOWN, vec![]);
        };
        let wait = self.cfg.wait;
        let r = match self.cfg.mode {
            Mode::Auth => finish_auth(up, cf, wait),
            Mode::Topic => finish_topic(up, cf, wait),
        };
        match r {
            Ok(()) => {
                up.established = true;
                up.last_sent = Instant::now();
                self.stats.handshakes += 1;
                log(&format!(
                    "{}: session established ({} mode)",
                    up.id,
                    self.cfg.mode.name()
                ));
                (wire::ESTABLISHED, vec![])
            }
            Err(e) => {
                let id = up.id.clone();
                self.failed(&format!("{id}: the ClientFinished"), e, log)
            }
        }
    }

    fn record(&mut self, payload: &[u8], log: &mut dyn FnMut(&str)) -> Reply {
        let Some(up) = self.up.as_mut().filter(|u| u.established) else {
            return (wire::LINK_DOWN, vec![]);
        };
        let Some((sub, record)) = wire::split_sub(payload) else {
            log("board: a RECORD without a valid sub-topic");
            return (wire::LINK_DOWN, vec![]);
        };
        let topic = crate::topics::sealed_c2b(&up.id, &String::from_utf8_lossy(sub));
        match publish_acknowledged(up, &topic, record, self.cfg.wait) {
            Ok(()) => {
                self.stats.records += 1;
                let mut ack = vec![];
                if let Some((sub, command)) = up.commands.pop_front() {
                    self.stats.commands += 1;
                    ack.push(sub.len() as u8);
                    ack.extend_from_slice(sub.as_bytes());
                    ack.extend_from_slice(&command);
                    log(&format!(
                        "{}: {topic} {} B → PUBACK; command {sub} to the board",
                        up.id,
                        record.len()
                    ));
                } else {
                    log(&format!("{}: {topic} {} B → PUBACK", up.id, record.len()));
                }
                (wire::ACK, ack)
            }
            Err(e) => {
                let id = up.id.clone();
                // A refused record (the broker lost the session, say) asks
                // for a new handshake like a lost link does.
                self.failed(&format!("{id}: the record on {topic}"), e, log);
                (wire::LINK_DOWN, vec![])
            }
        }
    }

    /// Between requests: commands in, keep-alive out, a lost broker noticed.
    fn idle(&mut self, log: &mut dyn FnMut(&str)) {
        let Some(up) = self.up.as_mut().filter(|u| u.established) else {
            return;
        };
        let wait = self.cfg.wait;
        let r = (|| -> Result<(), BridgeError> {
            while up.link.conn.readable().map_err(|error| BridgeError::Io {
                during: "polling the broker".into(),
                error,
            })? {
                match up.link.recv("a command", Instant::now() + wait) {
                    Ok(p) => take_command(up, p)?,
                    Err(BridgeError::Timeout { .. }) => break,
                    Err(e) => return Err(e),
                }
            }
            if up.last_sent.elapsed() >= Duration::from_secs(u64::from(KEEP_ALIVE_S / 2)) {
                up.link.send(&Packet::PingReq)?;
                up.last_sent = Instant::now();
            }
            Ok(())
        })();
        if let Err(e) = r {
            let id = up.id.clone();
            log(&format!(
                "{id}: the broker connection: {e}; the board's next request hears LINK_DOWN"
            ));
            self.close(log);
        }
    }
}

/// The filter of the commands sealed for `id` (`kem-mqtt/data/b2c/<id>/#`,
/// which also matches the topic-mode confirmation on `…/b2c/<id>`).
fn command_filter(id: &str) -> String {
    format!("{}/#", crate::topics::sealed_b2c(id, ""))
}

/// A packet that arrived while waiting or idle: a command is queued, a
/// PINGRESP ignored; anything else ends the connection.
fn take_command(up: &mut Upstream, p: Packet) -> Result<(), BridgeError> {
    match p {
        Packet::Publish { topic, payload } => {
            let sub = crate::topics::parse_sealed_b2c(&topic)
                .filter(|(id, _)| *id == up.id)
                .map(|(_, sub)| sub.to_string());
            // Only what the board can take: a sub-topic it can name and a
            // record that fits its command buffer.
            if let Some(sub) = sub {
                let mut framed = vec![sub.len() as u8];
                framed.extend_from_slice(sub.as_bytes());
                if wire::split_sub(&framed).is_some() && payload.len() <= wire::MAX_TEXT + kem_mqtt::RECORD_OVERHEAD {
                    if up.commands.len() == MAX_QUEUED_COMMANDS {
                        up.commands.pop_front();
                    }
                    up.commands.push_back((sub, payload));
                }
            }
            Ok(())
        }
        Packet::PingResp => Ok(()),
        Packet::Disconnect { reason } => Err(BridgeError::Refused {
            during: "the session (the broker sent DISCONNECT)".into(),
            reason,
        }),
        other => Err(BridgeError::Unexpected {
            waiting_for: "a command".into(),
            packet: describe(&other),
        }),
    }
}

/// AUTH mode: AUTH 0x18 with the ClientFinished, CONNACK 0x00, then the
/// subscription to the sensor's commands.
fn finish_auth(up: &mut Upstream, cf: &[u8], wait: Duration) -> Result<(), BridgeError> {
    up.link.send(&Packet::Auth {
        reason: CONTINUE_AUTHENTICATION,
        auth_method: Some(kem_mqtt::AUTH_METHOD.into()),
        auth_data: Some(cf.to_vec()),
    })?;
    let waiting = "CONNACK after the ClientFinished";
    match up.link.recv(waiting, Instant::now() + wait)? {
        Packet::ConnAck { reason: SUCCESS, .. } => {}
        other => return Err(super::not_the_answer(other, "AUTH with the ClientFinished", waiting)),
    }
    up.link.subscribe(&[&command_filter(&up.id)])
}

/// Topic mode: the ClientFinished published, then the gateway's
/// confirmation (the session's first b2c record, on `…/b2c/<id>`).
fn finish_topic(up: &mut Upstream, cf: &[u8], wait: Duration) -> Result<(), BridgeError> {
    up.link.publish(&crate::hs_c2b(&up.id), cf)?;
    let confirmation = crate::data_b2c(&up.id);
    let waiting = format!("the gateway's confirmation on {confirmation}");
    let deadline = Instant::now() + wait;
    loop {
        match up.link.recv(&waiting, deadline)? {
            Packet::Publish { topic, .. } if topic == confirmation => return Ok(()),
            // Stale commands of an older session: the board could not open them.
            Packet::Publish { .. } | Packet::PingResp => {}
            other => return Err(super::not_the_answer(other, "the ClientFinished", &waiting)),
        }
    }
}

/// PUBLISH at QoS 1 and its PUBACK (commands that arrive meanwhile are
/// queued); a PUBACK that refuses is an error.
fn publish_acknowledged(up: &mut Upstream, topic: &str, record: &[u8], wait: Duration) -> Result<(), BridgeError> {
    let packet_id = up.next_packet_id;
    up.next_packet_id = up.next_packet_id.checked_add(1).unwrap_or(1);
    up.link.send(&Packet::PublishQos1 {
        packet_id,
        topic: topic.into(),
        payload: record.to_vec(),
    })?;
    up.last_sent = Instant::now();
    let waiting = "the PUBACK of the record";
    let deadline = Instant::now() + wait;
    loop {
        match up.link.recv(waiting, deadline)? {
            Packet::PubAck { packet_id: id, reason } if id == packet_id => {
                return if reason >= 0x80 {
                    Err(BridgeError::Refused {
                        during: format!("PUBLISH on {topic}"),
                        reason,
                    })
                } else {
                    Ok(())
                };
            }
            p => take_command(up, p)?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A board's port in memory: reads give the frames queued, then stop
    /// the bridge; writes are kept.
    struct FakePort {
        input: Vec<u8>,
        output: Vec<u8>,
        stop: Arc<AtomicBool>,
    }

    impl Read for FakePort {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.input.is_empty() {
                self.stop.store(true, Ordering::SeqCst);
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            let n = buf.len().min(self.input.len());
            buf[..n].copy_from_slice(&self.input[..n]);
            self.input.drain(..n);
            Ok(n)
        }
    }

    impl Write for FakePort {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn frame(kind: u8, tag: u8, payload: &[u8]) -> Vec<u8> {
        wire::frame(kind, tag, payload).unwrap()
    }

    /// `(kind, tag, payload)` of every frame in `bytes`.
    fn frames(bytes: &[u8]) -> Vec<(u8, u8, Vec<u8>)> {
        let mut d: Box<Deframer<{ wire::MAX_PAYLOAD }>> = Box::default();
        let mut out = vec![];
        for &b in bytes {
            if let Deframed::Frame { kind, tag, payload } = d.push(b) {
                out.push((kind, tag, payload.to_vec()));
            }
        }
        out
    }

    /// Without a broker every request gets an answer that tells the board
    /// what to do (never silence, never a panic), under the request's tag;
    /// a damaged frame and a frame that is no request get none.
    #[test]
    fn requests_it_cannot_carry_are_answered() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let broker: BrokerAddr = closed.local_addr().unwrap().to_string().parse().unwrap();
        drop(closed);
        let cfg = SessionConfig {
            broker,
            tls: None,
            mode: Mode::Auth,
            wait: Duration::from_millis(300),
        };
        let suite = Suite::ALL.into_iter().find(|s| s.enabled()).unwrap();
        let mut hello = vec![1, 1, suite.id(), 5];
        hello.extend_from_slice(b"avr-1");
        hello.resize(200, 0);
        let mut damaged = frame(wire::RECORD, 9, &[1, b'r', 0]);
        *damaged.last_mut().unwrap() ^= 1;
        let input = [
            frame(wire::RECORD, 1, &[1, b'r', 0, 0]),
            frame(wire::NONCE_REQ, 2, &[0xFF]),
            frame(wire::NONCE_REQ, 3, &[suite.id()]),
            frame(wire::CLIENT_HELLO, 4, &hello),
            frame(wire::REST_REQ, 5, &[]),
            frame(wire::CLIENT_FINISHED, 6, &[0; 34]),
            damaged,
            frame(wire::ACK, 10, &[]),
        ]
        .concat();
        let stop = Arc::new(AtomicBool::new(false));
        let mut port = FakePort {
            input,
            output: vec![],
            stop: stop.clone(),
        };
        let stats = serve(&mut port, &cfg, &stop, &mut |_| {}).unwrap();
        let answers: Vec<(u8, u8)> = frames(&port.output).iter().map(|(k, t, _)| (*k, *t)).collect();
        assert_eq!(
            answers,
            [
                (wire::LINK_DOWN, 1),
                (wire::REFUSED, 2),
                (wire::NONCE, 3),
                (wire::LINK_DOWN, 4),
                (wire::LINK_DOWN, 5),
                (wire::LINK_DOWN, 6),
            ]
        );
        assert_eq!(frames(&port.output)[2].2.len(), wire::NONCE_LEN);
        assert_eq!(
            (stats.frames, stats.dropped, stats.link_down, stats.refused),
            (7, 2, 4, 1)
        );
    }
}
