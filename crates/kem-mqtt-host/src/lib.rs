#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]
//!
//! # Modules
//!
//! - [`addr`]: broker addresses as typed (`HOST`, `HOST:PORT`, `[v6]:PORT`; port 1883 by default);
//! - [`admission`]: rate limits on ClientHellos, checked before any decapsulation;
//! - [`keys`]: versioned JSON key files and the client registry (hex keys);
//! - [`provision`]: broker key generation and sensor enrolment;
//! - [`reload`]: the registry file watched, so revocation needs no restart;
//! - [`client`]: topic mode's MQTT v5 client, on the maintained `rumqttc`;
//! - [`mqtt`]: a minimal MQTT v5 codec: AUTH mode's enhanced authentication
//!   (which `rumqttc` does not carry) and raw packets for tests;
//! - [`transport`]: where a client connects, over TCP or TLS (rustls);
//! - [`sensor`]: the sensor (MQTT client) in topic mode and AUTH mode;
//! - [`gateway`]: the topic-mode gateway service;
//! - `broker`: an embedded broker (`rumqttd`) on 127.0.0.1 for the demo
//!   and the tests (feature `embedded-broker`, on by default);
//! - [`load`]: a fleet of sensors against a broker (`kem-mqtt load`);
//! - [`topics`]: where flights, records, readings and commands travel.

/// The operating system's RNG as a `rand_core` 0.10 `CryptoRng`
/// (`getrandom::fill`; a failure of the OS RNG panics, as `OsRng` did in
/// rand_core 0.6, whose place it takes).
#[derive(Clone, Copy, Debug, Default)]
pub struct OsRng;

impl rand_core::TryRng for OsRng {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Self::Error> {
        #[allow(clippy::expect_used)]
        getrandom::fill(dest).expect("the operating system's RNG failed");
        Ok(())
    }
}

impl rand_core::TryCryptoRng for OsRng {}

pub mod addr;
pub mod admission;
pub mod board;
pub mod bridge;
#[cfg(feature = "embedded-broker")]
pub mod broker;
pub mod client;
pub mod gateway;
pub mod keys;
pub mod load;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod mqtt;
pub mod provision;
pub mod reload;
pub mod sensor;
pub mod store;
pub mod topics;
pub mod transport;

/// How a sensor's handshake travels (the `--mode` of the command lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// In CONNECT/AUTH: MQTT v5 enhanced authentication, with a broker
    /// running the KEM-MQTT plugin.
    Auth,
    /// As PUBLISH flights on kem-mqtt/hs/ID/…, answered by `kem-mqtt gateway`.
    Topic,
}

impl Mode {
    /// `auth` or `topic` (as the command lines write it).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auth => "auth",
            Mode::Topic => "topic",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Auth => "AUTH mode",
            Mode::Topic => "topic mode",
        })
    }
}

/// Errors of the host layers.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostError {
    /// Network or file I/O.
    Io(std::io::Error),
    /// The protocol core refused something.
    Protocol(kem_mqtt::Error),
    /// The broker refused the connection with this CONNACK reason code.
    Refused(u8),
    /// Key material.
    Keys(keys::KeyError),
    /// Nothing arrived in time.
    Timeout,
    /// A packet the state did not expect.
    Unexpected(String),
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Io(e) => write!(f, "i/o: {e}"),
            HostError::Protocol(e) => write!(f, "protocol: {e}"),
            HostError::Refused(r) => write!(f, "connection refused, reason code {r:#04x}"),
            HostError::Keys(e) => write!(f, "keys: {e}"),
            HostError::Timeout => f.write_str("timed out"),
            HostError::Unexpected(s) => write!(f, "unexpected: {s}"),
        }
    }
}

impl std::error::Error for HostError {}

impl From<std::io::Error> for HostError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => HostError::Timeout,
            _ => HostError::Io(e),
        }
    }
}
impl From<kem_mqtt::Error> for HostError {
    fn from(e: kem_mqtt::Error) -> Self {
        HostError::Protocol(e)
    }
}
impl From<keys::KeyError> for HostError {
    fn from(e: keys::KeyError) -> Self {
        HostError::Keys(e)
    }
}

pub use topics::{hs_b2c, hs_c2b};

/// Record topic, sensor → gateway, without a subtopic (`topics::sealed_c2b(id, "")`).
pub fn data_c2b(client_id: &str) -> String {
    topics::sealed_c2b(client_id, "")
}
/// Record topic, gateway → sensor, without a subtopic (`topics::sealed_b2c(id, "")`).
pub fn data_b2c(client_id: &str) -> String {
    topics::sealed_b2c(client_id, "")
}
