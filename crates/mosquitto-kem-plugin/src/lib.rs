#![deny(missing_docs)]
#![doc = include_str!("../README.md")]
//!
//! # In detail
//!
//! **Another authentication method** than KEM-MQTT/1 gets
//! `MOSQ_ERR_NOT_SUPPORTED`, which mosquitto answers with CONNACK 0x8C (Bad
//! authentication method).
//!
//! **Identity.** The sensor id inside the ClientHello must be the CONNECT's
//! client id, checked before any key is used; on success the plugin also
//! sets the connection's username to it (`mosquitto_set_username`), which
//! replaces any username the CONNECT carried (mosquitto 2.0 stores that one
//! unchecked when enhanced authentication is used). So `%c` and `%u` in an
//! ACL both name the authenticated sensor, a sensor cannot take over another
//! one's session, and a re-authentication (AUTH 0x19) cannot change the
//! identity (the client id of a connection is fixed at CONNECT).
//!
//! **Data path** (`MOSQ_EVT_MESSAGE`, see [`Plugin::message`]): the
//! session a handshake establishes stays in the plugin's memory while its
//! connection lives. A record the sensor publishes on
//! `kem-mqtt/data/c2b/<id>[/<sub>]` is opened and its plaintext published on
//! `plain/<id>[/<sub>]` for every subscriber the ACL lets read it; a command
//! an application publishes on `cmd/<id>[/<sub>]` is sealed and sent to the
//! sensor alone on `kem-mqtt/data/b2c/<id>[/<sub>]`. Records that do not
//! open (tampered, moved, replayed, another sensor's) are counted and never
//! delivered. The session's keys are wiped when its connection ends; a
//! reconnect is a new handshake. Records and readings are never retained
//! (the plugin clears a record's retain flag), so nothing a sensor sent is
//! served to a later subscriber, after its revocation included; and
//! `registry.json` is looked at (one `stat`) before every record is opened
//! and every command sealed, so a revocation applies to the next message.
//!
//! **Refusals** are all CONNACK 0x87: mosquitto 2.0's plugin API has no way
//! to choose another reason code (only `MOSQ_ERR_AUTH` → 0x87 and
//! `MOSQ_ERR_NOT_SUPPORTED` → 0x8C), and one answer for every refusal tells
//! an unauthenticated peer nothing about which check failed. The reason is
//! in the broker's log.
//!
//! **Cost of a refusal.** The format, the identity binding, the registry,
//! the policy, the ephemeral key's import check and the rate limits
//! ([`kem_mqtt_host::admission`]: per client id and source address, per
//! source address, a shared pool and a pool reserved for sensors returning
//! to the address of their last handshake) are checked before the
//! decapsulation, so a flood of ClientHellos costs a handshake per token,
//! not per hello, and cannot keep out a returning sensor it does not share
//! an address with.
//!
//! **Panics.** A panic in a callback refuses the connection at hand (or
//! is ignored, for DISCONNECT), is logged, and the broker and its other
//! clients carry on.
//!
//! **Every option** (those marked `# optional` may be left out):
//!
//! ```text
//! plugin /path/to/libmosquitto_kem_plugin.so
//! plugin_opt_keys_dir /path/with/broker-key.json/and/registry.json
//! plugin_opt_registry sqlite:/var/lib/kem-mqtt/registry.sqlite # optional: or postgres://…; default: the keys dir's registry.json
//! plugin_opt_limit_per_id 4/5s         # optional: BURST/INTERVAL, or off
//! plugin_opt_limit_per_source 16/500ms # optional
//! plugin_opt_limit_global 200/20ms     # optional: the shared pool
//! plugin_opt_limit_reserved 1000/40ms  # optional: the pool of returning sensors
//! plugin_opt_limit_reserve_per_id 2/30s # optional: one returning sensor's share of it
//! plugin_opt_returning_for 24h         # optional: how long a handshake makes a sensor returning
//! plugin_opt_plain_prefix plain        # optional: readings for applications
//! plugin_opt_command_prefix cmd        # optional: commands from applications
//! plugin_opt_stats_interval 60s        # optional: how often the counters are logged
//! ```
//!
//! The symbols the plugin calls (`mosquitto_callback_register`,
//! `mosquitto_malloc`, …) are resolved from the broker executable when it
//! loads the plugin.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::Instant;

#[cfg(feature = "fault-injection")]
mod fault;
mod plugin;

pub use kem_mqtt_host::admission::parse_rate;
pub use plugin::{
    guard_refuses, Connection, DeliveryStats, Message, Mode, Options, Outcome, Plugin, Refusal, Reload, Undelivered,
};

