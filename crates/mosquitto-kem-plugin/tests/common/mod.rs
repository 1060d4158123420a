//! Shared by the integration tests: the plugin library (built on demand with
//! the `plugin` profile, whose panics unwind; `cargo test` alone does not
//! produce the cdylib), the broker configuration shipped beside the crate
//! (loaded with only its paths and port replaced), and a mosquitto process
//! on 127.0.0.1 that is killed when the test ends.
//!
//! `MOSQUITTO_KEM_PLUGIN=/path/to/libmosquitto_kem_plugin.so` runs the tests
//! against that build instead (e.g. an older revision of the plugin);
//! `MOSQUITTO_KEM_FAULT_PLUGIN` likewise for the fault-injection build.
#![allow(dead_code)] // each test file uses a part

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kem_mqtt::{Suite, SuiteSet, AUTH_METHOD};
use kem_mqtt_host::keys::{BrokerSecrets, Registry, SensorKeys};
use kem_mqtt_host::mqtt::{self, Connection, Packet};
use kem_mqtt_host::provision::{generate_broker, provision_sensor};
use kem_mqtt_host::OsRng;

/// Debian's broker (package `mosquitto`).
pub const MOSQUITTO: &str = "/usr/sbin/mosquitto";

/// The broker configuration as shipped (documented in docs/broker.md).
pub const SHIPPED_CONF: &str = include_str!("../../mosquitto.conf");
/// The ACL file as shipped.
pub const SHIPPED_ACL: &str = include_str!("../../kem-mqtt.acl");
/// The topic-mode broker configuration as shipped (docs/gateway.md): no plugin.
pub const GATEWAY_CONF: &str = include_str!("../../../kem-mqtt-host/mosquitto-gateway.conf");
/// Its ACL file.
pub const GATEWAY_ACL: &str = include_str!("../../../kem-mqtt-host/gateway.acl");
/// The gateways' account in the topic-mode password file.
pub const GATEWAY_USER: &str = "gateway";
/// Its password.
pub const GATEWAY_PASSWORD: &str = "gateway-test-password";

/// Test-only lines that switch the ClientHello rate limits off, for the
/// tests that send many hellos for one id on purpose (garbage, load).
pub const NO_RATE_LIMITS: &str =
    "plugin_opt_limit_per_id off\nplugin_opt_limit_per_source off\nplugin_opt_limit_global off\n";

/// The workspace's target directory (tests run from `target/<profile>/deps`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.ancestors()
        .nth(3)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// Builds the plugin (a no-op when it is up to date) with the `plugin`
/// profile into `target_dir` and returns the library's path.
fn build(target_dir: &Path, features: &[&str]) -> PathBuf {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--quiet", "-p", "mosquitto-kem-plugin", "--profile", "plugin"])
        .arg("--target-dir")
        .arg(target_dir);
    for f in features {
        cmd.args(["--features", f]);
    }
    let status = cmd.status().expect("cargo runs");
    assert!(status.success(), "building the plugin failed");
    let path = target_dir.join("plugin").join("libmosquitto_kem_plugin.so");
    assert!(path.exists(), "plugin not built at {}", path.display());
    path
}

/// The plugin as users build it: `cargo build -p mosquitto-kem-plugin --profile plugin`.
pub fn plugin_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| match std::env::var_os("MOSQUITTO_KEM_PLUGIN") {
        Some(p) => PathBuf::from(p),
        None => build(&target_dir(), &[]),
    })
    .clone()
}

/// The same with the test-only feature `fault-injection`, in a target
/// directory of its own so the two builds do not overwrite each other.
pub fn fault_plugin_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| match std::env::var_os("MOSQUITTO_KEM_FAULT_PLUGIN") {
        Some(p) => PathBuf::from(p),
        None => build(&target_dir().join("mosquitto-kem-plugin-faults"), &["fault-injection"]),
    })
    .clone()
}

