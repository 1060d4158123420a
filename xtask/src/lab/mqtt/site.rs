//! Debian's mosquitto 2 with this project's shipped KEM-MQTT
//! configurations, on 127.0.0.1: the broker the plugin's integration
//! tests, `cargo xtask e2e` and the load benchmark (`cargo xtask
//! mqtt-load`) run. Not for users: `docs/broker.md` and `docs/gateway.md`
//! say how to run a real broker.
//!
//! - [`Site::auth_mode`] runs `crates/mosquitto-kem-plugin/mosquitto.conf`
//!   and `kem-mqtt.acl` as shipped, only paths and port replaced, with the
//!   plugin, keys and a password file holding [`APP_USER`];
//! - [`Site::topic_mode`] runs `crates/kem-mqtt-host/mosquitto-gateway.conf`
//!   and `gateway.acl` as shipped, the plugin as the topic guard only,
//!   accounts [`GATEWAY_USER`] and [`APP_USER`];
//! - [`Subscriber`] and [`app_publish`]: `mosquitto_sub` and
//!   `mosquitto_pub` (package `mosquitto-clients`) as the application.
//!
//! Every process started here is killed when its owner is dropped.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kem_mqtt_host::keys::{BrokerSecrets, Registry};

/// Debian's broker (package `mosquitto`).
pub const MOSQUITTO: &str = "/usr/sbin/mosquitto";
/// `mosquitto_passwd` (package `mosquitto`).
pub const MOSQUITTO_PASSWD: &str = "/usr/bin/mosquitto_passwd";
/// `mosquitto_sub` (package `mosquitto-clients`).
pub const MOSQUITTO_SUB: &str = "/usr/bin/mosquitto_sub";
/// `mosquitto_pub` (package `mosquitto-clients`).
pub const MOSQUITTO_PUB: &str = "/usr/bin/mosquitto_pub";

/// A configuration file the repository ships, read from the work tree
/// when a site is set up: the lab runs in the repository, and a copy taken
/// at compile time would reach outside the xtask's package.
#[derive(Clone, Copy, Debug)]
pub enum Shipped {
    /// The AUTH-mode broker configuration (docs/broker.md).
    AuthConf,
    /// Its ACL file.
    AuthAcl,
    /// The topic-mode broker configuration (docs/gateway.md).
    GatewayConf,
    /// Its ACL file.
    GatewayAcl,
    /// The TLS listener, appended to either configuration.
    TlsConf,
}

impl Shipped {
    /// Its path in the repository.
    pub fn path(self) -> &'static str {
        match self {
            Shipped::AuthConf => "crates/mosquitto-kem-plugin/mosquitto.conf",
            Shipped::AuthAcl => "crates/mosquitto-kem-plugin/kem-mqtt.acl",
            Shipped::GatewayConf => "crates/kem-mqtt-host/mosquitto-gateway.conf",
            Shipped::GatewayAcl => "crates/kem-mqtt-host/gateway.acl",
            Shipped::TlsConf => "crates/kem-mqtt-host/mosquitto-tls.conf",
        }
    }

    /// Its text, as the work tree holds it.
    pub fn read(self) -> Result<String, String> {
        let path = crate::util::workspace_root().join(self.path());
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    }
}

/// An ACL that grants every client every topic (a pattern without `%c` or
/// `%u` applies to all clients; mosquitto warns and loads it).
pub const ALLOW_ALL_ACL: &str = "pattern readwrite #\n";

/// The application account of the password files (the shipped ACLs let
/// `dashboard` read `plain/#` and write `cmd/#`).
pub const APP_USER: &str = "dashboard";
/// Its password.
pub const APP_PASSWORD: &str = "dashboard-test-password";
/// The gateways' account of the topic-mode password file.
pub const GATEWAY_USER: &str = "gateway";
/// Its password.
pub const GATEWAY_PASSWORD: &str = "gateway-test-password";

