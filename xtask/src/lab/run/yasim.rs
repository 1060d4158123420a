//! The megaAVR-0 parts (ATmega4808) in yasimavr: requests run on a built
//! image (`firmware/avr/yasim_run.py`), each with its on-chip timer count
//! and painted stack, optionally traced one instruction at a time and
//! priced for the AVRxt core (`crate::run::avrxt`); the record row and the
//! SRAM margin of the fit tables made from such runs.

use std::path::Path;

use avr_wire::frame::{timer_cycles, OP_CYCLES, OP_EMPTY, OP_STACK, TIMERS_LEN};

use crate::{target, util};

/// SRAM a sensor or KEM image must leave free beyond its static data and
/// peak stack to count as fitting (issue #25): room for what the painted
/// measure cannot see and for the application around the KEM.
pub const SPARE_SRAM: u32 = 512;

/// One measured request's outcome in yasimavr.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Reply payload (harness status Ok).
    pub body: Vec<u8>,
    /// Painted stack of its window ([`avr_wire::frame::STACK_OVERFLOW`] if it ran into static data).
    pub stack: Option<u16>,
    /// Cycles of its window by the on-chip timers, minus the empty window's:
    /// no UART transfer inside, the same quantity as the ATmega1284p's
    /// marker counts (where the two agree exactly; `Device::check_timers`).
    pub cycles: Option<u64>,
    /// The same window on the AVRxt core, priced from an instruction trace
    /// ([`yasim_measured_avrxt`], `crate::run::avrxt`); `None` untraced.
    pub avrxt: Option<u64>,
    /// The window's instructions per address, `[address, executions,
    /// cycles]` (traced runs only): equal for every input of a
    /// constant-time operation.
    pub counts: Vec<[u64; 3]>,
}