/// Which broker configuration a test runs.
pub enum Conf<'a> {
    /// `mosquitto.conf` as shipped, only the paths and the port replaced.
    Documented,
    /// The shipped file with these test-only lines appended (a later
    /// setting overrides an earlier one, in mosquitto and in the plugin).
    DocumentedWith(&'a str),
    /// Topic mode, where plain CONNECTs must get in (the gateway and the
    /// sensor authenticate each other inside the topics): the shipped file
    /// with `allow_anonymous true` and without the ACL. Not the documented
    /// AUTH-mode configuration; only the topic-mode fault test uses it.
    TopicModeAnonymous,
}

/// Replaces `from` (which must occur exactly once) by `to`.
fn substitute(conf: &str, from: &str, to: &str) -> String {
    assert_eq!(
        conf.matches(from).count(),
        1,
        "mosquitto.conf: {from:?} must occur once"
    );
    conf.replacen(from, to, 1)
}

/// The application account the tests' password file holds (the shipped
/// ACL lets `dashboard` read `plain/#` and write `cmd/#`).
pub const APP_USER: &str = "dashboard";
/// Its password.
pub const APP_PASSWORD: &str = "dashboard-test-password";

/// The configuration text for a broker with keys, ACL and password file in `dir`.
pub fn broker_config(conf: &Conf, dir: &Path, port: u16, plugin: &Path) -> String {
    let mut text = SHIPPED_CONF.to_string();
    text = substitute(
        &text,
        "password_file /etc/mosquitto/kem-mqtt.passwd\n",
        &format!("password_file {}\n", dir.join("kem-mqtt.passwd").display()),
    );
    // The ACL path first: the keys directory is a prefix of it.
    text = substitute(
        &text,
        "acl_file /etc/mosquitto/kem-mqtt.acl\n",
        &format!("acl_file {}\n", dir.join("kem-mqtt.acl").display()),
    );
    text = substitute(
        &text,
        "plugin_opt_keys_dir /etc/mosquitto/kem-mqtt\n",
        &format!("plugin_opt_keys_dir {}\n", dir.display()),
    );
    text = substitute(
        &text,
        "plugin /usr/local/lib/mosquitto/libmosquitto_kem_plugin.so\n",
        &format!("plugin {}\n", plugin.display()),
    );
    text = substitute(
        &text,
        "listener 1883 127.0.0.1\n",
        &format!("listener {port} 127.0.0.1\n"),
    );
    match conf {
        Conf::Documented => {}
        Conf::DocumentedWith(extra) => text.push_str(extra),
        Conf::TopicModeAnonymous => {
            text = substitute(&text, "allow_anonymous false\n", "allow_anonymous true\n");
            text = substitute(&text, &format!("acl_file {}\n", dir.join("kem-mqtt.acl").display()), "");
        }
    }
    text
}

/// A free loopback port, never the same twice in one test process.
///
/// Ports the kernel hands out for `:0` can come back to a parallel test
/// before its broker binds them; two brokers then race for one port and the
/// loser's test talks to the winner's broker until it stops ("nothing
/// listens"). Counting up from a per-process base below the ephemeral range
/// keeps the tests of one binary apart.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let _ = NEXT.compare_exchange(
        0,
        20_000 + (std::process::id() % 1_000) as u16 * 10,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    loop {
        let port = NEXT.fetch_add(1, Ordering::SeqCst);
        assert!(port < 32_000, "no free loopback port below the ephemeral range");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// The `mosquitto` user and group ids, from /etc/passwd.
fn mosquitto_ids() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let line = passwd.lines().find(|l| l.starts_with("mosquitto:"))?;
    let mut f = line.split(':').skip(2);
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

/// Started as root, mosquitto becomes the `mosquitto` user before it loads
/// the plugin: as docs/broker.md says, the keys must belong to that user.
fn give_to_broker_user(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else { return };
    let Some((uid, gid)) = mosquitto_ids() else { return };
    if meta.uid() != 0 {
        return; // not root: mosquitto runs as us and reads our files
    }
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()));
    for p in paths {
        std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
    }
}

