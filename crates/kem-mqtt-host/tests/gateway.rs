//! The topic-mode gateway against third parties (issue #21, finding 2 and
//! the gateway part of 6): forged ClientFinished, replayed ClientHellos,
//! interleaved handshakes, a sensor that must learn that its handshake
//! failed, and a ClientHello flood. Every test runs against the embedded
//! broker on 127.0.0.1; every loop is bounded in count and time.
//!
//! The tests drive a "manual" sensor (the protocol core over a raw MQTT
//! connection) so that the order in which the gateway sees the sensor's and
//! the attacker's messages is fixed: each message is published only after
//! the gateway has reported an event for the previous one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kem_mqtt::{Session, Suite, SuiteSet, MAX_BROKER_HELLO_LEN, MAX_CLIENT_HELLO_LEN, RECORD_OVERHEAD};
use kem_mqtt_host::admission::Refusal;
use kem_mqtt_host::broker::EmbeddedBroker;
use kem_mqtt_host::gateway::{
    Cluster, DropReason, Gateway, GatewayConfig, GatewayCore, GatewayEvent, GatewayStats, Shard,
};
use kem_mqtt_host::keys::{BrokerState, Registry, SensorKeys};
use kem_mqtt_host::mqtt::{Connection, Packet};
use kem_mqtt_host::reload::RegistryWatch;
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::OsRng;
use kem_mqtt_host::{data_b2c, data_c2b, hs_b2c, hs_c2b, HostError};
use rand_core::Rng as _;

mod common;

fn enrol(suites: &[Suite]) -> (BrokerState, Vec<SensorKeys>) {
    common::enrol(suites, |s| SuiteSet::EMPTY.with(s))
}

const TIMEOUT: Duration = Duration::from_secs(10);

fn suite(name: &str) -> Suite {
    Suite::from_name(name).unwrap()
}

struct Site {
    broker: EmbeddedBroker,
    gw: Gateway,
    attacker: Connection,
}

impl Site {
    fn new(state: BrokerState) -> Site {
        let broker = EmbeddedBroker::start().unwrap();
        let addr = broker.addr().to_string();
        let mut gw = Gateway::connect(&addr, Arc::new(state)).unwrap();
        gw.set_timeout(Some(TIMEOUT));
        let mut attacker = Connection::connect(&addr).unwrap();
        attacker.set_timeout(Some(TIMEOUT)).unwrap();
        attacker.mqtt_connect("attacker").unwrap();
        Site { broker, gw, attacker }
    }

    fn addr(&self) -> String {
        self.broker.addr().to_string()
    }

    /// The gateway's next event that is not [`GatewayEvent::Other`].
    fn event(&mut self) -> GatewayEvent {
        let t = Instant::now();
        loop {
            assert!(t.elapsed() < TIMEOUT, "no gateway event");
            match self.gw.poll().unwrap() {
                GatewayEvent::Other => {}
                e => return e,
            }
        }
    }

    /// The attacker publishes `payload` on `topic`; returns the gateway's event for it.
    fn inject(&mut self, topic: &str, payload: &[u8]) -> GatewayEvent {
        self.attacker.publish(topic, payload).unwrap();
        self.event()
    }
}

/// A sensor's flight 1: the state awaiting the BrokerHello and the
/// ClientHello's bytes.
fn hello(keys: &SensorKeys) -> (kem_mqtt::AwaitBrokerHello<'_>, Vec<u8>) {
    let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
    let (state, n) = kem_mqtt::SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf).unwrap();
    buf.truncate(n);
    (state, buf)
}

/// A sensor driven step by step over its own MQTT connection.
struct Manual<'k> {
    keys: &'k SensorKeys,
    conn: Connection,
}

impl<'k> Manual<'k> {
    fn new(addr: &str, keys: &'k SensorKeys) -> Self {
        let mut conn = Connection::connect(addr).unwrap();
        conn.set_timeout(Some(TIMEOUT)).unwrap();
        conn.mqtt_connect(&keys.client_id).unwrap();
        conn.subscribe(1, &[&hs_b2c(&keys.client_id), &data_b2c(&keys.client_id)])
            .unwrap();
        Manual { keys, conn }
    }

    /// Flight 1: the state awaiting the BrokerHello and the ClientHello's bytes (not yet sent).
    fn hello(&self) -> (kem_mqtt::AwaitBrokerHello<'k>, Vec<u8>) {
        hello(self.keys)
    }

    fn publish_hs(&mut self, msg: &[u8]) {
        self.conn.publish(&hs_c2b(&self.keys.client_id), msg).unwrap();
    }

    /// The next BrokerHello on `hs/<id>/b2c`.
    fn broker_hello(&mut self) -> Vec<u8> {
        loop {
            match self.conn.recv().unwrap() {
                Packet::Publish { topic, payload } if topic == hs_b2c(&self.keys.client_id) => return payload,
                _ => {}
            }
        }
    }

