//! The one place that reads the backend key (set by `asm_avr::assemble` in
//! `build.rs`): `asm.rs` on AVR, `portable.rs` elsewhere, both with the
//! same functions. The crate above calls `backend::…` and sees no cfg.

#[cfg(avr_pqc_backend = "asm")]
mod asm;
#[cfg(avr_pqc_backend = "asm")]
pub(crate) use asm::permute;

#[cfg(avr_pqc_backend = "portable")]
mod portable;
#[cfg(avr_pqc_backend = "portable")]
pub(crate) use portable::permute;