const MOSQ_ERR_AUTH_CONTINUE: c_int = -4;
const MOSQ_ERR_SUCCESS: c_int = 0;
const MOSQ_ERR_INVAL: c_int = 3;
const MOSQ_ERR_NOT_SUPPORTED: c_int = 10;
const MOSQ_ERR_AUTH: c_int = 11;
const MOSQ_ERR_ACL_DENIED: c_int = 12;
const MOSQ_ERR_PLUGIN_DEFER: c_int = 17;
const MOSQ_EVT_RELOAD: c_int = 1;
const MOSQ_EVT_ACL_CHECK: c_int = 2;
const MOSQ_EVT_EXT_AUTH_START: c_int = 4;
const MOSQ_EVT_EXT_AUTH_CONTINUE: c_int = 5;
const MOSQ_EVT_MESSAGE: c_int = 7;
const MOSQ_EVT_TICK: c_int = 9;
const MOSQ_EVT_DISCONNECT: c_int = 10;
// mosquitto_plugin.h access bits.
const MOSQ_ACL_WRITE: c_int = 0x02;
// mosquitto.h log priorities.
const MOSQ_LOG_INFO: c_int = 0x01;
const MOSQ_LOG_NOTICE: c_int = 0x02;
const MOSQ_LOG_ERR: c_int = 0x08;
const MOSQ_LOG_DEBUG: c_int = 0x10;

/// `struct mosquitto_opt`.
#[repr(C)]
pub struct MosquittoOpt {
    key: *mut c_char,
    value: *mut c_char,
}

/// `struct mosquitto_evt_extended_auth` (mosquitto 2.0).
#[repr(C)]
struct EvtExtendedAuth {
    future: *mut c_void,
    client: *mut c_void,
    data_in: *const c_void,
    data_out: *mut c_void,
    data_in_len: u16,
    data_out_len: u16,
    auth_method: *const c_char,
    future2: [*mut c_void; 3],
}

/// `struct mosquitto_evt_message` (mosquitto 2.0).
#[repr(C)]
struct EvtMessage {
    future: *mut c_void,
    client: *mut c_void,
    topic: *mut c_char,
    payload: *mut c_void,
    properties: *mut c_void,
    reason_string: *mut c_char,
    payloadlen: u32,
    qos: u8,
    reason_code: u8,
    retain: bool,
    future2: [*mut c_void; 4],
}

/// `struct mosquitto_evt_acl_check` (mosquitto 2.0).
#[repr(C)]
struct EvtAclCheck {
    future: *mut c_void,
    client: *mut c_void,
    topic: *const c_char,
    payload: *const c_void,
    properties: *mut c_void,
    access: c_int,
    payloadlen: u32,
    qos: u8,
    retain: bool,
    future2: [*mut c_void; 4],
}

/// `struct mosquitto_evt_disconnect` (prefix).
#[repr(C)]
struct EvtDisconnect {
    future: *mut c_void,
    client: *mut c_void,
}

type Callback = unsafe extern "C" fn(c_int, *mut c_void, *mut c_void) -> c_int;

extern "C" {
    fn mosquitto_callback_register(
        identifier: *mut c_void,
        event: c_int,
        cb: Callback,
        event_data: *const c_void,
        userdata: *mut c_void,
    ) -> c_int;
    fn mosquitto_callback_unregister(
        identifier: *mut c_void,
        event: c_int,
        cb: Callback,
        event_data: *const c_void,
    ) -> c_int;
    fn mosquitto_malloc(size: usize) -> *mut c_void;
    fn mosquitto_client_id(client: *const c_void) -> *const c_char;
    fn mosquitto_client_address(client: *const c_void) -> *const c_char;
    fn mosquitto_client_username(client: *const c_void) -> *const c_char;
    fn mosquitto_set_username(client: *mut c_void, username: *const c_char) -> c_int;
    fn mosquitto_kick_client_by_clientid(clientid: *const c_char, with_will: bool) -> c_int;
    fn mosquitto_broker_publish_copy(
        clientid: *const c_char,
        topic: *const c_char,
        payloadlen: c_int,
        payload: *const c_void,
        qos: c_int,
        retain: bool,
        properties: *mut c_void,
    ) -> c_int;
    fn mosquitto_log_printf(level: c_int, fmt: *const c_char, ...);
}

/// Writes `msg` to mosquitto's log (as data, never as a format string).
fn log(level: c_int, msg: &str) {
    let msg = CString::new(format!("kem-mqtt: {msg}").replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: a "%s" format with one NUL-terminated string argument.
    unsafe { mosquitto_log_printf(level, c"%s".as_ptr(), msg.as_ptr()) };
}

/// Runs one callback body, containing any panic: the callback returns
/// `fallback` instead of unwinding into C (which would abort the broker).
///
/// `AssertUnwindSafe`: what a panic can leave behind is the plugin's
/// mutex-guarded tables, and `plugin::lock` recovers those (each critical
/// section leaves its table consistent); the panicking event's own data is
/// dropped, secrets wiped, by the unwinding.
fn contained(what: &str, fallback: c_int, body: impl FnOnce() -> c_int) -> c_int {
    match std::panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(rc) => rc,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            // The payload is dropped here, inside the plugin.
            drop(payload);
            log(
                MOSQ_LOG_ERR,
                &format!("internal error in {what} ({msg}); contained, the broker carries on"),
            );
            fallback
        }
    }
}

