//! Key files (issue #21, finding 5): private permissions, no silent
//! overwrite, a full key-pair check for every KEM, secrets kept out of
//! `Debug`, all-zero X25519 secrets refused.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use kem_mqtt::{Scheme, Suite, SuiteSet};
use kem_mqtt_host::keys::{BrokerKeyFile, BrokerSecrets, KeyError, Registry, SensorKeyFile, SensorKeys};
use kem_mqtt_host::provision::{generate_broker, provision_sensor};
use kem_mqtt_host::OsRng;
use rand_core::Rng as _;

mod common;

/// A fresh directory under the temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("kem-mqtt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kem-mqtt"))
        .args(args)
        .output()
        .unwrap()
}

fn hybrid(kem: Scheme) -> Suite {
    Suite::new(kem, true)
}

fn sensor_for(broker: &BrokerSecrets, kem: Scheme) -> SensorKeys {
    let s = hybrid(kem);
    provision_sensor(
        broker,
        &mut Registry::default(),
        "s",
        s,
        SuiteSet::EMPTY.with(s),
        &mut OsRng,
    )
    .unwrap()
}

/// The part of a secret key before its embedded public-key copy: the
/// secret polynomial(s) (ŝ, s or f). Found by searching for the copy, so
/// the test does not depend on one KEM's layout.
fn secret_part(sk: &[u8], pk: &[u8]) -> std::ops::Range<usize> {
    let at = sk
        .windows(pk.len())
        .position(|w| w == pk)
        .expect("the secret key embeds its public key");
    assert!(at > 0, "no secret part before the public key");
    0..at
}

#[test]
fn key_files_and_directory_are_private() {
    let tmp = TempDir::new("perm");
    std::fs::create_dir_all(&tmp.0).unwrap();
    let broker = generate_broker(&[Scheme::MlKem512], &mut OsRng);
    let b = tmp.0.join("broker.json");
    broker.save(&b).unwrap();
    assert_eq!(mode(&b), 0o600, "broker key file");
    let s = tmp.0.join("sensor.json");
    sensor_for(&broker, Scheme::MlKem512).save(&s).unwrap();
    assert_eq!(mode(&s), 0o600, "sensor key file");
    // Saving again over a file someone made world-readable narrows it again.
    std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o644)).unwrap();
    sensor_for(&broker, Scheme::MlKem512).save(&s).unwrap();
    assert_eq!(mode(&s), 0o600, "sensor key file rewritten");

    let dir = tmp.0.join("cli");
    let out = cli(&[
        "provision",
        "--dir",
        dir.to_str().unwrap(),
        "--client",
        "s1",
        "--suite",
        "ml-kem-512",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(&dir), 0o700, "key directory");
    for f in ["broker-key.json", "sensor-s1.json", "registry.json"] {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
    }
}

