#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]
//!
//! # On a microcontroller
//!
//! The state between the sensor's two steps holds the ephemeral KEM secret
//! key (up to 1.6 KB). [`SensorHandshake::start_in`] keeps it in an
//! [`EphemeralKey`] the caller owns (a `static`), and
//! [`AwaitBrokerHello::receive_broker_hello_in`] processes the state where it
//! lies, so nothing that large is moved across the stack. With both, the
//! CTRU-Light sensor fits the ATmega4808's 6 KB of SRAM (measured in the
//! project's repository).
//!
//! ```
//! use kem_mqtt::*;
//! # use kem_mqtt::testing::{broker_fixture, sensor_fixture};
//! # let mut rng = kem_common::test_rng(1);
//! # let suite = Suite::new(Scheme::CtruLightAscon, false);
//! # let (broker, sensor) = (broker_fixture(suite, &mut rng), sensor_fixture(suite, &mut rng));
//! # let broker = broker.with_client(&sensor, SuiteSet::for_kem(suite.kem(), false));
//! # let (mut f1, mut f2, mut f3) = ([0u8; MAX_CLIENT_HELLO_LEN], [0u8; MAX_BROKER_HELLO_LEN], [0u8; 64]);
//! let mut ephemeral = EphemeralKey::new(); // a `static` on the sensor
//! let (s, n1) = SensorHandshake::start_in(suite, sensor.credentials(&broker), &mut rng, &mut f1, &mut ephemeral)?;
//! let mut slot = Some(s);
//! # let (b, n2) = BrokerHandshake::accept(&broker, &f1[..n1], &mut rng, &mut f2)?;
//! let (session, n3) = AwaitBrokerHello::receive_broker_hello_in(&mut slot, &f2[..n2], &mut f3)?;
//! assert!(slot.is_none()); // consumed, its secrets wiped
//! # b.receive_client_finished(&f3[..n3])?;
//! # Ok::<(), Error>(())
//! ```
//!
//! # Suites
//!
//! One id byte `kem << 4 | mode` (mode 1 pure, 2 hybrid with X25519; `kem` is
//! the registry's `Scheme::mqtt_id`); the family follows the KEM (Ascon for
//! CTRU-Light (Ascon), SHA3 otherwise). ML-KEM-1024 has no suite.
//!
//! | id | KEM | X25519 | family | ClientHello | BrokerHello | ClientFinished |
//! |---|---|---|---|---|---|---|
//! | 0x11 | CTRU-Light (Ascon) | – | Ascon | 1188 + n | 1091 | 34 |
//! | 0x12 | CTRU-Light (Ascon) | ✓ | Ascon | 1220 + n | 1123 | 34 |
//! | 0x21 | CTRU-Light (SHA3) | – | SHA3 | 1188 + n | 1091 | 34 |
//! | 0x22 | CTRU-Light (SHA3) | ✓ | SHA3 | 1220 + n | 1123 | 34 |
//! | 0x31 | ML-KEM-512 | – | SHA3 | 1604 + n | 1603 | 34 |
//! | 0x32 | ML-KEM-512 | ✓ | SHA3 | 1636 + n | 1635 | 34 |
//! | 0x41 | Kyber512 (round 3) | – | SHA3 | 1604 + n | 1603 | 34 |
//! | 0x42 | Kyber512 (round 3) | ✓ | SHA3 | 1636 + n | 1635 | 34 |
//! | 0x51 | LightSaber | – | SHA3 | 1444 + n | 1539 | 34 |
//! | 0x52 | LightSaber | ✓ | SHA3 | 1476 + n | 1571 | 34 |
//! | 0x61 | ML-KEM-768 | – | SHA3 | 2308 + n | 2243 | 34 |
//! | 0x62 | ML-KEM-768 | ✓ | SHA3 | 2340 + n | 2275 | 34 |
//!
//! (n = client id length, 1..=64 bytes of `[A-Za-z0-9._-]`.)
//!
//! # Wire format
//!
//! All integers big-endian. `pk`, `ct` lengths are those of the suite's KEM.
//!
//! **Flight 1, ClientHello** (sensor → broker):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 1 | version = 0x01 |
//! | 1 | 1 | type = 0x01 |
//! | 2 | 1 | suite id |
//! | 3 | 1 | n = client id length (1..=64) |
//! | 4 | n | client id |
//! | 4+n | 32 | nonce_C |
//! | 36+n | pk | pk_e, ephemeral KEM public key |
//! | 36+n+pk | ct | ct_S = Encaps(pk_B) |
//! | 36+n+pk+ct | 32 | hybrid only: X25519 share x_e·G |
//!
//! **Flight 2, BrokerHello** (broker → sensor):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 1 | version = 0x01 |
//! | 1 | 1 | type = 0x02 |
//! | 2 | 1 | suite id (echo; the sensor rejects any other) |
//! | 3 | 32 | nonce_B |
//! | 35 | ct | ct_e = Encaps(pk_e) |
//! | 35+ct | ct | ct_C = Encaps(pk_C) |
//! | 35+2ct | 32 | hybrid only: X25519 share y_e·G |
//! | end−32 | 32 | BrokerFinished |
//!
//! **Flight 3, ClientFinished** (sensor → broker):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 1 | version = 0x01 |
//! | 1 | 1 | type = 0x03 |
//! | 2 | 32 | ClientFinished |
//!
//! **Record** (MQTT PUBLISH payload, either direction):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | sequence number (per direction, from 0) |
//! | 8 | len | Ascon-AEAD128 ciphertext |
//! | 8+len | 16 | tag |
//!
//! Nonce = IV ⊕ (0⁶⁴ ‖ seq); associated data =
//! `"KEM-MQTT/1 record" ‖ dir ‖ u16(|topic|) ‖ topic` with dir 0 for
//! sensor → broker and 1 for broker → sensor, so a record moved to another
//! topic or reflected fails authentication. A 64-record sliding window
//! rejects replays and records older than the window.
//!
//! # Key schedule
//!
//! `KDF(label, a, b, …)` = Ascon-CXOF128 (customization `"KEM-MQTT/1 " ‖
//! label`) or SHAKE256 (`frame("KEM-MQTT/1 " ‖ label)` first) over
//! `frame(a) ‖ frame(b) ‖ …`, `frame(x) = u16(|x|) ‖ x`. `TH(…)` =
//! Ascon-XOF128 (256-bit output) or SHA3-256 of the raw messages.
//!
//! ```text
//! ES  = KDF("es", ss_S [, X25519(c, B)])                    static-static
//! HS  = KDF("hs", ES, ss_e [, X25519(x_e, y_e·G)], TH(CH))
//! MS  = KDF("ms", HS, ss_C, TH(CH ‖ BH⁻))                   BH⁻ = BrokerHello without its MAC
//! BrokerFinished = KDF("finished", KDF("b finished", MS), TH(CH ‖ BH⁻))
//! ClientFinished = KDF("finished", KDF("c finished", MS), TH(CH ‖ BH))
//! key/iv c2b, b2c = KDF("c2b key" | "c2b iv" | "b2c key" | "b2c iv", MS, TH(CH ‖ BH))   16 bytes each
//! ```
//!
//! The sensor authenticates the broker by ss_S (only pk_B's owner can
//! decapsulate it) and, hybrid, by the static-static X25519; the broker
//! authenticates the sensor by ss_C and the static X25519 key in its registry.
//! The suite id is in every transcript hash and the broker enforces a
//! per-client [`SuiteSet`], so stripping X25519 or changing the suite fails.
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

