//! `kem-mqtt`: provisioning, sensor, gateway and an all-in-one demo for KEM-MQTT/1.
//!
//! Command-line errors (an unknown command, a missing or malformed option)
//! exit with status 2 and clap's message naming the option; errors while
//! running exit with status 1 and `kem-mqtt: <what>`, naming the file or
//! the broker concerned.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::addr::BrokerAddr;
use kem_mqtt_host::admission::{parse_rate, Rate};
use kem_mqtt_host::broker::EmbeddedBroker;
use kem_mqtt_host::client::MqttClient;
use kem_mqtt_host::client::Reliability;
use kem_mqtt_host::gateway::{Cluster, Gateway, GatewayConfig, GatewayEvent, Shard};
use kem_mqtt_host::keys::{private_dir, BrokerSecrets, BrokerState, DirLock, KeyError, Registry, SensorKeys};
use kem_mqtt_host::metrics::Metrics;
use kem_mqtt_host::provision::{generate_broker, new_sensor, provision_sensor};
use kem_mqtt_host::reload::RegistryWatch;
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::store::{self, RegistryLocation};
use kem_mqtt_host::topics::Delivery;
use kem_mqtt_host::transport::{Endpoint, MqttVersion, Tls};
use kem_mqtt_host::OsRng;
use kem_mqtt_host::{HostError, Mode};

/// The suites' help: every KEM of `kem_mqtt::KEMS`, each pure and hybrid.
fn suites_help() -> String {
    let kems: Vec<String> = kem_mqtt::KEMS
        .iter()
        .map(|&k| {
            let (pure, hybrid) = (Suite::new(k, false).name(), Suite::new(k, true).name());
            format!("{pure}[{}]", hybrid.strip_prefix(pure).unwrap_or(hybrid))
        })
        .collect();
    let mut lines = kems.chunks(3).map(|row| row.join(" "));
    let first = lines.next().unwrap_or_default();
    lines.fold(format!("Suites: {first}"), |help, row| format!("{help}\n        {row}"))
}

/// `--broker`'s help (not a doc comment: rustdoc would read `[IPv6]` as a link).
const BROKER_HELP: &str = "The broker: HOST, HOST:PORT or [IPv6]:PORT (port 1883 if none)";

/// KEM-MQTT/1 on a host: key provisioning, a topic-mode gateway, a sensor,
/// and an all-in-one demo.
#[derive(Parser, Debug)]
#[command(name = "kem-mqtt", version, arg_required_else_help = true, after_help = suites_help())]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create a key directory with the broker's keys; with --client, enrol a sensor
    ///
    /// Creates DIR (mode 0700) and DIR/broker-key.json (keys for every KEM) if
    /// missing. With --client, enrols a sensor: DIR/sensor-ID.json and an entry
    /// in the registry (DIR/registry.json, or --registry; policy: a hybrid
    /// suite only; its KEM pure and hybrid with --allow-pure or a pure suite).
    /// An enrolled ID is refused unless --force. The registry takes all the
    /// sensors of one run in one step, or none; key files (mode 0600) appear
    /// only for sensors it took.
    #[command(after_help = suites_help())]
    Provision(ProvisionArgs),
    /// Remove sensors from the registry: their next handshake is refused
    ///
    /// Takes the given ids out of the registry, all or none (DIR/registry.json
    /// is rewritten under the key directory's lock; a database marks their
    /// rows revoked in one transaction). A running broker plugin and
    /// `kem-mqtt gateway` see the change within a second: they refuse the
    /// ids' next handshakes and end their live sessions (the plugin also
    /// closes their connections). The sensors' key files are left.
    Revoke(RevokeArgs),
    /// Copy every sensor of one registry into another (e.g. registry.json into a database)
    ///
    /// Reads and validates the whole source, then enrols its sensors into
    /// the target in one step: all of them, or none if one is already
    /// enrolled there (unless --replace). The source is left as it is.
    Import(ImportArgs),
    /// Topic-mode gateway: opens sensors' records for applications, seals commands
    ///
    /// Connects to the broker as an ordinary MQTT client and runs the broker
    /// side of the handshake for the sensors in DIR/registry.json. A record a
    /// sensor publishes on kem-mqtt/data/c2b/ID/SUB is opened and its
    /// plaintext published on PLAIN/ID/SUB; a command an application
    /// publishes on CMD/ID/SUB is sealed to the sensor. Prints what it
    /// refused or dropped, and its counters at most every 10 s. Runs until
    /// interrupted. With --share-group, several instances share one fleet
    /// (docs/gateway.md).
    Gateway(Box<GatewayArgs>),
    /// Sensor: handshake with the broker or gateway, send readings, print commands
    ///
    /// Sends --count readings on kem-mqtt/data/c2b/ID/SUB (applications
    /// read them on plain/ID/SUB), then prints the commands that arrive
    /// within --listen seconds. In topic mode a handshake the gateway does
    /// not confirm within 10 s is started again, up to 3 times. Auth mode
    /// needs a broker running the KEM-MQTT plugin.
    Sensor(SensorArgs),
    /// Carry a sensor board's session to the broker (the board holds the keys)
    ///
    /// The board runs the sensor application with provisioned keys on its
    /// serial port (cargo xtask flash --image app-KEM[-x25519] --keys
    /// SENSOR.json): it shakes hands, sends a reading on a schedule and
    /// re-keys on its own; the bridge carries each step to the broker (auth
    /// mode: the plugin; topic mode: a gateway), hands it the commands
    /// applications publish on cmd/ID/SUB, and runs until SIGTERM. It holds
    /// no key and sees no plaintext; applications read plain/ID/reading.
    /// With --suite it drives a harness image (--image mqtt-…) through one
    /// handshake and its one reading (plain/ID/t) instead.
    SerialBridge(SerialBridgeArgs),
    /// A fleet of sensors against a broker: handshakes per second, latency, records per second
    ///
    /// Runs the sensors of DIR (sensor-*.json, e.g. from `provision --count`)
    /// of one suite: CONCURRENCY at a time, each handshakes and stays
    /// connected; then each publishes RECORDS readings, and an application
    /// (with --app-user) counts what arrives on plain/#. cargo xtask
    /// mqtt-load runs it against mosquitto with the plugin and against the
    /// gateway (docs/benchmarks.md).
    Load(LoadArgs),
    /// Embedded broker on 127.0.0.1 + gateway + sensor + application in one process (topic mode)
    #[command(after_help = suites_help())]
    Demo(DemoArgs),
}

