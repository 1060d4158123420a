//! The KEM-MQTT/1 sensor application for AVR boards, as the avr-pqc
//! project runs and measures it: after reset the board shakes hands with
//! the broker (a post-quantum KEM, and X25519 beside it in a hybrid suite)
//! through `kem-mqtt serial-bridge` on its USART, seals an ADC reading on
//! `kem-mqtt/data/c2b/<id>/reading` on a schedule, opens and answers the
//! commands that come back, re-keys by policy, and sleeps between readings
//! with the watchdog armed.
//!
//! ```toml
//! [dependencies]
//! # The suite: exactly one KEM feature on kem-mqtt…
//! kem-mqtt = { version = "0.1", default-features = false, features = ["ctru-light-ascon"] }
//! # …and `x25519` here for its hybrid suite.
//! kem-mqtt-sensor = { version = "0.1", features = ["x25519"] }
//! ```
//!
//! ```ignore
//! #![no_std]
//! #![no_main]
//!
//! #[no_mangle]
//! extern "C" fn main() -> ! {
//!     kem_mqtt_sensor::run()
//! }
//!
//! #[panic_handler]
//! fn panic(_: &core::panic::PanicInfo) -> ! {
//!     kem_mqtt_sensor::halt()
//! }
//! ```
//!
//! The part is the build's `-C target-cpu` (an ATmega1284p, ATmega2560,
//! ATmega4808/4809 …); its keys come from the key file `kem-mqtt provision`
//! wrote, named by `KEM_MQTT_SENSOR_KEY` when building (`build.rs`), and
//! the build stops if that file is for another suite. On a classic part
//! with 8 KB of SRAM or less (the ATmega2560) turn on `keys-in-flash`: the
//! KEMs then read the keys from program memory instead of a copy in SRAM.
//!
//! Only the AVR build has code; elsewhere the crate is empty.
//!
//! ## Features
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]
#![no_std]
// `asm!` for the flash address of the provisioned keys (`steps`) and the
// part's symbol (`build.rs`); AVR builds need a nightly compiler anyway.
#![cfg_attr(target_arch = "avr", feature(asm_experimental_arch))]

#[cfg(all(target_arch = "avr", feature = "app"))]
mod app;
#[cfg(all(target_arch = "avr", feature = "provisioned"))]
mod keys;
#[cfg(target_arch = "avr")]
pub mod steps;

#[cfg(all(target_arch = "avr", feature = "app"))]
pub use app::run;

// The part this image is for, as an absolute symbol a runner reads.
#[cfg(target_arch = "avr")]
include!(concat!(env!("OUT_DIR"), "/sensor_mcu.rs"));

/// Stops the board for good, telling a simulator through the marker
/// register (window 0x7F): what a panic handler of the application calls.
#[cfg(target_arch = "avr")]
pub fn halt() -> ! {
    avr_harness::marker_begin(0x7F);
    avr_harness::exit()
}
