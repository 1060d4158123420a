//! Shared by the integration tests: where the plugin library is, built on
//! demand (`cargo test` alone does not produce the cdylib), and the broker
//! configuration that loads it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

static BUILD: Mutex<()> = Mutex::new(());

/// `target/<profile>/libmosquitto_kem_plugin.so`, built first if missing.
pub fn plugin_path() -> PathBuf {
    // target/<profile>/deps/<test> → target/<profile>/libmosquitto_kem_plugin.so
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .to_path_buf();
    let path = profile_dir.join("libmosquitto_kem_plugin.so");
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if !path.exists() {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "mosquitto-kem-plugin"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        if let Some(target_dir) = profile_dir.parent() {
            cmd.arg("--target-dir").arg(target_dir);
        }
        let status = cmd.status().expect("cargo runs");
        assert!(status.success(), "building the plugin failed");
    }
    assert!(path.exists(), "plugin not built at {}", path.display());
    path
}

/// Debian's broker (package `mosquitto`).
pub const MOSQUITTO: &str = "/usr/sbin/mosquitto";

/// Writes `dir/mosquitto.conf` for one loopback listener on a free port
/// (returned) with this plugin reading its keys from `dir`.
pub fn write_broker_config(dir: &Path) -> u16 {
    assert!(
        Path::new(MOSQUITTO).exists(),
        "{MOSQUITTO} is missing: install the Debian packages `mosquitto` and `mosquitto-dev` (cargo xtask setup)"
    );
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    std::fs::write(
        dir.join("mosquitto.conf"),
        format!(
            "user root\nper_listener_settings false\nallow_anonymous true\nlistener {port} 127.0.0.1\n\
             plugin {}\nplugin_opt_keys_dir {}\nlog_dest none\n",
            plugin_path().display(),
            dir.display()
        ),
    )
    .unwrap();
    port
}
