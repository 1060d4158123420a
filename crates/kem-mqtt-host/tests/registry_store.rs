//! The registry stores (issue #52): enrolment and revocation as single
//! steps, nodes picking up changes incrementally, and bad input — a corrupt
//! or foreign database, a newer schema, a row that does not validate, a
//! lost connection — as an error that keeps the registry in use.

mod common;

use std::time::{Duration, Instant};

use avr_lab::mqtt::registry_db::Postgres;
use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::keys::{BrokerSecrets, Client, KeyError, Registry};
use kem_mqtt_host::provision::{generate_broker, new_sensor};
use kem_mqtt_host::reload::RegistryWatch;
use kem_mqtt_host::store::{self, RegistryLocation, RegistryStore, SqliteStore};
use kem_mqtt_host::OsRng;

fn suite() -> Suite {
    Suite::from_name("ctru-light-ascon+x25519").unwrap()
}

fn broker() -> BrokerSecrets {
    generate_broker(&[suite().kem()], &mut OsRng)
}

fn sensors(broker: &BrokerSecrets, ids: &[&str]) -> Vec<(String, Client)> {
    ids.iter()
        .map(|id| {
            let (client, _) = new_sensor(broker, id, suite(), SuiteSet::EMPTY.with(suite()), &mut OsRng).unwrap();
            (id.to_string(), client)
        })
        .collect()
}

fn ids(r: &Registry) -> Vec<&str> {
    r.clients.keys().map(String::as_str).collect()
}