mod handshake;
pub mod kem;
mod record;
pub mod suite;
pub mod sym;
#[cfg(feature = "x25519")]
#[doc(hidden)]
pub mod testing;

#[cfg(feature = "x25519")]
pub use handshake::static_x25519_secret;
pub use handshake::{
    valid_client_id, AwaitBrokerHello, AwaitClientFinished, BrokerHandshake, BrokerKeys, ClientEntry, EphemeralKey,
    SensorCredentials, SensorHandshake, NONCE_LEN, X25519_LEN,
};
pub use kem::{check_key_pair, check_public_key, generate_keypair, public_key_of};
/// A key in the data space or behind a reader ([`SensorCredentials`]'s keys).
pub use kem_common::KeyBytes;
pub use record::{Role, Session, MAX_TOPIC_LEN, RECORD_LABEL, RECORD_OVERHEAD, REPLAY_WINDOW, SEQ_LEN, TAG_LEN};
pub use suite::{kem_enabled, Family, Scheme, Suite, SuiteSet, KEMS};

/// The wire facts other crates share without this one (the AVR firmware's
/// `avr-wire`): version and message bytes, lengths, the topic layout.
pub use kem_mqtt_wire as wire;
pub use kem_mqtt_wire::{
    AUTH_METHOD, CLIENT_FINISHED_LEN, MAC_LEN, MAX_CLIENT_ID_LEN, MSG_BROKER_HELLO, MSG_CLIENT_FINISHED,
    MSG_CLIENT_HELLO, VERSION,
};
/// Largest ClientHello of any suite.
pub const MAX_CLIENT_HELLO_LEN: usize = 4 + MAX_CLIENT_ID_LEN + 32 + suite::MAX_PK_LEN + suite::MAX_CT_LEN + 32;
/// Largest BrokerHello of any suite.
pub const MAX_BROKER_HELLO_LEN: usize = 3 + 32 + 2 * suite::MAX_CT_LEN + 32 + MAC_LEN;

