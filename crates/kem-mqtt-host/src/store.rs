//! Where the sensor registry lives, behind one [`RegistryStore`]: a JSON
//! file (`registry.json`, the default), an SQLite database (one file, the
//! embedded choice) or a PostgreSQL server (one registry for many broker
//! nodes).
//!
//! | store | enrol / revoke | a node picks up a change by |
//! |---|---|---|
//! | [`FileStore`] | reads and rewrites the whole file (under [`DirLock`]) | seeing the file's inode, length or time change, then loading it whole |
//! | [`SqliteStore`] | one transaction touching only the sensors named | reading the rows whose version is newer than the last it saw |
//! | [`PostgresStore`] | the same, on a server many nodes share | the same, asking at most every 100 ms |
//!
//! In both databases every enrolment and revocation is one transaction
//! that also advances the registry's version, and every sensor row carries
//! the version that last changed it; a revoked sensor's row stays as a
//! tombstone (its keys cleared) so that the nodes see it go. A change is
//! complete or absent: a second enrolment of an id without `replace`, or a
//! revocation of an id not enrolled, rolls the whole transaction back.
//! Every row a node reads is validated as a `registry.json` entry is
//! ([`Client::from_parts`]); a row that does not validate, a file that is
//! not a registry database, a schema newer than this build
//! ([`KeyError::NewerSchema`]) or a lost connection is an error, and the
//! caller keeps the registry it has.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::keys::{self, Client, DirLock, KeyError, Registry};

#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

/// The schema version both databases are created with, and the newest
/// this build reads.
pub const SCHEMA_VERSION: i64 = 1;

/// Where a registry is: `registry.json` (or any other path), an SQLite
/// database (`sqlite:PATH`, or a path ending in `.sqlite`, `.sqlite3` or
/// `.db`), or a PostgreSQL server (`postgres://…` or `postgresql://…`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryLocation {
    /// A JSON registry file.
    File(PathBuf),
    /// An SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

impl RegistryLocation {
    /// The registry of a key directory: its `registry.json`.
    pub fn in_dir(dir: &Path) -> RegistryLocation {
        RegistryLocation::File(dir.join(keys::REGISTRY_FILE))
    }

    /// Reads a location as the command line and the plugin's options give
    /// it; an empty one is refused.
    pub fn parse(s: &str) -> Result<RegistryLocation, KeyError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(KeyError::Invalid("an empty registry location".into()));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(RegistryLocation::Postgres(s.to_string()));
        }
        if let Some(path) = s.strip_prefix("sqlite:") {
            return Ok(RegistryLocation::Sqlite(PathBuf::from(path)));
        }
        let path = PathBuf::from(s);
        let sqlite = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "sqlite" | "sqlite3" | "db"));
        Ok(if sqlite {
            RegistryLocation::Sqlite(path)
        } else {
            RegistryLocation::File(path)
        })
    }
}

impl std::str::FromStr for RegistryLocation {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RegistryLocation::parse(s)
    }
}

/// As given, but a PostgreSQL password is shown as `***`.
impl std::fmt::Display for RegistryLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistryLocation::File(p) => write!(f, "{}", p.display()),
            RegistryLocation::Sqlite(p) => write!(f, "sqlite:{}", p.display()),
            RegistryLocation::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

/// `url` with the password of its user-info part (`user:password@`) and
/// any `password=` parameter replaced by `***`.
fn redact_password(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = match rest.split_once('@') {
        Some((user_info, host)) if !user_info.contains('/') => match user_info.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => rest.to_string(),
        },
        _ => rest.to_string(),
    };
    let rest = match rest.find("password=") {
        Some(at) => {
            let value_end = rest[at..].find('&').map_or(rest.len(), |e| at + e);
            format!("{}password=***{}", &rest[..at], &rest[value_end..])
        }
        None => rest,
    };
    if scheme.is_empty() {
        rest
    } else {
        format!("{scheme}://{rest}")
    }
}

/// What changed in a registry since a node last looked.
#[derive(Debug)]
pub enum Delta {
    /// The whole registry, read again (the file store).
    Whole(Registry),
    /// The sensors enrolled or changed (validated), and the ids revoked.
    Rows {
        /// Enrolled or re-enrolled.
        set: Vec<(String, Client)>,
        /// Revoked.
        removed: Vec<String>,
    },
}

