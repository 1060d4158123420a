//! Compiles the sensor's keys in: the key file `kem-mqtt provision` wrote
//! for this sensor (`KEM_MQTT_SENSOR_KEY=path/to/sensor-ID.json`), turned
//! into `$OUT_DIR/sensor_keys.rs`. The keys then live in the image (and in
//! `target/`): treat both as secret. The key file also names the suite
//! (`kem-mqtt provision --suite`): the firmware is built for that one
//! (`SUITE_NAME`, and `cfg(hybrid)` for a hybrid suite's X25519 code);
//! `src/main.rs` refuses to build if Cargo.toml's `kem-mqtt` features do
//! not compile it in.

use std::fmt::Write as _;
use std::path::PathBuf;

/// The suite of the README's example command.
const EXAMPLE_SUITE: &str = "ctru-light-ascon+x25519";
/// How KEM-MQTT names a hybrid suite (`kem_mqtt::Suite::name`);
/// `src/main.rs` checks this build's `cfg(hybrid)` against the suite.
const HYBRID_SUFFIX: &str = "+x25519";
const VAR: &str = "KEM_MQTT_SENSOR_KEY";

fn main() {
    println!("cargo:rerun-if-env-changed={VAR}");
    println!("cargo::rustc-check-cfg=cfg(hybrid)");
    if let Err(e) = run() {
        // A build-script panic prints this as the failure's cause.
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let path = std::env::var_os(VAR).map(PathBuf::from).ok_or_else(|| {
        format!(
            "{VAR} is not set: name this sensor's key file, e.g. \
             `kem-mqtt provision --dir keys --client avr-1 --suite {EXAMPLE_SUITE}` then \
             `{VAR}=keys/sensor-avr-1.json cargo run --release` (README.md)"
        )
    })?;
    println!("cargo:rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{VAR}={}: {e}", path.display()))?;
    let file: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let field = |name: &str| {
        file.get(name).and_then(|v| v.as_str()).ok_or_else(|| {
            format!(
                "{}: no `{name}` (a `kem-mqtt provision` sensor key file?)",
                path.display()
            )
        })
    };
    if field("format")? != "kem-mqtt/sensor-key" {
        return Err(format!(
            "{}: not a sensor key file (its `format` is not kem-mqtt/sensor-key)",
            path.display()
        ));
    }
    let suite = field("suite")?;
    let hybrid = suite.ends_with(HYBRID_SUFFIX);
    if hybrid {
        println!("cargo::rustc-cfg=hybrid");
    }
    let id = field("client_id")?;
    let mut out = String::new();
    writeln!(out, "/// The suite the key file is for (`kem-mqtt provision --suite`).").unwrap();
    writeln!(out, "const SUITE_NAME: &str = {suite:?};").unwrap();
    writeln!(out, "/// The sensor's client id, as enrolled with the broker.").unwrap();
    writeln!(out, "const CLIENT_ID: &[u8] = b{id:?};").unwrap();
    for (name, json) in [
        ("KEM_SK", "kem_sk"),
        ("X25519_SK", "x25519_sk"),
        ("BROKER_KEM_PK", "broker_kem_pk"),
        ("BROKER_X25519_PK", "broker_x25519_pk"),
    ] {
        // The broker's X25519 key serves a hybrid handshake only (the
        // sensor's own X25519 key also seeds its randomness tape).
        if name == "BROKER_X25519_PK" && !hybrid {
            continue;
        }
        // Constant time (base16ct): two of these fields are secret keys.
        let bytes = base16ct::mixed::decode_vec(field(json)?).map_err(|e| format!("{}: `{json}`: {e}", path.display()))?;
        writeln!(out, "static {name}: [u8; {}] = {bytes:?};", bytes.len()).unwrap();
    }
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?).join("sensor_keys.rs");
    std::fs::write(&dest, out).map_err(|e| format!("{}: {e}", dest.display()))
}