/// Test-only lines that switch the ClientHello rate limits off (load and
/// flood runs that send many hellos from one address on purpose).
pub const NO_RATE_LIMITS: &str =
    "plugin_opt_limit_per_id off\nplugin_opt_limit_per_source off\nplugin_opt_limit_global off\n";

/// Which AUTH-mode configuration a site runs.
pub enum Conf<'a> {
    /// `mosquitto.conf` as shipped, only the paths and the port replaced.
    Documented,
    /// The shipped file with these lines appended (a later setting
    /// overrides an earlier one, in mosquitto and in the plugin).
    DocumentedWith(&'a str),
    /// The plugin loaded, but plain CONNECTs get in (a topic-mode gateway
    /// beside it): the shipped file with `allow_anonymous true` and an ACL
    /// that lets every client read and write every topic
    /// ([`ALLOW_ALL_ACL`]). Not a documented configuration; one fault test
    /// uses it.
    TopicModeAnonymous,
    /// The shipped file with this ACL instead of the shipped one (a
    /// misconfigured broker, for the plugin's own refusals).
    AclInstead(&'a str),
}

fn io_err(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> String {
    let context = format!("{what} {}", path.display());
    move |e| format!("{context}: {e}")
}

/// Replaces `from` (which must occur exactly once) by `to`.
fn substitute(conf: &str, from: &str, to: &str) -> Result<String, String> {
    if conf.matches(from).count() != 1 {
        return Err(format!("shipped configuration: {from:?} must occur once"));
    }
    Ok(conf.replacen(from, to, 1))
}

/// `conf` with each `(from, to)` substituted in turn ([`substitute`]).
fn substitute_all(conf: &str, pairs: &[(&str, String)]) -> Result<String, String> {
    pairs
        .iter()
        .try_fold(conf.to_string(), |text, (from, to)| substitute(&text, from, to))
}

/// The AUTH-mode configuration text for a site in `dir`.
pub fn auth_mode_config(conf: &Conf, dir: &Path, port: u16, plugin: &Path) -> Result<String, String> {
    let mut text = substitute_all(
        &Shipped::AuthConf.read()?,
        &[
            (
                "password_file /etc/mosquitto/kem-mqtt.passwd\n",
                format!("password_file {}\n", dir.join("kem-mqtt.passwd").display()),
            ),
            // The ACL path first: the keys directory is a prefix of it.
            (
                "acl_file /etc/mosquitto/kem-mqtt.acl\n",
                format!("acl_file {}\n", dir.join("kem-mqtt.acl").display()),
            ),
            (
                "plugin_opt_keys_dir /etc/mosquitto/kem-mqtt\n",
                format!("plugin_opt_keys_dir {}\n", dir.display()),
            ),
            (
                "plugin /usr/local/lib/mosquitto/libmosquitto_kem_plugin.so\n",
                format!("plugin {}\n", plugin.display()),
            ),
            ("listener 1883 127.0.0.1\n", format!("listener {port} 127.0.0.1\n")),
            (
                "persistence_location /var/lib/mosquitto/\n",
                format!("persistence_location {}/\n", dir.display()),
            ),
        ],
    )?;
    match conf {
        Conf::Documented | Conf::AclInstead(_) => {}
        Conf::DocumentedWith(extra) => text.push_str(extra),
        Conf::TopicModeAnonymous => {
            text = substitute(&text, "allow_anonymous false\n", "allow_anonymous true\n")?;
        }
    }
    Ok(text)
}

/// A free loopback port, never the same twice in one process.
///
/// Ports the kernel hands out for `:0` can come back to a parallel test
/// before its broker binds them; two brokers then race for one port and the
/// loser talks to the winner's broker until it stops ("nothing listens").
/// Counting up from a per-process base below the ephemeral range keeps the
/// sites of one process apart.
pub fn free_port() -> Result<u16, String> {
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
        if port >= 32_000 {
            return Err("no free loopback port below the ephemeral range".into());
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
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
/// the plugin and reads the password and ACL files: as docs/broker.md says,
/// those files must belong to that user.
fn give_to_broker_user(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).map_err(io_err("reading", dir))?;
    let Some((uid, gid)) = mosquitto_ids() else {
        return Ok(());
    };
    if meta.uid() != 0 {
        return Ok(()); // not root: mosquitto runs as us and reads our files
    }
    let mut paths = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).map_err(io_err("listing", dir))? {
        paths.push(e.map_err(io_err("listing", dir))?.path());
    }
    for p in paths {
        std::os::unix::fs::chown(&p, Some(uid), Some(gid)).map_err(io_err("chown", &p))?;
    }
    Ok(())
}

/// Writes a mosquitto password file with these accounts.
fn password_file(path: &Path, accounts: &[(&str, &str)]) -> Result<(), String> {
    for (i, (user, password)) in accounts.iter().enumerate() {
        let mut cmd = Command::new(MOSQUITTO_PASSWD);
        if i == 0 {
            cmd.arg("-c");
        }
        let status = cmd
            .arg("-b")
            .arg(path)
            .args([user, password])
            .status()
            .map_err(|e| format!("{MOSQUITTO_PASSWD} (package mosquitto): {e}"))?;
        if !status.success() {
            return Err(format!("{MOSQUITTO_PASSWD} failed: {status}"));
        }
    }
    Ok(())
}

mod tls {
    //! A CA and a server certificate for a test site's TLS listener.
    use std::path::{Path, PathBuf};

    fn err(e: impl std::fmt::Display) -> String {
        format!("generating the TLS certificates: {e}")
    }

    /// Writes `ca.crt`, `server.crt` and `server.key` into `dir`: a fresh
    /// CA, and a server certificate it signed for `localhost` (only: a
    /// client that connects to 127.0.0.1 must refuse it). Returns the CA
    /// certificate's path.
    pub fn write_certificates(dir: &Path) -> Result<PathBuf, String> {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().map_err(err)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "kem-mqtt test CA");
        let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
        let issuer = Issuer::new(ca_params, ca_key);
        let server_key = KeyPair::generate().map_err(err)?;
        let params = CertificateParams::new(vec!["localhost".to_string()]).map_err(err)?;
        let server_cert = params.signed_by(&server_key, &issuer).map_err(err)?;
        let ca = dir.join("ca.crt");
        super::write(&ca, &ca_cert.pem())?;
        super::write(&dir.join("server.crt"), &server_cert.pem())?;
        super::write(&dir.join("server.key"), &server_key.serialize_pem())?;
        Ok(ca)
    }
}

/// A fresh directory for a site named `name`.
fn fresh_dir(name: &str) -> Result<PathBuf, String> {
    if !Path::new(MOSQUITTO).exists() {
        return Err(format!(
            "{MOSQUITTO} is missing: install the Debian packages mosquitto, mosquitto-dev and mosquitto-clients (cargo xtask setup)"
        ));
    }
    let dir = std::env::temp_dir().join(format!("kem-mqtt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(io_err("creating", &dir))?;
    Ok(dir)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(io_err("writing", path))
}

/// Everything the mosquitto of `dir` logged so far (every start appends).
fn read_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("mosquitto.log")).unwrap_or_default()
}

/// Why mosquitto did not come up.
enum Launch {
    /// Something other than the mosquitto just started answered on the
    /// port: another process's listener, or a connection to itself (the
    /// port inside the machine's ephemeral range). Another port may do.
    Foreign(String),
    /// mosquitto did not listen.
    Failed(String),
}

/// Starts mosquitto with `dir`'s configuration, which listens on `port`,
/// and returns once a probe connection is logged by this mosquitto as
/// accepted: a connect that succeeds is not proof enough (a listener of
/// another process, or a TCP self-connect, also answers; tests then talk
/// to something that is not their broker).
fn spawn_listening(dir: &Path, port: u16) -> Result<Child, Launch> {
    let addr = format!("127.0.0.1:{port}");
    let t = Instant::now();
    loop {
        // The log goes to a file (appended across restarts).
        let log_path = dir.join("mosquitto.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| Launch::Failed(io_err("opening", &log_path)(e)))?;
        // Only what this start logs counts (an earlier start's line could
        // name the same probe port).
        let log_start = log.metadata().map(|m| m.len() as usize).unwrap_or(0);
        let mut child = Command::new(MOSQUITTO)
            .arg("-c")
            .arg(dir.join("mosquitto.conf"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| Launch::Failed(format!("starting {MOSQUITTO}: {e}")))?;
        // Wait for the listener (or for an early exit: the port may still be held briefly).
        loop {
            if let Ok(probe) = TcpStream::connect(&addr) {
                let verdict = accepted_by(&mut child, dir, log_start, port, &probe, Duration::from_secs(5));
                drop(probe);
                return match verdict {
                    Ok(()) => Ok(child),
                    Err(e) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        Err(e)
                    }
                };
            }
            let exited = child.try_wait().map_err(|e| Launch::Failed(e.to_string()))?.is_some();
            if exited || t.elapsed() > Duration::from_secs(10) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        if t.elapsed() >= Duration::from_secs(10) {
            return Err(Launch::Failed(format!(
                "mosquitto did not listen on {addr}:\n{}",
                read_log(dir)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `Ok` once `child`'s log (from byte `log_start`: this start's lines)
/// shows it accepted `probe` (mosquitto logs every connection it accepts,
/// with the peer's port). A child that exits without that line did not
/// answer the probe: something else holds the port (mosquitto exits when it
/// cannot bind), so that is [`Launch::Foreign`] too.
fn accepted_by(
    child: &mut Child,
    dir: &Path,
    log_start: usize,
    port: u16,
    probe: &TcpStream,
    within: Duration,
) -> Result<(), Launch> {
    let (local, peer) = match (probe.local_addr(), probe.peer_addr()) {
        (Ok(l), Ok(p)) => (l, p),
        _ => return Err(Launch::Failed("the probe connection has no addresses".into())),
    };
    let foreign = |what: &str| {
        Launch::Foreign(format!(
            "127.0.0.1:{port} answered a probe from {local}, but {what}\n{}",
            sockets_on(port)
        ))
    };
    if local == peer {
        return Err(foreign(
            "it was a TCP self-connect (the port is in the ephemeral range)",
        ));
    }
    let line = format!("New connection from {}:{} on port {port}.", local.ip(), local.port());
    let logged = || read_log(dir).get(log_start..).is_some_and(|new| new.contains(&line));
    let t = Instant::now();
    while t.elapsed() < within {
        if logged() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            // Exited: its log is complete, so one more look decides.
            if logged() {
                return Err(Launch::Failed(format!(
                    "mosquitto exited ({status}) after accepting a probe on 127.0.0.1:{port}:\n{}",
                    read_log(dir)
                )));
            }
            return Err(foreign(&format!(
                "this mosquitto exited ({status}) without logging it:\n{}",
                read_log(dir)
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(foreign(&format!("this mosquitto never logged it:\n{}", read_log(dir))))
}

/// The kernel's TCP sockets on 127.0.0.1:`port` (from /proc/net/tcp): who
/// else answers there when a test talks to something that is not its broker.
fn sockets_on(port: u16) -> String {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let needle = format!(":{port:04X} ");
    let rows: Vec<&str> = table.lines().skip(1).filter(|l| l.contains(&needle)).collect();
    format!(
        "sockets with port {port} (/proc/net/tcp, hex addresses, state 0A = listening): {}\n{}",
        rows.len(),
        rows.join("\n")
    )
}

/// One broker site: a directory with its files, a loopback port that
/// survives restarts, and the running mosquitto (killed, by its PID, on
/// drop; the directory is removed then).
pub struct Site {
    /// The site's directory (configuration, keys, log).
    pub dir: PathBuf,
    /// The listener's port on 127.0.0.1.
    pub port: u16,
    /// The TLS listener's port on 127.0.0.1, if the site has one
    /// ([`Site::with_tls`]).
    pub tls_port: Option<u16>,
    child: Option<Child>,
}

impl Site {
    /// AUTH mode: keys, registry, ACL, password file and configuration
    /// into a fresh directory named after `name`; mosquitto started and
    /// listening.
    pub fn auth_mode(
        name: &str,
        secrets: &BrokerSecrets,
        registry: &Registry,
        conf: Conf,
        plugin: &Path,
    ) -> Result<Site, String> {
        let dir = fresh_dir(name)?;
        let keys = dir.join(kem_mqtt_host::keys::BROKER_KEY_FILE);
        secrets.save(&keys).map_err(|e| format!("{}: {e}", keys.display()))?;
        let reg = dir.join(kem_mqtt_host::keys::REGISTRY_FILE);
        registry.save(&reg).map_err(|e| format!("{}: {e}", reg.display()))?;
        let acl = match conf {
            Conf::AclInstead(acl) => acl.to_owned(),
            // Not "no ACL file": with the plugin's access check registered,
            // mosquitto 2.0 denies whatever every check defers.
            Conf::TopicModeAnonymous => ALLOW_ALL_ACL.to_owned(),
            _ => Shipped::AuthAcl.read()?,
        };
        write(&dir.join("kem-mqtt.acl"), &acl)?;
        password_file(&dir.join("kem-mqtt.passwd"), &[(APP_USER, APP_PASSWORD)])?;
        Site::launch(dir, |dir, port| auth_mode_config(&conf, dir, port, plugin))
    }

    /// Topic mode: `mosquitto-gateway.conf` and `gateway.acl` as shipped
    /// (only paths and port replaced; the plugin at `plugin` guards the
    /// `kem-mqtt/` topics), a password file with [`GATEWAY_USER`] and
    /// [`APP_USER`].
    pub fn topic_mode(name: &str, plugin: &Path) -> Result<Site, String> {
        let dir = fresh_dir(name)?;
        write(&dir.join("gateway.acl"), &Shipped::GatewayAcl.read()?)?;
        let shipped = Shipped::GatewayConf.read()?;
        password_file(
            &dir.join("gateway.passwd"),
            &[(GATEWAY_USER, GATEWAY_PASSWORD), (APP_USER, APP_PASSWORD)],
        )?;
        Site::launch(dir, |dir, port| {
            substitute_all(
                &shipped,
                &[
                    (
                        "password_file /etc/mosquitto/kem-mqtt-gateway.passwd\n",
                        format!("password_file {}\n", dir.join("gateway.passwd").display()),
                    ),
                    (
                        "acl_file /etc/mosquitto/kem-mqtt-gateway.acl\n",
                        format!("acl_file {}\n", dir.join("gateway.acl").display()),
                    ),
                    (
                        "plugin /usr/local/lib/mosquitto/libmosquitto_kem_plugin.so\n",
                        format!("plugin {}\n", plugin.display()),
                    ),
                    ("listener 1883 127.0.0.1\n", format!("listener {port} 127.0.0.1\n")),
                    (
                        "persistence_location /var/lib/mosquitto/\n",
                        format!("persistence_location {}/\n", dir.display()),
                    ),
                ],
            )
        })
    }

    /// Writes the configuration `conf(dir, port)` for a free port and starts
    /// mosquitto; on a port that another socket answers (see
    /// [`spawn_listening`]), again on the next free port.
    fn launch(dir: PathBuf, conf: impl Fn(&Path, u16) -> Result<String, String>) -> Result<Site, String> {
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            let port = free_port()?;
            write(&dir.join("mosquitto.conf"), &conf(&dir, port)?)?;
            give_to_broker_user(&dir)?;
            match spawn_listening(&dir, port) {
                Ok(child) => {
                    return Ok(Site {
                        dir,
                        port,
                        tls_port: None,
                        child: Some(child),
                    })
                }
                Err(Launch::Foreign(why)) if attempt < ATTEMPTS => eprintln!("{why}; trying another port"),
                Err(Launch::Foreign(why) | Launch::Failed(why)) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(why);
                }
            }
        }
        unreachable!("the last attempt returns")
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Adds the shipped TLS listener ([`Shipped::TlsConf`], its paths and port
    /// replaced) with a CA and a server certificate for `localhost`
    /// generated into the site's directory, and restarts mosquitto with it.
    pub fn with_tls(mut self) -> Result<Site, String> {
        let ca = tls::write_certificates(&self.dir)?;
        let port = free_port()?;
        let section = substitute_all(
            &Shipped::TlsConf.read()?,
            &[
                ("listener 8883 127.0.0.1\n", format!("listener {port} 127.0.0.1\n")),
                (
                    "cafile /etc/mosquitto/certs/ca.crt\n",
                    format!("cafile {}\n", ca.display()),
                ),
                (
                    "certfile /etc/mosquitto/certs/server.crt\n",
                    format!("certfile {}\n", self.dir.join("server.crt").display()),
                ),
                (
                    "keyfile /etc/mosquitto/certs/server.key\n",
                    format!("keyfile {}\n", self.dir.join("server.key").display()),
                ),
            ],
        )?;
        let conf_path = self.dir.join("mosquitto.conf");
        let conf = std::fs::read_to_string(&conf_path).map_err(io_err("reading", &conf_path))?;
        write(&conf_path, &format!("{conf}\n{section}"))?;
        give_to_broker_user(&self.dir)?;
        self.tls_port = Some(port);
        self.kill()?;
        self.restart()?;
        Ok(self)
    }

    /// The CA certificate of the TLS listener ([`Site::with_tls`]).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// `localhost:<TLS port>` (the name the server certificate is for).
    pub fn tls_addr(&self) -> Option<String> {
        self.tls_port.map(|p| format!("localhost:{p}"))
    }

    /// The broker's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts mosquitto on the site's port (again) and waits until it listens.
    pub fn restart(&mut self) -> Result<(), String> {
        if self.child.is_some() {
            return Err("mosquitto is already running".into());
        }
        let child =
            spawn_listening(&self.dir, self.port).map_err(|(Launch::Foreign(why) | Launch::Failed(why))| why)?;
        self.child = Some(child);
        Ok(())
    }

    /// SIGTERM, as `systemctl stop` sends (mosquitto saves its persistence
    /// file and exits); waits for it.
    pub fn terminate(&mut self) -> Result<(), String> {
        let mut child = self.child.take().ok_or("mosquitto is not running")?;
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .map_err(|e| format!("kill: {e}"))?;
        if !status.success() {
            return Err(format!("kill -TERM: {status}"));
        }
        child.wait().map_err(|e| e.to_string())?;
        Ok(())
    }

    /// SIGKILL, as a crash or power cut would.
    pub fn kill(&mut self) -> Result<(), String> {
        let mut child = self.child.take().ok_or("mosquitto is not running")?;
        child.kill().map_err(|e| e.to_string())?;
        child.wait().map_err(|e| e.to_string())?;
        Ok(())
    }

    /// `Ok` while mosquitto runs and listens; its log otherwise.
    pub fn alive(&mut self) -> Result<(), String> {
        let child = self.child.as_mut().ok_or("mosquitto was not started")?;
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("mosquitto exited ({status}):\n{}", self.log()));
        }
        TcpStream::connect(self.addr()).map_err(|e| format!("mosquitto stopped listening: {e}"))?;
        Ok(())
    }

    /// Everything mosquitto logged so far.
    pub fn log(&self) -> String {
        read_log(&self.dir)
    }

    /// CPU time the broker's (single) thread has used, from
    /// /proc/PID/schedstat (nanoseconds, unlike the 10 ms ticks of stat).
    pub fn cpu_time(&self) -> Option<Duration> {
        let s = std::fs::read_to_string(format!("/proc/{}/schedstat", self.pid()?)).ok()?;
        Some(Duration::from_nanos(s.split_whitespace().next()?.parse().ok()?))
    }

    /// The broker's resident set size now and at its peak, KiB (VmRSS, VmHWM).
    pub fn rss_kib(&self) -> Option<(u64, u64)> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        let field = |name: &str| {
            s.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        // A failing test's assertion rarely says what the broker saw: its log does.
        if std::thread::panicking() {
            let state = match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => format!("exited: {status}"),
                Some(Ok(None)) => "running".to_string(),
                Some(Err(e)) => e.to_string(),
                None => "not running".to_string(),
            };
            eprintln!(
                "--- mosquitto log ({}, {state}) ---\n{}--- end of log ---\n{}",
                self.addr(),
                self.log(),
                sockets_on(self.port)
            );
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Builds the plugin with the `plugin` profile (panics unwind) into
/// `target_dir` (a no-op when it is up to date) and returns the library.
pub fn build_plugin(cargo: &Path, target_dir: &Path) -> Result<PathBuf, String> {
    build_plugin_as(cargo, target_dir, "plugin", &[])
}

/// The test-only build with the `fault-injection` feature, with the
/// `plugin-faults` profile: panics unwind as in the shipped build, but
/// unoptimised; a release build with LTO cost CI two minutes for a library
/// no one ships (issue #33).
pub fn build_fault_plugin(cargo: &Path, target_dir: &Path) -> Result<PathBuf, String> {
    build_plugin_as(cargo, target_dir, "plugin-faults", &["fault-injection"])
}

fn build_plugin_as(cargo: &Path, target_dir: &Path, profile: &str, features: &[&str]) -> Result<PathBuf, String> {
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", "mosquitto-kem-plugin", "--profile", profile])
        .arg("--target-dir")
        .arg(target_dir);
    for f in features {
        cmd.args(["--features", f]);
    }
    let status = cmd.status().map_err(|e| format!("{}: {e}", cargo.display()))?;
    if !status.success() {
        return Err("building the plugin failed".into());
    }
    let path = target_dir.join(profile).join("libmosquitto_kem_plugin.so");
    if !path.exists() {
        return Err(format!("plugin not built at {}", path.display()));
    }
    Ok(path)
}

/// `mosquitto_sub` as the application: logs in as [`APP_USER`], subscribes
/// to a filter and exits after a number of messages or seconds; its stdout
/// holds one `topic payload` line per message ([`Subscriber::lines`]).
pub struct Subscriber {
    child: Option<Child>,
}

impl Subscriber {
    /// Starts it and waits until its subscription is in place.
    pub fn start(site: &Site, filter: &str, count: usize, timeout_s: u32) -> Result<Subscriber, String> {
        Self::start_with(
            &["-h", "127.0.0.1", "-p", &site.port.to_string()],
            filter,
            count,
            timeout_s,
        )
    }

    /// [`Subscriber::start`] on the site's TLS listener, checking the
    /// broker's certificate against the site's CA.
    pub fn start_tls(site: &Site, filter: &str, count: usize, timeout_s: u32) -> Result<Subscriber, String> {
        let port = site.tls_port.ok_or("the site has no TLS listener")?.to_string();
        let ca = site.ca_file();
        let ca = ca.to_str().ok_or("the CA file's path is not UTF-8")?;
        Self::start_with(
            &["-h", "localhost", "-p", &port, "--cafile", ca],
            filter,
            count,
            timeout_s,
        )
    }

    fn start_with(at: &[&str], filter: &str, count: usize, timeout_s: u32) -> Result<Subscriber, String> {
        let child = Command::new(MOSQUITTO_SUB)
            .args(at)
            .args(["-V", "mqttv5"])
            .args(["-u", APP_USER, "-P", APP_PASSWORD, "-i", "app-sub"])
            .args(["-t", filter, "-v"])
            // 0: no limit.
            .args(if count > 0 {
                vec!["-C".to_string(), count.to_string()]
            } else {
                vec![]
            })
            .args(if timeout_s > 0 {
                vec!["-W".to_string(), timeout_s.to_string()]
            } else {
                vec![]
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{MOSQUITTO_SUB} (package mosquitto-clients): {e}"))?;
        // mosquitto logs the SUBACK only at debug level; a short wait is
        // enough on loopback, and a late subscription shows as a missing
        // line, which fails the check (never a false pass).
        std::thread::sleep(Duration::from_millis(400));
        Ok(Subscriber { child: Some(child) })
    }

    /// Like [`Subscriber::start`] with no message or time limit; each
    /// `topic payload` line arrives on the receiver as it is printed.
    pub fn start_live(site: &Site, filter: &str) -> Result<(Subscriber, std::sync::mpsc::Receiver<String>), String> {
        let mut sub = Self::start_with(&["-h", "127.0.0.1", "-p", &site.port.to_string()], filter, 0, 0)?;
        let stdout = sub
            .child
            .as_mut()
            .and_then(|c| c.stdout.take())
            .ok_or("mosquitto_sub has no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok((sub, rx))
    }

    /// Waits for it to exit; its `topic payload` lines.
    pub fn lines(mut self) -> Result<Vec<String>, String> {
        let child = self.child.take().ok_or("mosquitto_sub already collected")?;
        let out = child.wait_with_output().map_err(|e| format!("{MOSQUITTO_SUB}: {e}"))?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect())
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `mosquitto_pub` as the application: publishes `payload` on `topic` as
/// [`APP_USER`]; whether it exited successfully.
pub fn app_publish(site: &Site, topic: &str, payload: &str) -> Result<bool, String> {
    Ok(Command::new(MOSQUITTO_PUB)
        .args(["-h", "127.0.0.1", "-p", &site.port.to_string(), "-V", "mqttv5"])
        .args(["-u", APP_USER, "-P", APP_PASSWORD, "-i", "app-pub"])
        .args(["-t", topic, "-m", payload])
        .status()
        .map_err(|e| format!("{MOSQUITTO_PUB} (package mosquitto-clients): {e}"))?
        .success())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listener that is not the broker's answers the probe: refused as
    /// foreign (another port is tried), with the port's sockets listed.
    #[test]
    fn a_probe_answered_by_another_listener_is_not_taken_for_the_broker() {
        let dir = std::env::temp_dir().join(format!("kem-mqtt-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mosquitto.log"), "1: mosquitto version 2.0.11 running\n").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = other.local_addr().unwrap().port();
        let probe = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut child = Command::new("sleep").arg("10").spawn().unwrap();
        let verdict = accepted_by(&mut child, &dir, 0, port, &probe, Duration::from_millis(200));
        let _ = child.kill();
        let _ = child.wait();
        let Err(Launch::Foreign(why)) = verdict else {
            panic!("a foreign listener was taken for the broker");
        };
        assert!(why.contains("never logged it"), "{why}");
        assert!(
            why.contains(&format!(":{port:04X} ")),
            "the port's sockets are listed: {why}"
        );

        // The same probe, logged as accepted by the broker: taken.
        let local = probe.local_addr().unwrap();
        std::fs::write(
            dir.join("mosquitto.log"),
            format!("1: New connection from 127.0.0.1:{} on port {port}.\n", local.port()),
        )
        .unwrap();
        let mut child = Command::new("sleep").arg("10").spawn().unwrap();
        let verdict = accepted_by(&mut child, &dir, 0, port, &probe, Duration::from_millis(200));
        let _ = child.kill();
        let _ = child.wait();
        assert!(verdict.is_ok(), "the broker's own accept was refused");

        // That line before this start's log (an earlier start wrote it): not taken.
        let start = std::fs::metadata(dir.join("mosquitto.log")).unwrap().len() as usize;
        let mut child = Command::new("sleep").arg("10").spawn().unwrap();
        let verdict = accepted_by(&mut child, &dir, start, port, &probe, Duration::from_millis(200));
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            matches!(verdict, Err(Launch::Foreign(_))),
            "an earlier start's line was taken"
        );

        // A broker that exits (it could not bind: the port is held) without
        // logging the probe: foreign, so another port is tried.
        let mut child = Command::new("true").spawn().unwrap();
        let verdict = accepted_by(&mut child, &dir, start, port, &probe, Duration::from_secs(5));
        let Err(Launch::Foreign(why)) = verdict else {
            panic!("an exited broker was not taken as a foreign answer");
        };
        assert!(why.contains("exited"), "{why}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
