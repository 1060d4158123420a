//! Handshake and record-layer tests: every suite end to end, flight sizes,
//! and the exact error for every kind of tampering.

use kem_mqtt::testing::{broker_fixture, sensor_fixture, BrokerFixture, SensorFixture};
use kem_mqtt::*;
use rand_core::Rng as _;

/// The workspace's seeded test generator (ChaCha20).
type Rng = rand_chacha::ChaCha20Rng;

fn rng(seed: u64) -> Rng {
    kem_common::test_rng(seed)
}

fn setup(suite: Suite, seed: u64) -> (BrokerFixture, SensorFixture, Rng) {
    let mut r = rng(seed);
    let broker = broker_fixture(suite, &mut r);
    let sensor = sensor_fixture(suite, &mut r);
    let broker = broker.with_client(&sensor, SuiteSet::for_kem(suite.kem(), false));
    (broker, sensor, r)
}

struct Flights {
    ch: Vec<u8>,
    bh: Vec<u8>,
    cf: Vec<u8>,
}

/// Runs a handshake, letting `tamper` modify each flight (1, 2, 3) in transit.
/// Returns the flights and the first error, or both sessions.
#[allow(clippy::type_complexity)]
fn run(
    suite: Suite,
    broker: &BrokerFixture,
    sensor: &SensorFixture,
    r: &mut Rng,
    mut tamper: impl FnMut(u8, &mut Vec<u8>),
) -> (Flights, Result<(Session, Session), Error>) {
    let mut fl = Flights {
        ch: vec![],
        bh: vec![],
        cf: vec![],
    };
    let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
    let result = (|| {
        let (s, n) = SensorHandshake::start(suite, sensor.credentials(broker), r, &mut buf)?;
        fl.ch = buf[..n].to_vec();
        tamper(1, &mut fl.ch);
        let (b, n) = BrokerHandshake::accept(broker, &fl.ch, r, &mut buf)?;
        assert_eq!(b.client_id(), sensor.client_id());
        fl.bh = buf[..n].to_vec();
        tamper(2, &mut fl.bh);
        let (ss, n) = s.receive_broker_hello(&fl.bh, &mut buf)?;
        fl.cf = buf[..n].to_vec();
        tamper(3, &mut fl.cf);
        let bs = b.receive_client_finished(&fl.cf)?;
        Ok((ss, bs))
    })();
    (fl, result)
}

fn handshake(suite: Suite, seed: u64) -> (Flights, Session, Session) {
    let (broker, sensor, mut r) = setup(suite, seed);
    let (fl, res) = run(suite, &broker, &sensor, &mut r, |_, _| {});
    let (s, b) = res.unwrap_or_else(|e| panic!("{}: {e}", suite.name()));
    (fl, s, b)
}

fn exchange(from: &mut Session, to: &mut Session, topic: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut rec = vec![0u8; msg.len() + RECORD_OVERHEAD];
    let n = from.seal(topic, msg, &mut rec).unwrap();
    assert_eq!(n, rec.len());
    let mut pt = vec![0u8; msg.len()];
    assert_eq!(to.open(topic, &rec, &mut pt), Ok(msg.len()));
    assert_eq!(pt, msg);
    rec
}

#[test]
fn every_suite_completes_and_exchanges_records_both_ways() {
    for (i, suite) in Suite::ALL.into_iter().enumerate() {
        let (fl, mut s, mut b) = handshake(suite, 100 + i as u64);
        assert_eq!(fl.ch.len(), suite.client_hello_len(8), "{}", suite.name());
        assert_eq!(fl.bh.len(), suite.broker_hello_len());
        assert_eq!(fl.cf.len(), 34);
        assert_eq!(fl.ch[2], suite.id());
        for k in 0..3u8 {
            exchange(&mut s, &mut b, b"sensors/t1/data", &[k; 21]);
            exchange(&mut b, &mut s, b"sensors/t1/cmd", &[k, 1, 2]);
        }
        exchange(&mut s, &mut b, b"sensors/t1/data", b"");
    }
}

#[test]
fn flight_sizes_per_suite() {
    // (suite id, ClientHello with an 8-byte client id, BrokerHello)
    let table = [
        (0x11, 1196, 1091),
        (0x12, 1228, 1123),
        (0x21, 1196, 1091),
        (0x22, 1228, 1123),
        (0x31, 1612, 1603),
        (0x32, 1644, 1635),
        (0x41, 1612, 1603),
        (0x42, 1644, 1635),
        (0x51, 1452, 1539),
        (0x52, 1484, 1571),
        (0x61, 2316, 2243),
        (0x62, 2348, 2275),
    ];
    assert_eq!(table.len(), Suite::ALL.len());
    for (id, ch, bh) in table {
        let suite = Suite::from_id(id).unwrap();
        assert_eq!(suite.client_hello_len(8), ch, "{}", suite.name());
        assert_eq!(suite.broker_hello_len(), bh, "{}", suite.name());
        assert_eq!(suite.client_finished_len(), 34);
        assert!(suite.client_hello_len(MAX_CLIENT_ID_LEN) <= MAX_CLIENT_HELLO_LEN);
        assert!(suite.broker_hello_len() <= MAX_BROKER_HELLO_LEN);
    }
}