impl Delta {
    /// `registry` with the change applied.
    pub fn apply(self, registry: &Registry) -> Registry {
        match self {
            Delta::Whole(r) => r,
            Delta::Rows { set, removed } => {
                let mut r = registry.clone();
                for id in removed {
                    r.clients.remove(&id);
                }
                r.clients.extend(set);
                r
            }
        }
    }
}

/// A sensor registry: read whole, watched for changes, enrolled into and
/// revoked from.
pub trait RegistryStore: Send {
    /// Where it is.
    fn location(&self) -> &RegistryLocation;
    /// How often a node looks for changes at most (a file: one `stat`; a
    /// database: one small query).
    fn check_every(&self) -> Duration;
    /// The whole registry, noted as seen.
    fn load(&mut self) -> Result<Registry, KeyError>;
    /// What changed since the last version seen (`None`: nothing), noted
    /// as seen. On an error nothing is noted: the next call tries again.
    fn changes(&mut self) -> Result<Option<Delta>, KeyError>;
    /// Enrols `sensors` in one step: all of them or, on any error, none.
    /// An id already enrolled is [`KeyError::AlreadyEnrolled`] unless
    /// `replace` (new keys for an enrolled sensor lock the deployed one out).
    fn enrol(&mut self, sensors: &[(String, Client)], replace: bool) -> Result<(), KeyError>;
    /// Revokes `ids` in one step: all of them or, if one is not enrolled
    /// ([`KeyError::NotEnrolled`]), none.
    fn revoke(&mut self, ids: &[String]) -> Result<(), KeyError>;
    /// How many sensors are enrolled.
    fn enrolled(&mut self) -> Result<usize, KeyError>;
}

impl std::fmt::Debug for dyn RegistryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RegistryStore({})", self.location())
    }
}

/// Opens the registry at `location`; a database is created (empty, with
/// this build's schema) if it does not exist yet.
pub fn open(location: &RegistryLocation) -> Result<Box<dyn RegistryStore>, KeyError> {
    match location {
        RegistryLocation::File(path) => Ok(Box::new(FileStore::new(path))),
        #[cfg(feature = "sqlite")]
        RegistryLocation::Sqlite(path) => Ok(Box::new(SqliteStore::open(path)?)),
        #[cfg(feature = "postgres")]
        RegistryLocation::Postgres(url) => Ok(Box::new(PostgresStore::connect(url)?)),
        #[allow(unreachable_patterns)]
        other => Err(KeyError::Database(format!(
            "{other}: this build of kem-mqtt-host has no support for it (cargo features sqlite, postgres)"
        ))),
    }
}

/// Copies every sensor of `from` into `to` in one step (`replace`: ids
/// already in `to` take `from`'s keys; otherwise such an id refuses the
/// whole import). Returns how many were copied.
pub fn import(from: &mut dyn RegistryStore, to: &mut dyn RegistryStore, replace: bool) -> Result<usize, KeyError> {
    let registry = from.load()?;
    let sensors: Vec<(String, Client)> = registry.clients.into_iter().collect();
    to.enrol(&sensors, replace)?;
    Ok(sensors.len())
}

/// `registry.json`: read and written whole.
#[derive(Debug)]
pub struct FileStore {
    location: RegistryLocation,
    path: PathBuf,
    seen: Option<crate::reload::Stamp>,
}

impl FileStore {
    /// The registry file at `path` (a missing file is an empty registry).
    pub fn new(path: &Path) -> FileStore {
        FileStore {
            location: RegistryLocation::File(path.to_path_buf()),
            path: path.to_path_buf(),
            seen: None,
        }
    }

    /// Reads, changes and writes the file back under the key directory's
    /// lock, so that two writers take turns.
    fn modify(&mut self, change: impl FnOnce(&mut Registry) -> Result<(), KeyError>) -> Result<(), KeyError> {
        let _lock = DirLock::acquire(keys::directory_of(&self.path))?;
        let mut registry = Registry::load_or_empty(&self.path)?;
        change(&mut registry)?;
        registry.save(&self.path)
    }
}