/// A C string owned by mosquitto, if valid UTF-8.
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for `'a`.
unsafe fn c_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        None
    } else {
        // SAFETY: per the contract.
        unsafe { CStr::from_ptr(p) }.to_str().ok()
    }
}

/// What mosquitto knows of `client`.
///
/// # Safety
/// `client` is a live `struct mosquitto *` passed by mosquitto.
unsafe fn connection<'a>(client: *mut c_void) -> Connection<'a> {
    // SAFETY: mosquitto's accessors on its own client; the strings live as
    // long as the client, beyond this callback.
    let (client_id, username, address) = unsafe {
        (
            c_str(mosquitto_client_id(client)),
            c_str(mosquitto_client_username(client)),
            c_str(mosquitto_client_address(client)),
        )
    };
    Connection {
        key: client as usize,
        client_id,
        username,
        address: address.and_then(|a| a.parse::<IpAddr>().ok()),
    }
}

/// `(key, value)` of mosquitto's option array.
///
/// # Safety
/// `options` holds `count` entries of NUL-terminated strings (or is null).
unsafe fn options<'a>(options: *mut MosquittoOpt, count: c_int) -> Vec<(&'a str, &'a str)> {
    if options.is_null() || count <= 0 {
        return vec![];
    }
    // SAFETY: mosquitto passes `count` valid options.
    let opts = unsafe { std::slice::from_raw_parts(options, count as usize) };
    opts.iter()
        // SAFETY: NUL-terminated strings owned by mosquitto for the plugin's life.
        .filter_map(|o| unsafe { Some((c_str(o.key)?, c_str(o.value)?)) })
        .collect()
}

/// Plugin API negotiation: we implement version 5.
///
/// # Safety
/// Called by mosquitto with `count` readable entries at `versions`.
#[no_mangle]
pub unsafe extern "C" fn mosquitto_plugin_version(count: c_int, versions: *const c_int) -> c_int {
    contained("version negotiation", -1, || {
        if versions.is_null() || count <= 0 {
            return -1;
        }
        // SAFETY: mosquitto passes `count` versions.
        let v = unsafe { std::slice::from_raw_parts(versions, count as usize) };
        if v.contains(&5) {
            5
        } else {
            -1
        }
    })
}

unsafe fn auth_event(event: c_int, event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    if event_data.is_null() || userdata.is_null() {
        return MOSQ_ERR_INVAL;
    }
    // SAFETY: userdata is the Box<Plugin> leaked in init; event_data the event's struct.
    let (plugin, ev) = unsafe {
        (
            &*(userdata as *const Plugin),
            &mut *(event_data as *mut EvtExtendedAuth),
        )
    };
    // SAFETY: NUL-terminated string owned by mosquitto.
    let method = unsafe { c_str(ev.auth_method) };
    let data: &[u8] = if ev.data_in.is_null() {
        &[]
    } else {
        // SAFETY: mosquitto passes data_in_len bytes.
        unsafe { std::slice::from_raw_parts(ev.data_in as *const u8, ev.data_in_len as usize) }
    };
    // SAFETY: the event's client.
    let conn = unsafe { connection(ev.client) };
    let outcome = if event == MOSQ_EVT_EXT_AUTH_START {
        plugin.start(&conn, method, data, Instant::now())
    } else {
        plugin.continue_auth(&conn, method, data, Instant::now())
    };
    match outcome {
        Outcome::Continue(out) => {
            // SAFETY: mosquitto frees data_out with mosquitto_free.
            let p = unsafe { mosquitto_malloc(out.len()) } as *mut u8;
            if p.is_null() {
                return MOSQ_ERR_AUTH;
            }
            // SAFETY: p has out.len() bytes.
            unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), p, out.len()) };
            ev.data_out = p as *mut c_void;
            ev.data_out_len = out.len() as u16;
            MOSQ_ERR_AUTH_CONTINUE
        }
        Outcome::Success { identity } => {
            // The username ACLs see (%u) becomes the authenticated id,
            // whatever the CONNECT said; if that fails, no success.
            let Ok(name) = CString::new(identity.as_str()) else {
                return MOSQ_ERR_AUTH;
            };
            // SAFETY: the event's client; mosquitto copies the string.
            let rc = unsafe { mosquitto_set_username(ev.client, name.as_ptr()) };
            if rc != MOSQ_ERR_SUCCESS {
                log(
                    MOSQ_LOG_ERR,
                    &format!("refused {identity:?}: setting the username failed ({rc})"),
                );
                return MOSQ_ERR_AUTH;
            }
            MOSQ_ERR_SUCCESS
        }
        Outcome::Refuse(why) => {
            let level = match why {
                // Expected under a flood: one line per hello would be the
                // flood's cost again, so only at debug level.
                Refusal::RateLimited(_) => MOSQ_LOG_DEBUG,
                _ => MOSQ_LOG_NOTICE,
            };
            let from = conn.address.map(|a| a.to_string()).unwrap_or_default();
            log(level, &format!("refused a connection from {from}: {why}"));
            MOSQ_ERR_AUTH
        }
        Outcome::NotSupported => MOSQ_ERR_NOT_SUPPORTED,
    }
}