#[test]
fn sessions_of_two_handshakes_differ() {
    let suite = Suite::new(Scheme::CtruLightAscon, true);
    let (_, mut s1, _) = handshake(suite, 1);
    let (_, _, mut b2) = handshake(suite, 2);
    let mut rec = [0u8; 40];
    let n = s1.seal(b"t", b"hello", &mut rec).unwrap();
    assert_eq!(b2.open(b"t", &rec[..n], &mut [0u8; 40]), Err(Error::RecordAuthFailed));
}

/// Where each field of each flight starts, for a suite with an 8-byte client id.
fn fields(suite: Suite) -> Vec<(u8, &'static str, usize, Error)> {
    let k = suite.kem();
    let id = suite.id();
    let mut v = vec![
        (1, "version", 0, Error::UnsupportedVersion(0x00)),
        (1, "type", 1, Error::UnexpectedMessage { expected: 1, got: 0 }),
        (1, "suite", 2, Error::UnknownSuite(id ^ 1)),
        (
            1,
            "id length",
            3,
            Error::Truncated {
                expected: suite.client_hello_len(9),
                got: suite.client_hello_len(8),
            },
        ),
        (1, "client id", 4, Error::UnknownClient),
        (1, "nonce", 12, Error::BrokerFinishedInvalid),
        (1, "pk_e", 44, Error::BrokerFinishedInvalid),
        (1, "pk_e end", 44 + k.pk_len() - 1, Error::BrokerFinishedInvalid),
        (1, "ct_S", 44 + k.pk_len(), Error::BrokerFinishedInvalid),
        (
            1,
            "ct_S end",
            44 + k.pk_len() + k.ct_len() - 1,
            Error::BrokerFinishedInvalid,
        ),
        (2, "version", 0, Error::UnsupportedVersion(0x00)),
        (2, "type", 1, Error::UnexpectedMessage { expected: 2, got: 3 }),
        (
            2,
            "suite",
            2,
            Error::SuiteMismatch {
                offered: id,
                answered: id ^ 1,
            },
        ),
        (2, "nonce", 3, Error::BrokerFinishedInvalid),
        (2, "ct_e", 35, Error::BrokerFinishedInvalid),
        (2, "ct_C", 35 + k.ct_len(), Error::BrokerFinishedInvalid),
        (2, "ct_C end", 35 + 2 * k.ct_len() - 1, Error::BrokerFinishedInvalid),
        (
            2,
            "BrokerFinished",
            suite.broker_hello_len() - 32,
            Error::BrokerFinishedInvalid,
        ),
        (
            2,
            "BrokerFinished end",
            suite.broker_hello_len() - 1,
            Error::BrokerFinishedInvalid,
        ),
        (3, "version", 0, Error::UnsupportedVersion(0x00)),
        (3, "type", 1, Error::UnexpectedMessage { expected: 3, got: 2 }),
        (3, "ClientFinished", 2, Error::ClientFinishedInvalid),
        (3, "ClientFinished end", 33, Error::ClientFinishedInvalid),
    ];
    if suite.is_hybrid() {
        v.push((
            1,
            "x25519 share",
            44 + k.pk_len() + k.ct_len(),
            Error::BrokerFinishedInvalid,
        ));
        v.push((2, "x25519 share", 35 + 2 * k.ct_len(), Error::BrokerFinishedInvalid));
    }
    v
}

#[test]
fn a_bit_flipped_in_any_field_of_any_flight_is_the_exact_error() {
    for (i, suite) in Suite::ALL.into_iter().enumerate() {
        let (broker, sensor, mut r) = setup(suite, 200 + i as u64);
        for (flight, name, pos, expected) in fields(suite) {
            let (_, res) = run(suite, &broker, &sensor, &mut r, |f, msg| {
                if f == flight {
                    msg[pos] ^= 1;
                }
            });
            assert_eq!(res.err(), Some(expected), "{} flight {flight} {name}", suite.name());
        }
    }
}

/// ClientHello with `creds`, the broker's answer, and the sensor's error on it.
fn sensor_finish_error(
    suite: Suite,
    creds: SensorCredentials<'_>,
    broker: &BrokerFixture,
    r: &mut Rng,
) -> Option<Error> {
    let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
    let (s, n) = SensorHandshake::start(suite, creds, r, &mut buf).unwrap();
    let ch = buf[..n].to_vec();
    let (_, n) = BrokerHandshake::accept(broker, &ch, r, &mut buf).unwrap();
    let bh = buf[..n].to_vec();
    s.receive_broker_hello(&bh, &mut buf).err()
}

