//! Repository-wide checks on the source text (as rust-analyzer's xtask
//! `tidy`): one fact in one place. Run with `cargo test -p xtask`.

use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The production `.rs` files: sources of the crates, the firmware, the
/// tools, the xtask and the ct-check, without `tests/` folders, the
/// examples (code a user copies, which may show every KEM) and build output.
fn production_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            if p.is_dir() {
                if !["target", "tests", "vendor", "fixtures"].contains(&name.as_ref()) {
                    walk(&p, out);
                }
            } else if name.ends_with(".rs") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for top in ["crates", "firmware", "tools", "xtask", "ct-check"] {
        walk(&root().join(top), &mut out);
    }
    // Not ours: the measurement of PQClean's C (it names its three sets).
    out.retain(|p| !p.starts_with(root().join("tools/pqclean-baseline")));
    // This file is a test module (its examples name KEMs).
    out.retain(|p| !p.ends_with("xtask/src/tidy.rs"));
    out.sort();
    out
}

/// `path` relative to the root, with `/`.
fn relative(path: &Path) -> String {
    let root = root().canonicalize().expect("root");
    let p = path.canonicalize().expect("path");
    p.strip_prefix(&root).unwrap_or(&p).to_string_lossy().replace('\\', "/")
}

/// A file's code: no comment lines, and nothing from its `#[cfg(test)]`
/// module on (unit tests may name what they check).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `code` names `word` as a whole word (`_`, `-` and letters and
/// digits are word characters: `ml-kem-768` is not in `ml-kem-7680`).
fn names(code: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    code.match_indices(word).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// The registry's schemes a file's code names: by enum variant, by name
/// (`ml-kem-768`) or by module name (`ml_kem_768`).
fn schemes_named(code: &str) -> Vec<kem_registry::Scheme> {
    kem_registry::Scheme::ALL
        .into_iter()
        .filter(|s| {
            let variant = format!("{s:?}");
            let module = s.name().replace('-', "_");
            names(code, &variant) || names(code, s.name()) || names(code, &module)
        })
        .collect()
}

/// A new KEM is one declaration in `kem-registry`, one dispatch arm in
/// `kem-mqtt` and one served KEM in the firmware: outside the registry (and
/// the KEM crates, which name their own parameter sets), no other
/// production file lists the KEMs one by one. A list names most of them
/// (here: more than half); a table of particular comparisons (a published
/// figure beside one of our rows) names a few, and is data, not a list.
#[test]
fn the_kems_are_listed_in_the_registry_only() {
    const LISTS: [&str; 2] = ["crates/kem-mqtt/src/kem.rs", "firmware/src/device/kems.rs"];
    const KEM_CRATES: [&str; 4] = [
        "crates/kem-registry/",
        "crates/kyber512-avr/",
        "crates/lightsaber-avr/",
        "crates/ctru-light/",
    ];
    let mut listing = Vec::new();
    for f in production_files() {
        let rel = relative(&f);
        if KEM_CRATES.iter().any(|c| rel.starts_with(c)) {
            continue;
        }
        let named = schemes_named(&code(&f));
        if 2 * named.len() > kem_registry::Scheme::ALL.len() {
            listing.push(format!("{rel} ({named:?})"));
        }
    }
    let unexpected: Vec<&String> = listing
        .iter()
        .filter(|l| !LISTS.iter().any(|a| l.starts_with(a)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "these files list KEMs one by one; derive from kem_registry (Scheme::ALL, Kem::ALL, with_kem!) instead:\n{unexpected:#?}"
    );
    assert!(listing.len() <= LISTS.len(), "{listing:#?}");
}

/// The checker sees a list where there is one.
#[test]
fn the_kem_list_check_sees_a_list() {
    let code = "match k { Scheme::MlKem512 => 1, Scheme::LightSaber => 2, Kem::MlKem768 => 3, _ => \"ctru-light-sha3\".len() }";
    assert_eq!(schemes_named(code).len(), 4);
    assert!(schemes_named("ml-kem-5120 xml_kem_512").is_empty());
}

/// The production files whose code names `needle`.
fn files_naming(needle: &str) -> Vec<String> {
    production_files()
        .into_iter()
        .filter(|f| code(f).contains(needle))
        .map(|f| relative(&f))
        .collect()
}

/// An MCU is one record (`crates/avr-mcu`) and one entry in the lab's MCU
/// lists: its name is typed nowhere else.
#[test]
fn an_mcu_is_named_in_its_record_and_the_labs_list_only() {
    for part in ["atmega4809", "atmega2560", "atmega328p"] {
        let files = files_naming(&format!("\"{part}\""));
        assert!(
            files.len() <= 2
                && files
                    .iter()
                    .all(|f| f.starts_with("crates/avr-mcu/") || f == "xtask/src/lab/target.rs"),
            "{part}: {files:#?}"
        );
    }
}

/// The KEM-MQTT topic prefixes are typed once (`crates/kem-mqtt-wire/src/topics.rs`).
#[test]
fn topic_prefixes_are_typed_once() {
    for prefix in ["\"kem-mqtt/hs", "\"kem-mqtt/data", "\"kem-mqtt/cluster"] {
        assert_eq!(files_naming(prefix), ["crates/kem-mqtt-wire/src/topics.rs"], "{prefix}");
    }
}

/// The KEM-MQTT/1 lengths and message bytes more than one crate needs are
/// defined once (`crates/kem-mqtt-wire/src/lib.rs`); `kem-mqtt` and
/// `avr-wire` use them (the AVR side's `CF_LEN` and `RECORD_LEN` follow
/// from them, so a wire change does not build until both sides follow).
#[test]
fn wire_lengths_are_defined_once() {
    // (`VERSION` is not in the list: avr-wire's frame has its own.)
    for name in [
        "MSG_CLIENT_HELLO",
        "MSG_BROKER_HELLO",
        "MSG_CLIENT_FINISHED",
        "MAC_LEN",
        "CLIENT_FINISHED_LEN",
        "MAX_CLIENT_ID_LEN",
        "SEQ_LEN",
        "TAG_LEN",
        "RECORD_OVERHEAD",
        "MAX_TOPIC_LEN",
    ] {
        assert_eq!(
            files_naming(&format!("const {name}:")),
            ["crates/kem-mqtt-wire/src/lib.rs"],
            "{name}"
        );
    }
    for (name, from) in [("CF_LEN", "CLIENT_FINISHED_LEN"), ("RECORD_LEN", "RECORD_OVERHEAD")] {
        let defining = files_naming(&format!("const {name}:"));
        assert_eq!(defining, ["crates/avr-wire/src/mqtt.rs"], "{name}");
        let line = code(&root().join(&defining[0]))
            .lines()
            .find(|l| l.contains(&format!("const {name}:")))
            .map(str::to_owned)
            .unwrap_or_default();
        assert!(line.contains(from), "{name} must follow {from}: {line}");
    }
}
