//! Shared by the integration tests: the plugin library (built on demand with
//! the `plugin` profile, whose panics unwind; `cargo test` alone does not
//! produce the cdylib), a mosquitto site (the lab's
//! `avr_lab::mqtt::site`: the shipped configuration, only its paths and
//! port replaced, killed when the test ends) and the sensor-side moves of the tests.
//!
//! `MOSQUITTO_KEM_PLUGIN=/path/to/libmosquitto_kem_plugin.so` runs the tests
//! against that build instead (e.g. an older revision of the plugin);
//! `MOSQUITTO_KEM_FAULT_PLUGIN` likewise for the fault-injection build.
#![allow(dead_code)] // each test file uses a part

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[allow(unused_imports)] // each test file uses a part
pub use avr_lab::mqtt::site::{
    self, Conf, Shipped, Site, Subscriber, APP_PASSWORD, APP_USER, GATEWAY_PASSWORD, GATEWAY_USER, NO_RATE_LIMITS,
};
use kem_mqtt::{Suite, SuiteSet, AUTH_METHOD};
use kem_mqtt_host::keys::{BrokerSecrets, Registry, SensorKeys};
use kem_mqtt_host::mqtt::{self, Connection, Packet};
use kem_mqtt_host::provision::{generate_broker, provision_sensor};
use kem_mqtt_host::OsRng;

/// A shipped configuration file's text, as the site reads it.
pub fn shipped(file: Shipped) -> String {
    file.read().unwrap()
}

/// The workspace's target directory (tests run from `target/<profile>/deps`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.ancestors()
        .nth(3)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// The plugin as users build it: `cargo build -p mosquitto-kem-plugin --profile plugin`.
pub fn plugin_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| match std::env::var_os("MOSQUITTO_KEM_PLUGIN") {
        Some(p) => PathBuf::from(p),
        None => site::build_plugin(Path::new(env!("CARGO")), &target_dir()).unwrap(),
    })
    .clone()
}

/// The same with the test-only feature `fault-injection`, built with a
/// profile of its own (`plugin-faults`) so the two builds do not overwrite
/// each other.
pub fn fault_plugin_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| match std::env::var_os("MOSQUITTO_KEM_FAULT_PLUGIN") {
        Some(p) => PathBuf::from(p),
        None => site::build_fault_plugin(Path::new(env!("CARGO")), &target_dir()).unwrap(),
    })
    .clone()
}

/// A [`Site`] whose failures fail the test at once.
pub struct Broker(pub Site);

impl std::ops::Deref for Broker {
    type Target = Site;
    fn deref(&self) -> &Site {
        &self.0
    }
}

impl std::ops::DerefMut for Broker {
    fn deref_mut(&mut self) -> &mut Site {
        &mut self.0
    }
}

impl Broker {
    /// [`Site::auth_mode`] in a directory named after `name`.
    pub fn start(name: &str, secrets: &BrokerSecrets, registry: &Registry, conf: Conf, plugin: &Path) -> Broker {
        Broker(Site::auth_mode(name, secrets, registry, conf, plugin).unwrap())
    }

    /// [`Site::topic_mode`], the plugin as its guard.
    pub fn start_topic_mode(name: &str) -> Broker {
        Broker(Site::topic_mode(name, &plugin_path()).unwrap())
    }

    /// Starts mosquitto again.
    pub fn restart(&mut self) {
        self.0.restart().unwrap();
    }

    /// SIGTERM, as `systemctl stop` stops it; waits for it to exit.
    pub fn terminate(&mut self) {
        self.0.terminate().unwrap();
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        self.0.kill().unwrap();
    }

    /// The broker is still running: the plugin has not crashed it.
    pub fn assert_alive(&mut self) {
        if let Err(e) = self.0.alive() {
            panic!("{e}");
        }
    }

    /// The broker's process id.
    pub fn pid(&self) -> u32 {
        self.0.pid().expect("running")
    }

    /// CPU time of the broker's thread.
    pub fn cpu_time(&self) -> Duration {
        self.0.cpu_time().expect("running")
    }
}

/// The free-port counter of [`site`].
pub fn free_port() -> u16 {
    site::free_port().unwrap()
}

