//! Picks the peripheral layout from `-C target-cpu=…` (classic megaAVR by
//! default; `avr_mega0` for the megaAVR-0 series such as the ATmega4808),
//! and `avr_elpm` for parts with more than 64 KB of flash.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(avr_mega0)");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let cpu = avr_asm_build::target_cpu().unwrap_or_default();
    let cpu = cpu.as_str();
    if avr_mcu::by_name(cpu).is_some_and(|m| m.family == avr_mcu::Family::Mega0) {
        println!("cargo:rustc-cfg=avr_mega0");
    }
    // More than 64 KB of flash: program memory is read with `elpm` and RAMPZ.
    println!("cargo::rustc-check-cfg=cfg(avr_elpm)");
    if avr_mcu::by_name(cpu).is_some_and(|m| m.flash > 0x10000) {
        println!("cargo:rustc-cfg=avr_elpm");
    }
}
