//! The AVR lab: everything the project's tasks do, as a library the thin
//! `xtask` binary dispatches to. Targets and images (`target`), builds
//! (`avr`, `mega0_link`), the firmware drivers (`device`: simavr or a board
//! through `avr_wire`'s client; `pty`; `kems`, `sensor`: the host side of
//! each exchange), measurement (`bench`, `ct`, `simtest`, `mega0` with
//! yasimavr, `avrxt`, `symbols`), the KEM-MQTT runs (`mqtt`, `live`, `e2e`,
//! `mqtt_load`), flashing (`flash`), the machine's set-up (`setup`), and
//! the reporting (`records`, `published`, `chart`, `report`).
//!
//! Each command's options are a `clap` type beside the code that reads
//! them (`bench::BenchArgs`, …), so the binary's `flags.rs` only names
//! them.

pub mod app_cost;
pub mod avr;
pub mod avrxt;
pub mod bench;
pub mod board_table;
pub mod boards;
pub mod build_avr;
pub mod chart;
pub mod ct;
pub mod device;
pub mod e2e;
pub mod e2e_session;
pub mod energy;
pub mod examples;
pub mod flash;
pub mod floors;
pub mod hosteval;
pub mod kat;
pub mod kems;
pub mod live;
pub mod mega0;
pub mod mega0_link;
pub mod mqtt;
pub mod mqtt_load;
pub mod opts;
pub mod packaged;
pub mod progress;
pub mod pty;
pub mod published;
pub mod records;
pub mod report;
pub mod sensor;
pub mod setup;
pub mod simtest;
pub mod symbols;
pub mod target;
pub mod targets;
pub mod util;

use clap::Parser;

/// The lab's modules, lowest layer first; each may use only modules before
/// it (checked by a test), so the layers import downwards and never in a circle:
/// support → toolchain set-up → what to build and what was measured →
/// running firmware (device, KEM and sensor drivers) → building → measuring →
/// reporting → commands.
pub const LAYERS: &[&str] = &[
    // support
    "util",
    "opts",
    "progress",
    // toolchain
    "setup",
    // what can be built, the published figures, the stored measurements
    "target",
    "published",
    "energy",
    "hosteval",
    "records",
    "board_table",
    "floors",
    "targets",
    // running firmware in a simulator, and the host side of each exchange
    "device",
    "symbols",
    "pty",
    "kems",
    "sensor",
    // building
    "mega0_link",
    "avr",
    "app_cost",
    // measuring and reporting
    "avrxt",
    "chart",
    "report",
    // commands
    "mega0",
    "simtest",
    "ct",
    // the live sensor against a real broker (`mqtt --broker`)
    "live",
    "mqtt",
    "e2e_session",
    "e2e",
    "mqtt_load",
    "bench",
    "boards",
    "build_avr",
    "flash",
    "kat",
    "examples",
    "packaged",
];

/// Parses a fixed internal argument list (the tasks CI chains): a parse error
/// here is a bug in this file, reported like any other error.
pub fn args<T: Parser>(argv: &[&str]) -> Result<T, String> {
    T::try_parse_from(argv).map_err(|e| format!("internal arguments {argv:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modules a source file names through `crate::…`.
    fn used_modules(text: &str) -> Vec<String> {
        let mut used = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                // `use crate::{a, b::c, …}`
                Some(group) => group[..group.find('}').unwrap_or(0)]
                    .split(',')
                    .map(|n| n.trim().split("::").next().unwrap_or(""))
                    .collect(),
                None => vec![rest
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")],
            };
            for n in names {
                let n = n.split_whitespace().next().unwrap_or("");
                if !n.is_empty() && n.chars().next().is_some_and(|c| c.is_lowercase()) && !used.iter().any(|u| u == n) {
                    used.push(n.to_string());
                }
            }
        }
        used
    }

    #[test]
    fn modules_import_only_lower_layers() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(&src).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if name == "lib" {
                continue;
            }
            // A module is a file, or a folder of submodules beside it.
            let files: Vec<std::path::PathBuf> = if path.is_dir() {
                std::fs::read_dir(&path).unwrap().flatten().map(|e| e.path()).collect()
            } else {
                vec![path.clone()]
            };
            let rank = LAYERS
                .iter()
                .position(|m| *m == name)
                .unwrap_or_else(|| panic!("module `{name}` is not in LAYERS"));
            for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")) {
                let text = std::fs::read_to_string(file).unwrap();
                for used in used_modules(&text) {
                    if used == name {
                        continue;
                    }
                    let used_rank = LAYERS.iter().position(|m| *m == used);
                    assert!(
                        used_rank.is_some_and(|r| r < rank),
                        "{} uses `{used}`, which is not below `{name}` in LAYERS",
                        file.display()
                    );
                }
            }
            seen.push(name);
        }
        for m in LAYERS {
            assert!(seen.iter().any(|s| s == m), "LAYERS names `{m}`, which has no source");
        }
    }

    #[test]
    fn the_import_scan_sees_every_form() {
        let text = "use crate::{kems as kemsim, published::X, util};\nlet b = crate::avr::build(m);";
        assert_eq!(used_modules(text), ["kems", "published", "util", "avr"]);
    }
}
