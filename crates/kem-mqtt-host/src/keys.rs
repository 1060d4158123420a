//! Key files and the client registry: versioned JSON with hex-encoded keys.
//!
//! | file | `format` | contents |
//! |---|---|---|
//! | sensor key file | `kem-mqtt/sensor-key` | client id, suite, the sensor's static KEM and X25519 key pairs, the broker's public keys |
//! | broker key file | `kem-mqtt/broker-key` | one static KEM key pair per KEM, one X25519 key pair |
//! | registry | `kem-mqtt/registry` | per client id: KEM, KEM public key, X25519 public key, allowed suites (the policy) |
//!
//! Every file carries `"version": 1`; another version is refused. Keys are
//! validated on load: lengths, reduced coefficients, and every key pair in
//! full ([`kem_mqtt::check_key_pair`]: the embedded public key, H(pk), and an
//! encapsulation to the public key that must decapsulate under the secret
//! key; X25519 public keys derived again from the secret key); an all-zero
//! X25519 secret key, or a sensor's static-static X25519 secret that comes
//! out all-zero, is refused. Errors of [`SensorKeys::load`] and friends name
//! the file.
//!
//! Files are written with mode 0600 (written to a temporary file of the
//! writer's own in the same directory, then renamed over the target, so a
//! reader never sees half a file and an older file's wider mode does not
//! survive; a file replaced keeps its owner and group, and a new file —
//! the lock file included — takes the key directory's, so the broker's user
//! can still read, and revoke in, a directory root wrote into); a file with
//! secret keys whose mode lets others read or write it is refused on load
//! ([`KeyError::Permissions`]), and so is a registry that group or others
//! may write, or one in such a directory ([`KeyError::WritableByOthers`]);
//! [`private_dir`] creates key directories with mode 0700, and [`DirLock`]
//! serialises the registry's read-modify-write between provisioning runs.
//! `Debug` of every type here prints `[redacted]` for secret fields.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::OsRng;
use kem_mqtt::{BrokerKeys, ClientEntry, Scheme, Suite, SuiteSet};
use serde::{Deserialize, Serialize};
use zeroize::{Zeroize, Zeroizing};

/// Version of all three file formats.
pub const FORMAT_VERSION: u32 = 1;
/// `format` of a sensor key file.
pub const SENSOR_FORMAT: &str = "kem-mqtt/sensor-key";
/// `format` of a broker key file.
pub const BROKER_FORMAT: &str = "kem-mqtt/broker-key";
/// `format` of a registry.
pub const REGISTRY_FORMAT: &str = "kem-mqtt/registry";
/// The broker's key file in a key directory (`kem-mqtt provision --dir`).
pub const BROKER_KEY_FILE: &str = "broker-key.json";
/// The registry in a key directory.
pub const REGISTRY_FILE: &str = "registry.json";

/// Errors of loading, validating and saving key material.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyError {
    /// Reading or writing a file failed.
    Io(std::io::Error),
    /// The JSON does not parse.
    Json(serde_json::Error),
    /// A wrong `format` or `version`.
    Format(String),
    /// A malformed field.
    Invalid(String),
    /// A secret key and its public key are not one key pair (named: which key).
    KeyPairMismatch(String),
    /// An all-zero X25519 secret: a secret key, or a static-static secret
    /// (the peer's public key has small order). Named: which one.
    X25519Zero(String),
    /// The file exists and the caller asked not to replace it.
    Exists(PathBuf),
    /// The client id is already enrolled (provisioning without `--force`).
    AlreadyEnrolled(String),
    /// A file with secret keys that others than its owner may read or
    /// write (its mode, e.g. 0o644): refused, as ssh refuses such a key.
    Permissions(u32),
    /// A registry, or the directory it is in, that others than its owner
    /// may write (its mode, e.g. 0o664 or 0o777): whoever can write the
    /// registry enrols a key of their own, so it is refused.
    WritableByOthers(u32),
    /// The id is not enrolled (a revocation of an unknown id).
    NotEnrolled(String),
    /// The registry database failed: it cannot be opened, is not a
    /// registry database (or is corrupt), or the connection to it is lost.
    /// Named: the database and what failed.
    Database(String),
    /// A registry database whose schema is newer than this build knows
    /// (written by a later kem-mqtt): refused, not guessed at.
    NewerSchema {
        /// The database's schema version.
        found: i64,
        /// The newest this build reads.
        supported: i64,
    },
    /// An error in this file.
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        error: Box<KeyError>,
    },
}

