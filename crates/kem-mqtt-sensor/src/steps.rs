//! The sensor's handshake state and steps, shared by the application
//! ([`crate::run`]: the board runs its own session) and the project's
//! measuring firmware (its `mqtt` ops: the host drives each step and
//! measures it): the build's suite and layout, the keys, the EEPROM
//! handshake counter, the statics the handshake lives in, and the three
//! steps, each out of line so that its frame is its own.
//!
//! Every `static mut` here is used from one thread (the AVR has no other)
//! and borrowed once at a time; the `unsafe` functions say what their
//! callers promise.

use core::ptr::addr_of_mut;

use avr_wire::mqtt::{Layout, CF_LEN, MAX_ID_LEN, TAPE_LEN, X25519_LEN};
use kem_common::Tape;
use kem_mqtt::{
    AwaitBrokerHello, EphemeralKey, Error, KeyBytes, Scheme, SensorCredentials, SensorHandshake, Session, Suite,
};

/// The build's KEM: the one KEM feature turned on on `kem-mqtt`.
pub const KEM: Scheme = {
    let (mut found, mut count, mut i) = (kem_mqtt::KEMS[0], 0, 0);
    while i < kem_mqtt::KEMS.len() {
        if kem_mqtt::kem_enabled(kem_mqtt::KEMS[i]) {
            found = kem_mqtt::KEMS[i];
            count += 1;
        }
        i += 1;
    }
    assert!(
        count == 1,
        "kem-mqtt-sensor serves one KEM: turn on exactly one KEM feature of kem-mqtt, with default-features = false"
    );
    found
};
/// The build's suite: the KEM's hybrid with the feature `x25519`, else its pure one.
pub const SUITE: Suite = Suite::new(KEM, cfg!(feature = "x25519"));

/// The build's byte lengths (keys, ciphertexts, flights).
pub const L: Layout = Layout::of(KEM);
/// The client id's length: provisioned, or the longest a request may carry.
#[cfg(feature = "provisioned")]
pub const ID_LEN: usize = {
    let n = PROVISIONED_KEYS[0] as usize;
    if n < MAX_ID_LEN {
        n
    } else {
        MAX_ID_LEN
    }
};
/// The client id's length: the longest a request may carry.
#[cfg(not(feature = "provisioned"))]
pub const ID_LEN: usize = MAX_ID_LEN;
/// The flight buffer's bytes ([`FLIGHT_BUF`]).
pub const FLIGHT: usize = L.flight_len(ID_LEN);
/// The same fields, provisioned into the image; the start request must
/// carry equal bytes. They take no SRAM: the megaAVR 0-series maps its
/// flash into the data space, and on the classic parts
/// (`keys-in-flash`) they are in program memory, which only
/// [`read_provisioned`] reads (a data-space read there would see SRAM).
#[cfg(feature = "provisioned")]
#[cfg_attr(feature = "keys-in-flash", link_section = ".progmem.data")]
static PROVISIONED: [u8; L.keys_len()] = PROVISIONED_KEYS;
#[cfg(feature = "provisioned")]
const PROVISIONED_KEYS: [u8; L.keys_len()] = crate::keys::provisioned();
/// The static-static X25519 secret, computed when the keys arrive
/// (a sensor does it once, at provisioning: spec §3), not in the
/// measured handshake.
static mut X_STATIC: [u8; X25519_LEN] = [0; X25519_LEN];
/// The start's random tape; in `finish`, where the tape is dead, the
/// ClientFinished and the record (off the stack at its peak).
pub static mut TAPE: [u8; TAPE_LEN] = [0; TAPE_LEN];
/// The ClientHello out (without the ephemeral public key, which goes out
/// from [`EPHEMERAL`]), then the BrokerHello's first part in.
pub static mut FLIGHT_BUF: [u8; FLIGHT] = [0; FLIGHT];
/// The ephemeral KEM secret key between the two steps (a static, so
/// the state below stays small and moves cheaply); once the BrokerHello's
/// first part has used it up, the rest of the BrokerHello comes into it.
pub static mut EPHEMERAL: EphemeralKey = EphemeralKey::new();
/// The sensor between its two steps.
pub static mut STATE: Option<Sensor> = None;

/// The handshake state between the start and the BrokerHello.
pub type Sensor = AwaitBrokerHello<'static, &'static mut EphemeralKey>;

