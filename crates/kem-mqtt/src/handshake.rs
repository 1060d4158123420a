//! The three-flight handshake as type-state machines (each step consumes its state).

use core::borrow::BorrowMut;

use kem_common::{KeyBytes, KeySource};
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
use crate::suite::{Family, Scheme, Suite, SuiteSet, ENABLED_MAX_EPHEMERAL_SK_LEN};
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
    /// The sensor's static KEM secret key (the suite's KEM): a slice
    /// (`slice.into()`), or with the feature `program-memory-keys` a key
    /// in a classic AVR's flash ([`KeyBytes::Reader`]).
    pub kem_sk: KeyBytes<'a>,
    /// The sensor's static X25519 secret key (hybrid suites).
    pub x25519_sk: Option<&'a [u8; 32]>,
    /// The broker's static KEM public key (a slice or, as `kem_sk`, a reader).
    pub broker_kem_pk: KeyBytes<'a>,
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
    pub kem: Scheme,
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
    fn kem_secret_key(&self, kem: Scheme) -> Option<&[u8]>;
    /// The broker's static X25519 secret key, if it has one.
    fn x25519_secret_key(&self) -> Option<&[u8; 32]>;
    /// The registry entry of `client_id`.
    fn client(&self, client_id: &[u8]) -> Option<ClientEntry<'_>>;
}

// Out of line: inlined, the fixed-base multiplication's frame (≈ 700 B on
// the AVR) joins its caller's, which is live under the KEM's key generation
// (a sensor's start grew by 621 B of stack when the build inlined it).
#[cfg(feature = "x25519")]
#[inline(never)]
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
/// (sized for the largest enabled KEM's [`Scheme::compact_sk_len`], or
/// the rest of its BrokerHello, which the sensor receives there
/// afterwards), zeroized on drop.
///
/// [`SensorHandshake::start`] keeps one inside the state it returns;
/// [`SensorHandshake::start_in`] borrows the caller's, so the state that
/// waits for the BrokerHello stays small (on a microcontroller: a static
/// buffer, and no kilobyte-sized value moved across the stack).
#[repr(transparent)]
pub struct EphemeralKey([u8; ENABLED_MAX_EPHEMERAL_SK_LEN]);

impl EphemeralKey {
    /// Zeroed storage.
    pub const fn new() -> Self {
        EphemeralKey([0; ENABLED_MAX_EPHEMERAL_SK_LEN])
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
        let mut slot = None;
        let (_, n) = Self::start_into(&mut slot, suite, creds, rng, out, EphemeralKey::new(), false)?;
        slot.map(|state| (state, n)).ok_or(Error::InvalidKey)
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
        let mut slot = None;
        let (_, n) = Self::start_into(&mut slot, suite, creds, rng, out, ephemeral, false)?;
        slot.map(|state| (state, n)).ok_or(Error::InvalidKey)
    }

