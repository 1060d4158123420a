//! The topic-mode gateway (`GatewayCore`, time injected) with an honest
//! sensor's handshake running through it and an attacker, driven by the
//! input, injecting on the handshake topics of that sensor and of another
//! registered one: copies and edits of everything on the wire, forged
//! flights 3, forged hellos that only a decapsulation could tell from
//! honest ones, and time passing.
//!
//! Invariants: the attacker never establishes a session; the honest
//! sensor's handshake is established exactly when its hello was answered
//! and its flight 3 arrives within the pending lifetime, whatever was
//! injected in between; the confirmation and the sensor's first record
//! open; pending handshakes per id stay within the limit.
#![no_main]
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use kem_fuzz::{mutate, FuzzRng};
use kem_mqtt::{
    SensorHandshake, Suite, SuiteSet, MAX_BROKER_HELLO_LEN, MAX_CLIENT_HELLO_LEN, NONCE_LEN, RECORD_OVERHEAD,
};
use kem_mqtt_host::gateway::{GatewayConfig, GatewayCore, GatewayEvent};
use kem_mqtt_host::keys::{BrokerState, Registry, SensorKeys};
use kem_mqtt_host::provision::{generate_broker, provision_sensor};
use kem_mqtt_host::{data_b2c, data_c2b, hs_c2b};

/// A broker and two sensors (a pure suite: the fuzzer spends its time in the gateway's logic).
fn setup() -> &'static (Arc<BrokerState>, Vec<SensorKeys>) {
    static S: OnceLock<(Arc<BrokerState>, Vec<SensorKeys>)> = OnceLock::new();
    S.get_or_init(|| {
        let suite = Suite::from_name("ml-kem-512").unwrap();
        let mut rng = FuzzRng::new(21);
        let secrets = generate_broker(&[suite.kem()], &mut rng);
        let mut registry = Registry::default();
        let sensors = ["s0", "s1"]
            .iter()
            .map(|id| {
                provision_sensor(
                    &secrets,
                    &mut registry,
                    id,
                    suite,
                    SuiteSet::EMPTY.with(suite),
                    &mut rng,
                )
                .unwrap()
            })
            .collect();
        (Arc::new(BrokerState { secrets, registry }), sensors)
    })
}

/// Delivers the honest hello; `Some((time, BrokerHello))` if answered.
fn deliver_hello(
    gw: &mut GatewayCore,
    topic: &str,
    ch: &[u8],
    now: Instant,
    wire: &mut Vec<Vec<u8>>,
) -> Option<(Instant, Vec<u8>)> {
    wire.push(ch.to_vec());
    let (e, out) = gw.handle(topic, ch, now);
    match e {
        GatewayEvent::HelloAnswered { .. } => {
            let bh = out[0].1.clone();
            wire.push(bh.clone());
            Some((now, bh))
        }
        GatewayEvent::Dropped { .. } => {
            assert!(out.is_empty());
            None
        }
        e => panic!("honest hello: {e:?}"),
    }
}

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (state, sensors) = setup();
    let config = GatewayConfig::default();
    let mut gw = GatewayCore::new(state.clone(), config.clone());
    let honest = &sensors[0];
    let topics = [hs_c2b(&sensors[0].client_id), hs_c2b(&sensors[1].client_id)];
    let mut input = Bytes(data);
    let mut rng = FuzzRng::from_bytes(input.take(8));
    let t0 = Instant::now();
    let mut now = t0;

    let mut ch = vec![0u8; MAX_CLIENT_HELLO_LEN];
    let (st, n) = SensorHandshake::start(honest.suite, honest.credentials(), &mut rng, &mut ch).unwrap();
    ch.truncate(n);
    // Everything published so far, for the attacker to copy and edit.
    let mut wire: Vec<Vec<u8>> = vec![];
    // The honest hello goes first, or at a point the input chooses.
    let mut hello_sent = input.byte().unwrap_or(0) & 1 == 0;
    let mut answered: Option<(Instant, Vec<u8>)> = None;
    if hello_sent {
        answered = deliver_hello(&mut gw, &topics[0], &ch, now, &mut wire);
        assert!(answered.is_some(), "the first hello of an id was not answered");
    }
    for _ in 0..48 {
        let Some(op) = input.byte() else { break };
        let topic = &topics[(op >> 7) as usize];
        let msg = match op % 5 {
            0 | 1 if !wire.is_empty() => {
                let i = input.byte().unwrap_or(0) as usize % wire.len();
                if op % 5 == 0 {
                    wire[i].clone()
                } else {
                    let k = input.byte().unwrap_or(0) as usize % 16;
                    mutate(&wire[i], input.take(k))
                }
            }
            2 => [&[1u8, 3][..], input.take(32)].concat(),
            3 => {
                now += Duration::from_millis(100 * input.byte().unwrap_or(0) as u64);
                continue;
            }
            _ => {
                // A hello for the honest id with a valid ephemeral key and
                // random nonce, ciphertext and share: costs a decapsulation if admitted.
                let mut forged = ch.clone();
                let nonce = 4 + honest.client_id.len();
                let ct = nonce + NONCE_LEN + honest.suite.kem().pk_len();
                rand_core::Rng::fill_bytes(&mut rng, &mut forged[nonce..nonce + NONCE_LEN]);
                rand_core::Rng::fill_bytes(&mut rng, &mut forged[ct..]);
                forged
            }
        };
        let (e, out) = gw.handle(topic, &msg, now);
        assert!(
            !matches!(e, GatewayEvent::Established { .. }),
            "the attacker established a session: {e:?}"
        );
        wire.extend(out.into_iter().map(|(_, payload)| payload));
        for s in sensors {
            assert!(gw.pending(&s.client_id, now) <= config.max_pending_per_id);
        }
        if !hello_sent && op & 0x40 != 0 {
            hello_sent = true;
            answered = deliver_hello(&mut gw, &topics[0], &ch, now, &mut wire);
        }
    }
    let Some((answered_at, bh)) = answered else {
        // The honest hello was never sent, or was rate-limited: the sensor
        // gets no BrokerHello (it times out and retries), and nothing of it is established.
        return;
    };
    let mut cf = vec![0u8; MAX_BROKER_HELLO_LEN];
    let (mut session, k) = st
        .receive_broker_hello(&bh, &mut cf)
        .expect("the honest BrokerHello verifies");
    let (e, out) = gw.handle(&topics[0], &cf[..k], now);
    if now.duration_since(answered_at) < config.pending_lifetime {
        assert!(
            matches!(&e, GatewayEvent::Established { client_id, .. } if *client_id == honest.client_id),
            "the honest flight 3 was refused after the attack: {e:?}"
        );
        let (topic, conf) = &out[0];
        assert_eq!(*topic, data_b2c(&honest.client_id));
        let mut pt = vec![0u8; conf.len()];
        assert_eq!(session.open(topic.as_bytes(), conf, &mut pt), Ok(0), "confirmation");
        let topic = data_c2b(&honest.client_id);
        let mut rec = vec![0u8; 5 + RECORD_OVERHEAD];
        let n = session.seal(topic.as_bytes(), b"21.5C", &mut rec).unwrap();
        let (e, _) = gw.handle(&topic, &rec[..n], now);
        assert!(
            matches!(e, GatewayEvent::Message { ref payload, .. } if payload == b"21.5C"),
            "{e:?}"
        );
    } else {
        assert!(
            matches!(e, GatewayEvent::Rejected { .. }),
            "an expired handshake completed: {e:?}"
        );
    }
});
