//! The AVR lab: everything the project's tasks do, as a library the thin
//! `xtask` binary dispatches to, grouped by domain, lowest first:
//!
//! - support: `util`, `opts` (process output, the reproducible PRNG),
//!   `progress`; the toolchain: `setup`; what can be built: `target` (the
//!   MCUs and the firmware images, pure data every domain speaks);
//! - [`report`]: the stored measurements and everything generated from them;
//! - [`run`]: the firmware driven in simavr, yasimavr or on a board, and the
//!   host half of each exchange (KEM ops, the KEM-MQTT/1 handshake);
//! - [`build`]: images built and flashed (`build-avr`, `flash`);
//! - [`mqtt`]: the KEM-MQTT/1 sensor, from the handshake to a deployed broker
//!   (`mqtt`, `e2e`, `sensor-sim`, `mqtt-load`);
//! - [`measure`]: the commands that measure and check (`bench`, `boards`,
//!   `ct`, `sim-test`, `kat`);
//! - [`release`]: the project as users get it (`examples`, `packaged`).
//!
//! Each command's options are a `clap` type beside the code that reads
//! them (`measure::bench::BenchArgs`, …), so the binary's `flags.rs` only
//! names them.

pub mod build;
pub mod measure;
pub mod mqtt;
pub mod opts;
pub mod progress;
pub mod release;
pub mod report;
pub mod run;
pub mod setup;
pub mod target;
pub mod util;

use clap::Parser;

/// The lab's modules, lowest layer first: each entry is a module of the
/// crate root, a file or a folder, with a folder's submodules, again lowest
/// first. A module may use (by `crate::` paths, which a test reads) only
/// the entries before its own, and inside its folder only the submodules
/// before it; a folder's `mod.rs` may use all of its own. So the layers
/// import downwards and never in a circle: support → toolchain → what can
/// be built → stored measurements and reports → running firmware →
/// building → KEM-MQTT → measuring → what users get.
pub const LAYERS: &[(&str, &[&str])] = &[
    // support
    ("util", &[]),
    ("opts", &[]),
    ("progress", &[]),
    // toolchain
    ("setup", &[]),
    // what can be built
    ("target", &[]),
    // the stored measurements, the published figures, what is generated
    (
        "report",
        &[
            "published",
            "energy",
            "records",
            "board_table",
            "floors",
            "targets",
            "chart",
            "table",
            "glance",
            "benchmarks_mqtt",
            "benchmarks",
        ],
    ),
    // the firmware in a simulator or on a board, the host half of each exchange
    (
        "run",
        &[
            "device", "pty", "symbols", "kems", "hosteval", "sensor", "avrxt", "yasim",
        ],
    ),
    // building and flashing
    ("build", &["mega0_link", "avr", "build_avr", "flash"]),
    // the KEM-MQTT sensor, up to a real broker
    (
        "mqtt",
        &[
            "registry_db",
            "site",
            "app_cost",
            "live",
            "handshake",
            "e2e_session",
            "e2e",
            "mqtt_load",
            "registry_bench",
            "rabbitmq",
            "fleet",
        ],
    ),
    // commands that measure and check
    ("measure", &["kat", "mega0", "simtest", "ct", "bench", "boards"]),
    // what users get
    ("release", &["examples", "packaged", "ml_kem_sets"]),
];

