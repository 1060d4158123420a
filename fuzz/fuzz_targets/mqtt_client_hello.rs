//! KEM-MQTT broker, flight 1: `BrokerHandshake::accept` on arbitrary bytes
//! and on honest ClientHellos with fuzz-chosen edits (every suite).
#![no_main]
use kem_fuzz::{fixture, honest_flights, mutate, pick_suite, FuzzRng};
use kem_mqtt::{BrokerHandshake, MAX_BROKER_HELLO_LEN};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let suite = pick_suite(sel & 0x7F);
    let (broker, _) = fixture(suite);
    let msg = if sel & 0x80 == 0 {
        rest.to_vec()
    } else {
        mutate(&honest_flights(suite).0, rest)
    };
    let mut out = [0u8; MAX_BROKER_HELLO_LEN];
    if let Ok((state, n)) = BrokerHandshake::accept(broker, &msg, &mut FuzzRng::new(2), &mut out) {
        assert_eq!(state.suite(), suite);
        assert_eq!(n, suite.broker_hello_len());
        assert_eq!(state.client_id(), b"sensor-1");
    }
});
