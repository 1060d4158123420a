//! A KEM-MQTT/1 sensor: after reset the board shakes hands with the broker
//! through `kem-mqtt serial-bridge` on its USART (the link of
//! `avr_wire::app`), then seals an ADC reading on a schedule on
//! `kem-mqtt/data/c2b/<id>/reading`, acts on the commands applications send
//! (`cmd/<id>/led` …), re-keys by policy and sleeps between readings with
//! the watchdog armed. Applications read the plaintext on
//! `plain/<id>/reading`.
//!
//! All of it is `kem_mqtt_sensor::run`: the same code, and so the same
//! memory and cycles, as the application in the project's board table.
#![no_std]
#![no_main]

#[no_mangle]
extern "C" fn main() -> ! {
    kem_mqtt_sensor::run()
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    kem_mqtt_sensor::halt()
}