/// Runs each `(op, payload)` request, a measured op, on the firmware `elf`
/// in yasimavr (`firmware/avr/yasim_run.py`, request file in `scratch`),
/// each followed by its painted stack and timer reading; the empty window's
/// timer reading comes first, for calibration. Returns the replies in order
/// while the harness answered Ok: fewer than requested when the firmware
/// crashed or refused one (a handler's own error is in its payload).
pub fn yasim_measured(
    mcu: target::Mcu,
    elf: &Path,
    requests: &[(u8, Vec<u8>)],
    scratch: &Path,
) -> Result<Vec<Measured>, String> {
    let root = util::workspace_root();
    let mut lines = format!(
        "{OP_EMPTY:02x}
{OP_CYCLES:02x}
"
    );
    for (op, payload) in requests {
        lines.push_str(&format!(
            "{op:02x} {}
{OP_STACK:02x}
{OP_CYCLES:02x}
",
            hex(payload)
        ));
    }
    std::fs::write(scratch, lines).map_err(|e| format!("cannot write {}: {e}", scratch.display()))?;
    let out = crate::setup::yasim(mcu.name)?
        .arg(root.join("firmware/avr/yasim_run.py"))
        .arg(elf)
        .arg(scratch)
        .output()
        .map_err(|e| format!("cannot run yasimavr: {e}"))?;
    if !out.status.success() {
        // The run stopped early (the replies say how far it got).
        if let Some(l) = String::from_utf8_lossy(&out.stderr).lines().last() {
            eprintln!("xtask: yasimavr: {l}");
        }
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ok: Vec<Vec<u8>> = Vec::new();
    for l in text.lines() {
        // `STATUS PAYLOAD CYCLES`, one space apart (an empty payload leaves two).
        let mut it = l.split(' ');
        if it.next() != Some("00") {
            break;
        }
        let payload = it.next().unwrap_or("");
        ok.push(
            base16ct::mixed::decode_vec(payload)
                .map_err(|_| format!("yasimavr replied {l:?}: its payload is not hex"))?,
        );
    }
    let timers = |r: Option<&Vec<u8>>| {
        r.and_then(|t| <[u8; TIMERS_LEN]>::try_from(t.as_slice()).ok())
            .map(timer_cycles)
    };
    let empty = timers(ok.get(1));
    Ok(ok
        .get(2..)
        .unwrap_or(&[])
        .chunks(3)
        .map(|c| Measured {
            body: c[0].clone(),
            stack: c
                .get(1)
                .filter(|s| s.len() == 2)
                .map(|s| u16::from_le_bytes([s[0], s[1]])),
            cycles: timers(c.get(2)).zip(empty).map(|(t, e)| t.saturating_sub(e)),
            avrxt: None,
            counts: Vec::new(),
        })
        .collect())
}

/// [`yasim_measured`], or with `avrxt` [`yasim_measured_avrxt`] (the
/// recorded runs of `cargo xtask bench --mcu atmega4808`).
pub fn run_requests(
    mcu: target::Mcu,
    elf: &Path,
    requests: &[(u8, Vec<u8>)],
    scratch: &Path,
    avrxt: bool,
) -> Result<Vec<Measured>, String> {
    match avrxt {
        true => yasim_measured_avrxt(mcu, elf, requests, scratch),
        false => yasim_measured(mcu, elf, requests, scratch),
    }
}

/// [`yasim_measured`], then the same requests again one instruction at a
/// time (`firmware/avr/yasim_trace.py`, trace in `scratch`'s directory):
/// each window's AVRxt count ([`crate::run::avrxt`], checked against its timer
/// count). Tracing runs at about 1.5 M instructions a second.
pub fn yasim_measured_avrxt(
    mcu: target::Mcu,
    elf: &Path,
    requests: &[(u8, Vec<u8>)],
    scratch: &Path,
) -> Result<Vec<Measured>, String> {
    let mut measured = yasim_measured(mcu, elf, requests, scratch)?;
    let root = util::workspace_root();
    let trace_file = scratch.with_extension("trace.json");
    let out = crate::setup::yasim(mcu.name)?
        .arg(root.join("firmware/avr/yasim_trace.py"))
        .arg(elf)
        .arg(scratch)
        .arg(&trace_file)
        .output()
        .map_err(|e| format!("cannot run yasimavr: {e}"))?;
    let text = std::fs::read_to_string(&trace_file).map_err(|e| format!("{}: {e}", trace_file.display()))?;
    let traces: Vec<crate::run::avrxt::Trace> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", trace_file.display()))?;
    // The request file's lines: the empty window and its timers, then per
    // request the op, its stack and its timers.
    let line_of = |i: usize| 2 + 3 * i;
    if traces.len() < line_of(measured.len()) {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "the traced run stopped early: {}",
            why.lines().last().unwrap_or("")
        ));
    }
    let d = crate::run::avrxt::Disassembly::load(elf)?;
    let empty = crate::run::avrxt::price(&d, &traces[0])?;
    // After a window whose stack ran into static data, the run is corruption
    // speaking (the traced run may take another path): no AVRxt count.
    let mut overflowed = false;
    for (i, m) in measured.iter_mut().enumerate() {
        overflowed |= m.stack == Some(avr_wire::frame::STACK_OVERFLOW);
        let Some(cycles) = m.cycles.filter(|_| !overflowed) else {
            continue;
        };
        let trace = &traces[line_of(i)];
        if trace.op != requests[i].0 {
            return Err(format!(
                "trace {} is of op 0x{:02x}, not 0x{:02x}",
                line_of(i),
                trace.op,
                requests[i].0
            ));
        }
        let window = crate::run::avrxt::price(&d, trace)?;
        m.counts = trace.pcs.clone();
        m.avrxt = Some(
            crate::run::avrxt::avrxt_cycles(cycles, &window, &empty)
                .map_err(|e| format!("request {i} (op 0x{:02x}): {e}", requests[i].0))?,
        );
    }
    Ok(measured)
}

/// A row measured on `mcu` in yasimavr: its toolchain (the MCU's opt-level),
/// the revision, and the simulator and cycle source; the figures are left
/// for the caller (`stack_bytes` is the painted measure: yasimavr has no SP
/// tracking).
pub fn yasim_record(
    mcu: target::Mcu,
    scheme: &str,
    variant: &str,
    operation: &str,
    stack: Option<u32>,
) -> crate::report::records::Record {
    let toolchain = crate::report::records::toolchain();
    crate::report::records::Record {
        stack_bytes: stack.unwrap_or(0),
        stack_bytes_painted: stack,
        toolchain: match mcu.opt_level {
            Some(level) => toolchain.replace("opt-level 3", &format!("opt-level {level}")),
            None => toolchain,
        },
        git_revision: crate::opts::git_revision(),
        simulator: format!(
            "yasimavr {} @ 20 MHz, classic-core timings; cycles by the on-chip timers",
            mcu.name
        ),
        ..crate::report::records::Record::unmeasured(mcu.name, scheme, variant, operation)
    }
}

fn hex(b: &[u8]) -> String {
    base16ct::lower::encode_string(b)
}

