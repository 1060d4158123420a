//! KEM-MQTT sensor, flight 2: `AwaitBrokerHello::receive_broker_hello` on
//! arbitrary bytes and on the honest BrokerHello with fuzz-chosen edits.
//! Invariant: only the honest BrokerHello is accepted (BrokerFinished
//! authenticates every byte).
#![no_main]
use kem_fuzz::{fixture, honest_flights, mutate, pick_suite, FuzzRng};
use kem_mqtt::{SensorHandshake, MAX_CLIENT_HELLO_LEN};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let suite = pick_suite(sel & 0x7F);
    let (broker, sensor) = fixture(suite);
    let honest = &honest_flights(suite).1;
    let msg = if sel & 0x80 == 0 {
        rest.to_vec()
    } else {
        mutate(honest, rest)
    };
    let mut buf = [0u8; MAX_CLIENT_HELLO_LEN];
    // Same seed as `honest_flights`, so the honest BrokerHello answers this state.
    let (state, _) = SensorHandshake::start(suite, sensor.credentials(broker), &mut FuzzRng::new(1), &mut buf).unwrap();
    if let Ok((_session, n)) = state.receive_broker_hello(&msg, &mut buf) {
        assert_eq!(&msg, honest, "a modified BrokerHello was accepted");
        assert_eq!(n, suite.client_finished_len());
    }
});
