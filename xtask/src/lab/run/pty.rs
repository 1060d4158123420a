//! The simulated board on a pseudo-terminal: simavr runs the firmware and
//! its UART0 is the far end of a pty, so the code that talks to a board over
//! a serial port (`avr-serial`: `bench --device`, `kem-mqtt serial-bridge`)
//! runs in CI against the simulator, byte for byte as it would against a
//! board's USB serial adapter.
//!
//! With a pace ([`Surroundings::pace`], [`SimOnPty::set_pace`]) the
//! simulated board also keeps the wall clock's time: its sleeps, its
//! back-off and its intervals take as long as on a board (divided by the
//! pace), though simavr skips a sleeping core's watchdog period in one
//! slice.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use avr_serial::serialport::{SerialPort, TTYPort};
use avr_sim::Sim;

/// Cycles simulated between two looks at the pty (10 ms of a 20 MHz MCU;
/// a 1,700-byte reply at 2.5 Mbaud takes 136,000).
const SLICE: u64 = 200_000;
/// The longest the pacing waits before it looks at `stop` again.
const STOP_POLL: Duration = Duration::from_millis(20);
/// How far the simulated clock may fall behind the wall clock (a
/// computation simavr runs slower than the board would) and still catch
/// up; behind by more, the pacing counts on from where it is, so a later
/// sleep is never shortened to make up for a slow computation.
const LAG: Duration = Duration::from_millis(10);

/// simavr running `elf` behind a pty; dropped, it stops the simulation.
pub struct SimOnPty {
    path: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), String>>>,
    changes: Arc<Mutex<Vec<Change>>>,
    /// [`Sim::stack_depth_since_reset`] after the last slice.
    stack_depth: Arc<AtomicU16>,
    /// The pace in force ([`Surroundings::pace`]; 0: none).
    pace: Arc<AtomicU32>,
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
    /// At most this many simulated seconds per real second (1: the board
    /// keeps real time). A board that sleeps costs the simulator nothing
    /// (simavr skips a watchdog period, up to 8 s, in one slice), so
    /// without a pace its schedule runs as fast as the host answers. With
    /// one, before each slice the runner waits until the wall clock has
    /// caught up with the simulated clock (cycles ÷ frequency ÷ pace),
    /// however long that is, looking at `stop` every 20 ms; the host's
    /// bytes wait in the pty meanwhile and reach the board when it goes
    /// on. A simulation slower than the pace (a handshake's computation)
    /// is not made up for by a shorter sleep after it: every simulated
    /// interval takes at least its length ÷ pace of wall time, less a
    /// slice (10 ms) and 10 ms of lag ([`SimOnPty::set_pace`] changes it
    /// while the board runs).
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
        let pace = Arc::new(AtomicU32::new(surroundings.pace.unwrap_or(0)));
        let paced = pace.clone();
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
            let shared = Shared {
                stop: &flag,
                pace: &paced,
                changes: &recorded,
                stack_depth: &deepest,
            };
            serve(sim?, &mut master, surroundings, &shared)
        });
        ready_rx.recv().map_err(|_| "the simulator thread died".to_string())??;
        Ok(SimOnPty {
            path,
            stop,
            thread: Some(thread),
            changes,
            stack_depth,
            pace,
        })
    }

    /// Sets the pace from the next slice on ([`Surroundings::pace`];
    /// `None`: as fast as the simulator goes). The wall clock is counted
    /// from the change.
    pub fn set_pace(&self, pace: Option<u32>) {
        self.pace.store(pace.unwrap_or(0), Ordering::SeqCst);
    }

    /// The deepest the board's stack has gone since reset, in bytes
    /// ([`Sim::stack_depth_since_reset`]: the marker windows a firmware
    /// writes, such as the sensor application's, do not restart it).
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

/// What the simulator thread shares with its [`SimOnPty`].
struct Shared<'a> {
    stop: &'a AtomicBool,
    /// The pace (0: none).
    pace: &'a AtomicU32,
    changes: &'a Mutex<Vec<Change>>,
    stack_depth: &'a AtomicU16,
}

/// Keeps the simulated clock from running ahead of the wall clock.
struct Pacer {
    hz: u64,
    /// The pace, and a wall-clock instant with the cycle the simulated
    /// clock read then: the pacing counts from there.
    since: Option<(u32, Instant, u64)>,
}

