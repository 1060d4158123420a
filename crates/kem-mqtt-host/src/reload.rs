//! Revocation without a restart: the registry, watched and put in place.
//!
//! The broker plugin and the topic-mode gateway read the registry at start
//! and then keep a [`RegistryWatch`] on it, over its [`RegistryStore`]:
//!
//! - `registry.json`: when the file changes (a new inode, length or
//!   modification time: `kem-mqtt provision` and `kem-mqtt revoke` write a
//!   temporary file and rename it over the old one, so a reader never sees
//!   half of it), the new file is loaded and validated in full;
//! - a database (SQLite, PostgreSQL): only the sensor rows changed since the
//!   version last seen are read and validated, and applied to the registry
//!   the watch holds.
//!
//! Only then does the new registry replace the one in use, in one step. A
//! version that does not load leaves the registry in use as it is; the
//! error is reported once (a file: until it changes again; a database:
//! until the error changes or goes away — a lost connection is retried).
//!
//! What a reload means for the sensors: [`Registry::changed_ids`] names the
//! ids whose entry is gone or different (new keys, another policy). Their
//! next handshake is checked against the new registry; the caller ends
//! their live sessions and pending handshakes (the plugin also closes their
//! MQTT connections). Every other sensor is untouched.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::keys::{KeyError, Registry};
use crate::store::{self, Delta, RegistryLocation, RegistryStore};

/// How often a watch on a registry file looks at it at most (a database:
/// [`RegistryStore::check_every`]).
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What identifies one version of a file: a rename over it changes the
/// inode, an edit in place its length or modification time, a chmod its
/// mode (a registry others may write is refused, one made private again
/// loads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
    mode: u32,
}

pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        inode: m.ino(),
        len: m.len(),
        modified: m.modified().ok(),
        mode: m.mode(),
    })
}

/// A registry being watched for changes.
pub struct RegistryWatch {
    store: Box<dyn RegistryStore>,
    /// The registry as last put in place by this watch, which a database's
    /// changes are applied to (a file is read whole: none kept).
    current: Option<Registry>,
    next_check: Option<Instant>,
    /// The last error reported, so that a lasting one is reported once.
    reported: Option<String>,
}

impl std::fmt::Debug for RegistryWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RegistryWatch({})", self.store.location())
    }
}

impl RegistryWatch {
    /// Loads the registry file at `path` (a missing file is an empty
    /// registry) and starts watching it. The file's version is noted before
    /// it is read, so a change that lands during the load is seen at the
    /// next check, not missed.
    pub fn load(path: &Path) -> Result<(RegistryWatch, Registry), KeyError> {
        RegistryWatch::open(&RegistryLocation::File(path.to_path_buf()))
    }

    /// Opens the registry at `location`, loads it and starts watching it.
    pub fn open(location: &RegistryLocation) -> Result<(RegistryWatch, Registry), KeyError> {
        RegistryWatch::over(store::open(location)?)
    }

    /// Loads the registry of `store` and starts watching it.
    pub fn over(mut store: Box<dyn RegistryStore>) -> Result<(RegistryWatch, Registry), KeyError> {
        let registry = store.load()?;
        let keep = !matches!(store.location(), RegistryLocation::File(_));
        let watch = RegistryWatch {
            store,
            current: keep.then(|| registry.clone()),
            next_check: None,
            reported: None,
        };
        Ok((watch, registry))
    }

    /// Where the registry watched is.
    pub fn location(&self) -> &RegistryLocation {
        self.store.location()
    }

    /// At most once per check interval ([`CHECK_EVERY`] for a file): if the
    /// registry changed since the last version seen, its new version —
    /// `Some(Ok(registry))` to put in place, or `Some(Err(e))` if it does
    /// not load (reported once). `None`: nothing new.
    pub fn poll(&mut self, now: Instant) -> Option<Result<Registry, KeyError>> {
        if self.next_check.is_some_and(|t| now < t) {
            return None;
        }
        self.next_check = Some(now + self.store.check_every());
        self.poll_now()
    }

    /// [`RegistryWatch::poll`] without the rate limit: looks now (a file:
    /// one `stat`; SQLite: one small query; PostgreSQL: the notifications
    /// that arrived). Called before a record is opened or a command
    /// sealed, so that a revocation written before a message is handled
    /// applies to that message, however long the caller waited for it.
    pub fn poll_now(&mut self) -> Option<Result<Registry, KeyError>> {
        match self.store.changes() {
            Ok(None) => {
                self.reported = None;
                None
            }
            Ok(Some(delta)) => {
                self.reported = None;
                Some(Ok(self.put(delta)))
            }
            Err(e) => self.report(e),
        }
    }

