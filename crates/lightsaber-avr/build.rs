//! Refuses an AVR with too little SRAM for any operation
//! (`avr-sram-floor.txt`), and sets `cfg(saber_small_sram)` for MCUs with 8 KB of SRAM or less (the
//! ATmega4808 family and the ATmega2560): key generation then keeps one accumulator and reads
//! the matrix stream again per output polynomial (`pke::keygen`), instead
//! of one accumulator per output polynomial (1 KB more stack), and
//! encryption transforms its secret again for each product instead of once
//! (`pke::encrypt`, 1.5 KB more stack). Those MCUs are held to the floor
//! file's `small` line, measured on the ATmega4808.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(saber_small_sram)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if avr_asm_build::small_sram_mcu() {
        println!("cargo::rustc-cfg=saber_small_sram");
    }
    // An MCU with less SRAM than the lightest operation needs: a clear error.
    avr_asm_build::require_sram();
}
