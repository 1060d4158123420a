//! Compiles the C shim over libsimavr and links libsimavr + libelf.
//!
//! Without the simavr headers (package libsimavr-dev) the crate still builds,
//! with `cfg(no_simavr)`: every [`Sim::load`] then fails with
//! `Error::Unavailable`, so `cargo xtask setup` can run on a fresh machine.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_simavr)");
    println!("cargo:rerun-if-changed=csrc/shim.c");
    println!("cargo:rerun-if-changed=/usr/include/simavr/sim_avr.h");
    let have_headers =
        Path::new("/usr/include/simavr/sim_avr.h").exists() && Path::new("/usr/include/libelf.h").exists();
    if !have_headers {
        println!("cargo:warning=libsimavr-dev/libelf-dev missing: avr-sim built without a simulator (run `cargo xtask setup`)");
        println!("cargo:rustc-cfg=no_simavr");
        return;
    }
    cc::Build::new()
        .file("csrc/shim.c")
        .opt_level(2)
        .warnings(true)
        .compile("avrsimshim");
    println!("cargo:rustc-link-lib=simavr");
    println!("cargo:rustc-link-lib=elf");
}
