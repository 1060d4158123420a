//! `cargo xtask registry`: enrolment and revocation against a large
//! registry (100,000 sensors by default) in each store — `registry.json`,
//! SQLite, and PostgreSQL on the lab's server (`registry_db`). The
//! commands measured are the release `kem-mqtt provision` and `kem-mqtt
//! revoke` an operator runs; the registry step alone and the nodes run in
//! this process. The result goes to `benchmarks/registry.json` and,
//! through `cargo xtask report`, to `docs/benchmarks.md`. A benchmark, not
//! a test: nothing here fails on a slow machine.
//!
//! The registry is filled with copies of one sensor's public keys under
//! distinct ids (every row is still read and validated in full); the
//! sensors enrolled and revoked while measuring have keys of their own.
//! "Revocation bite" is the time from the start of `kem-mqtt revoke` until
//! each of `--nodes` nodes — a [`RegistryWatch`] on its own connection,
//! polled as the plugin's tick and the gateway poll it, and applied as they
//! apply it (`changed_ids`, then the new registry in place) — holds a
//! registry without the sensor.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::keys::{BrokerSecrets, Client, Registry, BROKER_KEY_FILE};
use kem_mqtt_host::provision::new_sensor;
use kem_mqtt_host::reload::RegistryWatch;
use kem_mqtt_host::store::{self, RegistryLocation};

use crate::mqtt::mqtt_load::kem_mqtt_binary;
use crate::mqtt::registry_db::Postgres;
use crate::report::records::{self, RegistryRow, RegistryRun};
use crate::util;

/// The suite of every sensor (the one `docs/scale.md` measured the JSON file with).
const SUITE: &str = "ml-kem-512+x25519";

