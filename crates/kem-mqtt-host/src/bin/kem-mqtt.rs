//! `kem-mqtt`: provisioning, sensor, gateway and an all-in-one demo for KEM-MQTT/1.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kem_mqtt::{KemId, Suite, SuiteSet};
use kem_mqtt_host::broker::EmbeddedBroker;
use kem_mqtt_host::gateway::{Gateway, GatewayEvent};
use kem_mqtt_host::keys::{private_dir, BrokerSecrets, BrokerState, KeyError, Registry, SensorKeys};
use kem_mqtt_host::provision::{generate_broker, provision_sensor, reprovision_sensor};
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::HostError;
use rand_core::OsRng;

const USAGE: &str = "\
usage:
  kem-mqtt provision --dir DIR [--client ID --suite SUITE [--allow-pure] [--force]]
      creates DIR (mode 0700) and DIR/broker-key.json (all KEMs) if missing;
      with --client, enrols a sensor: DIR/sensor-ID.json and an entry in
      DIR/registry.json (policy: the suite's KEM hybrid only, or pure and
      hybrid with --allow-pure); an enrolled ID is refused unless --force.
      Key files are written with mode 0600.
  kem-mqtt gateway --broker HOST:PORT --dir DIR
      topic-mode gateway; answers every message with \"ack <n>\"; prints what
      it refused or dropped, and its counters at most every 10 s
  kem-mqtt sensor --broker HOST:PORT --key FILE [--mode topic|auth] [--count N] [--message TEXT]
      in topic mode a handshake the gateway does not confirm within 10 s is
      started again, up to 3 times
  kem-mqtt demo [--suite SUITE | --all-suites] [--count N]
      embedded broker on 127.0.0.1 + gateway + sensor in one process (topic mode)
suites: ctru-light-ascon[+x25519] ctru-light-sha3[+x25519] ml-kem-512[+x25519]
        kyber512-r3[+x25519] lightsaber[+x25519]";

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn flag(args: &[String], name: &str) -> bool {
    args.iter().any(|a| a == name)
}

fn need(args: &[String], name: &str) -> Result<String, HostError> {
    arg(args, name).ok_or_else(|| HostError::Unexpected(format!("missing {name}\n{USAGE}")))
}

fn suite_arg(name: &str) -> Result<Suite, HostError> {
    Suite::from_name(name).ok_or_else(|| HostError::Unexpected(format!("unknown suite {name:?}\n{USAGE}")))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("provision") => provision(&args),
        Some("gateway") => gateway(&args),
        Some("sensor") => sensor(&args),
        Some("demo") => demo(&args),
        _ => {
            println!("{USAGE}");
            return;
        }
    };
    if let Err(e) = result {
        eprintln!("kem-mqtt: {e}");
        std::process::exit(1);
    }
}

fn provision(args: &[String]) -> Result<(), HostError> {
    let dir = PathBuf::from(need(args, "--dir")?);
    private_dir(&dir)?;
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
    if let Some(client) = arg(args, "--client") {
        let suite = suite_arg(&need(args, "--suite")?)?;
        let allowed = if flag(args, "--allow-pure") || !suite.is_hybrid() {
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
        let force = flag(args, "--force");
        let refused = |e: KeyError| HostError::Unexpected(format!("{e}; --force replaces its keys"));
        let keys = if force {
            reprovision_sensor(&broker, &mut registry, &client, suite, allowed, &mut OsRng)?
        } else {
            provision_sensor(&broker, &mut registry, &client, suite, allowed, &mut OsRng).map_err(|e| match e {
                KeyError::AlreadyEnrolled(_) => refused(e),
                e => e.into(),
            })?
        };
        if force {
            keys.save(&key_path)?;
        } else {
            keys.save_new(&key_path).map_err(|e| match e.inner() {
                KeyError::Exists(_) => refused(e),
                _ => e.into(),
            })?;
        }
        registry.save(&reg_path)?;
        println!("wrote {} and {}", key_path.display(), reg_path.display());
    }
    Ok(())
}

fn load_state(dir: &Path) -> Result<BrokerState, HostError> {
    Ok(BrokerState {
        secrets: BrokerSecrets::load(&dir.join("broker-key.json"))?,
        registry: Registry::load_or_empty(&dir.join("registry.json"))?,
    })
}

fn gateway(args: &[String]) -> Result<(), HostError> {
    let addr = need(args, "--broker")?;
    let state = Arc::new(load_state(Path::new(&need(args, "--dir")?))?);
    let mut gw = Gateway::connect(&addr, state)?;
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

fn sensor(args: &[String]) -> Result<(), HostError> {
    let addr = need(args, "--broker")?;
    let keys = SensorKeys::load(Path::new(&need(args, "--key")?))?;
    let timeout = Duration::from_secs(10);
    let mut client = match arg(args, "--mode").as_deref().unwrap_or("topic") {
        "topic" => SensorClient::connect_topic_mode_retrying(&addr, &keys, timeout, 3)?,
        "auth" => SensorClient::connect_auth_mode(&addr, &keys, timeout)?,
        m => return Err(HostError::Unexpected(format!("unknown mode {m:?}"))),
    };
    print_stats(&client);
    let count: u32 = arg(args, "--count").and_then(|c| c.parse().ok()).unwrap_or(1);
    let message = arg(args, "--message").unwrap_or_else(|| "hello from the sensor".into());
    let topic_mode = arg(args, "--mode").as_deref() != Some("auth");
    for i in 0..count {
        let text = format!("{message} #{i}");
        let n = if topic_mode {
            client.send(text.as_bytes())?
        } else {
            client.publish_record(&format!("sensors/{}/data", keys.client_id), text.as_bytes())?
        };
        println!("sent record of {n} bytes");
        if topic_mode {
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

/// One topic-mode run against an embedded broker; returns the sensor.
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

fn demo(args: &[String]) -> Result<(), HostError> {
    let count: u32 = arg(args, "--count").and_then(|c| c.parse().ok()).unwrap_or(3);
    let suites: Vec<Suite> = if flag(args, "--all-suites") {
        Suite::ALL.to_vec()
    } else {
        vec![suite_arg(
            &arg(args, "--suite").unwrap_or_else(|| "ctru-light-ascon+x25519".into()),
        )?]
    };
    println!("KEM-MQTT/1 demo: embedded broker on 127.0.0.1, topic-mode gateway, sensor (host build)");
    for suite in suites {
        demo_suite(suite, count)?;
    }
    Ok(())
}