unsafe extern "C" fn on_auth(event: c_int, event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    // A panic refuses this connection (CONNACK 0x87) and nothing else.
    // SAFETY: forwarded from mosquitto.
    contained("authentication", MOSQ_ERR_AUTH, || unsafe {
        auth_event(event, event_data, userdata)
    })
}

unsafe extern "C" fn on_disconnect(_event: c_int, event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    contained("disconnect", MOSQ_ERR_SUCCESS, || {
        if !event_data.is_null() && !userdata.is_null() {
            // SAFETY: as in auth_event.
            let (plugin, ev) = unsafe { (&*(userdata as *const Plugin), &*(event_data as *const EvtDisconnect)) };
            // SAFETY: the event's client.
            plugin.disconnect(&unsafe { connection(ev.client) });
        }
        MOSQ_ERR_SUCCESS
    })
}

unsafe fn message_event(event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    if event_data.is_null() || userdata.is_null() {
        return MOSQ_ERR_SUCCESS;
    }
    // SAFETY: userdata is our Plugin; event_data mosquitto's message event,
    // whose fields the plugin may change (mosquitto stores them back).
    let (plugin, ev) = unsafe { (&*(userdata as *const Plugin), &mut *(event_data as *mut EvtMessage)) };
    // SAFETY: NUL-terminated topic owned by mosquitto.
    let Some(topic) = (unsafe { c_str(ev.topic) }) else {
        return MOSQ_ERR_SUCCESS;
    };
    let payload: &[u8] = if ev.payload.is_null() || ev.payloadlen == 0 {
        &[]
    } else {
        // SAFETY: mosquitto passes payloadlen bytes.
        unsafe { std::slice::from_raw_parts(ev.payload as *const u8, ev.payloadlen as usize) }
    };
    // SAFETY: the event's client.
    let conn = unsafe { connection(ev.client) };
    // A sensor's record is not retained, whoever sent it and whether or not
    // it opens (its reading is published unretained below).
    if plugin.refuses_retain(topic) {
        ev.retain = false;
    }
    match plugin.message(&conn, topic, payload) {
        Message::Pass => MOSQ_ERR_SUCCESS,
        Message::PassAndPublish { to, topic, payload } => {
            let (Ok(c_topic), Ok(len)) = (CString::new(topic.as_str()), c_int::try_from(payload.len())) else {
                return MOSQ_ERR_SUCCESS;
            };
            let to = to.and_then(|id| CString::new(id).ok());
            // SAFETY: valid C strings and `len` bytes; mosquitto copies them.
            let rc = unsafe {
                mosquitto_broker_publish_copy(
                    to.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
                    c_topic.as_ptr(),
                    len,
                    payload.as_ptr() as *const c_void,
                    c_int::from(ev.qos),
                    // Neither a reading nor a command is retained: a reading
                    // the broker kept would outlive its sensor's revocation.
                    false,
                    std::ptr::null_mut(),
                )
            };
            if rc != MOSQ_ERR_SUCCESS {
                log(MOSQ_LOG_ERR, &format!("publishing on {topic} failed ({rc})"));
            }
            MOSQ_ERR_SUCCESS
        }
        Message::Dropped(why) => {
            // Per message at debug level only: a sensor sending garbage
            // must not flood the log; the counters are logged on ticks.
            let id = conn.client_id.unwrap_or("");
            log(
                MOSQ_LOG_DEBUG,
                &format!("dropped a PUBLISH on {topic} from {id:?}: {why:?}"),
            );
            MOSQ_ERR_SUCCESS
        }
        Message::Refuse => {
            let id = conn.client_id.unwrap_or("");
            log(
                MOSQ_LOG_NOTICE,
                &format!("refused a PUBLISH on {topic} from {id:?}: only the broker publishes there"),
            );
            MOSQ_ERR_ACL_DENIED
        }
    }
}

