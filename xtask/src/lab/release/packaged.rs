//! The crates as they leave the repository (issue #34). `cargo package`
//! packs every publishable crate of the workspace into a `.crate` file, as
//! `cargo publish` uploads it; this unpacks them, points a copy of
//! `examples/avr-kem-kat` at them (`kyber512-avr = "0.1.0"` from crates.io,
//! `[patch.crates-io]` naming the unpacked packages, as a local registry
//! would), builds it for the ATmega1284p and runs it in simavr: the
//! ML-KEM-512 KAT record it prints must be the official one. What is tested
//! is what a user downloads — the assembly the packages carry, their build
//! scripts, their manifests without the workspace's paths.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::release::examples;
use crate::util;

/// The example built against the packages.
const EXAMPLE: &str = "examples/avr-kem-kat";

/// The package whose own tests (unit, integration and doc tests) run from
/// its pack, outside the repository.
const PACKAGE_TESTED: &str = "kyber512-avr";

/// A publishable workspace crate: its name and version.
struct Package {
    name: String,
    version: String,
}

/// The packages `cargo metadata` (with `args`) lists in `dir`, run as
/// `cmd` (plain cargo in the workspace; `examples::cargo_in` in an example,
/// with its own compiler and `[unstable]` table).
fn metadata_packages(mut cmd: Command, dir: &Path, args: &[&str]) -> Result<Vec<serde_json::Value>, String> {
    let out = cmd
        .current_dir(dir)
        .args(["metadata", "--format-version", "1"])
        .args(args)
        .output()
        .map_err(|e| format!("cannot start cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    match meta["packages"].take() {
        serde_json::Value::Array(packages) => Ok(packages),
        _ => Err("cargo metadata: no packages".into()),
    }
}

/// Every workspace crate `cargo publish` would upload (`publish` not false).
fn publishable(root: &Path) -> Result<Vec<Package>, String> {
    Ok(metadata_packages(Command::new("cargo"), root, &["--no-deps"])?
        .iter()
        // `publish: []` is `publish = false`; `null` means any registry.
        .filter(|p| p["publish"].as_array().is_none_or(|r| !r.is_empty()))
        .map(|p| Package {
            name: p["name"].as_str().unwrap_or_default().to_owned(),
            version: p["version"].as_str().unwrap_or_default().to_owned(),
        })
        .collect())
}

/// The example's manifest with its workspace paths replaced: a packaged
/// crate by its version (resolved through `[patch.crates-io]` to the
/// unpacked package), any other (an unpublished crate; none today) by an
/// absolute path into the workspace.
fn manifest_for_packages(manifest: &str, root: &Path, packages: &[Package], unpacked: &Path) -> String {
    let mut out = manifest.to_owned();
    let crates = root.join("crates");
    // How an example names a workspace crate (it sits in examples/NAME/).
    const BY_PATH: &str = "path = \"../../crates/";
    while let Some(at) = out.find(BY_PATH) {
        let start = at + BY_PATH.len();
        let end = start + out[start..].find('"').unwrap_or(0);
        let name = out[start..end].to_owned();
        let replacement = match packages.iter().find(|p| p.name == name) {
            Some(p) => format!("version = \"={}\"", p.version),
            None => format!("path = \"{}\"", crates.join(&name).display()),
        };
        out.replace_range(at..end + 1, &replacement);
    }
    out.push_str(
        "\n# Added by `cargo xtask packaged`: the crates as `cargo package` packed them.\n[patch.crates-io]\n",
    );
    for p in packages {
        let dir = unpacked.join(format!("{}-{}", p.name, p.version));
        out.push_str(&format!("{} = {{ path = \"{}\" }}\n", p.name, dir.display()));
    }
    out
}

/// Copies `from` (files and folders) into `to`, leaving out `target/`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries = std::fs::read_dir(from).map_err(|e| format!("cannot list {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_name() == "target" {
            continue;
        }
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| format!("cannot copy {}: {e}", src.display()))?;
        }
    }
    Ok(())
}

/// Runs `cargo test` in a copy of the unpacked package `name`, outside the
/// repository (no workspace above it), its dependencies among our crates
/// resolved to their unpacked packages (`[patch.crates-io]`, as a local
/// registry would): what a user who downloads the crate and runs its tests
/// gets. A test that reads a file of the repository fails here.
fn test_outside(packages: &[Package], unpacked: &Path, name: &str) -> Result<(), String> {
    let p = packages
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("{name} is not a publishable crate"))?;
    let outside = std::env::temp_dir().join(format!("kem-packaged-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&outside);
    let copy = outside.join(format!("{}-{}", p.name, p.version));
    copy_tree(&unpacked.join(format!("{}-{}", p.name, p.version)), &copy)?;
    let mut cargo = Command::new("cargo");
    cargo.current_dir(&copy).arg("test").arg("-q");
    for other in packages.iter().filter(|o| o.name != p.name) {
        let dir = unpacked.join(format!("{}-{}", other.name, other.version));
        cargo.arg("--config").arg(format!(
            "patch.crates-io.{}.path={:?}",
            other.name,
            dir.display().to_string()
        ));
    }
    // Its own target folder, kept between runs (beside the packs).
    cargo.arg("--target-dir").arg(unpacked.with_file_name("test-target"));
    let result = util::run(&mut cargo);
    let _ = std::fs::remove_dir_all(&outside);
    result.map_err(|e| format!("{name}'s own tests from its package, outside the repository: {e}"))?;
    eprintln!("xtask: {name}'s own tests pass from its package, outside the repository");
    Ok(())
}

/// Where cargo resolved `kyber512-avr` from in the example at `dir`: it must
/// be the unpacked package, or the check proves nothing.
fn resolved_from(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let packages = metadata_packages(examples::cargo_in(dir, &[]), dir, &[])?;
    let manifest = packages
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["manifest_path"].as_str())
        .ok_or_else(|| format!("{name} is not among the example's dependencies"))?;
    Ok(PathBuf::from(manifest))
}

