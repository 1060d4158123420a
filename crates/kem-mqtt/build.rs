//! `cfg(sha3_family)` / `cfg(ascon_family)`: which symmetric families the
//! compiled KEMs need, so a sensor image with one KEM carries one family's
//! code (on an ATmega4808, the SHA3 family alone is about 5 KB of flash).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sha3_family)");
    println!("cargo::rustc-check-cfg=cfg(ascon_family)");
    let on = |f: &str| std::env::var_os(format!("CARGO_FEATURE_{f}")).is_some();
    // Every KEM feature but CTRU-Light (Ascon) is a Keccak KEM: the
    // features that are not KEMs are the ones named here.
    let not_kems = ["CTRU_LIGHT_ASCON", "X25519", "DEFAULT", "DOCUMENT_FEATURES"];
    let sha3 = std::env::vars_os().any(|(k, _)| {
        k.to_str()
            .and_then(|k| k.strip_prefix("CARGO_FEATURE_"))
            .is_some_and(|f| !not_kems.contains(&f))
    });
    if sha3 {
        println!("cargo::rustc-cfg=sha3_family");
    }
    // Ascon also when no KEM is compiled in, so `Family` is never empty.
    if on("CTRU_LIGHT_ASCON") || !sha3 {
        println!("cargo::rustc-cfg=ascon_family");
    }
}