unsafe extern "C" fn on_message(_event: c_int, event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    // A panic delivers nothing from this message, and nothing else changes.
    // SAFETY: forwarded from mosquitto.
    contained("message", MOSQ_ERR_SUCCESS, || unsafe {
        message_event(event_data, userdata)
    })
}

/// The topic guard ([`guard_refuses`]) on one access check: `Some(DENIED)`
/// for a client id with `/` on a `kem-mqtt/` topic, logged.
fn guarded(conn: &Connection, topic: &str) -> Option<c_int> {
    if !guard_refuses(conn.client_id, topic) {
        return None;
    }
    let id = conn.client_id.unwrap_or("");
    log(
        MOSQ_LOG_NOTICE,
        &format!("refused {id:?} access to {topic}: a client id with '/' would stand for several topic levels"),
    );
    Some(MOSQ_ERR_ACL_DENIED)
}

unsafe fn acl_check_event(event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    if event_data.is_null() {
        return MOSQ_ERR_PLUGIN_DEFER;
    }
    // SAFETY: event_data is mosquitto's ACL check event.
    let ev = unsafe { &*(event_data as *const EvtAclCheck) };
    // SAFETY: NUL-terminated topic owned by mosquitto.
    let Some(topic) = (unsafe { c_str(ev.topic) }) else {
        return MOSQ_ERR_PLUGIN_DEFER;
    };
    // SAFETY: the event's client.
    let conn = unsafe { connection(ev.client) };
    if let Some(denied) = guarded(&conn, topic) {
        return denied;
    }
    // Topic mode registers no Plugin: the guard is all it does.
    if userdata.is_null() || ev.access & MOSQ_ACL_WRITE == 0 {
        return MOSQ_ERR_PLUGIN_DEFER;
    }
    // SAFETY: userdata is our Plugin.
    let plugin = unsafe { &*(userdata as *const Plugin) };
    if plugin.refuses_write(&conn, topic) {
        let id = conn.client_id.unwrap_or("");
        log(
            MOSQ_LOG_NOTICE,
            &format!("refused a PUBLISH on {topic} from {id:?}: only the broker publishes there"),
        );
        MOSQ_ERR_ACL_DENIED
    } else {
        MOSQ_ERR_PLUGIN_DEFER
    }
}

unsafe extern "C" fn on_acl_check(_event: c_int, event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    // A panic refuses this one access and nothing else.
    // SAFETY: forwarded from mosquitto.
    contained("access check", MOSQ_ERR_ACL_DENIED, || unsafe {
        acl_check_event(event_data, userdata)
    })
}

/// Logs a registry reload and closes the connections of the sensors it
/// revoked (their sessions are already gone; without a Will: a revoked
/// sensor publishes nothing more).
fn reloaded(outcome: Result<plugin::Reload, String>) {
    match outcome {
        Ok(r) => {
            log(
                MOSQ_LOG_NOTICE,
                &format!("registry reloaded: {} sensors, revoked {:?}", r.clients, r.revoked),
            );
            for id in &r.revoked {
                if let Ok(c) = CString::new(id.as_str()) {
                    // SAFETY: a NUL-terminated id; mosquitto copies what it needs.
                    unsafe { mosquitto_kick_client_by_clientid(c.as_ptr(), false) };
                }
            }
        }
        Err(e) => log(
            MOSQ_LOG_ERR,
            &format!("registry not reloaded, the one in use stays: {e}"),
        ),
    }
}

unsafe extern "C" fn on_tick(_event: c_int, _event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    contained("tick", MOSQ_ERR_SUCCESS, || {
        if !userdata.is_null() {
            // SAFETY: our Plugin.
            let plugin = unsafe { &*(userdata as *const Plugin) };
            let now = Instant::now();
            for outcome in plugin.deferred_reloads() {
                reloaded(outcome);
            }
            if let Some(outcome) = plugin.reload_if_changed(now) {
                reloaded(outcome);
            }
            if let Some(stats) = plugin.stats_due(now) {
                log(
                    MOSQ_LOG_INFO,
                    &format!("{stats}; {} sensors with a session now", plugin.sessions()),
                );
            }
        }
        MOSQ_ERR_SUCCESS
    })
}

unsafe extern "C" fn on_reload(_event: c_int, _event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    contained("reload", MOSQ_ERR_SUCCESS, || {
        if !userdata.is_null() {
            // SAFETY: our Plugin.
            let plugin = unsafe { &*(userdata as *const Plugin) };
            reloaded(plugin.reload());
        }
        MOSQ_ERR_SUCCESS
    })
}

