#![no_std]
#![cfg_attr(target_arch = "avr", feature(asm_experimental_arch))]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::integer_division_remainder_used)]
#![doc = include_str!("../README.md")]
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

#[cfg(target_arch = "avr")]
mod avr_barrier;
mod backend;
mod consts;
pub mod crt;
pub mod modulus;
pub mod ntt;
pub mod reduce;
pub mod rings;
mod twiddles;

pub use crt::{crt_lift, crt_lift_centred};
pub use modulus::{negative_mask_i16, negative_mask_i32, opaque_i16, opaque_i32, Modulus, Q3329, Q7681, Q769};
pub use ntt::Ntt;
pub use reduce::{Barrett, KRed, KRed2x, Montgomery, NttFriendlyBarrett, NttFriendlyMontgomery, Reduction};
