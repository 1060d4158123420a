//! The sensor application's session end to end (issue #36): the simulated
//! ATmega1284p runs the application image (`app-…`, provisioned keys, a
//! reading a second) on a pty; `kem-mqtt serial-bridge` carries it to
//! mosquitto with the plugin; `mosquitto_sub` is the application, and
//! `mosquitto_pub` sends the commands.
//!
//! What must hold, each checked here:
//! - at least [`READINGS`] readings reach `plain/<id>/reading`, numbered
//!   0, 1, 2 … in order, none lost, none twice (so also: no watchdog reset);
//! - four commands are acted on and answered on `plain/<id>/ack`: the LED
//!   on and off (pin PB0 watched in the simulator), the interval, the
//!   records per session;
//! - the sensor re-keys by its policy (the handshake count of its readings
//!   moves on between two readings with no restart in between), and after
//!   the bridge is restarted (SIGTERM, a new bridge on the same port);
//! - the board's back-off in real seconds: the new bridge answers the
//!   board's next record `LINK_DOWN`, and the board's next handshake
//!   (`NONCE_REQ`) comes no earlier than its first back-off, 1 s (its
//!   watchdog sleeps 0.992 s) on the wall clock, less 0.1 s
//!   (`BACK_OFF_SLACK`), and the wait is printed;
//! - a party on the serial line that replays a RECORD frame and forges
//!   another (right CRC, one ciphertext byte changed) gets neither
//!   delivered, and one that replays an old command to the board (the
//!   `led on`, with the tag the board waits for) does not turn the LED on;
//!   the board counts it (`rej` in its next reading).
//!
//! The simulated board keeps time with the wall clock
//! ([`Surroundings::pace`]): 5 times faster than real time (`PACE`) for
//! most of the session's ~195 simulated seconds, and in real time (pace 1)
//! from the bridge's restart until the board's first reading after it,
//! the window of the back-off check.
//!
//! The same pieces (the pty, the bridge, mosquitto with the plugin, a live
//! subscriber) also run a firmware of one's own: [`sensor_sim`], `cargo
//! xtask sensor-sim`, the runner of `examples/avr-mqtt-sensor`, with the
//! board in real time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::mqtt::site::{self, Conf, Site, Subscriber};
use avr_wire::app::{self as wire, Deframed, Deframer, Policy, Reading};
use kem_mqtt::Suite;
use kem_mqtt_host::keys::BrokerState;

use crate::run::pty::{Change, SimOnPty, Surroundings, Tap};
use crate::target::Image;

/// Readings the application must receive.
pub const READINGS: u32 = 100;
/// The suite of the session.
const SUITE: &str = "ctru-light-ascon+x25519";
/// The image's policy: a reading a second (simulated), a new handshake
/// every 40 records (the `rekey-records` command makes it 30).
const POLICY: Policy = Policy {
    interval_s: 1,
    rekey_records: 40,
    rekey_s: 86_400,
};
/// The LED's port (PORTB) and pin (PB0) on the ATmega1284p.
const PORTB: u16 = 0x25;
/// The simulated board runs at most this many times faster than real time
/// (its sleeps cost the simulator nothing), so the script's commands and
/// restart land among the readings they are meant for; in real time
/// (pace 1) the session would take some 195 s instead of some 42.
const PACE: u32 = 5;
/// How much shorter than the board's first back-off (1 s) the wall-clock
/// wait from the bridge's `LINK_DOWN` to the board's next `NONCE_REQ` may
/// be: the board sleeps 0.992 s (watchdog periods of 512, 256, 128, 64 and
/// 32 ms), the pacing may let an interval through a slice (10 ms) and its
/// lag (10 ms) short; the rest is room for a busy host (measured: 0.996 s
/// to 0.998 s; with the pacing's old 20 ms cap per slice, 0.13 s).
const BACK_OFF_SLACK: Duration = Duration::from_millis(100);
/// How long the whole session may take (real time).
const BUDGET: Duration = Duration::from_secs(600);

/// The commands, in order: `(sub, argument, the reading after which it is sent)`.
const COMMANDS: [(&str, &str, u32); 4] = [
    ("led", "on", 5),
    ("interval", "2", 12),
    ("rekey-records", "30", 18),
    ("led", "off", 26),
];
/// Readings after which an unanswered command is sent again.
const RESEND_AFTER: u32 = 6;
/// After this reading the bridge is restarted.
const RESTART_AFTER: u32 = 50;
/// After this reading the line is attacked.
const ATTACK_AFTER: u32 = 65;