/// The sensor application on a megaAVR-0 part in yasimavr behind a pty, as
/// [`crate::run::pty::SimOnPty`] puts a classic part's: `firmware/avr/yasim_app.py`
/// runs it with its USART0 on pipes, which two threads relay to and from
/// the pty's master, so `kem-mqtt serial-bridge` talks to it as to a
/// board. The simulated clock runs no faster than the wall clock
/// (`YASIM_APP_PACE=1`): the board's reply timeouts count simulated time,
/// the bridge's and the broker's answers take wall-clock time. Its SRAM
/// above static data is painted, so [`YasimOnPty::finish`] gives the
/// stack's peak; the script's log goes to `target/sensor-sim/yasim.log`.
/// Dropped, it stops the simulation.
pub struct YasimOnPty {
    path: String,
    child: std::process::Child,
    log: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    relays: Vec<std::thread::JoinHandle<()>>,
}

impl YasimOnPty {
    /// Starts `elf` (built for `mcu`) in yasimavr behind a new pty.
    pub fn start(mcu: target::Mcu, elf: &Path) -> Result<YasimOnPty, String> {
        use std::io::{Read, Write};
        use std::process::Stdio;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        use std::time::Duration;

        let [bss_end, data_start] = crate::run::symbols::addresses_of(elf, ["__bss_end", "__data_start"])?;
        let ramend = data_start + mcu.sram - 1;
        let script = util::workspace_root().join("firmware/avr/yasim_app.py");
        let log = util::workspace_root().join("target/sensor-sim/yasim.log");
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let log_file = std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut child = crate::setup::yasim(mcu.name)?
            .arg(script)
            .arg(elf)
            .args([bss_end, ramend].map(|a| a.to_string()))
            .env("YASIM_APP_PACE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot run yasimavr: {e}"))?;
        let (mut to_board, mut from_board) = (
            child.stdin.take().ok_or("no stdin")?,
            child.stdout.take().ok_or("no stdout")?,
        );
        let (mut host_side, path) = crate::run::pty::open_pty(Duration::from_millis(5))?;
        let mut board_side = avr_serial::serialport::SerialPort::try_clone(&host_side)
            .map_err(|e| format!("cannot clone the pty: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let to = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !stopping.load(Ordering::SeqCst) {
                match host_side.read(&mut buf) {
                    Ok(0) => std::thread::sleep(Duration::from_millis(5)),
                    Ok(n) => {
                        if to_board.write_all(&buf[..n]).and_then(|()| to_board.flush()).is_err() {
                            break;
                        }
                    }
                    // Nobody on the other end yet (or any more), or nothing to read.
                    Err(e) if crate::run::pty::hung_up(&e) => std::thread::sleep(Duration::from_millis(5)),
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
            // Dropping `to_board` closes the script's stdin: it reports and ends.
        });
        let from = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = from_board.read(&mut buf) {
                // With nobody on the other end the bytes are lost, as on a
                // board's line; anything else ends the relay.
                match board_side.write_all(&buf[..n]) {
                    Ok(()) => {}
                    Err(e) if crate::run::pty::hung_up(&e) || e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
        });
        Ok(YasimOnPty {
            path,
            child,
            log,
            stop,
            relays: vec![to, from],
        })
    }

    /// The pty's path (`/dev/pts/N`): what a host opens as the board's port.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Stops the simulation: the stack's painted peak in bytes from the top
    /// of SRAM, or an error if the board crashed, hung or its stack ran
    /// into static data.
    pub fn finish(mut self) -> Result<u32, String> {
        let status = self.stop_child();
        let said = std::fs::read_to_string(&self.log).unwrap_or_default();
        let last = said.lines().last().unwrap_or_default().to_string();
        let stack = last.rsplit_once("stack ").map(|(_, s)| s.trim());
        match (status.is_some_and(|s| s.success()), stack.and_then(|s| s.parse().ok())) {
            (true, Some(peak)) => Ok(peak),
            _ => Err(format!("yasimavr: {last} (log: {})", self.log.display())),
        }
    }

    /// Closes the script's stdin (it reports and ends), joins the relays
    /// and reaps the child; its exit status, if it ended.
    fn stop_child(&mut self) -> Option<std::process::ExitStatus> {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for relay in self.relays.drain(..) {
            let _ = relay.join();
        }
        self.child.wait().ok()
    }
}

impl Drop for YasimOnPty {
    fn drop(&mut self) {
        if !self.relays.is_empty() {
            let _ = self.child.kill();
            self.stop_child();
        }
    }
}