impl KeyError {
    /// The error without the file it was found in.
    pub fn inner(&self) -> &KeyError {
        match self {
            KeyError::File { error, .. } => error.inner(),
            e => e,
        }
    }

    pub(crate) fn in_file(self, path: &Path) -> KeyError {
        match self {
            e @ KeyError::File { .. } => e,
            e => KeyError::File {
                path: path.to_path_buf(),
                error: Box::new(e),
            },
        }
    }
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyError::Io(e) => write!(f, "i/o: {e}"),
            KeyError::Json(e) => write!(f, "json: {e}"),
            KeyError::Format(s) => write!(f, "format: {s}"),
            KeyError::Invalid(s) => write!(f, "invalid: {s}"),
            KeyError::KeyPairMismatch(s) => write!(f, "{s}: the secret key does not belong to the public key"),
            KeyError::X25519Zero(s) => write!(f, "{s}: all-zero X25519 secret"),
            KeyError::Exists(p) => write!(f, "{} exists and is not replaced", p.display()),
            KeyError::AlreadyEnrolled(id) => write!(f, "client id {id:?} is already enrolled"),
            KeyError::Permissions(mode) => write!(
                f,
                "holds secret keys but has mode {mode:04o}: others may read or change it (chmod 600)"
            ),
            KeyError::WritableByOthers(mode) => write!(
                f,
                "has mode {mode:04o}: group or others may write it, and whoever writes the registry enrols keys \
                 (chmod go-w)"
            ),
            KeyError::NotEnrolled(id) => write!(f, "client id {id:?} is not enrolled"),
            KeyError::Database(s) => write!(f, "registry database: {s}"),
            KeyError::NewerSchema { found, supported } => write!(
                f,
                "registry database schema version {found} is newer than this kem-mqtt reads ({supported}): \
                 upgrade kem-mqtt on this node"
            ),
            KeyError::File { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}
impl std::error::Error for KeyError {}
impl From<std::io::Error> for KeyError {
    fn from(e: std::io::Error) -> Self {
        KeyError::Io(e)
    }
}
impl From<serde_json::Error> for KeyError {
    fn from(e: serde_json::Error) -> Self {
        KeyError::Json(e)
    }
}

/// Decodes `len` bytes of hex (either case) in constant time (base16ct):
/// the digits of a secret key steer no branch or table index, and a
/// decoding that fails leaves nothing behind.
fn unhex(field: &str, s: &str, len: usize) -> Result<Vec<u8>, KeyError> {
    if s.len() != 2 * len {
        return Err(KeyError::Invalid(format!(
            "{field}: {} hex digits, expected {} ({len} bytes)",
            s.len(),
            2 * len
        )));
    }
    let mut out = Zeroizing::new(vec![0u8; len]);
    base16ct::mixed::decode(s, &mut out).map_err(|_| KeyError::Invalid(format!("{field}: not hex")))?;
    Ok(std::mem::take(&mut *out))
}

/// Lower-case hex, in constant time (base16ct).
fn hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

fn unhex32(field: &str, s: &str) -> Result<[u8; 32], KeyError> {
    let v = unhex(field, s, 32)?;
    let mut a = [0u8; 32];
    a.copy_from_slice(&v);
    Ok(a)
}

fn kem_by_name(name: &str) -> Result<Scheme, KeyError> {
    Scheme::from_name(name).ok_or_else(|| KeyError::Invalid(format!("unknown KEM {name:?}")))
}

fn suite_by_name(name: &str) -> Result<Suite, KeyError> {
    Suite::from_name(name).ok_or_else(|| KeyError::Invalid(format!("unknown suite {name:?}")))
}

fn check_format(format: &str, version: u32, expected: &str) -> Result<(), KeyError> {
    if format != expected {
        return Err(KeyError::Format(format!("format {format:?}, expected {expected:?}")));
    }
    if version != FORMAT_VERSION {
        return Err(KeyError::Format(format!(
            "version {version}, this build reads {FORMAT_VERSION}"
        )));
    }
    Ok(())
}

fn check_pair(kem: Scheme, sk: &[u8], pk: &[u8], what: &str) -> Result<(), KeyError> {
    // Malformed (import checks) and mismatched (the full check) are told
    // apart: the first is a damaged file, the second usually a wrong one.
    let mut embedded = vec![0u8; kem.pk_len()];
    kem_mqtt::public_key_of(kem, sk, &mut embedded)
        .map_err(|e| KeyError::Invalid(format!("{what} {} secret key: {e}", kem.name())))?;
    match kem_mqtt::check_key_pair(kem, sk, pk, &mut OsRng) {
        Ok(()) => Ok(()),
        Err(kem_mqtt::Error::Rng) => Err(KeyError::Io(std::io::Error::other("random number generator failed"))),
        Err(_) => Err(KeyError::KeyPairMismatch(format!("{what} {} key", kem.name()))),
    }
}

/// Whether all 32 bytes are zero (one pass over every byte whatever their
/// values: only the answer, which refuses the key, is revealed).
fn all_zero(x: &[u8; 32]) -> bool {
    x.iter().fold(0u8, |acc, b| acc | b) == 0
}

fn check_x25519(sk: &[u8; 32], pk: &[u8; 32], what: &str) -> Result<(), KeyError> {
    // All zero is what an unset or wiped key looks like; X25519's clamping
    // would still make a public key of it, so the pair check alone passes.
    if all_zero(sk) {
        return Err(KeyError::X25519Zero(format!("{what} X25519 secret key")));
    }
    if x25519_dalek::x25519(*sk, x25519_dalek::X25519_BASEPOINT_BYTES) != *pk {
        return Err(KeyError::KeyPairMismatch(format!("{what} X25519 key")));
    }
    Ok(())
}

/// Reads a JSON file with secret keys: refused unless only its owner
/// may read and write it (the mode of the file opened, not of the path
/// looked up a second time).
fn load_secret_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, KeyError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(KeyError::Invalid(format!(
            "not a key file but a {}",
            if meta.is_dir() { "directory" } else { "special file" }
        )));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyError::Permissions(mode));
    }
    let mut text = Zeroizing::new(String::new());
    file.read_to_string(&mut text)?;
    Ok(serde_json::from_str(&text)?)
}

