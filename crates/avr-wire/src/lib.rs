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
pub mod topics;
