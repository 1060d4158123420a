//! `kem-mqtt serial-bridge` carries a sensor application's session across a
//! broker restart (issue #36): the bridge (`bridge::session::serve`, the
//! code behind the command) on one end of a socket pair, a board on the
//! other that speaks the link of `avr_wire::app` as the application image
//! does (here on the host, with the sensor's provisioned keys), and
//! mosquitto with the plugin, killed and restarted between two readings.
//!
//! What must hold: the first request after the broker went away is
//! answered `LINK_DOWN` within the bridge's wait (not silence, not an
//! `ACK`); the board's new handshake goes through the same bridge process
//! to the restarted broker; the reading the link lost is delivered after
//! it, opened, once; the old session's record replayed by the board (an
//! attacker on the serial line) is never delivered.

mod common;
use common::*;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use avr_wire::app::{self as wire, Deframed, Deframer};
use kem_mqtt::{SensorHandshake, Session, MAX_BROKER_HELLO_LEN, MAX_CLIENT_HELLO_LEN, RECORD_OVERHEAD};
use kem_mqtt_host::bridge::session::{serve, SessionConfig, SessionStats};
use kem_mqtt_host::keys::SensorKeys;
use kem_mqtt_host::{Mode, OsRng};

/// How long the bridge waits for each broker answer.
const WAIT: Duration = Duration::from_secs(3);
/// How long the board waits for the bridge's answer.
const BOARD_TIMEOUT: Duration = Duration::from_secs(15);

/// The board's side of the link: numbered requests, one answer each.
struct Board<'k> {
    port: UnixStream,
    deframer: Box<Deframer<{ wire::MAX_PAYLOAD }>>,
    tag: u8,
    keys: &'k SensorKeys,
}

impl Board<'_> {
    /// Sends a request and returns the answer's kind and payload (an answer
    /// under another tag is a test failure: nothing else talks on this link).
    fn call(&mut self, kind: u8, payload: &[u8]) -> (u8, Vec<u8>) {
        self.tag = self.tag.wrapping_add(1);
        self.port
            .write_all(&wire::frame(kind, self.tag, payload).unwrap())
            .unwrap();
        let deadline = Instant::now() + BOARD_TIMEOUT;
        let mut byte = [0u8; 1];
        loop {
            assert!(Instant::now() < deadline, "no answer to request {kind:#04x}");
            match self.port.read(&mut byte) {
                Ok(0) => panic!("the bridge closed the link"),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => panic!("reading the link: {e}"),
            }
            if let Deframed::Frame { kind: k, tag, payload } = self.deframer.push(byte[0]) {
                assert_eq!(tag, self.tag, "an answer under another tag");
                return (k, payload.to_vec());
            }
        }
    }

    /// A whole handshake through the bridge: the session.
    fn handshake(&mut self) -> Session {
        let suite = self.keys.suite;
        let (kind, nonce) = self.call(wire::NONCE_REQ, &[suite.id()]);
        assert_eq!((kind, nonce.len()), (wire::NONCE, wire::NONCE_LEN));
        let mut ch = vec![0u8; MAX_CLIENT_HELLO_LEN];
        let (state, n) = SensorHandshake::start(suite, self.keys.credentials(), &mut OsRng, &mut ch).unwrap();
        let (kind, mut bh) = self.call(wire::CLIENT_HELLO, &ch[..n]);
        assert_eq!(kind, wire::BROKER_HELLO_HEAD, "{bh:?}");
        let (kind, rest) = self.call(wire::REST_REQ, &[]);
        assert_eq!(kind, wire::BROKER_HELLO_REST);
        bh.extend_from_slice(&rest);
        assert!(bh.len() <= MAX_BROKER_HELLO_LEN);
        let mut cf = vec![0u8; 64];
        let (session, n) = state.receive_broker_hello(&bh, &mut cf).unwrap();
        let (kind, reason) = self.call(wire::CLIENT_FINISHED, &cf[..n]);
        assert_eq!(kind, wire::ESTABLISHED, "refused: {reason:?}");
        session
    }

    /// The RECORD frame's payload of a reading: `sub_len ‖ sub ‖ record`.
    fn sealed_reading(&self, session: &mut Session, text: &str) -> Vec<u8> {
        let sub = b"reading";
        let topic = [wire::C2B_PREFIX, self.keys.client_id.as_bytes(), b"/", sub].concat();
        let mut record = vec![0u8; text.len() + RECORD_OVERHEAD];
        let n = session.seal(&topic, text.as_bytes(), &mut record).unwrap();
        [&[sub.len() as u8][..], sub, &record[..n]].concat()
    }
}

