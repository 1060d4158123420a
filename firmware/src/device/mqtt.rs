//! The KEM-MQTT/1 sensor's steps as harness ops (`start`, `finish`), the
//! host playing the broker and measuring each step.

use core::hint::black_box;
use core::ptr::addr_of_mut;

use avr_harness::{measure, Io, Op, Status, Uart};
use avr_wire::mqtt::{CF_LEN, OP_FINISH, OP_FINISH_REST, OP_START, PAYLOAD, RECORD_LEN, TAPE_LEN, TOPIC};
#[cfg(not(feature = "mqtt-provisioned"))]
use avr_wire::mqtt::{MAX_ID_LEN, X25519_LEN};
use kem_common::Tape;
#[cfg(not(feature = "mqtt-provisioned"))]
use kem_mqtt::KeyBytes;
use kem_mqtt::{Error, Session, Suite};

use kem_mqtt_sensor::steps::*;

// The sensor's long-term keys and the broker's public keys: the
// handshake state borrows them from `start` until `finish`.
#[cfg(not(feature = "mqtt-provisioned"))]
static mut CLIENT_ID: [u8; MAX_ID_LEN] = [0; MAX_ID_LEN];
#[cfg(not(feature = "mqtt-provisioned"))]
static mut KEM_SK: [u8; L.sk] = [0; L.sk];
#[cfg(not(feature = "mqtt-provisioned"))]
static mut X_SK: [u8; X25519_LEN] = [0; X25519_LEN];
#[cfg(not(feature = "mqtt-provisioned"))]
static mut BROKER_PK: [u8; L.pk] = [0; L.pk];
#[cfg(not(feature = "mqtt-provisioned"))]
static mut BROKER_X_PK: [u8; X25519_LEN] = [0; X25519_LEN];
/// The session the finish writes (as the application's: a static, not
/// beneath the decapsulation), sealing the reply's record.
static mut SESSION: Option<Session> = None;
// `finish_rest` puts the ClientFinished and the record into the dead tape.
const _: () = assert!(CF_LEN + RECORD_LEN <= TAPE_LEN);

/// The status code of an error (`avr_wire::mqtt::error_name`).
pub(super) fn code(e: Error) -> u8 {
    match e {
        Error::Rng => 2,
        Error::InvalidKey | Error::InvalidEphemeralKey | Error::X25519NonContributory => 3,
        Error::SuiteNotSupported(_) | Error::UnknownSuite(_) => 4,
        Error::BrokerFinishedInvalid => 5,
        Error::Truncated { .. }
        | Error::Oversized { .. }
        | Error::UnexpectedMessage { .. }
        | Error::UnsupportedVersion(_)
        | Error::SuiteMismatch { .. }
        | Error::InvalidClientId => 6,
        _ => 1,
    }
}

/// Reads the key fields of the request into the key statics.
#[cfg(not(feature = "mqtt-provisioned"))]
fn read_keys(io: &mut Uart) -> Option<Keys> {
    // SAFETY: distinct statics; the handshake state that borrowed
    // them was dropped by the caller.
    let (id, sk, x_sk, pk, x_pk) = unsafe {
        (
            &mut *addr_of_mut!(CLIENT_ID),
            &mut *addr_of_mut!(KEM_SK),
            &mut *addr_of_mut!(X_SK),
            &mut *addr_of_mut!(BROKER_PK),
            &mut *addr_of_mut!(BROKER_X_PK),
        )
    };
    let id_len = (io.read_byte() as usize).min(MAX_ID_LEN);
    io.read_bytes(id);
    io.read_bytes(sk);
    io.read_bytes(x_sk);
    io.read_bytes(pk);
    io.read_bytes(x_pk);
    let id: &'static [u8; MAX_ID_LEN] = id;
    Some(Keys {
        id: &id[..id_len],
        sk: key_bytes(sk, read_kem_sk),
        x_sk,
        pk: key_bytes(pk, read_broker_pk),
        x_pk,
    })
}

/// A received key as the KEM reads it: a slice, or with
/// `mqtt-keys-in-flash` behind `read`, so that the harness measures and
/// checks (`cargo xtask mqtt --seeds`) the KEMs' reader path with keys
/// that change per request, where the sensor application reads flash.
#[cfg(not(feature = "mqtt-provisioned"))]
fn key_bytes(key: &'static [u8], read: fn(usize, &mut [u8])) -> KeyBytes<'static> {
    #[cfg(feature = "mqtt-keys-in-flash")]
    return KeyBytes::Reader {
        offset: 0,
        len: key.len(),
        read,
    };
    #[cfg(not(feature = "mqtt-keys-in-flash"))]
    {
        let _ = read;
        KeyBytes::Slice(key)
    }
}

/// Copies `KEM_SK` from `at` on (the harness's reader of the received key).
#[cfg(not(feature = "mqtt-provisioned"))]
fn read_kem_sk(at: usize, out: &mut [u8]) {
    // SAFETY: single-threaded; read while no `read_keys` writes it.
    copy_from(unsafe { &*core::ptr::addr_of!(KEM_SK) }, at, out);
}

/// Copies `BROKER_PK` from `at` on.
#[cfg(not(feature = "mqtt-provisioned"))]
fn read_broker_pk(at: usize, out: &mut [u8]) {
    // SAFETY: as in read_kem_sk.
    copy_from(unsafe { &*core::ptr::addr_of!(BROKER_PK) }, at, out);
}

#[cfg(not(feature = "mqtt-provisioned"))]
fn copy_from(key: &[u8], at: usize, out: &mut [u8]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = key.get(at + i).copied().unwrap_or(0);
    }
}

