#![deny(missing_docs)]
//! A mosquitto 2 plugin (plugin API version 5) that runs the broker side of
//! KEM-MQTT/1 inside MQTT v5 enhanced authentication:
//!
//! - `MOSQ_EVT_EXT_AUTH_START`: CONNECT's Authentication Data is the
//!   ClientHello; the plugin answers with the BrokerHello in AUTH (0x18);
//! - `MOSQ_EVT_EXT_AUTH_CONTINUE`: the ClientFinished; success gives CONNACK
//!   0x00, any failure CONNACK 0x87 (Not authorized);
//! - another authentication method: `MOSQ_ERR_NOT_SUPPORTED`, which
//!   mosquitto answers with CONNACK 0x8C (Bad authentication method).
//!
//! Configuration (`mosquitto.conf`):
//!
//! ```text
//! plugin /path/to/libmosquitto_kem_plugin.so
//! plugin_opt_keys_dir /path/with/broker-key.json/and/registry.json
//! ```
//!
//! Built against the structures of Debian's `mosquitto-dev` 2.0
//! (`mosquitto_broker.h`, `mosquitto_plugin.h`); the symbols it calls
//! (`mosquitto_callback_register`, `mosquitto_malloc`, …) are resolved from
//! the broker executable when it loads the plugin.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::sync::Mutex;

use kem_mqtt::{AwaitClientFinished, BrokerHandshake, AUTH_METHOD, MAX_BROKER_HELLO_LEN};
use kem_mqtt_host::keys::{BrokerSecrets, BrokerState, Registry};
use rand_core::OsRng;

const MOSQ_ERR_AUTH_CONTINUE: c_int = -4;
const MOSQ_ERR_SUCCESS: c_int = 0;
const MOSQ_ERR_INVAL: c_int = 3;
const MOSQ_ERR_NOT_SUPPORTED: c_int = 10;
const MOSQ_ERR_AUTH: c_int = 11;
const MOSQ_EVT_EXT_AUTH_START: c_int = 4;
const MOSQ_EVT_EXT_AUTH_CONTINUE: c_int = 5;
const MOSQ_EVT_DISCONNECT: c_int = 10;

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
}

/// The plugin's state: keys, registry and the handshakes awaiting ClientFinished.
pub struct Plugin {
    state: BrokerState,
    pending: Mutex<HashMap<usize, AwaitClientFinished>>,
}

/// What one authentication event decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Send this AUTH data and continue.
    Continue(Vec<u8>),
    /// Authenticated.
    Success,
    /// Refuse (CONNACK 0x87).
    Refuse,
    /// Not our method (CONNACK 0x8C).
    NotSupported,
}

impl Plugin {
    /// Loads `broker-key.json` and `registry.json` from `dir`.
    pub fn load(dir: &Path) -> Result<Plugin, String> {
        let secrets = BrokerSecrets::load(&dir.join("broker-key.json")).map_err(|e| e.to_string())?;
        let registry = Registry::load_or_empty(&dir.join("registry.json")).map_err(|e| e.to_string())?;
        Ok(Plugin {
            state: BrokerState { secrets, registry },
            pending: Mutex::new(HashMap::new()),
        })
    }

    /// `MOSQ_EVT_EXT_AUTH_START` for connection `client` (any unique key).
    pub fn start(&self, client: usize, method: Option<&str>, data: &[u8]) -> Outcome {
        if method != Some(AUTH_METHOD) {
            return Outcome::NotSupported;
        }
        let mut buf = vec![0u8; MAX_BROKER_HELLO_LEN];
        match BrokerHandshake::accept(&self.state, data, &mut OsRng, &mut buf) {
            Ok((pending, n)) => {
                if let Ok(mut p) = self.pending.lock() {
                    p.insert(client, pending);
                }
                buf.truncate(n);
                Outcome::Continue(buf)
            }
            Err(_) => Outcome::Refuse,
        }
    }

    /// `MOSQ_EVT_EXT_AUTH_CONTINUE` for connection `client`.
    pub fn continue_auth(&self, client: usize, method: Option<&str>, data: &[u8]) -> Outcome {
        let pending = self.pending.lock().ok().and_then(|mut p| p.remove(&client));
        // mosquitto 2.0 passes no method on CONTINUE; the pending handshake identifies ours.
        if method.is_some_and(|m| m != AUTH_METHOD) {
            return Outcome::NotSupported;
        }
        match pending.map(|p| p.receive_client_finished(data)) {
            Some(Ok(_session)) => Outcome::Success,
            _ => Outcome::Refuse,
        }
    }

    /// Forgets a connection's pending handshake.
    pub fn disconnect(&self, client: usize) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&client);
        }
    }
}