/// Every way the protocol can fail. Malformed input is always an error, never a panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An output buffer is too small.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
    },
    /// A message is shorter than its suite requires.
    Truncated {
        /// Length required.
        expected: usize,
        /// Length received.
        got: usize,
    },
    /// A message is longer than its suite requires.
    Oversized {
        /// Length required.
        expected: usize,
        /// Length received.
        got: usize,
    },
    /// The version byte is not [`VERSION`].
    UnsupportedVersion(u8),
    /// A message of another type than the state expects.
    UnexpectedMessage {
        /// Type expected.
        expected: u8,
        /// Type received.
        got: u8,
    },
    /// A suite id that names no suite.
    UnknownSuite(u8),
    /// The BrokerHello names another suite than the ClientHello offered.
    SuiteMismatch {
        /// Suite offered.
        offered: u8,
        /// Suite in the answer.
        answered: u8,
    },
    /// The client's policy does not allow this suite (e.g. a downgrade to a pure suite).
    SuiteNotAllowed(u8),
    /// The broker has no keys for this suite.
    SuiteNotSupported(u8),
    /// A client id that is empty, too long or has characters outside `[A-Za-z0-9._-]`.
    InvalidClientId,
    /// A client id that is not in the registry.
    UnknownClient,
    /// A configured static key (own or peer's) is malformed or missing.
    InvalidKey,
    /// The peer's ephemeral KEM public key was rejected.
    InvalidEphemeralKey,
    /// An X25519 result was all-zero (a low-order share).
    X25519NonContributory,
    /// BrokerFinished did not verify: wrong broker key, wrong client key in
    /// the registry, or a modified flight.
    BrokerFinishedInvalid,
    /// ClientFinished did not verify.
    ClientFinishedInvalid,
    /// The random number generator failed.
    Rng,
    /// A record shorter than sequence number plus tag.
    RecordTruncated,
    /// A record failed authentication (modified, wrong topic, wrong direction or key).
    RecordAuthFailed,
    /// A record whose sequence number was already accepted.
    RecordReplayed,
    /// A record older than the replay window.
    RecordTooOld,
    /// A record too long for the AEAD.
    RecordTooLong,
    /// The send sequence number space is used up: handshake again.
    SequenceExhausted,
    /// A topic longer than [`MAX_TOPIC_LEN`].
    TopicTooLong,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::BufferTooSmall { needed } => write!(f, "output buffer too small: {needed} bytes needed"),
            Error::Truncated { expected, got } => write!(f, "message truncated: {got} of {expected} bytes"),
            Error::Oversized { expected, got } => write!(f, "message oversized: {got} bytes, {expected} expected"),
            Error::UnsupportedVersion(v) => write!(f, "unsupported protocol version {v:#04x}"),
            Error::UnexpectedMessage { expected, got } => {
                write!(f, "unexpected message type {got:#04x} (expected {expected:#04x})")
            }
            Error::UnknownSuite(s) => write!(f, "unknown suite {s:#04x}"),
            Error::SuiteMismatch { offered, answered } => {
                write!(f, "suite mismatch: offered {offered:#04x}, answered {answered:#04x}")
            }
            Error::SuiteNotAllowed(s) => write!(f, "suite {s:#04x} not allowed for this client"),
            Error::SuiteNotSupported(s) => write!(f, "suite {s:#04x} not supported by the broker"),
            Error::InvalidClientId => f.write_str("invalid client id"),
            Error::UnknownClient => f.write_str("unknown client"),
            Error::InvalidKey => f.write_str("invalid or missing static key"),
            Error::InvalidEphemeralKey => f.write_str("invalid ephemeral public key"),
            Error::X25519NonContributory => f.write_str("X25519 result is all-zero"),
            Error::BrokerFinishedInvalid => f.write_str("BrokerFinished does not verify"),
            Error::ClientFinishedInvalid => f.write_str("ClientFinished does not verify"),
            Error::Rng => f.write_str("random number generator failed"),
            Error::RecordTruncated => f.write_str("record truncated"),
            Error::RecordAuthFailed => f.write_str("record authentication failed"),
            Error::RecordReplayed => f.write_str("record replayed"),
            Error::RecordTooOld => f.write_str("record older than the replay window"),
            Error::RecordTooLong => f.write_str("record too long"),
            Error::SequenceExhausted => f.write_str("sequence numbers exhausted"),
            Error::TopicTooLong => f.write_str("topic too long"),
        }
    }
}

impl core::error::Error for Error {}