/// A cached static-static secret gives the very same handshake (the same
/// ClientHello from the same RNG, and keys the broker accepts); a wrong
/// cached value fails at the broker's Finished like a wrong key.
/// `start_in` (the caller's ephemeral-key storage) is the same handshake as
/// `start`, byte for byte, and the storage is wiped once the state is
/// consumed, successfully or not.
#[test]
fn caller_owned_ephemeral_key_is_the_same_handshake_and_is_wiped() {
    for (i, suite) in Suite::ALL.into_iter().enumerate() {
        let (broker, sensor, _) = setup(suite, 400 + i as u64);
        let mut hello = [[0u8; MAX_CLIENT_HELLO_LEN]; 2];
        let (owned, n0) =
            SensorHandshake::start(suite, sensor.credentials(&broker), &mut rng(41), &mut hello[0]).unwrap();
        let mut storage = EphemeralKey::new();
        let (borrowed, n1) = SensorHandshake::start_in(
            suite,
            sensor.credentials(&broker),
            &mut rng(41),
            &mut hello[1],
            &mut storage,
        )
        .unwrap();
        assert_eq!(hello[0][..n0], hello[1][..n1], "{}", suite.name());
        let mut bh = [0u8; MAX_BROKER_HELLO_LEN];
        let (b, n) = BrokerHandshake::accept(&broker, &hello[1][..n1], &mut rng(42), &mut bh).unwrap();
        let (mut cf0, mut cf1) = ([0u8; 64], [0u8; 64]);
        let (_, m0) = owned.receive_broker_hello(&bh[..n], &mut cf0).unwrap();
        let (mut s, m1) = borrowed.receive_broker_hello(&bh[..n], &mut cf1).unwrap();
        assert_eq!(cf0[..m0], cf1[..m1]);
        let mut bs = b.receive_client_finished(&cf1[..m1]).unwrap();
        exchange(&mut s, &mut bs, b"sensors/t1/data", b"in place");
        assert!(storage_is_zero(&storage), "{}: ephemeral key left behind", suite.name());

        // A failed handshake wipes it too.
        let (state, _) = SensorHandshake::start_in(
            suite,
            sensor.credentials(&broker),
            &mut rng(43),
            &mut hello[1],
            &mut storage,
        )
        .unwrap();
        assert!(state.receive_broker_hello(&bh[..n - 1], &mut cf1).is_err());
        assert!(
            storage_is_zero(&storage),
            "{}: ephemeral key left after an error",
            suite.name()
        );
    }
}

