//! Benchmark, differential-test and KAT firmware: serves the operations of the
//! catalog (`avr_wire`: `rings`, `kem`, `mqtt`, `primitives`) that its cargo
//! features select over UART0 with the `avr-harness` protocol.
//!
//! - `rings` (default): the 25 modarith NTT operations;
//! - `kyber` (`ml-kem-512`, `kyber512-r3`), `ml-kem-large` (`ml-kem-768`,
//!   `ml-kem-1024`), `lightsaber`, `ctru-light-sha3`, `ctru-light-ascon`
//!   (narrowed by `ctru-kred2x` / `ctru-montopt` / `ctru-mont`): keygen,
//!   encaps and decaps of each KEM, randomness from a host-sent tape, keys
//!   and ciphertexts in one shared static arena.
//!
//! - `sensor-app` (with one `mqtt-<kem>`, `mqtt-provisioned`, optionally
//!   `mqtt-x25519`): no ops at all, but the sensor application: handshakes,
//!   readings on a schedule, commands, re-keying, sleep (`kem_mqtt_sensor::run`).
//!
//! Build it with `cargo xtask build-avr [--mcu M] [--group G]`; on the host
//! this binary only explains that.

#![cfg_attr(target_arch = "avr", no_std, no_main)]

#[cfg(not(target_arch = "avr"))]
fn main() {
    eprintln!(
        "this is AVR firmware: build it with `cargo xtask build-avr`, run it with `cargo xtask sim-test`/`bench`"
    );
}

#[cfg(target_arch = "avr")]
mod device;
