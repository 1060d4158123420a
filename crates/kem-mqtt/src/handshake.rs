//! The three-flight handshake as type-state machines (each step consumes its state).

use core::borrow::BorrowMut;

use rand_core::TryCryptoRng;
#[cfg(feature = "x25519")]
use x25519_backend::{x25519, x25519_base};
use zeroize::Zeroize;

/// X25519, chosen by the target: on the AVR this project's code
/// (`x25519-avr`, its assembly), elsewhere x25519-dalek (curve25519-dalek's
/// 64-bit field, constant time). On a host the portable 8-bit-friendly
/// field of `x25519-avr` takes ≈ 2.6 ms per scalar multiplication, ≈ 97 %
/// of the broker's work in a hybrid handshake (`cargo xtask mqtt-load`);
/// x25519-dalek takes ≈ 0.05 ms. The two agree: `x25519-avr`'s tests check
/// it against RFC 7748 and x25519-dalek, and `cargo xtask mqtt` checks the
/// AVR's flights byte for byte against the host's.
#[cfg(feature = "x25519")]
mod x25519_backend {
    #[cfg(target_arch = "avr")]
    pub use x25519_avr::{x25519, x25519_base};

    /// X25519(`sk`, 9).
    #[cfg(not(target_arch = "avr"))]
    pub fn x25519_base(sk: &[u8; 32]) -> [u8; 32] {
        x25519_dalek::x25519(*sk, x25519_dalek::X25519_BASEPOINT_BYTES)
    }

    /// X25519(`sk`, `pk`).
    #[cfg(not(target_arch = "avr"))]
    pub fn x25519(sk: &[u8; 32], pk: &[u8; 32]) -> [u8; 32] {
        x25519_dalek::x25519(*sk, *pk)
    }
}

use crate::kem::{self, KemFail};
use crate::record::{DirectionKeys, Role, Session};
use crate::suite::{Family, KemId, Suite, SuiteSet, ENABLED_MAX_SK_LEN};
use crate::sym::{kdf, kdf32, Secret32, Xof};
use crate::{Error, MAC_LEN, MAX_CLIENT_ID_LEN, MSG_BROKER_HELLO, MSG_CLIENT_FINISHED, MSG_CLIENT_HELLO, VERSION};

/// Length of the nonces of both hellos.
pub const NONCE_LEN: usize = 32;
/// Length of an X25519 share.
pub const X25519_LEN: usize = 32;

/// Whether `id` is a valid client id: 1..=64 bytes of `[A-Za-z0-9._-]`
/// (it becomes a topic level in topic mode).
pub fn valid_client_id(id: &[u8]) -> bool {
    !id.is_empty()
        && id.len() <= MAX_CLIENT_ID_LEN
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The sensor's long-term material for one suite's KEM.
#[derive(Clone, Copy)]
pub struct SensorCredentials<'a> {
    /// The MQTT client id, registered with the broker.
    pub client_id: &'a [u8],
    /// The sensor's static KEM secret key (the suite's KEM).
    pub kem_sk: &'a [u8],
    /// The sensor's static X25519 secret key (hybrid suites).
    pub x25519_sk: Option<&'a [u8; 32]>,
    /// The broker's static KEM public key.
    pub broker_kem_pk: &'a [u8],
    /// The broker's static X25519 public key (hybrid suites).
    pub broker_x25519_pk: Option<&'a [u8; 32]>,
    /// The static-static X25519 secret, if cached: it depends only on the
    /// two long-term keys (spec §3), so a sensor can compute it once with
    /// [`static_x25519_secret`] when its keys are provisioned. `None`:
    /// computed in every hybrid handshake.
    pub x25519_static_secret: Option<&'a [u8; 32]>,
}

/// X25519(x25519_sk, broker_x25519_pk), to cache in
/// [`SensorCredentials::x25519_static_secret`]; an all-zero
/// (non-contributory) result is an error, as in the handshake.
#[cfg(feature = "x25519")]
pub fn static_x25519_secret(x25519_sk: &[u8; 32], broker_x25519_pk: &[u8; 32]) -> Result<[u8; 32], Error> {
    x25519_shared(x25519_sk, broker_x25519_pk).map(|s| s.0)
}

