//! The firmware on the AVR: the op server (the op table of the groups its
//! cargo features select), or the sensor application (`sensor-app`:
//! `kem_mqtt_sensor::run`, the library a user's sensor is built on).

#[cfg(kem)]
mod kems;
#[cfg(all(mqtt, not(feature = "sensor-app")))]
mod mqtt;
#[cfg(feature = "primitives")]
mod primitives;
#[cfg(feature = "rings")]
mod rings;

/// The op server: every image but the sensor application's.
#[cfg(not(feature = "sensor-app"))]
mod server {
    #[cfg(any(feature = "rings", feature = "primitives", kem, mqtt))]
    use avr_harness::Op;
    use avr_harness::Uart;

    #[cfg(kem)]
    use super::kems;
    #[cfg(mqtt)]
    use super::mqtt;
    #[cfg(feature = "primitives")]
    use super::primitives;
    #[cfg(feature = "rings")]
    use super::rings;

    /// Every op group this image serves.
    const GROUPS: &[&[Op<Uart>]] = &[
        #[cfg(feature = "rings")]
        &rings::ctru769::OPS,
        #[cfg(feature = "rings")]
        &rings::ctru3329::OPS,
        #[cfg(feature = "rings")]
        &rings::kyber::OPS,
        #[cfg(feature = "rings")]
        &rings::saber3329::OPS,
        #[cfg(feature = "rings")]
        &rings::saber7681::OPS,
        #[cfg(kem)]
        &kems::OPS,
        #[cfg(mqtt)]
        &mqtt::OPS,
        #[cfg(feature = "primitives")]
        &primitives::OPS,
    ];

    static OPS: [Op<Uart>; avr_harness::ops_count(GROUPS)] = avr_harness::ops_table(GROUPS);

    /// Serves the ops for good.
    pub fn run() -> ! {
        let mut uart = Uart::init();
        avr_harness::serve(&mut uart, &OPS)
    }
}

#[no_mangle]
extern "C" fn main() -> ! {
    #[cfg(feature = "sensor-app")]
    kem_mqtt_sensor::run();
    #[cfg(not(feature = "sensor-app"))]
    server::run()
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Tell the host through the marker register, then stop.
    avr_harness::marker_begin(0x7F);
    avr_harness::exit()
}
