//! Derives the firmware's KEM cfgs from its cargo features: `kem` when any KEM
//! is served, and `ctru_<backend>_<variant>` for each CTRU-Light instance
//! (a back-end feature enables every variant unless some `ctru-<variant>`
//! feature narrows the set); `mqtt` when one `mqtt-<kem>` feature is on.

fn main() {
    let on = |f: &str| std::env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_"))).is_some();
    let variants = [
        ("kred", "ctru-kred2x"),
        ("montopt", "ctru-montopt"),
        ("mont", "ctru-mont"),
    ];
    let narrowed = variants.iter().any(|(_, f)| on(f));
    // The KEM features are the registry's names (Cargo.toml): every feature
    // that is not one of the others named here. CTRU-Light's two are
    // narrowed to their variants below.
    let not_kems = [
        "DEFAULT",
        "RINGS",
        "PORTABLE_NTT",
        "NTT_TABLES_IN_SRAM",
        "PRIMITIVES",
        "SENSOR_APP",
        "KYBER",
        "ML_KEM_LARGE",
        "CTRU_LIGHT_SHA3",
        "CTRU_LIGHT_ASCON",
        "CTRU_KRED2X",
        "CTRU_MONTOPT",
        "CTRU_MONT",
    ];
    let mut any_kem = std::env::vars().any(|(k, _)| {
        k.strip_prefix("CARGO_FEATURE_")
            .is_some_and(|f| !f.starts_with("MQTT_") && !not_kems.contains(&f))
    });
    println!("cargo::rustc-check-cfg=cfg(kem)");
    for backend in ["sha3", "ascon"] {
        for (variant, feature) in variants {
            let cfg = format!("ctru_{backend}_{variant}");
            println!("cargo::rustc-check-cfg=cfg({cfg})");
            if on(&format!("ctru-light-{backend}")) && (!narrowed || on(feature)) {
                println!("cargo::rustc-cfg={cfg}");
                any_kem = true;
            }
        }
    }
    println!("cargo::rustc-check-cfg=cfg(mqtt)");
    // The `mqtt-<kem>` features (every `mqtt-` feature but the X25519,
    // provisioned-keys and keys-in-flash ones): `mqtt-` and the registry's name of the KEM,
    // handed to the code as `MQTT_KEM` (`kem_registry::Scheme::from_name`).
    let mqtt_kems: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_MQTT_")
                .filter(|rest| !["X25519", "PROVISIONED", "KEYS_IN_FLASH"].contains(rest))
                .map(|rest| rest.to_lowercase().replace('_', "-"))
        })
        .collect();
    match &mqtt_kems[..] {
        [] => {}
        [kem] => {
            println!("cargo::rustc-cfg=mqtt");
            println!("cargo::rustc-env=MQTT_KEM={kem}");
        }
        _ => panic!("a firmware image serves the KEM-MQTT ops of one KEM: select one mqtt-<kem> feature"),
    }
    if any_kem {
        println!("cargo::rustc-cfg=kem");
    }
    // Provisioned sensor keys: copied where `include_bytes!` finds them.
    println!("cargo::rerun-if-env-changed=KEM_MQTT_PROVISIONED_KEYS");
    if on("mqtt-provisioned") {
        let path = std::env::var("KEM_MQTT_PROVISIONED_KEYS")
            .expect("feature mqtt-provisioned: set KEM_MQTT_PROVISIONED_KEYS to the key file (cargo xtask writes it)");
        println!("cargo::rerun-if-changed={path}");
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("provisioned-keys.bin");
        std::fs::copy(&path, &out).unwrap_or_else(|e| panic!("cannot copy {path}: {e}"));
    }
    sensor_policy();
}

/// The sensor application's policy (`avr_wire::app::Policy`) as Rust, from
/// `SENSOR_APP_POLICY=<interval s>,<records>,<seconds>` or the default; the
/// firmware checks the bounds at compile time.
fn sensor_policy() {
    println!("cargo::rerun-if-env-changed=SENSOR_APP_POLICY");
    let code = match std::env::var("SENSOR_APP_POLICY") {
        Err(_) => "avr_wire::app::Policy::DEFAULT".to_string(),
        Ok(v) => {
            let n: Vec<u32> = v
                .split(',')
                .map(|f| {
                    f.trim()
                        .parse()
                        .unwrap_or_else(|_| panic!("SENSOR_APP_POLICY={v}: not three numbers"))
                })
                .collect();
            let [interval, records, seconds] = n[..] else {
                panic!("SENSOR_APP_POLICY={v}: <interval s>,<records>,<seconds>");
            };
            format!("avr_wire::app::Policy {{ interval_s: {interval}, rekey_records: {records}, rekey_s: {seconds} }}")
        }
    };
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("sensor-policy.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
