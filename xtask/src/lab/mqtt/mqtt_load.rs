//! `cargo xtask mqtt-load`: a fleet of host sensors against Debian's
//! mosquitto on loopback, in AUTH mode (the plugin) and in topic mode (the
//! gateway), every suite: `kem-mqtt load` (release build) does the
//! sensors' side, this task the broker's and the bookkeeping. The result
//! goes to `benchmarks/kem-mqtt-load.json` and, through `cargo xtask
//! report`, to the "KEM-MQTT under load" table of `docs/benchmarks.md`.
//! A benchmark, not a test: nothing here fails on a slow machine.
//!
//! The ClientHello rate limits of the plugin and of the gateway are
//! switched off for the run (one source address sends every hello; the
//! gateway's default global limit, 50 new hellos a second after a burst of
//! 200, would otherwise be what is measured). The sensors share the machine's
//! cores with the broker, so every rate is a lower bound for a broker with
//! the machine to itself.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::mqtt::site::{self, Conf, Site, APP_PASSWORD, APP_USER, GATEWAY_PASSWORD, GATEWAY_USER, NO_RATE_LIMITS};
use kem_mqtt::Suite;
use kem_mqtt_host::keys::{BrokerSecrets, Registry};
use kem_mqtt_host::load::LoadResult;

use crate::report::records::{self, LoadRow, LoadRun};
use crate::util;

/// Options of `cargo xtask mqtt-load`.
#[derive(clap::Parser, Debug)]
pub struct MqttLoadArgs {
    /// Sensors per suite
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=20_000))]
    pub sensors: u32,
    /// Sensors handshaking at a time
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub concurrency: u32,
    /// Readings each sensor publishes after the handshakes
    #[arg(long, default_value_t = 5)]
    pub records: u32,
    /// Only suites whose name contains this text
    #[arg(long, default_value = "")]
    pub filter: String,
    /// Only this suite, by name (e.g. ml-kem-768+x25519)
    #[arg(long, value_parser = crate::target::suite, conflicts_with = "filter")]
    pub suite: Option<Suite>,
    /// Gateway instances in topic mode (more than one: a shared subscription group)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub gateways: u32,
    /// Print the results, but leave benchmarks/ and docs/ as they are
    #[arg(long)]
    pub no_write: bool,
}

/// The release `kem-mqtt` binary, built if needed.
pub(crate) fn kem_mqtt_binary(root: &Path) -> Result<PathBuf, String> {
    util::run(Command::new("cargo").args(["build", "--release", "-q", "-p", "kem-mqtt-host", "--bin", "kem-mqtt"]))?;
    Ok(root.join("target/release/kem-mqtt"))
}

/// User + system CPU time of a process, from /proc/PID/stat (10 ms ticks).
fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// A client id prefix made of a suite name (`+` is not an id character).
fn id_prefix(suite: Suite) -> String {
    suite.name().replace('+', "-")
}

/// Gateway processes and their logs, killed on drop.
struct Gateways(Vec<(Child, PathBuf)>);

