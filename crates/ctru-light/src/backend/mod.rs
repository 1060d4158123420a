//! The native-routine seam, and the one place that reads the backend key
//! (set by `asm_avr::assemble` in `build.rs`): `asm.rs` on AVR (the E8
//! decoder, the ciphertext compression, the base case and recombinations
//! of decryption's product), `portable.rs` elsewhere. Both have the same
//! functions with the same results; `encode`, `pke` and `mul256` call them
//! and see no cfg. The portable references the assembly is tested against
//! stay in those modules (`*_portable`, re-exported by the crate root for
//! the simulator tests).

#[cfg(avr_pqc_backend = "asm")]
mod asm;
#[cfg(avr_pqc_backend = "asm")]
pub(crate) use asm::{combine, compress_block, e8_decode_block, leaf_product};

#[cfg(avr_pqc_backend = "portable")]
mod portable;
#[cfg(avr_pqc_backend = "portable")]
pub(crate) use portable::{combine, compress_block, e8_decode_block, leaf_product};
