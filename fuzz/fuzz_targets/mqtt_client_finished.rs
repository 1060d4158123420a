//! KEM-MQTT broker, flight 3: `AwaitClientFinished::receive_client_finished`
//! on arbitrary bytes and on the honest ClientFinished with edits.
//! Invariant: only the honest ClientFinished is accepted.
#![no_main]
use kem_fuzz::{fixture, honest_flights, mutate, pick_suite, FuzzRng};
use kem_mqtt::{BrokerHandshake, MAX_BROKER_HELLO_LEN};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let suite = pick_suite(sel & 0x7F);
    let (broker, _) = fixture(suite);
    let (ch, _, cf) = honest_flights(suite);
    let msg = if sel & 0x80 == 0 {
        rest.to_vec()
    } else {
        mutate(cf, rest)
    };
    let mut out = [0u8; MAX_BROKER_HELLO_LEN];
    let (state, _) = BrokerHandshake::accept(broker, ch, &mut FuzzRng::new(2), &mut out).unwrap();
    if state.receive_client_finished(&msg).is_ok() {
        assert_eq!(&msg, cf, "a modified ClientFinished was accepted");
    }
});
