//! Test-only fault injection (cargo feature `fault-injection`, never a
//! default): panics inside the plugin on demand, so the tests can show that
//! mosquitto survives a panic in any callback. Enabled by the options
//! `plugin_opt_fault_panic_start_id ID` (panic while handling a ClientHello
//! for `ID`, with the pending-handshake lock held, so that lock is poisoned)
//! and `plugin_opt_fault_panic_disconnect_id ID` (panic when the connection
//! whose client id is `ID` goes away). A build without the feature refuses
//! these options (unknown option), so a production broker cannot be told to
//! panic.

/// Which client ids make the plugin panic.
#[derive(Debug, Default)]
pub struct Faults {
    start_id: Option<String>,
    disconnect_id: Option<String>,
}

impl Faults {
    /// Takes a fault option; false if `key` is not one.
    pub fn set(&mut self, key: &str, value: &str) -> bool {
        match key {
            "fault_panic_start_id" => self.start_id = Some(value.to_string()),
            "fault_panic_disconnect_id" => self.disconnect_id = Some(value.to_string()),
            _ => return false,
        }
        true
    }

    /// Called with the pending-handshake lock held, after the handshake
    /// state was created (so its secrets are dropped by the unwinding).
    pub fn on_start(&self, client_id: &[u8]) {
        if self.start_id.as_deref().map(str::as_bytes) == Some(client_id) {
            panic!("fault injection: panic in EXT_AUTH_START");
        }
    }

    /// Called from the DISCONNECT callback.
    pub fn on_disconnect(&self, client_id: Option<&str>) {
        if client_id.is_some() && self.disconnect_id.as_deref() == client_id {
            panic!("fault injection: panic in DISCONNECT");
        }
    }
}