#[test]
fn the_bridge_carries_a_board_across_a_broker_restart() {
    let (secrets, registry, keys) = enrol(&[("avr-restart", suite("ctru-light-ascon+x25519"))]);
    let keys = &keys[0];
    let mut broker = Broker::start(
        "bridge-restart",
        &secrets,
        &registry,
        Conf::DocumentedWith(NO_RATE_LIMITS),
        &plugin_path(),
    );
    let (board_end, mut bridge_end) = UnixStream::pair().unwrap();
    // The bridge polls its stop flag between reads, as on a serial port.
    bridge_end.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    board_end.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = SessionConfig {
        broker: broker.addr().parse().unwrap(),
        tls: None,
        mode: Mode::Auth,
        wait: WAIT,
    };
    let bridge = std::thread::spawn({
        let stop = stop.clone();
        move || -> SessionStats {
            serve(&mut bridge_end, &cfg, &stop, &mut |line| eprintln!("bridge: {line}")).unwrap()
        }
    });
    let mut board = Board {
        port: board_end,
        deframer: Box::default(),
        tag: 0,
        keys,
    };
    let plain = format!("plain/{}/reading", keys.client_id);

    // Session 1: one reading, delivered.
    let (sub, lines) = Subscriber::start_live(&broker, "plain/#").unwrap();
    let mut session = board.handshake();
    let first = board.sealed_reading(&mut session, "reading 0");
    assert_eq!(board.call(wire::RECORD, &first).0, wire::ACK);
    assert_eq!(
        lines.recv_timeout(Duration::from_secs(5)).unwrap(),
        format!("{plain} reading 0")
    );
    drop(sub);

    // The broker dies and comes back; the bridge's connection is gone.
    broker.kill();
    broker.restart();
    let (sub, lines) = Subscriber::start_live(&broker, "plain/#").unwrap();
    let lost = board.sealed_reading(&mut session, "reading 1");
    let t = Instant::now();
    let (kind, _) = board.call(wire::RECORD, &lost);
    assert_eq!(
        kind,
        wire::LINK_DOWN,
        "a record after the restart must be answered LINK_DOWN"
    );
    assert!(
        t.elapsed() <= WAIT + Duration::from_secs(2),
        "LINK_DOWN took {:?}",
        t.elapsed()
    );

    // Session 2 through the same bridge: the lost reading, sealed again
    // under the new keys, is delivered once.
    let mut session = board.handshake();
    let again = board.sealed_reading(&mut session, "reading 1");
    assert_eq!(board.call(wire::RECORD, &again).0, wire::ACK);
    assert_eq!(
        lines.recv_timeout(Duration::from_secs(5)).unwrap(),
        format!("{plain} reading 1")
    );
    // The first session's record, replayed on the serial line into the
    // second session: the broker receives it (its PUBACK says no more) and
    // the plugin, which cannot open it under the new keys, delivers nothing.
    board.call(wire::RECORD, &first);
    assert!(
        lines.recv_timeout(Duration::from_secs(1)).is_err(),
        "a replayed record was delivered"
    );
    drop(sub);

    stop.store(true, Ordering::SeqCst);
    let stats = bridge.join().unwrap();
    assert_eq!((stats.handshakes, stats.records), (2, 3), "{stats}");
    assert!(stats.link_down >= 1, "{stats}");
    broker.assert_alive();
}