#[derive(Args, Debug)]
struct ProvisionArgs {
    /// Key directory (created with mode 0700 if missing)
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Enrol a sensor with this client id (1 to 64 of A-Z a-z 0-9 . _ -)
    #[arg(long, value_name = "ID", value_parser = parse_client_id, requires = "suite")]
    client: Option<String>,
    /// The enrolled sensor's suite
    #[arg(long, value_name = "SUITE", value_parser = parse_suite, requires = "client")]
    suite: Option<Suite>,
    /// Also allow the hybrid suite's KEM without X25519 (a pure suite always allows its hybrid)
    #[arg(long, requires = "client")]
    allow_pure: bool,
    /// Replace the keys and policy of an enrolled id (the deployed sensor is locked out)
    #[arg(long, requires = "client")]
    force: bool,
    /// The registry: a JSON file, sqlite:PATH (or PATH.sqlite/.db), or postgres://… [default: DIR/registry.json]
    #[arg(long, value_name = "LOCATION", value_parser = parse_registry)]
    registry: Option<RegistryLocation>,
    /// Enrol a fleet: N sensors ID-0001 … ID-N (load tests), one registry write
    #[arg(long, value_name = "N", requires = "client", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    count: u32,
}

/// Where the broker is, and whether to reach it over TLS.
#[derive(Args, Debug)]
struct BrokerArgs {
    #[arg(long = "broker", value_name = "HOST[:PORT]", help = BROKER_HELP)]
    addr: BrokerAddr,
    /// Connect over TLS, trusting the CA certificates in this PEM file (the
    /// broker's certificate must be valid for HOST)
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// The MQTT version of topic mode: 5, or 3.1.1 for a broker without v5 (RabbitMQ's MQTT plugin)
    #[arg(long, value_name = "VERSION", default_value = "5")]
    mqtt_version: MqttVersion,
}

impl BrokerArgs {
    fn tls(&self) -> Result<Option<Tls>, CliError> {
        self.tls_ca
            .as_deref()
            .map(Tls::from_ca_file)
            .transpose()
            .map_err(|e| CliError::Broker(self.addr.clone(), e))
    }

    fn endpoint(&self) -> Result<Endpoint, CliError> {
        Ok(Endpoint {
            addr: self.addr.to_string(),
            tls: self.tls()?,
            version: self.mqtt_version,
        })
    }
}

#[derive(Args, Debug)]
struct RevokeArgs {
    /// Key directory with registry.json
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The registry: a JSON file, sqlite:PATH (or PATH.sqlite/.db), or postgres://… [default: DIR/registry.json]
    #[arg(long, value_name = "LOCATION", value_parser = parse_registry)]
    registry: Option<RegistryLocation>,
    /// A sensor id to revoke (repeat for several)
    #[arg(long, value_name = "ID", required = true, value_parser = parse_client_id)]
    client: Vec<String>,
}

#[derive(Args, Debug)]
struct ImportArgs {
    /// The registry to copy: a JSON file, sqlite:PATH (or PATH.sqlite/.db), or postgres://…
    #[arg(long, value_name = "LOCATION", value_parser = parse_registry)]
    from: RegistryLocation,
    /// The registry to enrol them into (created if it is a database that does not exist)
    #[arg(long, value_name = "LOCATION", value_parser = parse_registry)]
    to: RegistryLocation,
    /// Ids already enrolled in the target take the source's keys and policy
    #[arg(long)]
    replace: bool,
}

