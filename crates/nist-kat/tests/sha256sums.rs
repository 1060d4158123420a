//! `kat-vectors/SHA256SUMS` pins every file of `kat-vectors/` (what
//! `sha256sum -c SHA256SUMS` checks there), and lists each of them.

use sha2::{Digest, Sha256};
use std::path::Path;

#[test]
fn every_vector_file_matches_its_pinned_sha256() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kat-vectors");
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("SHA256SUMS present");
    let mut listed = Vec::new();
    for line in sums.lines() {
        let (hex, name) = line.split_once("  ").expect("`<sha256>  <path>` lines");
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, hex, "{name} changed");
        listed.push(name.to_string());
    }
    // Every data file under kat-vectors/ (beside README.md and SHA256SUMS) is listed.
    let mut present = Vec::new();
    for sub in std::fs::read_dir(&dir).expect("kat-vectors/ readable") {
        let sub = sub.expect("entry").path();
        if sub.is_dir() {
            for file in std::fs::read_dir(&sub).expect("folder readable") {
                let path = file.expect("entry").path();
                let rel = path.strip_prefix(&dir).expect("below kat-vectors/");
                present.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    present.sort();
    listed.sort();
    assert_eq!(present, listed, "SHA256SUMS lists exactly the files present");
    assert!(listed.len() >= 9);
}
