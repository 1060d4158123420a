//! The host's MQTT v5 codec: `read_packet` over an arbitrary byte stream
//! and `Packet::decode` on an arbitrary (first byte, body). Every decoded
//! packet must survive encode → decode unchanged.
#![no_main]
use kem_mqtt_host::mqtt::{read_packet, Packet};

fn round_trip(p: &Packet) {
    let bytes = p.encode();
    let again = read_packet(&mut &bytes[..]).expect("an encoded packet decodes");
    assert_eq!(&again, p);
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    if let Ok(p) = Packet::decode(first, body) {
        round_trip(&p);
    }
    let mut stream = data;
    for _ in 0..16 {
        match read_packet(&mut stream) {
            Ok(p) => round_trip(&p),
            Err(_) => break,
        }
    }
});