/// Drops the handshake state in `slot` (its secrets are wiped on drop),
/// ending its borrow of the ephemeral key and of the keys.
///
/// One out-of-line drop that every caller shares: a caller in another
/// crate dropping the state itself compiles a copy of the drop of its own
/// (about 90 B, which the 48 KB parts' fullest image cannot spare).
#[inline(never)]
pub fn clear(slot: &mut Option<Sensor>) {
    *slot = None;
}

/// [`clear`] on [`STATE`].
///
/// # Safety
/// Single-threaded, and no borrow of the state is live.
pub unsafe fn clear_state() {
    // SAFETY: as the caller promises.
    clear(unsafe { &mut *addr_of_mut!(STATE) });
}

/// The start's statics, each borrowed once: the state's slot, the
/// ephemeral key, the tape and the flight buffer.
///
/// # Safety
/// Single-threaded, and no earlier borrow of these statics is live (a
/// handshake state, which borrows the ephemeral key, is dropped first).
pub unsafe fn start_buffers() -> (
    &'static mut Option<Sensor>,
    &'static mut EphemeralKey,
    &'static [u8; TAPE_LEN],
    &'static mut [u8; FLIGHT],
) {
    // SAFETY: as the caller promises.
    unsafe {
        (
            &mut *addr_of_mut!(STATE),
            &mut *addr_of_mut!(EPHEMERAL),
            &*core::ptr::addr_of!(TAPE),
            &mut *addr_of_mut!(FLIGHT_BUF),
        )
    }
}

/// The ClientHello's pieces: `(head, len)` of [`SensorHandshake::start_split`].
#[inline(never)]
pub fn k_start(
    suite: Suite,
    creds: SensorCredentials<'static>,
    rng: &mut Tape<'_>,
    out: &mut [u8; FLIGHT],
    ephemeral: &'static mut EphemeralKey,
    slot: &mut Option<Sensor>,
) -> Result<(usize, usize), Error> {
    // In place: the state (with its transcript sponge) is built in its
    // static, not on the stack under the KEM.
    SensorHandshake::start_split(slot, suite, creds, rng, out, ephemeral)
}

/// The BrokerHello's first part (`head`): decapsulation and the
/// transcript, the state kept in `slot`.
#[inline(never)]
pub fn k_finish(slot: &mut Option<Sensor>, head: &[u8]) -> Result<(), Error> {
    AwaitBrokerHello::receive_broker_hello_head(slot, head)
}

/// The BrokerHello's rest (`len` bytes in the state's rest buffer): the
/// ClientFinished into `cf` and the session into `session` (a static: a
/// returned session would take its bytes beneath the decapsulation).
#[inline(never)]
pub fn k_finish_rest(
    slot: &mut Option<Sensor>,
    len: usize,
    cf: &mut [u8; CF_LEN],
    session: &mut Option<Session>,
) -> Result<(), Error> {
    AwaitBrokerHello::receive_broker_hello_rest_into(slot, len, cf, session).map(drop)
}

/// The cached static-static secret for a hybrid suite (`None`: the
/// handshake computes it, or reports the bad key itself). Not inlined: the
/// X25519's buffers stay out of the application's outermost frame.
#[inline(never)]
fn cache_static_secret(
    suite_id: u8,
    x_sk: &[u8; X25519_LEN],
    x_pk: &[u8; X25519_LEN],
    out: &'static mut [u8; X25519_LEN],
) -> Option<&'static [u8; X25519_LEN]> {
    #[cfg(feature = "x25519")]
    if Suite::from_id(suite_id).is_ok_and(|s| s.is_hybrid()) {
        if let Ok(secret) = kem_mqtt::static_x25519_secret(x_sk, x_pk) {
            *out = secret;
            return Some(out);
        }
    }
    let _ = (suite_id, x_sk, x_pk, out);
    None
}

/// The key fields of a start request (the KEM keys perhaps in program memory).
pub struct Keys {
    /// The client id.
    pub id: &'static [u8],
    /// The sensor's static KEM secret key.
    pub sk: KeyBytes<'static>,
    /// The sensor's static X25519 secret key.
    pub x_sk: &'static [u8; X25519_LEN],
    /// The broker's KEM public key.
    pub pk: KeyBytes<'static>,
    /// The broker's X25519 public key.
    pub x_pk: &'static [u8; X25519_LEN],
}