fn parse_registry(s: &str) -> Result<RegistryLocation, String> {
    RegistryLocation::parse(s).map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
struct GatewayArgs {
    #[command(flatten)]
    broker: BrokerArgs,
    /// Key directory: broker-key.json and registry.json
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The registry: a JSON file, sqlite:PATH (or PATH.sqlite/.db), or postgres://… [default: DIR/registry.json]
    #[arg(long, value_name = "LOCATION", value_parser = parse_registry)]
    registry: Option<RegistryLocation>,
    /// Where opened readings are published: PREFIX/ID/SUB
    #[arg(long, value_name = "PREFIX", default_value = "plain")]
    plain_prefix: String,
    /// Where applications publish commands: PREFIX/ID/SUB
    #[arg(long, value_name = "PREFIX", default_value = "cmd")]
    command_prefix: String,
    /// Run as one of several instances sharing the fleet: the shared-subscription group
    #[arg(long, value_name = "GROUP", requires = "instance")]
    share_group: Option<String>,
    /// This instance's name, unique in its group
    #[arg(long, value_name = "NAME", requires = "share_group")]
    instance: Option<String>,
    /// Log in to the broker with this username (the password from --password-file)
    #[arg(long, value_name = "USER", requires = "password_file")]
    username: Option<String>,
    /// File holding the broker password (its first line)
    #[arg(long, value_name = "FILE", requires = "username")]
    password_file: Option<PathBuf>,
    /// New ClientHellos per sensor id: BURST/INTERVAL (4/5s), or off
    #[arg(long, value_name = "RATE", default_value = "4/5s", value_parser = parse_rate)]
    limit_per_id: Rate,
    /// New ClientHellos in all, the shared pool: BURST/INTERVAL (200/20ms: 200 at once, then one every 20 ms), or off
    #[arg(long, value_name = "RATE", default_value = "200/20ms", value_parser = parse_rate)]
    limit_global: Rate,
    /// The pool only sensors that completed a handshake within 24 h draw on: BURST/INTERVAL, or off
    #[arg(long, value_name = "RATE", default_value = "1000/40ms", value_parser = parse_rate)]
    limit_reserved: Rate,
    /// Returning sensors remembered (those the reserved pool serves; the admission default if not given); past it the oldest is forgotten
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_returning: Option<u32>,
    /// Drop a sensor's session (its keys wiped) after this long without an authentic record
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_session_idle)]
    session_idle: Duration,
    /// Serve the gateway's metrics (OpenMetrics text) on GET /metrics at this address, e.g. 127.0.0.1:9464
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// Run as instance K of N that split the fleet by sensor id, for a broker without shared subscriptions (RabbitMQ)
    #[arg(long, value_name = "K/N", value_parser = Shard::parse, conflicts_with = "share_group")]
    shard: Option<Shard>,
    /// A session the broker keeps, QoS 1 both ways: no reading lost when the broker node fails (a clustered broker)
    #[arg(long)]
    persistent: bool,
    /// Another node of the same (clustered) broker, tried in turn when the connection is lost (repeat for several)
    #[arg(long, value_name = "HOST[:PORT]")]
    failover: Vec<BrokerAddr>,
}

fn parse_session_idle(v: &str) -> Result<Duration, String> {
    kem_mqtt_host::admission::parse_duration(v).ok_or_else(|| format!("{v:?}: a duration such as 90s, 30m or 24h"))
}

#[derive(Args, Debug)]
struct SensorArgs {
    #[command(flatten)]
    broker: BrokerArgs,
    /// The sensor's key file (from `kem-mqtt provision`)
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// Topic mode (through a gateway) or auth mode (MQTT v5 enhanced authentication)
    #[arg(long, value_enum, default_value_t = Mode::Topic)]
    mode: Mode,
    /// Readings to send after the handshake (0: the handshake only)
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true)]
    count: u32,
    /// The text of each reading (numbered " #0", " #1", …)
    #[arg(long, value_name = "TEXT", default_value = "hello from the sensor")]
    message: String,
    /// The readings' subtopic: kem-mqtt/data/c2b/ID/SUB, delivered on plain/ID/SUB
    #[arg(long, value_name = "SUB", default_value = "t")]
    topic: String,
    /// After the readings, print the commands that arrive for this many seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    listen: u64,
}

#[derive(Args, Debug)]
struct SerialBridgeArgs {
    /// The board's serial port, e.g. /dev/ttyUSB0
    #[arg(long, value_name = "PORT")]
    port: String,
    /// The port's baud rate (the firmware's UART at 20 MHz: 2500000 on the
    /// ATmega1284p, 1250000 on the ATmega4808)
    #[arg(long, value_name = "BAUD", default_value_t = 2_500_000)]
    baud: u32,
    #[command(flatten)]
    broker: BrokerArgs,
    /// Drive a harness image (`mqtt-<kem>[-x25519]`) through one handshake of
    /// SUITE and its one reading. Without it, the board runs a sensor
    /// application image (`app-…`) and the bridge carries its whole session
    /// (handshakes, readings, commands, re-keying) until SIGTERM or SIGINT
    #[arg(long, value_name = "SUITE", value_parser = parse_suite)]
    suite: Option<Suite>,
    /// Auth mode (the KEM-MQTT plugin) or topic mode (a gateway)
    #[arg(long, value_enum, default_value_t = Mode::Auth)]
    mode: Mode,
    /// Seconds to wait for each answer of the board and of the broker
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    wait: u64,
    /// When the board's port fails (a USB adapter unplugged), how long the
    /// bridge tries to open it again, once a second, before it exits
    /// (sensor application images only)
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    reopen_for: u64,
}