/// A registry entry: what the broker knows about one client.
#[derive(Clone, Copy, Debug)]
pub struct ClientEntry<'a> {
    /// The KEM of the client's static key.
    pub kem: KemId,
    /// The client's static KEM public key.
    pub kem_pk: &'a [u8],
    /// The client's static X25519 public key (required for hybrid suites).
    pub x25519_pk: Option<[u8; 32]>,
    /// The suites this client may use (the downgrade policy).
    pub allowed: SuiteSet,
}

/// The broker's long-term material and client registry.
pub trait BrokerKeys {
    /// The broker's static secret key for `kem`, if it has one.
    fn kem_secret_key(&self, kem: KemId) -> Option<&[u8]>;
    /// The broker's static X25519 secret key, if it has one.
    fn x25519_secret_key(&self) -> Option<&[u8; 32]>;
    /// The registry entry of `client_id`.
    fn client(&self, client_id: &[u8]) -> Option<ClientEntry<'_>>;
}

#[cfg(feature = "x25519")]
fn x25519_public(sk: &[u8; 32]) -> [u8; 32] {
    x25519_base(sk)
}

#[cfg(feature = "x25519")]
fn x25519_shared(sk: &[u8; 32], pk: &[u8; 32]) -> Result<Secret32, Error> {
    contributory(Secret32(x25519(sk, pk)))
}

/// `s` unless it is all-zero (from a low-order peer share, RFC 7748 §6.1,
/// or a cached static secret never filled in): computed and cached secrets
/// get the same check.
// Out of line, like `verify_mac`: the branch on the outcome is its only code
// besides the constant-time comparison. `s` is taken by value so that the
// refusal wipes it (Secret32's drop) while acceptance moves it out: the two
// paths differ in effect, so the outcome stays a branch in this frame rather
// than a select whose branch would land in every caller.
#[inline(never)]
fn contributory(s: Secret32) -> Result<Secret32, Error> {
    if bool::from(kem_common::bytes_equal(&s.0, &[0u8; 32])) {
        return Err(Error::X25519NonContributory);
    }
    Ok(s)
}

/// `Ok` if `got` is the MAC `expected` (compared in constant time), else
/// `fail`. The outcome is public (the handshake goes on or stops).
// Out of line: the branch on the outcome is then this function's only code
// besides the comparison, so the host secret-independence check
// (`ct-check/ct.supp`) can exempt exactly that branch by this frame, and
// still sees any secret-dependent branch in the comparison or the callers.
// (Should the compiler ever turn it into a select, the branch moves to the
// callers' `?` and that check fails: loudly, not silently.)
#[inline(never)]
fn verify_mac(expected: &Secret32, got: &[u8], fail: Error) -> Result<(), Error> {
    if bool::from(kem_common::bytes_equal(&expected.0, got)) {
        Ok(())
    } else {
        Err(fail)
    }
}

// Without X25519 compiled in, hybrid suites are rejected before these are reached.
#[cfg(not(feature = "x25519"))]
fn x25519_public(_sk: &[u8; 32]) -> [u8; 32] {
    [0; 32]
}

#[cfg(not(feature = "x25519"))]
fn x25519_shared(_sk: &[u8; 32], _pk: &[u8; 32]) -> Result<Secret32, Error> {
    Err(Error::X25519NonContributory)
}

fn fill(rng: &mut impl TryCryptoRng, out: &mut [u8]) -> Result<(), Error> {
    rng.try_fill_bytes(out).map_err(|_| Error::Rng)
}

fn array32(bytes: &[u8]) -> [u8; 32] {
    let mut a = [0u8; 32];
    for (o, b) in a.iter_mut().zip(bytes) {
        *o = *b;
    }
    a
}

// ---------------------------------------------------------------- key schedule

fn early_secret(f: Family, ss_s: &[u8], dh_ss: Option<&Secret32>) -> Secret32 {
    match dh_ss {
        Some(d) => kdf32(f, b"es", &[ss_s, &d.0]),
        None => kdf32(f, b"es", &[ss_s]),
    }
}

