//! The provisioned key fields, assembled at compile time from the key file
//! `build.rs` turned into constants, in the layout of
//! [`avr_wire::mqtt::Layout::keys_len`]: `id_len ‖ client_id[MAX_ID_LEN] ‖
//! kem_sk ‖ x25519_sk ‖ broker_kem_pk ‖ broker_x25519_pk` (the bytes a
//! measuring firmware's start request carries, compared byte for byte).

use avr_wire::mqtt::{MAX_ID_LEN, X25519_LEN};

use crate::steps::{KEM, L, SUITE};

include!(concat!(env!("OUT_DIR"), "/sensor_key.rs"));

/// The key fields; a key file of another suite, or with fields of the
/// wrong lengths, stops the build here.
pub(crate) const fn provisioned() -> [u8; L.keys_len()] {
    // The application runs its one suite; the measuring firmware (without
    // `app`) takes the suite per request, either of its KEM's.
    let key_suite = kem_mqtt::Suite::from_name(KEY_SUITE);
    assert!(
        matches!(key_suite, Some(s) if s.id() == SUITE.id() || (!cfg!(feature = "app") && s.kem() as u8 == KEM as u8)),
        "the key file (KEM_MQTT_SENSOR_KEY) is for another suite than this build: the KEM is kem-mqtt's one \
         KEM feature, the hybrid suite kem-mqtt-sensor's feature `x25519`"
    );
    assert!(
        KEY_CLIENT_ID.len() <= MAX_ID_LEN,
        "the key file's client id is too long"
    );
    assert!(
        KEY_KEM_SK.len() == L.sk && KEY_BROKER_KEM_PK.len() == L.pk,
        "the key file's KEM keys have the wrong length"
    );
    assert!(
        KEY_X25519_SK.len() == X25519_LEN && KEY_BROKER_X25519_PK.len() == X25519_LEN,
        "the key file's X25519 keys have the wrong length"
    );
    let mut out = [0u8; L.keys_len()];
    out[0] = KEY_CLIENT_ID.len() as u8;
    copy(&mut out, 1, KEY_CLIENT_ID);
    let at = 1 + MAX_ID_LEN;
    copy(&mut out, at, KEY_KEM_SK);
    let at = at + L.sk;
    copy(&mut out, at, KEY_X25519_SK);
    let at = at + X25519_LEN;
    copy(&mut out, at, KEY_BROKER_KEM_PK);
    copy(&mut out, at + L.pk, KEY_BROKER_X25519_PK);
    out
}

const fn copy(out: &mut [u8; L.keys_len()], at: usize, field: &[u8]) {
    let mut i = 0;
    while i < field.len() {
        out[at + i] = field[i];
        i += 1;
    }
}