unsafe fn opt_value(options: *mut MosquittoOpt, count: c_int, key: &str) -> Option<String> {
    if options.is_null() || count <= 0 {
        return None;
    }
    // SAFETY: mosquitto passes `count` valid options.
    let opts = unsafe { std::slice::from_raw_parts(options, count as usize) };
    opts.iter().find_map(|o| {
        if o.key.is_null() || o.value.is_null() {
            return None;
        }
        // SAFETY: NUL-terminated strings owned by mosquitto.
        let (k, v) = unsafe { (CStr::from_ptr(o.key), CStr::from_ptr(o.value)) };
        (k.to_str().ok() == Some(key)).then(|| v.to_string_lossy().into_owned())
    })
}

/// Plugin API negotiation: we implement version 5.
///
/// # Safety
/// Called by mosquitto with `count` readable entries at `versions`.
#[no_mangle]
pub unsafe extern "C" fn mosquitto_plugin_version(count: c_int, versions: *const c_int) -> c_int {
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
    let method = if ev.auth_method.is_null() {
        None
    } else {
        // SAFETY: NUL-terminated string owned by mosquitto.
        unsafe { CStr::from_ptr(ev.auth_method) }.to_str().ok()
    };
    let data: &[u8] = if ev.data_in.is_null() {
        &[]
    } else {
        // SAFETY: mosquitto passes data_in_len bytes.
        unsafe { std::slice::from_raw_parts(ev.data_in as *const u8, ev.data_in_len as usize) }
    };
    let client = ev.client as usize;
    let outcome = if event == MOSQ_EVT_EXT_AUTH_START {
        plugin.start(client, method, data)
    } else {
        plugin.continue_auth(client, method, data)
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
        Outcome::Success => MOSQ_ERR_SUCCESS,
        Outcome::Refuse => MOSQ_ERR_AUTH,
        Outcome::NotSupported => MOSQ_ERR_NOT_SUPPORTED,
    }
}

unsafe extern "C" fn on_auth(event: c_int, event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    // SAFETY: forwarded from mosquitto.
    std::panic::catch_unwind(|| unsafe { auth_event(event, event_data, userdata) }).unwrap_or(MOSQ_ERR_AUTH)
}

unsafe extern "C" fn on_disconnect(_event: c_int, event_data: *mut c_void, userdata: *mut c_void) -> c_int {
    if !event_data.is_null() && !userdata.is_null() {
        // SAFETY: as in auth_event.
        let (plugin, ev) = unsafe { (&*(userdata as *const Plugin), &*(event_data as *const EvtDisconnect)) };
        plugin.disconnect(ev.client as usize);
    }
    MOSQ_ERR_SUCCESS
}

static IDENTIFIER: Mutex<usize> = Mutex::new(0);

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
    // SAFETY: mosquitto's option array.
    let Some(dir) = (unsafe { opt_value(options, option_count, "keys_dir") }) else {
        eprintln!("mosquitto-kem-plugin: plugin_opt_keys_dir is required");
        return MOSQ_ERR_INVAL;
    };
    let plugin = match Plugin::load(Path::new(&dir)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mosquitto-kem-plugin: {dir}: {e}");
            return MOSQ_ERR_INVAL;
        }
    };
    let ptr = Box::into_raw(Box::new(plugin)) as *mut c_void;
    // SAFETY: out-pointer from mosquitto; callbacks registered with our identifier.
    unsafe {
        *userdata = ptr;
        for (event, cb, data) in callbacks() {
            let rc = mosquitto_callback_register(identifier, event, cb, data, ptr);
            if rc != MOSQ_ERR_SUCCESS {
                return rc;
            }
        }
    }
    if let Ok(mut id) = IDENTIFIER.lock() {
        *id = identifier as usize;
    }
    MOSQ_ERR_SUCCESS
}

const AUTH_METHOD_C: &[u8] = b"KEM-MQTT/1\0";

/// (event, callback, event data): the authentication callbacks are registered for our method only.
fn callbacks() -> [(c_int, Callback, *const c_void); 3] {
    let method = AUTH_METHOD_C.as_ptr() as *const c_void;
    [
        (MOSQ_EVT_EXT_AUTH_START, on_auth, method),
        (MOSQ_EVT_EXT_AUTH_CONTINUE, on_auth, method),
        (MOSQ_EVT_DISCONNECT, on_disconnect, std::ptr::null()),
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
    let identifier = IDENTIFIER.lock().map(|id| *id).unwrap_or(0) as *mut c_void;
    // SAFETY: the identifier and callbacks registered in init; userdata is our Box.
    unsafe {
        for (event, cb, data) in callbacks() {
            mosquitto_callback_unregister(identifier, event, cb, data);
        }
        if !userdata.is_null() {
            drop(Box::from_raw(userdata as *mut Plugin));
        }
    }
    MOSQ_ERR_SUCCESS
}