fn handshake_secret(f: Family, es: &Secret32, ss_e: &[u8], dh_ee: Option<&Secret32>, th1: &[u8; 32]) -> Secret32 {
    match dh_ee {
        Some(d) => kdf32(f, b"hs", &[&es.0, ss_e, &d.0, th1]),
        None => kdf32(f, b"hs", &[&es.0, ss_e, th1]),
    }
}

fn master_secret(f: Family, hs: &Secret32, ss_c: &[u8], th2: &[u8; 32]) -> Secret32 {
    kdf32(f, b"ms", &[&hs.0, ss_c, th2])
}

fn finished_mac(f: Family, ms: &Secret32, key_label: &[u8], th: &[u8; 32]) -> Secret32 {
    let fk = kdf32(f, key_label, &[&ms.0]);
    kdf32(f, b"finished", &[&fk.0, th])
}

fn traffic_keys(f: Family, ms: &Secret32, th3: &[u8; 32]) -> (DirectionKeys, DirectionKeys) {
    let mut c2b = DirectionKeys {
        key: [0; 16],
        iv: [0; 16],
    };
    let mut b2c = c2b.clone();
    kdf(f, b"c2b key", &[&ms.0, th3], &mut c2b.key);
    kdf(f, b"c2b iv", &[&ms.0, th3], &mut c2b.iv);
    kdf(f, b"b2c key", &[&ms.0, th3], &mut b2c.key);
    kdf(f, b"b2c iv", &[&ms.0, th3], &mut b2c.iv);
    (c2b, b2c)
}

/// Checks the 2-byte header and the exact length of a fixed-length message.
fn check_header(msg: &[u8], kind: u8, expected_len: usize) -> Result<(), Error> {
    match msg {
        [] | [_] => {
            return Err(Error::Truncated {
                expected: expected_len,
                got: msg.len(),
            })
        }
        [v, ..] if *v != VERSION => return Err(Error::UnsupportedVersion(*v)),
        [_, t, ..] if *t != kind => {
            return Err(Error::UnexpectedMessage {
                expected: kind,
                got: *t,
            })
        }
        _ => {}
    }
    Ok(())
}

