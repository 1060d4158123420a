//! Compiles the C shim over libsimavr and links libsimavr + libelf.

fn main() {
    println!("cargo:rerun-if-changed=csrc/shim.c");
    let mut build = cc::Build::new();
    build
        .file("csrc/shim.c")
        .include("/usr/include")
        .opt_level(2)
        .warnings(true);
    // Debian's libsimavr-dev installs its headers under /usr/include/simavr.
    if !std::path::Path::new("/usr/include/simavr/sim_avr.h").exists() {
        println!("cargo:warning=simavr headers not found: install libsimavr-dev libelf-dev (cargo xtask setup)");
    }
    build.compile("avrsimshim");
    println!("cargo:rustc-link-lib=simavr");
    println!("cargo:rustc-link-lib=elf");
}