static IDENTIFIER: Mutex<usize> = Mutex::new(0);
/// The mode the plugin was loaded in (which callbacks it registered).
static MODE: Mutex<Mode> = Mutex::new(Mode::Auth);

/// Loads the keys (`plugin_opt_keys_dir`) and registers the callbacks.
///
/// # Safety
/// Called once by mosquitto with its plugin identifier, a writable `userdata`
/// slot and `option_count` options.
#[no_mangle]
pub unsafe extern "C" fn mosquitto_plugin_init(
    identifier: *mut c_void,
    userdata: *mut *mut c_void,
    options: *mut MosquittoOpt,
    option_count: c_int,
) -> c_int {
    contained("init", MOSQ_ERR_INVAL, || {
        // Panic containment is this plugin's promise to the broker; a build
        // whose panics abort (the workspace's dev and release profiles)
        // cannot keep it, so it does not load at all.
        if cfg!(panic = "abort") {
            log(
                MOSQ_LOG_ERR,
                "this build aborts on panic; build it with `cargo build -p mosquitto-kem-plugin --profile plugin`",
            );
            return MOSQ_ERR_INVAL;
        }
        // SAFETY: mosquitto's option array.
        let opts = match Options::parse(unsafe { self::options(options, option_count) }) {
            Ok(o) => o,
            Err(e) => {
                log(MOSQ_LOG_ERR, &e);
                return MOSQ_ERR_INVAL;
            }
        };
        if opts.mode == Mode::TopicGuard {
            log(
                MOSQ_LOG_INFO,
                "topic mode: the kem-mqtt/ topics are refused to client ids with '/'",
            );
            // SAFETY: mosquitto's identifier; topic mode has no userdata.
            return unsafe { register(identifier, Mode::TopicGuard, std::ptr::null_mut()) };
        }
        let dir = opts.keys_dir.clone();
        let limits = opts.limits;
        let plugin = match Plugin::load(opts) {
            Ok(p) => p,
            Err(e) => {
                log(MOSQ_LOG_ERR, &format!("{dir}: {e}"));
                return MOSQ_ERR_INVAL;
            }
        };
        log(
            MOSQ_LOG_INFO,
            &format!("{} registered clients from {dir}; limits {limits:?}", plugin.clients()),
        );
        if let Some(at) = plugin.metrics_addr() {
            log(MOSQ_LOG_INFO, &format!("metrics on http://{at}/metrics"));
        }
        let ptr = Box::into_raw(Box::new(plugin)) as *mut c_void;
        // SAFETY: out-pointer and identifier from mosquitto; `ptr` is our Plugin.
        unsafe {
            *userdata = ptr;
            register(identifier, Mode::Auth, ptr)
        }
    })
}

/// Registers the callbacks of `mode` with `ptr` as their userdata, and
/// remembers the identifier and the mode for [`mosquitto_plugin_cleanup`].
///
/// # Safety
/// `identifier` is mosquitto's for this plugin; `ptr` is what the callbacks
/// of `mode` expect (our `Plugin`, or null in topic mode).
unsafe fn register(identifier: *mut c_void, mode: Mode, ptr: *mut c_void) -> c_int {
    *IDENTIFIER.lock().unwrap_or_else(|e| e.into_inner()) = identifier as usize;
    *MODE.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    for (event, cb, data) in callbacks(mode) {
        // SAFETY: per the contract.
        let rc = unsafe { mosquitto_callback_register(identifier, event, cb, data, ptr) };
        if rc != MOSQ_ERR_SUCCESS {
            return rc;
        }
    }
    MOSQ_ERR_SUCCESS
}

const AUTH_METHOD_C: &CStr = c"KEM-MQTT/1";

/// (event, callback, event data) of `mode`: the authentication callbacks
/// are registered for our method only; topic mode has the access check alone.
fn callbacks(mode: Mode) -> Vec<(c_int, Callback, *const c_void)> {
    if mode == Mode::TopicGuard {
        return vec![(MOSQ_EVT_ACL_CHECK, on_acl_check, std::ptr::null())];
    }
    let method = AUTH_METHOD_C.as_ptr() as *const c_void;
    vec![
        (MOSQ_EVT_RELOAD, on_reload, std::ptr::null()),
        (MOSQ_EVT_ACL_CHECK, on_acl_check, std::ptr::null()),
        (MOSQ_EVT_EXT_AUTH_START, on_auth, method),
        (MOSQ_EVT_EXT_AUTH_CONTINUE, on_auth, method),
        (MOSQ_EVT_DISCONNECT, on_disconnect, std::ptr::null()),
        (MOSQ_EVT_MESSAGE, on_message, std::ptr::null()),
        (MOSQ_EVT_TICK, on_tick, std::ptr::null()),
    ]
}

