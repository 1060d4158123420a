//! Compiles the sensor's keys in: the key file `kem-mqtt provision` wrote
//! for this sensor (`KEM_MQTT_SENSOR_KEY=path/to/sensor-ID.json`), turned
//! into `$OUT_DIR/sensor_keys.rs`. The keys then live in the image (and in
//! `target/`): treat both as secret.

use std::fmt::Write as _;
use std::path::PathBuf;

/// The suite the Cargo features compile (`src/main.rs`'s `SUITE`).
const SUITE: &str = "ctru-light-ascon+x25519";
const VAR: &str = "KEM_MQTT_SENSOR_KEY";

fn main() {
    println!("cargo:rerun-if-env-changed={VAR}");
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
             `kem-mqtt provision --dir keys --client avr-1 --suite {SUITE}` then \
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
    if suite != SUITE {
        return Err(format!(
            "{}: the key file is for {suite}; this firmware is built for {SUITE} \
             (Cargo.toml's kem-mqtt features, src/main.rs's SUITE)",
            path.display()
        ));
    }
    let id = field("client_id")?;
    let mut out = String::new();
    writeln!(out, "/// The sensor's client id, as enrolled with the broker.").unwrap();
    writeln!(out, "const CLIENT_ID: &[u8] = b{id:?};").unwrap();
    for (name, json) in [
        ("KEM_SK", "kem_sk"),
        ("X25519_SK", "x25519_sk"),
        ("BROKER_KEM_PK", "broker_kem_pk"),
        ("BROKER_X25519_PK", "broker_x25519_pk"),
    ] {
        // Constant time (base16ct): two of these fields are secret keys.
        let bytes = base16ct::mixed::decode_vec(field(json)?).map_err(|e| format!("{}: `{json}`: {e}", path.display()))?;
        writeln!(out, "static {name}: [u8; {}] = {bytes:?};", bytes.len()).unwrap();
    }
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?).join("sensor_keys.rs");
    std::fs::write(&dest, out).map_err(|e| format!("{}: {e}", dest.display()))
}