/// The line's attacker: records the frames, and on [`Attacker::arm`]
/// replays and forges as the module's doc says.
#[derive(Default)]
struct Attacker {
    from_board: Box<Deframer<{ wire::MAX_PAYLOAD }>>,
    to_board: Box<Deframer<{ wire::MAX_PAYLOAD }>>,
    /// The board's last RECORD frame, whole.
    last_record: Option<Vec<u8>>,
    /// The first command the bridge handed to the board (the ACK's payload).
    first_command: Option<Vec<u8>>,
    /// Set by the script: attack at the board's next RECORD.
    armed: Arc<AtomicBool>,
    /// Bytes to put before the bridge's next answer.
    inject_to_board: Vec<u8>,
    /// What was done, for the closing lines.
    done: Arc<Mutex<Vec<String>>>,
    /// The tag of the board's last RECORD.
    record_tag: Option<u8>,
    /// When the bridge's `LINK_DOWN` to that RECORD reached the board.
    link_down_at: Option<Instant>,
    /// The board's back-offs on the wall clock: when a `LINK_DOWN` reached
    /// it, and how long after it the board's next `NONCE_REQ` came.
    back_offs: Arc<Mutex<Vec<(Instant, Duration)>>>,
}

impl Tap for Attacker {
    fn board_to_host(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(bytes);
        for &b in bytes {
            let Deframed::Frame { kind, tag, payload } = self.from_board.push(b) else {
                continue;
            };
            if kind == wire::NONCE_REQ {
                if let Some(at) = self.link_down_at.take() {
                    self.back_offs.lock().map(|mut b| b.push((at, at.elapsed()))).ok();
                }
            }
            if kind != wire::RECORD {
                continue;
            }
            self.record_tag = Some(tag);
            self.link_down_at = None;
            let whole = wire::frame(kind, tag, payload).unwrap_or_default();
            if self.armed.swap(false, Ordering::SeqCst) {
                let log = |s: String| self.done.lock().map(|mut d| d.push(s)).ok();
                // To the bridge: the previous RECORD again, byte for byte,
                // and this one with its last ciphertext byte changed.
                if let Some(old) = self.last_record.take() {
                    out.extend_from_slice(&old);
                    log(format!("replayed a RECORD frame ({} B) to the bridge", old.len()));
                }
                let mut forged = payload.to_vec();
                if let Some(last) = forged.last_mut() {
                    *last ^= 0x01;
                }
                out.extend_from_slice(&wire::frame(kind, tag.wrapping_add(0x40), &forged).unwrap_or_default());
                log(format!(
                    "forged a RECORD frame ({} B, right CRC) to the bridge",
                    whole.len()
                ));
                // To the board: the first command again, under the tag it
                // waits for now.
                if let Some(cmd) = &self.first_command {
                    self.inject_to_board = wire::frame(wire::ACK, tag, cmd).unwrap_or_default();
                    log("replayed the first command (led on) to the board, with the tag it awaits".into());
                }
            }
            self.last_record = Some(whole);
        }
    }

    fn host_to_board(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        out.append(&mut self.inject_to_board);
        out.extend_from_slice(bytes);
        for &b in bytes {
            match self.to_board.push(b) {
                Deframed::Frame {
                    kind: wire::ACK,
                    payload,
                    ..
                } if !payload.is_empty() && self.first_command.is_none() => {
                    self.first_command = Some(payload.to_vec());
                }
                // The answer to the board's record (not to a frame the
                // attacker sent in its name).
                Deframed::Frame {
                    kind: wire::LINK_DOWN,
                    tag,
                    ..
                } if Some(tag) == self.record_tag => self.link_down_at = Some(Instant::now()),
                _ => {}
            }
        }
    }
}

/// A running `kem-mqtt serial-bridge`, its output in a file.
struct Bridge {
    child: Child,
    log: PathBuf,
}

impl Bridge {
    fn start(bin: &Path, port: &str, broker: &str, log: PathBuf) -> Result<Bridge, String> {
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(bin)
            .args(["serial-bridge", "--port", port, "--broker", broker])
            .stdout(out.try_clone().map_err(|e| e.to_string())?)
            .stderr(out)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        Ok(Bridge { child, log })
    }