    /// Loads the whole registry now, changed or not (a reload signal).
    pub fn reload(&mut self) -> Result<Registry, KeyError> {
        let registry = self.store.load()?;
        if self.current.is_some() {
            self.current = Some(registry.clone());
        }
        Ok(registry)
    }

    fn put(&mut self, delta: Delta) -> Registry {
        match (delta, &mut self.current) {
            (Delta::Whole(registry), _) => registry,
            (rows, Some(current)) => {
                *current = rows.apply(current);
                current.clone()
            }
            (rows, None) => rows.apply(&Registry::default()),
        }
    }

    /// `Some(Err(e))` unless `e` is the error reported last.
    fn report(&mut self, e: KeyError) -> Option<Result<Registry, KeyError>> {
        let text = e.to_string();
        if self.reported.as_deref() == Some(text.as_str()) {
            return None;
        }
        self.reported = Some(text);
        Some(Err(e))
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
    use crate::keys::KeyError;
    use crate::provision::{generate_broker, provision_sensor};
    use crate::OsRng;
    use kem_mqtt::{Suite, SuiteSet};
    use std::os::unix::fs::PermissionsExt;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Issue #47: a registry (or its directory) that group or others may
    /// write is refused at start and on reload, naming the file and the
    /// fix; the registry in use stays, and a private one loads again.
    #[test]
    fn a_registry_others_may_write_is_refused_and_the_one_in_use_stays() {
        let dir = std::env::temp_dir().join(format!("kem-mqtt-writable-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::keys::private_dir(&dir).unwrap();
        let path = dir.join(crate::keys::REGISTRY_FILE);
        let suite = Suite::from_name("ctru-light-ascon").unwrap();
        let secrets = generate_broker(&[suite.kem()], &mut OsRng);
        let mut registry = Registry::default();
        provision_sensor(
            &secrets,
            &mut registry,
            "a",
            suite,
            SuiteSet::EMPTY.with(suite),
            &mut OsRng,
        )
        .unwrap();
        registry.save(&path).unwrap();
        let writable = |r: Result<Registry, KeyError>, named: &Path| {
            let e = r.expect_err("a registry others may write was loaded");
            assert!(matches!(e.inner(), KeyError::WritableByOthers(_)), "{e}");
            assert!(matches!(&e, KeyError::File { path, .. } if path == named), "{e}");
            assert!(e.to_string().contains("chmod go-w"), "{e}");
        };
        for mode in [0o666, 0o664, 0o646, 0o622, 0o620, 0o602] {
            chmod(&path, mode);
            writable(Registry::load_or_empty(&path), &path);
            writable(RegistryWatch::load(&path).map(|(_, r)| r), &path);
        }
        chmod(&path, 0o644);
        let (mut watch, in_use) = RegistryWatch::load(&path).unwrap();
        assert_eq!(in_use.clients.len(), 1);
        // Made writable by others on a running watch: the reload is refused
        // (the caller keeps `in_use`), also for a new file in a directory
        // others may write.
        let t0 = Instant::now();
        chmod(&path, 0o666);
        writable(watch.poll(t0).expect("the chmod is a change"), &path);
        assert!(watch.poll(t0 + CHECK_EVERY).is_none(), "reported once");
        chmod(&path, 0o600);
        assert_eq!(
            watch
                .poll(t0 + 2 * CHECK_EVERY)
                .expect("a change")
                .unwrap()
                .clients
                .len(),
            1
        );
        chmod(&dir, 0o777);
        let mut more = registry.clone();
        provision_sensor(&secrets, &mut more, "b", suite, SuiteSet::EMPTY.with(suite), &mut OsRng).unwrap();
        more.save(&path).unwrap();
        writable(watch.poll(t0 + 3 * CHECK_EVERY).expect("a change"), &dir);
        writable(Registry::load_or_empty(&path), &dir);
        chmod(&dir, 0o1777);
        writable(Registry::load_or_empty(&path), &dir);
        chmod(&dir, 0o700);
        assert_eq!(watch.reload().unwrap().clients.len(), 2);
        // A missing registry in a private directory is an empty one.
        std::fs::remove_file(&path).unwrap();
        assert!(Registry::load_or_empty(&path).unwrap().clients.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
