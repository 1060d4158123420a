//! Every workspace crate's `rust-version` is at least that of every crate it
//! builds with (normal and build dependencies, through the whole tree): a
//! declared minimum below a dependency's is one no user can build with
//! (issue #35). Reads `cargo metadata` (no network, no build), filtered to
//! the host's platform: offline, cargo has the sources of only the packages
//! a build here downloaded (not, say, Windows' console crates), and no
//! dependency of the workspace is AVR-only (the one target table,
//! kem-mqtt's, is for every target but AVR).

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

fn version(v: &str) -> (u32, u32) {
    let mut it = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

#[test]
fn no_crate_declares_a_rust_version_below_its_dependencies() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let verbose = Command::new(rustc).arg("-vV").output().expect("rustc -vV runs");
    let verbose = String::from_utf8_lossy(&verbose.stdout).into_owned();
    let host = verbose
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host");
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "-q",
            "--filter-platform",
            host,
        ])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages: HashMap<&str, &serde_json::Value> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    let nodes: HashMap<&str, &serde_json::Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let mut wrong = Vec::new();
    for member in meta["workspace_members"].as_array().unwrap() {
        let id = member.as_str().unwrap();
        let declared = packages[id]["rust_version"].as_str().map(version).unwrap_or((0, 0));
        let mut seen = BTreeSet::new();
        let mut todo = vec![id];
        while let Some(i) = todo.pop() {
            if !seen.insert(i) {
                continue;
            }
            for dep in nodes[i]["deps"].as_array().unwrap() {
                let builds_with = dep["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null() || k["kind"] == "build");
                if builds_with {
                    todo.push(dep["pkg"].as_str().unwrap());
                }
            }
        }
        for dep in seen {
            if let Some(v) = packages[dep]["rust_version"].as_str() {
                if version(v) > declared {
                    wrong.push(format!(
                        "{} declares {:?} but {} needs {v}",
                        packages[id]["name"], declared, packages[dep]["name"]
                    ));
                    break;
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