#[test]
fn provision_refuses_to_overwrite_an_enrolled_id_without_force() {
    let tmp = TempDir::new("force");
    let dir = tmp.0.to_str().unwrap();
    let provision = |client: &str, extra: &[&str]| {
        let mut args = vec!["provision", "--dir", dir, "--client", client, "--suite", "kyber512-r3"];
        args.extend_from_slice(extra);
        cli(&args)
    };
    assert!(provision("s1", &[]).status.success());
    let key = tmp.0.join("sensor-s1.json");
    let registry = tmp.0.join("registry.json");
    let (key_before, reg_before) = (std::fs::read(&key).unwrap(), std::fs::read(&registry).unwrap());

    let out = provision("s1", &[]);
    assert!(
        !out.status.success(),
        "a second enrolment of s1 silently replaced its keys"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--force"), "the refusal names the way out: {err}");
    assert_eq!(std::fs::read(&key).unwrap(), key_before, "sensor key file changed");
    assert_eq!(std::fs::read(&registry).unwrap(), reg_before, "registry changed");

    // Another id is fine, and --force replaces s1 (new keys, one registry entry).
    assert!(provision("s2", &[]).status.success());
    assert!(provision("s1", &["--force"]).status.success());
    let after = SensorKeys::load(&key).unwrap();
    assert_ne!(std::fs::read(&key).unwrap(), key_before);
    let reg = Registry::load_or_empty(&registry).unwrap();
    assert_eq!(reg.clients.len(), 2);
    assert_eq!(reg.clients["s1"].kem_pk, after.kem_pk);
}

/// Flips one bit at each of `n` positions of `range` (first, last and random
/// ones; every byte if `n` is `usize::MAX`) in a copy of `sk` and hands each
/// copy to `check`.
fn each_flip(sk: &[u8], range: std::ops::Range<usize>, n: usize, mut check: impl FnMut(&[u8], usize)) {
    let positions: Vec<usize> = if n == usize::MAX {
        range.collect()
    } else {
        let mut p = vec![range.start, range.end - 1];
        while p.len() < n {
            p.push(range.start + OsRng.next_u32() as usize % range.len());
        }
        p
    };
    for at in positions {
        let mut bad = sk.to_vec();
        bad[at] ^= 1 << (OsRng.next_u32() % 8);
        check(&bad, at);
    }
}

#[test]
fn a_bit_flip_in_the_secret_part_of_every_kem_secret_key_is_caught_at_load() {
    let tmp = TempDir::new("flip");
    std::fs::create_dir_all(&tmp.0).unwrap();
    let broker = generate_broker(&kem_mqtt::KEMS, &mut OsRng);
    for kem in kem_mqtt::KEMS {
        let keys = sensor_for(&broker, kem);
        let range = secret_part(&keys.kem_sk, &keys.kem_pk);
        // Every byte of the secret part, one random bit each: refused as a
        // mismatched pair (or, where the flip leaves the coefficient range,
        // as a malformed key) — the typed errors of a damaged key.
        each_flip(&keys.kem_sk, range.clone(), usize::MAX, |bad, at| {
            let mut f = keys.to_file();
            f.kem_sk = base16ct::lower::encode_string(bad);
            match SensorKeys::from_file(&f) {
                Err(KeyError::KeyPairMismatch(_) | KeyError::Invalid(_)) => {}
                r => panic!("{}: secret byte {at} flipped: {r:?}", kem.name()),
            }
        });
        // Sensor key file on disk.
        let path = tmp.0.join(format!("sensor-{}.json", kem.name()));
        each_flip(&keys.kem_sk, range.clone(), 12, |bad, at| {
            let mut f = keys.to_file();
            f.kem_sk = base16ct::lower::encode_string(bad);
            common::write_private(&path, &serde_json::to_string(&f).unwrap());
            let e = SensorKeys::load(&path)
                .err()
                .unwrap_or_else(|| panic!("{}: sensor secret key with byte {at} flipped loaded", kem.name()));
            let text = e.to_string();
            assert!(
                text.contains(&path.display().to_string()),
                "the error names the file: {text}"
            );
            assert!(matches!(&e, KeyError::File { path: p, .. } if *p == path), "{e:?}");
            assert!(
                matches!(e.inner(), KeyError::KeyPairMismatch(_) | KeyError::Invalid(_)),
                "{e:?}"
            );
        });
        // Broker key file: the same flips in the broker's key for this KEM.
        let path = tmp.0.join(format!("broker-{}.json", kem.name()));
        let (sk, pk) = &broker.kems[&kem];
        let range = secret_part(sk, pk);
        each_flip(sk, range, 12, |bad, at| {
            let mut f = broker.to_file();
            let entry = f.kems.iter_mut().find(|e| e.kem == kem.name()).unwrap();
            entry.sk = base16ct::lower::encode_string(bad);
            common::write_private(&path, &serde_json::to_string(&f).unwrap());
            let e = BrokerSecrets::load(&path)
                .err()
                .unwrap_or_else(|| panic!("{}: broker secret key with byte {at} flipped loaded", kem.name()));
            let text = e.to_string();
            assert!(
                text.contains(&path.display().to_string()),
                "the error names the file: {text}"
            );
            assert!(text.contains(kem.name()), "the error names the KEM: {text}");
        });
    }
}

#[test]
fn debug_output_never_shows_a_secret() {
    let broker = generate_broker(&[Scheme::CtruLightAscon], &mut OsRng);
    let keys = sensor_for(&broker, Scheme::CtruLightAscon);
    let sensor_file: SensorKeyFile = keys.to_file();
    let broker_file: BrokerKeyFile = broker.to_file();
    let secrets = [
        sensor_file.kem_sk.clone(),
        sensor_file.x25519_sk.clone(),
        broker_file.kems[0].sk.clone(),
        broker_file.x25519_sk.clone(),
    ];
    let shown = [
        format!("{sensor_file:?}"),
        format!("{broker_file:?}"),
        format!("{:?}", broker_file.kems[0]),
        format!("{sensor_file:#?}"),
        format!("{keys:?}"),
        format!("{broker:?}"),
    ];
    for text in &shown {
        for s in &secrets {
            // Any 16 hex digits of a secret would be too many.
            assert!(!text.contains(&s[..16]), "a secret in Debug output: {text}");
        }
        assert!(text.contains("[redacted]"), "{text}");
    }
    // Public parts stay visible (they help debugging).
    assert!(shown[0].contains(&sensor_file.kem_pk[..16]));
}

#[test]
fn all_zero_x25519_secrets_are_refused() {
    let broker = generate_broker(&[Scheme::MlKem512], &mut OsRng);
    let keys = sensor_for(&broker, Scheme::MlKem512);
    let zero_pk = base16ct::lower::encode_string(&x25519_dalek::x25519([0; 32], x25519_dalek::X25519_BASEPOINT_BYTES));

    // Sensor key file: an all-zero static X25519 secret key (with its public key).
    let mut f = keys.to_file();
    f.x25519_sk = "00".repeat(32);
    f.x25519_pk = zero_pk.clone();
    let r = SensorKeys::from_file(&f);
    assert!(
        matches!(r, Err(KeyError::X25519Zero(_))),
        "all-zero sensor X25519 secret key: {r:?}"
    );
    // Broker key file likewise.
    let mut b = broker.to_file();
    b.x25519_sk = "00".repeat(32);
    b.x25519_pk = zero_pk;
    let r = BrokerSecrets::from_file(&b);
    assert!(
        matches!(r, Err(KeyError::X25519Zero(_))),
        "all-zero broker X25519 secret key: {r:?}"
    );
    // A broker X25519 key of small order makes the static-static secret all-zero.
    let mut f = keys.to_file();
    f.broker_x25519_pk = "00".repeat(32);
    let r = SensorKeys::from_file(&f);
    assert!(
        matches!(r, Err(KeyError::X25519Zero(_))),
        "small-order broker X25519 key: {r:?}"
    );
    // A flipped bit in an X25519 secret key: the derived public key differs.
    let mut f = keys.to_file();
    let mut sk = base16ct::mixed::decode_vec(&f.x25519_sk).unwrap();
    sk[9] ^= 4;
    f.x25519_sk = base16ct::lower::encode_string(&sk);
    let r = SensorKeys::from_file(&f);
    assert!(
        matches!(r, Err(KeyError::KeyPairMismatch(_))),
        "flipped X25519 secret key: {r:?}"
    );

    // A cached all-zero static-static secret is refused by the protocol core.
    let zero = [0u8; 32];
    let mut creds = keys.credentials();
    creds.x25519_static_secret = Some(&zero);
    let mut buf = vec![0u8; kem_mqtt::MAX_CLIENT_HELLO_LEN];
    let r = kem_mqtt::SensorHandshake::start(keys.suite, creds, &mut OsRng, &mut buf);
    assert!(
        matches!(r, Err(kem_mqtt::Error::X25519NonContributory)),
        "cached all-zero static X25519 secret accepted"
    );
}

#[test]
fn the_key_pair_check_still_accepts_every_honest_key() {
    let tmp = TempDir::new("honest");
    std::fs::create_dir_all(&tmp.0).unwrap();
    let broker = generate_broker(&kem_mqtt::KEMS, &mut OsRng);
    let path = tmp.0.join("broker.json");
    broker.save(&path).unwrap();
    let loaded = BrokerSecrets::load(&path).unwrap();
    assert_eq!(loaded.kems.len(), kem_mqtt::KEMS.len());
    for kem in kem_mqtt::KEMS {
        let keys = sensor_for(&broker, kem);
        let path = tmp.0.join(format!("s-{}.json", kem.name()));
        keys.save(&path).unwrap();
        assert_eq!(SensorKeys::load(&path).unwrap().kem_pk, keys.kem_pk);
    }
    // A file that is not there is an error that names it.
    let missing = tmp.0.join("missing.json");
    let e = SensorKeys::load(&missing).err().unwrap();
    assert!(e.to_string().contains("missing.json"), "{e}");
    assert!(matches!(e.inner(), KeyError::Io(_)), "{e:?}");
}

/// Issue #32, defect 6: two provisioning runs in one key directory at the
/// same time each read the registry, added their sensors and wrote it back,
/// so one run's enrolments were lost (7 of 16 sensors had a key file and no
/// registry entry, both runs exited 0). With the directory locked around
/// the read-modify-write, every sensor of both runs is enrolled.
#[test]
fn parallel_provisioning_runs_lose_no_enrolment() {
    for round in 0..3 {
        let tmp = TempDir::new(&format!("parallel-{round}"));
        let dir = tmp.0.to_str().unwrap();
        assert!(cli(&["provision", "--dir", dir]).status.success());
        let runs: Vec<_> = ["a", "b"]
            .map(|client| {
                Command::new(env!("CARGO_BIN_EXE_kem-mqtt"))
                    .args([
                        "provision",
                        "--dir",
                        dir,
                        "--client",
                        client,
                        "--suite",
                        "ctru-light-ascon",
                    ])
                    .args(["--count", "8"])
                    .spawn()
                    .unwrap()
            })
            .into_iter()
            .collect();
        for mut run in runs {
            assert!(run.wait().unwrap().success());
        }
        let registry = Registry::load_or_empty(&tmp.0.join("registry.json")).unwrap();
        let files: Vec<String> = std::fs::read_dir(&tmp.0)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|n| Some(n.strip_prefix("sensor-")?.strip_suffix(".json")?.to_string()))
            .collect();
        assert_eq!(files.len(), 16, "round {round}: {files:?}");
        for id in &files {
            assert!(
                registry.clients.contains_key(id),
                "round {round}: {id} has a key file but no registry entry"
            );
        }
        assert_eq!(registry.clients.len(), 16, "round {round}");
    }
}

