//! `cargo xtask fleet`: a KEM-MQTT fleet on a clustered broker, with a
//! node lost in the middle (issue #52).
//!
//! What runs, all on loopback:
//! - the registry in PostgreSQL ([`Postgres`]), every sensor enrolled;
//! - RabbitMQ, three nodes in one cluster ([`RabbitCluster`]), with its
//!   MQTT plugin (MQTT 3.1.1) and persistent sessions in quorum queues,
//!   replicated on every node;
//! - three `kem-mqtt gateway` processes, one per node, splitting the fleet
//!   by id (`--shard K/3`: RabbitMQ has no shared subscriptions), each with
//!   a persistent session, the other nodes as failovers, and its metrics
//!   endpoint;
//! - the application: a persistent QoS 1 subscriber to `plain/#`;
//! - N host sensors spread over the nodes, each its own MQTT connection
//!   and KEM-MQTT session, sending numbered readings at QoS 1.
//!
//! In the middle of the readings one node is killed (SIGKILL): its sensors
//! and its gateway reconnect to another node. A sensor whose publish got no
//! PUBACK publishes the same sealed record again; if the broker had it
//! after all, the gateway's replay window refuses the copy, so a reading is
//! delivered once. Then the node comes back, one sensor is revoked in the
//! database, and the run checks that every gateway drops it and that its
//! records and a new handshake, sent through each node, go nowhere.
//!
//! It ends with one line: `fleet: 3 nodes, S sensors, R readings
//! acknowledged, D delivered, L lost, U duplicated; node kill: sensors back
//! in X s; revocation bit on every node in Y ms`, and fails unless nothing
//! acknowledged was lost, nothing was delivered twice and the revocation
//! held everywhere.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::client::{MqttClient, Reliability};
use kem_mqtt_host::keys::{BrokerSecrets, SensorKeys, BROKER_KEY_FILE};
use kem_mqtt_host::provision::new_sensor;
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::store::{self, RegistryLocation};
use kem_mqtt_host::transport::{Endpoint, MqttVersion};
use kem_mqtt_host::HostError;

use super::e2e_session::kem_mqtt_cli;
use super::rabbitmq::RabbitCluster;
use super::registry_db::Postgres;
use super::site::free_port;
use crate::util;

/// The broker's nodes.
const NODES: usize = 3;
/// The suite every sensor of the fleet uses.
const SUITE: &str = "ml-kem-512+x25519";
/// How long a sensor keeps trying other nodes before it gives up.
const RECONNECT_FOR: Duration = Duration::from_secs(90);
/// How long the application waits for readings still on their way.
const DRAIN_FOR: Duration = Duration::from_secs(60);
/// The sensor the run revokes.
const REVOKED: &str = "fleet-revoked";
/// MQTT waits of the sensors and the application.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Options of `cargo xtask fleet`.
#[derive(Parser, Debug, Clone)]
pub struct FleetArgs {
    /// Host sensors, each with its own MQTT connection and session
    #[arg(long, default_value_t = 3000)]
    pub sensors: usize,
    /// Readings each sensor sends (QoS 1)
    #[arg(long, default_value_t = 6)]
    pub readings: u32,
    /// Threads driving the sensors (each sensor's publishes wait for their PUBACK)
    #[arg(long, default_value_t = 48)]
    pub threads: usize,
    /// The node killed when half the readings are acknowledged (1..=3)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=3))]
    pub kill_node: u32,
    /// The node the application is connected to (1..=3; not the one killed)
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=3))]
    pub app_node: u32,
    /// Start gateway K on node K, so that one gateway loses its node too. A
    /// plaintext it published as the node died may then reach the
    /// application twice (it cannot know whether the broker had routed it:
    /// at least once), so duplicates are reported, not failed on
    #[arg(long)]
    pub gateways_everywhere: bool,
}

/// What the readings phase counted, across the sensor threads.
#[derive(Default)]
struct Tally {
    /// `(sensor, reading)` the broker acknowledged.
    acknowledged: Vec<(usize, u32)>,
    /// Publishes sent again after a lost connection.
    resent: usize,
    /// Sensors that were on the killed node: when each had its first
    /// reading acknowledged through another node, and how long after its
    /// publish first failed (a sensor learns of the loss only when it
    /// next publishes).
    back: Vec<(Instant, Duration)>,
}

/// The sensors' view of the cluster.
struct Nodes {
    endpoints: Vec<Endpoint>,
    /// Set by the thread that kills the node.
    killed: Mutex<Option<(usize, Instant)>>,
    acknowledged: AtomicUsize,
}