#[derive(Args, Debug)]
struct LoadArgs {
    #[command(flatten)]
    broker: BrokerArgs,
    /// Directory with the fleet's sensor-*.json key files
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// Run the sensors of this suite
    #[arg(long, value_name = "SUITE", value_parser = parse_suite)]
    suite: Suite,
    /// Topic mode (through a gateway) or auth mode (the plugin)
    #[arg(long, value_enum, default_value_t = Mode::Auth)]
    mode: Mode,
    /// Sensors handshaking at the same time
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    concurrency: u32,
    /// At most this many of the suite's sensors (all: 0)
    #[arg(long, value_name = "N", default_value_t = 0)]
    sensors: usize,
    /// Readings per sensor after the handshakes
    #[arg(long, value_name = "N", default_value_t = 5)]
    records: u32,
    /// The application's broker account, to count the readings delivered on plain/#
    #[arg(long, value_name = "USER", requires = "app_password_file")]
    app_user: Option<String>,
    /// File holding that account's password (its first line)
    #[arg(long, value_name = "FILE", requires = "app_user")]
    app_password_file: Option<PathBuf>,
    /// Print the result as one JSON object
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// The suite to run
    #[arg(long, value_name = "SUITE", value_parser = parse_suite, default_value = "ctru-light-ascon+x25519")]
    suite: Suite,
    /// Run every suite, one after the other
    #[arg(long, conflicts_with = "suite")]
    all_suites: bool,
    /// Encrypted round trips per suite (at least 1)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        value_parser = clap::value_parser!(u32).range(1..),
        allow_negative_numbers = true
    )]
    count: u32,
}

fn parse_suite(name: &str) -> Result<Suite, String> {
    Suite::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Suite::ALL.iter().map(|s| s.name()).collect();
        format!("unknown suite; one of: {}", names.join(", "))
    })
}

fn parse_client_id(id: &str) -> Result<String, String> {
    if kem_mqtt::valid_client_id(id.as_bytes()) {
        Ok(id.to_string())
    } else {
        Err("a client id is 1 to 64 of A-Z a-z 0-9 . _ -".into())
    }
}

/// An error while running (the command line was fine).
#[derive(Debug)]
enum CliError {
    /// Keys, files, or the embedded demo.
    Host(HostError),
    /// Talking to the broker at this address.
    Broker(BrokerAddr, HostError),
    /// Provisioning an enrolled id (or over its key file) without --force.
    Enrolled(KeyError),
    /// Options that parse but do not go together (exit status 2).
    Usage(String),
    /// The board: its serial port cannot be opened (the message names the
    /// port and the OS error), or it runs no image this command can drive.
    Board(String),
    /// The command was right but what it found was not (exit status 1):
    /// e.g. revoking an id the registry does not hold.
    Refused(String),
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Host(e) => write!(f, "{e}"),
            CliError::Broker(addr, e) => write!(f, "broker {addr}: {e}"),
            CliError::Enrolled(e) => write!(f, "{e}; --force replaces its keys"),
            CliError::Usage(e) | CliError::Board(e) | CliError::Refused(e) => f.write_str(e),
        }
    }
}