impl Pacer {
    /// Waits until the wall clock has caught up with `cycle` at `pace` (0:
    /// no wait), or until `stop`.
    fn wait(&mut self, pace: u32, cycle: u64, stop: &AtomicBool) {
        if pace == 0 {
            self.since = None;
            return;
        }
        let (_, t0, c0) = match self.since {
            Some(since) if since.0 == pace && since.2 <= cycle => since,
            _ => *self.since.insert((pace, Instant::now(), cycle)),
        };
        let ns = u128::from(cycle - c0) * 1_000_000_000 / (u128::from(self.hz) * u128::from(pace));
        let due = t0 + Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
        while !stop.load(Ordering::SeqCst) {
            let left = due.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(STOP_POLL));
        }
        let now = Instant::now();
        if now.saturating_duration_since(due) > LAG {
            self.since = Some((pace, now, cycle));
        }
    }
}

/// Carries bytes between the pty and the simulated UART (through the tap,
/// if any) until `stop` or until the firmware stops (`OP_EXIT`), keeping
/// the pace if there is one.
fn serve(mut sim: Sim, pty: &mut TTYPort, mut around: Surroundings, shared: &Shared) -> Result<(), String> {
    let Shared {
        stop,
        pace,
        changes,
        stack_depth,
    } = *shared;
    let mut buf = [0u8; 4096];
    let mut tapped = Vec::new();
    let mut last: Vec<Option<u8>> = vec![None; around.watch.len()];
    let mut pacer = Pacer {
        hz: u64::from(sim.frequency()).max(1),
        since: None,
    };
    while !stop.load(Ordering::SeqCst) {
        pacer.wait(pace.load(Ordering::SeqCst), sim.cycle(), stop);
        if stop.load(Ordering::SeqCst) {
            break;
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
        stack_depth.store(sim.stack_depth_since_reset(), Ordering::SeqCst);
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
        match pty.write_all(&out) {
            Ok(()) => {}
            // No one has the board's end open (not yet, or no longer): the
            // bytes go nowhere, as a board's UART sends into an unplugged
            // cable. (A board that speaks first, before the host opened the
            // port, ended the simulation here.)
            Err(e) if hung_up(&e) => {}
            Err(e) => return Err(format!("pty: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GPIOR1 on the ATmega1284p (data space): the fixture's count.
    const GPIOR1: u16 = 0x4A;

    /// A board that sleeps: it counts 1, 2, 3 … and, for each, writes the
    /// count to GPIOR1 and sends it, then sleeps in power-down one watchdog
    /// period of `WDP` (simavr skips it in one slice).
    const SLEEPER: &str = r#"
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <avr/wdt.h>

ISR(WDT_vect) {}

int main(void)
{
	UBRR0 = 0;
	UCSR0A = _BV(U2X0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
	UCSR0B = _BV(TXEN0);
	set_sleep_mode(SLEEP_MODE_PWR_DOWN);
	for (uint8_t i = 1;; i++) {
		GPIOR1 = i;
		UDR0 = i;
		while (!(UCSR0A & _BV(TXC0)))
			;
		UCSR0A = _BV(U2X0) | _BV(TXC0);
		cli();
		wdt_reset();
		WDTCSR = _BV(WDCE) | _BV(WDE);
		WDTCSR = _BV(WDIE) | WDP;
		sleep_enable();
		sei();
		sleep_cpu();
		sleep_disable();
	}
}
"#;

    /// [`SLEEPER`] built with watchdog prescaler bits `wdp`; `None` (the
    /// test is skipped) without libsimavr (which `cargo xtask setup`
    /// installs with avr-gcc).
    fn sleeper(name: &str, wdp: &str) -> Option<std::path::PathBuf> {
        if !avr_sim::AVAILABLE {
            eprintln!("avr-sim built without libsimavr: skipping (run `cargo xtask setup`)");
            return None;
        }
        let dir = crate::util::workspace_root().join("target/tmp/pty-tests");
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join(format!("{name}.c"));
        let elf = dir.join(format!("{name}.elf"));
        std::fs::write(&src, format!("#define WDP ({wdp})\n{SLEEPER}")).unwrap();
        avr_sim::harness::build_elf("atmega1284p", &elf, &[src]).unwrap();
        Some(elf)
    }

    /// The host's end of the board's pty.
    fn host_end(board: &SimOnPty) -> Box<dyn SerialPort> {
        avr_serial::open(board.path(), 2_500_000, Duration::from_millis(50)).unwrap()
    }

    /// At pace 1 a board that sleeps 0.5 s between its bytes sends them
    /// 0.5 s apart on the wall clock too: the simulated time between two
    /// bytes (from the watched GPIOR1) is never more than 100 ms ahead of
    /// the wall-clock time between their arrivals (one 10 ms slice, 10 ms
    /// of lag, the rest for a busy host). Capped at 20 ms of wait per
    /// slice, the pacing let each skipped watchdog period through in 20 ms.
    #[test]
    fn paced_board_keeps_real_time() {
        let Some(elf) = sleeper("sleeper-half-second", "_BV(WDP2) | _BV(WDP0)") else {
            return;
        };
        let around = Surroundings {
            watch: vec![GPIOR1],
            pace: Some(1),
            ..Surroundings::default()
        };
        let board = SimOnPty::start_with(&elf, "atmega1284p", around).unwrap();
        let mut host = host_end(&board);
        let mut arrived: Vec<(u8, Instant)> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while arrived.len() < 6 && Instant::now() < deadline {
            let mut buf = [0u8; 16];
            match host.read(&mut buf) {
                Ok(n) => {
                    let now = Instant::now();
                    arrived.extend(buf[..n].iter().map(|&b| (b, now)));
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => panic!("reading the pty: {e}"),
            }
        }
        let changes = board.changes();
        board.finish().unwrap();
        assert!(arrived.len() >= 6, "{} bytes within 20 s: {arrived:?}", arrived.len());
        // The count's first value (1) is no change of GPIOR1 (0 at reset).
        let cycle_of = |n: u8| {
            changes
                .iter()
                .find(|c| c.addr == GPIOR1 && c.value == n)
                .map(|c| c.cycle)
                .unwrap_or_else(|| panic!("no GPIOR1 = {n} among {changes:?}"))
        };
        let (first, at) = *arrived.iter().find(|(n, _)| *n > 1).expect("a byte after the first");
        let mut lines = Vec::new();
        for &(n, when) in arrived.iter().filter(|(n, _)| *n > first) {
            let simulated = (cycle_of(n) - cycle_of(first)) as f64 / 20e6;
            let wall = (when - at).as_secs_f64();
            lines.push(format!(
                "bytes {first}..{n}: simulated {simulated:.3} s, wall {wall:.3} s"
            ));
            assert!(
                simulated - wall <= 0.1,
                "the simulated clock ran {:.3} s ahead of the wall clock:\n{}",
                simulated - wall,
                lines.join("\n")
            );
        }
        println!("{}", lines.join("\n"));
        let (last, _) = *arrived.last().unwrap();
        let simulated = (cycle_of(last) - cycle_of(first)) as f64 / 20e6;
        assert!(simulated > 1.5, "{simulated:.3} s simulated: the fixture did not sleep");
    }

    /// A board that speaks before the host has opened its port (its bytes
    /// go nowhere) keeps running, and the host opens the port after it.
    /// Before, the write's hang-up ended the simulation and took the pty
    /// with it: "cannot open serial port /dev/pts/N: No such file".
    #[test]
    fn a_board_that_speaks_first_waits_for_its_host() {
        let Some(elf) = sleeper("sleeper-speaks-first", "_BV(WDP2) | _BV(WDP0)") else {
            return;
        };
        let board = SimOnPty::start(&elf, "atmega1284p").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let _host = host_end(&board);
        board.finish().unwrap();
    }

    /// A paced board in an 8 s sleep still stops at once.
    #[test]
    fn paced_board_stops_within_its_sleep() {
        let Some(elf) = sleeper("sleeper-eight-seconds", "_BV(WDP3) | _BV(WDP0)") else {
            return;
        };
        let around = Surroundings {
            pace: Some(1),
            ..Surroundings::default()
        };
        let board = SimOnPty::start_with(&elf, "atmega1284p", around).unwrap();
        let mut host = host_end(&board);
        let mut buf = [0u8; 1];
        let deadline = Instant::now() + Duration::from_secs(20);
        // The first byte came; the board sleeps 8 s after it.
        while buf[0] == 0 {
            assert!(Instant::now() < deadline, "no byte within 20 s");
            if let Err(e) = host.read(&mut buf) {
                assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
            }
        }
        std::thread::sleep(Duration::from_millis(200));
        let asked = Instant::now();
        board.finish().unwrap();
        let took = asked.elapsed();
        assert!(took < Duration::from_millis(500), "finish took {took:?}");
    }
}