/// Reads the key fields of the request and checks them against the
/// provisioned ones (`None` if they differ: the host and the image
/// disagree on the keys).
#[cfg(feature = "mqtt-provisioned")]
fn read_keys(io: &mut Uart) -> Option<Keys> {
    let mut differ = 0u8;
    let mut b = [0u8; 1];
    for at in 0..L.keys_len() {
        read_provisioned(at, &mut b);
        differ |= io.read_byte() ^ b[0];
    }
    if differ != 0 {
        return None;
    }
    // SAFETY: single-threaded; `start` dropped the previous state, which
    // held the previous keys' credentials.
    unsafe { provisioned_keys() }
}

fn start(io: &mut Uart) {
    // SAFETY: single-threaded; the previous handshake state, which
    // borrows the key statics, is dropped before they are rewritten.
    unsafe { clear_state() };
    // SAFETY: nothing else borrows it now.
    let tape = unsafe { &mut *addr_of_mut!(TAPE) };
    let suite_id = io.read_byte();
    let keys = read_keys(io);
    io.read_bytes(tape);
    match keys {
        Some(keys) => begin(io, OP_START, suite_id, keys),
        None => refuse_start(io, 8),
    }
}

/// A start reply without a ClientHello: status `code`.
fn refuse_start(io: &mut Uart, code: u8) {
    io.reply(Status::Ok, L.start_reply_len() as u16);
    io.write_byte(code);
    io.write_u16(0);
    io.write_u16(0);
    write_padded(io, &[]);
}

/// The sensor's own start ([`avr_wire::mqtt::OP_HELLO`]): the provisioned
/// keys, and randomness from its keys, its EEPROM counter and the host's
/// nonce.
#[cfg(feature = "mqtt-provisioned")]
fn hello(io: &mut Uart) {
    use avr_wire::mqtt::HOST_NONCE_LEN;
    // SAFETY: single-threaded; the previous handshake state is dropped first.
    unsafe { clear_state() };
    let suite_id = io.read_byte();
    let mut nonce = [0u8; HOST_NONCE_LEN];
    io.read_bytes(&mut nonce);
    // SAFETY: single-threaded; the previous state, which held the previous
    // keys' credentials, was dropped above.
    let (Ok(suite), Some(keys)) = (Suite::from_id(suite_id), unsafe { provisioned_keys() }) else {
        return refuse_start(io, 4);
    };
    let Some(counter) = next_counter() else {
        return refuse_start(io, 9);
    };
    // SAFETY: single-threaded; no borrow of the tape is live (the state is gone).
    unsafe { derive_tape(suite, counter, &nonce) };
    begin(io, avr_wire::mqtt::OP_HELLO, suite_id, keys);
}

/// Runs the measured start (window `window`) of suite `suite_id` with
/// `keys` and the randomness in [`TAPE`], and replies.
fn begin(io: &mut Uart, window: u8, suite_id: u8, keys: Keys) {
    // SAFETY: single-threaded; the handshake state that held the previous
    // credentials was dropped by the caller.
    let creds = unsafe { credentials(suite_id, keys) };
    // SAFETY: single-threaded; the handshake state that borrowed these was
    // dropped by the caller, and each is borrowed once here.
    let (slot, ephemeral, tape, flight) = unsafe { start_buffers() };
    let mut rng = Tape::new(tape.as_slice());
    let r = match Suite::from_id(suite_id) {
        Ok(suite) => measure(window, || {
            k_start(
                black_box(suite),
                black_box(creds),
                black_box(&mut rng),
                black_box(&mut *flight),
                ephemeral,
                black_box(&mut *slot),
            )
        }),
        Err(e) => Err(e),
    };
    // The ClientHello: the first piece, the ephemeral public key from the
    // ephemeral key (through the state that holds it), the second piece.
    let pk: &[u8] = match (&r, slot.as_ref()) {
        (Ok(_), Some(state)) => state.ephemeral_public_key(),
        _ => &[],
    };
    let (status, head, len) = match r {
        Ok((head, len)) => (0, head, len),
        Err(e) => (code(e), 0, 0),
    };
    let pieces = [
        flight.get(..head).unwrap_or(&[]),
        pk,
        flight.get(head..len).unwrap_or(&[]),
    ];
    let n: usize = pieces.iter().map(|p| p.len()).sum();
    io.reply(Status::Ok, L.start_reply_len() as u16);
    io.write_byte(status);
    io.write_u16(rng.used() as u16);
    io.write_u16(n as u16);
    write_padded(io, &pieces);
}

