//! Compiles the sensor's keys and policy in.
//!
//! - Keys (feature `provisioned`): the key file `kem-mqtt provision` wrote
//!   for this sensor, named by `KEM_MQTT_SENSOR_KEY`, becomes
//!   `$OUT_DIR/sensor_key.rs`; the library checks at compile time that its
//!   suite is the one this build compiles (`src/keys.rs`). The keys then live
//!   in the image (and in `target/`): treat both as secret.
//! - Policy: `SENSOR_APP_POLICY=<interval s>,<records>,<seconds>` or
//!   `avr_wire::app::Policy::DEFAULT`; the library checks the bounds.
//! - On a classic part with 8 KB of SRAM or less, keys copied into SRAM
//!   leave too little for the handshake: the build asks for `keys-in-flash`.

use std::fmt::Write as _;
use std::path::PathBuf;

const KEY_VAR: &str = "KEM_MQTT_SENSOR_KEY";
const POLICY_VAR: &str = "SENSOR_APP_POLICY";

fn main() {
    println!("cargo::rerun-if-env-changed={KEY_VAR}");
    println!("cargo::rerun-if-env-changed={POLICY_VAR}");
    // The part (`target-cpu`): the keys-in-flash check and the part's symbol.
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let on = |f: &str| std::env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_"))).is_some();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // Only the AVR build has code (elsewhere the crate is empty).
    let avr = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("avr");
    let result = (|| {
        if avr && on("provisioned") {
            require_keys_in_flash_where_sram_is_small(on("keys-in-flash"))?;
            let code = key_code()?;
            write(&out.join("sensor_key.rs"), &code)?;
        }
        write(&out.join("sensor_policy.rs"), &policy_code()?)?;
        write(&out.join("sensor_mcu.rs"), &mcu_code())
    })();
    if let Err(e) = result {
        // Cargo prints this as the build's error, without a backtrace.
        println!("cargo::error={e}");
    }
}

fn write(path: &std::path::Path, text: &str) -> Result<(), String> {
    // Rewritten only when it changes, so that cargo does not rebuild for nothing.
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A classic AVR does not map its flash into the data space: keys in a
/// `static` are copied to SRAM at start-up, which a part of 8 KB or less
/// cannot spare beside the handshake.
fn require_keys_in_flash_where_sram_is_small(keys_in_flash: bool) -> Result<(), String> {
    if keys_in_flash {
        return Ok(());
    }
    let Some(part) = avr_asm_build::target_cpu().as_deref().and_then(avr_asm_build::mcu) else {
        return Ok(());
    };
    if part.family == avr_mcu::Family::Classic && part.is_small_sram() {
        return Err(format!(
            "kem-mqtt-sensor on the {}: its {} B of SRAM cannot hold a copy of the sensor's keys beside the \
             handshake; turn on the feature `keys-in-flash` (the KEMs then read the keys from program memory)",
            part.name, part.sram
        ));
    }
    Ok(())
}

/// `sensor_key.rs`: the key file's suite and fields as constants.
fn key_code() -> Result<String, String> {
    let path = std::env::var_os(KEY_VAR).map(PathBuf::from).ok_or_else(|| {
        format!(
            "{KEY_VAR} is not set: name this sensor's key file, e.g. `kem-mqtt provision --dir keys --client avr-1 \
             --suite ctru-light-ascon+x25519`, then build with {KEY_VAR}=keys/sensor-avr-1.json"
        )
    })?;
    println!("cargo::rerun-if-changed={}", path.display());
    let shown = path.display();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{KEY_VAR}={shown}: {e}"))?;
    let file: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{shown}: not JSON: {e}"))?;
    let field = |name: &str| {
        file.get(name)
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("{shown}: no `{name}` (a `kem-mqtt provision` sensor key file?)"))
    };
    if field("format")? != "kem-mqtt/sensor-key" {
        return Err(format!(
            "{shown}: not a sensor key file (its `format` is not kem-mqtt/sensor-key)"
        ));
    }
    let mut out = String::new();
    let suite = field("suite")?;
    let id = field("client_id")?;
    writeln!(out, "/// The suite of the key file (`kem-mqtt provision --suite`).").unwrap();
    writeln!(out, "pub(crate) const KEY_SUITE: &str = {suite:?};").unwrap();
    writeln!(out, "/// The sensor's client id, as enrolled with the broker.").unwrap();
    writeln!(out, "pub(crate) const KEY_CLIENT_ID: &[u8] = b{id:?};").unwrap();
    for (name, json) in [
        ("KEY_KEM_SK", "kem_sk"),
        ("KEY_X25519_SK", "x25519_sk"),
        ("KEY_BROKER_KEM_PK", "broker_kem_pk"),
        ("KEY_BROKER_X25519_PK", "broker_x25519_pk"),
    ] {
        // Constant time (base16ct): two of these fields are secret keys.
        let bytes = base16ct::mixed::decode_vec(field(json)?).map_err(|e| format!("{shown}: `{json}`: {e}"))?;
        writeln!(out, "pub(crate) const {name}: &[u8] = &{bytes:?};").unwrap();
    }
    Ok(out)
}

/// `sensor_mcu.rs`: the part this build is for, as an absolute symbol
/// (`__kem_mqtt_sensor_mcu_<part>`, no byte of flash or SRAM) that a runner
/// reads from the ELF (`avr-nm`), so the part is one setting: `target-cpu`;
/// and, for a part `avr-mcu` knows, avrdude's usual programmer for its
/// boards (`__kem_mqtt_sensor_programmer_<id>`: an Arduino bootloader or
/// UPDI), which the runner flashes a board with unless told otherwise.
fn mcu_code() -> String {
    let part = avr_asm_build::target_cpu().unwrap_or_default();
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return String::new();
    }
    let symbol = |name: String| format!("core::arch::global_asm!(\".global {name}\", \".set {name}, 0\");\n");
    let mut code = symbol(format!("__kem_mqtt_sensor_mcu_{part}"));
    if let Some(facts) = avr_asm_build::mcu(&part) {
        code.push_str(&symbol(format!("__kem_mqtt_sensor_programmer_{}", facts.programmer)));
    }
    code
}

/// `sensor_policy.rs`: the application's `avr_wire::app::Policy`.
fn policy_code() -> Result<String, String> {
    let Ok(v) = std::env::var(POLICY_VAR) else {
        return Ok("avr_wire::app::Policy::DEFAULT".into());
    };
    let n = v
        .split(',')
        .map(|f| f.trim().parse::<u32>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| format!("{POLICY_VAR}={v}: not three numbers"))?;
    let [interval, records, seconds] = n[..] else {
        return Err(format!("{POLICY_VAR}={v}: <interval s>,<records>,<seconds>"));
    };
    Ok(format!(
        "avr_wire::app::Policy {{ interval_s: {interval}, rekey_records: {records}, rekey_s: {seconds} }}"
    ))
}