/// A private temporary directory, removed when dropped.
struct TempDir(std::path::PathBuf);
impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("kem-mqtt-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        kem_mqtt_host::keys::private_dir(&dir).unwrap();
        TempDir(dir)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The watch reports the next change of `store` (polling as a node does).
fn next_change(watch: &mut RegistryWatch) -> Result<Registry, KeyError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(r) = watch.poll_now() {
            return r;
        }
        assert!(Instant::now() < deadline, "no change seen in 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What every store must do, on a writer and a separate watching node.
fn enrol_revoke_and_watch(mut writer: Box<dyn RegistryStore>, node: Box<dyn RegistryStore>) {
    let b = broker();
    let (mut watch, start) = RegistryWatch::over(node).unwrap();
    assert!(start.clients.is_empty());
    let first = sensors(&b, &["a", "b"]);
    writer.enrol(&first, false).unwrap();
    let r1 = next_change(&mut watch).unwrap();
    assert_eq!(ids(&r1), ["a", "b"]);
    assert_eq!(r1.clients["a"], first[0].1);
    assert!(watch.poll_now().is_none(), "a change is reported once");

    // A second enrolment of `b` refuses the whole step: `c` is not enrolled either.
    let again = sensors(&b, &["c", "b"]);
    let e = writer.enrol(&again, false).unwrap_err();
    assert!(matches!(e, KeyError::AlreadyEnrolled(ref id) if id == "b"), "{e}");
    assert_eq!(writer.enrolled().unwrap(), 2);
    std::thread::sleep(Duration::from_millis(50));
    assert!(watch.poll_now().is_none(), "a refused enrolment is no change");

    // A revocation naming one unknown id revokes none.
    let e = writer.revoke(&["a".into(), "zz".into()]).unwrap_err();
    assert!(matches!(e, KeyError::NotEnrolled(ref id) if id == "zz"), "{e}");
    assert_eq!(writer.enrolled().unwrap(), 2);

    writer.revoke(&["a".into()]).unwrap();
    let r2 = next_change(&mut watch).unwrap();
    assert_eq!(ids(&r2), ["b"]);
    assert_eq!(r1.changed_ids(&r2), ["a"]);
    let e = writer.revoke(&["a".into()]).unwrap_err();
    assert!(matches!(e, KeyError::NotEnrolled(_)), "revoked twice: {e}");

    // Re-enrolled with new keys (replace), and a new sensor beside it.
    let back = sensors(&b, &["a", "c"]);
    writer.enrol(&back, true).unwrap();
    let r3 = next_change(&mut watch).unwrap();
    assert_eq!(ids(&r3), ["a", "b", "c"]);
    assert_eq!(r3.clients["a"], back[0].1);
    assert_ne!(r3.clients["a"], r1.clients["a"]);
    // Replacing keys counts as revoking the old ones.
    let mut rekey = sensors(&b, &["b"]);
    writer.enrol(&rekey, true).unwrap();
    let r4 = next_change(&mut watch).unwrap();
    assert_eq!(r3.changed_ids(&r4), ["b"]);
    assert_eq!(r4.clients["b"], rekey.pop().unwrap().1);
    // What the watch built from the changes is what a fresh load reads.
    assert_eq!(watch.reload().unwrap().clients, r4.clients);
    assert_eq!(writer.enrolled().unwrap(), 3);
}

#[test]
fn sqlite_enrols_and_revokes_in_single_steps_and_nodes_see_only_the_changes() {
    let dir = TempDir::new("sqlite");
    let path = dir.0.join("registry.sqlite");
    let loc = RegistryLocation::parse(path.to_str().unwrap()).unwrap();
    let writer = store::open(&loc).unwrap();
    let node = store::open(&loc).unwrap();
    // Open on, so that the write-ahead log and its index stay on disk.
    let mut open = store::open(&loc).unwrap();
    enrol_revoke_and_watch(writer, node);
    assert_eq!(open.enrolled().unwrap(), 3);
    use std::os::unix::fs::PermissionsExt;
    for file in ["registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"] {
        let mode = std::fs::metadata(dir.0.join(file)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file}: the registry is the broker's access policy");
    }
}

#[test]
fn postgres_enrols_and_revokes_in_single_steps_and_nodes_see_only_the_changes() {
    let pg = Postgres::start("steps");
    let loc = RegistryLocation::parse(&pg.url()).unwrap();
    enrol_revoke_and_watch(store::open(&loc).unwrap(), store::open(&loc).unwrap());
    // Written by a later kem-mqtt: refused by name.
    let mut sql = postgres::Client::connect(&pg.url(), postgres::NoTls).unwrap();
    sql.execute("UPDATE kem_mqtt_meta SET schema = schema + 1", &[])
        .unwrap();
    let e = store::open(&loc).unwrap_err();
    assert!(
        matches!(e, KeyError::NewerSchema { found, .. } if found == store::SCHEMA_VERSION + 1),
        "{e}"
    );
}

#[test]
fn a_file_registry_behaves_as_the_databases_do() {
    let dir = TempDir::new("file");
    let loc = RegistryLocation::in_dir(&dir.0);
    enrol_revoke_and_watch(store::open(&loc).unwrap(), store::open(&loc).unwrap());
}

#[test]
fn a_registry_json_imports_into_a_database_whole_or_not_at_all() {
    let dir = TempDir::new("import");
    let b = broker();
    let mut json = store::open(&RegistryLocation::in_dir(&dir.0)).unwrap();
    json.enrol(&sensors(&b, &["s1", "s2", "s3"]), false).unwrap();
    let db = RegistryLocation::Sqlite(dir.0.join("r.sqlite"));
    let mut to = store::open(&db).unwrap();
    assert_eq!(store::import(json.as_mut(), to.as_mut(), false).unwrap(), 3);
    assert_eq!(to.load().unwrap().clients, json.load().unwrap().clients);
    // Again: every id is there, so nothing is taken.
    json.enrol(&sensors(&b, &["s4"]), false).unwrap();
    let e = store::import(json.as_mut(), to.as_mut(), false).unwrap_err();
    assert!(matches!(e, KeyError::AlreadyEnrolled(_)), "{e}");
    assert_eq!(to.enrolled().unwrap(), 3);
    assert_eq!(store::import(json.as_mut(), to.as_mut(), true).unwrap(), 4);
    assert_eq!(to.load().unwrap().clients, json.load().unwrap().clients);
}

#[test]
fn a_database_that_is_not_a_registry_or_is_newer_is_refused_by_name() {
    let dir = TempDir::new("bad");
    // Not a database at all.
    let junk = dir.0.join("junk.sqlite");
    std::fs::write(&junk, vec![0x5a; 8192]).unwrap();
    let e = SqliteStore::open(&junk).unwrap_err().to_string();
    assert!(
        e.contains("junk.sqlite") && e.contains("not a registry database"),
        "{e}"
    );
    // Someone else's database.
    let other = dir.0.join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER);")
        .unwrap();
    let e = SqliteStore::open(&other).unwrap_err().to_string();
    assert!(e.contains("not a kem-mqtt registry"), "{e}");
    // Written by a later kem-mqtt.
    let newer = dir.0.join("newer.sqlite");
    drop(SqliteStore::open(&newer).unwrap());
    rusqlite::Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", store::SCHEMA_VERSION + 1)
        .unwrap();
    let e = SqliteStore::open(&newer).unwrap_err();
    assert!(
        matches!(e, KeyError::NewerSchema { found, .. } if found == store::SCHEMA_VERSION + 1),
        "{e}"
    );
    assert!(e.to_string().contains("upgrade kem-mqtt"), "{e}");
    // A database others may write is an enrolment door: refused.
    use std::os::unix::fs::PermissionsExt;
    let open = dir.0.join("open.sqlite");
    drop(SqliteStore::open(&open).unwrap());
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    let e = SqliteStore::open(&open).unwrap_err();
    assert!(matches!(e.inner(), KeyError::WritableByOthers(_)), "{e}");
}

#[test]
fn a_row_that_does_not_validate_keeps_the_registry_in_use_until_it_is_fixed() {
    let dir = TempDir::new("row");
    let path = dir.0.join("r.sqlite");
    let b = broker();
    let mut writer = SqliteStore::open(&path).unwrap();
    writer.enrol(&sensors(&b, &["good"]), false).unwrap();
    let (mut watch, in_use) = RegistryWatch::open(&RegistryLocation::Sqlite(path.clone())).unwrap();
    assert_eq!(ids(&in_use), ["good"]);
    // A hand-made row with a truncated key, then a good enrolment after it.
    let sql = rusqlite::Connection::open(&path).unwrap();
    sql.execute_batch(
        "UPDATE registry_meta SET version = version + 1;
         INSERT INTO sensors VALUES ('bad', 'ctru-light-ascon', x'00', zeroblob(32), 'ctru-light-ascon', 1,
                                     (SELECT version FROM registry_meta));",
    )
    .unwrap();
    writer.enrol(&sensors(&b, &["later"]), false).unwrap();
    let e = next_change(&mut watch).unwrap_err().to_string();
    assert!(e.contains("\"bad\"") && e.contains("kem_pk"), "{e}");
    assert!(watch.poll_now().is_none(), "the same error is reported once");
    // Fixed: every change since the last good version arrives.
    sql.execute_batch(
        "UPDATE registry_meta SET version = version + 1;
         UPDATE sensors SET enrolled = 0, version = (SELECT version FROM registry_meta) WHERE client_id = 'bad';",
    )
    .unwrap();
    let r = next_change(&mut watch).unwrap();
    assert_eq!(ids(&r), ["good", "later"]);
}

#[test]
fn a_lost_database_connection_is_an_error_and_the_node_resumes_when_it_is_back() {
    let mut pg = Postgres::start("lost");
    let loc = RegistryLocation::parse(&pg.url()).unwrap();
    let b = broker();
    let mut writer = store::open(&loc).unwrap();
    writer.enrol(&sensors(&b, &["a"]), false).unwrap();
    let (mut watch, in_use) = RegistryWatch::open(&loc).unwrap();
    assert_eq!(ids(&in_use), ["a"]);
    pg.kill();
    let e = next_change(&mut watch).unwrap_err().to_string();
    assert!(e.contains("registry database") && e.contains("postgres://"), "{e}");
    // A lasting outage is reported once per kind of failure (the lost
    // connection, then each failed reconnection's), not at every look.
    let t = Instant::now();
    let mut reports = 0;
    while t.elapsed() < Duration::from_millis(1500) {
        if let Some(r) = watch.poll_now() {
            assert!(r.is_err(), "a registry without its database");
            reports += 1;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(reports <= 4, "{reports} reports of one outage in 1.5 s");
    let e = writer.enrol(&sensors(&b, &["b"]), false).unwrap_err().to_string();
    assert!(e.contains("registry database"), "enrolling without the database: {e}");
    // Back: both open a new connection at their next use (at most once a
    // second), and the node catches up from the version it last saw.
    pg.restart();
    std::thread::sleep(store::postgres::RECONNECT_EVERY);
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(e) = writer.enrol(&sensors(&b, &["b"]), false) {
        assert!(Instant::now() < deadline, "the writer did not reconnect: {e}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let r = loop {
        match watch.poll_now() {
            Some(Ok(r)) => break r,
            _ => assert!(Instant::now() < deadline, "the node did not resume"),
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(ids(&r), ["a", "b"]);
}