/// A ClientHello (in pieces), zero-padded to the largest the reply holds.
fn write_padded(io: &mut Uart, pieces: &[&[u8]]) {
    let mut n = 0;
    for p in pieces {
        io.write_bytes(p);
        n += p.len();
    }
    for _ in n..L.max_client_hello() {
        io.write_byte(0);
    }
}

/// The new session key at work: one record to the broker. Not
/// inlined, so the record layer's working state is not part of the
/// frame that holds the handshake's (the sensor's peak, under decaps).
#[inline(never)]
fn seal_record(session: &mut Session, record: &mut [u8; RECORD_LEN]) -> u8 {
    match session.seal(TOPIC, PAYLOAD, record) {
        Ok(_) => 0,
        Err(e) => code(e),
    }
}

/// The BrokerHello's first part: into the flight buffer, then the first
/// decapsulation ([`OP_FINISH`]'s window).
fn finish(io: &mut Uart) {
    // SAFETY: single-threaded; one borrow of each static.
    let (slot, flight) = unsafe { (&mut *addr_of_mut!(STATE), &mut *addr_of_mut!(FLIGHT_BUF)) };
    let len = (io.read_u16() as usize).min(L.broker_hello_head());
    let part = &mut flight[..L.broker_hello_head()];
    io.read_bytes(part);
    let status = if slot.is_none() {
        7
    } else {
        match measure(OP_FINISH, || k_finish(black_box(&mut *slot), black_box(&part[..len]))) {
            Ok(()) => 0,
            Err(e) => code(e),
        }
    };
    io.reply(Status::Ok, L.finish_reply_len() as u16);
    io.write_byte(status);
}

/// The rest of the BrokerHello: into the used-up ephemeral key's storage,
/// then the second decapsulation and the key schedule
/// ([`OP_FINISH_REST`]'s window), and a record under the new key.
fn finish_rest(io: &mut Uart) {
    // SAFETY: single-threaded; one borrow of each static.
    let (slot, scratch) = unsafe { (&mut *addr_of_mut!(STATE), &mut *addr_of_mut!(TAPE)) };
    let len = io.read_u16() as usize;
    // No state, or no first part yet: an empty buffer, and the request's
    // bytes are read and dropped.
    let buf: &mut [u8] = match slot.as_mut() {
        Some(state) => state.rest_buffer(),
        None => &mut [],
    };
    let kept = buf.len().min(L.max_broker_hello_rest());
    io.read_bytes(&mut buf[..kept]);
    for _ in kept..L.max_broker_hello_rest() {
        io.read_byte();
    }
    scratch.fill(0);
    let Some((cf, rest)) = scratch.split_first_chunk_mut::<CF_LEN>() else {
        return;
    };
    let Some(record) = rest.first_chunk_mut::<RECORD_LEN>() else {
        return;
    };
    let status = if kept == 0 {
        clear(slot);
        7
    } else {
        // SAFETY: single-threaded; the only borrow of the session.
        let session = unsafe { &mut *addr_of_mut!(SESSION) };
        match measure(OP_FINISH_REST, || {
            k_finish_rest(black_box(&mut *slot), black_box(len), black_box(&mut *cf), session)
        }) {
            Ok(()) => match session.as_mut() {
                Some(s) => seal_record(s, record),
                None => code(Error::InvalidKey),
            },
            Err(e) => code(e),
        }
    };
    io.reply(Status::Ok, L.finish_rest_reply_len() as u16);
    io.write_byte(status);
    io.write_bytes(&cf[..]);
    io.write_bytes(&record[..]);
}

/// The sensor's steps: the host-driven start (keys and randomness in the
/// request), the sensor's own start (provisioned images), the finish's two.
#[cfg(feature = "mqtt-provisioned")]
pub const OPS: [Op<Uart>; 4] = [
    START,
    Op {
        id: avr_wire::mqtt::OP_HELLO,
        request_len: L.hello_request_len() as u16,
        reply_len: L.start_reply_len() as u16,
        run: hello,
    },
    FINISH,
    FINISH_REST,
];
/// The sensor's steps: start (keys and randomness in the request), the
/// finish's two.
#[cfg(not(feature = "mqtt-provisioned"))]
pub const OPS: [Op<Uart>; 3] = [START, FINISH, FINISH_REST];

const START: Op<Uart> = Op {
    id: OP_START,
    request_len: L.start_request_len() as u16,
    reply_len: L.start_reply_len() as u16,
    run: start,
};

const FINISH: Op<Uart> = Op {
    id: OP_FINISH,
    request_len: L.finish_request_len() as u16,
    reply_len: L.finish_reply_len() as u16,
    run: finish,
};

const FINISH_REST: Op<Uart> = Op {
    id: OP_FINISH_REST,
    request_len: L.finish_rest_request_len() as u16,
    reply_len: L.finish_rest_reply_len() as u16,
    run: finish_rest,
};