fn check_len(msg: &[u8], expected: usize) -> Result<(), Error> {
    let got = msg.len();
    if got < expected {
        Err(Error::Truncated { expected, got })
    } else if got > expected {
        Err(Error::Oversized { expected, got })
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------- sensor

/// Sensor side, first step: builds the ClientHello.
pub struct SensorHandshake;

/// Storage for the sensor's ephemeral KEM secret key from
/// [`SensorHandshake::start`] to [`AwaitBrokerHello::receive_broker_hello`]
/// (sized for the largest enabled KEM), zeroized on drop.
///
/// [`SensorHandshake::start`] keeps one inside the state it returns;
/// [`SensorHandshake::start_in`] borrows the caller's, so the state that
/// waits for the BrokerHello stays small (on a microcontroller: a static
/// buffer, and no kilobyte-sized value moved across the stack).
#[repr(transparent)]
pub struct EphemeralKey([u8; ENABLED_MAX_SK_LEN]);

impl EphemeralKey {
    /// Zeroed storage.
    pub const fn new() -> Self {
        EphemeralKey([0; ENABLED_MAX_SK_LEN])
    }
}

impl Default for EphemeralKey {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for EphemeralKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl SensorHandshake {
    /// Writes the ClientHello for `suite` into `out` and returns the state
    /// awaiting the BrokerHello together with the ClientHello's length.
    ///
    /// Work: one KEM key generation, one encapsulation; hybrid: one X25519
    /// key generation and the static-static X25519.
    pub fn start<'a>(
        suite: Suite,
        creds: SensorCredentials<'a>,
        rng: &mut impl TryCryptoRng,
        out: &mut [u8],
    ) -> Result<(AwaitBrokerHello<'a>, usize), Error> {
        Self::start_with(suite, creds, rng, out, EphemeralKey::new())
    }

    /// [`Self::start`] with the ephemeral secret key kept in `ephemeral`
    /// (wiped when the returned state is consumed or dropped).
    pub fn start_in<'a>(
        suite: Suite,
        creds: SensorCredentials<'a>,
        rng: &mut impl TryCryptoRng,
        out: &mut [u8],
        ephemeral: &'a mut EphemeralKey,
    ) -> Result<(AwaitBrokerHello<'a, &'a mut EphemeralKey>, usize), Error> {
        Self::start_with(suite, creds, rng, out, ephemeral)
    }

    fn start_with<'a, K: BorrowMut<EphemeralKey>>(
        suite: Suite,
        creds: SensorCredentials<'a>,
        rng: &mut impl TryCryptoRng,
        out: &mut [u8],
        sk_e: K,
    ) -> Result<(AwaitBrokerHello<'a, K>, usize), Error> {
        if !suite.enabled() {
            return Err(Error::SuiteNotSupported(suite.id()));
        }
        let kem = suite.kem();
        let f = suite.family();
        if !valid_client_id(creds.client_id) {
            return Err(Error::InvalidClientId);
        }
        if creds.kem_sk.len() != kem.sk_len() || creds.broker_kem_pk.len() != kem.pk_len() {
            return Err(Error::InvalidKey);
        }
        let statics = match (suite.is_hybrid(), creds.x25519_sk, creds.broker_x25519_pk) {
            (false, _, _) => None,
            (true, Some(sk), Some(pk)) => Some((sk, pk)),
            (true, _, _) => return Err(Error::InvalidKey),
        };
        let total = suite.client_hello_len(creds.client_id.len());
        let out = out.get_mut(..total).ok_or(Error::BufferTooSmall { needed: total })?;

        let mut state = AwaitBrokerHello {
            suite,
            creds,
            sk_e,
            x_e: [0; 32],
            es: Secret32([0; 32]),
            transcript: Xof::transcript(f),
        };
        let (header, rest) = out.split_at_mut(4);
        header.copy_from_slice(&[VERSION, MSG_CLIENT_HELLO, suite.id(), creds.client_id.len() as u8]);
        let (id, rest) = rest.split_at_mut(creds.client_id.len());
        id.copy_from_slice(creds.client_id);
        let (nonce, rest) = rest.split_at_mut(NONCE_LEN);
        fill(rng, nonce)?;
        let (pk_e, rest) = rest.split_at_mut(kem.pk_len());
        let sk_e = state
            .sk_e
            .borrow_mut()
            .0
            .get_mut(..kem.sk_len())
            .ok_or(Error::InvalidKey)?;
        kem::keygen(kem, rng, pk_e, sk_e).map_err(|_| Error::Rng)?;
        let (ct_s, share) = rest.split_at_mut(kem.ct_len());
        let ss_s = kem::encapsulate(kem, creds.broker_kem_pk, rng, ct_s).map_err(|e| match e {
            KemFail::Rng => Error::Rng,
            _ => Error::InvalidKey,
        })?;
        let dh_ss = match statics {
            Some((sk, pk)) => {
                fill(rng, &mut state.x_e)?;
                share.copy_from_slice(&x25519_public(&state.x_e));
                Some(match creds.x25519_static_secret {
                    // A cached secret gets the check a computed one gets: an
                    // all-zero value would leave ES to the KEM alone.
                    Some(cached) => contributory(Secret32(*cached))?,
                    None => x25519_shared(sk, pk)?,
                })
            }
            None => None,
        };
        state.es = early_secret(f, ss_s.as_bytes(), dh_ss.as_ref());
        state.transcript.absorb(out);
        Ok((state, total))
    }
}

/// Sensor state after the ClientHello: holds the ephemeral secrets (the KEM
/// key in `K`: its own [`EphemeralKey`], or the caller's via
/// [`SensorHandshake::start_in`]).
pub struct AwaitBrokerHello<'a, K: BorrowMut<EphemeralKey> = EphemeralKey> {
    suite: Suite,
    creds: SensorCredentials<'a>,
    sk_e: K,
    x_e: [u8; 32],
    es: Secret32,
    transcript: Xof,
}

impl<K: BorrowMut<EphemeralKey>> Drop for AwaitBrokerHello<'_, K> {
    fn drop(&mut self) {
        self.sk_e.borrow_mut().0.zeroize();
        self.x_e.zeroize();
    }
}