impl RegistryStore for FileStore {
    fn location(&self) -> &RegistryLocation {
        &self.location
    }
    fn check_every(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn load(&mut self) -> Result<Registry, KeyError> {
        // Noted before it is read: a change landing during the load is seen
        // at the next check, not missed.
        self.seen = crate::reload::stamp(&self.path);
        Registry::load_or_empty(&self.path)
    }
    fn changes(&mut self) -> Result<Option<Delta>, KeyError> {
        let current = crate::reload::stamp(&self.path);
        if current == self.seen {
            return Ok(None);
        }
        // A version that does not load is not tried again until the file
        // changes again.
        self.seen = current;
        Registry::load_or_empty(&self.path).map(|r| Some(Delta::Whole(r)))
    }
    fn enrol(&mut self, sensors: &[(String, Client)], replace: bool) -> Result<(), KeyError> {
        self.modify(|registry| {
            for (id, client) in sensors {
                if registry.clients.insert(id.clone(), client.clone()).is_some() && !replace {
                    return Err(KeyError::AlreadyEnrolled(id.clone()));
                }
            }
            Ok(())
        })
    }
    fn revoke(&mut self, ids: &[String]) -> Result<(), KeyError> {
        self.modify(|registry| {
            for id in ids {
                if registry.clients.remove(id).is_none() {
                    return Err(KeyError::NotEnrolled(id.clone()));
                }
            }
            Ok(())
        })
    }
    fn enrolled(&mut self) -> Result<usize, KeyError> {
        Registry::load_or_empty(&self.path).map(|r| r.clients.len())
    }
}

/// What a database read since a version: the rows changed, as of `version`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) struct Rows {
    /// The registry's version the rows are read at.
    pub version: i64,
    /// Sensors enrolled or changed since, validated.
    pub set: Vec<(String, Client)>,
    /// Sensors revoked since.
    pub removed: Vec<String>,
    since: i64,
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl Rows {
    pub(crate) fn new(version: i64, since: i64) -> Rows {
        Rows {
            version,
            set: Vec::new(),
            removed: Vec::new(),
            since,
        }
    }

    /// One sensor row as read: validated into `set`, or, revoked, into
    /// `removed` (only news to a reader that may hold it: not on a load).
    #[allow(clippy::too_many_arguments)] // the row's columns, in order
    pub(crate) fn add(
        &mut self,
        location: &RegistryLocation,
        id: String,
        kem: &str,
        kem_pk: Vec<u8>,
        x25519_pk: &[u8],
        allowed_suites: &str,
        enrolled: bool,
    ) -> Result<(), KeyError> {
        if !enrolled {
            if self.since > 0 {
                self.removed.push(id);
            }
            return Ok(());
        }
        let suites = allowed_suites.split(',').filter(|s| !s.is_empty());
        let client = Client::from_parts(&id, kem, kem_pk, x25519_pk, suites)
            .map_err(|e| KeyError::Database(format!("{location}: sensor {id:?}: {e}")))?;
        self.set.push((id, client));
        Ok(())
    }

    /// The whole registry these rows make (read since version 0).
    pub(crate) fn into_registry(self) -> Registry {
        Registry {
            clients: self.set.into_iter().collect(),
        }
    }

    /// The change they make.
    pub(crate) fn into_delta(self) -> Delta {
        Delta::Rows {
            set: self.set,
            removed: self.removed,
        }
    }
}

/// A database error as a [`KeyError::Database`] naming the store.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn db_error(location: &RegistryLocation, what: &str, e: impl std::fmt::Display) -> KeyError {
    KeyError::Database(format!("{location}: {what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_told_apart_by_their_form() {
        let p = |s: &str| RegistryLocation::parse(s).unwrap();
        assert_eq!(
            p("keys/registry.json"),
            RegistryLocation::File("keys/registry.json".into())
        );
        assert_eq!(p("sqlite:keys/reg"), RegistryLocation::Sqlite("keys/reg".into()));
        assert_eq!(
            p("/var/lib/kem/registry.sqlite"),
            RegistryLocation::Sqlite("/var/lib/kem/registry.sqlite".into())
        );
        assert_eq!(p("r.db"), RegistryLocation::Sqlite("r.db".into()));
        assert_eq!(
            p("postgresql://kem@localhost/fleet"),
            RegistryLocation::Postgres("postgresql://kem@localhost/fleet".into())
        );
        assert!(RegistryLocation::parse("  ").is_err());
    }

    #[test]
    fn a_postgres_password_is_never_shown() {
        let shown = |s: &str| RegistryLocation::parse(s).unwrap().to_string();
        assert_eq!(
            shown("postgres://kem:s3cret@db:5432/fleet"),
            "postgres://kem:***@db:5432/fleet"
        );
        assert_eq!(shown("postgres://kem@db/fleet"), "postgres://kem@db/fleet");
        assert_eq!(
            shown("postgres://db/fleet?user=kem&password=s3cret&sslmode=disable"),
            "postgres://db/fleet?user=kem&password=***&sslmode=disable"
        );
        assert!(!shown("postgresql://a:pw1@c/d?password=pw2").contains("pw"));
    }
}