    /// SIGTERM, then its last line (the counts).
    fn stop(mut self) -> Result<String, String> {
        crate::util::run(Command::new("kill").args(["-TERM", &self.child.id().to_string()]))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                    let last = log.lines().last().unwrap_or("").to_string();
                    return if status.success() {
                        Ok(last)
                    } else {
                        Err(format!("the bridge ended with {status}:\n{log}"))
                    };
                }
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                _ => {
                    let _ = self.child.kill();
                    return Err("the bridge did not stop within 20 s of SIGTERM".into());
                }
            }
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the application has received so far.
#[derive(Default)]
struct Seen {
    readings: Vec<Reading>,
    acks: Vec<String>,
    other: Vec<String>,
    /// The board's first back-off after the restart, on the wall clock.
    back_off: Duration,
}

impl Seen {
    fn take(&mut self, line: &str, id: &str) {
        let reading = format!("plain/{id}/{} ", wire::READING_SUB);
        let ack = format!("plain/{id}/{} ", wire::ACK_SUB);
        if let Some(text) = line.strip_prefix(&reading) {
            match Reading::parse(text.as_bytes()) {
                Some(r) => self.readings.push(r),
                None => self.other.push(line.to_string()),
            }
        } else if let Some(text) = line.strip_prefix(&ack) {
            self.acks.push(text.to_string());
        } else {
            self.other.push(line.to_string());
        }
    }

    fn last_number(&self) -> Option<u32> {
        self.readings.last().map(|r| r.number)
    }
}