impl From<HostError> for CliError {
    fn from(e: HostError) -> Self {
        CliError::Host(e)
    }
}
impl From<KeyError> for CliError {
    fn from(e: KeyError) -> Self {
        CliError::Host(e.into())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `kem-mqtt … | head`: when the reader goes, end quietly as other Unix
    // tools do (SIGPIPE's default action), not with Rust's panic on a
    // failed print (which ignores SIGPIPE and so sees EPIPE). Not for the
    // commands that stay connected to a broker: there SIGPIPE also comes
    // from a socket whose broker node died, and would kill the process
    // instead of letting it fail over (`cargo xtask fleet` lost its
    // gateways that way).
    if !matches!(
        cli.command,
        Command::Gateway(_) | Command::Sensor(_) | Command::SerialBridge(_) | Command::Load(_)
    ) {
        sigpipe::reset();
    }
    let result = match cli.command {
        Command::Provision(a) => provision(&a),
        Command::Revoke(a) => revoke(&a),
        Command::Import(a) => import(&a),
        Command::Gateway(a) => gateway(&a),
        Command::Sensor(a) => sensor(&a),
        Command::SerialBridge(a) => serial_bridge(&a),
        Command::Load(a) => load(&a),
        Command::Demo(a) => demo(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kem-mqtt: {e}");
            if matches!(e, CliError::Usage(_)) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn serial_bridge(args: &SerialBridgeArgs) -> Result<(), CliError> {
    let wait = Duration::from_secs(args.wait.max(1));
    let Some(suite) = args.suite else {
        return session_bridge(args, wait);
    };
    let mut board =
        kem_mqtt_host::board::BoardSensor::open(&args.port, args.baud, suite, wait).map_err(CliError::Board)?;
    // The firmware seals its reading on its compiled-in record topic.
    let topic = std::str::from_utf8(avr_wire::mqtt::TOPIC)
        .map_err(|_| CliError::Host(HostError::Unexpected("the firmware's record topic is not UTF-8".into())))?;
    let tls = args.broker.tls()?;
    kem_mqtt_host::bridge::run(
        &mut board,
        &args.broker.addr,
        tls.as_ref(),
        args.mode,
        wait,
        topic,
        &mut |line| println!("serial-bridge: {line}"),
    )
    .map_err(|e| CliError::Host(HostError::Unexpected(e.to_string())))
}

/// `serial-bridge` without `--suite`: the session of an application image,
/// until SIGTERM or SIGINT (the request in hand is answered first).
fn session_bridge(args: &SerialBridgeArgs, wait: Duration) -> Result<(), CliError> {
    use kem_mqtt_host::bridge::session::{self, SessionConfig};
    let unexpected = |e: String| CliError::Host(HostError::Unexpected(e));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone()).map_err(|e| unexpected(format!("signal {signal}: {e}")))?;
    }
    // Short reads: between the board's requests the bridge polls the broker.
    let mut open = || avr_serial::open(&args.port, args.baud, Duration::from_millis(50)).map_err(|e| e.to_string());
    let cfg = SessionConfig {
        broker: args.broker.addr.clone(),
        tls: args.broker.tls()?,
        mode: args.mode,
        wait,
    };
    println!(
        "serial-bridge: carrying the session of the board on {} to {} ({} mode)",
        args.port,
        args.broker.addr,
        args.mode.name()
    );
    let reopen = session::Reopen {
        for_at_most: Duration::from_secs(args.reopen_for),
        ..session::Reopen::default()
    };
    let stats = session::serve_reopening(&mut open, &cfg, &stop, reopen, &mut |line| {
        println!("serial-bridge: {line}")
    })
    .map_err(|e| match e {
        kem_mqtt_host::bridge::BridgeError::Setup(e) => CliError::Board(e),
        e => unexpected(e.to_string()),
    })?;
    println!("serial-bridge: stopped: {stats}");
    Ok(())
}

fn provision(args: &ProvisionArgs) -> Result<(), CliError> {
    let dir = &args.dir;
    private_dir(dir)?;
    let broker = {
        // Held while the broker's keys are looked for and written: two runs
        // in one directory must not make two broker keys.
        let _lock = DirLock::acquire(dir)?;
        let broker_path = dir.join(kem_mqtt_host::keys::BROKER_KEY_FILE);
        if broker_path.exists() {
            BrokerSecrets::load(&broker_path)?
        } else {
            let b = generate_broker(&kem_mqtt::KEMS, &mut OsRng);
            b.save_new(&broker_path)?;
            println!("wrote {}", broker_path.display());
            b
        }
    };
    let (Some(client), Some(suite)) = (&args.client, args.suite) else {
        return Ok(());
    };
    let allowed = if args.allow_pure || !suite.is_hybrid() {
        SuiteSet::EMPTY
            .with(suite)
            .with(Suite::new(suite.kem(), !suite.is_hybrid()))
    } else {
        SuiteSet::EMPTY.with(suite)
    };
    let location = args.registry.clone().unwrap_or_else(|| RegistryLocation::in_dir(dir));
    let ids: Vec<String> = if args.count > 1 {
        (1..=args.count).map(|i| format!("{client}-{i:04}")).collect()
    } else {
        vec![client.clone()]
    };
    if let Some(bad) = ids.iter().find(|id| !kem_mqtt::valid_client_id(id.as_bytes())) {
        return Err(CliError::Usage(format!(
            "client id {bad:?}: 1 to 64 of A-Z a-z 0-9 . _ -"
        )));
    }
    let key_path = |id: &str| dir.join(format!("sensor-{id}.json"));
    if !args.force {
        if let Some(id) = ids.iter().find(|id| key_path(id).exists()) {
            return Err(CliError::Enrolled(KeyError::Exists(key_path(id))));
        }
    }
    let mut store = store::open(&location)?;
    // The key files wait beside their final names until the registry has
    // taken every sensor: a refused enrolment leaves no key file behind,
    // and one that succeeds leaves no sensor without its file.
    let mut sensors = Vec::with_capacity(ids.len());
    let mut staged = Vec::with_capacity(ids.len());
    let unstage = |staged: &[(PathBuf, PathBuf)]| {
        for (tmp, _) in staged {
            let _ = std::fs::remove_file(tmp);
        }
    };
    for id in &ids {
        let (entry, keys) = new_sensor(&broker, id, suite, allowed, &mut OsRng)?;
        // This run's own name: a concurrent run staging the same id must
        // not overwrite (or remove) this one's file.
        let tmp = dir.join(format!(".sensor-{id}.json.{}.new", std::process::id()));
        if let Err(e) = keys.save(&tmp) {
            unstage(&staged);
            return Err(e.into());
        }
        staged.push((tmp, key_path(id)));
        sensors.push((id.clone(), entry));
    }
    if let Err(e) = store.enrol(&sensors, args.force) {
        unstage(&staged);
        return Err(match e {
            KeyError::AlreadyEnrolled(_) => CliError::Enrolled(e),
            e => e.into(),
        });
    }
    for (tmp, path) in &staged {
        std::fs::rename(tmp, path).map_err(|e| io_error(path, e))?;
    }
    if args.count > 1 {
        println!(
            "wrote {} sensor key files ({}-0001 … {}) and {location}",
            args.count,
            client,
            ids.last().map_or("", String::as_str),
        );
    } else {
        println!("wrote {} and {location}", key_path(client).display());
    }
    Ok(())
}

/// The first line of a password file.
fn read_password(path: &Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

fn io_error(path: &Path, e: std::io::Error) -> CliError {
    CliError::Host(HostError::Io(std::io::Error::new(
        e.kind(),
        format!("{}: {e}", path.display()),
    )))
}

fn load(args: &LoadArgs) -> Result<(), CliError> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&args.dir)
        .map_err(|e| io_error(&args.dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("sensor-") && n.ends_with(".json"))
        })
        .collect();
    paths.sort();
    let mut keys = Vec::new();
    for p in paths {
        let k = SensorKeys::load(&p)?;
        if k.suite == args.suite {
            keys.push(k);
        }
    }
    if args.sensors > 0 {
        keys.truncate(args.sensors);
    }
    if keys.is_empty() {
        return Err(CliError::Usage(format!(
            "no {} sensor in {} (kem-mqtt provision --count)",
            args.suite.name(),
            args.dir.display()
        )));
    }
    let app_login = match (&args.app_user, &args.app_password_file) {
        (Some(u), Some(f)) => Some((u.clone(), read_password(f)?)),
        _ => None,
    };
    let config = kem_mqtt_host::load::LoadConfig {
        broker: args.broker.endpoint()?,
        mode: args.mode,
        concurrency: args.concurrency as usize,
        records: args.records,
        app_login,
        timeout: Duration::from_secs(30),
    };
    let r = kem_mqtt_host::load::run(keys, &config).map_err(|e| CliError::Broker(args.broker.addr.clone(), e))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&r).map_err(|e| CliError::Usage(e.to_string()))?
        );
    } else {
        println!(
            "{} ({} mode): {}/{} handshakes in {:.2} s = {:.1}/s, latency p50 {:.1} ms p99 {:.1} ms; \
             {}/{} records delivered, {:.0}/s; broker crypto {:.0} µs per handshake ({:.0} µs X25519)",
            r.suite,
            r.mode,
            r.established,
            r.sensors,
            r.handshake_seconds,
            r.handshakes_per_second,
            r.latency_p50_ms,
            r.latency_p99_ms,
            r.records_delivered,
            r.records_sent,
            r.records_per_second,
            r.broker_crypto_us,
            r.broker_x25519_us
        );
        if let Some(e) = &r.first_error {
            println!("{} failed; the first: {e}", r.failed);
        }
    }
    Ok(())
}

