//! The registry on a PostgreSQL server: one registry for many broker nodes.
//!
//! Each node keeps one connection and asks for the registry's version at
//! most once per [`CHECK_EVERY`] (one small query; also when the caller
//! looks before every message: a revocation reaches a node's data path
//! within that interval), and after a change only for the rows newer than
//! the version it saw. (`LISTEN`/`NOTIFY` would save the query, but the
//! synchronous client reads a notification only while it waits on the
//! connection, which a node polling without blocking never does.) A lost
//! connection is an error (the registry in use stays) and is opened again
//! at the next look, at most once per [`RECONNECT_EVERY`]. The connection is plain TCP or a Unix
//! socket (`postgres://…?host=/run/postgresql`): TLS to the database is not
//! built in, so keep the database on the node or on a network you trust.

use std::time::{Duration, Instant};

use postgres::{Client as PgClient, NoTls};

use super::{db_error, Delta, RegistryLocation, RegistryStore, Rows, SCHEMA_VERSION};
use crate::keys::{Client, KeyError, Registry};

/// How often a node asks for the registry's version at most.
pub const CHECK_EVERY: Duration = Duration::from_millis(100);
/// How often a node tries to open a lost connection again at most.
pub const RECONNECT_EVERY: Duration = Duration::from_secs(1);

/// Schema version 1, as in SQLite; `kem_mqtt_meta.schema` is its version.
const SCHEMA: &str = "
CREATE TABLE kem_mqtt_meta (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    schema BIGINT NOT NULL,
    version BIGINT NOT NULL,
    sensors BIGINT NOT NULL
);
CREATE TABLE kem_mqtt_sensors (
    client_id TEXT PRIMARY KEY,
    kem TEXT NOT NULL,
    kem_pk BYTEA NOT NULL,
    x25519_pk BYTEA NOT NULL,
    allowed_suites TEXT NOT NULL,
    enrolled BOOLEAN NOT NULL,
    version BIGINT NOT NULL
);
CREATE INDEX kem_mqtt_sensors_by_version ON kem_mqtt_sensors (version);
";

/// A PostgreSQL registry.
pub struct PostgresStore {
    location: RegistryLocation,
    url: String,
    client: Option<PgClient>,
    seen: i64,
    /// When the version was last asked for (`None`: ask at the next look).
    last_check: Option<Instant>,
    last_connect: Instant,
    /// What the last look failed with, until a look succeeds: given again
    /// between looks, so that a lasting failure reads as one (the watch
    /// reports an error once until it changes or goes away).
    failed: Option<String>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PostgresStore({}, version {})", self.location, self.seen)
    }
}

impl PostgresStore {
    /// Connects to `url`, creating the registry's tables if the database
    /// has none yet. Refused: a schema newer than [`SCHEMA_VERSION`].
    pub fn connect(url: &str) -> Result<PostgresStore, KeyError> {
        let location = RegistryLocation::Postgres(url.to_string());
        let mut store = PostgresStore {
            location,
            url: url.to_string(),
            client: None,
            seen: 0,
            last_check: None,
            last_connect: Instant::now(),
            failed: None,
        };
        store.client = Some(store.open_connection()?);
        Ok(store)
    }

    fn err(&self, what: &str, e: impl std::fmt::Display) -> KeyError {
        db_error(&self.location, what, e)
    }

    /// A new connection, the schema checked (or created).
    fn open_connection(&mut self) -> Result<PgClient, KeyError> {
        self.last_connect = Instant::now();
        let mut client = PgClient::connect(&self.url, NoTls).map_err(|e| self.err("connect", e))?;
        let mut tx = client.transaction().map_err(|e| self.err("schema", e))?;
        // One creator at a time across nodes.
        tx.execute("SELECT pg_advisory_xact_lock(7352405)", &[])
            .map_err(|e| self.err("schema", e))?;
        let exists: bool = tx
            .query_one("SELECT to_regclass('kem_mqtt_meta') IS NOT NULL", &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.err("schema", e))?;
        if exists {
            let schema: i64 = tx
                .query_one("SELECT schema FROM kem_mqtt_meta WHERE id = 0", &[])
                .and_then(|r| r.try_get(0))
                .map_err(|e| self.err("not a registry database", e))?;
            if schema > SCHEMA_VERSION {
                return Err(KeyError::NewerSchema {
                    found: schema,
                    supported: SCHEMA_VERSION,
                });
            }
        } else {
            tx.batch_execute(SCHEMA).map_err(|e| self.err("create", e))?;
            tx.execute(
                "INSERT INTO kem_mqtt_meta (id, schema, version, sensors) VALUES (0, $1, 0, 0)",
                &[&SCHEMA_VERSION],
            )
            .map_err(|e| self.err("create", e))?;
        }
        tx.commit().map_err(|e| self.err("schema", e))?;
        Ok(client)
    }