    /// Flight 3 for `bh`: the session and the ClientFinished's bytes (not yet sent).
    fn finish(state: kem_mqtt::AwaitBrokerHello<'k>, bh: &[u8]) -> (Session, Vec<u8>) {
        let mut buf = vec![0u8; MAX_BROKER_HELLO_LEN];
        let (s, n) = state.receive_broker_hello(bh, &mut buf).unwrap();
        buf.truncate(n);
        (s, buf)
    }

    /// The gateway's confirmation: the first record on `data/<id>/b2c`, empty.
    fn confirmation(&mut self, session: &mut Session) {
        let topic = data_b2c(&self.keys.client_id);
        loop {
            match self.conn.recv().unwrap() {
                Packet::Publish { topic: t, payload } if t == topic => {
                    let mut pt = vec![0u8; payload.len()];
                    assert_eq!(session.open(topic.as_bytes(), &payload, &mut pt), Ok(0));
                    return;
                }
                _ => {}
            }
        }
    }

    fn record(&self, session: &mut Session, text: &[u8]) -> Vec<u8> {
        let topic = data_c2b(&self.keys.client_id);
        let mut rec = vec![0u8; text.len() + RECORD_OVERHEAD];
        let n = session.seal(topic.as_bytes(), text, &mut rec).unwrap();
        rec.truncate(n);
        rec
    }
}

fn is_answered(e: &GatewayEvent) -> bool {
    matches!(e, GatewayEvent::HelloAnswered { .. })
}

/// After the handshake the sensor's record must open at the gateway.
fn assert_record_opens(site: &mut Site, m: &mut Manual, session: &mut Session, text: &[u8]) {
    let rec = m.record(session, text);
    m.conn.publish(&data_c2b(&m.keys.client_id), &rec).unwrap();
    match site.event() {
        GatewayEvent::Message { client_id, payload, .. } => {
            assert_eq!(
                (client_id.as_str(), payload.as_slice()),
                (m.keys.client_id.as_str(), text)
            )
        }
        e => panic!("the sensor's record was not accepted: {e:?}"),
    }
}

#[test]
fn forged_client_finished_does_not_discard_the_pending_handshake() {
    let (state, sensors) = enrol(&[suite("ml-kem-512+x25519")]);
    let mut site = Site::new(state);
    let mut m = Manual::new(&site.addr(), &sensors[0]);
    let topic = hs_c2b(&m.keys.client_id);

    let (st, ch) = m.hello();
    m.publish_hs(&ch);
    assert!(is_answered(&site.event()));
    let bh = m.broker_hello();
    let (mut session, cf) = Manual::finish(st, &bh);

    // Forgeries before the sensor's flight 3: the four bytes, a
    // full-length random MAC, the right MAC with one bit flipped.
    let mut flipped = cf.clone();
    flipped[7] ^= 0x10;
    let mut random = cf.clone();
    OsRng.fill_bytes(&mut random[2..]);
    for forged in [vec![1, 3, 0, 0], random, flipped] {
        match site.inject(&topic, &forged) {
            GatewayEvent::Rejected { .. } => {}
            e => panic!("a forged ClientFinished was not rejected: {e:?}"),
        }
    }
    // The sensor's own ClientFinished still completes its handshake.
    m.publish_hs(&cf);
    match site.event() {
        GatewayEvent::Established { client_id, .. } => assert_eq!(client_id, m.keys.client_id),
        e => panic!("the honest ClientFinished was refused after forgeries: {e:?}"),
    }
    m.confirmation(&mut session);
    assert_record_opens(&mut site, &mut m, &mut session, b"after forgeries");
    // And a forgery after the handshake does not disturb the session.
    assert!(matches!(
        site.inject(&topic, &[1, 3, 0, 0]),
        GatewayEvent::Rejected { .. }
    ));
    assert_record_opens(&mut site, &mut m, &mut session, b"still here");
    let stats = site.gw.stats();
    assert_eq!(
        (stats.established, stats.finished_invalid, stats.finished_unexpected),
        (1, 3, 1),
        "{stats}"
    );
    assert_eq!(stats.records_opened, 2, "{stats}");
    site.broker.stop();
}