/// [`site::app_publish`] on `broker`.
pub fn app_publish(broker: &Broker, topic: &str, payload: &str) -> bool {
    site::app_publish(broker, topic, payload).unwrap()
}

/// [`Subscriber::start`] on `broker`.
pub fn subscriber(broker: &Broker, filter: &str, count: usize, timeout_s: u32) -> Subscriber {
    Subscriber::start(broker, filter, count, timeout_s).unwrap()
}

/// Broker keys and one sensor per `(id, suite)`, registered for that suite only.
pub fn enrol(sensors: &[(&str, Suite)]) -> (BrokerSecrets, Registry, Vec<SensorKeys>) {
    let secrets = generate_broker(&kem_mqtt::KEMS, &mut OsRng);
    let mut registry = Registry::default();
    let keys = sensors
        .iter()
        .map(|&(id, s)| provision_sensor(&secrets, &mut registry, id, s, SuiteSet::EMPTY.with(s), &mut OsRng).unwrap())
        .collect();
    (secrets, registry, keys)
}

/// A CONNECT packet with what the codec in kem-mqtt-host leaves out: MQTT
/// 3.1.1, a username and a password.
pub fn raw_connect(version: u8, client_id: &str, login: Option<(&str, &[u8])>, auth: Option<(&str, &[u8])>) -> Vec<u8> {
    raw_connect_will(version, client_id, login, auth, None)
}

/// A Last Will: (topic, payload, retain), at QoS 0.
pub type Will<'a> = (&'a str, &'a [u8], bool);

/// [`raw_connect`] with a Last Will, which the broker publishes if the
/// connection ends without a DISCONNECT.
pub fn raw_connect_will(
    version: u8,
    client_id: &str,
    login: Option<(&str, &[u8])>,
    auth: Option<(&str, &[u8])>,
    will: Option<Will>,
) -> Vec<u8> {
    fn field(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&(b.len() as u16).to_be_bytes());
        out.extend_from_slice(b);
    }
    fn varint(out: &mut Vec<u8>, mut n: usize) {
        loop {
            let b = (n % 128) as u8;
            n /= 128;
            out.push(if n > 0 { b | 0x80 } else { b });
            if n == 0 {
                return;
            }
        }
    }
    let mut body = vec![];
    field(&mut body, b"MQTT");
    body.push(version);
    let will_flags = match will {
        Some((_, _, true)) => 0x24,
        Some((_, _, false)) => 0x04,
        None => 0,
    };
    body.push(0x02 | will_flags | if login.is_some() { 0xC0 } else { 0 });
    body.extend_from_slice(&60u16.to_be_bytes());
    if version == 5 {
        let mut props = vec![];
        if let Some((method, data)) = auth {
            props.push(0x15);
            field(&mut props, method.as_bytes());
            props.push(0x16);
            field(&mut props, data);
        }
        varint(&mut body, props.len());
        body.extend_from_slice(&props);
    }
    field(&mut body, client_id.as_bytes());
    if let Some((topic, payload, _)) = will {
        if version == 5 {
            varint(&mut body, 0); // no will properties
        }
        field(&mut body, topic.as_bytes());
        field(&mut body, payload);
    }
    if let Some((user, password)) = login {
        field(&mut body, user.as_bytes());
        field(&mut body, password);
    }
    let mut out = vec![0x10];
    varint(&mut out, body.len());
    out.extend_from_slice(&body);
    out
}

