#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

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
/// The KEM-MQTT/1 topic layout (`kem_mqtt_wire::topics`, which is also
/// `kem_mqtt::wire::topics`).
pub use kem_mqtt_wire::topics;