fn revoke(args: &RevokeArgs) -> Result<(), CliError> {
    let location = args
        .registry
        .clone()
        .unwrap_or_else(|| RegistryLocation::in_dir(&args.dir));
    let mut store = store::open(&location)?;
    store.revoke(&args.client).map_err(|e| match e {
        KeyError::NotEnrolled(id) => CliError::Refused(format!("{id:?} is not in {location}")),
        e => e.into(),
    })?;
    println!(
        "revoked {}; {} sensors remain in {location}",
        args.client.join(", "),
        store.enrolled()?
    );
    Ok(())
}

fn import(args: &ImportArgs) -> Result<(), CliError> {
    if args.from == args.to {
        return Err(CliError::Usage("--from and --to name the same registry".into()));
    }
    let mut from = store::open(&args.from)?;
    let mut to = store::open(&args.to)?;
    let n = store::import(from.as_mut(), to.as_mut(), args.replace).map_err(|e| match e {
        KeyError::AlreadyEnrolled(_) => {
            CliError::Refused(format!("{e} in {}; --replace takes the source's keys", args.to))
        }
        e => e.into(),
    })?;
    println!(
        "imported {n} sensors from {} into {}; it has {} now",
        args.from,
        args.to,
        to.enrolled()?
    );
    Ok(())
}

