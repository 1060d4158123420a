//! The KEM-MQTT/1 sensor half of the op catalog (cargo features
//! `mqtt-<kem>`, plus `mqtt-x25519` for the hybrid suites): the firmware
//! runs the *sensor* side of the handshake (`kem_mqtt::SensorHandshake`),
//! the host plays the broker.
//!
//! An image serves one KEM (the `mqtt-<kem>` feature), in its pure suite and,
//! with `mqtt-x25519`, its hybrid suite too; the suite id is in the request.
//! Layouts (lengths from [`Layout`] of the image's KEM; `u16` little-endian):
//!
//! - [`OP_START`] (`SensorHandshake::start`, measured): request
//!   `suite ‖ id_len ‖ client_id[64] ‖ kem_sk[sk] ‖ x25519_sk[32] ‖
//!   broker_kem_pk[pk] ‖ broker_x25519_pk[32] ‖ tape[256]` → reply
//!   `status ‖ used u16 ‖ len u16 ‖ ClientHello (padded to the largest)`;
//! - [`OP_FINISH`] (`receive_broker_hello_head`, measured): request
//!   `len u16 ‖ the BrokerHello's first part (header, nonce, the ciphertext
//!   to the ephemeral key; padded)` → reply `status`;
//! - [`OP_FINISH_REST`] (`receive_broker_hello_rest`, measured): request
//!   `len u16 ‖ the rest (padded)`, received into the used-up ephemeral
//!   key's storage → reply `status ‖ ClientFinished[34] ‖ record`, the record
//!   sealing [`PAYLOAD`] on [`TOPIC`] under the new session key (outside the
//!   measured window). The finish is the two windows together.
//!
//! The BrokerHello comes in two parts, and the ClientHello goes out around
//! the ephemeral public key where key generation left it (inside the
//! ephemeral secret key), so the sensor never holds a whole flight beside
//! that key: a 6 KB MCU has no room for both.
//!
//! With the `mqtt-provisioned` feature the key fields are compiled into the
//! image (in flash on the ATmega4808, so they cost no SRAM) and the request's
//! must equal them (status 8 otherwise).
//!
//! `status` is 0 on success, otherwise an [`error_name`] code. The X25519 keys
//! are ignored by pure suites. The tape is the randomness the host's own run
//! of the same handshake drew, so the ClientHello must match it byte for byte.

/// Op id of `SensorHandshake::start` (and its marker window).
pub const OP_START: u8 = 0x68;
/// Op id of the sensor's own start (images with provisioned keys: feature
/// `mqtt-provisioned`): request `suite ‖ host_nonce[32]`, reply as
/// [`OP_START`]'s. The keys are the image's, and the randomness is the
/// sensor's: [`TAPE_LABEL`]-KDF of its provisioned keys, a counter backed
/// by EEPROM (blocks of values reserved, written and read back before use,
/// so no two handshakes of a board share a value, power losses included)
/// and the host's nonce (which adds entropy but cannot repeat the counter).
/// The host needs no key: `kem-mqtt serial-bridge` carries the flights.
pub const OP_HELLO: u8 = 0x6A;
/// Bytes of the host's nonce in an [`OP_HELLO`] request.
pub const HOST_NONCE_LEN: usize = 32;
/// KDF label of the sensor's own randomness ([`OP_HELLO`]).
pub const TAPE_LABEL: &[u8] = b"kem-mqtt/1 sensor randomness";
/// EEPROM address of the handshake counter's reserved end (u32
/// little-endian; erased: nothing reserved yet).
pub const COUNTER_ADDR: u16 = 0;
/// Counter values reserved in EEPROM at a time: one EEPROM write per this
/// many handshakes (an EEPROM cell endures ~100,000 writes: a bridge that
/// asks for handshakes as fast as it can would otherwise wear the counter
/// out in about a day; now in about 64).
pub const COUNTER_BLOCK: u32 = 64;
/// Op id of `AwaitBrokerHello::receive_broker_hello_head`, the BrokerHello's
/// first part (and its marker window).
pub const OP_FINISH: u8 = 0x69;
/// Op id of `AwaitBrokerHello::receive_broker_hello_rest`, the rest of the
/// BrokerHello (and its marker window).
pub const OP_FINISH_REST: u8 = 0x6B;
/// The finish's ops, in order: the sensor's finish is their two windows.
pub const FINISH_OPS: [u8; 2] = [OP_FINISH, OP_FINISH_REST];
/// Randomness bytes a start request carries: nonce, KEM keygen, encaps,
/// X25519 (160 to 192 bytes in the measured handshakes; a KEM keygen retry
/// that needs more is reported by the host as a tape longer than this).
pub const TAPE_LEN: usize = 192;
/// Client-id field of a start request (the longest id KEM-MQTT/1 allows).
pub const MAX_ID_LEN: usize = kem_mqtt_wire::MAX_CLIENT_ID_LEN;
/// Length of an X25519 key.
pub const X25519_LEN: usize = 32;
/// Length of a ClientFinished.
pub const CF_LEN: usize = kem_mqtt_wire::CLIENT_FINISHED_LEN;
/// The topic of the record the sensor seals after the handshake: a sealed
/// sensor → broker record of client `avr-1`, subtopic `t`, in the
/// project's convention `kem-mqtt/data/c2b/<client id>[/<sub>]`
/// (`kem_mqtt_host::topics`). The topic is the record's associated data, so
/// the live run against a real broker (`cargo xtask mqtt --broker …`) needs
/// a sensor key file whose client id is `avr-1`, and refuses another.
pub const TOPIC: &[u8] = &TOPIC_BYTES;
const TOPIC_BYTES: [u8; crate::topics::DATA_C2B.len() + 7] = crate::topics::join(crate::topics::DATA_C2B, b"avr-1/t");
/// The plaintext of that record.
pub const PAYLOAD: &[u8] = b"21.5 C from the AVR sensor";
/// Length of that record: sequence number, ciphertext, tag.
pub const RECORD_LEN: usize = PAYLOAD.len() + kem_mqtt_wire::RECORD_OVERHEAD;