/// Sends raw bytes on a fresh connection and reads the first packet back.
pub fn send_raw(addr: &str, bytes: &[u8]) -> (Connection, std::io::Result<Packet>) {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("nothing listens on {addr}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let sent = stream.write_all(bytes);
    let mut conn = Connection::new(stream);
    let answer = sent.and_then(|()| conn.recv());
    (conn, answer)
}

/// Whether the peer has closed `conn` (EOF or reset) within `within`,
/// discarding any packet before that.
pub fn closed_by_peer(conn: &mut Connection, within: Duration) -> bool {
    conn.set_timeout(Some(within)).unwrap();
    let t = Instant::now();
    loop {
        match conn.recv() {
            Ok(_) if t.elapsed() < within => {}
            Ok(_) => return false,
            Err(e) => return !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        }
    }
}

/// The outcome of an AUTH-mode attempt driven flight by flight.
#[derive(Debug, PartialEq, Eq)]
pub enum Attempt {
    /// CONNACK with this reason code (0x00: connected).
    ConnAck(u8),
    /// The broker closed the connection without an answer.
    Closed,
}

/// Runs the sensor side of AUTH mode with `keys` (its ClientHello names
/// `keys.client_id`) but with the CONNECT's client id and login chosen by
/// the caller, as an attacker would. Returns the connection and the outcome.
pub fn auth_attempt(
    addr: &str,
    keys: &SensorKeys,
    connect_id: &str,
    login: Option<(&str, &[u8])>,
) -> (Connection, Attempt) {
    let (conn, outcome, _) = auth_attempt_session(addr, keys, connect_id, login);
    (conn, outcome)
}

/// [`auth_attempt`], and the sensor's side of the session (if the broker
/// sent a BrokerHello; the session is the broker's only on CONNACK 0x00).
pub fn auth_attempt_session(
    addr: &str,
    keys: &SensorKeys,
    connect_id: &str,
    login: Option<(&str, &[u8])>,
) -> (Connection, Attempt, Option<kem_mqtt::Session>) {
    auth_attempt_will(addr, keys, connect_id, login, None)
}

/// [`auth_attempt_session`] with a Last Will in the CONNECT.
pub fn auth_attempt_will(
    addr: &str,
    keys: &SensorKeys,
    connect_id: &str,
    login: Option<(&str, &[u8])>,
    will: Option<Will>,
) -> (Connection, Attempt, Option<kem_mqtt::Session>) {
    let mut buf = vec![0u8; kem_mqtt::MAX_CLIENT_HELLO_LEN];
    let (state, n) = kem_mqtt::SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf).unwrap();
    let connect = raw_connect_will(5, connect_id, login, Some((AUTH_METHOD, &buf[..n])), will);
    let (mut conn, first) = send_raw(addr, &connect);
    let first = match first {
        Ok(p) => p,
        Err(e) => {
            // Shown with a failing test: which error ended the attempt.
            eprintln!(
                "attempt as {connect_id:?}: no answer to the CONNECT ({:?}: {e})",
                e.kind()
            );
            return (conn, Attempt::Closed, None);
        }
    };
    let bh = match first {
        Packet::Auth {
            reason: mqtt::CONTINUE_AUTHENTICATION,
            auth_data: Some(d),
            ..
        } => d,
        Packet::ConnAck { reason, .. } => return (conn, Attempt::ConnAck(reason), None),
        p => panic!("unexpected {p:?}"),
    };
    let (session, n3) = state.receive_broker_hello(&bh, &mut buf).unwrap();
    let sent = conn.send(&Packet::Auth {
        reason: mqtt::CONTINUE_AUTHENTICATION,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(buf[..n3].to_vec()),
    });
    let outcome = match sent.and_then(|()| conn.recv()) {
        Ok(Packet::ConnAck { reason, .. }) => Attempt::ConnAck(reason),
        Ok(p) => panic!("unexpected {p:?}"),
        Err(e) => {
            eprintln!(
                "attempt as {connect_id:?}: no answer to the Finished ({:?}: {e})",
                e.kind()
            );
            Attempt::Closed
        }
    };
    (conn, outcome, Some(session))
}

/// Seals `plaintext` for `topic` with `session` and publishes it on `conn`; the record.
pub fn publish_sealed(
    conn: &mut Connection,
    session: &mut kem_mqtt::Session,
    topic: &str,
    plaintext: &[u8],
) -> Vec<u8> {
    let mut rec = vec![0u8; plaintext.len() + kem_mqtt::RECORD_OVERHEAD];
    let n = session.seal(topic.as_bytes(), plaintext, &mut rec).unwrap();
    rec.truncate(n);
    conn.publish(topic, &rec).unwrap();
    rec
}

/// Waits for the next PUBLISH on `conn` (or None after `within`).
pub fn next_publish(conn: &mut Connection, within: Duration) -> Option<(String, Vec<u8>)> {
    conn.set_timeout(Some(within)).unwrap();
    loop {
        match conn.recv() {
            Ok(Packet::Publish { topic, payload }) => return Some((topic, payload)),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

/// One of the suites, by name.
pub fn suite(name: &str) -> Suite {
    Suite::from_name(name).unwrap()
}