/// The microcontroller path: `start_split` (the state built in its slot,
/// the ClientHello around the public key left inside the ephemeral key)
/// and the BrokerHello in two parts, the second received into the used-up
/// ephemeral key's storage, is the same handshake byte for byte; the
/// storage is wiped at the end; the parts in the wrong order, a wrong
/// length or a tampered part are refused and drop the state.
#[test]
fn split_flights_are_the_same_handshake() {
    for (i, suite) in Suite::ALL.into_iter().enumerate() {
        let name = suite.name();
        let (broker, sensor, _) = setup(suite, 600 + i as u64);
        let mut whole = [0u8; MAX_CLIENT_HELLO_LEN];
        let (state, n) = SensorHandshake::start(suite, sensor.credentials(&broker), &mut rng(61), &mut whole).unwrap();
        let mut storage = EphemeralKey::new();
        let mut slot = None;
        let mut out = vec![0u8; n - suite.kem().pk_len()];
        let (head, len) = SensorHandshake::start_split(
            &mut slot,
            suite,
            sensor.credentials(&broker),
            &mut rng(61),
            &mut out,
            &mut storage,
        )
        .unwrap();
        assert_eq!(len, out.len(), "{name}");
        let split = slot.as_ref().unwrap();
        let hello = [&out[..head], split.ephemeral_public_key(), &out[head..len]].concat();
        assert_eq!(hello, whole[..n], "{name}: ClientHello");

        let mut bh = [0u8; MAX_BROKER_HELLO_LEN];
        let (b, m) = BrokerHandshake::accept(&broker, &hello, &mut rng(62), &mut bh).unwrap();
        let bh = &bh[..m];
        let (at, rest_len) = (suite.broker_hello_head_len(), suite.broker_hello_rest_len());
        assert_eq!(at + rest_len, m);
        let (mut cf0, mut cf1) = ([0u8; 64], [0u8; 64]);
        let (_, c0) = state.receive_broker_hello(bh, &mut cf0).unwrap();
        // Before the first part there is no rest buffer.
        assert!(slot.as_mut().unwrap().rest_buffer().is_empty(), "{name}");
        AwaitBrokerHello::receive_broker_hello_head(&mut slot, &bh[..at]).unwrap();
        assert!(slot.as_ref().unwrap().ephemeral_public_key().is_empty());
        let buf = slot.as_mut().unwrap().rest_buffer();
        assert_eq!(buf.len(), rest_len, "{name}");
        assert!(buf.iter().all(|&x| x == 0), "{name}: the ephemeral key is wiped first");
        buf.copy_from_slice(&bh[at..]);
        let (mut s, c1) = AwaitBrokerHello::receive_broker_hello_rest(&mut slot, rest_len, &mut cf1).unwrap();
        assert_eq!(cf0[..c0], cf1[..c1], "{name}: ClientFinished");
        assert!(slot.is_none());
        drop(slot);
        let mut bs = b.receive_client_finished(&cf1[..c1]).unwrap();
        exchange(&mut s, &mut bs, b"sensors/t1/data", b"split");
        assert!(storage_is_zero(&storage), "{name}: ephemeral key left behind");

        // Refusals, each dropping the state (and wiping the storage).
        let creds = sensor.credentials(&broker);
        let mut slot = None;
        start_split_fresh(&mut slot, suite, creds, &mut storage);
        assert!(AwaitBrokerHello::receive_broker_hello_rest(&mut slot, rest_len, &mut cf1).is_err());
        assert!(slot.is_none());
        drop(slot);
        assert!(storage_is_zero(&storage), "{name}: rest before head");
        let mut slot = None;
        start_split_fresh(&mut slot, suite, creds, &mut storage);
        assert!(AwaitBrokerHello::receive_broker_hello_head(&mut slot, &bh[..at - 1]).is_err());
        assert!(slot.is_none());
        drop(slot);
        assert!(storage_is_zero(&storage), "{name}: short head");
        let mut slot = None;
        start_split_fresh(&mut slot, suite, creds, &mut storage);
        AwaitBrokerHello::receive_broker_hello_head(&mut slot, &bh[..at]).unwrap();
        let buf = slot.as_mut().unwrap().rest_buffer();
        buf.copy_from_slice(&bh[at..]);
        buf[0] ^= 1; // the ciphertext to the static key
        assert_eq!(
            AwaitBrokerHello::receive_broker_hello_rest(&mut slot, rest_len, &mut cf1).unwrap_err(),
            Error::BrokerFinishedInvalid,
            "{name}"
        );
        assert!(slot.is_none());
        drop(slot);
        assert!(storage_is_zero(&storage), "{name}: tampered rest");
        let mut slot = None;
        start_split_fresh(&mut slot, suite, creds, &mut storage);
        AwaitBrokerHello::receive_broker_hello_head(&mut slot, &bh[..at]).unwrap();
        assert!(AwaitBrokerHello::receive_broker_hello_rest(&mut slot, rest_len - 1, &mut cf1).is_err());
        assert!(AwaitBrokerHello::receive_broker_hello_rest(&mut slot, rest_len, &mut cf1).is_err());
        drop(slot);
        let mut slot = None;
        start_split_fresh(&mut slot, suite, creds, &mut storage);
        AwaitBrokerHello::receive_broker_hello_head(&mut slot, &bh[..at]).unwrap();
        assert!(matches!(
            AwaitBrokerHello::receive_broker_hello_rest(&mut slot, usize::MAX, &mut cf1),
            Err(Error::Oversized { .. })
        ));
    }
}

/// A split start into `slot`, for the refusal cases.
fn start_split_fresh<'a>(
    slot: &mut Option<AwaitBrokerHello<'a, &'a mut EphemeralKey>>,
    suite: Suite,
    creds: SensorCredentials<'a>,
    storage: &'a mut EphemeralKey,
) {
    let mut out = [0u8; MAX_CLIENT_HELLO_LEN];
    SensorHandshake::start_split(slot, suite, creds, &mut rng(63), &mut out, storage).unwrap();
}

fn storage_is_zero(k: &EphemeralKey) -> bool {
    // SAFETY: `EphemeralKey` is a `repr(transparent)` byte array: every byte
    // of it is initialised, and the slice lives as long as the borrow.
    let bytes = unsafe {
        core::slice::from_raw_parts(
            (k as *const EphemeralKey).cast::<u8>(),
            core::mem::size_of::<EphemeralKey>(),
        )
    };
    bytes.iter().all(|&b| b == 0)
}

#[test]
fn cached_static_x25519_secret_is_the_same_handshake() {
    for (i, suite) in Suite::ALL.into_iter().filter(|s| s.is_hybrid()).enumerate() {
        let (broker, sensor, _) = setup(suite, 500 + i as u64);
        let creds = sensor.credentials(&broker);
        let cached = kem_mqtt::static_x25519_secret(&sensor.x_sk, &broker.x_pk).unwrap();
        let with_cache = SensorCredentials {
            x25519_static_secret: Some(&cached),
            ..creds
        };
        let mut hello = [[0u8; MAX_CLIENT_HELLO_LEN]; 2];
        let mut lens = [0; 2];
        for (k, c) in [creds, with_cache].into_iter().enumerate() {
            let mut r = rng(77);
            lens[k] = SensorHandshake::start(suite, c, &mut r, &mut hello[k]).unwrap().1;
        }
        assert_eq!(hello[0][..lens[0]], hello[1][..lens[1]], "{}", suite.name());

        let mut r = rng(78);
        let wrong = [1u8; 32];
        let bad = SensorCredentials {
            x25519_static_secret: Some(&wrong),
            ..creds
        };
        assert_eq!(
            sensor_finish_error(suite, bad, &broker, &mut r),
            Some(Error::BrokerFinishedInvalid),
            "{}",
            suite.name()
        );
    }
}