/// Unregisters the callbacks and frees the state.
///
/// # Safety
/// Called once by mosquitto with the `userdata` set by [`mosquitto_plugin_init`].
#[no_mangle]
pub unsafe extern "C" fn mosquitto_plugin_cleanup(
    userdata: *mut c_void,
    _options: *mut MosquittoOpt,
    _option_count: c_int,
) -> c_int {
    contained("cleanup", MOSQ_ERR_SUCCESS, || {
        let identifier = *IDENTIFIER.lock().unwrap_or_else(|e| e.into_inner()) as *mut c_void;
        let mode = *MODE.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the identifier and callbacks registered in init; userdata
        // is our Box (null in topic mode).
        unsafe {
            for (event, cb, data) in callbacks(mode) {
                mosquitto_callback_unregister(identifier, event, cb, data);
            }
            if !userdata.is_null() {
                drop(Box::from_raw(userdata as *mut Plugin));
            }
        }
        MOSQ_ERR_SUCCESS
    })
}

#[cfg(test)]
mod tests {
    // The FFI layer needs mosquitto's symbols and is tested against the real
    // broker (tests/); the decisions are tested here through `Plugin`.
    use super::*;
    use kem_mqtt::{SensorHandshake, Suite, SuiteSet, MAX_CLIENT_HELLO_LEN};
    use kem_mqtt_host::provision::{generate_broker, provision_sensor};
    use kem_mqtt_host::OsRng;