/// [`KeyError::WritableByOthers`] if group or others may write the file
/// or directory `meta` describes.
pub(crate) fn refuse_writable_by_others(meta: &std::fs::Metadata) -> Result<(), KeyError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(KeyError::WritableByOthers(mode));
    }
    Ok(())
}

/// An exclusive lock on a key directory (the file `.lock` in it), held
/// while the registry is read, changed and written back: two provisioning
/// runs in one directory take turns instead of each writing back the
/// registry it read, which lost the other's enrolments. Released when
/// dropped.
pub struct DirLock(#[allow(dead_code)] std::fs::File);

impl DirLock {
    /// Waits for the lock on `dir`. The lock file, like every file written
    /// into a key directory, belongs to the directory's owner (root running
    /// `kem-mqtt revoke` in the broker user's directory leaves no file that
    /// user cannot open). Errors name the lock file.
    pub fn acquire(dir: &Path) -> Result<DirLock, KeyError> {
        let path = dir.join(".lock");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::PermissionDenied => KeyError::Invalid(format!(
                    "{e}: the lock file belongs to another user; give it to the key directory's owner \
                     (chown --reference={} {})",
                    dir.display(),
                    path.display()
                )),
                _ => KeyError::from(e),
            })
            .map_err(|e| e.in_file(&path))?;
        give_to_owner_of(&file, dir).map_err(|e| KeyError::from(e).in_file(&path))?;
        file.lock().map_err(|e| KeyError::from(e).in_file(&path))?;
        Ok(DirLock(file))
    }
}

/// The directory `path` is in (`.` for a bare file name).
pub(crate) fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Gives `file` the owner and group of `like` (a file it replaces, or the
/// key directory it is new in) where they differ: only root can, and
/// root is who writes into another user's key directory.
fn give_to_owner_of(file: &std::fs::File, like: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let (want, have) = (std::fs::metadata(like)?, file.metadata()?);
    if (want.uid(), want.gid()) != (have.uid(), have.gid()) {
        std::os::unix::fs::fchown(file, Some(want.uid()), Some(want.gid()))?;
    }
    Ok(())
}

/// A temporary name beside `path` that no other writer uses: this process,
/// a counter of its own, and the time.
fn temporary_beside(path: &Path, name: &std::ffi::OsStr) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    path.with_file_name(format!(
        ".{}.tmp-{}-{n}-{nanos}",
        name.to_string_lossy(),
        std::process::id()
    ))
}

