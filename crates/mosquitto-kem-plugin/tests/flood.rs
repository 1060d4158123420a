//! A flood of keyless ClientHellos is refused before the handshake (issue #21), against
//! Debian's mosquitto running the shipped configuration (default rate
//! limits), 127.0.0.1 only, bounded in count and time.
//!
//! The flood replays one honest ClientHello of a registered sensor on new
//! connections: it needs no key, and without a limit each copy costs the
//! broker a whole handshake (decapsulation, two encapsulations, two X25519)
//! on its single thread. The broker's CPU time is read from
//! /proc/PID/schedstat around every attempt, so the figures it prints are
//! the broker's own cost per admitted and per refused hello. What it asserts
//! is structural: at most the per-id burst (plus refills) of the replayed
//! honest hellos is answered; the rest are refused with 0x87, before any
//! decapsulation (an honest hello that reached one would be answered).

mod common;
use common::*;

use std::time::{Duration, Instant};

use kem_mqtt::{SensorHandshake, AUTH_METHOD, MAX_CLIENT_HELLO_LEN};
use kem_mqtt_host::mqtt::{self, Packet};
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::OsRng;

/// Hellos in the flood, and the most time it may take.
const FLOOD: usize = 300;
const FLOOD_TIME: Duration = Duration::from_secs(30);
/// The shipped per-id limit (`plugin_opt_limit_per_id` default): 4 at once,
/// then one every 5 s.
const PER_ID_BURST: usize = 4;
const PER_ID_INTERVAL: Duration = Duration::from_secs(5);

#[test]
fn keyless_client_hello_flood_is_refused_before_the_handshake() {
    let s = suite("ml-kem-512+x25519");
    let (secrets, registry, keys) = enrol(&[("target", s), ("bystander", s)]);
    let mut broker = Broker::start("flood", &secrets, &registry, Conf::Documented, &plugin_path());
    let addr = broker.addr();

    let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
    let (_, n) = SensorHandshake::start(keys[0].suite, keys[0].credentials(), &mut OsRng, &mut buf).unwrap();
    let connect = raw_connect(5, "target", None, Some((AUTH_METHOD, &buf[..n])));

    let (mut admitted, mut refused) = (0usize, 0usize);
    let (mut cpu_admitted, mut cpu_refused) = (Duration::ZERO, Duration::ZERO);
    let start = Instant::now();
    for _ in 0..FLOOD {
        assert!(start.elapsed() < FLOOD_TIME, "flood took too long");
        let before = broker.cpu_time();
        let (mut conn, answer) = send_raw(&addr, &connect);
        // The answer came after the plugin's work; the attacker hangs up.
        let is_admitted = match answer.unwrap() {
            Packet::Auth {
                reason: mqtt::CONTINUE_AUTHENTICATION,
                ..
            } => true,
            Packet::ConnAck {
                reason: mqtt::NOT_AUTHORIZED,
                ..
            } => {
                // Wait for mosquitto to close its side: its clean-up is part of the cost.
                assert!(closed_by_peer(&mut conn, Duration::from_secs(5)));
                false
            }
            p => panic!("unexpected {p:?}"),
        };
        drop(conn);
        let spent = broker.cpu_time() - before;
        if is_admitted {
            admitted += 1;
            cpu_admitted += spent;
        } else {
            refused += 1;
            cpu_refused += spent;
        }
    }
    let elapsed = start.elapsed();
    let per_admitted = cpu_admitted / admitted.max(1) as u32;
    let per_refused = cpu_refused / refused.max(1) as u32;
    eprintln!(
        "{FLOOD} replayed ClientHellos in {elapsed:.2?}: {admitted} answered with a BrokerHello \
         ({per_admitted:.2?} of broker CPU each), {refused} refused with 0x87 ({per_refused:.2?} each)"
    );
    // At most the per-id burst, plus what refilled during the flood.
    let refilled = (elapsed.as_secs_f64() / PER_ID_INTERVAL.as_secs_f64()).ceil() as usize;
    assert!(
        admitted <= PER_ID_BURST + refilled,
        "{admitted} of {FLOOD} replayed hellos got a full handshake"
    );
    assert!(admitted >= 1, "not even the first hello was answered");
    assert_eq!(admitted + refused, FLOOD);
    // The hello is honest, so a decapsulation would have succeeded and been
    // answered with a BrokerHello: every 0x87 above was refused before it.
    // The CPU figures printed above are measurements (SECURITY.md §4), not
    // asserted: a timed assertion fails on a loaded machine, not on a
    // regression (a CI run measured 232 µs per refusal, 10× the quiet figure).

    // The flooded id itself now waits for its bucket (the limit's cost: a
    // delay for that sensor, bounded by the refill, never a way in) …
    let (_, outcome) = auth_attempt(&addr, &keys[0], "target", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::NOT_AUTHORIZED));
    // … while another sensor, from the same address, still gets in: the
    // flood was stopped by the target's own bucket and took no other tokens.
    SensorClient::connect_auth_mode(&addr, &keys[1], Duration::from_secs(10))
        .unwrap()
        .disconnect()
        .unwrap();
    broker.assert_alive();
}