#[test]
fn wrong_static_keys_fail_at_broker_finished() {
    for (i, suite) in Suite::ALL.into_iter().enumerate() {
        let (broker, sensor, mut r) = setup(suite, 300 + i as u64);
        // The sensor holds another broker's KEM key.
        let mut other = broker_fixture(suite, &mut r);
        other.x_pk = broker.x_pk;
        let creds = SensorCredentials {
            broker_kem_pk: other.kem_pk().into(),
            ..sensor.credentials(&broker)
        };
        assert_eq!(
            sensor_finish_error(suite, creds, &broker, &mut r),
            Some(Error::BrokerFinishedInvalid),
            "{}: wrong broker KEM key",
            suite.name()
        );

        // The registry holds another sensor's key for this client id.
        let impostor = sensor_fixture(suite, &mut r);
        let wrong_registry = broker
            .clone()
            .with_client(&impostor, SuiteSet::for_kem(suite.kem(), false));
        let (_, res) = run(suite, &wrong_registry, &sensor, &mut r, |_, _| {});
        assert_eq!(
            res.err(),
            Some(Error::BrokerFinishedInvalid),
            "{}: wrong client key",
            suite.name()
        );

        // The sensor uses another KEM secret key than the one registered.
        let (_, res) = run(suite, &broker, &impostor_with_id(&impostor, &sensor), &mut r, |_, _| {});
        assert_eq!(
            res.err(),
            Some(Error::BrokerFinishedInvalid),
            "{}: wrong sensor key",
            suite.name()
        );

        if suite.is_hybrid() {
            // Only the X25519 static keys are wrong: the hybrid still fails.
            let mut wrong_x = broker.clone();
            wrong_x.x_sk = [7; 32];
            let (_, res) = run(suite, &wrong_x, &sensor, &mut r, |_, _| {});
            assert_eq!(
                res.err(),
                Some(Error::BrokerFinishedInvalid),
                "{}: wrong broker X25519",
                suite.name()
            );
            let mut wrong_cx = sensor.clone();
            wrong_cx.x_sk = [9; 32];
            let (_, res) = run(suite, &broker, &wrong_cx, &mut r, |_, _| {});
            assert_eq!(
                res.err(),
                Some(Error::BrokerFinishedInvalid),
                "{}: wrong sensor X25519",
                suite.name()
            );
        }
    }
}

fn impostor_with_id(impostor: &SensorFixture, sensor: &SensorFixture) -> SensorFixture {
    let mut s = impostor.clone();
    s.id = sensor.id;
    s.id_len = sensor.id_len;
    s.x_sk = sensor.x_sk;
    s
}

#[test]
fn downgrade_to_pure_is_refused_by_a_hybrid_only_policy() {
    for kem in kem_mqtt::KEMS {
        let hybrid = Suite::new(kem, true);
        let pure = Suite::new(kem, false);
        let (broker, sensor, mut r) = setup(hybrid, 400 + kem as u64);
        let broker = broker.with_client(&sensor, SuiteSet::for_kem(kem, true));
        // A sensor (or an attacker who rebuilt its ClientHello) offering the pure suite.
        let (_, res) = run(pure, &broker, &sensor, &mut r, |_, _| {});
        assert_eq!(res.err(), Some(Error::SuiteNotAllowed(pure.id())), "{}", kem.name());
        // Stripping the X25519 share and relabelling the hybrid ClientHello.
        let (_, res) = run(hybrid, &broker, &sensor, &mut r, |f, msg| {
            if f == 1 {
                msg[2] = pure.id();
                msg.truncate(msg.len() - 32);
            }
        });
        assert_eq!(res.err(), Some(Error::SuiteNotAllowed(pure.id())), "{}", kem.name());
        // Relabelling without stripping: the length no longer fits.
        let len = hybrid.client_hello_len(8);
        let (_, res) = run(hybrid, &broker, &sensor, &mut r, |f, msg| {
            if f == 1 {
                msg[2] = pure.id();
            }
        });
        assert_eq!(
            res.err(),
            Some(Error::Oversized {
                expected: len - 32,
                got: len
            })
        );
        // A BrokerHello answering with the pure suite.
        let (_, res) = run(hybrid, &broker, &sensor, &mut r, |f, msg| {
            if f == 2 {
                msg[2] = pure.id();
            }
        });
        assert_eq!(
            res.err(),
            Some(Error::SuiteMismatch {
                offered: hybrid.id(),
                answered: pure.id()
            })
        );
        // The hybrid suite itself works under that policy.
        let (_, res) = run(hybrid, &broker, &sensor, &mut r, |_, _| {});
        assert!(res.is_ok());
    }
}

