//! The simulated board on a pseudo-terminal: simavr runs the firmware and
//! its UART0 is the far end of a pty, so the code that talks to a board over
//! a serial port (`avr-serial`: `bench --device`, `kem-mqtt serial-bridge`)
//! runs in CI against the simulator, byte for byte as it would against a
//! board's USB serial adapter.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use avr_serial::serialport::{SerialPort, TTYPort};
use avr_sim::Sim;

/// Cycles simulated between two looks at the pty (10 ms of a 20 MHz MCU;
/// a 1,700-byte reply at 2.5 Mbaud takes 136,000).
const SLICE: u64 = 200_000;

/// simavr running `elf` behind a pty; dropped, it stops the simulation.
pub struct SimOnPty {
    path: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), String>>>,
    changes: Arc<Mutex<Vec<Change>>>,
    /// [`Sim::stack_depth`] after the last slice.
    stack_depth: Arc<AtomicU16>,
}

/// What the simulated board's surroundings do besides its UART: the
/// voltage its ADC reads, the pins a test watches, and a tap on the line.
#[derive(Default)]
pub struct Surroundings {
    /// The millivolts on ADC0 at a simulated cycle (set before each slice).
    pub adc0_mv: Option<fn(u64) -> u32>,
    /// Data-space addresses (I/O registers such as PORTB) whose every
    /// change is recorded ([`SimOnPty::changes`]).
    pub watch: Vec<u16>,
    /// Sees, and may change, every byte on the serial line.
    pub tap: Option<Box<dyn Tap + Send>>,
    /// At most this many simulated seconds per real second. A board that
    /// sleeps costs the simulator nothing, so without a pace its schedule
    /// runs as fast as the host answers.
    pub pace: Option<u32>,
}

/// A party on the serial line between the board and the host: it gets each
/// run of bytes and writes what travels on in its place.
pub trait Tap {
    /// Bytes the board sent, on their way to the host.
    fn board_to_host(&mut self, bytes: &[u8], out: &mut Vec<u8>);
    /// Bytes the host sent, on their way to the board.
    fn host_to_board(&mut self, bytes: &[u8], out: &mut Vec<u8>);
}

/// A watched byte changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// The simulated cycle (at the end of the slice it happened in).
    pub cycle: u64,
    /// The address.
    pub addr: u16,
    /// The new value.
    pub value: u8,
}

impl SimOnPty {
    /// Loads `elf` for `mcu` in simavr and connects its UART0 to a new pty.
    pub fn start(elf: &Path, mcu: &str) -> Result<SimOnPty, String> {
        Self::start_with(elf, mcu, Surroundings::default())
    }

    /// [`SimOnPty::start`] in `surroundings`.
    pub fn start_with(elf: &Path, mcu: &str, surroundings: Surroundings) -> Result<SimOnPty, String> {
        let (mut master, path) = open_pty(Duration::from_millis(1))?;
        let changes = Arc::new(Mutex::new(Vec::new()));
        let recorded = changes.clone();
        let stack_depth = Arc::new(AtomicU16::new(0));
        let deepest = stack_depth.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let (elf, mcu, flag) = (elf.to_path_buf(), mcu.to_string(), stop.clone());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || -> Result<(), String> {
            // simavr's state stays on this thread.
            let sim = Sim::load(&elf, &mcu).map_err(|e| e.to_string());
            let ok = sim.is_ok();
            let _ = ready_tx.send(sim.as_ref().map(drop).map_err(Clone::clone));
            if !ok {
                return Ok(());
            }
            serve(sim?, &mut master, &flag, surroundings, &recorded, &deepest)
        });
        ready_rx.recv().map_err(|_| "the simulator thread died".to_string())??;
        Ok(SimOnPty {
            path,
            stop,
            thread: Some(thread),
            changes,
            stack_depth,
        })
    }

    /// The deepest the board's stack has gone so far, in bytes
    /// ([`Sim::stack_depth`]; for a firmware that writes no markers, since
    /// reset).
    pub fn stack_depth(&self) -> u16 {
        self.stack_depth.load(Ordering::SeqCst)
    }

    /// The watched bytes' changes so far.
    pub fn changes(&self) -> Vec<Change> {
        self.changes.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The pty's path (`/dev/pts/N`): what a host opens as the board's port.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits until the firmware stops (`OP_EXIT`) and reports how it ended.
    pub fn wait(mut self) -> Result<(), String> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the simulator thread panicked".into()),
            None => Ok(()),
        }
    }

    /// Stops the simulation and reports how it ended (an error if the
    /// firmware crashed or the pty failed).
    pub fn finish(mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the simulator thread panicked".into()),
            None => Ok(()),
        }
    }
}

