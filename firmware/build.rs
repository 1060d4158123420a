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
        "COMPACT_PRIMITIVES",
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
    // provisioned-keys, keys-in-flash and compact-assembly ones): `mqtt-` and the registry's
    // name of the KEM, which `kem-mqtt-sensor` serves (its `steps::KEM`).
    let mqtt_kems: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_MQTT_")
                .filter(|rest| {
                    ![
                        "X25519",
                        "PROVISIONED",
                        "KEYS_IN_FLASH",
                        "COMPACT_KECCAK",
                        "COMPACT_X25519",
                    ]
                    .contains(rest)
                })
                .map(str::to_owned)
        })
        .collect();
    match &mqtt_kems[..] {
        [] => {}
        [_] => println!("cargo::rustc-cfg=mqtt"),
        _ => panic!("a firmware image serves the KEM-MQTT ops of one KEM: select one mqtt-<kem> feature"),
    }
    if any_kem {
        println!("cargo::rustc-cfg=kem");
    }
}