/// Creates `dir` (and missing parents) with mode 0700. An existing
/// directory is left as it is (it may be shared, e.g. a temporary
/// directory); the files written into it are 0600 either way.
/// Errors name the directory.
pub fn private_dir(dir: &Path) -> Result<(), KeyError> {
    if dir.exists() && !dir.is_dir() {
        return Err(KeyError::Invalid("exists and is not a directory".into()).in_file(dir));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| KeyError::from(e).in_file(dir))
}

/// Writes `value` as JSON to `path` with mode 0600: into a new temporary
/// file beside it, then renamed over `path` (atomic on one file system). With
/// `replace` false an existing `path` is [`KeyError::Exists`].
fn save_json<T: Serialize>(value: &T, path: &Path, replace: bool) -> Result<(), KeyError> {
    let mut text = Zeroizing::new(serde_json::to_string_pretty(value)?);
    text.push('\n');
    let name = path
        .file_name()
        .ok_or_else(|| KeyError::Invalid(format!("{}: not a file name", path.display())))?;
    // A name of this call's own: with `create_new`, a name another writer
    // (a thread of this process) also used made one of them fail, and its
    // clean-up below removed the other's file.
    let tmp = temporary_beside(path, name);
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        // The file replaced keeps its owner, and a new file takes the key
        // directory's: a registry the broker (user mosquitto) reads must
        // stay readable to it after root rewrites it. Without the right to
        // give it away, the write fails here rather than leave a file its
        // reader cannot open.
        let dir = directory_of(path);
        give_to_owner_of(&f, if path.exists() { path } else { dir })?;
        if replace {
            std::fs::rename(&tmp, path)
        } else {
            // A hard link fails if `path` exists: no window in which another
            // writer's file could be replaced.
            std::fs::hard_link(&tmp, path)?;
            std::fs::remove_file(&tmp)
        }
    })();
    if let Err(e) = written {
        // Only this call's own file: the name is unique to it.
        let _ = std::fs::remove_file(&tmp);
        return Err(match e.kind() {
            std::io::ErrorKind::AlreadyExists if !replace => KeyError::Exists(path.to_path_buf()),
            _ => KeyError::Io(e),
        });
    }
    Ok(())
}

/// Writes the secret fields of `Debug` output.
const REDACTED: &str = "[redacted]";

/// A sensor key file (serialized form; the secret hex strings are wiped on drop).
#[derive(Clone, Serialize, Deserialize)]
pub struct SensorKeyFile {
    /// Always [`SENSOR_FORMAT`].
    pub format: String,
    /// Always [`FORMAT_VERSION`].
    pub version: u32,
    /// MQTT client id.
    pub client_id: String,
    /// Suite name (e.g. `ctru-light-ascon+x25519`).
    pub suite: String,
    /// Static KEM secret key, hex.
    pub kem_sk: String,
    /// Static KEM public key, hex.
    pub kem_pk: String,
    /// Static X25519 secret key, hex.
    pub x25519_sk: String,
    /// Static X25519 public key, hex.
    pub x25519_pk: String,
    /// The broker's static KEM public key, hex.
    pub broker_kem_pk: String,
    /// The broker's static X25519 public key, hex.
    pub broker_x25519_pk: String,
}

impl Drop for SensorKeyFile {
    fn drop(&mut self) {
        self.kem_sk.zeroize();
        self.x25519_sk.zeroize();
    }
}

impl std::fmt::Debug for SensorKeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SensorKeyFile")
            .field("format", &self.format)
            .field("version", &self.version)
            .field("client_id", &self.client_id)
            .field("suite", &self.suite)
            .field("kem_sk", &REDACTED)
            .field("kem_pk", &self.kem_pk)
            .field("x25519_sk", &REDACTED)
            .field("x25519_pk", &self.x25519_pk)
            .field("broker_kem_pk", &self.broker_kem_pk)
            .field("broker_x25519_pk", &self.broker_x25519_pk)
            .finish()
    }
}