#[test]
fn policy_registry_and_key_errors() {
    let suite = Suite::new(Scheme::MlKem512, true);
    let (broker, sensor, mut r) = setup(suite, 500);
    // A suite of another KEM than the client's registered key.
    let other = Suite::new(Scheme::Kyber512R3, true);
    let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
    let other_sensor = sensor_fixture(other, &mut r);
    let other_broker = broker_fixture(other, &mut r);
    let (_, n) = SensorHandshake::start(other, other_sensor.credentials(&other_broker), &mut r, &mut buf).unwrap();
    let ch = buf[..n].to_vec();
    assert_eq!(
        BrokerHandshake::accept(&broker, &ch, &mut r, &mut buf).err(),
        Some(Error::SuiteNotAllowed(other.id()))
    );
    // A broker without keys for the suite's KEM.
    let mut no_keys = other_broker
        .clone()
        .with_client(&other_sensor, SuiteSet::for_kem(other.kem(), false));
    no_keys.kem = Scheme::LightSaber;
    assert_eq!(
        BrokerHandshake::accept(&no_keys, &ch, &mut r, &mut buf).err(),
        Some(Error::SuiteNotSupported(other.id()))
    );
    // Unknown client, invalid client id.
    assert_eq!(
        BrokerHandshake::accept(&other_broker, &ch, &mut r, &mut buf).err(),
        Some(Error::UnknownClient)
    );
    let mut bad_id = ch.clone();
    bad_id[4] = b'/';
    assert_eq!(
        BrokerHandshake::accept(&other_broker, &bad_id, &mut r, &mut buf).err(),
        Some(Error::InvalidClientId)
    );
    let mut zero_id = ch.clone();
    zero_id[3] = 0;
    assert_eq!(
        BrokerHandshake::accept(&other_broker, &zero_id, &mut r, &mut buf).err(),
        Some(Error::InvalidClientId)
    );
    // Sensor-side configuration errors.
    let creds = sensor.credentials(&broker);
    let bad = SensorCredentials {
        client_id: b"has space",
        ..creds
    };
    assert_eq!(
        SensorHandshake::start(suite, bad, &mut r, &mut buf).err(),
        Some(Error::InvalidClientId)
    );
    let bad = SensorCredentials {
        broker_x25519_pk: None,
        ..creds
    };
    assert_eq!(
        SensorHandshake::start(suite, bad, &mut r, &mut buf).err(),
        Some(Error::InvalidKey)
    );
    let bad = SensorCredentials {
        broker_kem_pk: (&[0xFFu8; 800]).into(),
        ..creds
    };
    assert_eq!(
        SensorHandshake::start(suite, bad, &mut r, &mut buf).err(),
        Some(Error::InvalidKey)
    );
    assert_eq!(
        SensorHandshake::start(suite, creds, &mut r, &mut buf[..100]).err(),
        Some(Error::BufferTooSmall { needed: 1644 })
    );
}

#[test]
fn invalid_ephemeral_key_and_low_order_share() {
    for suite in [
        Suite::new(Scheme::CtruLightAscon, true),
        Suite::new(Scheme::MlKem512, true),
    ] {
        let (broker, sensor, mut r) = setup(suite, 600);
        let pk_len = suite.kem().pk_len();
        let (_, res) = run(suite, &broker, &sensor, &mut r, |f, msg| {
            if f == 1 {
                msg[44..44 + pk_len].fill(0xFF);
            }
        });
        assert_eq!(res.err(), Some(Error::InvalidEphemeralKey), "{}", suite.name());
        let (_, res) = run(suite, &broker, &sensor, &mut r, |f, msg| {
            if f == 1 {
                let n = msg.len();
                msg[n - 32..].fill(0);
            }
        });
        assert_eq!(res.err(), Some(Error::X25519NonContributory));
        let (_, res) = run(suite, &broker, &sensor, &mut r, |f, msg| {
            if f == 2 {
                let n = msg.len();
                msg[n - 64..n - 32].fill(0);
            }
        });
        assert_eq!(res.err(), Some(Error::X25519NonContributory));
    }
}

#[test]
fn truncated_and_oversized_flights() {
    for suite in [
        Suite::new(Scheme::CtruLightSha3, false),
        Suite::new(Scheme::LightSaber, true),
    ] {
        let (broker, sensor, mut r) = setup(suite, 700);
        let ch = suite.client_hello_len(8);
        let bh = suite.broker_hello_len();
        let cases: [(u8, isize, Error); 9] = [
            (
                1,
                -1,
                Error::Truncated {
                    expected: ch,
                    got: ch - 1,
                },
            ),
            (
                1,
                1,
                Error::Oversized {
                    expected: ch,
                    got: ch + 1,
                },
            ),
            (1, -(ch as isize) + 3, Error::Truncated { expected: 4, got: 3 }),
            (
                2,
                -1,
                Error::Truncated {
                    expected: bh,
                    got: bh - 1,
                },
            ),
            (
                2,
                1,
                Error::Oversized {
                    expected: bh,
                    got: bh + 1,
                },
            ),
            (2, -(bh as isize), Error::Truncated { expected: bh, got: 0 }),
            (3, -1, Error::Truncated { expected: 34, got: 33 }),
            (3, 100, Error::Oversized { expected: 34, got: 134 }),
            (3, -34, Error::Truncated { expected: 34, got: 0 }),
        ];
        for (flight, delta, expected) in cases {
            let (_, res) = run(suite, &broker, &sensor, &mut r, |f, msg| {
                if f == flight {
                    let n = (msg.len() as isize + delta) as usize;
                    msg.resize(n, 0xAB);
                }
            });
            assert_eq!(res.err(), Some(expected), "{} flight {flight} {delta:+}", suite.name());
        }
    }
}