#[test]
fn replayed_client_hello_does_not_replace_the_pending_handshake() {
    let (state, sensors) = enrol(&[suite("ctru-light-sha3")]);
    let mut site = Site::new(state);
    let mut m = Manual::new(&site.addr(), &sensors[0]);
    let topic = hs_c2b(&m.keys.client_id);

    // Handshake 1, completed: its ClientHello is on the wire for anyone to record.
    let (st, ch1) = m.hello();
    m.publish_hs(&ch1);
    assert!(is_answered(&site.event()));
    let bh = m.broker_hello();
    let (_, cf1) = Manual::finish(st, &bh);
    m.publish_hs(&cf1);
    assert!(matches!(site.event(), GatewayEvent::Established { .. }));

    // Handshake 2, pending: the attacker replays the old hello and the
    // pending one, and the completed flight 3.
    let (st, ch2) = m.hello();
    m.publish_hs(&ch2);
    assert!(is_answered(&site.event()));
    let bh2 = m.broker_hello();
    for replay in [&ch1, &ch2, &ch1, &cf1] {
        let e = site.inject(&topic, replay);
        assert!(
            !matches!(e, GatewayEvent::Established { .. }),
            "a replay established a session: {e:?}"
        );
    }
    // The copy of the pending hello got the same BrokerHello again.
    assert_eq!(m.broker_hello(), bh2);
    let (mut session, cf2) = Manual::finish(st, &bh2);
    m.publish_hs(&cf2);
    match site.event() {
        GatewayEvent::Established { client_id, .. } => assert_eq!(client_id, m.keys.client_id),
        e => panic!("the honest ClientFinished was refused after replays: {e:?}"),
    }
    m.confirmation(&mut session);
    assert_record_opens(&mut site, &mut m, &mut session, b"after replays");
    // No replay cost a decapsulation: two hellos answered, the sensor's.
    let stats = site.gw.stats();
    assert_eq!(
        (stats.hellos_answered, stats.hellos_replayed, stats.hellos_repeated),
        (2, 2, 1),
        "{stats}"
    );
    assert_eq!((stats.established, stats.finished_invalid), (2, 1), "{stats}");
    site.broker.stop();
}

#[test]
fn interleaved_handshakes_of_two_sensors_with_noise() {
    let (state, sensors) = enrol(&[suite("lightsaber+x25519"), suite("kyber512-r3")]);
    let mut site = Site::new(state);
    let addr = site.addr();
    let mut a = Manual::new(&addr, &sensors[0]);
    let mut b = Manual::new(&addr, &sensors[1]);

    let (sa, cha) = a.hello();
    let (sb, chb) = b.hello();
    a.publish_hs(&cha);
    assert!(is_answered(&site.event()));
    b.publish_hs(&chb);
    assert!(is_answered(&site.event()));
    // A's hello replayed on B's topic (id mismatch) and B's on A's.
    assert!(!is_answered(&site.inject(&hs_c2b(&b.keys.client_id), &cha)));
    assert!(!is_answered(&site.inject(&hs_c2b(&a.keys.client_id), &chb)));
    let (mut session_b, cfb) = Manual::finish(sb, &b.broker_hello());
    let (mut session_a, cfa) = Manual::finish(sa, &a.broker_hello());
    // B's flight 3 on A's topic: refused, and A's handshake survives it.
    assert!(matches!(
        site.inject(&hs_c2b(&a.keys.client_id), &cfb),
        GatewayEvent::Rejected { .. }
    ));
    b.publish_hs(&cfb);
    assert!(matches!(site.event(), GatewayEvent::Established { client_id, .. } if client_id == b.keys.client_id));
    a.publish_hs(&cfa);
    assert!(matches!(site.event(), GatewayEvent::Established { client_id, .. } if client_id == a.keys.client_id));
    assert_record_opens(&mut site, &mut a, &mut session_a, b"from a");
    assert_record_opens(&mut site, &mut b, &mut session_b, b"from b");
    site.broker.stop();
}

#[test]
fn a_sensor_learns_that_its_handshake_was_dropped() {
    let (state, sensors) = enrol(&[suite("ml-kem-512")]);
    let mut site = Site::new(state);
    let addr = site.addr();
    let keys = sensors[0].clone();
    let sensor =
        std::thread::spawn(move || SensorClient::connect_topic_mode(&addr, &keys, Duration::from_millis(1500)));
    // The gateway answers flight 1 and then goes away: flight 3 reaches nobody.
    assert!(is_answered(&site.event()));
    let Site { broker, gw, .. } = site;
    drop(gw);
    let r = sensor.join().unwrap();
    assert!(
        matches!(r, Err(HostError::Timeout)),
        "the sensor believes in a session the gateway never established: {r:?}"
    );
    broker.stop();
}

