//! The registry in an SQLite database: one file, one row per sensor.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::{db_error, Delta, RegistryLocation, RegistryStore, Rows, SCHEMA_VERSION};
use crate::keys::{self, Client, KeyError, Registry};

/// The tables of schema version 1. `registry_meta.version` counts the
/// changes and `registry_meta.sensors` the sensors enrolled;
/// `sensors.version` is the change that last touched a row; `enrolled = 0`
/// is a revoked sensor's tombstone.
const SCHEMA: &str = "
CREATE TABLE registry_meta (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    version INTEGER NOT NULL,
    sensors INTEGER NOT NULL
);
INSERT INTO registry_meta (id, version, sensors) VALUES (0, 0, 0);
CREATE TABLE sensors (
    client_id TEXT PRIMARY KEY NOT NULL,
    kem TEXT NOT NULL,
    kem_pk BLOB NOT NULL,
    x25519_pk BLOB NOT NULL,
    allowed_suites TEXT NOT NULL,
    enrolled INTEGER NOT NULL,
    version INTEGER NOT NULL
);
CREATE INDEX sensors_by_version ON sensors (version);
";

/// An SQLite registry.
pub struct SqliteStore {
    location: RegistryLocation,
    conn: Connection,
    seen: i64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SqliteStore({}, version {})", self.location, self.seen)
    }
}