#[test]
fn messages_in_the_wrong_state_are_unexpected() {
    let suite = Suite::new(Scheme::CtruLightAscon, false);
    let (broker, sensor, mut r) = setup(suite, 800);
    let (fl, _) = run(suite, &broker, &sensor, &mut r, |_, _| {});
    let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
    assert_eq!(
        BrokerHandshake::accept(&broker, &fl.bh, &mut r, &mut buf).err(),
        Some(Error::UnexpectedMessage { expected: 1, got: 2 })
    );
    let (s, _) = SensorHandshake::start(suite, sensor.credentials(&broker), &mut r, &mut buf).unwrap();
    assert_eq!(
        s.receive_broker_hello(&fl.ch, &mut buf).err(),
        Some(Error::UnexpectedMessage { expected: 2, got: 1 })
    );
    let (b, _) = BrokerHandshake::accept(&broker, &fl.ch, &mut r, &mut buf).unwrap();
    assert_eq!(
        b.receive_client_finished(&fl.ch).err(),
        Some(Error::UnexpectedMessage { expected: 3, got: 1 })
    );
}

#[test]
fn replayed_reordered_and_moved_records() {
    let (_, mut s, mut b) = handshake(Suite::new(Scheme::CtruLightAscon, true), 900);
    let topic = b"kem-mqtt/data/sensor-1";
    let mut recs = vec![];
    for i in 0..100u8 {
        let mut rec = vec![0u8; 4 + RECORD_OVERHEAD];
        s.seal(topic, &[i; 4], &mut rec).unwrap();
        recs.push(rec);
    }
    let mut pt = [0u8; 64];
    // In order, then a replay.
    assert_eq!(b.open(topic, &recs[0], &mut pt), Ok(4));
    assert_eq!(b.open(topic, &recs[0], &mut pt), Err(Error::RecordReplayed));
    // Reordered within the window: accepted once each.
    assert_eq!(b.open(topic, &recs[5], &mut pt), Ok(4));
    assert_eq!(pt[..4], [5; 4]);
    assert_eq!(b.open(topic, &recs[2], &mut pt), Ok(4));
    assert_eq!(b.open(topic, &recs[2], &mut pt), Err(Error::RecordReplayed));
    // Jump ahead: records more than the window behind are rejected.
    assert_eq!(b.open(topic, &recs[99], &mut pt), Ok(4));
    assert_eq!(b.open(topic, &recs[3], &mut pt), Err(Error::RecordTooOld));
    assert_eq!(b.open(topic, &recs[35], &mut pt), Err(Error::RecordTooOld));
    assert_eq!(b.open(topic, &recs[36], &mut pt), Ok(4));
    // Moved to another topic.
    assert_eq!(
        b.open(b"kem-mqtt/data/sensor-2", &recs[40], &mut pt),
        Err(Error::RecordAuthFailed)
    );
    // A failed record does not move the window: the genuine one still opens.
    assert_eq!(b.open(topic, &recs[40], &mut pt), Ok(4));
    // Reflected back to its sender.
    assert_eq!(s.open(topic, &recs[41], &mut pt), Err(Error::RecordAuthFailed));
    // Tampered sequence number, body, tag; truncated.
    for pos in [7, 8, 11, 12 + 15] {
        let mut t = recs[50].clone();
        t[pos] ^= 0x80;
        assert_eq!(b.open(topic, &t, &mut pt), Err(Error::RecordAuthFailed), "byte {pos}");
    }
    assert_eq!(b.open(topic, &recs[50][..23], &mut pt), Err(Error::RecordTruncated));
    assert_eq!(b.open(topic, &recs[50][..27], &mut pt), Err(Error::RecordAuthFailed));
    assert_eq!(
        b.open(topic, &recs[50], &mut pt[..3]),
        Err(Error::BufferTooSmall { needed: 4 })
    );
    assert_eq!(
        b.open(&[b'a'; MAX_TOPIC_LEN + 1], &recs[50], &mut pt),
        Err(Error::TopicTooLong)
    );
    assert_eq!(b.open(topic, &recs[50], &mut pt), Ok(4));
    assert_eq!(
        s.seal(topic, b"abc", &mut pt[..26]),
        Err(Error::BufferTooSmall { needed: 27 })
    );
}