    /// [`Self::start_in`] for a microcontroller: the state is built where it
    /// lies (`slot`, a static), and the ClientHello is left in two pieces
    /// around the ephemeral public key, which stays where key generation
    /// wrote it (inside the ephemeral secret key): the ClientHello is
    /// `out[..head]` ‖ [`AwaitBrokerHello::ephemeral_public_key`] ‖
    /// `out[head..len]`, and `out` needs the ClientHello's length minus the
    /// public key's. Returns `(head, len)`; on an error `slot` is `None`.
    pub fn start_split<'a>(
        slot: &mut Option<AwaitBrokerHello<'a, &'a mut EphemeralKey>>,
        suite: Suite,
        creds: SensorCredentials<'a>,
        rng: &mut impl TryCryptoRng,
        out: &mut [u8],
        ephemeral: &'a mut EphemeralKey,
    ) -> Result<(usize, usize), Error> {
        Self::start_into(slot, suite, creds, rng, out, ephemeral, true)
    }

    /// A fresh state in `slot`. Not inlined: the state is put together on
    /// the stack before it moves into the slot (LLVM does not build it in
    /// place), and that copy, the state's size (358 B for the sensor), must
    /// be gone before the KEM runs under the start.
    #[inline(never)]
    fn new_state_in<'s, 'a, K: BorrowMut<EphemeralKey>>(
        slot: &'s mut Option<AwaitBrokerHello<'a, K>>,
        suite: Suite,
        creds: SensorCredentials<'a>,
        sk_e: K,
    ) -> &'s mut AwaitBrokerHello<'a, K> {
        slot.insert(AwaitBrokerHello {
            suite,
            creds,
            sk_e,
            x_e: [0; 32],
            es: Secret32([0; 32]),
            transcript: Xof::transcript(suite.family()),
            ss_e: Secret32([0; 32]),
            th1: [0; 32],
            head_done: false,
        })
    }

    /// The work of the starts: the state in `slot`; the ClientHello in
    /// `out` whole, or (`split`) without the ephemeral public key.
    fn start_into<'a, K: BorrowMut<EphemeralKey>>(
        slot: &mut Option<AwaitBrokerHello<'a, K>>,
        suite: Suite,
        creds: SensorCredentials<'a>,
        rng: &mut impl TryCryptoRng,
        out: &mut [u8],
        sk_e: K,
        split: bool,
    ) -> Result<(usize, usize), Error> {
        *slot = None;
        if !suite.enabled() {
            return Err(not_supported(suite));
        }
        let suite = suite.of_enabled();
        let kem = suite.kem();
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
        let head = 4 + creds.client_id.len() + NONCE_LEN;
        let total = suite.client_hello_len(creds.client_id.len());
        let len = if split { total - kem.pk_len() } else { total };
        let out = out.get_mut(..len).ok_or(Error::BufferTooSmall { needed: len })?;
        let state = Self::new_state_in(slot, suite, creds, sk_e);
        let result = state.start(rng, statics, out, head, split);
        if result.is_err() {
            *slot = None; // wipes what was made
        }
        result.map(|()| (head, len))
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
    /// The BrokerHello in two parts: the ephemeral KEM secret, and the
    /// transcript hash before the BrokerHello, from the first part.
    ss_e: Secret32,
    th1: [u8; 32],
    /// The first part is processed (the ephemeral key is used up and its
    /// storage receives the rest).
    head_done: bool,
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
        self.suite.of_enabled()
    }

    /// The ephemeral KEM public key of the ClientHello, where key generation
    /// wrote it (inside the ephemeral secret key); empty once the first
    /// part of the BrokerHello is processed.
    pub fn ephemeral_public_key(&self) -> &[u8] {
        let kem = self.suite().kem();
        let at = kem.compact_sk_pk_offset();
        match self.head_done {
            false => self.sk_e.borrow().0.get(at..at + kem.pk_len()).unwrap_or(&[]),
            true => &[],
        }
    }

    /// The ClientHello's key generation, encapsulation and X25519 share
    /// (see [`SensorHandshake::start_into`]); `out` is the ClientHello
    /// without the public key when `split`.
    fn start(
        &mut self,
        rng: &mut impl TryCryptoRng,
        statics: Option<(&[u8; 32], &[u8; 32])>,
        out: &mut [u8],
        head: usize,
        split: bool,
    ) -> Result<(), Error> {
        let (suite, kem, id) = (self.suite(), self.suite().kem(), self.creds.client_id);
        let (header, rest) = out.split_at_mut(4);
        header.copy_from_slice(&[VERSION, MSG_CLIENT_HELLO, suite.id(), id.len() as u8]);
        let (id_out, rest) = rest.split_at_mut(id.len());
        id_out.copy_from_slice(id);
        let (nonce, rest) = rest.split_at_mut(NONCE_LEN);
        fill(rng, nonce)?;
        let sk_e = self
            .sk_e
            .borrow_mut()
            .0
            .get_mut(..kem.compact_sk_len())
            .ok_or(Error::InvalidKey)?;
        kem::keygen_ephemeral(kem, rng, sk_e).map_err(|_| Error::Rng)?;
        let pk_at = kem.compact_sk_pk_offset();
        let pk_e = sk_e.get(pk_at..pk_at + kem.pk_len()).ok_or(Error::InvalidKey)?;
        let rest = if split {
            rest
        } else {
            let (pk_out, rest) = rest.split_at_mut(kem.pk_len());
            pk_out.copy_from_slice(pk_e);
            rest
        };
        let (ct_s, share) = rest.split_at_mut(kem.ct_len());
        let ss_s = kem::encapsulate(kem, self.creds.broker_kem_pk, rng, ct_s).map_err(|e| match e {
            KemFail::Rng => Error::Rng,
            _ => Error::InvalidKey,
        })?;
        let hybrid = match statics {
            Some(statics) => {
                self.x25519_share(rng, statics, share)?;
                true
            }
            None => false,
        };
        self.early_secret_and_transcript(&ss_s, hybrid, out, head, split);
        Ok(())
    }

    /// ES from the KEM's secret and, `hybrid`, the static-static X25519
    /// secret (which [`Self::x25519_share`] left in `self.es`); then the
    /// ClientHello into the transcript, in wire order: split, the public
    /// key between the pieces. Not inlined: its buffers stay out of the
    /// start's frame, which is on the stack beneath the KEM.
    #[inline(never)]
    fn early_secret_and_transcript(
        &mut self,
        ss_s: &kem_common::SharedSecret,
        hybrid: bool,
        out: &[u8],
        head: usize,
        split: bool,
    ) {
        let kem = self.suite().kem();
        self.es = early_secret(self.suite().family(), ss_s.as_bytes(), hybrid.then_some(&self.es));
        let pk_at = kem.compact_sk_pk_offset();
        let Self { sk_e, transcript, .. } = self;
        if split {
            transcript.absorb(&out[..head]);
            transcript.absorb(sk_e.borrow().0.get(pk_at..pk_at + kem.pk_len()).unwrap_or(&[]));
            transcript.absorb(&out[head..]);
        } else {
            transcript.absorb(out);
        }
    }

    /// The hybrid ClientHello's X25519 part: the ephemeral key into
    /// `share`, and the static-static secret (cached or computed) into
    /// `self.es` until ES replaces it. Not inlined, and nothing returned
    /// but the outcome: its buffers are not in the start's frame, which is
    /// on the stack beneath the KEM.
    #[inline(never)]
    fn x25519_share(
        &mut self,
        rng: &mut impl TryCryptoRng,
        (sk, pk): (&[u8; 32], &[u8; 32]),
        share: &mut [u8],
    ) -> Result<(), Error> {
        fill(rng, &mut self.x_e)?;
        share.copy_from_slice(&x25519_public(&self.x_e));
        self.es = match self.creds.x25519_static_secret {
            // A cached secret gets the check a computed one gets: an
            // all-zero value would leave ES to the KEM alone.
            Some(cached) => contributory(Secret32(*cached))?,
            None => x25519_shared(sk, pk)?,
        };
        Ok(())
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
            None => Err(nothing_awaits(msg)),
        };
        *slot = None;
        result
    }

    /// The BrokerHello's first part ([`Suite::broker_hello_head_len`] bytes:
    /// header, nonce, the ciphertext to the ephemeral key), for a sensor that
    /// cannot hold the whole BrokerHello beside its ephemeral key: checks
    /// the header, decapsulates, then wipes the ephemeral key, whose storage
    /// receives the rest ([`Self::rest_buffer`], then
    /// [`Self::receive_broker_hello_rest`]). The state stays in `slot`; on
    /// an error it is dropped (`None`).
    pub fn receive_broker_hello_head(slot: &mut Option<Self>, part: &[u8]) -> Result<(), Error> {
        let result = match slot.as_mut() {
            Some(state) if !state.head_done => state.head(part),
            _ => Err(nothing_awaits(part)),
        };
        if result.is_err() {
            *slot = None;
        }
        result
    }

    /// Where the rest of the BrokerHello goes after its first part: the
    /// wiped ephemeral key's storage, [`Suite::broker_hello_rest_len`]
    /// bytes (empty before the first part).
    pub fn rest_buffer(&mut self) -> &mut [u8] {
        let len = self.suite().broker_hello_rest_len();
        match self.head_done {
            true => self.sk_e.borrow_mut().0.get_mut(..len).unwrap_or(&mut []),
            false => &mut [],
        }
    }

    /// The rest of the BrokerHello, its first `len` bytes in
    /// [`Self::rest_buffer`]: as [`Self::receive_broker_hello_in`] from
    /// there on (the state is dropped whatever the outcome).
    pub fn receive_broker_hello_rest(
        slot: &mut Option<Self>,
        len: usize,
        out: &mut [u8],
    ) -> Result<(Session, usize), Error> {
        let mut session = None;
        let n = Self::receive_broker_hello_rest_into(slot, len, out, &mut session)?;
        session.map(|s| (s, n)).ok_or(Error::InvalidKey)
    }

    /// [`Self::receive_broker_hello_rest`] with the session written into
    /// `session` (a static on a microcontroller: a returned session would
    /// take its bytes in the caller's frame, beneath the decapsulation);
    /// returns the ClientFinished's length. `session` is left `None` on an
    /// error.
    pub fn receive_broker_hello_rest_into(
        slot: &mut Option<Self>,
        len: usize,
        out: &mut [u8],
        session: &mut Option<Session>,
    ) -> Result<usize, Error> {
        *session = None;
        let result = match slot.as_mut() {
            Some(state) if state.head_done => state.rest(None, len, out, session),
            _ => Err(Error::UnexpectedMessage {
                expected: 0,
                got: MSG_BROKER_HELLO,
            }),
        };
        *slot = None;
        result
    }

    /// The work of [`Self::receive_broker_hello`] on a borrowed state: the
    /// two parts in turn.
    fn process(&mut self, msg: &[u8], out: &mut [u8]) -> Result<(Session, usize), Error> {
        let expected = self.suite().broker_hello_len();
        check_header(msg, MSG_BROKER_HELLO, expected)?;
        check_suite(msg, self.suite(), expected)?;
        check_len(msg, expected)?;
        let (head, rest) = msg.split_at(self.suite().broker_hello_head_len());
        self.head(head)?;
        let mut session = None;
        let n = self.rest(Some(rest), rest.len(), out, &mut session)?;
        session.map(|s| (s, n)).ok_or(Error::InvalidKey)
    }

    /// The first part: header checks, the transcript before it (th1) and
    /// through it, ss_e; then the ephemeral key is wiped.
    fn head(&mut self, part: &[u8]) -> Result<(), Error> {
        let suite = self.suite();
        let kem = suite.kem();
        let expected = suite.broker_hello_len();
        check_header(part, MSG_BROKER_HELLO, expected)?;
        check_suite(part, suite, expected)?;
        check_len(part, suite.broker_hello_head_len())?;
        let ct_e = part.get(3 + NONCE_LEN..).unwrap_or(&[]);
        let sk_e = self.sk_e.borrow().0.get(..kem.compact_sk_len()).unwrap_or(&[]);
        self.ss_e = kem::decapsulate_ephemeral(kem, sk_e, ct_e)
            .map(|ss| Secret32(*ss.as_bytes()))
            .map_err(|_| Error::InvalidKey)?;
        self.th1 = self.transcript.snapshot();
        self.transcript.absorb(part);
        self.sk_e.borrow_mut().0.zeroize();
        self.head_done = true;
        Ok(())
    }

    /// The rest: `rest`, or (`None`) the first `len` bytes of the rest
    /// buffer; the second decapsulation and the key schedule, the session
    /// into `session`. Returns the ClientFinished's length.
    fn rest(
        &mut self,
        rest: Option<&[u8]>,
        len: usize,
        out: &mut [u8],
        session: &mut Option<Session>,
    ) -> Result<usize, Error> {
        let suite = self.suite();
        let kem = suite.kem();
        let cf_len = suite.client_finished_len();
        let out = out.get_mut(..cf_len).ok_or(Error::BufferTooSmall { needed: cf_len })?;
        let AwaitBrokerHello {
            creds,
            sk_e,
            x_e,
            es,
            transcript,
            ss_e,
            th1,
            ..
        } = self;
        let expected = suite.broker_hello_rest_len();
        let head = suite.broker_hello_head_len();
        let rest = match rest.or_else(|| sk_e.borrow().0.get(..len)) {
            Some(r) => r,
            None => {
                return Err(Error::Oversized {
                    expected: head + expected,
                    got: head.saturating_add(len),
                })
            }
        };
        if rest.len() != expected {
            return Err(if rest.len() < expected {
                Error::Truncated {
                    expected: head + expected,
                    got: head + rest.len(),
                }
            } else {
                Error::Oversized {
                    expected: head + expected,
                    got: head + rest.len(),
                }
            });
        }
        let (body, bf) = rest.split_at(expected - MAC_LEN);
        let (ct_c, share) = body.split_at(kem.ct_len());
        // The second decapsulation from this small frame (with the first,
        // the sensor's deepest calls); the key schedule's secrets live in a
        // frame of their own afterwards.
        let ss_c = kem::decapsulate(kem, creds.kem_sk, ct_c).map_err(|_| Error::InvalidKey)?;
        let keys = Schedule {
            suite,
            x_e,
            es,
            ss_e,
            th1,
        };
        keys.run(transcript, ss_c.as_bytes(), body, bf, share, out, session)?;
        Ok(cf_len)
    }
}

