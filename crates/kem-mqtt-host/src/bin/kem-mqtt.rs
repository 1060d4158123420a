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

use clap::{Args, Parser, Subcommand, ValueEnum};
use kem_mqtt::{KemId, Suite, SuiteSet};
use kem_mqtt_host::addr::BrokerAddr;
use kem_mqtt_host::broker::EmbeddedBroker;
use kem_mqtt_host::gateway::{Gateway, GatewayEvent};
use kem_mqtt_host::keys::{private_dir, BrokerSecrets, BrokerState, KeyError, Registry, SensorKeys};
use kem_mqtt_host::provision::{generate_broker, provision_sensor, reprovision_sensor};
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::HostError;
use kem_mqtt_host::OsRng;

const SUITES: &str = "\
Suites: ctru-light-ascon[+x25519] ctru-light-sha3[+x25519] ml-kem-512[+x25519]
        kyber512-r3[+x25519] lightsaber[+x25519]";

/// `--broker`'s help (not a doc comment: rustdoc would read `[IPv6]` as a link).
const BROKER_HELP: &str = "The broker: HOST, HOST:PORT or [IPv6]:PORT (port 1883 if none)";

/// KEM-MQTT/1 on a host: key provisioning, a topic-mode gateway, a sensor,
/// and an all-in-one demo.
#[derive(Parser, Debug)]
#[command(name = "kem-mqtt", version, arg_required_else_help = true, after_help = SUITES)]
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
    /// in DIR/registry.json (policy: a hybrid suite only; its KEM pure and
    /// hybrid with --allow-pure or a pure suite). An enrolled ID is refused
    /// unless --force. Key files are written with mode 0600.
    #[command(after_help = SUITES)]
    Provision(ProvisionArgs),
    /// Topic-mode gateway: answers every sensor message with "ack N"
    ///
    /// Connects to the broker as an ordinary MQTT client, runs the broker
    /// side of the handshake for the sensors in DIR/registry.json and answers
    /// every message with "ack N"; prints what it refused or dropped, and
    /// its counters at most every 10 s. Runs until interrupted.
    Gateway(GatewayArgs),
    /// Sensor: handshake with the broker or gateway, then send messages
    ///
    /// In topic mode a handshake the gateway does not confirm within 10 s is
    /// started again, up to 3 times; each message's reply is printed. In auth
    /// mode (a broker running the KEM-MQTT plugin) the messages are published
    /// as records to sensors/ID/data.
    Sensor(SensorArgs),
    /// Embedded broker on 127.0.0.1 + gateway + sensor in one process (topic mode)
    #[command(after_help = SUITES)]
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
}

#[derive(Args, Debug)]
struct GatewayArgs {
    #[arg(long, value_name = "HOST[:PORT]", help = BROKER_HELP)]
    broker: BrokerAddr,
    /// Key directory: broker-key.json and registry.json
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
}

#[derive(Args, Debug)]
struct SensorArgs {
    #[arg(long, value_name = "HOST[:PORT]", help = BROKER_HELP)]
    broker: BrokerAddr,
    /// The sensor's key file (from `kem-mqtt provision`)
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// Topic mode (through a gateway) or auth mode (MQTT v5 enhanced authentication)
    #[arg(long, value_enum, default_value_t = Mode::Topic)]
    mode: Mode,
    /// Messages to send after the handshake (0: the handshake only)
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true)]
    count: u32,
    /// The text of each message (numbered " #0", " #1", …)
    #[arg(long, value_name = "TEXT", default_value = "hello from the sensor")]
    message: String,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Handshake and records on kem-mqtt/… topics, answered by `kem-mqtt gateway`
    Topic,
    /// Handshake in CONNECT/AUTH, with a broker running the KEM-MQTT plugin
    Auth,
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
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Host(e) => write!(f, "{e}"),
            CliError::Broker(addr, e) => write!(f, "broker {addr}: {e}"),
            CliError::Enrolled(e) => write!(f, "{e}; --force replaces its keys"),
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
    let result = match cli.command {
        Command::Provision(a) => provision(&a),
        Command::Gateway(a) => gateway(&a),
        Command::Sensor(a) => sensor(&a),
        Command::Demo(a) => demo(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kem-mqtt: {e}");
            ExitCode::FAILURE
        }
    }
}

