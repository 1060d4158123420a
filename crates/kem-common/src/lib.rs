#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

mod buffer_kem;
mod byte_types;
#[cfg(feature = "serde")]
pub mod hex_serde;
mod key_bytes;
mod pack;
mod rng;
mod secret;
mod sink;
mod tape;
#[cfg(feature = "test-rng")]
pub mod test_memory;
mod wipe;

pub use kem;
pub use rand_core;

pub use buffer_kem::BufferKem;
pub use key_bytes::{bytes_at, unpack_bits_in, KeyBytes, KeySource};
pub use pack::{nibble, pack_bits, pack_bits_with, set_nibble, unpack_bits, unpack_nibbles};
#[cfg(feature = "test-rng")]
pub use rng::test_rng;
pub use rng::{fill, with_rng, ErrorCapture, RngError};
pub use secret::{bytes_equal, is_zero, select_bytes, SharedKeyArray, SharedSecret};
pub use sink::CiphertextSink;
pub use tape::{Tape, TapeExhausted};
pub use wipe::{keygen_or_wipe, secret_keygen_or_wipe, wipe_bytes, wipe_i16, Wipe};