#[test]
fn client_hello_flood_for_a_registered_id_is_refused_before_any_decapsulation() {
    let (state, sensors) = enrol(&[suite("ml-kem-512+x25519")]);
    let mut site = Site::new(state);
    let keys = &sensors[0];
    let topic = hs_c2b(&keys.client_id);
    // Well-formed hellos for a registered id: a valid ephemeral key (one
    // honest one, reused), random nonce, ciphertext and X25519 share. The
    // broker cannot tell them from honest ones without decapsulating.
    let (_, template) = Manual::new(&site.addr(), keys).hello();
    let kem = keys.suite.kem();
    let nonce = 4 + keys.client_id.len();
    let ct = nonce + kem_mqtt::NONCE_LEN + kem.pk_len();
    // Bounded: 200 hellos over loopback, one at a time.
    const FLOOD: usize = 200;
    let (mut answered, mut refused) = (vec![], vec![]);
    for _ in 0..FLOOD {
        let mut ch = template.clone();
        OsRng.fill_bytes(&mut ch[nonce..nonce + kem_mqtt::NONCE_LEN]);
        OsRng.fill_bytes(&mut ch[ct..]);
        site.attacker.publish(&topic, &ch).unwrap();
        // The gateway's CPU time for this message: MQTT decoding, the
        // checks, and the decapsulation if it gets that far.
        let cpu = thread_cpu();
        let e = site.event();
        let spent = thread_cpu() - cpu;
        match e {
            GatewayEvent::HelloAnswered { .. } => answered.push(spent),
            GatewayEvent::Dropped {
                reason: DropReason::RateLimited(Refusal::ClientId),
                ..
            } => refused.push(spent),
            e => panic!("{e:?}"),
        }
    }
    let burst = GatewayConfig::default().admission.per_id.burst as usize;
    assert!(
        answered.len() <= burst,
        "{} of {FLOOD} forged hellos cost a decapsulation",
        answered.len()
    );
    let stats = site.gw.stats();
    assert_eq!(stats.hellos_answered as usize, answered.len(), "{stats}");
    assert_eq!(stats.hellos_rate_limited as usize, refused.len(), "{stats}");
    let (a, r) = (median(&mut answered), median(&mut refused));
    eprintln!(
        "{FLOOD} forged hellos through the embedded broker: {} answered (median {a:.2?} of gateway CPU), \
         {} refused (median {r:.2?}, max {:.2?})",
        answered.len(),
        refused.len(),
        refused.iter().max().unwrap()
    );
    // Asserted by the counters above (a rate-limited hello never reaches
    // the decapsulation); the CPU medians are printed, not asserted: a timed
    // assertion fails on a loaded machine, not on a regression.
    site.broker.stop();
}

#[test]
fn a_sensor_retries_until_a_gateway_confirms() {
    let (state, sensors) = enrol(&[suite("kyber512-r3")]);
    let broker = EmbeddedBroker::start().unwrap();
    let addr = broker.addr().to_string();
    let keys = sensors[0].clone();
    let sensor = std::thread::spawn({
        let addr = addr.clone();
        move || SensorClient::connect_topic_mode_retrying(&addr, &keys, Duration::from_millis(700), 4)
    });
    // No gateway during the first attempt: its hello reaches nobody.
    std::thread::sleep(Duration::from_millis(900));
    let mut gw = Gateway::connect(&addr, Arc::new(state)).unwrap();
    gw.set_timeout(Some(TIMEOUT));
    let t = Instant::now();
    while gw.stats().established == 0 {
        assert!(t.elapsed() < TIMEOUT, "no handshake");
        gw.poll().unwrap();
    }
    let mut c = sensor.join().unwrap().expect("a later attempt succeeds");
    c.send(b"late but safe").unwrap();
    loop {
        match gw.poll().unwrap() {
            GatewayEvent::Message { payload, .. } => break assert_eq!(payload, b"late but safe"),
            GatewayEvent::Other => {}
            e => panic!("{e:?}"),
        }
    }
    broker.stop();
}

// ---------------------------------------------------------------- sans-IO core, time injected

/// An honest sensor without MQTT: its flights as bytes.
struct Offline<'k> {
    keys: &'k SensorKeys,
    topic: String,
}

impl<'k> Offline<'k> {
    fn new(keys: &'k SensorKeys) -> Self {
        Offline {
            keys,
            topic: hs_c2b(&keys.client_id),
        }
    }

    fn hello(&self) -> (kem_mqtt::AwaitBrokerHello<'k>, Vec<u8>) {
        hello(self.keys)
    }

    /// A hello for this id that only the broker's decapsulation could tell
    /// from an honest one: `template`'s ephemeral key, random nonce, ciphertext and share.
    fn forged_hello(&self, template: &[u8]) -> Vec<u8> {
        let mut ch = template.to_vec();
        let nonce = 4 + self.keys.client_id.len();
        let ct = nonce + kem_mqtt::NONCE_LEN + self.keys.suite.kem().pk_len();
        OsRng.fill_bytes(&mut ch[nonce..nonce + kem_mqtt::NONCE_LEN]);
        OsRng.fill_bytes(&mut ch[ct..]);
        ch
    }
}

/// This thread's CPU time so far: `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`
/// from the C library std links (exact at each read; /proc's schedstat is
/// only brought up to date at context switches).
fn thread_cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3; // Linux
    let mut t = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec (x86-64/aarch64 Linux layout).
    let r = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(r, 0, "clock_gettime");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A gateway core with default limits and one sensor of `suite_name`.
fn core(suite_name: &str) -> (GatewayCore, GatewayConfig, Vec<SensorKeys>) {
    let (state, sensors) = enrol(&[suite(suite_name)]);
    let config = GatewayConfig::default();
    (GatewayCore::new(Arc::new(state), config.clone()), config, sensors)
}

/// The BrokerHello among `out` (the answer to a hello).
fn broker_hello_of(out: &[(String, Vec<u8>)]) -> Vec<u8> {
    assert_eq!(out.len(), 1, "{out:?}");
    out[0].1.clone()
}