/// The BrokerHello's suite byte (after [`check_header`]) must be the suite offered.
fn check_suite(msg: &[u8], suite: Suite, expected: usize) -> Result<(), Error> {
    match msg.get(2) {
        None => Err(Error::Truncated {
            expected,
            got: msg.len(),
        }),
        Some(&id) if id != suite.id() => Err(Error::SuiteMismatch {
            offered: suite.id(),
            answered: id,
        }),
        Some(_) => Ok(()),
    }
}

/// The error for a suite that is not compiled in, out of line and cold:
/// [`Suite::id`] is a match over every [`Scheme`], and inlined into
/// [`SensorHandshake::start_into`] it turns the `enabled` check into a
/// many-way switch that leaves the start's own path a small fraction of the
/// calls, so LLVM took the call of `AwaitBrokerHello::start` for a cold one
/// and kept it out of line (a second frame under the KEM: 60 B more stack).
#[cold]
#[inline(never)]
fn not_supported(suite: Suite) -> Error {
    Error::SuiteNotSupported(suite.id())
}

/// An empty slot's error: no handshake awaits this message.
fn nothing_awaits(msg: &[u8]) -> Error {
    Error::UnexpectedMessage {
        expected: 0,
        got: msg.get(1).copied().unwrap_or(0),
    }
}