impl<K: BorrowMut<EphemeralKey>> AwaitBrokerHello<'_, K> {
    /// The suite offered.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// Processes the BrokerHello: checks BrokerFinished in constant time,
    /// writes the ClientFinished into `out` and returns the session and its
    /// length. Work: two decapsulations; hybrid: one X25519.
    pub fn receive_broker_hello(mut self, msg: &[u8], out: &mut [u8]) -> Result<(Session, usize), Error> {
        self.process(msg, out)
    }

    /// [`Self::receive_broker_hello`] for a state kept in `slot` (a static
    /// on a microcontroller): processed where it lies instead of moved onto
    /// the stack first, then dropped (its secrets wiped) whatever the
    /// outcome, leaving `None`. An empty slot (no handshake awaits a
    /// BrokerHello) is [`Error::UnexpectedMessage`] with `expected` 0.
    pub fn receive_broker_hello_in(
        slot: &mut Option<Self>,
        msg: &[u8],
        out: &mut [u8],
    ) -> Result<(Session, usize), Error> {
        let result = match slot.as_mut() {
            Some(state) => state.process(msg, out),
            None => Err(Error::UnexpectedMessage {
                expected: 0,
                got: msg.get(1).copied().unwrap_or(0),
            }),
        };
        *slot = None;
        result
    }

    /// The work of [`Self::receive_broker_hello`] on a borrowed state.
    fn process(&mut self, msg: &[u8], out: &mut [u8]) -> Result<(Session, usize), Error> {
        let suite = self.suite;
        let kem = suite.kem();
        let expected = suite.broker_hello_len();
        check_header(msg, MSG_BROKER_HELLO, expected)?;
        match msg.get(2) {
            None => {
                return Err(Error::Truncated {
                    expected,
                    got: msg.len(),
                })
            }
            Some(&id) if id != suite.id() => {
                return Err(Error::SuiteMismatch {
                    offered: suite.id(),
                    answered: id,
                })
            }
            Some(_) => {}
        }
        check_len(msg, expected)?;
        let cf_len = suite.client_finished_len();
        let out = out.get_mut(..cf_len).ok_or(Error::BufferTooSmall { needed: cf_len })?;

        let (body, bf) = msg.split_at(expected - MAC_LEN);
        let rest = body.get(3 + NONCE_LEN..).unwrap_or(&[]);
        let (ct_e, rest) = rest.split_at(kem.ct_len());
        let (ct_c, share) = rest.split_at(kem.ct_len());

        // Both decapsulations first, from this small frame (the sensor's
        // deepest calls); the key schedule's secrets live in a frame of their
        // own afterwards.
        let sk_e = self.sk_e.borrow().0.get(..kem.sk_len()).unwrap_or(&[]);
        let ss_e = kem::decapsulate(kem, sk_e, ct_e).map_err(|_| Error::InvalidKey)?;
        let ss_c = kem::decapsulate(kem, self.creds.kem_sk, ct_c).map_err(|_| Error::InvalidKey)?;
        let session = self.schedule(ss_e.as_bytes(), ss_c.as_bytes(), body, bf, share, out)?;
        Ok((session, cf_len))
    }

    /// The key schedule from the two KEM secrets (and, hybrid, the
    /// ephemeral X25519 one): checks BrokerFinished, writes the
    /// ClientFinished into `out` (exactly its length) and returns the session.
    #[inline(never)]
    fn schedule(
        &mut self,
        ss_e: &[u8],
        ss_c: &[u8],
        body: &[u8],
        bf: &[u8],
        share: &[u8],
        out: &mut [u8],
    ) -> Result<Session, Error> {
        let f = self.suite.family();
        let dh_ee = if self.suite.is_hybrid() {
            Some(x25519_shared(&self.x_e, &array32(share))?)
        } else {
            None
        };
        let th1 = self.transcript.snapshot();
        let hs = handshake_secret(f, &self.es, ss_e, dh_ee.as_ref(), &th1);
        drop(dh_ee);
        self.transcript.absorb(body);
        let th2 = self.transcript.snapshot();
        let ms = master_secret(f, &hs, ss_c, &th2);
        let expected_bf = finished_mac(f, &ms, b"b finished", &th2);
        verify_mac(&expected_bf, bf, Error::BrokerFinishedInvalid)?;
        self.transcript.absorb(bf);
        let th3 = self.transcript.snapshot();
        let cf = finished_mac(f, &ms, b"c finished", &th3);
        let (header, mac) = out.split_at_mut(2);
        header.copy_from_slice(&[VERSION, MSG_CLIENT_FINISHED]);
        mac.copy_from_slice(&cf.0);
        let (c2b, b2c) = traffic_keys(f, &ms, &th3);
        Ok(Session::new(Role::Sensor, c2b, b2c))
    }
}