/// A validated sensor identity.
#[derive(Clone)]
pub struct SensorKeys {
    /// MQTT client id.
    pub client_id: String,
    /// The suite this sensor uses.
    pub suite: Suite,
    /// Static KEM secret key.
    pub kem_sk: Zeroizing<Vec<u8>>,
    /// Static KEM public key.
    pub kem_pk: Vec<u8>,
    /// Static X25519 secret key.
    pub x25519_sk: Zeroizing<[u8; 32]>,
    /// Static X25519 public key.
    pub x25519_pk: [u8; 32],
    /// Broker's KEM public key.
    pub broker_kem_pk: Vec<u8>,
    /// Broker's X25519 public key.
    pub broker_x25519_pk: [u8; 32],
}

impl std::fmt::Debug for SensorKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SensorKeys")
            .field("client_id", &self.client_id)
            .field("suite", &self.suite.name())
            .field("kem_sk", &REDACTED)
            .field("kem_pk", &hex(&self.kem_pk))
            .field("x25519_sk", &REDACTED)
            .field("x25519_pk", &hex(&self.x25519_pk))
            .finish_non_exhaustive()
    }
}

impl SensorKeys {
    /// Validates a parsed file.
    pub fn from_file(f: &SensorKeyFile) -> Result<Self, KeyError> {
        check_format(&f.format, f.version, SENSOR_FORMAT)?;
        if !kem_mqtt::valid_client_id(f.client_id.as_bytes()) {
            return Err(KeyError::Invalid(format!("client id {:?}", f.client_id)));
        }
        let suite = suite_by_name(&f.suite)?;
        let kem = suite.kem();
        let kem_sk = Zeroizing::new(unhex("kem_sk", &f.kem_sk, kem.sk_len())?);
        let kem_pk = unhex("kem_pk", &f.kem_pk, kem.pk_len())?;
        check_pair(kem, &kem_sk, &kem_pk, "sensor")?;
        let x25519_sk = Zeroizing::new(unhex32("x25519_sk", &f.x25519_sk)?);
        let x25519_pk = unhex32("x25519_pk", &f.x25519_pk)?;
        check_x25519(&x25519_sk, &x25519_pk, "sensor")?;
        let broker_kem_pk = unhex("broker_kem_pk", &f.broker_kem_pk, kem.pk_len())?;
        kem_mqtt::check_public_key(kem, &broker_kem_pk)
            .map_err(|e| KeyError::Invalid(format!("broker_kem_pk: {e}")))?;
        let broker_x25519_pk = unhex32("broker_x25519_pk", &f.broker_x25519_pk)?;
        // The static-static secret every hybrid handshake of this sensor
        // uses: all-zero for a small-order broker key, which the handshake
        // would refuse each time — refused here, at load, instead.
        let static_secret = Zeroizing::new(x25519_dalek::x25519(*x25519_sk, broker_x25519_pk));
        if all_zero(&static_secret) {
            return Err(KeyError::X25519Zero(
                "static-static secret with broker_x25519_pk (a small-order key)".into(),
            ));
        }
        Ok(SensorKeys {
            client_id: f.client_id.clone(),
            suite,
            kem_sk,
            kem_pk,
            x25519_sk,
            x25519_pk,
            broker_kem_pk,
            broker_x25519_pk,
        })
    }

    /// The serialized form.
    pub fn to_file(&self) -> SensorKeyFile {
        SensorKeyFile {
            format: SENSOR_FORMAT.into(),
            version: FORMAT_VERSION,
            client_id: self.client_id.clone(),
            suite: self.suite.name().into(),
            kem_sk: hex(&self.kem_sk),
            kem_pk: hex(&self.kem_pk),
            x25519_sk: hex(&*self.x25519_sk),
            x25519_pk: hex(&self.x25519_pk),
            broker_kem_pk: hex(&self.broker_kem_pk),
            broker_x25519_pk: hex(&self.broker_x25519_pk),
        }
    }

