//! KEM-MQTT record layer: a script of seal / deliver / tamper / replay /
//! raw-record operations between an established sensor and broker session.
//! Invariants: a record opens only if it was sealed for that topic and
//! direction and was not opened before, and then yields its plaintext.
#![no_main]
use std::collections::HashSet;

use kem_fuzz::{fixture, honest_flights, pick_suite, FuzzRng};
use kem_mqtt::{
    BrokerHandshake, Error, SensorHandshake, Session, MAX_BROKER_HELLO_LEN, MAX_CLIENT_HELLO_LEN, RECORD_OVERHEAD,
};

fn sessions(suite: kem_mqtt::Suite) -> (Session, Session) {
    let (broker, sensor) = fixture(suite);
    let (ch, bh, cf) = honest_flights(suite);
    let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
    let (s, _) = SensorHandshake::start(suite, sensor.credentials(broker), &mut FuzzRng::new(1), &mut buf).unwrap();
    let (s, _) = s.receive_broker_hello(bh, &mut buf).unwrap();
    let mut out = [0u8; MAX_BROKER_HELLO_LEN];
    let (b, _) = BrokerHandshake::accept(broker, ch, &mut FuzzRng::new(2), &mut out).unwrap();
    (s, b.receive_client_finished(cf).unwrap())
}

type Sealed = (bool, Vec<u8>, Vec<u8>, Vec<u8>);

struct Cursor<'a>(&'a [u8]);
impl<'a> Cursor<'a> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()? as usize;
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        Some(a)
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut c = Cursor(data);
    let Some(sel) = c.u8() else { return };
    // Records do not depend on the KEM, only on the keys: two suites suffice
    // (one per symmetric family) and keep the handshake cost per input low.
    let suite = pick_suite(if sel & 1 == 0 { 0 } else { 4 });
    let (mut sensor, mut broker) = sessions(suite);
    // (from sensor, topic, record, plaintext) of everything sealed;
    // (to sensor, topic, sequence number) of everything opened.
    let mut sealed: Vec<Sealed> = vec![];
    let mut opened: HashSet<(bool, Vec<u8>, u64)> = HashSet::new();
    let mut buf = vec![0u8; 512];
    for _ in 0..64 {
        let Some(op) = c.u8() else { break };
        match op % 4 {
            0 => {
                // Seal in either direction.
                let (Some(topic), Some(pt)) = (c.bytes(), c.bytes()) else {
                    break;
                };
                let from_sensor = op & 0x10 == 0;
                let s = if from_sensor { &mut sensor } else { &mut broker };
                match s.seal(topic, pt, &mut buf) {
                    Ok(n) => {
                        assert_eq!(n, pt.len() + RECORD_OVERHEAD);
                        sealed.push((from_sensor, topic.to_vec(), buf[..n].to_vec(), pt.to_vec()));
                    }
                    Err(Error::TopicTooLong) => assert!(topic.len() > kem_mqtt::MAX_TOPIC_LEN),
                    Err(e) => panic!("seal: {e}"),
                }
            }
            1 | 2 => {
                // Deliver a sealed record (op 2: with an edit, to the other side or topic).
                let Some(i) = c.u8() else { break };
                if sealed.is_empty() {
                    continue;
                }
                let (from_sensor, topic, mut rec, pt) = sealed[i as usize % sealed.len()].clone();
                let mut to_sensor = !from_sensor;
                let mut topic = topic;
                let mut edited = false;
                if op % 4 == 2 {
                    let (Some(kind), Some(x)) = (c.u8(), c.u8()) else { break };
                    match kind % 3 {
                        0 if x != 0 => {
                            let j = kind as usize % rec.len();
                            rec[j] ^= x;
                            edited = true;
                        }
                        1 => {
                            to_sensor = !to_sensor; // reflection
                            edited = true;
                        }
                        2 if x != 0 => {
                            topic.push(x); // another topic
                            edited = true;
                        }
                        _ => {}
                    }
                }
                let s = if to_sensor { &mut sensor } else { &mut broker };
                let seq = u64::from_be_bytes(rec[..8].try_into().unwrap());
                let r = s.open(&topic, &rec, &mut buf);
                if edited {
                    // An edit of the sequence number to a value not yet seen may
                    // still be rejected only by the tag; every edit must fail.
                    assert!(r.is_err(), "an edited record opened");
                } else {
                    let fresh = opened.insert((to_sensor, topic.clone(), seq));
                    match r {
                        Ok(n) => {
                            assert!(fresh, "a record was accepted twice");
                            assert_eq!(&buf[..n], &pt[..]);
                        }
                        Err(Error::RecordReplayed) => assert!(!fresh),
                        Err(Error::RecordTooOld) => {}
                        Err(e) => panic!("honest record: {e}"),
                    }
                    if !fresh {
                        assert!(r.is_err());
                    }
                }
            }
            _ => {
                // A raw record nobody sealed.
                let (Some(topic), Some(rec)) = (c.bytes(), c.bytes()) else {
                    break;
                };
                let to_sensor = op & 0x10 != 0;
                let s = if to_sensor { &mut sensor } else { &mut broker };
                let known = sealed
                    .iter()
                    .any(|(f, t, r, _)| *f != to_sensor && t == topic && r == rec);
                if s.open(topic, rec, &mut buf).is_ok() {
                    assert!(known, "a forged record opened");
                    let seq = u64::from_be_bytes(rec[..8].try_into().unwrap());
                    assert!(
                        opened.insert((to_sensor, topic.to_vec(), seq)),
                        "a record was accepted twice"
                    );
                }
            }
        }
    }
});