#[test]
fn pending_handshakes_expire_and_a_late_client_finished_is_refused() {
    let (mut gw, config, sensors) = core("ml-kem-512");
    let s = Offline::new(&sensors[0]);
    let t0 = Instant::now();

    // In time: established.
    let (st, ch) = s.hello();
    let (e, out) = gw.handle(&s.topic, &ch, t0);
    assert!(is_answered(&e), "{e:?}");
    let (_, cf) = Manual::finish(st, &broker_hello_of(&out));
    let late = config.pending_lifetime - Duration::from_millis(1);
    let (e, out) = gw.handle(&s.topic, &cf, t0 + late);
    assert!(matches!(e, GatewayEvent::Established { .. }), "{e:?}");
    assert_eq!(out.len(), 1, "the confirmation record");

    // Too late: the state is gone, the ClientFinished refused, the expiry counted.
    let t1 = t0 + Duration::from_secs(3600);
    let (st, ch) = s.hello();
    let (_, out) = gw.handle(&s.topic, &ch, t1);
    let (_, cf) = Manual::finish(st, &broker_hello_of(&out));
    assert_eq!(gw.pending(&s.keys.client_id, t1), 1);
    let t2 = t1 + config.pending_lifetime;
    assert_eq!(gw.pending(&s.keys.client_id, t2), 0);
    let (e, out) = gw.handle(&s.topic, &cf, t2);
    assert!(matches!(e, GatewayEvent::Rejected { .. }), "{e:?}");
    assert!(out.is_empty());
    // The next message sweeps the expired state.
    gw.handle(&s.topic, &[1, 3, 0, 0], t2 + Duration::from_secs(2));
    let stats = gw.stats();
    assert_eq!((stats.established, stats.finished_unexpected), (1, 2), "{stats}");
    assert_eq!(stats.pending_expired, 1, "{stats}");
}