    /// Loads and validates a sensor key file (only its owner may read or
    /// write it, else [`KeyError::Permissions`]); errors name the file.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        load_secret_json(path)
            .and_then(|f| Self::from_file(&f))
            .map_err(|e| e.in_file(path))
    }

    /// Writes the key file (mode 0600), replacing an existing one.
    pub fn save(&self, path: &Path) -> Result<(), KeyError> {
        save_json(&self.to_file(), path, true).map_err(|e| e.in_file(path))
    }

    /// Writes the key file (mode 0600); an existing file is [`KeyError::Exists`].
    pub fn save_new(&self, path: &Path) -> Result<(), KeyError> {
        save_json(&self.to_file(), path, false).map_err(|e| e.in_file(path))
    }

    /// Credentials for the protocol core.
    pub fn credentials(&self) -> kem_mqtt::SensorCredentials<'_> {
        kem_mqtt::SensorCredentials {
            client_id: self.client_id.as_bytes(),
            kem_sk: self.kem_sk[..].into(),
            x25519_sk: Some(&self.x25519_sk),
            broker_kem_pk: self.broker_kem_pk[..].into(),
            broker_x25519_pk: Some(&self.broker_x25519_pk),
            x25519_static_secret: None,
        }
    }
}

/// One KEM key pair in the broker key file (the secret hex is wiped on drop).
#[derive(Clone, Serialize, Deserialize)]
pub struct BrokerKemEntry {
    /// KEM name.
    pub kem: String,
    /// Secret key, hex.
    pub sk: String,
    /// Public key, hex.
    pub pk: String,
}

impl Drop for BrokerKemEntry {
    fn drop(&mut self) {
        self.sk.zeroize();
    }
}

impl std::fmt::Debug for BrokerKemEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerKemEntry")
            .field("kem", &self.kem)
            .field("sk", &REDACTED)
            .field("pk", &self.pk)
            .finish()
    }
}

/// A broker key file (serialized form; the secret hex is wiped on drop).
#[derive(Clone, Serialize, Deserialize)]
pub struct BrokerKeyFile {
    /// Always [`BROKER_FORMAT`].
    pub format: String,
    /// Always [`FORMAT_VERSION`].
    pub version: u32,
    /// One key pair per KEM.
    pub kems: Vec<BrokerKemEntry>,
    /// Static X25519 secret key, hex.
    pub x25519_sk: String,
    /// Static X25519 public key, hex.
    pub x25519_pk: String,
}

impl Drop for BrokerKeyFile {
    fn drop(&mut self) {
        self.x25519_sk.zeroize();
    }
}

impl std::fmt::Debug for BrokerKeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerKeyFile")
            .field("format", &self.format)
            .field("version", &self.version)
            .field("kems", &self.kems)
            .field("x25519_sk", &REDACTED)
            .field("x25519_pk", &self.x25519_pk)
            .finish()
    }
}

/// The broker's validated static keys.
#[derive(Clone)]
pub struct BrokerSecrets {
    /// KEM → (secret key, public key).
    pub kems: BTreeMap<Scheme, (Zeroizing<Vec<u8>>, Vec<u8>)>,
    /// X25519 secret key.
    pub x25519_sk: Zeroizing<[u8; 32]>,
    /// X25519 public key.
    pub x25519_pk: [u8; 32],
}

impl std::fmt::Debug for BrokerSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kems: Vec<&str> = self.kems.keys().map(|k| k.name()).collect();
        f.debug_struct("BrokerSecrets")
            .field("kems", &kems)
            .field("secret_keys", &REDACTED)
            .field("x25519_pk", &hex(&self.x25519_pk))
            .finish()
    }
}

impl BrokerSecrets {
    /// Validates a parsed file.
    pub fn from_file(f: &BrokerKeyFile) -> Result<Self, KeyError> {
        check_format(&f.format, f.version, BROKER_FORMAT)?;
        let mut kems = BTreeMap::new();
        for e in &f.kems {
            let kem = kem_by_name(&e.kem)?;
            let sk = Zeroizing::new(unhex("sk", &e.sk, kem.sk_len())?);
            let pk = unhex("pk", &e.pk, kem.pk_len())?;
            check_pair(kem, &sk, &pk, "broker")?;
            if kems.insert(kem, (sk, pk)).is_some() {
                return Err(KeyError::Invalid(format!("two keys for {}", kem.name())));
            }
        }
        let x25519_sk = Zeroizing::new(unhex32("x25519_sk", &f.x25519_sk)?);
        let x25519_pk = unhex32("x25519_pk", &f.x25519_pk)?;
        check_x25519(&x25519_sk, &x25519_pk, "broker")?;
        Ok(BrokerSecrets {
            kems,
            x25519_sk,
            x25519_pk,
        })
    }