fn endpoint(cluster: &RabbitCluster, node: usize) -> Endpoint {
    Endpoint::tcp(cluster.mqtt_addr(node)).with_version(MqttVersion::V311)
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A gateway process, killed when dropped.
struct GatewayProcess {
    child: Child,
    metrics: String,
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /metrics` of a gateway: the value of the sample `name` (no labels).
fn scrape(addr: &str, name: &str) -> Option<f64> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: fleet\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

fn start_gateway(
    bin: &Path,
    keys: &Path,
    registry: &str,
    cluster: &RabbitCluster,
    shard: usize,
    node: usize,
    log: &Path,
) -> Result<GatewayProcess, String> {
    let metrics = format!("127.0.0.1:{}", free_port()?);
    let mut cmd = Command::new(bin);
    cmd.args(["gateway", "--dir"])
        .arg(keys)
        .args(["--registry", registry, "--mqtt-version", "3.1.1", "--persistent"])
        .args(["--shard", &format!("{shard}/{NODES}"), "--metrics", &metrics])
        // The fleet's start is every sensor's first handshake at once;
        // admission under a flood is measured by `mqtt-load` and the tests.
        .args(["--limit-global", "off", "--limit-reserved", "off"])
        .args(["--broker", &cluster.mqtt_addr(node)]);
    for other in (1..NODES).map(|d| (node + d) % NODES) {
        cmd.args(["--failover", &cluster.mqtt_addr(other)]);
    }
    let out = std::fs::File::create(log).map_err(err)?;
    let child = cmd
        .stdout(out.try_clone().map_err(err)?)
        .stderr(out)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let gw = GatewayProcess { child, metrics };
    let deadline = Instant::now() + Duration::from_secs(30);
    while scrape(&gw.metrics, "kem_mqtt_registry_sensors").is_none() {
        if Instant::now() > deadline {
            return Err(format!("gateway {shard} did not start: see {}", log.display()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(gw)
}

/// The application: a persistent QoS 1 subscriber to `plain/#` that
/// counts every copy of every reading, reconnecting to the next node when
/// its own is lost.
struct Application {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<(), String>>,
    copies: Arc<Mutex<HashMap<(String, u32), u32>>>,
}

impl Application {
    fn start(endpoints: Vec<Endpoint>, first: usize) -> Result<Application, String> {
        let reliability = Reliability {
            acknowledged_publish: true,
            persistent_session: true,
        };
        let connect = move |node: usize| -> Result<MqttClient, HostError> {
            let mut c = MqttClient::connect_with(&endpoints[node], "fleet-application", None, TIMEOUT, reliability)?;
            c.subscribe(&["plain/#"])?;
            c.set_timeout(Some(Duration::from_millis(200)));
            Ok(c)
        };
        let mut client = connect(first).map_err(err)?;
        let stop = Arc::new(AtomicBool::new(false));
        let copies: Arc<Mutex<HashMap<(String, u32), u32>>> = Arc::default();
        let (flag, seen) = (stop.clone(), copies.clone());
        let thread = std::thread::spawn(move || {
            let mut node = first;
            while !flag.load(Ordering::SeqCst) {
                match client.recv() {
                    Ok((topic, payload)) => {
                        // plain/<id>/reading, payload: the reading's number.
                        let id = topic.split('/').nth(1).unwrap_or("").to_string();
                        let n: u32 = std::str::from_utf8(&payload)
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .ok_or_else(|| format!("a reading that is not a number on {topic}"))?;
                        *seen.lock().unwrap().entry((id, n)).or_default() += 1;
                    }
                    Err(HostError::Timeout) => {}
                    Err(_) => {
                        let deadline = Instant::now() + RECONNECT_FOR;
                        client = loop {
                            node = (node + 1) % NODES;
                            match connect(node) {
                                Ok(c) => break c,
                                Err(e) if Instant::now() > deadline => return Err(format!("application: {e}")),
                                Err(_) => std::thread::sleep(Duration::from_millis(200)),
                            }
                        };
                    }
                }
            }
            Ok(())
        });
        Ok(Application { stop, thread, copies })
    }

    fn stop(self) -> Result<HashMap<(String, u32), u32>, String> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .join()
            .map_err(|_| "the application thread panicked".to_string())??;
        Ok(Arc::try_unwrap(self.copies)
            .map_err(|_| "still shared")?
            .into_inner()
            .unwrap())
    }

    fn copies_of(&self, id: &str) -> u32 {
        let copies = self.copies.lock().unwrap();
        copies.iter().filter(|((i, _), _)| i == id).map(|(_, n)| n).sum()
    }

    fn distinct(&self) -> usize {
        self.copies.lock().unwrap().len()
    }
}

/// Publishes a sealed record until the broker acknowledges it, moving the
/// sensor to the next node whenever its connection fails. Returns how
/// long it took from the first failure, if there was one.
fn publish_until_acknowledged(
    sensor: &mut SensorClient,
    node: &mut usize,
    nodes: &Nodes,
    topic: &str,
    record: &[u8],
    tally: &mut Tally,
) -> Result<Option<Duration>, String> {
    let mut failed: Option<Instant> = None;
    let deadline = Instant::now() + RECONNECT_FOR;
    loop {
        match sensor.publish_raw(topic, record) {
            Ok(()) => return Ok(failed.map(|t| t.elapsed())),
            Err(e) if Instant::now() > deadline => return Err(format!("{topic}: {e}")),
            Err(_) => {
                failed.get_or_insert_with(Instant::now);
                tally.resent += 1;
                // To the next node that takes the connection.
                loop {
                    *node = (*node + 1) % NODES;
                    if sensor.reconnect(&nodes.endpoints[*node], TIMEOUT).is_ok() {
                        break;
                    }
                    if Instant::now() > deadline {
                        return Err(format!("{topic}: no node takes the connection"));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

/// One thread's sensors: handshake, then `readings` rounds of one reading each.
fn drive(
    sensors: Vec<(usize, SensorKeys)>,
    nodes: Arc<Nodes>,
    readings: u32,
    start: Arc<std::sync::Barrier>,
) -> Result<Tally, String> {
    let mut live = vec![];
    for (i, keys) in &sensors {
        let node = i % NODES;
        let reliability = Reliability {
            acknowledged_publish: true,
            persistent_session: false,
        };
        let mut attempt = 0;
        let client = loop {
            attempt += 1;
            match SensorClient::connect_topic_mode_with(&nodes.endpoints[node], keys, TIMEOUT, reliability) {
                Ok(c) => break c,
                Err(HostError::Timeout) if attempt < 3 => {}
                Err(e) => return Err(format!("{}: handshake: {e}", keys.client_id)),
            }
        };
        live.push((*i, node, client));
    }
    start.wait();
    let mut tally = Tally::default();
    for reading in 0..readings {
        for (i, node, client) in live.iter_mut() {
            let was_on = *node;
            let (topic, record) = client.seal_on("reading", reading.to_string().as_bytes()).map_err(err)?;
            let moved = publish_until_acknowledged(client, node, &nodes, &topic, &record, &mut tally)?;
            tally.acknowledged.push((*i, reading));
            nodes.acknowledged.fetch_add(1, Ordering::SeqCst);
            if let Some(took) = moved {
                if let Some((killed, _)) = *nodes.killed.lock().unwrap() {
                    if was_on == killed {
                        tally.back.push((Instant::now(), took));
                    }
                }
            }
        }
    }
    for (_, _, client) in live {
        let _ = client.disconnect();
    }
    Ok(tally)
}

/// Runs the fleet (see the module documentation); an error unless every
/// acknowledged reading arrived once and the revocation held.
pub fn run(a: &FleetArgs) -> Result<(), String> {
    if a.sensors < NODES || a.readings < 2 || a.threads == 0 {
        return Err(format!("fleet: at least {NODES} sensors, 2 readings and 1 thread"));
    }
    let (kill, app_node) = (a.kill_node as usize - 1, a.app_node as usize - 1);
    if kill == app_node {
        return Err(
            "fleet: the application's node must survive (what it had received but not yet acknowledged would come again)".into(),
        );
    }
    // Where each gateway starts: by default on the nodes that survive, so
    // that the node lost carries sensors and queue replicas only.
    let survivors: Vec<usize> = (0..NODES).filter(|&n| n != kill).collect();
    let gateway_node = |k: usize| {
        if a.gateways_everywhere {
            k
        } else {
            survivors[k % survivors.len()]
        }
    };
    let root = util::workspace_root();
    // The test profile's build, which CI's tests already made (the fleet
    // measures recovery, not the gateways' speed: `mqtt-load` does that).
    let bin = kem_mqtt_cli()?;
    let work = root.join("target/fleet");
    let _ = std::fs::remove_dir_all(&work);
    kem_mqtt_host::keys::private_dir(&work).map_err(err)?;
    let keys_dir = work.join("keys");
    util::run(
        Command::new(&bin)
            .args(["provision", "--dir"])
            .arg(&keys_dir)
            .stdout(Stdio::null()),
    )?;
    let broker = BrokerSecrets::load(&keys_dir.join(BROKER_KEY_FILE)).map_err(err)?;

    let t = Instant::now();
    let pg = Postgres::start("fleet");
    let location = RegistryLocation::parse(&pg.url()).map_err(err)?;
    let suite = Suite::from_name(SUITE).expect("a suite of the fleet");
    let mut fleet = vec![];
    let mut rows = vec![];
    for i in 0..a.sensors {
        let id = format!("fleet-{i:06}");
        let (client, keys) = new_sensor(
            &broker,
            &id,
            suite,
            SuiteSet::EMPTY.with(suite),
            &mut kem_mqtt_host::OsRng,
        )
        .map_err(err)?;
        rows.push((id, client));
        fleet.push((i, keys));
    }
    // One more, outside the numbered fleet, for the revocation check.
    let (client, revoked) = new_sensor(
        &broker,
        REVOKED,
        suite,
        SuiteSet::EMPTY.with(suite),
        &mut kem_mqtt_host::OsRng,
    )
    .map_err(err)?;
    rows.push((REVOKED.to_string(), client));
    let mut registry = store::open(&location).map_err(err)?;
    for batch in rows.chunks(10_000) {
        registry.enrol(batch, false).map_err(err)?;
    }
    println!(
        "fleet: PostgreSQL up, {} sensors enrolled in {:.1} s",
        a.sensors,
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let mut cluster = RabbitCluster::start("fleet", NODES)?;
    println!(
        "fleet: RabbitMQ cluster of {NODES} nodes up in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let endpoints: Vec<Endpoint> = (0..NODES).map(|n| endpoint(&cluster, n)).collect();
    let gateways = (0..NODES)
        .map(|k| {
            start_gateway(
                &bin,
                &keys_dir,
                &pg.url(),
                &cluster,
                k,
                gateway_node(k),
                &work.join(format!("gateway-{k}.log")),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let app = Application::start(endpoints.clone(), app_node)?;

    // The sensors: handshakes first, then the readings, all threads at once.
    let nodes = Arc::new(Nodes {
        endpoints: endpoints.clone(),
        killed: Mutex::new(None),
        acknowledged: AtomicUsize::new(0),
    });
    let threads = a.threads.min(a.sensors);
    let mut shares: Vec<Vec<(usize, SensorKeys)>> = (0..threads).map(|_| vec![]).collect();
    for (i, keys) in fleet {
        shares[i % threads].push((i, keys));
    }
    let start = Arc::new(std::sync::Barrier::new(threads + 1));
    let t = Instant::now();
    let workers: Vec<_> = shares
        .into_iter()
        .map(|share| {
            let (nodes, start, readings) = (nodes.clone(), start.clone(), a.readings);
            std::thread::spawn(move || drive(share, nodes, readings, start))
        })
        .collect();
    start.wait();
    println!(
        "fleet: {} sensors connected and established in {:.1} s",
        a.sensors,
        t.elapsed().as_secs_f64()
    );

    // The kill, when half the readings are acknowledged.
    let total = a.sensors * a.readings as usize;
    let readings_start = Instant::now();
    while nodes.acknowledged.load(Ordering::SeqCst) < total / 2 {
        if workers.iter().all(|w| w.is_finished()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let killed_at = Instant::now();
    *nodes.killed.lock().unwrap() = Some((kill, killed_at));
    cluster.kill(kill)?;
    println!(
        "fleet: node {} killed (SIGKILL) after {} of {total} readings",
        kill + 1,
        nodes.acknowledged.load(Ordering::SeqCst)
    );
    let mut tally = Tally::default();
    for w in workers {
        let t = w.join().map_err(|_| "a sensor thread panicked".to_string())??;
        tally.acknowledged.extend(t.acknowledged);
        tally.resent += t.resent;
        tally.back.extend(t.back);
    }
    let readings_s = readings_start.elapsed().as_secs_f64();
    let back_s = tally
        .back
        .iter()
        .map(|(t, _)| t.duration_since(killed_at).as_secs_f64())
        .fold(0.0, f64::max);
    let move_s = tally.back.iter().map(|(_, d)| d.as_secs_f64()).fold(0.0, f64::max);
    let moved = tally.back.len();
    println!(
        "fleet: readings done in {readings_s:.1} s; {moved} sensors moved off node {}: the last back {back_s:.2} s after the kill \
         (a sensor notices at its next reading), each within {move_s:.2} s of its first failed publish; {} publishes sent again",
        kill + 1,
        tally.resent
    );

    let t = Instant::now();
    cluster.restart(kill)?;
    println!(
        "fleet: node {} back in the cluster in {:.1} s",
        kill + 1,
        t.elapsed().as_secs_f64()
    );

    // Every acknowledged reading must reach the application.
    let deadline = Instant::now() + DRAIN_FOR;
    while app.distinct() < tally.acknowledged.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }

    // Revocation: one sensor, through the database; every gateway must
    // drop it, and nothing it sends through any node may be delivered.
    let mut revoked_client = SensorClient::connect_topic_mode_with(
        &endpoints[app_node],
        &revoked,
        TIMEOUT,
        Reliability {
            acknowledged_publish: true,
            persistent_session: false,
        },
    )
    .map_err(|e| format!("the sensor to revoke: {e}"))?;
    // Before: its readings are delivered (so that the checks after the
    // revocation can fail).
    let (topic, record) = revoked_client.seal_on("reading", b"4241").map_err(err)?;
    revoked_client.publish_raw(&topic, &record).map_err(err)?;
    let deadline = Instant::now() + TIMEOUT;
    while app.copies_of(REVOKED) == 0 {
        if Instant::now() > deadline {
            return Err("the sensor to revoke: its reading before the revocation was not delivered".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let before: Vec<f64> = gateways
        .iter()
        .map(|g| scrape(&g.metrics, "kem_mqtt_registry_sensors").unwrap_or(0.0))
        .collect();
    let t = Instant::now();
    util::run(
        Command::new(&bin)
            .args(["revoke", "--dir"])
            .arg(&keys_dir)
            .args(["--registry", &pg.url(), "--client", &revoked.client_id])
            .stdout(Stdio::null()),
    )?;
    let bite_deadline = t + Duration::from_secs(30);
    loop {
        let now: Vec<Option<f64>> = gateways
            .iter()
            .map(|g| scrape(&g.metrics, "kem_mqtt_registry_sensors"))
            .collect();
        if now.iter().zip(&before).all(|(n, b)| n.is_some_and(|n| n < *b)) {
            break;
        }
        if Instant::now() > bite_deadline {
            return Err(format!(
                "the revocation did not reach every gateway within 30 s: registry sensors {now:?}, before {before:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let bite_ms = t.elapsed().as_secs_f64() * 1000.0;
    // Its session's records, through every node, then a new handshake
    // through every node: nothing delivered, no session. (One connection
    // at a time: a second one with the same client id ends the first.)
    for (n, e) in endpoints.iter().enumerate() {
        let sent = revoked_client.reconnect(e, TIMEOUT).and_then(|()| {
            let (topic, record) = revoked_client.seal_on("reading", b"4242")?;
            revoked_client.publish_raw(&topic, &record)
        });
        sent.map_err(|e| format!("node {}: the revoked sensor's record: {e}", n + 1))?;
    }
    let _ = revoked_client.disconnect();
    for (n, e) in endpoints.iter().enumerate() {
        match SensorClient::connect_topic_mode(e, &revoked, Duration::from_secs(2)) {
            Err(HostError::Timeout) => {}
            Ok(_) => return Err(format!("node {}: the revoked sensor completed a handshake", n + 1)),
            Err(e) => return Err(format!("node {}: the revoked sensor's handshake: {e}", n + 1)),
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    if app.copies_of(REVOKED) > 1 {
        return Err("a reading of the revoked sensor reached the application".into());
    }
    let mut copies = app.stop()?;
    drop(gateways);

    // The count: every acknowledged reading, once.
    let mut lost = 0;
    for (i, reading) in &tally.acknowledged {
        if !copies.contains_key(&(format!("fleet-{i:06}"), *reading)) {
            lost += 1;
        }
    }
    // The fleet's readings (the revoked sensor's one reading aside).
    copies.retain(|(id, _), _| id != REVOKED);
    let delivered = copies.len();
    let duplicated: u32 = copies.values().map(|c| c - 1).sum();
    let line = format!(
        "fleet: {NODES} nodes, {} sensors, {} readings acknowledged, {delivered} delivered, {lost} lost, {duplicated} duplicated; \
         node kill: sensors back in {back_s:.1} s; revocation bit on every node in {bite_ms:.0} ms",
        a.sensors,
        tally.acknowledged.len()
    );
    println!("{line}");
    std::fs::write(work.join("result.txt"), format!("{line}\n")).map_err(err)?;
    drop(cluster);
    drop(pg);
    if lost > 0 || (duplicated > 0 && !a.gateways_everywhere) || moved == 0 {
        return Err(format!(
            "fleet: {lost} lost, {duplicated} duplicated, {moved} sensors moved off the killed node (expected 0, 0, > 0)"
        ));
    }
    Ok(())
}