impl Drop for Gateways {
    fn drop(&mut self) {
        for (c, _) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Gateways {
    /// Starts `n` `kem-mqtt gateway` processes and waits until each is connected.
    /// Their logs (events, refusals, counters) go to `log_dir/gateway-<i>.log`.
    fn start(
        bin: &Path,
        site: &Site,
        keys: &Path,
        password: &Path,
        n: u32,
        log_dir: &Path,
    ) -> Result<Gateways, String> {
        let mut g = Gateways(vec![]);
        for i in 0..n {
            let mut cmd = Command::new(bin);
            cmd.args(["gateway", "--broker", &site.addr(), "--dir"])
                .arg(keys)
                .args(["--username", GATEWAY_USER, "--password-file"])
                .arg(password)
                // One source sends every hello, as for the plugin.
                .args(["--limit-per-id", "off", "--limit-global", "off"]);
            if n > 1 {
                cmd.args(["--share-group", "load", "--instance", &format!("g{i}")]);
            }
            // Its output (events, refusals, counters) goes to a log file.
            let log_path = log_dir.join(format!("gateway-{i}.log"));
            let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
            let child = cmd
                .stdout(log)
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|e| format!("{}: {e}", bin.display()))?;
            g.0.push((child, log_path.clone()));
            let t = std::time::Instant::now();
            while !std::fs::read_to_string(&log_path)
                .unwrap_or_default()
                .starts_with("gateway connected")
            {
                if t.elapsed() > Duration::from_secs(10) {
                    return Err(format!("gateway {i} did not connect"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(g)
    }

    fn cpu(&self) -> Duration {
        self.0.iter().filter_map(|(c, _)| process_cpu(c.id())).sum()
    }
}

/// One `kem-mqtt load` run.
fn load(
    bin: &Path,
    site: &Site,
    keys: &Path,
    password: &Path,
    suite: Suite,
    mode: &str,
    a: &MqttLoadArgs,
) -> Result<LoadResult, String> {
    let out = Command::new(bin)
        .args(["load", "--broker", &site.addr(), "--dir"])
        .arg(keys)
        .args(["--suite", suite.name(), "--mode", mode, "--json"])
        .args([
            "--concurrency",
            &a.concurrency.to_string(),
            "--records",
            &a.records.to_string(),
        ])
        .args(["--app-user", APP_USER, "--app-password-file"])
        .arg(password)
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if !out.status.success() {
        let log = site.log();
        let tail: Vec<&str> = log
            .lines()
            .filter(|l| !l.contains("closed its connection") && !l.contains("New c"))
            .rev()
            .take(15)
            .collect();
        return Err(format!(
            "kem-mqtt load {} ({mode}) failed: {}\nmosquitto's last lines:\n{}",
            suite.name(),
            String::from_utf8_lossy(&out.stderr),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    let line = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(line.trim()).map_err(|e| format!("kem-mqtt load output {line:?}: {e}"))
}

/// The row of one run, with the broker's and the gateways' costs.
fn row(result: LoadResult, gateways: usize, site: &Site, broker_cpu: Duration, gateway_cpu: Duration) -> LoadRow {
    let per = |d: Duration| d.as_secs_f64() * 1e6 / result.established.max(1) as f64;
    let (rss, peak) = site.rss_kib().unwrap_or((0, 0));
    println!(
        "{:<24} {:<5} {:>5}/{} handshakes {:>7.1}/s  p50 {:>7.1} ms  p99 {:>7.1} ms  records {:>6.0}/s ({}/{})  broker {:>6.0} µs/hs  gateway {:>6.0} µs/hs  crypto {:>5.0} µs (X25519 {:>5.0})  RSS {} KiB",
        result.suite,
        result.mode,
        result.established,
        result.sensors,
        result.handshakes_per_second,
        result.latency_p50_ms,
        result.latency_p99_ms,
        result.records_per_second,
        result.records_delivered,
        result.records_sent,
        per(broker_cpu),
        per(gateway_cpu),
        result.broker_crypto_us,
        result.broker_x25519_us,
        peak
    );
    LoadRow {
        gateways,
        broker_cpu_us: per(broker_cpu),
        gateway_cpu_us: per(gateway_cpu),
        broker_rss_kib: rss,
        broker_peak_rss_kib: peak,
        result,
    }
}

fn broker_version() -> String {
    Command::new(site::MOSQUITTO)
        .arg("-h")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find(|l| l.contains("version"))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "mosquitto".into())
}

/// `cargo xtask mqtt-load`.
pub fn run(a: &MqttLoadArgs) -> Result<(), String> {
    let root = util::workspace_root();
    let pick = crate::target::Suites::new(a.suite, &a.filter);
    let suites: Vec<Suite> = Suite::ALL
        .iter()
        .copied()
        .filter(|&s| pick.admits(crate::report::records::MQTT_SCHEME, s))
        .collect();
    if suites.is_empty() {
        return Err(format!("no suite matches {pick}"));
    }
    let bin = kem_mqtt_binary(&root)?;
    let plugin = site::build_plugin(Path::new("cargo"), &root.join("target"))?;

    // The fleet: `--sensors` sensors of every suite, one key directory.
    let keys = root.join("target/mqtt-load/keys");
    let _ = std::fs::remove_dir_all(&keys);
    for &suite in &suites {
        util::run(
            Command::new(&bin)
                .args(["provision", "--dir"])
                .arg(&keys)
                .args(["--client", &id_prefix(suite), "--suite", suite.name()])
                .args(["--count", &a.sensors.to_string()])
                .stdout(Stdio::null()),
        )?;
    }
    let secrets = BrokerSecrets::load(&keys.join("broker-key.json")).map_err(|e| e.to_string())?;
    let registry = Registry::load_or_empty(&keys.join("registry.json")).map_err(|e| e.to_string())?;
    let app_password = root.join("target/mqtt-load/app.password");
    let gateway_password = root.join("target/mqtt-load/gateway.password");
    records::write(&app_password, APP_PASSWORD)?;
    records::write(&gateway_password, GATEWAY_PASSWORD)?;

    let mut rows = vec![];
    {
        // AUTH mode: the shipped configuration, rate limits off.
        let site = Site::auth_mode(
            "load-auth",
            &secrets,
            &registry,
            Conf::DocumentedWith(NO_RATE_LIMITS),
            &plugin,
        )?;
        for &suite in &suites {
            let before = site.cpu_time().unwrap_or_default();
            let result = load(&bin, &site, &keys, &app_password, suite, "auth", a)?;
            let spent = site.cpu_time().unwrap_or_default().saturating_sub(before);
            rows.push(row(result, 0, &site, spent, Duration::ZERO));
        }
    }
    {
        // Topic mode: the gateway(s) beside mosquitto, the plugin only guarding topics.
        let site = Site::topic_mode("load-topic", &plugin)?;
        let work = root.join("target/mqtt-load");
        let gateways = Gateways::start(&bin, &site, &keys, &gateway_password, a.gateways, &work)?;
        for &suite in &suites {
            let (b0, g0) = (site.cpu_time().unwrap_or_default(), gateways.cpu());
            let result = load(&bin, &site, &keys, &app_password, suite, "topic", a)?;
            let b = site.cpu_time().unwrap_or_default().saturating_sub(b0);
            let g = gateways.cpu().saturating_sub(g0);
            rows.push(row(result, a.gateways as usize, &site, b, g));
        }
    }
    if a.no_write {
        return Ok(());
    }
    let run = LoadRun {
        machine: util::machine(),
        broker: broker_version(),
        git_revision: crate::opts::git_revision(),
        sensors: a.sensors as usize,
        concurrency: a.concurrency as usize,
        records: a.records,
        rows,
    };
    let json = serde_json::to_string_pretty(&run).map_err(|e| e.to_string())?;
    records::write(&records::load_path(), &format!("{json}\n"))?;
    println!("wrote {}", records::load_path().display());
    crate::report::regenerate()
}