fn provision(args: &ProvisionArgs) -> Result<(), CliError> {
    let dir = &args.dir;
    private_dir(dir)?;
    let broker_path = dir.join("broker-key.json");
    let broker = if broker_path.exists() {
        BrokerSecrets::load(&broker_path)?
    } else {
        let b = generate_broker(&KemId::ALL, &mut OsRng);
        // save_new: two provisioning runs racing must not end with two broker keys.
        b.save_new(&broker_path)?;
        println!("wrote {}", broker_path.display());
        b
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
    let reg_path = dir.join("registry.json");
    let mut registry = Registry::load_or_empty(&reg_path)?;
    let key_path = dir.join(format!("sensor-{client}.json"));
    // A second enrolment would lock the deployed sensor out: only on request.
    let keys = if args.force {
        reprovision_sensor(&broker, &mut registry, client, suite, allowed, &mut OsRng)?
    } else {
        provision_sensor(&broker, &mut registry, client, suite, allowed, &mut OsRng).map_err(|e| match e {
            KeyError::AlreadyEnrolled(_) => CliError::Enrolled(e),
            e => e.into(),
        })?
    };
    if args.force {
        keys.save(&key_path)?;
    } else {
        keys.save_new(&key_path).map_err(|e| match e.inner() {
            KeyError::Exists(_) => CliError::Enrolled(e),
            _ => e.into(),
        })?;
    }
    registry.save(&reg_path)?;
    println!("wrote {} and {}", key_path.display(), reg_path.display());
    Ok(())
}

fn load_state(dir: &Path) -> Result<BrokerState, KeyError> {
    Ok(BrokerState {
        secrets: BrokerSecrets::load(&dir.join("broker-key.json"))?,
        registry: Registry::load_or_empty(&dir.join("registry.json"))?,
    })
}

fn gateway(args: &GatewayArgs) -> Result<(), CliError> {
    let state = Arc::new(load_state(&args.dir)?);
    run_gateway(&args.broker, state).map_err(|e| CliError::Broker(args.broker.clone(), e))
}

fn run_gateway(addr: &BrokerAddr, state: Arc<BrokerState>) -> Result<(), HostError> {
    let mut gw = Gateway::connect(&addr.to_string(), state)?;
    // Wakes up when idle: to keep the MQTT connection alive (keep-alive 60 s)
    // and to print the counters.
    gw.set_timeout(Some(Duration::from_secs(30)))?;
    println!("gateway connected to {addr}");
    let mut n = 0u64;
    let mut printed = (Instant::now(), gw.stats());
    loop {
        match gw.poll() {
            Ok(GatewayEvent::Message { client_id, payload }) => {
                n += 1;
                println!("{client_id}: {}", String::from_utf8_lossy(&payload));
                gw.send(&client_id, format!("ack {n}").as_bytes())?;
            }
            Ok(GatewayEvent::Other) => {}
            Ok(e) => println!("{e:?}"),
            Err(HostError::Timeout) => gw.ping()?,
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
    run_sensor(args, &keys).map_err(|e| CliError::Broker(args.broker.clone(), e))
}

fn run_sensor(args: &SensorArgs, keys: &SensorKeys) -> Result<(), HostError> {
    let addr = args.broker.to_string();
    let timeout = Duration::from_secs(10);
    let mut client = match args.mode {
        Mode::Topic => SensorClient::connect_topic_mode_retrying(&addr, keys, timeout, 3)?,
        Mode::Auth => SensorClient::connect_auth_mode(&addr, keys, timeout)?,
    };
    print_stats(&client);
    for i in 0..args.count {
        let text = format!("{} #{i}", args.message);
        let n = match args.mode {
            Mode::Topic => client.send(text.as_bytes())?,
            Mode::Auth => client.publish_record(&format!("sensors/{}/data", keys.client_id), text.as_bytes())?,
        };
        println!("sent record of {n} bytes");
        if args.mode == Mode::Topic {
            println!("reply: {}", String::from_utf8_lossy(&client.recv()?));
        }
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

/// One topic-mode run against an embedded broker.
fn demo_suite(suite: Suite, count: u32) -> Result<(), HostError> {
    let broker_keys = generate_broker(&[suite.kem()], &mut OsRng);
    let mut registry = Registry::default();
    let allowed = SuiteSet::EMPTY.with(suite);
    let keys = provision_sensor(&broker_keys, &mut registry, "sensor-1", suite, allowed, &mut OsRng)?;
    let state = Arc::new(BrokerState {
        secrets: broker_keys,
        registry,
    });
    let broker = EmbeddedBroker::start(None)?;
    let addr = broker.addr().to_string();
    let mut gw = Gateway::connect(&addr, state)?;
    let gw_thread = std::thread::spawn(move || -> Result<(), HostError> {
        let mut n = 0;
        while n < count {
            match gw.poll()? {
                GatewayEvent::Message { client_id, payload } => {
                    n += 1;
                    let reply = format!("ack {n}: {} bytes", payload.len());
                    gw.send(&client_id, reply.as_bytes())?;
                }
                GatewayEvent::Rejected { error, .. } => return Err(HostError::Protocol(error)),
                _ => {}
            }
        }
        Ok(())
    });
    let mut client = SensorClient::connect_topic_mode(&addr, &keys, Duration::from_secs(10))?;
    print_stats(&client);
    let t = Instant::now();
    for i in 0..count {
        let msg = format!("{{\"seq\":{i},\"temp_c\":21.{i}}}");
        let n = client.send(msg.as_bytes())?;
        let reply = client.recv()?;
        println!(
            "  sent {:>2}-byte reading as a {n}-byte record; reply {:?}",
            msg.len(),
            String::from_utf8_lossy(&reply)
        );
    }
    println!("  {count} encrypted round trips in {:.2?}", t.elapsed());
    gw_thread
        .join()
        .map_err(|_| HostError::Unexpected("gateway panicked".into()))??;
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
}