impl SqliteStore {
    /// Opens the database at `path`, creating it (mode 0600) with this
    /// build's schema if it does not exist. Refused: a database or
    /// directory that group or others may write (whoever writes the
    /// registry enrols keys), a file that is not a registry database, and a
    /// schema newer than [`SCHEMA_VERSION`].
    pub fn open(path: &Path) -> Result<SqliteStore, KeyError> {
        let location = RegistryLocation::Sqlite(path.to_path_buf());
        let dir = keys::directory_of(path);
        let meta = std::fs::metadata(dir).map_err(|e| KeyError::from(e).in_file(dir))?;
        keys::refuse_writable_by_others(&meta).map_err(|e| e.in_file(dir))?;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(KeyError::from(e).in_file(path)),
        }
        let meta = std::fs::metadata(path).map_err(|e| KeyError::from(e).in_file(path))?;
        keys::refuse_writable_by_others(&meta).map_err(|e| e.in_file(path))?;
        let err = |what: &str, e: rusqlite::Error| db_error(&location, what, e);
        let mut conn = Connection::open(path).map_err(|e| err("open", e))?;
        // Writers take turns (enrolment runs, the plugin never writes); a
        // reader never waits for a writer in WAL mode.
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| err("busy timeout", e))?;
        let schema: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| err("not a registry database", e))?;
        if schema > SCHEMA_VERSION {
            return Err(KeyError::NewerSchema {
                found: schema,
                supported: SCHEMA_VERSION,
            });
        }
        if schema == 0 {
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                .map_err(|e| err("journal mode", e))?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| err("create", e))?;
            // Another process may have created it meanwhile.
            let again: i64 = tx
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(|e| err("create", e))?;
            if again == 0 {
                let tables: i64 = tx
                    .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                    .map_err(|e| err("create", e))?;
                if tables != 0 {
                    return Err(KeyError::Database(format!(
                        "{location}: a database with other tables, not a kem-mqtt registry"
                    )));
                }
                tx.execute_batch(SCHEMA).map_err(|e| err("create", e))?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                    .map_err(|e| err("create", e))?;
            }
            tx.commit().map_err(|e| err("create", e))?;
        }
        Ok(SqliteStore {
            location,
            conn,
            seen: 0,
        })
    }

    fn err(&self, what: &str, e: rusqlite::Error) -> KeyError {
        db_error(&self.location, what, e)
    }

    fn version(&self) -> Result<i64, KeyError> {
        self.conn
            .query_row("SELECT version FROM registry_meta WHERE id = 0", [], |r| r.get(0))
            .map_err(|e| self.err("read version", e))
    }

    /// The rows changed after `since` (all rows: 0), read in one read
    /// transaction with the version they are at.
    fn rows_since(&mut self, since: i64) -> Result<Rows, KeyError> {
        let location = self.location.clone();
        let err = |what: &str, e: rusqlite::Error| db_error(&location, what, e);
        let tx = self.conn.transaction().map_err(|e| err("read", e))?;
        let version: i64 = tx
            .query_row("SELECT version FROM registry_meta WHERE id = 0", [], |r| r.get(0))
            .map_err(|e| err("read version", e))?;
        let mut read = Rows::new(version, since);
        {
            let mut stmt = tx
                .prepare(
                    "SELECT client_id, kem, kem_pk, x25519_pk, allowed_suites, enrolled FROM sensors \
                     WHERE version > ?1",
                )
                .map_err(|e| err("read", e))?;
            let mut rows = stmt.query(params![since]).map_err(|e| err("read", e))?;
            while let Some(row) = rows.next().map_err(|e| err("read", e))? {
                let get = |e: rusqlite::Error| err("read a sensor row", e);
                read.add(
                    &location,
                    row.get(0).map_err(get)?,
                    &row.get::<_, String>(1).map_err(get)?,
                    row.get(2).map_err(get)?,
                    &row.get::<_, Vec<u8>>(3).map_err(get)?,
                    &row.get::<_, String>(4).map_err(get)?,
                    row.get::<_, i64>(5).map_err(get)? != 0,
                )?;
            }
        }
        tx.commit().map_err(|e| err("read", e))?;
        Ok(read)
    }

    /// One write transaction: writers take turns (`BEGIN IMMEDIATE`), the
    /// version advances, `body` changes the rows; an error from `body`
    /// rolls it all back (the transaction is dropped uncommitted).
    fn write(
        &mut self,
        what: &str,
        body: impl FnOnce(&rusqlite::Transaction<'_>, i64, &dyn Fn(rusqlite::Error) -> KeyError) -> Result<(), KeyError>,
    ) -> Result<(), KeyError> {
        let location = self.location.clone();
        let err = |e: rusqlite::Error| db_error(&location, what, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let version: i64 = tx
            .query_row(
                "UPDATE registry_meta SET version = version + 1 WHERE id = 0 RETURNING version",
                [],
                |r| r.get(0),
            )
            .map_err(err)?;
        body(&tx, version, &err)?;
        tx.commit().map_err(err)
    }
}

impl RegistryStore for SqliteStore {
    fn location(&self) -> &RegistryLocation {
        &self.location
    }
    fn check_every(&self) -> Duration {
        Duration::from_millis(100)
    }
    fn load(&mut self) -> Result<Registry, KeyError> {
        let rows = self.rows_since(0)?;
        self.seen = rows.version;
        Ok(rows.into_registry())
    }
    fn changes(&mut self) -> Result<Option<Delta>, KeyError> {
        if self.version()? == self.seen {
            return Ok(None);
        }
        let rows = self.rows_since(self.seen)?;
        self.seen = rows.version;
        Ok(Some(rows.into_delta()))
    }
    fn enrol(&mut self, sensors: &[(String, Client)], replace: bool) -> Result<(), KeyError> {
        self.write("enrol", |tx, version, err| {
            let mut enrolled = tx
                .prepare("SELECT enrolled FROM sensors WHERE client_id = ?1")
                .map_err(err)?;
            let mut upsert = tx
                .prepare(
                    "INSERT INTO sensors (client_id, kem, kem_pk, x25519_pk, allowed_suites, enrolled, version) \
                     VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6) \
                     ON CONFLICT (client_id) DO UPDATE SET kem = excluded.kem, kem_pk = excluded.kem_pk, \
                     x25519_pk = excluded.x25519_pk, allowed_suites = excluded.allowed_suites, enrolled = 1, \
                     version = excluded.version",
                )
                .map_err(err)?;
            let mut added = 0i64;
            for (id, client) in sensors {
                let was: Option<i64> = enrolled.query_row(params![id], |r| r.get(0)).optional().map_err(err)?;
                if was == Some(1) {
                    if !replace {
                        return Err(KeyError::AlreadyEnrolled(id.clone()));
                    }
                } else {
                    added += 1;
                }
                upsert
                    .execute(params![
                        id,
                        client.kem.name(),
                        client.kem_pk,
                        client.x25519_pk.as_slice(),
                        client.allowed_names(),
                        version
                    ])
                    .map_err(err)?;
            }
            tx.execute(
                "UPDATE registry_meta SET sensors = sensors + ?1 WHERE id = 0",
                params![added],
            )
            .map_err(err)?;
            Ok(())
        })
    }
    fn revoke(&mut self, ids: &[String]) -> Result<(), KeyError> {
        self.write("revoke", |tx, version, err| {
            let mut tombstone = tx
                .prepare(
                    "UPDATE sensors SET enrolled = 0, kem_pk = x'', x25519_pk = x'', allowed_suites = '', \
                     version = ?2 WHERE client_id = ?1 AND enrolled = 1",
                )
                .map_err(err)?;
            for id in ids {
                if tombstone.execute(params![id, version]).map_err(err)? == 0 {
                    return Err(KeyError::NotEnrolled(id.clone()));
                }
            }
            tx.execute(
                "UPDATE registry_meta SET sensors = sensors - ?1 WHERE id = 0",
                params![ids.len() as i64],
            )
            .map_err(err)?;
            Ok(())
        })
    }
    fn enrolled(&mut self) -> Result<usize, KeyError> {
        self.conn
            .query_row("SELECT sensors FROM registry_meta WHERE id = 0", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as usize)
            .map_err(|e| self.err("count", e))
    }
}
