//! `cfg(sha3_family)` / `cfg(ascon_family)`: which symmetric families the
//! compiled KEMs need, so a sensor image with one KEM carries one family's
//! code (on an ATmega4808, the SHA3 family alone is about 5 KB of flash).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sha3_family)");
    println!("cargo::rustc-check-cfg=cfg(ascon_family)");
    let on = |f: &str| std::env::var_os(format!("CARGO_FEATURE_{f}")).is_some();
    let sha3 = ["CTRU_LIGHT_SHA3", "ML_KEM_512", "KYBER512_R3", "LIGHTSABER"]
        .iter()
        .any(|f| on(f));
    if sha3 {
        println!("cargo::rustc-cfg=sha3_family");
    }
    // Ascon also when no KEM is compiled in, so `Family` is never empty.
    if on("CTRU_LIGHT_ASCON") || !sha3 {
        println!("cargo::rustc-cfg=ascon_family");
    }
}