/// Copies the provisioned bytes from `at` on into `out` (past the end: zeros).
#[cfg(feature = "provisioned")]
pub fn read_provisioned(at: usize, out: &mut [u8]) {
    #[cfg(feature = "keys-in-flash")]
    {
        // The keys' full flash address (a data-space pointer to them would
        // have 16 bits: the ATmega2560's flash has 18).
        let (lo, hi, hh): (u8, u8, u8);
        // SAFETY: loads three immediates, the bytes of a link-time address.
        unsafe {
            core::arch::asm!(
                "ldi {lo}, lo8({keys})",
                "ldi {hi}, hi8({keys})",
                "ldi {hh}, hh8({keys})",
                keys = sym PROVISIONED,
                lo = out(reg_upper) lo,
                hi = out(reg_upper) hi,
                hh = out(reg_upper) hh,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        let base = u32::from_le_bytes([lo, hi, hh, 0]);
        let n = out.len().min(L.keys_len().saturating_sub(at));
        let (inside, past) = out.split_at_mut(n);
        avr_harness::read_program_memory(base + at as u32, inside);
        past.fill(0);
    }
    #[cfg(not(feature = "keys-in-flash"))]
    for (i, o) in out.iter_mut().enumerate() {
        *o = PROVISIONED.get(at + i).copied().unwrap_or(0);
    }
}

/// The sensor's randomness for one handshake, into [`TAPE`]: the
/// [`avr_wire::mqtt::TAPE_LABEL`]-KDF of its provisioned keys, its counter
/// value `counter` (never used twice: [`next_counter`]) and the host's
/// `nonce`.
///
/// # Safety
/// Single-threaded, and no borrow of [`TAPE`] is live (a handshake start's
/// buffers, [`start_buffers`], are taken after this returns).
#[cfg(feature = "provisioned")]
pub unsafe fn derive_tape(suite: Suite, counter: u32, nonce: &[u8; avr_wire::mqtt::HOST_NONCE_LEN]) {
    // SAFETY: as the caller promises.
    let tape = unsafe { &mut *addr_of_mut!(TAPE) };
    #[cfg(feature = "keys-in-flash")]
    kem_mqtt::sym::kdf_with(
        suite.family(),
        avr_wire::mqtt::TAPE_LABEL,
        &[
            kem_mqtt::sym::Part::Read(L.keys_len(), &read_provisioned),
            kem_mqtt::sym::Part::Bytes(&counter.to_le_bytes()),
            kem_mqtt::sym::Part::Bytes(nonce),
        ],
        tape,
    );
    #[cfg(not(feature = "keys-in-flash"))]
    kem_mqtt::sym::kdf(
        suite.family(),
        avr_wire::mqtt::TAPE_LABEL,
        &[&PROVISIONED[..], &counter.to_le_bytes(), nonce],
        tape,
    );
}

/// The counter values this boot has reserved: `(next, limit)`, every value
/// below `limit` counted as used; `None` until the first handshake.
#[cfg(feature = "provisioned")]
static mut RESERVED: Option<(u32, u32)> = None;

/// The next handshake counter value. The EEPROM holds the end of the
/// values reserved so far (erased: none); a block is reserved, written and
/// read back before any of its values is used, so no value repeats, power
/// losses included (a reset skips the rest of its block). `None` when the
/// counter is exhausted or the EEPROM does not keep what is written.
#[cfg(feature = "provisioned")]
pub fn next_counter() -> Option<u32> {
    use avr_harness::{eeprom_read, eeprom_write};
    use avr_wire::mqtt::{COUNTER_ADDR, COUNTER_BLOCK};
    let addrs = [0u16, 1, 2, 3].map(|i| COUNTER_ADDR + i);
    // SAFETY: single-threaded; the one borrow of the static.
    let reserved = unsafe { &mut *addr_of_mut!(RESERVED) };
    let (next, limit) = match *reserved {
        Some(r) => r,
        None => {
            // Erased EEPROM reads 0xFF…: nothing reserved yet.
            let stored = u32::from_le_bytes(addrs.map(eeprom_read));
            let start = if stored == u32::MAX { 0 } else { stored };
            (start, start)
        }
    };
    let limit = if next < limit {
        limit
    } else {
        let end = next.checked_add(COUNTER_BLOCK).filter(|&e| e != u32::MAX)?;
        for (a, b) in addrs.iter().zip(end.to_le_bytes()) {
            eeprom_write(*a, b);
        }
        if u32::from_le_bytes(addrs.map(eeprom_read)) != end {
            return None;
        }
        end
    };
    *reserved = Some((next + 1, limit));
    Some(next)
}

/// The provisioned key fields, in the mapped flash (the megaAVR 0-series).
///
/// # Safety
/// As the classic parts' variant's (which reuses a static for them): no
/// earlier [`Keys`], nor credentials made from them, is still in use.
#[cfg(all(feature = "provisioned", not(feature = "keys-in-flash")))]
pub unsafe fn provisioned_keys() -> Option<Keys> {
    let (&id_len, rest) = PROVISIONED.split_first()?;
    let (id, rest) = rest.split_first_chunk::<MAX_ID_LEN>()?;
    let (sk, rest) = rest.split_first_chunk::<{ L.sk }>()?;
    let (x_sk, rest) = rest.split_first_chunk::<X25519_LEN>()?;
    let (pk, rest) = rest.split_first_chunk::<{ L.pk }>()?;
    let (x_pk, _) = rest.split_first_chunk::<X25519_LEN>()?;
    Some(Keys {
        id: &id[..(id_len as usize).min(MAX_ID_LEN)],
        sk: KeyBytes::Slice(sk),
        x_sk,
        pk: KeyBytes::Slice(pk),
        x_pk,
    })
}

/// The provisioned key fields on a classic part: the KEM keys stay in
/// program memory behind readers; the client id and the X25519 keys
/// (`ID_LEN` + 64 bytes) are copied into SRAM.
///
/// # Safety
/// Single-threaded, and no earlier [`Keys`], nor credentials made from
/// them, is still in use: their copy is rewritten.
#[cfg(all(feature = "provisioned", feature = "keys-in-flash"))]
pub unsafe fn provisioned_keys() -> Option<Keys> {
    const SK_AT: usize = 1 + MAX_ID_LEN;
    const X_SK_AT: usize = SK_AT + L.sk;
    const PK_AT: usize = X_SK_AT + X25519_LEN;
    const X_PK_AT: usize = PK_AT + L.pk;
    const _: () = assert!(X_PK_AT + X25519_LEN == L.keys_len());
    /// id ‖ X25519 secret ‖ broker's X25519 public key.
    static mut SMALL: [u8; ID_LEN + 2 * X25519_LEN] = [0; ID_LEN + 2 * X25519_LEN];
    // SAFETY: as the caller promises.
    let small = unsafe { &mut *addr_of_mut!(SMALL) };
    let (id, x) = small.split_at_mut(ID_LEN);
    read_provisioned(1, id);
    let (x_sk, x_pk) = x.split_at_mut(X25519_LEN);
    read_provisioned(X_SK_AT, x_sk);
    read_provisioned(X_PK_AT, x_pk);
    let small = &*small;
    let (id, rest) = small.split_at(ID_LEN);
    let (x_sk, rest) = rest.split_first_chunk::<X25519_LEN>()?;
    let (x_pk, _) = rest.split_first_chunk::<X25519_LEN>()?;
    let reader = |offset, len| KeyBytes::Reader {
        offset,
        len,
        read: read_provisioned,
    };
    Some(Keys {
        id,
        sk: reader(SK_AT, L.sk),
        x_sk,
        pk: reader(PK_AT, L.pk),
        x_pk,
    })
}

/// The handshake's credentials from `keys`, the static-static X25519
/// secret of a hybrid `suite_id` computed into [`X_STATIC`] (a sensor
/// computes it once; the harness, whose keys arrive with each request, in
/// every start, outside the measured window).
///
/// # Safety
/// Single-threaded, and no earlier credentials are still in use (their
/// cached secret is rewritten): the handshake state that held them is gone.
pub unsafe fn credentials(suite_id: u8, Keys { id, sk, x_sk, pk, x_pk }: Keys) -> SensorCredentials<'static> {
    // SAFETY: as the caller promises.
    let x_static = unsafe { &mut *addr_of_mut!(X_STATIC) };
    let cached = cache_static_secret(suite_id, x_sk, x_pk, x_static);
    SensorCredentials {
        client_id: id,
        kem_sk: sk,
        x25519_sk: Some(x_sk),
        broker_kem_pk: pk,
        broker_x25519_pk: Some(x_pk),
        x25519_static_secret: cached,
    }
}