/// Topic mode: the gateway never learns that a sensor's connection ended, so
/// an idle session expires (its keys dropped) and the sensor's next
/// handshake is a new session; an authentic record keeps it alive, a forged
/// one does not.
#[test]
fn idle_sessions_expire_and_only_authentic_records_keep_them() {
    let (mut gw, config, sensors) = core("ml-kem-512");
    let s = Offline::new(&sensors[0]);
    let t0 = Instant::now();
    let (st, ch) = s.hello();
    let (_, out) = gw.handle(&s.topic, &ch, t0);
    let (mut session, cf) = Manual::finish(st, &broker_hello_of(&out));
    let (e, _) = gw.handle(&s.topic, &cf, t0);
    assert!(matches!(e, GatewayEvent::Established { .. }), "{e:?}");
    assert_eq!(gw.sessions(), 1);
    let record = |session: &mut Session, text: &[u8]| {
        let topic = kem_mqtt_host::topics::sealed_c2b(&s.keys.client_id, "t");
        let mut rec = vec![0u8; text.len() + RECORD_OVERHEAD];
        let n = session.seal(topic.as_bytes(), text, &mut rec).unwrap();
        rec.truncate(n);
        (topic, rec)
    };
    let idle = config.session_idle;
    // Just before the idle limit, a genuine record: the session lives on.
    let t1 = t0 + idle - Duration::from_secs(1);
    let (topic, rec) = record(&mut session, b"alive");
    let (e, _) = gw.handle(&topic, &rec, t1);
    assert!(matches!(e, GatewayEvent::Message { .. }), "{e:?}");
    // A forged record later does not count as the sensor being heard.
    let mut forged = rec.clone();
    forged[7] ^= 1;
    let (e, _) = gw.handle(&topic, &forged, t1 + idle - Duration::from_secs(1));
    assert!(matches!(e, GatewayEvent::Rejected { .. }), "{e:?}");
    assert_eq!(gw.sessions(), 1);
    // The idle limit after the genuine record: gone, its keys dropped.
    let (topic, rec) = record(&mut session, b"too late");
    let (e, _) = gw.handle(&topic, &rec, t1 + idle + Duration::from_secs(1));
    assert!(
        matches!(
            e,
            GatewayEvent::Rejected {
                error: kem_mqtt::Error::UnknownClient,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(gw.sessions(), 0);
    assert_eq!(gw.stats().sessions_expired, 1, "{}", gw.stats());
}

/// Cluster mode: an instance drops its session of a sensor only for a notice
/// of a newer session (a larger epoch) that verifies under the group's key
/// and does not come from a clock running ahead; a forged, altered, older or
/// too-far-ahead notice changes nothing.
#[test]
fn owner_notices_are_authenticated_and_only_supersede_older_sessions() {
    let (state, sensors) = enrol(&[suite("ml-kem-512")]);
    let state = Arc::new(state);
    let instance = |name: &str| GatewayConfig {
        cluster: Some(Cluster::new("g", name).unwrap()),
        ..GatewayConfig::default()
    };
    let (mut a, mut b) = (
        GatewayCore::new(state.clone(), instance("a")),
        GatewayCore::new(state.clone(), instance("b")),
    );
    let s = Offline::new(&sensors[0]);
    // A handshake of the sensor with `gw`: its owner notice (topic, payload).
    let establish = |gw: &mut GatewayCore, t: Instant| {
        let (st, ch) = s.hello();
        let (_, out) = gw.handle(&s.topic, &ch, t);
        let (_, cf) = Manual::finish(st, &broker_hello_of(&out));
        let (e, out) = gw.handle(&s.topic, &cf, t);
        assert!(matches!(e, GatewayEvent::Established { .. }), "{e:?}");
        out.into_iter()
            .find(|(topic, _)| topic.contains("/owner/"))
            .expect("an owner notice")
    };
    let t0 = Instant::now();
    let (topic, notice_a) = establish(&mut a, t0);
    assert_eq!(topic, format!("kem-mqtt/cluster/g/owner/{}", s.keys.client_id));
    let t1 = t0 + Duration::from_secs(5);
    let (_, notice_b) = establish(&mut b, t1);
    let other = |e: GatewayEvent| matches!(e, GatewayEvent::Other);
    // An older session's notice leaves the newer one in place.
    assert!(other(b.handle(&topic, &notice_a, t1).0));
    assert_eq!(b.sessions(), 1);
    // Forged MAC, an epoch moved without the key: refused.
    let mut forged = notice_b.clone();
    forged[20] ^= 1;
    let mut moved = notice_b.clone();
    moved[7] ^= 1;
    for notice in [&forged, &moved] {
        assert!(other(a.handle(&topic, notice, t1).0));
        assert_eq!(a.sessions(), 1);
    }
    // A genuine notice from an instance whose clock is two minutes ahead
    // (more than NOTICE_FRESHNESS): refused, it would outrank every session
    // made on a correct clock for two minutes.
    let unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut c = GatewayCore::with_wall_clock(state.clone(), instance("c"), t0, unix_ms + 120_000);
    let (_, notice_c) = establish(&mut c, t1);
    assert!(other(a.handle(&topic, &notice_c, t1).0));
    assert_eq!(a.sessions(), 1);
    // The genuine, fresh notice of the newer session: a lets its older one go.
    let (e, _) = a.handle(&topic, &notice_b, t1);
    assert!(matches!(e, GatewayEvent::Superseded { .. }), "{e:?}");
    assert_eq!(a.sessions(), 0);
    assert_eq!(
        (a.stats().notices_refused, a.stats().superseded),
        (3, 1),
        "{}",
        a.stats()
    );
    assert_eq!(
        (b.stats().notices_refused, b.stats().superseded),
        (0, 0),
        "{}",
        b.stats()
    );
}

#[test]
fn injected_hellos_at_the_highest_admitted_rate_cannot_evict_the_sensors_handshake() {
    let (mut gw, config, sensors) = core("ctru-light-ascon+x25519");
    let s = Offline::new(&sensors[0]);
    let t0 = Instant::now();

    let (st1, ch1) = s.hello();
    let (e, out1) = gw.handle(&s.topic, &ch1, t0);
    assert!(is_answered(&e), "{e:?}");
    // An attacker who knows the id injects a new forged hello every 100 ms for
    // the whole lifetime of the sensor's state.
    let mut t = t0;
    let mut answered = 0;
    let mut refused = 0;
    let step = Duration::from_millis(100);
    let steps = (config.pending_lifetime.as_millis() / step.as_millis()) as u32 - 1;
    for i in 0..steps {
        t += step;
        let (e, _) = gw.handle(&s.topic, &s.forged_hello(&ch1), t);
        match e {
            GatewayEvent::HelloAnswered { .. } => answered += 1,
            GatewayEvent::Dropped {
                reason: DropReason::RateLimited(Refusal::ClientId),
                ..
            } => refused += 1,
            e => panic!("step {i}: {e:?}"),
        }
    }
    assert_eq!(answered + refused, steps);
    // The sensor's state and every injected one fit: no slot was ever short.
    assert!((answered as usize) < config.max_pending_per_id, "{answered}");
    assert_eq!(gw.stats().hellos_pending_full, 0);
    // Forged flights 3 meanwhile: refused, nothing discarded.
    for _ in 0..5 {
        let mut cf = vec![1, 3];
        cf.extend_from_slice(&[0x5a; 32]);
        let (e, _) = gw.handle(&s.topic, &cf, t);
        assert!(matches!(e, GatewayEvent::Rejected { .. }), "{e:?}");
    }
    // The sensor's ClientFinished, just before its state expires: established.
    let (_, cf1) = Manual::finish(st1, &broker_hello_of(&out1));
    let (e, _) = gw.handle(&s.topic, &cf1, t);
    assert!(matches!(e, GatewayEvent::Established { .. }), "{e:?}");
    assert_eq!(gw.pending(&s.keys.client_id, t), 0, "the others went with it");
    let stats: GatewayStats = gw.stats();
    assert_eq!(stats.hellos_answered as u32, answered + 1, "{stats}");
    assert_eq!(stats.finished_invalid, 5, "{stats}");
}

#[test]
fn a_new_handshake_of_the_sensor_beside_a_pending_one() {
    let (mut gw, _, sensors) = core("lightsaber");
    let s = Offline::new(&sensors[0]);
    let t0 = Instant::now();
    let (sa, cha) = s.hello();
    let (_, outa) = gw.handle(&s.topic, &cha, t0);
    let (sb, chb) = s.hello();
    let (_, outb) = gw.handle(&s.topic, &chb, t0 + Duration::from_millis(5));
    assert_eq!(gw.pending(&s.keys.client_id, t0), 2);
    let (_, cfa) = Manual::finish(sa, &broker_hello_of(&outa));
    let (_, cfb) = Manual::finish(sb, &broker_hello_of(&outb));
    // The later one completes; the earlier one is gone with it.
    let (e, _) = gw.handle(&s.topic, &cfb, t0 + Duration::from_millis(10));
    assert!(matches!(e, GatewayEvent::Established { .. }), "{e:?}");
    let (e, _) = gw.handle(&s.topic, &cfa, t0 + Duration::from_millis(11));
    assert!(matches!(e, GatewayEvent::Rejected { .. }), "{e:?}");
    // Copies of the completed hello cost nothing and establish nothing.
    let (e, out) = gw.handle(&s.topic, &chb, t0 + Duration::from_millis(12));
    assert!(
        matches!(
            e,
            GatewayEvent::Dropped {
                reason: DropReason::Replayed,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(out.is_empty());
}

/// The cost the issue measured (≈ 10.6 ms of broker CPU per hello with
/// garbage for a registered id), against the cost of a hello refused by
/// the rate limit: both through `GatewayCore::handle` (no MQTT), in CPU
/// time of this thread, bounded in count. Printed for SECURITY.md, not
/// asserted (timing); asserted: every forged hello past the burst is dropped
/// without an answer.
#[test]
fn cost_of_a_refused_hello_against_an_answered_one() {
    for name in ["ml-kem-512+x25519", "ctru-light-sha3+x25519", "lightsaber"] {
        let (mut gw, config, sensors) = core(name);
        let s = Offline::new(&sensors[0]);
        let (_, template) = s.hello();
        let burst = config.admission.per_id.burst;
        let forged: Vec<Vec<u8>> = (0..2000).map(|_| s.forged_hello(&template)).collect();
        let t0 = Instant::now();
        // The burst: answered, each a decapsulation. (CPU time of this
        // thread: other tests run beside it.)
        let t = thread_cpu();
        for ch in &forged[..burst as usize] {
            assert!(is_answered(&gw.handle(&s.topic, ch, t0).0));
        }
        let answered = (thread_cpu() - t) / burst;
        // The rest: refused by the rate limit.
        let t = thread_cpu();
        for ch in &forged[burst as usize..] {
            let (e, out) = gw.handle(&s.topic, ch, t0);
            assert!(matches!(e, GatewayEvent::Dropped { .. }), "{e:?}");
            assert!(out.is_empty());
        }
        let refused = (thread_cpu() - t) / (forged.len() as u32 - burst);
        eprintln!("{name}: answered hello {answered:.2?}, refused hello {refused:.2?}");
        // Printed, not asserted (a timed assertion fails on a loaded
        // machine); that a refused hello never decapsulates is asserted above.
    }
}

// ---------------------------------------------------------------- metrics

/// What an operator scrapes during a run: a refused hello, a sensor's
/// handshake and reading, a revocation, each in its family; no client id.
#[test]
fn the_metrics_endpoint_counts_handshakes_refusals_records_and_revocations() {
    use kem_mqtt_host::metrics::Metrics;

    let (state, sensors) = enrol(&[suite("ml-kem-512"), suite("ctru-light-ascon+x25519")]);
    // The registry as a watched file, as `kem-mqtt gateway` runs it.
    let dir = std::env::temp_dir().join(format!("kem-mqtt-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let registry_file = dir.join("registry.json");
    let _ = std::fs::remove_file(&registry_file);
    state.registry.save(&registry_file).unwrap();
    let mut site = Site::new(state);
    site.gw.watch_registry(RegistryWatch::load(&registry_file).unwrap().0);
    let metrics = Metrics::new(site.gw.clients());
    let server = metrics.serve("127.0.0.1:0".parse().unwrap()).unwrap();
    let before = common::scrape(&server.addr().to_string(), "/metrics").1;
    assert!(before.contains("kem_mqtt_registry_sensors 2\n"), "{before}");
    assert!(before.contains("kem_mqtt_registry_loads_total 1\n"), "{before}");

    // A hello one byte short: the protocol refuses it.
    let (_, mut bad) = hello(&sensors[0]);
    bad.pop();
    let e = site.inject(&hs_c2b(&sensors[0].client_id), &bad);
    assert!(matches!(e, GatewayEvent::Rejected { .. }), "{e:?}");
    metrics.observe_gateway(&site.gw, &e);

    // An honest sensor: its handshake and one reading.
    let addr = site.addr();
    let keys = sensors[1].clone();
    let sensor = std::thread::spawn(move || {
        let mut c = SensorClient::connect_topic_mode(&addr, &keys, TIMEOUT)?;
        c.send(b"21.5 C")?;
        Ok::<_, HostError>(c)
    });
    loop {
        let e = site.event();
        metrics.observe_gateway(&site.gw, &e);
        if matches!(e, GatewayEvent::Message { .. }) {
            break;
        }
    }
    let _sensor = sensor.join().unwrap().unwrap();
    let (status, text) = common::scrape(&server.addr().to_string(), "/metrics");
    assert!(status.contains("200"), "{status}");
    for line in [
        "kem_mqtt_handshakes_total{suite=\"ctru-light-ascon+x25519\"} 1\n",
        "kem_mqtt_records_total{direction=\"in\"} 1\n",
        "kem_mqtt_records_total{direction=\"rejected\"} 0\n",
        "kem_mqtt_sessions 1\n",
        "kem_mqtt_revocations_total 0\n",
        "# EOF\n",
    ] {
        assert!(text.contains(line), "no {line:?} in\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("kem_mqtt_refusals_total{reason=") && l.ends_with(" 1")),
        "{text}"
    );
    for s in &sensors {
        assert!(
            !text.contains(&s.client_id),
            "the endpoint names sensor {}",
            s.client_id
        );
    }

    // The sensor revoked in the file: its session ends, the registry's
    // version moves.
    let mut registry = Registry::load_or_empty(&registry_file).unwrap();
    registry.clients.remove(&sensors[1].client_id);
    registry.save(&registry_file).unwrap();
    let e = site.event();
    assert!(
        matches!(&e, GatewayEvent::Reloaded { revoked, .. } if *revoked == [sensors[1].client_id.clone()]),
        "{e:?}"
    );
    metrics.observe_gateway(&site.gw, &e);
    let text = common::scrape(&server.addr().to_string(), "/metrics").1;
    for line in [
        "kem_mqtt_revocations_total 1\n",
        "kem_mqtt_sessions 0\n",
        "kem_mqtt_registry_sensors 1\n",
        "kem_mqtt_registry_loads_total 2\n",
    ] {
        assert!(text.contains(line), "no {line:?} in\n{text}");
    }
    assert!(common::scrape(&server.addr().to_string(), "/other").0.contains("404"));
    drop(server);
    site.broker.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sharded instances (a broker without shared subscriptions): every
/// instance receives every message; exactly one answers a sensor's hello
/// and opens its records, and the others skip them without a refusal.
#[test]
fn exactly_one_shard_serves_each_sensor() {
    let names = ["ml-kem-512", "ctru-light-sha3", "ml-kem-512+x25519", "lightsaber"];
    let (state, sensors) = enrol(&names.map(suite));
    let state = Arc::new(state);
    let mut shards: Vec<GatewayCore> = (0..3)
        .map(|index| {
            let config = GatewayConfig {
                shard: Some(Shard { index, count: 3 }),
                ..GatewayConfig::default()
            };
            GatewayCore::new(state.clone(), config)
        })
        .collect();
    let t0 = Instant::now();
    for keys in &sensors {
        let s = Offline::new(keys);
        let (st, ch) = s.hello();
        let mut answers = vec![];
        for (k, gw) in shards.iter_mut().enumerate() {
            let (e, out) = gw.handle(&s.topic, &ch, t0);
            if is_answered(&e) {
                answers.push((k, out));
            } else {
                assert!(matches!(e, GatewayEvent::Other) && out.is_empty(), "{e:?}");
            }
        }
        assert_eq!(
            answers.len(),
            1,
            "{}: answered by {} shards",
            keys.client_id,
            answers.len()
        );
        let (owner, out) = answers.pop().unwrap();
        let (mut session, cf) = Manual::finish(st, &broker_hello_of(&out));
        for (k, gw) in shards.iter_mut().enumerate() {
            let (e, _) = gw.handle(&s.topic, &cf, t0);
            assert_eq!(matches!(e, GatewayEvent::Established { .. }), k == owner, "{e:?}");
        }
        let topic = data_c2b(&keys.client_id);
        let mut rec = vec![0u8; 5 + kem_mqtt::RECORD_OVERHEAD];
        let n = session.seal(topic.as_bytes(), b"21.5C", &mut rec).unwrap();
        for (k, gw) in shards.iter_mut().enumerate() {
            let (e, _) = gw.handle(&topic, &rec[..n], t0);
            assert_eq!(matches!(e, GatewayEvent::Message { .. }), k == owner, "{e:?}");
        }
    }
    for gw in &shards {
        let stats = gw.stats();
        assert_eq!(
            stats.hellos_rejected + stats.records_rejected + stats.finished_unexpected,
            0,
            "{stats}"
        );
    }
    let served: u64 = shards.iter().map(|g| g.stats().records_opened).sum();
    assert_eq!(served, sensors.len() as u64);
    assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
    for bad in ["3/3", "1", "a/3", "1/0", "-1/3"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
}
