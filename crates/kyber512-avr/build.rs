//! Refuses an AVR with too little SRAM for any operation
//! (`avr-sram-floor.txt`), and sets `cfg(kyber_small_sram)` for MCUs with 8 KB of SRAM or less (the
//! ATmega4808 family and the ATmega2560): decapsulation's re-encryption then samples the noise
//! r_j again for each product that needs it (`kpke::Noise::Resample`, as
//! encapsulation does) instead of keeping it packed (256 B more stack): the
//! KEM-MQTT sensor's finish needs that room beside its static buffers.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(kyber_small_sram)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if avr_asm_build::small_sram_mcu() {
        println!("cargo::rustc-cfg=kyber_small_sram");
    }
    // An MCU with less SRAM than the lightest operation needs: a clear error.
    avr_asm_build::require_sram();
}