// ---------------------------------------------------------------- broker

/// Broker side, first step: answers a ClientHello.
pub struct BrokerHandshake;

impl BrokerHandshake {
    /// The suite and client id a ClientHello names, after the checks that
    /// need no key (version, type, suite, client id syntax, exact length).
    /// A broker can refuse a hello on these (the client id its transport
    /// bound, the registry, a rate limit) before it spends a decapsulation;
    /// the client id is not authenticated until the ClientFinished.
    /// [`BrokerHandshake::accept`] starts with the same checks.
    pub fn peek(msg: &[u8]) -> Result<(Suite, &[u8]), Error> {
        let (version, kind, suite_id, id_len) = match msg {
            [v, t, s, n, ..] => (*v, *t, *s, *n as usize),
            _ => {
                return Err(Error::Truncated {
                    expected: 4,
                    got: msg.len(),
                })
            }
        };
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        if kind != MSG_CLIENT_HELLO {
            return Err(Error::UnexpectedMessage {
                expected: MSG_CLIENT_HELLO,
                got: kind,
            });
        }
        let suite = Suite::from_id(suite_id)?;
        if !suite.enabled() {
            return Err(Error::SuiteNotSupported(suite_id));
        }
        if id_len == 0 || id_len > MAX_CLIENT_ID_LEN {
            return Err(Error::InvalidClientId);
        }
        check_len(msg, suite.client_hello_len(id_len))?;
        let client_id = msg.get(4..4 + id_len).unwrap_or(&[]);
        if !valid_client_id(client_id) {
            return Err(Error::InvalidClientId);
        }
        Ok((suite, client_id))
    }