/// Runs the session; `plugin` is the built mosquitto plugin, `bin` the
/// `kem-mqtt` command line.
pub fn run(plugin: &Path, bin: &Path) -> Result<(), String> {
    let mcu = crate::target::mcu("atmega1284p")?;
    let suite = Suite::from_name(SUITE).ok_or("unknown suite")?;
    let id = crate::mqtt::live::firmware_client_id()?;
    let (secrets, registry, keys) = crate::run::sensor::provision_one(suite, id)?;
    let image = crate::run::sensor::provisioned_image(mcu, Image::sensor_app(suite).with_policy(POLICY), &keys)?;
    // Built always (`e2e --no-build` too): its keys and policy are this run's.
    let elf = crate::build::avr::image_elf(mcu, &image, false)?;

    let state = kem_mqtt_host::keys::BrokerState { secrets, registry };
    back_off_holds(&elf, mcu, suite, &state)?;
    let site = Site::auth_mode("e2e-session", &state.secrets, &state.registry, Conf::Documented, plugin)?;
    let (app, lines) = Subscriber::start_live(&site, "plain/#")?;
    let done = Arc::new(Mutex::new(Vec::new()));
    let armed = Arc::new(AtomicBool::new(false));
    let back_offs = Arc::new(Mutex::new(Vec::new()));
    let attacker = Attacker {
        done: done.clone(),
        armed: armed.clone(),
        back_offs: back_offs.clone(),
        ..Attacker::default()
    };
    let around = Surroundings {
        // 1.00 V to 1.99 V on ADC0, a step per simulated second.
        adc0_mv: Some(|cycle| 1000 + (cycle / 20_000_000 % 100) as u32 * 10),
        watch: vec![PORTB],
        tap: Some(Box::new(attacker)),
        pace: Some(PACE),
    };
    let board = SimOnPty::start_with(&elf, mcu.name, around)?;
    let logs = crate::util::workspace_root().join("target/e2e-session");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let mut bridge = Some(Bridge::start(
        bin,
        board.path(),
        &site.addr(),
        logs.join("bridge-1.log"),
    )?);
    let started = Instant::now();
    let script = Script {
        site: &site,
        lines: &lines,
        id,
        board: &board,
        bin,
        logs: &logs,
        armed: &armed,
        attacks: &done,
        back_offs: &back_offs,
    };
    let mut resent = 0;
    let r = script.drive(&mut bridge, &mut resent, started);
    let stats = match bridge.take() {
        Some(b) => b.stop(),
        None => Ok(String::new()),
    };
    board.finish()?;
    drop(app);
    let seen = r.map_err(|e| {
        let log = std::fs::read_to_string(logs.join("bridge-2.log"))
            .or_else(|_| std::fs::read_to_string(logs.join("bridge-1.log")))
            .unwrap_or_default();
        with_logs(&e, &log, &site)
    })?;
    let stats = stats?;
    let attacks = done.lock().map(|d| d.clone()).unwrap_or_default();
    let handshakes = seen.readings.last().map_or(0, |r| r.handshakes);
    let rejected = seen.readings.last().map_or(0, |r| r.rejected);
    println!("e2e: session: bridge: {}", stats.trim_start_matches("serial-bridge: "));
    println!(
        "e2e: session: in real time, after the new bridge answered its record LINK_DOWN, the board waited \
         {:.3} s (wall clock) before its next handshake (its back-off: 1 s)",
        seen.back_off.as_secs_f64()
    );
    for a in &attacks {
        println!("e2e: session: the line's attacker {a}");
    }
    println!(
        "e2e: session: {} readings delivered in order (r=0..{}), 0 lost, 0 duplicated; {} commands acted on \
         and answered ({resent} sent again after a re-key lost it); {handshakes} handshakes (re-keys by policy and one after the bridge restart); the board \
         dropped {rejected} frames or commands; {:.0} s (the board at {PACE}x real time, in real time around the restart)",
        seen.readings.len(),
        seen.readings.len().saturating_sub(1),
        seen.acks.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A party on the line that answers `LINK_DOWN` to every record gets a
/// handshake after 1, 2, 4, 8 … s, not one per wake-up (the board's
/// back-off; simavr, no broker: `app_cost::back_off`).
fn back_off_holds(elf: &Path, mcu: crate::target::Mcu, suite: Suite, state: &BrokerState) -> Result<(), String> {
    let waits = crate::mqtt::app_cost::back_off(elf, mcu, suite, state, 4)?;
    for (k, w) in waits.iter().enumerate() {
        let due = f64::from(1u32 << k);
        if !(0.9 * due..=1.1 * due + 0.1).contains(w) {
            return Err(format!(
                "after refused record {} the board waited {w:.2} s, not about {due} s (waits {waits:.2?})",
                k + 1
            ));
        }
    }
    println!("e2e: session: LINK_DOWN to every record: the board waits {waits:.2?} s before each new handshake");
    Ok(())
}

/// The `kem-mqtt` command line for the serial-bridge leg, built in the
/// test profile (as the xtask is) so that it reuses the dependencies
/// already compiled there; its output lands in `target/debug` all the same.
pub(crate) fn kem_mqtt_cli() -> Result<PathBuf, String> {
    crate::util::run(Command::new("cargo").args([
        "build",
        "-q",
        "--profile",
        "test",
        "-p",
        "kem-mqtt-host",
        "--bin",
        "kem-mqtt",
    ]))?;
    Ok(crate::util::workspace_root().join("target/debug/kem-mqtt"))
}

/// Options of `cargo xtask sensor-sim`.
#[derive(clap::Parser, Debug)]
pub struct SensorSimArgs {
    /// The sensor firmware: an ELF with its keys compiled in (e.g. examples/avr-mqtt-sensor's)
    #[arg(long)]
    pub elf: PathBuf,
    /// The sensor's key file from `kem-mqtt provision`; the broker's keys and
    /// registry are read from the same folder
    #[arg(long)]
    pub key: PathBuf,
    /// The simulated MCU (simavr's: atmega1284p, atmega2560, atmega328p)
    #[arg(long, default_value = "atmega1284p", value_parser = crate::target::mcu)]
    pub mcu: crate::target::Mcu,
    /// Stop after this many readings (0: run until interrupted)
    #[arg(long, default_value_t = 3)]
    pub readings: u32,
}

/// The voltage `sensor-sim` puts on ADC0, in millivolts.
pub const ADC0_MV: u32 = 1650;

/// `cargo xtask sensor-sim`: a sensor firmware of one's own (the runner of
/// examples/avr-mqtt-sensor) on a pty, in simavr (a classic part: ADC0
/// reads [`ADC0_MV`]) or yasimavr (a megaAVR-0 part: its temperature
/// sensor reads 25 °C), `kem-mqtt serial-bridge` on that pty, mosquitto
/// with the KEM-MQTT plugin holding the key folder's broker keys and
/// registry, and `mosquitto_sub` on `plain/#`, whose lines are printed as
/// it prints them (on stdout; the rest goes to stderr) until the sensor's
/// `readings`-th reading.
pub fn sensor_sim(o: &SensorSimArgs) -> Result<(), String> {
    use kem_mqtt_host::keys::{BrokerSecrets, Registry, SensorKeys, BROKER_KEY_FILE, REGISTRY_FILE};
    let mcu = o.mcu;
    let elf = o
        .elf
        .canonicalize()
        .map_err(|e| format!("--elf {}: {e}", o.elf.display()))?;
    let sensor = SensorKeys::load(&o.key).map_err(|e| e.to_string())?;
    let dir = o.key.parent().unwrap_or(Path::new("."));
    let secrets = BrokerSecrets::load(&dir.join(BROKER_KEY_FILE)).map_err(|e| e.to_string())?;
    let registry = Registry::load_or_empty(&dir.join(REGISTRY_FILE)).map_err(|e| e.to_string())?;
    if !registry.clients.contains_key(&sensor.client_id) {
        return Err(format!(
            "{} is not enrolled in {} (kem-mqtt provision --dir {} --client {} …)",
            sensor.client_id,
            dir.join(REGISTRY_FILE).display(),
            dir.display(),
            sensor.client_id
        ));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = crate::util::workspace_root().join("target");
    let plugin = site::build_plugin(Path::new(&cargo), &target)?;
    let bin = kem_mqtt_cli()?;
    let site = Site::auth_mode("sensor-sim", &secrets, &registry, Conf::Documented, &plugin)?;
    let (app, lines) = Subscriber::start_live(&site, "plain/#")?;
    let board = if mcu.is_mega0() {
        // yasimavr, at the wall clock's pace; the ADC reads the internal
        // temperature sensor (25 °C).
        SimBoard::Yasim(crate::run::yasim::YasimOnPty::start(mcu, &elf)?)
    } else {
        let around = Surroundings {
            adc0_mv: Some(|_| ADC0_MV),
            // As a board would: its intervals and back-off in real time.
            pace: Some(1),
            ..Surroundings::default()
        };
        SimBoard::Simavr(SimOnPty::start_with(&elf, mcu.name, around)?)
    };
    let logs = target.join("sensor-sim");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let bridge = Bridge::start(&bin, board.path(), &site.addr(), logs.join("bridge.log"))?;
    eprintln!(
        "sensor-sim: {} on the simulated {} ({}), kem-mqtt serial-bridge, mosquitto with the plugin on {}; \
         mosquitto_sub -t 'plain/#' -v prints:",
        elf.display(),
        mcu.name,
        board.path(),
        site.addr()
    );
    let reading = format!("plain/{}/{} ", sensor.client_id, wire::READING_SUB);
    let mut seen = 0;
    let received = loop {
        if o.readings > 0 && seen >= o.readings {
            break Ok(());
        }
        match lines.recv_timeout(Duration::from_secs(90)) {
            Ok(line) => {
                println!("{line}");
                seen += u32::from(line.starts_with(&reading));
            }
            Err(_) => break Err(format!("no message for 90 s after {seen} readings")),
        }
    };
    let stats = bridge.stop();
    let stack = board.finish();
    drop(app);
    // A session that failed is the error to see, with the logs (and how the
    // board ended, which may say why).
    received.map_err(|e| {
        let log = std::fs::read_to_string(logs.join("bridge.log")).unwrap_or_default();
        let e = match &stack {
            Err(board) => format!("{e}; the board: {board}"),
            Ok(_) => e,
        };
        with_logs(&e, &log, &site)
    })?;
    let stack = stack?;
    eprintln!("sensor-sim: {}", stats?.trim_start_matches("serial-bridge: "));
    let sizes = crate::build::avr::sizes(mcu, &elf)?;
    eprintln!(
        "sensor-sim: flash {} B of {} B; SRAM: static {} B + stack {} B at its deepest ({}) = {} B of {} B",
        sizes.flash(),
        mcu.flash,
        sizes.ram(),
        stack.bytes,
        stack.how,
        sizes.ram() + stack.bytes,
        mcu.sram
    );
    Ok(())
}

/// The simulated board behind a pty: simavr for a classic part, yasimavr
/// for a megaAVR-0 part.
enum SimBoard {
    Simavr(SimOnPty),
    Yasim(crate::run::yasim::YasimOnPty),
}

/// The stack's peak and how it was measured.
struct StackPeak {
    bytes: u32,
    how: &'static str,
}

impl SimBoard {
    fn path(&self) -> &str {
        match self {
            SimBoard::Simavr(b) => b.path(),
            SimBoard::Yasim(b) => b.path(),
        }
    }

    /// Stops the simulation: the stack's peak since reset.
    fn finish(self) -> Result<StackPeak, String> {
        match self {
            SimBoard::Simavr(b) => {
                let bytes = u32::from(b.stack_depth());
                b.finish()?;
                Ok(StackPeak {
                    bytes,
                    how: "SP tracked every instruction",
                })
            }
            SimBoard::Yasim(b) => Ok(StackPeak {
                bytes: b.finish()?,
                how: "SRAM painted at reset, the lowest byte that lost its paint",
            }),
        }
    }
}

/// `e` with the last lines of the bridge's log and of the broker's.
fn with_logs(e: &str, bridge_log: &str, site: &Site) -> String {
    format!(
        "{e}\nbridge log (tail):\n{}\nbroker log (tail):\n{}",
        tail(bridge_log, 30),
        tail(&site.log(), 30)
    )
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What the script acts on.
struct Script<'a> {
    site: &'a Site,
    lines: &'a Receiver<String>,
    id: &'a str,
    board: &'a SimOnPty,
    bin: &'a Path,
    logs: &'a Path,
    armed: &'a AtomicBool,
    attacks: &'a Mutex<Vec<String>>,
    back_offs: &'a Mutex<Vec<(Instant, Duration)>>,
}

impl Script<'_> {
    /// The script: commands, the restart and the attack at their readings,
    /// until [`READINGS`] arrived; then the checks.
    fn drive(&self, bridge: &mut Option<Bridge>, resent: &mut u32, started: Instant) -> Result<Seen, String> {
        let Script {
            site,
            lines,
            id,
            board,
            bin,
            logs,
            armed,
            attacks,
            back_offs,
        } = *self;
        let mut seen = Seen::default();
        // From the restart until the first reading after it: the board in real time.
        let mut real_time: Option<Instant> = None;
        let mut next_command = 0;
        let mut sent_at: Option<u32> = None;
        let mut restarted_at = None;
        let mut attacked = false;
        let mut led_after_attack = None;
        while seen.readings.len() < READINGS as usize {
            if started.elapsed() > BUDGET {
                return Err(format!(
                    "after {} s: {} readings (last {:?}), acks {:?}",
                    BUDGET.as_secs(),
                    seen.readings.len(),
                    seen.readings.last(),
                    seen.acks
                ));
            }
            match lines.recv_timeout(Duration::from_secs(90)) {
                Ok(line) => {
                    println!("{line}");
                    seen.take(&line, id);
                }
                Err(_) => {
                    return Err(format!(
                        "no message for 90 s; {} readings so far (last {:?})",
                        seen.readings.len(),
                        seen.readings.last()
                    ))
                }
            }
            let Some(last) = seen.last_number() else { continue };
            // One command at a time: the next once the last was answered. A
            // command sealed under a session the board left before it came
            // (a re-key in between) is lost; the application sends it again
            // when no answer came within a few readings.
            let answered = seen.acks.len() == next_command;
            let due = match COMMANDS.get(next_command) {
                Some(&(_, _, after)) if answered => last >= after,
                _ => !answered && sent_at.is_some_and(|at| last >= at + RESEND_AFTER),
            };
            if due {
                let i = if answered { next_command } else { next_command - 1 };
                let (sub, arg, _) = COMMANDS[i];
                let topic = format!("cmd/{id}/{sub}");
                if !site::app_publish(site, &topic, arg)? {
                    return Err(format!("mosquitto_pub {topic} {arg} failed"));
                }
                if answered {
                    println!("e2e: session: mosquitto_pub {topic} {arg}");
                    next_command += 1;
                } else {
                    println!(
                        "e2e: session: mosquitto_pub {topic} {arg} (again: no answer after {RESEND_AFTER} readings)"
                    );
                    *resent += 1;
                }
                sent_at = Some(last);
            }
            if let (Some(since), Some(at)) = (real_time, restarted_at) {
                if last > at {
                    board.set_pace(Some(PACE));
                    seen.back_off = first_back_off(back_offs, since)?;
                    real_time = None;
                }
            }
            if restarted_at.is_none() && last >= RESTART_AFTER {
                board.set_pace(Some(1));
                real_time = Some(Instant::now());
                println!("e2e: session: the board in real time (pace 1) until its next reading");
                let stats = bridge.take().ok_or("no bridge")?.stop()?;
                println!("e2e: session: bridge stopped (SIGTERM): {stats}");
                *bridge = Some(Bridge::start(
                    bin,
                    board.path(),
                    &site.addr(),
                    logs.join("bridge-2.log"),
                )?);
                println!("e2e: session: a new bridge on the same port");
                restarted_at = Some(last);
            }
            if !attacked && last >= ATTACK_AFTER && next_command == COMMANDS.len() && seen.acks.len() == COMMANDS.len()
            {
                attacked = true;
                led_after_attack = Some((board.changes().len(), last));
                armed.store(true, Ordering::SeqCst);
            }
        }
        check(&seen, board, restarted_at, led_after_attack, attacks)?;
        Ok(seen)
    }
}

/// The board's first back-off whose `LINK_DOWN` came after `since`: no
/// shorter on the wall clock than its 1 s, less [`BACK_OFF_SLACK`].
fn first_back_off(back_offs: &Mutex<Vec<(Instant, Duration)>>, since: Instant) -> Result<Duration, String> {
    let all = back_offs.lock().map(|b| b.clone()).unwrap_or_default();
    let waited = all
        .iter()
        .find(|(at, _)| *at >= since)
        .map(|&(_, waited)| waited)
        .ok_or("after the bridge restart no record of the board was answered LINK_DOWN before its next reading")?;
    let least = Duration::from_secs(1) - BACK_OFF_SLACK;
    if waited < least {
        return Err(format!(
            "in real time the board's next handshake came {:.3} s (wall clock) after the LINK_DOWN: its back-off is 1 s \
             (at least {:.3} s); the simulated clock ran ahead of the wall clock",
            waited.as_secs_f64(),
            least.as_secs_f64()
        ));
    }
    Ok(waited)
}

fn check(
    seen: &Seen,
    board: &SimOnPty,
    restarted_at: Option<u32>,
    attack: Option<(usize, u32)>,
    attacks: &Mutex<Vec<String>>,
) -> Result<(), String> {
    // In order, none lost, none twice.
    let numbers: Vec<u32> = seen.readings.iter().map(|r| r.number).collect();
    let expected: Vec<u32> = (0..numbers.len() as u32).collect();
    if numbers != expected {
        let unique: BTreeSet<_> = numbers.iter().collect();
        return Err(format!(
            "readings not 0..{} in order: {numbers:?} ({} distinct)",
            numbers.len(),
            unique.len()
        ));
    }
    if !seen.other.is_empty() {
        return Err(format!("unexpected messages: {:?}", seen.other));
    }
    let answers: Vec<String> = COMMANDS.iter().map(|(sub, _, _)| format!("{sub} ok")).collect();
    if seen.acks != answers {
        return Err(format!("command answers {:?}, not {answers:?}", seen.acks));
    }
    // The LED: on, then off, and never on again (the replayed `led on`).
    let led: Vec<u8> = board.changes().iter().map(|c: &Change| c.value & 1).collect();
    let mut transitions = led.clone();
    transitions.dedup();
    if transitions != [1, 0] {
        return Err(format!("PB0 went {led:?}, not on then off"));
    }
    let (changes_before, armed_at) = attack.ok_or("the line was not attacked")?;
    if board.changes().len() != changes_before {
        return Err("the replayed command changed PORTB".into());
    }
    // Re-keys: the handshake count moves on up to the reading after which
    // the bridge was stopped (the policy), and after it (the restart).
    let restart = restarted_at.ok_or("the bridge was not restarted")?;
    let rekeys = |range: &dyn Fn(u32) -> bool| {
        seen.readings
            .windows(2)
            .filter(|w| range(w[1].number) && w[1].handshakes > w[0].handshakes)
            .count()
    };
    if rekeys(&|n| n <= restart) == 0 {
        return Err("no re-key by policy before the bridge restart".into());
    }
    if rekeys(&|n| n > restart) == 0 {
        return Err("no new handshake after the bridge restart".into());
    }
    // The attack: done, counted by the board, nothing delivered twice (above).
    let done = attacks.lock().map(|d| d.len()).unwrap_or(0);
    if done < 3 {
        return Err(format!("the attacker did {done} of its 3 things"));
    }
    let rej = |n: u32| seen.readings.iter().find(|r| r.number == n).map_or(0, |r| r.rejected);
    let last = seen.last_number().unwrap_or(0);
    if rej(last) <= rej(armed_at) {
        return Err(format!(
            "the board's rejected count stayed {} after the replayed command",
            rej(armed_at)
        ));
    }
    Ok(())
}