    /// The serialized form.
    pub fn to_file(&self) -> BrokerKeyFile {
        BrokerKeyFile {
            format: BROKER_FORMAT.into(),
            version: FORMAT_VERSION,
            kems: self
                .kems
                .iter()
                .map(|(k, (sk, pk))| BrokerKemEntry {
                    kem: k.name().into(),
                    sk: hex(sk),
                    pk: hex(pk),
                })
                .collect(),
            x25519_sk: hex(&*self.x25519_sk),
            x25519_pk: hex(&self.x25519_pk),
        }
    }

    /// Loads and validates a broker key file (only its owner may read or
    /// write it, else [`KeyError::Permissions`]); errors name the file.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        load_secret_json(path)
            .and_then(|f| Self::from_file(&f))
            .map_err(|e| e.in_file(path))
    }

    /// Writes the key file (mode 0600), replacing an existing one.
    pub fn save(&self, path: &Path) -> Result<(), KeyError> {
        save_json(&self.to_file(), path, true).map_err(|e| e.in_file(path))
    }

    /// Writes the key file (mode 0600); an existing file is [`KeyError::Exists`].
    pub fn save_new(&self, path: &Path) -> Result<(), KeyError> {
        save_json(&self.to_file(), path, false).map_err(|e| e.in_file(path))
    }
}

/// One registry entry (serialized form).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RegistryEntry {
    /// MQTT client id.
    pub client_id: String,
    /// KEM name.
    pub kem: String,
    /// Static KEM public key, hex.
    pub kem_pk: String,
    /// Static X25519 public key, hex.
    pub x25519_pk: String,
    /// Suite names this client may use.
    pub allowed_suites: Vec<String>,
}

/// The registry file (serialized form).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegistryFile {
    /// Always [`REGISTRY_FORMAT`].
    pub format: String,
    /// Always [`FORMAT_VERSION`].
    pub version: u32,
    /// The clients.
    pub clients: Vec<RegistryEntry>,
}

/// A validated registry entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    /// KEM of the static key.
    pub kem: Scheme,
    /// Static KEM public key.
    pub kem_pk: Vec<u8>,
    /// Static X25519 public key.
    pub x25519_pk: [u8; 32],
    /// Allowed suites.
    pub allowed: SuiteSet,
}

impl Client {
    /// Validates one registry entry's fields, as every registry store keeps
    /// them: the id (1..=64 of `[A-Za-z0-9._-]`), the KEM's name, its
    /// public key (length and reduced coefficients), the X25519 public key
    /// and the names of the suites allowed, each of which must use that KEM.
    pub fn from_parts<'a>(
        client_id: &str,
        kem: &str,
        kem_pk: Vec<u8>,
        x25519_pk: &[u8],
        allowed_suites: impl IntoIterator<Item = &'a str>,
    ) -> Result<Client, KeyError> {
        if !kem_mqtt::valid_client_id(client_id.as_bytes()) {
            return Err(KeyError::Invalid(format!("client id {client_id:?}")));
        }
        let scheme = kem_by_name(kem)?;
        if kem_pk.len() != scheme.pk_len() {
            return Err(KeyError::Invalid(format!(
                "{client_id}: kem_pk: {} bytes, {kem} has {}",
                kem_pk.len(),
                scheme.pk_len()
            )));
        }
        kem_mqtt::check_public_key(scheme, &kem_pk)
            .map_err(|err| KeyError::Invalid(format!("{client_id}: kem_pk: {err}")))?;
        let x25519_pk: [u8; 32] = x25519_pk
            .try_into()
            .map_err(|_| KeyError::Invalid(format!("{client_id}: x25519_pk: {} bytes, not 32", x25519_pk.len())))?;
        let mut allowed = SuiteSet::EMPTY;
        for name in allowed_suites {
            let s = suite_by_name(name)?;
            if s.kem() != scheme {
                return Err(KeyError::Invalid(format!(
                    "{client_id}: suite {name} does not use {kem}"
                )));
            }
            allowed = allowed.with(s);
        }
        Ok(Client {
            kem: scheme,
            kem_pk,
            x25519_pk,
            allowed,
        })
    }

    /// The names of the suites allowed, comma-separated (as the databases
    /// keep them).
    pub fn allowed_names(&self) -> String {
        self.allowed.iter().map(|s| s.name()).collect::<Vec<_>>().join(",")
    }
}

