//! The field's native-routine seam, and the one place that reads the
//! backend key (set by `asm_avr::assemble` in `build.rs`): `asm.rs` on AVR
//! (`fe25519_mul.S`, or `fe25519_compact.S` on small MCUs, and
//! `ed25519_select.S`), `portable.rs` elsewhere. Both have the same
//! functions with the same bytes out; the field, the ladder and the
//! Edwards code call them and see no cfg.

#[cfg(avr_pqc_backend = "asm")]
mod asm;
#[cfg(all(avr_pqc_backend = "asm", not(fe25519_compact)))]
pub(crate) use asm::select_niels;
#[cfg(avr_pqc_backend = "asm")]
pub(crate) use asm::{add, invert, ladder_step, mul, mul_small, square, sub};

// Compiled on every target: besides being the host's backend, it keeps
// the portable references (`field::*_portable`, `ladder_step_portable`,
// `edwards::select_niels_portable`) in use. An AVR image never calls them
// (only the host's simulator tests compare against them), so there the
// module may be dead, and they raise no dead-code warning through it.
#[cfg_attr(avr_pqc_backend = "asm", allow(dead_code))]
mod portable;
#[cfg(all(avr_pqc_backend = "portable", not(fe25519_compact)))]
pub(crate) use portable::select_niels;
#[cfg(avr_pqc_backend = "portable")]
pub(crate) use portable::{add, invert, ladder_step, mul, mul_small, square, sub};