/// Names of the status codes the ops answer with.
pub const fn error_name(code: u8) -> &'static str {
    match code {
        0 => "ok",
        2 => "random tape exhausted",
        3 => "invalid key",
        4 => "suite not supported by this image",
        5 => "BrokerFinished does not verify",
        6 => "malformed message",
        7 => "no handshake in progress",
        8 => "the request's keys differ from the provisioned ones",
        9 => "the EEPROM handshake counter is exhausted or does not keep what is written",
        _ => "other error",
    }
}

/// Key and ciphertext sizes of the image's KEM, and the message layouts that follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Public-key bytes.
    pub pk: usize,
    /// Secret-key bytes.
    pub sk: usize,
    /// Ciphertext bytes.
    pub ct: usize,
}

impl Layout {
    /// The layout of `scheme`'s sizes.
    #[cfg(feature = "kems")]
    pub const fn of(scheme: kem_registry::Scheme) -> Layout {
        Layout {
            pk: scheme.pk_len(),
            sk: scheme.sk_len(),
            ct: scheme.ct_len(),
        }
    }
    /// The key fields of a start request (`id_len ‖ client_id[64] ‖ kem_sk ‖
    /// x25519_sk ‖ broker_kem_pk ‖ broker_x25519_pk`): the file an image
    /// with provisioned keys (feature `mqtt-provisioned`) is built with.
    pub const fn keys_len(self) -> usize {
        1 + MAX_ID_LEN + self.sk + X25519_LEN + self.pk + X25519_LEN
    }
    /// Request bytes of [`OP_START`].
    pub const fn start_request_len(self) -> usize {
        1 + self.keys_len() + TAPE_LEN
    }
    /// The hybrid ClientHello of a client id of `id_len` bytes.
    pub const fn client_hello(self, id_len: usize) -> usize {
        4 + id_len + 32 + self.pk + self.ct + X25519_LEN
    }
    /// The largest ClientHello (hybrid, 64-byte id).
    pub const fn max_client_hello(self) -> usize {
        self.client_hello(MAX_ID_LEN)
    }
    /// Request bytes of [`OP_HELLO`].
    pub const fn hello_request_len(self) -> usize {
        1 + HOST_NONCE_LEN
    }
    /// Reply bytes of [`OP_START`] (and [`OP_HELLO`]).
    pub const fn start_reply_len(self) -> usize {
        5 + self.max_client_hello()
    }
    /// The largest BrokerHello (hybrid).
    pub const fn max_broker_hello(self) -> usize {
        3 + 32 + 2 * self.ct + X25519_LEN + 32
    }
    /// The BrokerHello's first part: header, nonce, the ciphertext to the
    /// sensor's ephemeral key.
    pub const fn broker_hello_head(self) -> usize {
        3 + 32 + self.ct
    }
    /// The largest rest of a BrokerHello (hybrid).
    pub const fn max_broker_hello_rest(self) -> usize {
        self.max_broker_hello() - self.broker_hello_head()
    }
    /// Request bytes of [`OP_FINISH`].
    pub const fn finish_request_len(self) -> usize {
        2 + self.broker_hello_head()
    }
    /// Reply bytes of [`OP_FINISH`]: the status.
    pub const fn finish_reply_len(self) -> usize {
        1
    }
    /// Request bytes of [`OP_FINISH_REST`].
    pub const fn finish_rest_request_len(self) -> usize {
        2 + self.max_broker_hello_rest()
    }
    /// Reply bytes of [`OP_FINISH_REST`].
    pub const fn finish_rest_reply_len(self) -> usize {
        1 + CF_LEN + RECORD_LEN
    }
    /// The flight buffer the firmware keeps for a client id of `id_len`
    /// bytes: the ClientHello goes out of it without the ephemeral public
    /// key (sent from the ephemeral key), then the BrokerHello's first part
    /// comes into it. (An image with provisioned keys knows its id's
    /// length; the start reply pads the ClientHello to
    /// [`Self::max_client_hello`].)
    pub const fn flight_len(self, id_len: usize) -> usize {
        let (a, b) = (self.client_hello(id_len) - self.pk, self.broker_hello_head());
        if a > b {
            a
        } else {
            b
        }
    }
}

#[cfg(all(test, feature = "kems"))]
mod tests {
    use super::*;

    #[test]
    fn ids_are_free_and_lengths_fit_the_protocol() {
        for (k, o) in crate::kem::kem_ops() {
            let id = crate::kem::kem_op_id(k, o);
            assert!(![OP_START, OP_FINISH, OP_FINISH_REST, OP_HELLO].contains(&id));
        }
        for (r, k) in crate::rings::ops() {
            let id = crate::rings::op_id(r, k);
            assert!(![OP_START, OP_FINISH, OP_FINISH_REST, OP_HELLO].contains(&id));
        }
        const { assert!(OP_FINISH_REST < crate::frame::OP_EXIT) };
        let ml = Layout::of(kem_registry::Scheme::MlKem512);
        assert_eq!(ml.max_client_hello(), 1636 + 64);
        assert_eq!(ml.max_broker_hello(), 1635);
        assert_eq!((ml.broker_hello_head(), ml.max_broker_hello_rest()), (803, 832));
        // The rest fits the ephemeral key's storage, which receives it.
        assert!(ml.max_broker_hello_rest() <= ml.sk);
        assert_eq!(ml.flight_len(5), 841);
        assert!(ml.start_request_len() < u16::MAX as usize);
    }
}