/// One broker site: a keys directory and a loopback port that survive
/// restarts, and the running mosquitto (killed, by its PID, on drop).
pub struct Broker {
    pub dir: PathBuf,
    pub port: u16,
    child: Option<Child>,
}

impl Broker {
    /// Writes keys, registry, ACL and configuration into a fresh directory
    /// named after `name` and starts mosquitto.
    pub fn start(name: &str, secrets: &BrokerSecrets, registry: &Registry, conf: Conf, plugin: &Path) -> Broker {
        assert!(
            Path::new(MOSQUITTO).exists(),
            "{MOSQUITTO} is missing: install the Debian packages `mosquitto` and `mosquitto-dev` (cargo xtask setup)"
        );
        let dir = std::env::temp_dir().join(format!("kem-mqtt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        secrets.save(&dir.join("broker-key.json")).unwrap();
        registry.save(&dir.join("registry.json")).unwrap();
        std::fs::write(dir.join("kem-mqtt.acl"), SHIPPED_ACL).unwrap();
        password_file(&dir.join("kem-mqtt.passwd"), &[(APP_USER, APP_PASSWORD)]);
        let port = free_port();
        std::fs::write(dir.join("mosquitto.conf"), broker_config(&conf, &dir, port, plugin)).unwrap();
        give_to_broker_user(&dir);
        let mut broker = Broker { dir, port, child: None };
        broker.restart();
        broker
    }

    /// mosquitto without the plugin, with `mosquitto-gateway.conf` and
    /// `gateway.acl` as shipped (only paths and port replaced) and a
    /// password file holding [`GATEWAY_USER`] and [`APP_USER`].
    pub fn start_topic_mode(name: &str) -> Broker {
        let dir = std::env::temp_dir().join(format!("kem-mqtt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("gateway.acl"), GATEWAY_ACL).unwrap();
        password_file(
            &dir.join("gateway.passwd"),
            &[(GATEWAY_USER, GATEWAY_PASSWORD), (APP_USER, APP_PASSWORD)],
        );
        let port = free_port();
        let mut text = substitute(
            GATEWAY_CONF,
            "password_file /etc/mosquitto/kem-mqtt-gateway.passwd\n",
            &format!("password_file {}\n", dir.join("gateway.passwd").display()),
        );
        text = substitute(
            &text,
            "acl_file /etc/mosquitto/kem-mqtt-gateway.acl\n",
            &format!("acl_file {}\n", dir.join("gateway.acl").display()),
        );
        text = substitute(
            &text,
            "listener 1883 127.0.0.1\n",
            &format!("listener {port} 127.0.0.1\n"),
        );
        std::fs::write(dir.join("mosquitto.conf"), text).unwrap();
        give_to_broker_user(&dir);
        let mut broker = Broker { dir, port, child: None };
        broker.restart();
        broker
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The broker's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Starts mosquitto on the site's port (again) and waits until it listens.
    pub fn restart(&mut self) {
        assert!(self.child.is_none());
        let t = Instant::now();
        loop {
            // The log goes to a file the tests read (appended across restarts).
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join("mosquitto.log"))
                .unwrap();
            let mut child = Command::new(MOSQUITTO)
                .arg("-c")
                .arg(self.dir.join("mosquitto.conf"))
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start mosquitto");
            // Wait for the listener (or for an early exit: the port may still be held briefly).
            loop {
                if TcpStream::connect(self.addr()).is_ok() {
                    self.child = Some(child);
                    return;
                }
                if child.try_wait().unwrap().is_some() || t.elapsed() > Duration::from_secs(10) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "mosquitto did not listen on {}:\n{}",
                self.addr(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILL, as a crash or power cut would.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The broker is still running: the plugin has not crashed it.
    pub fn assert_alive(&mut self) {
        let child = self.child.as_mut().expect("started");
        let status = child.try_wait().unwrap();
        assert_eq!(status, None, "mosquitto exited:\n{}", self.log());
        assert!(TcpStream::connect(self.addr()).is_ok(), "mosquitto stopped listening");
    }

    /// Everything mosquitto logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("mosquitto.log")).unwrap_or_default()
    }

    /// CPU time the broker's (single) thread has used, from
    /// /proc/PID/schedstat (nanoseconds, unlike the 10 ms ticks of stat).
    pub fn cpu_time(&self) -> Duration {
        let s = std::fs::read_to_string(format!("/proc/{}/schedstat", self.pid())).unwrap();
        Duration::from_nanos(s.split_whitespace().next().unwrap().parse().unwrap())
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Broker keys and one sensor per `(id, suite)`, registered for that suite only.
pub fn enrol(sensors: &[(&str, Suite)]) -> (BrokerSecrets, Registry, Vec<SensorKeys>) {
    let secrets = generate_broker(&kem_mqtt::KemId::ALL, &mut OsRng);
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
    body.push(0x02 | if login.is_some() { 0xC0 } else { 0 });
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
    let mut buf = vec![0u8; kem_mqtt::MAX_CLIENT_HELLO_LEN];
    let (state, n) = kem_mqtt::SensorHandshake::start(keys.suite, keys.credentials(), &mut OsRng, &mut buf).unwrap();
    let connect = raw_connect(5, connect_id, login, Some((AUTH_METHOD, &buf[..n])));
    let (mut conn, first) = send_raw(addr, &connect);
    let Ok(first) = first else {
        return (conn, Attempt::Closed, None);
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
        Err(_) => Attempt::Closed,
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

/// Writes a mosquitto password file with these accounts.
fn password_file(path: &Path, accounts: &[(&str, &str)]) {
    for (i, (user, password)) in accounts.iter().enumerate() {
        let mut cmd = Command::new("/usr/bin/mosquitto_passwd");
        if i == 0 {
            cmd.arg("-c");
        }
        let status = cmd
            .arg("-b")
            .arg(path)
            .args([user, password])
            .status()
            .expect("mosquitto_passwd (package mosquitto) runs");
        assert!(status.success(), "mosquitto_passwd failed");
    }
}

/// `mosquitto_sub` (package mosquitto-clients) as the application: logs in
/// as [`APP_USER`], subscribes to `filter` and exits after `count` messages
/// or `timeout_s` seconds. Its stdout holds one `topic payload` line per
/// message ([`Subscriber::lines`]).
pub struct Subscriber {
    child: Child,
}

impl Subscriber {
    /// Starts it and waits until its subscription is in place (its SUBACK,
    /// seen as the broker's log line).
    pub fn start(broker: &Broker, filter: &str, count: usize, timeout_s: u32) -> Subscriber {
        let child = Command::new("/usr/bin/mosquitto_sub")
            .args(["-h", "127.0.0.1", "-p", &broker.port.to_string(), "-V", "mqttv5"])
            .args(["-u", APP_USER, "-P", APP_PASSWORD, "-i", "app-sub"])
            .args([
                "-t",
                filter,
                "-v",
                "-C",
                &count.to_string(),
                "-W",
                &timeout_s.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mosquitto_sub (package mosquitto-clients) runs");
        // mosquitto logs "Sending SUBACK to app-sub" only at debug level;
        // a short wait is enough on loopback, and a late subscription
        // shows as a missing line, which fails the test (never a false pass).
        std::thread::sleep(Duration::from_millis(400));
        Subscriber { child }
    }

    /// Waits for it to exit; its `topic payload` lines.
    pub fn lines(self) -> Vec<String> {
        let out = self.child.wait_with_output().expect("mosquitto_sub finishes");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// `mosquitto_pub` as the application: publishes `payload` on `topic` as
/// [`APP_USER`]; whether it exited successfully.
pub fn app_publish(broker: &Broker, topic: &str, payload: &str) -> bool {
    Command::new("/usr/bin/mosquitto_pub")
        .args(["-h", "127.0.0.1", "-p", &broker.port.to_string(), "-V", "mqttv5"])
        .args(["-u", APP_USER, "-P", APP_PASSWORD, "-i", "app-pub"])
        .args(["-t", topic, "-m", payload])
        .status()
        .expect("mosquitto_pub (package mosquitto-clients) runs")
        .success()
}