/// Parses a fixed internal argument list (the tasks CI chains): a parse error
/// here is a bug in this file, reported like any other error.
pub fn args<T: Parser>(argv: &[&str]) -> Result<T, String> {
    T::try_parse_from(argv).map_err(|e| format!("internal arguments {argv:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paths a source file names through `crate::…`, each cut to its
    /// first two segments (`crate::report::records::X` → `report`, `records`).
    fn used_paths(text: &str) -> Vec<Vec<String>> {
        fn ident(s: &str) -> (&str, &str) {
            let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
            s.split_at(end)
        }
        /// One use tree after `prefix`: `a`, `a::tree`, `self` or `{tree, …}`;
        /// returns what follows it.
        fn tree<'a>(s: &'a str, prefix: &[String], out: &mut Vec<Vec<String>>) -> &'a str {
            let s = s.trim_start();
            if let Some(mut rest) = s.strip_prefix('{') {
                loop {
                    rest = tree(rest, prefix, out).trim_start();
                    match rest.chars().next() {
                        Some(',') => rest = &rest[1..],
                        Some('}') => return &rest[1..],
                        _ => return rest,
                    }
                }
            }
            let (name, rest) = ident(s);
            let mut path = prefix.to_vec();
            if name != "self" && !name.is_empty() {
                path.push(name.to_string());
            }
            let rest = match rest.strip_prefix("::") {
                Some(more) if path.len() < 2 => return tree(more, &path, out),
                _ => rest,
            };
            if !path.is_empty() && !out.contains(&path) {
                out.push(path);
            }
            // `as alias`, `::Item` beyond the second segment: up to the next separator.
            let end = rest.find([',', '}', ';', '\n']).unwrap_or(rest.len());
            &rest[end..]
        }
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find("crate::") {
            rest = tree(&rest[at + "crate::".len()..], &[], &mut out);
        }
        out.retain(|p| p[0].chars().next().is_some_and(|c| c.is_lowercase()));
        out
    }

    /// Every `.rs` file of the lab but `lib.rs`, as (file, root module, submodule):
    /// a folder's `mod.rs` has no submodule.
    fn sources() -> Vec<(std::path::PathBuf, String, Option<String>)> {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lab");
        let stem = |p: &std::path::Path| p.file_stem().unwrap().to_string_lossy().into_owned();
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&src).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                for sub in std::fs::read_dir(&path).unwrap().flatten() {
                    let file = sub.path();
                    assert!(
                        file.extension().is_some_and(|e| e == "rs"),
                        "{}: a folder module holds .rs files only",
                        file.display()
                    );
                    let name = Some(stem(&file)).filter(|n| n != "mod");
                    files.push((file, stem(&path), name));
                }
            } else if stem(&path) != "lib" {
                files.push((path.clone(), stem(&path), None));
            }
        }
        files
    }

    #[test]
    fn modules_import_only_lower_layers() {
        let rank = |m: &str| LAYERS.iter().position(|(n, _)| *n == m);
        let files = sources();
        for (file, module, sub) in &files {
            let r = rank(module).unwrap_or_else(|| panic!("module `{module}` is not in LAYERS"));
            let subs = LAYERS[r].1;
            // `mod.rs` sits above its own submodules.
            let sub_rank = match sub {
                Some(s) => subs
                    .iter()
                    .position(|n| n == s)
                    .unwrap_or_else(|| panic!("`{module}::{s}` is not in LAYERS")),
                None => subs.len(),
            };
            let text = std::fs::read_to_string(file).unwrap();
            for path in used_paths(&text) {
                let allowed = if path[0] == *module {
                    match path.get(1).and_then(|p| subs.iter().position(|n| n == p)) {
                        Some(used) => used <= sub_rank,
                        // An item of the folder's `mod.rs`, or of a file module itself.
                        None => sub.is_none(),
                    }
                } else {
                    rank(&path[0]).is_some_and(|used| used < r)
                };
                assert!(
                    allowed,
                    "{} uses `crate::{}`, which is not below `{module}{}` in LAYERS",
                    file.display(),
                    path.join("::"),
                    sub.as_ref().map_or(String::new(), |s| format!("::{s}"))
                );
            }
        }
        for (module, subs) in LAYERS {
            assert!(
                files.iter().any(|(_, m, _)| m == module),
                "LAYERS names `{module}`, which has no source"
            );
            for s in *subs {
                assert!(
                    files.iter().any(|(_, m, f)| m == module && f.as_deref() == Some(*s)),
                    "LAYERS names `{module}::{s}`, which has no source"
                );
            }
            let folder = files.iter().any(|(_, m, f)| m == module && f.is_some());
            assert_eq!(folder, !subs.is_empty(), "`{module}`: LAYERS and the folder disagree");
        }
    }

    #[test]
    fn every_module_says_what_lives_there() {
        for (file, _, _) in sources() {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                text.starts_with("//! "),
                "{} has no module doc (`//!`) first",
                file.display()
            );
        }
    }

    #[test]
    fn the_import_scan_sees_every_form() {
        let text = "use crate::{run::kems as kemsim, report::{self, published::X}, util};\n\
                    let b = crate::build::avr::build(m);\nuse crate::mqtt::{self, live};\n\
                    // the same (`crate::report::records`) in a comment";
        let paths: Vec<String> = used_paths(text).iter().map(|p| p.join("::")).collect();
        assert_eq!(
            paths,
            [
                "run::kems",
                "report",
                "report::published",
                "util",
                "build::avr",
                "mqtt",
                "mqtt::live",
                "report::records"
            ]
        );
    }
}