/// Issue #32, defect 6: two threads saving one key path used one temporary
/// file name (the process id), so one failed and its clean-up deleted the
/// other's file (78 of 80 saves failed). Every save succeeds now, and the
/// file left is a whole key file.
#[test]
fn two_threads_saving_one_key_path_both_succeed() {
    let tmp = TempDir::new("threads");
    std::fs::create_dir_all(&tmp.0).unwrap();
    let broker = generate_broker(&[Scheme::CtruLightAscon], &mut OsRng);
    let keys = sensor_for(&broker, Scheme::CtruLightAscon);
    let path = tmp.0.join("sensor-s.json");
    let failures: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| s.spawn(|| (0..40).filter(|_| keys.save(&path).is_err()).count()))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    assert_eq!(failures, 0, "saves failed");
    assert_eq!(SensorKeys::load(&path).unwrap().kem_pk, keys.kem_pk);
    let leftovers: Vec<_> = std::fs::read_dir(&tmp.0).unwrap().filter_map(|e| e.ok()).collect();
    assert_eq!(leftovers.len(), 1, "temporary files left behind: {leftovers:?}");
}

/// Issue #32, defect 6: a sensor or broker key file that others may read
/// or write is refused on load, naming the file and its mode.
#[test]
fn key_files_others_may_read_are_refused() {
    let tmp = TempDir::new("modes");
    std::fs::create_dir_all(&tmp.0).unwrap();
    let broker = generate_broker(&[Scheme::CtruLightAscon], &mut OsRng);
    let keys = sensor_for(&broker, Scheme::CtruLightAscon);
    let (sensor_path, broker_path) = (tmp.0.join("sensor.json"), tmp.0.join("broker.json"));
    keys.save(&sensor_path).unwrap();
    broker.save(&broker_path).unwrap();
    for bad in [0o644, 0o666, 0o640, 0o604] {
        for path in [&sensor_path, &broker_path] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(bad)).unwrap();
        }
        let e = SensorKeys::load(&sensor_path).expect_err("loaded a world-readable sensor key");
        assert!(matches!(e.inner(), KeyError::Permissions(m) if *m == bad), "{e:?}");
        assert!(e.to_string().contains(&sensor_path.display().to_string()), "{e}");
        let e = BrokerSecrets::load(&broker_path).expect_err("loaded a world-readable broker key");
        assert!(matches!(e.inner(), KeyError::Permissions(m) if *m == bad), "{e:?}");
    }
    for path in [&sensor_path, &broker_path] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    SensorKeys::load(&sensor_path).unwrap();
    BrokerSecrets::load(&broker_path).unwrap();
}