/// `cargo package --workspace`: packs every crate of the workspace (the
/// unpublished ones too, as their dependencies are all publishable) and
/// builds each from its pack against the others'. Each run gets a target
/// folder of its own (removed afterwards): cargo unpacks the packs it
/// verifies into `$CARGO_HOME/registry/src/<hash of that folder>/` and
/// reuses an unpacked copy of the same name and version, so a second run in
/// the same folder would verify the first run's sources.
pub fn package_workspace() -> Result<(), String> {
    let root = util::workspace_root();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = root.join(format!("target/package-workspace-{stamp}"));
    // Without debug info: nothing runs what this builds, and the dependency
    // trees (tokio, rustls, rumqttd) link faster without it.
    let result = util::run(
        Command::new("cargo")
            .current_dir(&root)
            .args(["package", "--workspace", "--target-dir"])
            .arg(&dir)
            .env("CARGO_PROFILE_DEV_DEBUG", "false"),
    );
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Packs every publishable crate, builds the KAT example against the packs
/// for the ATmega1284p and checks the record it prints in simavr.
pub fn check() -> Result<(), String> {
    let root = util::workspace_root();
    let packages = publishable(&root)?;
    // Packing without the build `cargo package --workspace` verifies with
    // (CI runs that first); `--allow-dirty` packs the tree as it is.
    let work = root.join("target/packaged");
    // Its own target folder: the .crate files are where this reads them,
    // whatever CARGO_TARGET_DIR says.
    let packs = work.join("pack");
    let mut pack = Command::new("cargo");
    pack.current_dir(&root)
        .args(["package", "--no-verify", "--allow-dirty", "-q", "--target-dir"])
        .arg(&packs);
    for p in &packages {
        pack.args(["-p", &p.name]);
    }
    util::run(&mut pack)?;

    let unpacked = work.join("crates");
    if unpacked.exists() {
        std::fs::remove_dir_all(&unpacked).map_err(|e| format!("cannot clear {}: {e}", unpacked.display()))?;
    }
    std::fs::create_dir_all(&unpacked).map_err(|e| format!("cannot create {}: {e}", unpacked.display()))?;
    for p in &packages {
        let file = packs.join(format!("package/{}-{}.crate", p.name, p.version));
        // `-m`: the files of a .crate carry a fixed 2006 date; dated now,
        // cargo sees them as newer than the last build of the copy and
        // rebuilds what changed instead of reusing a stale binary.
        util::run(Command::new("tar").arg("-xzmf").arg(&file).arg("-C").arg(&unpacked))?;
    }
    eprintln!(
        "xtask: {} packages unpacked into {}",
        packages.len(),
        unpacked.display()
    );

    test_outside(&packages, &unpacked, PACKAGE_TESTED)?;

    let source = root.join(EXAMPLE);
    let name = source.file_name().unwrap_or_default();
    let copy = work.join(name);
    copy_tree(&source, &copy)?;
    // The runner is `../run-avr`, beside the example.
    std::fs::copy(root.join("examples/run-avr"), work.join("run-avr"))
        .map_err(|e| format!("cannot copy examples/run-avr: {e}"))?;
    let manifest = std::fs::read_to_string(source.join("Cargo.toml")).map_err(|e| e.to_string())?;
    std::fs::write(
        copy.join("Cargo.toml"),
        manifest_for_packages(&manifest, &root, &packages, &unpacked),
    )
    .map_err(|e| format!("cannot write the example's manifest: {e}"))?;

    let kem = resolved_from(&copy, "kyber512-avr")?;
    if !kem.starts_with(&unpacked) {
        return Err(format!(
            "kyber512-avr resolved to {}, not to the unpacked package",
            kem.display()
        ));
    }
    examples::check(&source, &copy)?;
    eprintln!(
        "xtask: kyber512-avr as packaged ({}) reproduces its KAT record on the ATmega1284p",
        kem.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packaged_crates_by_version_others_by_absolute_path() {
        let manifest = "[dependencies]\nkyber512-avr = { path = \"../../crates/kyber512-avr\" }\n\
                        nist-kat = { path = \"../../crates/nist-kat\", default-features = false }\n";
        let packages = [Package {
            name: "kyber512-avr".into(),
            version: "0.1.0".into(),
        }];
        let out = manifest_for_packages(manifest, Path::new("/w"), &packages, Path::new("/u"));
        assert!(out.contains("kyber512-avr = { version = \"=0.1.0\" }"), "{out}");
        assert!(
            out.contains("nist-kat = { path = \"/w/crates/nist-kat\", default-features = false }"),
            "{out}"
        );
        assert!(
            out.contains("[patch.crates-io]\nkyber512-avr = { path = \"/u/kyber512-avr-0.1.0\" }"),
            "{out}"
        );
        assert!(!out.contains("../../"), "{out}");
    }
}