fn gateway(args: &GatewayArgs) -> Result<(), CliError> {
    let secrets = BrokerSecrets::load(&args.dir.join(kem_mqtt_host::keys::BROKER_KEY_FILE))?;
    // Watched from here on: a changed registry is put in place while the
    // gateway runs (revocation without a restart).
    let location = args
        .registry
        .clone()
        .unwrap_or_else(|| RegistryLocation::in_dir(&args.dir));
    let (watch, registry) = RegistryWatch::open(&location)?;
    let state = Arc::new(BrokerState { secrets, registry });
    let mut config = GatewayConfig {
        delivery: Delivery::new(&args.plain_prefix, &args.command_prefix).map_err(CliError::Usage)?,
        ..GatewayConfig::default()
    };
    config.admission.per_id = args.limit_per_id;
    config.admission.global = args.limit_global;
    config.admission.reserved = args.limit_reserved;
    if let Some(n) = args.max_returning {
        config.admission.max_returning = n as usize;
    }
    config.session_idle = args.session_idle;
    if let (Some(group), Some(instance)) = (&args.share_group, &args.instance) {
        config.cluster = Some(Cluster::new(group, instance).map_err(CliError::Usage)?);
    }
    config.shard = args.shard;
    if args.persistent {
        config.reliability = Reliability {
            acknowledged_publish: true,
            persistent_session: true,
        };
    }
    let password = args.password_file.as_deref().map(read_password).transpose()?;
    let login = args.username.as_deref().zip(password.as_deref());
    let endpoint = args.broker.endpoint()?;
    let mut endpoints = vec![endpoint.clone()];
    for addr in &args.failover {
        endpoints.push(Endpoint {
            addr: addr.to_string(),
            ..endpoint.clone()
        });
    }
    run_gateway(&endpoints, state, config, login, watch, args.metrics)
        .map_err(|e| CliError::Broker(args.broker.addr.clone(), e))
}

/// How often a gateway that lost its broker says it is still trying.
const FAILOVER_REPORT: Duration = Duration::from_secs(10);