/// Options of `cargo xtask registry`.
#[derive(clap::Parser, Debug)]
pub struct RegistryArgs {
    /// Sensors in the registry
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub sensors: u32,
    /// Nodes watching it
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub nodes: u32,
    /// Runs of each command (the median is kept)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub runs: u32,
    /// Leave out registry.json (minutes at 100,000 sensors)
    #[arg(long)]
    pub no_json: bool,
    /// Print the results, but leave benchmarks/ and docs/ as they are
    #[arg(long)]
    pub no_write: bool,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `cmd` (output discarded) and returns its wall time.
fn timed(cmd: &mut Command) -> Result<Duration, String> {
    let t = Instant::now();
    util::run(cmd.stdout(Stdio::null()))?;
    Ok(t.elapsed())
}

/// One watching node: loads the registry, reports its load time, then for
/// each id it is sent, polls until its registry no longer holds it and
/// reports when.
fn node(location: RegistryLocation, ids: mpsc::Receiver<String>, out: mpsc::Sender<Result<Instant, String>>) {
    let t = Instant::now();
    let (mut watch, mut current) = match RegistryWatch::open(&location) {
        Ok(x) => x,
        Err(e) => {
            let _ = out.send(Err(e.to_string()));
            return;
        }
    };
    // When it started, then when it had the registry.
    let _ = out.send(Ok(t));
    let _ = out.send(Ok(Instant::now()));
    for id in ids {
        let done = loop {
            match watch.poll(Instant::now()) {
                Some(Ok(newer)) => {
                    // As the plugin and the gateway apply a reload.
                    let revoked = current.changed_ids(&newer);
                    current = newer;
                    if revoked.contains(&id) || !current.clients.contains_key(&id) {
                        break Ok(Instant::now());
                    }
                }
                Some(Err(e)) => break Err(e.to_string()),
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        };
        if out.send(done).is_err() {
            return;
        }
    }
}

/// Measures one store at `location`, filled with `fleet`.
fn measure(
    name: &str,
    location: &RegistryLocation,
    bin: &Path,
    keys: &Path,
    broker: &BrokerSecrets,
    fleet: &[(String, Client)],
    a: &RegistryArgs,
) -> Result<RegistryRow, String> {
    let suite = Suite::from_name(SUITE).expect("a suite of the registry");
    let allowed = SuiteSet::EMPTY.with(suite);
    let mut store = store::open(location).map_err(|e| e.to_string())?;
    let t = Instant::now();
    match location {
        RegistryLocation::File(path) => Registry {
            clients: fleet.iter().cloned().collect(),
        }
        .save(path)
        .map_err(|e| e.to_string())?,
        _ => {
            for batch in fleet.chunks(10_000) {
                store.enrol(batch, false).map_err(|e| e.to_string())?;
            }
        }
    }
    println!(
        "{name}: {} sensors written in {:.1} s",
        fleet.len(),
        t.elapsed().as_secs_f64()
    );

    // Nodes, each on its own connection.
    let mut senders = vec![];
    let mut reports = vec![];
    for _ in 0..a.nodes {
        let (tx, rx) = mpsc::channel();
        let (out_tx, out_rx) = mpsc::channel();
        let loc = location.clone();
        std::thread::spawn(move || node(loc, rx, out_tx));
        senders.push(tx);
        reports.push(out_rx);
    }
    let mut loads = vec![];
    for r in &reports {
        let start = r.recv().map_err(|e| e.to_string())??;
        let loaded = r.recv().map_err(|e| e.to_string())??;
        loads.push(ms(loaded - start));
    }

    let loc = location.to_string();
    // Ids of this store's own sensors (key files share one directory).
    let tag = name.replace('.', "-");
    let (mut enrol_cmd, mut enrol_step, mut revoke_cmd, mut bite) = (vec![], vec![], vec![], vec![]);
    for run in 0..a.runs {
        let id = format!("{tag}-new-{run}");
        enrol_cmd.push(ms(timed(
            Command::new(bin).args(["provision", "--dir"]).arg(keys).args([
                "--registry",
                &loc,
                "--client",
                &id,
                "--suite",
                SUITE,
            ]),
        )?));
        let step_id = format!("{tag}-step-{run}");
        let (client, _) =
            new_sensor(broker, &step_id, suite, allowed, &mut kem_mqtt_host::OsRng).map_err(|e| e.to_string())?;
        let t = Instant::now();
        store.enrol(&[(step_id, client)], false).map_err(|e| e.to_string())?;
        enrol_step.push(ms(t.elapsed()));
    }
    // Every node has seen the enrolments before a revocation is timed.
    std::thread::sleep(Duration::from_millis(1500));
    for run in 0..a.runs {
        let id = format!("{tag}-new-{run}");
        for tx in &senders {
            tx.send(id.clone()).map_err(|e| e.to_string())?;
        }
        let t0 = Instant::now();
        let took =
            timed(
                Command::new(bin)
                    .args(["revoke", "--dir"])
                    .arg(keys)
                    .args(["--registry", &loc, "--client", &id]),
            )?;
        revoke_cmd.push(ms(took));
        let mut last = t0;
        for r in &reports {
            let at = r
                .recv_timeout(Duration::from_secs(60))
                .map_err(|_| format!("{name}: a node did not see {id} revoked within 60 s"))??;
            last = last.max(at);
        }
        bite.push(ms(last - t0));
    }
    drop(senders);
    let bytes = match location {
        RegistryLocation::File(p) | RegistryLocation::Sqlite(p) => std::fs::metadata(p).ok().map(|m| m.len()),
        RegistryLocation::Postgres(_) => None,
    };
    let row = RegistryRow {
        store: name.to_string(),
        bytes,
        enrol_command_ms: median(enrol_cmd),
        enrol_step_ms: median(enrol_step),
        revoke_command_ms: median(revoke_cmd),
        revocation_bite_ms: median(bite),
        node_load_ms: median(loads),
    };
    println!(
        "{name}: enrol {:.1} ms (registry step {:.2} ms), revoke {:.1} ms, revocation on {} nodes after {:.0} ms; \
         a node loads it in {:.0} ms",
        row.enrol_command_ms,
        row.enrol_step_ms,
        row.revoke_command_ms,
        a.nodes,
        row.revocation_bite_ms,
        row.node_load_ms
    );
    Ok(row)
}

/// `cargo xtask registry`.
pub fn run(a: &RegistryArgs) -> Result<(), String> {
    let root = util::workspace_root();
    let bin = kem_mqtt_binary(&root)?;
    let work = root.join("target/registry-bench");
    let _ = std::fs::remove_dir_all(&work);
    kem_mqtt_host::keys::private_dir(&work).map_err(|e| e.to_string())?;
    let keys = work.join("keys");
    util::run(
        Command::new(&bin)
            .args(["provision", "--dir"])
            .arg(&keys)
            .stdout(Stdio::null()),
    )?;
    let broker = BrokerSecrets::load(&keys.join(BROKER_KEY_FILE)).map_err(|e| e.to_string())?;
    let suite = Suite::from_name(SUITE).expect("a suite of the registry");
    let (template, _) = new_sensor(
        &broker,
        "template",
        suite,
        SuiteSet::EMPTY.with(suite),
        &mut kem_mqtt_host::OsRng,
    )
    .map_err(|e| e.to_string())?;
    let fleet: Vec<(String, Client)> = (0..a.sensors)
        .map(|i| (format!("fleet-{i:07}"), template.clone()))
        .collect();

    let mut rows = vec![];
    if !a.no_json {
        let loc = RegistryLocation::File(work.join("registry.json"));
        rows.push(measure("registry.json", &loc, &bin, &keys, &broker, &fleet, a)?);
    }
    let loc = RegistryLocation::Sqlite(work.join("registry.sqlite"));
    rows.push(measure("sqlite", &loc, &bin, &keys, &broker, &fleet, a)?);
    let pg = Postgres::start("registry-bench");
    let loc = RegistryLocation::parse(&pg.url()).map_err(|e| e.to_string())?;
    rows.push(measure("postgresql", &loc, &bin, &keys, &broker, &fleet, a)?);
    drop(pg);

    if a.no_write {
        return Ok(());
    }
    let run = RegistryRun {
        machine: util::machine(),
        git_revision: crate::opts::git_revision(),
        sensors: a.sensors as usize,
        suite: SUITE.to_string(),
        nodes: a.nodes as usize,
        runs: a.runs as usize,
        rows,
    };
    let json = serde_json::to_string_pretty(&run).map_err(|e| e.to_string())?;
    records::write(&records::registry_path(), &format!("{json}\n"))?;
    println!("wrote {}", records::registry_path().display());
    crate::report::regenerate()
}
