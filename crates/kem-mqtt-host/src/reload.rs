//! Revocation without a restart: the registry file, watched and reloaded
//! whole.
//!
//! The broker plugin and the topic-mode gateway read `registry.json` at
//! start and then keep a [`RegistryWatch`] on it. When the file changes (a
//! new inode, length or modification time: `kem-mqtt provision` and
//! `kem-mqtt revoke` write it to a temporary file and rename it over the
//! old one, so a reader never sees half of it), the new file is loaded and
//! validated in full; only then does it replace the registry in use, in
//! one step. A file that does not load leaves the registry in use as it is
//! (the error is reported once, until the file changes again).
//!
//! What a reload means for the sensors: [`Registry::changed_ids`] names the
//! ids whose entry is gone or different (new keys, another policy). Their
//! next handshake is checked against the new registry; the caller ends
//! their live sessions and pending handshakes (the plugin also closes their
//! MQTT connections). Every other sensor is untouched.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::keys::{KeyError, Registry};

/// How often a watch looks at the file at most.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What identifies one version of the file: a rename over it changes the
/// inode, an edit in place its length or modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        inode: m.ino(),
        len: m.len(),
        modified: m.modified().ok(),
    })
}

/// A registry file being watched for changes.
#[derive(Debug)]
pub struct RegistryWatch {
    path: PathBuf,
    seen: Option<Stamp>,
    next_check: Option<Instant>,
}

impl RegistryWatch {
    /// Loads the registry at `path` (a missing file is an empty registry)
    /// and starts watching it. The file's version is noted before it is
    /// read, so a change that lands during the load is seen at the next
    /// check, not missed.
    pub fn load(path: &Path) -> Result<(RegistryWatch, Registry), KeyError> {
        let seen = stamp(path);
        let registry = Registry::load_or_empty(path)?;
        let watch = RegistryWatch {
            path: path.to_path_buf(),
            seen,
            next_check: None,
        };
        Ok((watch, registry))
    }

    /// The file watched.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// At most once per [`CHECK_EVERY`]: if the file changed since the
    /// last version seen, loads it — `Some(Ok(registry))` to put in place,
    /// or `Some(Err(e))` if that version does not load (not retried until
    /// the file changes again). `None`: nothing new.
    pub fn poll(&mut self, now: Instant) -> Option<Result<Registry, KeyError>> {
        if self.next_check.is_some_and(|t| now < t) {
            return None;
        }
        self.next_check = Some(now + CHECK_EVERY);
        let current = stamp(&self.path);
        if current == self.seen {
            return None;
        }
        self.seen = current;
        Some(Registry::load_or_empty(&self.path))
    }

    /// Loads the file now, changed or not (a reload signal).
    pub fn reload(&mut self) -> Result<Registry, KeyError> {
        self.seen = stamp(&self.path);
        Registry::load_or_empty(&self.path)
    }
}

impl Registry {
    /// The ids of `self` whose entry is gone from `newer`, or different in
    /// it (other keys, another policy): the sensors a reload to `newer`
    /// revokes.
    pub fn changed_ids(&self, newer: &Registry) -> Vec<String> {
        self.clients
            .iter()
            .filter(|(id, entry)| newer.clients.get(*id) != Some(entry))
            .map(|(id, _)| id.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provision::{generate_broker, provision_sensor};
    use crate::OsRng;
    use kem_mqtt::{Suite, SuiteSet};

    #[test]
    fn a_watch_sees_each_new_version_once_and_keeps_going_after_a_bad_one() {
        let dir = std::env::temp_dir().join(format!("kem-mqtt-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(crate::keys::REGISTRY_FILE);
        let suite = Suite::from_name("ctru-light-ascon").unwrap();
        let secrets = generate_broker(&[suite.kem()], &mut OsRng);
        let mut registry = Registry::default();
        for id in ["a", "b"] {
            provision_sensor(
                &secrets,
                &mut registry,
                id,
                suite,
                SuiteSet::EMPTY.with(suite),
                &mut OsRng,
            )
            .unwrap();
        }
        registry.save(&path).unwrap();
        let (mut watch, loaded) = RegistryWatch::load(&path).unwrap();
        assert_eq!(loaded.clients.len(), 2);
        let t0 = Instant::now();
        assert!(watch.poll(t0).is_none(), "unchanged");
        // b revoked: seen at the next check, not before CHECK_EVERY.
        let mut fewer = registry.clone();
        fewer.clients.remove("b");
        fewer.save(&path).unwrap();
        assert!(watch.poll(t0).is_none(), "checked again too soon");
        let t1 = t0 + CHECK_EVERY;
        let newer = watch.poll(t1).expect("a change").unwrap();
        assert_eq!(registry.changed_ids(&newer), ["b"]);
        assert!(watch.poll(t1 + CHECK_EVERY).is_none(), "reported once");
        // A file that does not load: an error once, then nothing until it changes.
        std::fs::write(&path, "{ not json").unwrap();
        let t2 = t1 + 2 * CHECK_EVERY;
        assert!(matches!(watch.poll(t2), Some(Err(_))));
        assert!(watch.poll(t2 + CHECK_EVERY).is_none());
        registry.save(&path).unwrap();
        let back = watch.poll(t2 + 2 * CHECK_EVERY).expect("a change").unwrap();
        assert!(newer.changed_ids(&back).is_empty(), "b is back: nothing revoked");
        assert_eq!(back.clients.len(), 2);
        // Re-provisioned keys count as a change of that id.
        let mut rekeyed = registry.clone();
        crate::provision::reprovision_sensor(
            &secrets,
            &mut rekeyed,
            "a",
            suite,
            SuiteSet::EMPTY.with(suite),
            &mut OsRng,
        )
        .unwrap();
        assert_eq!(registry.changed_ids(&rekeyed), ["a"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
