//! The NTT's native-routine seam, and the one place that reads the backend
//! key (set by `asm_avr::assemble` in `build.rs`): `asm.rs` on AVR,
//! `portable.rs` elsewhere (and with the `portable` feature). Both have the
//! same functions; each returns whether it did the work (`false` / `None`:
//! no routine for this ring, the caller runs the portable NTT of `ntt.rs`,
//! which defines the results). `ntt.rs` calls them and sees no cfg.

#[cfg(avr_pqc_backend = "asm")]
mod asm;
#[cfg(avr_pqc_backend = "asm")]
pub(crate) use asm::{base_inv, base_mul, forward, forward_small, inverse};

#[cfg(avr_pqc_backend = "portable")]
mod portable;
#[cfg(avr_pqc_backend = "portable")]
pub(crate) use portable::{base_inv, base_mul, forward, forward_small, inverse};
