#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
//! The wire contract between the host and the AVR firmware, one crate for
//! both sides: the firmware (`firmware/`, through `avr-harness`) serves it,
//! the xtask and `kem-mqtt-host` (`serial-bridge`) speak it.
//!
//! - [`frame`]: request `[op u8][len u16 le][payload]`, reply
//!   `[status u8][len u16 le][payload]`, the built-in ops;
//! - the op catalog of every image family: [`rings`] (modarith's NTT
//!   operations), [`kem`] (every KEM of `kem_registry`, feature `kems`),
//!   [`mqtt`] (the KEM-MQTT/1 sensor), [`primitives`] (Keccak, Ascon,
//!   X25519);
//! - [`app`]: the sensor application's own link to its bridge (the board
//!   speaks first; framed, tagged, checksummed), the commands it takes and
//!   what its readings say;
//! - `client` (feature `std`): the one host client, over any
//!   `client::Transport` (a serial port, a pseudo-terminal, the simulator).
//!
//! # Features
#![doc = document_features::document_features!()]

#[cfg(feature = "std")]
extern crate std;

pub mod app;
#[cfg(feature = "std")]
pub mod client;
pub mod frame;
#[cfg(feature = "kems")]
pub mod kem;
pub mod mqtt;
pub mod primitives;
pub mod rings;