impl Drop for SimOnPty {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A new pty: its master end, whose reads time out after `timeout`, and the
/// path of the other end, which a host (or avrdude) opens and locks. Until
/// it does, the master's reads report a hang-up ([`hung_up`]).
pub fn open_pty(timeout: Duration) -> Result<(TTYPort, String), String> {
    let (mut master, slave) = TTYPort::pair().map_err(|e| format!("cannot open a pty pair: {e}"))?;
    let path = slave.name().ok_or("the pty has no path")?;
    drop(slave);
    master.set_timeout(timeout).map_err(|e| e.to_string())?;
    Ok((master, path))
}

/// Whether a read on a pty's master failed because no one has the other
/// end open (EIO, or POLLHUP, which serialport reports as a broken pipe).
pub fn hung_up(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(5) || e.kind() == std::io::ErrorKind::BrokenPipe
}

/// Carries bytes between the pty and the simulated UART (through the tap,
/// if any) until `stop` or until the firmware stops (`OP_EXIT`).
fn serve(
    mut sim: Sim,
    pty: &mut TTYPort,
    stop: &AtomicBool,
    mut around: Surroundings,
    changes: &Mutex<Vec<Change>>,
    stack_depth: &AtomicU16,
) -> Result<(), String> {
    let mut buf = [0u8; 4096];
    let mut tapped = Vec::new();
    let mut last: Vec<Option<u8>> = vec![None; around.watch.len()];
    let started = std::time::Instant::now();
    let hz = u64::from(sim.frequency()).max(1);
    while !stop.load(Ordering::SeqCst) {
        if let Some(pace) = around.pace {
            let due = Duration::from_micros(sim.cycle().saturating_mul(1_000_000) / hz / u64::from(pace.max(1)));
            if let Some(ahead) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(ahead.min(Duration::from_millis(20)));
            }
        }
        match pty.read(&mut buf) {
            Ok(n) => match around.tap.as_mut() {
                Some(tap) => {
                    tapped.clear();
                    tap.host_to_board(&buf[..n], &mut tapped);
                    sim.send(&tapped);
                }
                None => sim.send(&buf[..n]),
            },
            Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => {}
            // No one has the board's end open right now (a hang-up: EIO or
            // POLLHUP, which serialport reports as a broken pipe).
            Err(e) if hung_up(&e) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(format!("pty: {e}")),
        }
        if let Some(mv) = around.adc0_mv {
            sim.set_adc(0, mv(sim.cycle()));
        }
        // Markers pile up otherwise; a board has none.
        sim.take_markers();
        let ran = sim.run_slice(SLICE);
        stack_depth.store(sim.stack_depth(), Ordering::SeqCst);
        for (i, &addr) in around.watch.iter().enumerate() {
            let now = sim.read_data(u32::from(addr), 1).map(|b| b[0]);
            if now != last[i] {
                if let (Some(value), Some(_)) = (now, last[i]) {
                    let c = Change {
                        cycle: sim.cycle(),
                        addr,
                        value,
                    };
                    changes.lock().map_err(|_| "the change log is poisoned")?.push(c);
                }
                last[i] = now;
            }
        }
        let mut out = match ran {
            Ok(out) => out,
            Err(avr_sim::Error::Exited { .. }) => {
                let out = sim.take_output();
                pty.write_all(&out).map_err(|e| format!("pty: {e}"))?;
                // Closing the master now could hang the host up before it
                // read that last reply (serialport reports POLLHUP before
                // the data): keep the pty until the host lets go of it.
                while !stop.load(Ordering::SeqCst) {
                    match pty.read(&mut buf) {
                        Err(e) if hung_up(&e) => break,
                        _ => std::thread::sleep(Duration::from_millis(1)),
                    }
                }
                return Ok(());
            }
            Err(e) => return Err(e.to_string()),
        };
        if let Some(tap) = around.tap.as_mut() {
            if !out.is_empty() {
                tapped.clear();
                tap.board_to_host(&out, &mut tapped);
                out = std::mem::take(&mut tapped);
            }
        }
        pty.write_all(&out).map_err(|e| format!("pty: {e}"))?;
    }
    Ok(())
}
