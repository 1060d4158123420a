//! KEM-MQTT type-state machines end to end: a live sensor and broker
//! exchange the three flights, each of which the fuzz input may pass on,
//! edit, or replace with arbitrary bytes (a man in the middle).
//! Invariants: no panic; the handshake completes only if every flight
//! arrived unmodified, and then the two sessions interoperate.
#![no_main]
use kem_fuzz::{fixture, mutate, pick_suite, split, FuzzRng};
use kem_mqtt::{BrokerHandshake, SensorHandshake, MAX_BROKER_HELLO_LEN, MAX_CLIENT_HELLO_LEN};

/// What the attacker does to one flight: 0 pass, 1 edit, 2 replace.
fn intercept(action: u8, honest: &[u8], edit: &[u8]) -> (Vec<u8>, bool) {
    let m = match action % 3 {
        0 => honest.to_vec(),
        1 => mutate(honest, edit),
        _ => edit.to_vec(),
    };
    let changed = m != honest;
    (m, changed)
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let suite = pick_suite(data[0]);
    let (a1, a2, a3) = (data[1], data[2], data[3]);
    let seed = u16::from_le_bytes([data[4], data[5]]) as u64;
    let rest = &data[6..];
    let third = rest.len() / 3;
    let (e1, rest) = split(rest, third);
    let (e2, e3) = split(rest, third);
    let (broker, sensor) = fixture(suite);
    let mut rs = FuzzRng::new(seed);
    let mut rb = FuzzRng::new(seed ^ 0xB0B);

    let mut ch = [0u8; MAX_CLIENT_HELLO_LEN];
    let (s, n1) = SensorHandshake::start(suite, sensor.credentials(broker), &mut rs, &mut ch).unwrap();
    let (f1, c1) = intercept(a1, &ch[..n1], e1);
    let mut bh = [0u8; MAX_BROKER_HELLO_LEN];
    let Ok((b, n2)) = BrokerHandshake::accept(broker, &f1, &mut rb, &mut bh) else {
        return;
    };
    let (f2, c2) = intercept(a2, &bh[..n2], e2);
    let mut cf = [0u8; 64];
    let sensor_result = s.receive_broker_hello(&f2, &mut cf);
    let Ok((mut s_sess, n3)) = sensor_result else { return };
    assert!(
        !c1 && !c2,
        "sensor accepted a modified flight (ClientHello {c1}, BrokerHello {c2})"
    );
    let (f3, c3) = intercept(a3, &cf[..n3], e3);
    let Ok(mut b_sess) = b.receive_client_finished(&f3) else {
        return;
    };
    assert!(!c3, "broker accepted a modified ClientFinished");
    let mut rec = [0u8; 64];
    let mut pt = [0u8; 64];
    let n = s_sess.seal(b"t", b"ping", &mut rec).unwrap();
    assert_eq!(b_sess.open(b"t", &rec[..n], &mut pt), Ok(4));
    let n = b_sess.seal(b"t", b"pong", &mut rec).unwrap();
    assert_eq!(s_sess.open(b"t", &rec[..n], &mut pt), Ok(4));
});