/// The next of `endpoints` that takes `gw`'s connection, starting after
/// `current`; each is tried in turn, 250 ms apart, for as long as it takes
/// (a refused login aside): a gateway that gave up would lose its shard's
/// sessions and the plaintexts it has not yet published.
fn fail_over(
    gw: &mut Gateway,
    endpoints: &[Endpoint],
    current: usize,
    login: Option<(&str, &str)>,
    lost: HostError,
) -> Result<usize, HostError> {
    let mut last = lost;
    let mut report = Instant::now() + FAILOVER_REPORT;
    for attempt in 1.. {
        let next = (current + attempt) % endpoints.len();
        match gw.reconnect(&endpoints[next], login) {
            Ok(()) => {
                println!("gateway connected to {} (failover: {last})", endpoints[next]);
                return Ok(next);
            }
            Err(e @ HostError::Refused(_)) => return Err(e),
            Err(e) => {
                if Instant::now() > report {
                    println!("gateway: no broker node takes the connection yet ({e}); trying on");
                    report = Instant::now() + FAILOVER_REPORT;
                }
                last = e;
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }
    unreachable!("the loop returns")
}

fn run_gateway(
    endpoints: &[Endpoint],
    state: Arc<BrokerState>,
    config: GatewayConfig,
    login: Option<(&str, &str)>,
    watch: RegistryWatch,
    metrics_addr: Option<std::net::SocketAddr>,
) -> Result<(), HostError> {
    let plain = config.delivery.plain_prefix.clone();
    let mut current = 0;
    let addr = &endpoints[current];
    let mut gw = Gateway::connect_login(addr, state, config, login)?;
    gw.watch_registry(watch);
    let metrics = Metrics::new(gw.clients());
    // Kept for as long as the gateway runs: dropping it stops the endpoint.
    let _endpoint = match metrics_addr {
        Some(at) => {
            let server = metrics.serve(at)?;
            println!("gateway metrics on http://{}/metrics", server.addr());
            Some(server)
        }
        None => None,
    };
    // Wakes up when idle, to look at the registry (a poll looks before it
    // waits, so a revocation reached an idle gateway only after the whole
    // wait: `cargo xtask fleet` measured 10 s with a 10 s wait) and to print
    // the counters. The client keeps the connection alive while it waits.
    gw.set_timeout(Some(Duration::from_millis(100)));
    println!("gateway connected to {addr}");
    let mut printed = (Instant::now(), gw.stats());
    loop {
        let polled = gw.poll();
        if let Ok(event) = &polled {
            metrics.observe_gateway(&gw, event);
        }
        match polled {
            Ok(GatewayEvent::Message {
                client_id,
                sub,
                payload,
            }) => {
                println!("{client_id}: {} bytes → {plain}/{client_id}/{sub}", payload.len());
            }
            Ok(GatewayEvent::Reloaded { clients, revoked }) => {
                println!("registry reloaded: {clients} sensors; revoked {revoked:?}")
            }
            Ok(GatewayEvent::ReloadRefused { error }) => {
                println!("registry not reloaded, the one in use stays: {error}")
            }
            Ok(GatewayEvent::Other) => {}
            Ok(e) => println!("{e:?}"),
            Err(HostError::Timeout) => {}
            Err(e @ HostError::Io(_)) if endpoints.len() > 1 => {
                current = fail_over(&mut gw, endpoints, current, login, e)?;
            }
            Err(e) => return Err(e),
        }
        let stats = gw.stats();
        if stats != printed.1 && printed.0.elapsed() >= Duration::from_secs(10) {
            println!("gateway: {stats}");
            printed = (Instant::now(), stats);
        }
    }
}

fn sensor(args: &SensorArgs) -> Result<(), CliError> {
    let keys = SensorKeys::load(&args.key)?;
    let endpoint = args.broker.endpoint()?;
    run_sensor(args, &endpoint, &keys).map_err(|e| CliError::Broker(args.broker.addr.clone(), e))
}

fn run_sensor(args: &SensorArgs, endpoint: &Endpoint, keys: &SensorKeys) -> Result<(), HostError> {
    let timeout = Duration::from_secs(10);
    let mut client = match args.mode {
        Mode::Topic => SensorClient::connect_topic_mode_retrying(endpoint, keys, timeout, 3)?,
        Mode::Auth => SensorClient::connect_auth_mode(endpoint, keys, timeout)?,
    };
    print_stats(&client);
    for i in 0..args.count {
        let text = format!("{} #{i}", args.message);
        let n = client.send_on(&args.topic, text.as_bytes())?;
        println!(
            "sent a {n}-byte record on {}",
            kem_mqtt_host::topics::sealed_c2b(&keys.client_id, &args.topic)
        );
    }
    let until = Instant::now() + Duration::from_secs(args.listen);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        client.set_timeout(left)?;
        match client.recv_command() {
            Ok((sub, text)) => println!("command {sub}: {}", String::from_utf8_lossy(&text)),
            Err(HostError::Timeout) => break,
            Err(e) => return Err(e),
        }
    }
    if client.dropped() > 0 {
        println!(
            "dropped {} records that did not open (forged, moved or replayed)",
            client.dropped()
        );
    }
    client.disconnect()
}

fn print_stats(c: &SensorClient) {
    let s = c.stats;
    println!(
        "{:<24} ClientHello {:>5} B  BrokerHello {:>5} B  ClientFinished {:>3} B  sensor compute {:>8.2?}  handshake {:>8.2?}",
        s.suite.name(),
        s.client_hello,
        s.broker_hello,
        s.client_finished,
        s.sensor_compute,
        s.total
    );
}

/// One topic-mode run against an embedded broker: a sensor's readings reach
/// an application as plaintext, the application's commands reach the sensor.
fn demo_suite(suite: Suite, count: u32) -> Result<(), HostError> {
    let broker_keys = generate_broker(&[suite.kem()], &mut OsRng);
    let mut registry = Registry::default();
    let allowed = SuiteSet::EMPTY.with(suite);
    let keys = provision_sensor(&broker_keys, &mut registry, "sensor-1", suite, allowed, &mut OsRng)?;
    let state = Arc::new(BrokerState {
        secrets: broker_keys,
        registry,
    });
    let broker = EmbeddedBroker::start()?;
    let addr = broker.addr().to_string();
    let gateway = Gateway::connect(&addr, state)?.spawn()?;
    // The application: an ordinary MQTT client on the plaintext topics.
    let mut app = MqttClient::connect(&addr.as_str().into(), "application", None, Duration::from_secs(10))?;
    app.subscribe(&["plain/#"])?;
    let mut client = SensorClient::connect_topic_mode(&addr, &keys, Duration::from_secs(10))?;
    print_stats(&client);
    let t = Instant::now();
    for i in 0..count {
        let msg = format!("{{\"seq\":{i},\"temp_c\":21.{i}}}");
        let n = client.send_on("t", msg.as_bytes())?;
        let (topic, plain) = app.recv()?;
        app.publish(&format!("cmd/sensor-1/led{i}"), b"on")?;
        let (sub, command) = client.recv_command()?;
        println!(
            "  sensor → {n}-byte record → application on {topic}: {}; application → command {sub}: {}",
            String::from_utf8_lossy(&plain),
            String::from_utf8_lossy(&command)
        );
    }
    println!("  {count} readings and commands in {:.2?}", t.elapsed());
    let stats = gateway.stop()?;
    if stats.records_rejected + stats.hellos_rejected + stats.finished_invalid > 0 {
        return Err(HostError::Unexpected(format!("the gateway refused something: {stats}")));
    }
    client.disconnect()?;
    broker.stop();
    Ok(())
}

fn demo(args: &DemoArgs) -> Result<(), CliError> {
    let suites: Vec<Suite> = if args.all_suites {
        Suite::ALL.to_vec()
    } else {
        vec![args.suite]
    };
    println!("KEM-MQTT/1 demo: embedded broker on 127.0.0.1, topic-mode gateway, sensor (host build)");
    for suite in suites {
        demo_suite(suite, args.count)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_gateway_takes_a_positive_max_returning() {
        let args = |n: &str| {
            let v = [
                "kem-mqtt",
                "gateway",
                "--broker",
                "127.0.0.1:1883",
                "--dir",
                "k",
                "--max-returning",
                n,
            ];
            Cli::try_parse_from(v)
        };
        match args("333334").unwrap().command {
            Command::Gateway(g) => assert_eq!(g.max_returning, Some(333_334)),
            other => panic!("{other:?}"),
        }
        assert!(args("0").is_err());
        assert!(args("lots").is_err());
    }
}