/// The validated registry: client id → client.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    /// Clients by id.
    pub clients: BTreeMap<String, Client>,
}

impl Registry {
    /// Validates a parsed file.
    pub fn from_file(f: &RegistryFile) -> Result<Self, KeyError> {
        check_format(&f.format, f.version, REGISTRY_FORMAT)?;
        let mut clients = BTreeMap::new();
        for e in &f.clients {
            let client = Client::from_parts(
                &e.client_id,
                &e.kem,
                unhex("kem_pk", &e.kem_pk, kem_by_name(&e.kem)?.pk_len())?,
                &unhex32("x25519_pk", &e.x25519_pk)?,
                e.allowed_suites.iter().map(String::as_str),
            )?;
            if clients.insert(e.client_id.clone(), client).is_some() {
                return Err(KeyError::Invalid(format!("duplicate client id {:?}", e.client_id)));
            }
        }
        Ok(Registry { clients })
    }

    /// The serialized form.
    pub fn to_file(&self) -> RegistryFile {
        RegistryFile {
            format: REGISTRY_FORMAT.into(),
            version: FORMAT_VERSION,
            clients: self
                .clients
                .iter()
                .map(|(id, c)| RegistryEntry {
                    client_id: id.clone(),
                    kem: c.kem.name().into(),
                    kem_pk: hex(&c.kem_pk),
                    x25519_pk: hex(&c.x25519_pk),
                    allowed_suites: c.allowed.iter().map(|s| s.name().to_string()).collect(),
                })
                .collect(),
        }
    }

    /// Loads and validates a registry; a missing file is an empty registry.
    /// A registry, or a directory it is in, that group or others may write
    /// is refused ([`KeyError::WritableByOthers`]): the registry is the
    /// broker's access policy, and the plugin and gateways reload it within
    /// a second. Errors name the file (or the directory).
    pub fn load_or_empty(path: &Path) -> Result<Self, KeyError> {
        use std::io::Read;
        let dir = directory_of(path);
        match std::fs::metadata(dir) {
            Ok(meta) => refuse_writable_by_others(&meta).map_err(|e| e.in_file(dir))?,
            // No directory: no file either, checked below.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(KeyError::from(e).in_file(dir)),
        }
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Registry::default()),
            Err(e) => return Err(KeyError::from(e).in_file(path)),
        };
        // The mode of the file opened, not of the path looked up again.
        (|| {
            refuse_writable_by_others(&file.metadata()?)?;
            let mut text = String::new();
            file.read_to_string(&mut text)?;
            Self::from_file(&serde_json::from_str(&text)?)
        })()
        .map_err(|e| e.in_file(path))
    }

    /// Writes the registry (mode 0600: it holds no secret, but it is the
    /// broker's access policy), replacing an existing one.
    pub fn save(&self, path: &Path) -> Result<(), KeyError> {
        save_json(&self.to_file(), path, true).map_err(|e| e.in_file(path))
    }
}

/// Broker keys and registry together: what [`kem_mqtt::BrokerHandshake`] needs.
#[derive(Clone)]
pub struct BrokerState {
    /// Static keys.
    pub secrets: BrokerSecrets,
    /// Registered clients.
    pub registry: Registry,
}

impl BrokerKeys for BrokerState {
    fn kem_secret_key(&self, kem: Scheme) -> Option<&[u8]> {
        self.secrets.kems.get(&kem).map(|(sk, _)| sk.as_slice())
    }
    fn x25519_secret_key(&self) -> Option<&[u8; 32]> {
        Some(&self.secrets.x25519_sk)
    }
    fn client(&self, client_id: &[u8]) -> Option<ClientEntry<'_>> {
        let id = std::str::from_utf8(client_id).ok()?;
        self.registry.clients.get(id).map(|c| ClientEntry {
            kem: c.kem,
            kem_pk: &c.kem_pk,
            x25519_pk: Some(c.x25519_pk),
            allowed: c.allowed,
        })
    }
}