    /// Parses and checks a ClientHello (version, suite, client id, policy,
    /// exact length), writes the BrokerHello into `out` and returns the state
    /// awaiting the ClientFinished together with the BrokerHello's length.
    pub fn accept<K: BrokerKeys + ?Sized>(
        keys: &K,
        msg: &[u8],
        rng: &mut impl TryCryptoRng,
        out: &mut [u8],
    ) -> Result<(AwaitClientFinished, usize), Error> {
        let (suite, client_id) = Self::peek(msg)?;
        let suite_id = suite.id();
        let id_len = client_id.len();
        let kem = suite.kem();
        let f = suite.family();
        let rest = msg.get(4 + id_len..).unwrap_or(&[]);
        let entry = keys.client(client_id).ok_or(Error::UnknownClient)?;
        if !entry.allowed.contains(suite) || entry.kem != kem {
            return Err(Error::SuiteNotAllowed(suite_id));
        }
        let sk_b = keys.kem_secret_key(kem).ok_or(Error::SuiteNotSupported(suite_id))?;
        let statics = if suite.is_hybrid() {
            let sk = keys.x25519_secret_key().ok_or(Error::SuiteNotSupported(suite_id))?;
            let pk = entry.x25519_pk.ok_or(Error::SuiteNotAllowed(suite_id))?;
            Some((sk, pk))
        } else {
            None
        };
        let total = suite.broker_hello_len();
        let out = out.get_mut(..total).ok_or(Error::BufferTooSmall { needed: total })?;

        let (_nonce_c, rest) = rest.split_at(NONCE_LEN);
        let (pk_e, rest) = rest.split_at(kem.pk_len());
        let (ct_s, share_c) = rest.split_at(kem.ct_len());
        kem::check_public_key(kem, pk_e).map_err(|_| Error::InvalidEphemeralKey)?;

        let mut transcript = Xof::transcript(f);
        transcript.absorb(msg);
        let th1 = transcript.snapshot();
        let ss_s = kem::decapsulate(kem, sk_b, ct_s).map_err(|_| Error::InvalidKey)?;
        let dh_ss = match statics {
            Some((sk, pk)) => Some(x25519_shared(sk, &pk)?),
            None => None,
        };
        let es = early_secret(f, ss_s.as_bytes(), dh_ss.as_ref());
        drop(ss_s);

        let (header, rest) = out.split_at_mut(3);
        header.copy_from_slice(&[VERSION, MSG_BROKER_HELLO, suite.id()]);
        let (nonce_b, rest) = rest.split_at_mut(NONCE_LEN);
        fill(rng, nonce_b)?;
        let (ct_e, rest) = rest.split_at_mut(kem.ct_len());
        let ss_e = kem::encapsulate(kem, pk_e, rng, ct_e).map_err(|e| match e {
            KemFail::Rng => Error::Rng,
            _ => Error::InvalidEphemeralKey,
        })?;
        let (ct_c, rest) = rest.split_at_mut(kem.ct_len());
        let ss_c = kem::encapsulate(kem, entry.kem_pk, rng, ct_c).map_err(|e| match e {
            KemFail::Rng => Error::Rng,
            _ => Error::InvalidKey,
        })?;
        let (share_b, _bf) = rest.split_at_mut(rest.len() - MAC_LEN);
        let dh_ee = if suite.is_hybrid() {
            let mut y = [0u8; 32];
            fill(rng, &mut y)?;
            share_b.copy_from_slice(&x25519_public(&y));
            let s = x25519_shared(&y, &array32(share_c));
            y.zeroize();
            Some(s?)
        } else {
            None
        };
        let hs = handshake_secret(f, &es, ss_e.as_bytes(), dh_ee.as_ref(), &th1);
        drop(ss_e);
        let body_len = total - MAC_LEN;
        transcript.absorb(out.get(..body_len).unwrap_or(&[]));
        let th2 = transcript.snapshot();
        let ms = master_secret(f, &hs, ss_c.as_bytes(), &th2);
        let bf = finished_mac(f, &ms, b"b finished", &th2);
        if let Some(o) = out.get_mut(body_len..) {
            o.copy_from_slice(&bf.0);
        }
        transcript.absorb(&bf.0);
        let th3 = transcript.snapshot();
        let cf = finished_mac(f, &ms, b"c finished", &th3);
        let (c2b, b2c) = traffic_keys(f, &ms, &th3);
        let mut id = [0u8; MAX_CLIENT_ID_LEN];
        id.get_mut(..id_len).unwrap_or(&mut []).copy_from_slice(client_id);
        Ok((
            AwaitClientFinished {
                suite,
                client_id: id,
                client_id_len: id_len as u8,
                expected_cf: cf,
                c2b,
                b2c,
            },
            total,
        ))
    }
}

/// Broker state after the BrokerHello: the keys wait for a valid ClientFinished.
pub struct AwaitClientFinished {
    suite: Suite,
    client_id: [u8; MAX_CLIENT_ID_LEN],
    client_id_len: u8,
    expected_cf: Secret32,
    c2b: DirectionKeys,
    b2c: DirectionKeys,
}

impl AwaitClientFinished {
    /// The negotiated suite.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// The client id of the ClientHello (already checked against the registry).
    pub fn client_id(&self) -> &[u8] {
        self.client_id.get(..self.client_id_len as usize).unwrap_or(&[])
    }

    /// Checks the ClientFinished in constant time and releases the session.
    pub fn receive_client_finished(self, msg: &[u8]) -> Result<Session, Error> {
        self.check_client_finished(msg)
    }

    /// [`Self::receive_client_finished`] without consuming the state: a
    /// broker that keeps handshakes pending verifies a flight 3 first and
    /// discards the state only once it verifies, so a forged flight 3 cannot
    /// discard a pending handshake.
    pub fn check_client_finished(&self, msg: &[u8]) -> Result<Session, Error> {
        let expected = self.suite.client_finished_len();
        check_header(msg, MSG_CLIENT_FINISHED, expected)?;
        check_len(msg, expected)?;
        let mac = msg.get(2..).unwrap_or(&[]);
        verify_mac(&self.expected_cf, mac, Error::ClientFinishedInvalid)?;
        Ok(Session::new(Role::Broker, self.c2b.clone(), self.b2c.clone()))
    }
}
