//! The `kem-mqtt` command line (issue #23): help on every command, unknown
//! commands and bad values refused with a message naming them, file errors
//! naming the file, broker addresses with port 1883 by default. Runs the
//! real binary, every run bounded by a time limit; network on 127.0.0.1 only.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kem_mqtt_host::addr::{BrokerAddr, DEFAULT_PORT};
use kem_mqtt_host::broker::EmbeddedBroker;

mod common;

const EXE: &str = env!("CARGO_BIN_EXE_kem-mqtt");
/// Longest any one run may take (a debug build on a shared machine).
const LIMIT: Duration = Duration::from_secs(60);

/// Kills a child this test started when dropped (also on a failed assertion).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> Running {
    Running(
        Command::new(EXE)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

fn read_all(r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let mut r = r;
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// Runs `kem-mqtt args…` to completion; fails the test if it takes longer than `limit`.
fn run_within(args: &[&str], limit: Duration) -> Output {
    let mut child = spawn(args);
    let out = read_all(child.0.stdout.take().unwrap());
    let err = read_all(child.0.stderr.take().unwrap());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < limit,
            "kem-mqtt {args:?} still running after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn run(args: &[&str]) -> Output {
    run_within(args, LIMIT)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A run that must be refused as a usage error (status 2, clap's message).
fn refused(args: &[&str]) -> String {
    let out = run(args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(2),
        "kem-mqtt {args:?} was not refused as a usage error\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        !stdout.contains("KEM-MQTT/1 demo"),
        "kem-mqtt {args:?} ran the demo: {stdout}"
    );
    stderr
}

/// A fresh directory under the temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("kem-mqtt-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn an_unknown_command_is_refused_and_named() {
    let err = refused(&["frobnicate"]);
    assert!(err.contains("frobnicate"), "{err}");
    // No command at all: the usage, and a failure (nothing was done).
    let out = run(&[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("Usage: kem-mqtt"), "{}", text(&out.stderr));
    // An unknown option of a known command.
    let err = refused(&["demo", "--frobnicate"]);
    assert!(err.contains("--frobnicate"), "{err}");
}

#[test]
fn every_command_has_help_and_help_does_not_run_it() {
    for cmd in ["provision", "gateway", "sensor", "demo"] {
        for help in ["--help", "-h"] {
            // The demo takes under a second: "quick" alone would not tell help from a run.
            let out = run_within(&[cmd, help], Duration::from_secs(20));
            let stdout = text(&out.stdout);
            assert!(
                out.status.success(),
                "kem-mqtt {cmd} {help}: {stdout}{}",
                text(&out.stderr)
            );
            assert!(
                stdout.contains(&format!("Usage: kem-mqtt {cmd}")),
                "kem-mqtt {cmd} {help}: {stdout}"
            );
            assert!(stdout.contains("--"), "no options listed: {stdout}");
            assert!(
                !stdout.contains("KEM-MQTT/1 demo") && !stdout.contains("round trips in"),
                "kem-mqtt {cmd} {help} ran the command: {stdout}"
            );
        }
    }
    let out = run(&["--help"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    for cmd in ["provision", "gateway", "sensor", "demo"] {
        assert!(stdout.contains(cmd), "{cmd} missing from the usage: {stdout}");
    }
}

#[test]
fn counts_are_numbers_and_the_demo_needs_at_least_one() {
    for bad in ["abc", "0", "-1", "1.5", ""] {
        let err = refused(&["demo", "--count", bad]);
        assert!(err.contains("--count"), "demo --count {bad:?}: {err}");
    }
    // The sensor's count: a number (0 is the handshake only), refused before
    // the key file is read.
    for bad in ["abc", "-1", "99999999999"] {
        let err = refused(&[
            "sensor",
            "--broker",
            "127.0.0.1",
            "--key",
            "no-such-file",
            "--count",
            bad,
        ]);
        assert!(err.contains("--count"), "sensor --count {bad:?}: {err}");
    }
}

#[test]
fn other_bad_values_are_refused_and_named() {
    let err = refused(&["demo", "--suite", "rot13"]);
    assert!(err.contains("--suite") && err.contains("ml-kem-512"), "{err}");
    let err = refused(&["demo", "--suite", "ml-kem-512", "--all-suites"]);
    assert!(err.contains("--all-suites"), "{err}");
    let err = refused(&[
        "sensor",
        "--broker",
        "127.0.0.1",
        "--key",
        "k",
        "--mode",
        "carrier-pigeon",
    ]);
    assert!(err.contains("--mode") && err.contains("topic"), "{err}");
    let dir = TempDir::new("badid");
    let d = dir.0.to_str().unwrap();
    let err = refused(&[
        "provision",
        "--dir",
        d,
        "--client",
        "../escape",
        "--suite",
        "ml-kem-512",
    ]);
    assert!(err.contains("--client"), "{err}");
    let err = refused(&["provision", "--dir", d, "--client", "s1"]);
    assert!(err.contains("--suite"), "{err}");
    let err = refused(&["provision", "--dir", d, "--force"]);
    assert!(err.contains("--client"), "{err}");
    assert!(
        !dir.path("broker-key.json").exists(),
        "a refused command line wrote keys"
    );
    let err = refused(&["sensor", "--key", "k"]);
    assert!(err.contains("--broker"), "{err}");
}

/// A run that must fail while running (status 1) with a message naming `what`.
fn fails_naming(args: &[&str], what: &str) {
    let out = run(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "kem-mqtt {args:?}: {err}");
    assert!(err.contains(what), "kem-mqtt {args:?} does not name {what}: {err}");
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn file_errors_name_the_file() {
    let dir = TempDir::new("files");
    let missing_key = dir.path("sensor-missing.json");
    // Port 1 on 127.0.0.1: never reached, the key file is read first.
    let key_arg = missing_key.to_str().unwrap();
    fails_naming(
        &["sensor", "--broker", "127.0.0.1:1", "--key", key_arg],
        &shown(&missing_key),
    );

    let missing_dir = dir.path("no-keys-here");
    let dir_arg = missing_dir.to_str().unwrap();
    let broker_key = missing_dir.join("broker-key.json");
    fails_naming(
        &["gateway", "--broker", "127.0.0.1:1", "--dir", dir_arg],
        &shown(&broker_key),
    );

    // A key directory that cannot be created (under a regular file).
    let file = dir.path("a-file");
    std::fs::write(&file, b"").unwrap();
    let under = file.join("keys");
    fails_naming(&["provision", "--dir", under.to_str().unwrap()], &shown(&under));

    // A key file that is not JSON.
    let junk = dir.path("junk.json");
    std::fs::write(&junk, b"not json").unwrap();
    let junk_arg = junk.to_str().unwrap();
    fails_naming(&["sensor", "--broker", "127.0.0.1:1", "--key", junk_arg], &shown(&junk));

    // Issue #51: a directory given as a key file, a file given as the key
    // directory: each named for what it is, not by its mode or errno.
    let dir_arg = dir.0.to_str().unwrap();
    fails_naming(
        &["sensor", "--broker", "127.0.0.1:1", "--key", dir_arg],
        "not a key file but a directory",
    );
    fails_naming(&["sensor", "--broker", "127.0.0.1:1", "--key", dir_arg], &shown(&dir.0));
    let file_arg = file.to_str().unwrap();
    fails_naming(&["provision", "--dir", file_arg], "exists and is not a directory");
    fails_naming(&["provision", "--dir", file_arg], &shown(&file));
}

/// A serial port that cannot be opened is named with the OS's reason, both
/// for an application image's session and for a harness image's handshake.
#[test]
fn a_serial_port_that_cannot_be_opened_is_named_with_the_os_error() {
    let dir = TempDir::new("port");
    let port = dir.path("ttyNONE");
    let port_arg = port.to_str().unwrap();
    for extra in [&[][..], &["--suite", "ml-kem-512"][..]] {
        let mut args = vec!["serial-bridge", "--port", port_arg, "--broker", "127.0.0.1:1"];
        args.extend_from_slice(extra);
        let out = run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("cannot open serial port {port_arg}")), "{err}");
        assert!(err.contains("No such file or directory"), "{err}");
        assert!(!err.contains("unexpected"), "{err}");
    }
}

fn parse(s: &str) -> BrokerAddr {
    s.parse().unwrap_or_else(|e| panic!("{s:?} refused: {e}"))
}

#[test]
fn broker_addresses_default_to_port_1883() {
    assert_eq!(DEFAULT_PORT, 1883);
    let a = parse("127.0.0.1");
    assert_eq!(a.socket_addrs(), ["127.0.0.1:1883".parse::<SocketAddr>().unwrap()]);
    assert_eq!(a.to_string(), "127.0.0.1:1883");

    let a = parse("127.0.0.1:1884");
    assert_eq!(a.socket_addrs(), ["127.0.0.1:1884".parse::<SocketAddr>().unwrap()]);

    for (s, shown) in [
        ("[::1]:1885", "[::1]:1885"),
        ("[::1]", "[::1]:1883"),
        ("::1", "[::1]:1883"),
    ] {
        let a = parse(s);
        assert_eq!(a.to_string(), shown, "{s}");
        assert_eq!(a.socket_addrs(), [shown.parse::<SocketAddr>().unwrap()], "{s}");
    }

    // Names resolve (localhost: to loopback addresses only, from the hosts file).
    for (s, port) in [("localhost", 1883), ("localhost:1884", 1884)] {
        let a = parse(s);
        assert_eq!((a.host(), a.port()), ("localhost", port), "{s}");
        assert_eq!(a.to_string(), format!("localhost:{port}"));
        assert!(!a.socket_addrs().is_empty());
        for sa in a.socket_addrs() {
            assert!(sa.ip().is_loopback() && sa.port() == port, "{s} resolved to {sa}");
        }
    }
}

#[test]
fn malformed_broker_addresses_are_refused() {
    // Each is refused on its form, before any DNS query.
    for bad in [
        "",
        ":1883",
        "127.0.0.1:",
        "127.0.0.1:abc",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:-1",
        "localhost:1883:1",
        "::1:99999",
        "[::1",
        "[::1]1883",
        "[::1]:",
        "[127.0.0.1]:1883",
        "[localhost]",
        "bad host",
        "host/path",
        "-flag",
        "mqtt://127.0.0.1",
    ] {
        assert!(bad.parse::<BrokerAddr>().is_err(), "{bad:?} accepted");
    }
    // Through the binary: a usage error naming --broker, before the key file is read.
    for bad in ["127.0.0.1:abc", "a:b:c", ""] {
        let err = refused(&["sensor", "--broker", bad, "--key", "no-such-file"]);
        assert!(err.contains("--broker"), "{bad:?}: {err}");
        assert!(!err.contains("no-such-file"), "{bad:?}: the key file was read: {err}");
        let err = refused(&["gateway", "--broker", bad, "--dir", "no-such-dir"]);
        assert!(err.contains("--broker"), "{bad:?}: {err}");
    }
}

/// Waits for a line of `child`'s stdout that contains `what`; returns the lines read.
fn wait_for_line(lines: &mpsc::Receiver<String>, what: &str) -> Vec<String> {
    let deadline = Instant::now() + LIMIT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) if l.contains(what) => return seen,
            Ok(l) => seen.push(l),
            Err(e) => panic!("no line with {what:?} ({e}); got {seen:?}"),
        }
    }
}

/// `child`'s stdout, line by line, as it comes.
fn stdout_lines(child: &mut Running) -> mpsc::Receiver<String> {
    let (tx, lines) = mpsc::channel();
    let stdout = BufReader::new(child.0.stdout.take().unwrap());
    std::thread::spawn(move || {
        for l in stdout.lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    lines
}

/// `kem-mqtt gateway --broker <broker> --dir <dir>`, once connected; its
/// stdout line by line.
fn spawn_gateway(broker: &str, dir: &str) -> (Running, mpsc::Receiver<String>) {
    let mut gateway = spawn(&["gateway", "--broker", broker, "--dir", dir]);
    let lines = stdout_lines(&mut gateway);
    wait_for_line(&lines, &format!("gateway connected to {broker}"));
    (gateway, lines)
}

#[test]
fn provision_gateway_and_sensor_from_the_command_line() {
    let dir = TempDir::new("e2e");
    let d = dir.0.to_str().unwrap();
    let out = run(&[
        "provision",
        "--dir",
        d,
        "--client",
        "s1",
        "--suite",
        "ctru-light-ascon+x25519",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let key = dir.path("sensor-s1.json");

    let broker = EmbeddedBroker::start().unwrap();
    let port = broker.addr().port().to_string();
    // The gateway by address, the sensor by name (the embedded broker listens
    // on 127.0.0.1 only: if localhost resolves to ::1 first, the sensor must
    // go on to 127.0.0.1).
    let (gateway, lines) = spawn_gateway(&format!("127.0.0.1:{port}"), d);

    // The application: readings on plain/#.
    let mut app = kem_mqtt_host::mqtt::Connection::connect(&broker.addr().to_string()).unwrap();
    app.set_timeout(Some(LIMIT)).unwrap();
    app.mqtt_connect("application").unwrap();
    app.subscribe(1, &["plain/#"]).unwrap();
    let next_reading = |app: &mut kem_mqtt_host::mqtt::Connection| loop {
        if let kem_mqtt_host::mqtt::Packet::Publish { topic, payload } = app.recv().unwrap() {
            break format!("{topic} {}", text(&payload));
        }
    };

    let broker_arg = format!("localhost:{port}");
    let key_arg = key.to_str().unwrap();
    // Two readings, then three seconds of listening for commands.
    let sensor = std::process::Command::new(env!("CARGO_BIN_EXE_kem-mqtt"))
        .args(["sensor", "--broker", &broker_arg, "--key", key_arg])
        .args(["--count", "2", "--message", "hi", "--topic", "room/t", "--listen", "3"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(next_reading(&mut app), "plain/s1/room/t hi #0");
    assert_eq!(next_reading(&mut app), "plain/s1/room/t hi #1");
    app.publish("cmd/s1/led", b"on").unwrap();
    let out = sensor.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("ctru-light-ascon+x25519"), "{stdout}");
    assert!(
        stdout.contains("sent a 29-byte record on kem-mqtt/data/c2b/s1/room/t"),
        "{stdout}"
    );
    assert!(stdout.contains("command led: on"), "{stdout}");
    wait_for_line(&lines, "s1: 5 bytes → plain/s1/room/t");

    // --count 0: the handshake only.
    let out = run(&["sensor", "--broker", &broker_arg, "--key", key_arg, "--count", "0"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("ClientHello") && !stdout.contains("sent a"), "{stdout}");

    drop(gateway);
    broker.stop();
    // No broker at the address: the error names it.
    let nobody = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    fails_naming(&["sensor", "--broker", &nobody, "--key", key_arg], &nobody);
}

/// `kem-mqtt revoke` removes sensors from the registry and refuses an id
/// that is not there (issue #37).
#[test]
fn revoke_removes_sensors_from_the_registry() {
    let dir = TempDir::new("revoke");
    let d = dir.path("keys");
    let d = d.to_str().unwrap();
    for id in ["a", "b", "c"] {
        let out = run(&["provision", "--dir", d, "--client", id, "--suite", "ctru-light-ascon"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = run(&["revoke", "--dir", d, "--client", "b", "--client", "c"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("revoked b, c; 1 sensors remain"),
        "{}",
        text(&out.stdout)
    );
    let registry = kem_mqtt_host::keys::Registry::load_or_empty(&dir.path("keys").join("registry.json")).unwrap();
    assert_eq!(registry.clients.keys().collect::<Vec<_>>(), ["a"]);
    // Not a usage error (status 2) but a refusal of what was found (1).
    let out = run(&["revoke", "--dir", d, "--client", "b"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("\"b\" is not in"), "{}", text(&out.stderr));
}

/// Issue #52: the same commands against an SQLite registry, and a
/// registry.json imported into one. A refused enrolment writes nothing: no
/// key file, no registry row.
#[test]
fn provision_revoke_and_import_work_on_a_database_registry() {
    let dir = TempDir::new("database");
    let d = dir.path("keys");
    let d = d.to_str().unwrap();
    let db = format!("sqlite:{}", dir.path("keys/registry.sqlite").display());
    let ok = |args: &[&str]| {
        let out = run(args);
        assert!(out.status.success(), "kem-mqtt {args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    // `kem-mqtt provision` into the database with `more` options.
    let provision = |more: &[&'static str]| -> Vec<&str> {
        let mut v = vec![
            "provision",
            "--dir",
            d,
            "--registry",
            db.as_str(),
            "--suite",
            "ctru-light-ascon",
        ];
        v.extend_from_slice(more);
        v
    };
    ok(&provision(&["--client", "a"]));
    ok(&provision(&["--client", "f", "--count", "3"]));
    // `a` again, under the name of a key file that is gone: refused by the
    // registry, and no key file is left behind.
    std::fs::remove_file(dir.path("keys/sensor-a.json")).unwrap();
    let out = run(&provision(&["--client", "a"]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("already enrolled"), "{}", text(&out.stderr));
    let left: Vec<String> = std::fs::read_dir(dir.path("keys"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.contains("sensor-a"))
        .collect();
    assert!(left.is_empty(), "a refused enrolment left {left:?}");
    let out = ok(&["revoke", "--dir", d, "--registry", &db, "--client", "f-0002"]);
    assert!(out.contains("revoked f-0002; 3 sensors remain in sqlite:"), "{out}");
    let out = run(&["revoke", "--dir", d, "--registry", &db, "--client", "f-0002"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // A registry.json imported, then refused a second time (every id is there).
    ok(&["provision", "--dir", d, "--client", "j1", "--suite", "ml-kem-512"]);
    ok(&[
        "provision",
        "--dir",
        d,
        "--client",
        "j2",
        "--suite",
        "ml-kem-512+x25519",
    ]);
    let json = dir.path("keys/registry.json");
    let out = ok(&["import", "--from", json.to_str().unwrap(), "--to", &db]);
    assert!(
        out.contains("imported 2 sensors") && out.contains("it has 5 now"),
        "{out}"
    );
    let out = run(&["import", "--from", json.to_str().unwrap(), "--to", &db]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--replace"), "{}", text(&out.stderr));
    let mut store = kem_mqtt_host::store::open(&kem_mqtt_host::store::RegistryLocation::parse(&db).unwrap()).unwrap();
    let ids: Vec<String> = store.load().unwrap().clients.into_keys().collect();
    assert_eq!(ids, ["a", "f-0001", "f-0003", "j1", "j2"]);
}

/// Issue #47: `kem-mqtt gateway` as shipped waits up to 10 s for a
/// message; a sensor revoked while it waited has no record opened and no
/// command sealed to it, while the other sensor carries on.
#[test]
fn the_gateway_opens_no_record_of_a_sensor_revoked_while_it_waited() {
    use kem_mqtt_host::keys::SensorKeys;
    use kem_mqtt_host::mqtt::{Connection, Packet};
    use kem_mqtt_host::sensor::SensorClient;
    use kem_mqtt_host::HostError;
    let dir = TempDir::new("revoke-gateway");
    let d = dir.path("keys");
    let d = d.to_str().unwrap();
    for id in ["a", "b"] {
        let out = run(&["provision", "--dir", d, "--client", id, "--suite", "ctru-light-ascon"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let broker = EmbeddedBroker::start().unwrap();
    let addr = broker.addr().to_string();
    let (_gateway, lines) = spawn_gateway(&addr, d);
    let mut app = Connection::connect(&addr).unwrap();
    app.set_timeout(Some(Duration::from_secs(5))).unwrap();
    app.mqtt_connect("application").unwrap();
    app.subscribe(1, &["plain/#"]).unwrap();
    let mut next_reading = || loop {
        match app.recv() {
            Ok(Packet::Publish { topic, payload }) => break Some(format!("{topic} {}", text(&payload))),
            Ok(_) => {}
            Err(_) => break None,
        }
    };
    let key = |id: &str| SensorKeys::load(&dir.path("keys").join(format!("sensor-{id}.json"))).unwrap();
    let mut a = SensorClient::connect_topic_mode(addr.as_str(), &key("a"), LIMIT).unwrap();
    let mut b = SensorClient::connect_topic_mode(addr.as_str(), &key("b"), LIMIT).unwrap();
    b.send_on("t", b"b before").unwrap();
    assert_eq!(next_reading().as_deref(), Some("plain/b/t b before"));
    wait_for_line(&lines, "b: 8 bytes → plain/b/t");
    // The gateway is back in its wait; b is revoked, then sends a record
    // and is sent a command, then a sends one.
    std::thread::sleep(Duration::from_millis(1500));
    let out = run(&["revoke", "--dir", d, "--client", "b"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    b.send_on("t", b"b after").unwrap();
    let mut cmd = Connection::connect(&addr).unwrap();
    cmd.mqtt_connect("commander").unwrap();
    cmd.publish("cmd/b/led", b"on").unwrap();
    a.send_on("t", b"a after").unwrap();
    assert_eq!(
        next_reading().as_deref(),
        Some("plain/a/t a after"),
        "a record of the revoked sensor was delivered"
    );
    b.set_timeout(Duration::from_secs(1)).unwrap();
    assert!(
        matches!(b.recv_command(), Err(HostError::Timeout)),
        "a command was sealed to the revoked sensor"
    );
    let seen = wait_for_line(&lines, "registry reloaded: 1 sensors; revoked [\"b\"]");
    let seen = [seen, wait_for_line(&lines, "a: 7 bytes → plain/a/t")].concat();
    assert!(!seen.iter().any(|l| l.starts_with("b: ")), "{seen:?}");
}

/// Issue #47: root provisioning and revoking in a key directory that
/// belongs to the broker's user leaves every file there to that user (the
/// lock file included), who can then revoke in it too. Needs root (CI runs
/// as root); elsewhere it says so and checks nothing.
#[test]
fn files_root_writes_into_a_key_directory_belong_to_its_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        eprintln!("not root: the ownership of key files is not checked");
        return;
    }
    const NOBODY: u32 = 65534;
    let dir = TempDir::new("owner");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let keys = dir.path("keys");
    std::fs::create_dir(&keys).unwrap();
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&keys, Some(NOBODY), Some(NOBODY)).unwrap();
    let d = keys.to_str().unwrap();
    for id in ["a", "b"] {
        let out = run(&["provision", "--dir", d, "--client", id, "--suite", "ctru-light-ascon"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = run(&["revoke", "--dir", d, "--client", "a"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut names = vec![];
    for e in std::fs::read_dir(&keys).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        assert_eq!((m.uid(), m.gid()), (NOBODY, NOBODY), "{}", e.path().display());
        names.push(e.file_name().into_string().unwrap());
    }
    names.sort();
    assert_eq!(
        names,
        [
            ".lock",
            "broker-key.json",
            "registry.json",
            "sensor-a.json",
            "sensor-b.json"
        ]
    );
    // The directory's owner revokes (the binary copied where it may run it).
    let exe = dir.path("kem-mqtt");
    std::fs::copy(EXE, &exe).unwrap();
    // A child another test thread forks while the copy's file is still open
    // for writing holds that descriptor until it execs: until then running
    // the copy fails with ETXTBSY ("Text file busy"). That race is the test
    // harness's, not the tool's: try again for up to a second.
    let mut tries = 0;
    let out = loop {
        match Command::new(&exe)
            .args(["revoke", "--dir", d, "--client", "b"])
            .uid(NOBODY)
            .gid(NOBODY)
            .output()
        {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => break r.unwrap(),
        }
    };
    assert!(
        out.status.success(),
        "the directory's owner cannot revoke: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("revoked b; 0 sensors remain"),
        "{}",
        text(&out.stdout)
    );
}

/// A pty standing for a board on a USB serial adapter: a new pair whose
/// other end `link` names (a symlink, as udev gives a board a stable name).
fn plug_board(link: &Path) -> avr_serial::serialport::TTYPort {
    use avr_serial::serialport::{SerialPort, TTYPort};
    use std::os::fd::{FromRawFd, IntoRawFd};
    let (master, slave) = TTYPort::pair().unwrap();
    let path = slave.name().unwrap();
    drop(slave);
    // The pair's descriptors are inherited by the processes this test
    // starts, which would keep the port from hanging up when it is
    // dropped: only a close-on-exec copy of the master is kept.
    // SAFETY: the descriptor is the master's, owned by the File from here.
    let master = unsafe { std::fs::File::from_raw_fd(master.into_raw_fd()) };
    let copy = master.try_clone().unwrap();
    drop(master);
    // SAFETY: `copy` owned the descriptor; the TTYPort owns it from here.
    let mut master = unsafe { TTYPort::from_raw_fd(copy.into_raw_fd()) };
    master.set_timeout(Duration::from_millis(100)).unwrap();
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(path, link).unwrap();
    master
}

/// Asks the bridge on `board` for a nonce under `tag` (again every 2 s
/// until it has the port open); its answer's (kind, tag).
fn nonce_from_bridge(board: &mut avr_serial::serialport::TTYPort, tag: u8) -> (u8, u8) {
    use avr_wire::app::{self as wire, Deframed, Deframer};
    use std::io::Write;
    let suite = kem_mqtt::Suite::ALL.into_iter().find(|s| s.enabled()).unwrap();
    let request = wire::frame(wire::NONCE_REQ, tag, &[suite.id()]).unwrap();
    let mut deframer: Box<Deframer<{ wire::MAX_PAYLOAD }>> = Box::default();
    let deadline = Instant::now() + LIMIT;
    let mut asked = Instant::now() - Duration::from_secs(10);
    while Instant::now() < deadline {
        if asked.elapsed() >= Duration::from_secs(2) {
            let _ = board.write_all(&request);
            asked = Instant::now();
        }
        let mut buf = [0u8; 256];
        // A hang-up until the bridge opens its end: try again.
        let Ok(n) = board.read(&mut buf) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        for &b in &buf[..n] {
            if let Deframed::Frame { kind, tag, .. } = deframer.push(b) {
                return (kind, tag);
            }
        }
    }
    panic!("no answer from the bridge within {LIMIT:?}")
}

/// Issue #47: a board unplugged (its port hangs up) does not end `kem-mqtt
/// serial-bridge`: it says so, opens the port again once it is back, and
/// answers the board there; SIGTERM still ends it with status 0.
#[test]
fn the_serial_bridge_waits_for_an_unplugged_board_to_come_back() {
    use avr_wire::app as wire;
    let dir = TempDir::new("unplug");
    let link = dir.path("ttyBOARD");
    let mut board = plug_board(&link);
    let nobody = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let mut bridge = spawn(&["serial-bridge", "--port", link.to_str().unwrap(), "--broker", &nobody]);
    let lines = stdout_lines(&mut bridge);
    wait_for_line(&lines, "carrying the session");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(nonce_from_bridge(&mut board, 1), (wire::NONCE, 1));
    // Unplugged for a while, then back under the same name.
    drop(board);
    wait_for_line(&lines, "the board's port failed");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        bridge.0.try_wait().unwrap().is_none(),
        "the bridge ended when its port hung up"
    );
    let mut board = plug_board(&link);
    wait_for_line(&lines, "the board's port is back");
    assert_eq!(nonce_from_bridge(&mut board, 2), (wire::NONCE, 2));
    let pid = bridge.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(s) = bridge.0.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "SIGTERM did not end the bridge");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    let rest = wait_for_line(&lines, "serial-bridge: stopped: ");
    assert!(rest.is_empty(), "{rest:?}");
}

/// `kem-mqtt … | head` (issue #35): when the reader of its output goes away,
/// the command ends quietly (killed by SIGPIPE, as other Unix tools are),
/// not with a panic ("failed printing to stdout", exit 134).
#[test]
fn a_closed_output_pipe_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(EXE)
        .args(["demo", "--all-suites", "--count", "50"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("demo"), "{first}");
    // The reader closed its end (the BufReader is gone): the next print fails.
    let err = read_all(child.stderr.take().unwrap());
    let status = child.wait().unwrap();
    let stderr = text(&err.join().unwrap());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        status.signal() == Some(13) || status.success(),
        "ended by {status:?}, stderr: {stderr}"
    );
}

/// `kem-mqtt gateway --metrics ADDR`: the endpoint the binary serves counts
/// what its poll loop saw.
#[test]
fn the_gateway_serves_its_metrics() {
    use kem_mqtt_host::keys::SensorKeys;
    use kem_mqtt_host::sensor::SensorClient;
    let dir = TempDir::new("gateway-metrics");
    let d = dir.path("keys");
    let d = d.to_str().unwrap();
    let out = run(&[
        "provision",
        "--dir",
        d,
        "--client",
        "m1",
        "--suite",
        "ml-kem-512+x25519",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let broker = EmbeddedBroker::start().unwrap();
    let addr = broker.addr().to_string();
    let mut gateway = spawn(&["gateway", "--broker", &addr, "--dir", d, "--metrics", "127.0.0.1:0"]);
    let lines = stdout_lines(&mut gateway);
    let before = wait_for_line(&lines, &format!("gateway connected to {addr}"));
    let url = before
        .iter()
        .find_map(|l| l.strip_prefix("gateway metrics on http://"))
        .unwrap_or_else(|| panic!("no metrics address in {before:?}"));
    let endpoint = url.strip_suffix("/metrics").unwrap();
    let key = SensorKeys::load(&dir.path("keys").join("sensor-m1.json")).unwrap();
    let mut sensor = SensorClient::connect_topic_mode(addr.as_str(), &key, LIMIT).unwrap();
    sensor.send_on("t", b"19.0 C").unwrap();
    wait_for_line(&lines, "m1: 6 bytes → plain/m1/t");
    let (status, reply) = common::scrape(endpoint, "/metrics");
    assert!(status.ends_with(" 200 OK"), "{status}");
    for line in [
        "kem_mqtt_handshakes_total{suite=\"ml-kem-512+x25519\"} 1\n",
        "kem_mqtt_records_total{direction=\"in\"} 1\n",
        "kem_mqtt_registry_sensors 1\n",
    ] {
        assert!(reply.contains(line), "no {line:?} in\n{reply}");
    }
    assert!(!reply.contains("m1"), "the endpoint names the sensor:\n{reply}");
}