/// The sensor's secrets the key schedule needs once both KEM secrets are known.
struct Schedule<'s> {
    suite: Suite,
    x_e: &'s [u8; 32],
    es: &'s Secret32,
    ss_e: &'s Secret32,
    th1: &'s [u8; 32],
}

impl Schedule<'_> {
    /// The key schedule from the two KEM secrets (and, hybrid, the
    /// ephemeral X25519 one): absorbs the rest of the BrokerHello (`body`,
    /// then `bf`) into `transcript`, checks BrokerFinished, writes the
    /// ClientFinished into `out` (exactly its length) and the session into
    /// `session`.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn run(
        self,
        transcript: &mut Xof,
        ss_c: &[u8],
        body: &[u8],
        bf: &[u8],
        share: &[u8],
        out: &mut [u8],
        session: &mut Option<Session>,
    ) -> Result<(), Error> {
        let f = self.suite.family();
        let dh_ee = if self.suite.is_hybrid() {
            Some(x25519_shared(self.x_e, &array32(share))?)
        } else {
            None
        };
        let hs = handshake_secret(f, self.es, &self.ss_e.0, dh_ee.as_ref(), self.th1);
        drop(dh_ee);
        transcript.absorb(body);
        let th2 = transcript.snapshot();
        let ms = master_secret(f, &hs, ss_c, &th2);
        let expected_bf = finished_mac(f, &ms, b"b finished", &th2);
        verify_mac(&expected_bf, bf, Error::BrokerFinishedInvalid)?;
        transcript.absorb(bf);
        let th3 = transcript.snapshot();
        let cf = finished_mac(f, &ms, b"c finished", &th3);
        let (header, mac) = out.split_at_mut(2);
        header.copy_from_slice(&[VERSION, MSG_CLIENT_FINISHED]);
        mac.copy_from_slice(&cf.0);
        let (c2b, b2c) = traffic_keys(f, &ms, &th3);
        *session = Some(Session::new(Role::Sensor, c2b, b2c));
        Ok(())
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

    /// [`BrokerHandshake::peek`] and every other check that needs no
    /// secret key: the client id is registered, its policy allows the
    /// suite, the broker holds the suite's keys, and the ephemeral public
    /// key passes its import check. A broker calls it before it takes a
    /// rate-limit token, so a hello that fails here (a malformed ephemeral
    /// key, say) costs a parse and never drains a limit that honest sensors
    /// share. [`BrokerHandshake::accept`] starts with it.
    pub fn screen<'m, K: BrokerKeys + ?Sized>(keys: &K, msg: &'m [u8]) -> Result<(Suite, &'m [u8]), Error> {
        let (suite, client_id) = Self::peek(msg)?;
        let suite_id = suite.id();
        let kem = suite.kem();
        let entry = keys.client(client_id).ok_or(Error::UnknownClient)?;
        if !entry.allowed.contains(suite) || entry.kem != kem {
            return Err(Error::SuiteNotAllowed(suite_id));
        }
        keys.kem_secret_key(kem).ok_or(Error::SuiteNotSupported(suite_id))?;
        if suite.is_hybrid() {
            keys.x25519_secret_key().ok_or(Error::SuiteNotSupported(suite_id))?;
            entry.x25519_pk.ok_or(Error::SuiteNotAllowed(suite_id))?;
        }
        // peek checked the exact length: the key is where the layout says.
        let at = 4 + client_id.len() + NONCE_LEN;
        let pk_e = msg.get(at..at + kem.pk_len()).ok_or(Error::Truncated {
            expected: at + kem.pk_len(),
            got: msg.len(),
        })?;
        kem::check_public_key(kem, pk_e).map_err(|_| Error::InvalidEphemeralKey)?;
        Ok((suite, client_id))
    }

    /// Parses and checks a ClientHello ([`BrokerHandshake::screen`]),
    /// writes the BrokerHello into `out` and returns the state awaiting the
    /// ClientFinished together with the BrokerHello's length.
    pub fn accept<K: BrokerKeys + ?Sized>(
        keys: &K,
        msg: &[u8],
        rng: &mut impl TryCryptoRng,
        out: &mut [u8],
    ) -> Result<(AwaitClientFinished, usize), Error> {
        let (suite, client_id) = Self::screen(keys, msg)?;
        let suite_id = suite.id();
        let id_len = client_id.len();
        let kem = suite.kem();
        let f = suite.family();
        let rest = msg.get(4 + id_len..).unwrap_or(&[]);
        let entry = keys.client(client_id).ok_or(Error::UnknownClient)?;
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

        let mut transcript = Xof::transcript(f);
        transcript.absorb(msg);
        let th1 = transcript.snapshot();
        let ss_s = kem::decapsulate(kem, sk_b.into(), ct_s).map_err(|_| Error::InvalidKey)?;
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
        let ss_e = kem::encapsulate(kem, pk_e.into(), rng, ct_e).map_err(|e| match e {
            KemFail::Rng => Error::Rng,
            _ => Error::InvalidEphemeralKey,
        })?;
        let (ct_c, rest) = rest.split_at_mut(kem.ct_len());
        let ss_c = kem::encapsulate(kem, entry.kem_pk.into(), rng, ct_c).map_err(|e| match e {
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