    /// The connection, opened again if it was lost (at most once per
    /// [`RECONNECT_EVERY`]).
    fn client(&mut self) -> Result<&mut PgClient, KeyError> {
        if self.client.as_ref().is_none_or(|c| c.is_closed()) {
            self.client = None;
            if self.last_connect.elapsed() < RECONNECT_EVERY {
                return Err(self.err("connection", "lost; trying again"));
            }
            let c = self.open_connection()?;
            self.client = Some(c);
        }
        Ok(self.client.as_mut().expect("opened above"))
    }

    /// A failed statement on a connection that is now closed drops it, so
    /// that the next look opens a new one.
    fn note_failure(&mut self) {
        if self.client.as_ref().is_some_and(|c| c.is_closed()) {
            self.client = None;
        }
    }

    /// The rows changed after `since` (all rows: 0), read in one snapshot
    /// with the version they are at.
    fn rows_since(&mut self, since: i64) -> Result<Rows, KeyError> {
        let location = self.location.clone();
        let err = |what: &str, e: postgres::Error| db_error(&location, what, e);
        let client = self.client()?;
        let mut tx = client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| err("read", e))?;
        let version: i64 = tx
            .query_one("SELECT version FROM kem_mqtt_meta WHERE id = 0", &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| err("read version", e))?;
        let rows = tx
            .query(
                "SELECT client_id, kem, kem_pk, x25519_pk, allowed_suites, enrolled FROM kem_mqtt_sensors \
                 WHERE version > $1",
                &[&since],
            )
            .map_err(|e| err("read", e))?;
        tx.commit().map_err(|e| err("read", e))?;
        let mut read = Rows::new(version, since);
        for row in rows {
            let get = |e: postgres::Error| err("read a sensor row", e);
            read.add(
                &location,
                row.try_get(0).map_err(get)?,
                row.try_get(1).map_err(get)?,
                row.try_get(2).map_err(get)?,
                row.try_get(3).map_err(get)?,
                row.try_get(4).map_err(get)?,
                row.try_get(5).map_err(get)?,
            )?;
        }
        Ok(read)
    }

    /// Whether the version moved since the last one seen; asked at most
    /// once per [`CHECK_EVERY`] (`false` in between).
    fn maybe_changed(&mut self) -> Result<bool, KeyError> {
        if self.last_check.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            return Ok(false);
        }
        self.last_check = Some(Instant::now());
        let location = self.location.clone();
        let seen = self.seen;
        let version: i64 = self
            .client()?
            .query_one("SELECT version FROM kem_mqtt_meta WHERE id = 0", &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| db_error(&location, "read version", e))?;
        Ok(version != seen)
    }

    /// [`RegistryStore::changes`] without the memory of the last failure.
    fn look(&mut self) -> Result<Option<Delta>, KeyError> {
        let changed = self.maybe_changed();
        self.note_failure();
        if !changed? {
            return Ok(None);
        }
        let read = self.rows_since(self.seen);
        self.note_failure();
        let rows = read?;
        if rows.version == self.seen {
            return Ok(None);
        }
        self.seen = rows.version;
        Ok(Some(rows.into_delta()))
    }

    /// One write transaction: the version advanced, `body` on the rows.
    fn write(
        &mut self,
        what: &str,
        body: impl FnOnce(&mut postgres::Transaction<'_>, i64) -> Result<(), KeyError>,
    ) -> Result<(), KeyError> {
        let location = self.location.clone();
        let err = |e: postgres::Error| db_error(&location, what, e);
        let client = self.client()?;
        let mut tx = client.transaction().map_err(err)?;
        // The row lock makes writers take turns, so versions commit in order.
        let version: i64 = tx
            .query_one(
                "UPDATE kem_mqtt_meta SET version = version + 1 WHERE id = 0 RETURNING version",
                &[],
            )
            .and_then(|r| r.try_get(0))
            .map_err(err)?;
        body(&mut tx, version)?;
        tx.commit().map_err(err)
    }
}