#[test]
fn garbage_never_panics() {
    let suite = Suite::new(Scheme::CtruLightAscon, true);
    let (broker, sensor, mut r) = setup(suite, 1000);
    let mut g = rng(5);
    let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
    for i in 0..400 {
        let len = (g.next_u64() % 1400) as usize;
        let mut msg: Vec<u8> = (0..len).map(|_| g.next_u64() as u8).collect();
        if i % 2 == 0 && len > 4 {
            msg[0] = VERSION;
            msg[1] = (i % 4) as u8;
            msg[2] = suite.id();
            msg[3] = (g.next_u64() % 70) as u8;
        }
        assert!(BrokerHandshake::accept(&broker, &msg, &mut r, &mut buf).is_err());
        let (s, _) = SensorHandshake::start(suite, sensor.credentials(&broker), &mut r, &mut buf).unwrap();
        assert!(s.receive_broker_hello(&msg, &mut buf).is_err());
    }
}

/// `BrokerHandshake::peek` names what `accept` would answer for (suite and
/// client id) on an honest hello, and refuses what `accept` refuses before
/// any key is touched, with the same error.
#[test]
fn peek_agrees_with_accept_without_keys() {
    for &suite in Suite::ALL.iter().filter(|s| s.enabled()) {
        let (broker, sensor, mut r) = setup(suite, 900);
        let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
        let (_, n) = SensorHandshake::start(suite, sensor.credentials(&broker), &mut r, &mut buf).unwrap();
        let ch = buf[..n].to_vec();
        assert_eq!(BrokerHandshake::peek(&ch), Ok((suite, sensor.client_id())));
        let mut edits: Vec<Vec<u8>> = vec![ch[..3].to_vec(), ch[..n - 1].to_vec(), [&ch[..], &[0]].concat()];
        for (i, v) in [(0, 2u8), (1, 2), (2, 0x7F), (3, 0), (3, 65), (4, b'/')] {
            let mut m = ch.clone();
            m[i] = v;
            edits.push(m);
        }
        for m in edits {
            let peeked = BrokerHandshake::peek(&m).err();
            assert!(peeked.is_some(), "{}: peek accepted an edited hello", suite.name());
            let mut out = [0u8; MAX_BROKER_HELLO_LEN];
            assert_eq!(
                BrokerHandshake::accept(&broker, &m, &mut r, &mut out).err(),
                peeked,
                "{}",
                suite.name()
            );
        }
    }
}

/// The sensor's credentials with its KEM secret key and the broker's KEM
/// public key behind readers, as a classic AVR keeps them in flash.
fn reader_credentials<'a>(sensor: &'a SensorFixture, broker: &'a BrokerFixture) -> SensorCredentials<'a> {
    let creds = sensor.credentials(broker);
    let sk = &sensor.sk[..sensor.kem.sk_len()];
    kem_common::test_memory::set(&[sk, broker.kem_pk()].concat());
    let reader = kem_common::test_memory::reader;
    SensorCredentials {
        kem_sk: reader(0, sk.len()),
        broker_kem_pk: reader(sk.len(), broker.kem_pk().len()),
        ..creds
    }
}

/// With `program-memory-keys`, keys behind readers give every suite the
/// handshake that slices give: the same flights and the same session keys.
#[cfg(feature = "program-memory-keys")]
#[test]
fn keys_in_program_memory_are_the_same_handshake() {
    for (i, suite) in Suite::ALL.into_iter().filter(|s| s.enabled()).enumerate() {
        let (broker, sensor, _) = setup(suite, 900 + i as u64);
        let mut flights = Vec::new();
        for creds in [sensor.credentials(&broker), reader_credentials(&sensor, &broker)] {
            let mut r = rng(901);
            let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
            let (s, n) = SensorHandshake::start(suite, creds, &mut r, &mut buf).unwrap();
            let ch = buf[..n].to_vec();
            let (b, n) = BrokerHandshake::accept(&broker, &ch, &mut r, &mut buf).unwrap();
            let bh = buf[..n].to_vec();
            let (mut ss, n) = s.receive_broker_hello(&bh, &mut buf).unwrap();
            let cf = buf[..n].to_vec();
            let mut bs = b.receive_client_finished(&cf).unwrap();
            let record = exchange(&mut ss, &mut bs, b"t", b"reading");
            flights.push((ch, bh, cf, record));
        }
        assert!(flights[0] == flights[1], "{}", suite.name());
    }
}

/// Without `program-memory-keys` a key behind a reader is refused with
/// a typed error, not read.
#[cfg(not(feature = "program-memory-keys"))]
#[test]
fn keys_behind_readers_need_the_feature() {
    let suite = Suite::ALL[0];
    let (broker, sensor, mut r) = setup(suite, 950);
    let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
    let refused = SensorHandshake::start(suite, reader_credentials(&sensor, &broker), &mut r, &mut buf);
    assert_eq!(refused.err(), Some(Error::InvalidKey));
}
