//! Derives the firmware's KEM cfgs from its cargo features: `kem` when any KEM
//! is served, and `ctru_<backend>_<variant>` for each CTRU-Light instance
//! (a back-end feature enables every variant unless some `ctru-<variant>`
//! feature narrows the set).

fn main() {
    let on = |f: &str| std::env::var_os(format!("CARGO_FEATURE_{}", f.to_uppercase().replace('-', "_"))).is_some();
    let variants = [
        ("kred", "ctru-kred2x"),
        ("montopt", "ctru-montopt"),
        ("mont", "ctru-mont"),
    ];
    let narrowed = variants.iter().any(|(_, f)| on(f));
    let mut any_kem = on("ml-kem") || on("kyber-r3") || on("saber");
    println!("cargo::rustc-check-cfg=cfg(kem)");
    for backend in ["sha3", "ascon"] {
        for (variant, feature) in variants {
            let cfg = format!("ctru_{backend}_{variant}");
            println!("cargo::rustc-check-cfg=cfg({cfg})");
            if on(&format!("ctru-{backend}")) && (!narrowed || on(feature)) {
                println!("cargo::rustc-cfg={cfg}");
                any_kem = true;
            }
        }
    }
    if any_kem {
        println!("cargo::rustc-cfg=kem");
    }
}