impl RegistryStore for PostgresStore {
    fn location(&self) -> &RegistryLocation {
        &self.location
    }
    fn check_every(&self) -> Duration {
        CHECK_EVERY
    }
    fn load(&mut self) -> Result<Registry, KeyError> {
        let loaded = self.rows_since(0);
        self.note_failure();
        let rows = loaded?;
        self.seen = rows.version;
        self.last_check = Some(Instant::now());
        Ok(rows.into_registry())
    }
    fn changes(&mut self) -> Result<Option<Delta>, KeyError> {
        if let (Some(failed), Some(t)) = (&self.failed, self.last_check) {
            if t.elapsed() < CHECK_EVERY {
                return Err(KeyError::Database(failed.clone()));
            }
        }
        let looked = self.look();
        self.failed = match &looked {
            Err(KeyError::Database(e)) => Some(e.clone()),
            _ => None,
        };
        looked
    }
    fn enrol(&mut self, sensors: &[(String, Client)], replace: bool) -> Result<(), KeyError> {
        let location = self.location.clone();
        let written = self.write("enrol", |tx, version| {
            let err = |e: postgres::Error| db_error(&location, "enrol", e);
            let upsert = tx
                .prepare(
                    "INSERT INTO kem_mqtt_sensors (client_id, kem, kem_pk, x25519_pk, allowed_suites, enrolled, version) \
                     VALUES ($1, $2, $3, $4, $5, TRUE, $6) \
                     ON CONFLICT (client_id) DO UPDATE SET kem = excluded.kem, kem_pk = excluded.kem_pk, \
                     x25519_pk = excluded.x25519_pk, allowed_suites = excluded.allowed_suites, enrolled = TRUE, \
                     version = excluded.version",
                )
                .map_err(err)?;
            let was_enrolled = tx
                .prepare("SELECT enrolled FROM kem_mqtt_sensors WHERE client_id = $1 FOR UPDATE")
                .map_err(err)?;
            let mut added = 0i64;
            for (id, client) in sensors {
                let rows = tx.query(&was_enrolled, &[id]).map_err(err)?;
                if rows.first().is_some_and(|r| r.get::<_, bool>(0)) {
                    if !replace {
                        return Err(KeyError::AlreadyEnrolled(id.clone()));
                    }
                } else {
                    added += 1;
                }
                tx.execute(
                    &upsert,
                    &[
                        id,
                        &client.kem.name(),
                        &client.kem_pk,
                        &client.x25519_pk.as_slice(),
                        &client.allowed_names(),
                        &version,
                    ],
                )
                .map_err(err)?;
            }
            tx.execute("UPDATE kem_mqtt_meta SET sensors = sensors + $1 WHERE id = 0", &[&added])
                .map_err(err)?;
            Ok(())
        });
        self.note_failure();
        written
    }
    fn revoke(&mut self, ids: &[String]) -> Result<(), KeyError> {
        let location = self.location.clone();
        let written = self.write("revoke", |tx, version| {
            let err = |e: postgres::Error| db_error(&location, "revoke", e);
            let tombstone = tx
                .prepare(
                    "UPDATE kem_mqtt_sensors SET enrolled = FALSE, kem_pk = '', x25519_pk = '', allowed_suites = '', \
                     version = $2 WHERE client_id = $1 AND enrolled",
                )
                .map_err(err)?;
            for id in ids {
                if tx.execute(&tombstone, &[id, &version]).map_err(err)? == 0 {
                    return Err(KeyError::NotEnrolled(id.clone()));
                }
            }
            tx.execute(
                "UPDATE kem_mqtt_meta SET sensors = sensors - $1 WHERE id = 0",
                &[&(ids.len() as i64)],
            )
            .map_err(err)?;
            Ok(())
        });
        self.note_failure();
        written
    }
    fn enrolled(&mut self) -> Result<usize, KeyError> {
        let location = self.location.clone();
        let counted = self
            .client()?
            .query_one("SELECT sensors FROM kem_mqtt_meta WHERE id = 0", &[])
            .and_then(|r| r.try_get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(|e| db_error(&location, "count", e));
        self.note_failure();
        counted
    }
}