    fn plugin(ids: &[&str], limits: &str) -> (Plugin, Vec<kem_mqtt_host::keys::SensorKeys>, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("kem-plugin-unit-{}-{}", std::process::id(), ids.join("-")));
        std::fs::create_dir_all(&dir).unwrap();
        let suite = Suite::from_name("ctru-light-ascon+x25519").unwrap();
        let secrets = generate_broker(&[suite.kem()], &mut OsRng);
        let mut registry = kem_mqtt_host::keys::Registry::default();
        let keys = ids
            .iter()
            .map(|id| {
                provision_sensor(
                    &secrets,
                    &mut registry,
                    id,
                    suite,
                    SuiteSet::EMPTY.with(suite),
                    &mut OsRng,
                )
                .unwrap()
            })
            .collect();
        secrets.save(&dir.join("broker-key.json")).unwrap();
        registry.save(&dir.join("registry.json")).unwrap();
        let d = dir.to_str().unwrap();
        let opts = Options::parse([("keys_dir", d), ("limit_per_id", limits), ("limit_per_source", limits)]).unwrap();
        (Plugin::load(opts).unwrap(), keys, dir)
    }

    fn hello(keys: &kem_mqtt_host::keys::SensorKeys) -> (Vec<u8>, kem_mqtt::AwaitBrokerHello<'_>) {
        let mut buf = vec![0u8; MAX_CLIENT_HELLO_LEN];
        let (state, n) = SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf).unwrap();
        buf.truncate(n);
        (buf, state)
    }

    /// A connection whose username is its client id (as for a sensor the
    /// plugin authenticated, or an application account of that name).
    fn conn(key: usize, client_id: &str) -> Connection<'_> {
        Connection {
            key,
            client_id: Some(client_id),
            username: Some(client_id),
            address: Some(IpAddr::from([127, 0, 0, 1])),
        }
    }

    #[test]
    fn the_hello_must_name_the_client_id_and_success_names_the_identity() {
        let (p, keys, dir) = plugin(&["alice", "mallory"], "off");
        let now = Instant::now();
        // mallory's own hello on a connection whose client id is alice.
        let (ch, _) = hello(&keys[1]);
        assert!(matches!(
            p.start(&conn(1, "alice"), Some("KEM-MQTT/1"), &ch, now),
            Outcome::Refuse(Refusal::ClientIdMismatch { .. })
        ));
        assert_eq!(p.pending(), 0, "refused before any handshake state");
        // The honest case.
        let (ch, state) = hello(&keys[0]);
        let Outcome::Continue(bh) = p.start(&conn(2, "alice"), Some("KEM-MQTT/1"), &ch, now) else {
            panic!("honest hello refused")
        };
        let mut cf = vec![0u8; 64];
        let (_, n) = state.receive_broker_hello(&bh, &mut cf).unwrap();
        assert_eq!(
            p.continue_auth(&conn(2, "alice"), None, &cf[..n], now),
            Outcome::Success {
                identity: "alice".into()
            }
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn records_open_only_for_their_sensor_and_commands_are_sealed_to_it() {
        let (p, keys, dir) = plugin(&["alice", "bob"], "off");
        let (alice, bob, app) = (conn(1, "alice"), conn(2, "bob"), conn(3, "dashboard"));
        let (ch, state) = hello(&keys[0]);
        let Outcome::Continue(bh) = p.start(&alice, Some("KEM-MQTT/1"), &ch, Instant::now()) else {
            panic!("honest hello refused")
        };
        let mut cf = vec![0u8; 64];
        let (mut session, n) = state.receive_broker_hello(&bh, &mut cf).unwrap();
        assert!(matches!(
            p.continue_auth(&alice, None, &cf[..n], Instant::now()),
            Outcome::Success { .. }
        ));
        assert_eq!(p.sessions(), 1);

        let topic = "kem-mqtt/data/c2b/alice/t";
        let mut rec = [0u8; 64];
        let n = session.seal(topic.as_bytes(), b"21.5", &mut rec).unwrap();
        let record = &rec[..n];
        // Another connection, even one claiming alice's id, cannot use alice's session.
        assert_eq!(p.message(&bob, topic, record), Message::Dropped(Undelivered::Foreign));
        assert_eq!(
            p.message(&conn(9, "alice"), topic, record),
            Message::Dropped(Undelivered::NoSession)
        );
        assert_eq!(
            p.message(&alice, topic, record),
            Message::PassAndPublish {
                to: None,
                topic: "plain/alice/t".into(),
                payload: b"21.5".to_vec()
            }
        );
        assert_eq!(
            p.message(&alice, topic, record),
            Message::Dropped(Undelivered::Record(kem_mqtt::Error::RecordReplayed))
        );
        // Moved to another subtopic: the topic is bound.
        let n = session.seal(topic.as_bytes(), b"21.6", &mut rec).unwrap();
        assert_eq!(
            p.message(&alice, "kem-mqtt/data/c2b/alice/u", &rec[..n]),
            Message::Dropped(Undelivered::Record(kem_mqtt::Error::RecordAuthFailed))
        );
        // A command: sealed for alice alone, on her b2c topic, and it opens there.
        let Message::PassAndPublish {
            to: Some(to),
            topic: sealed,
            payload,
        } = p.message(&app, "cmd/alice/led", b"on")
        else {
            panic!("command not sealed")
        };
        assert_eq!((to.as_str(), sealed.as_str()), ("alice", "kem-mqtt/data/b2c/alice/led"));
        let mut pt = [0u8; 8];
        let m = session.open(sealed.as_bytes(), &payload, &mut pt).unwrap();
        assert_eq!(&pt[..m], b"on");
        assert_eq!(
            p.message(&app, "cmd/bob/led", b"on"),
            Message::Dropped(Undelivered::CommandNoSession)
        );
        // A sensor never writes readings or sealed commands; other clients
        // are the ACL's to allow (a topic-mode gateway does).
        assert_eq!(p.message(&alice, "plain/alice/t", b"x"), Message::Refuse);
        assert_eq!(p.message(&alice, "kem-mqtt/data/b2c/alice", b"x"), Message::Refuse);
        assert_eq!(p.message(&app, "plain/alice/t", b"x"), Message::Pass);
        assert_eq!(p.message(&app, "sensors/x", b"x"), Message::Pass);
        // The connection ends: the session goes; a take-over's old
        // connection leaving does not remove the new one's.
        p.disconnect(&conn(9, "alice"));
        assert_eq!(p.sessions(), 1);
        p.disconnect(&alice);
        assert_eq!(p.sessions(), 0);
        assert_eq!(
            p.message(&app, "cmd/alice/led", b"on"),
            Message::Dropped(Undelivered::CommandNoSession)
        );
        let stats = p.delivery_stats();
        assert_eq!(
            (
                stats.delivered,
                stats.replayed,
                stats.rejected,
                stats.foreign,
                stats.commands
            ),
            (1, 1, 1, 2, 1)
        );
        assert_eq!((stats.commands_dropped, stats.refused), (2, 2));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn rate_limited_hellos_are_refused_before_any_handshake_state() {
        let (p, keys, dir) = plugin(&["bob"], "2/60s");
        let now = Instant::now();
        let (ch, _) = hello(&keys[0]);
        for i in 0..2 {
            assert!(matches!(
                p.start(&conn(i, "bob"), Some("KEM-MQTT/1"), &ch, now),
                Outcome::Continue(_)
            ));
        }
        assert!(matches!(
            p.start(&conn(9, "bob"), Some("KEM-MQTT/1"), &ch, now),
            Outcome::Refuse(Refusal::RateLimited(_))
        ));
        assert_eq!(p.pending(), 2);
        // Abandoned handshakes expire.
        let (ch2, _) = hello(&keys[0]);
        let later = now + std::time::Duration::from_secs(120);
        assert!(matches!(
            p.start(&conn(10, "bob"), Some("KEM-MQTT/1"), &ch2, later),
            Outcome::Continue(_)
        ));
        assert_eq!(p.pending(), 1, "the two abandoned handshakes were dropped");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
