//! What the sensor application costs on the AVR (issue #36): the
//! application image of a suite (`app-…`, provisioned keys) runs in simavr
//! while the host plays its bridge and broker in one process
//! (`kem_mqtt`'s `BrokerHandshake` and `Session`, no MQTT): a handshake,
//! the first reading sealed, a command (`led on`) sealed by the broker and
//! opened by the board, and the board's sealed answer. The image's marker
//! windows (`avr_wire::app::WINDOW_*`) give the cycles and stack of each
//! step with the UART excluded; the host checks every flight and opens
//! every record, so a measured step is one that worked. On the megaAVR
//! 0-series (yasimavr, [`run_on_mega0`]) the application counts its seal
//! and open windows on chip (`avr_harness::board::timed`).

use std::path::Path;

use avr_sim::{Marker, Sim};
use avr_wire::app::{self as wire, Deframed, Deframer, Reading};
use kem_mqtt::{BrokerHandshake, Session, Suite};
use kem_mqtt_host::keys::BrokerState;
use kem_mqtt_host::OsRng;

use crate::target::{Image, Mcu};

/// The client id the measured images are provisioned with.
const ID: &str = "avr-1";
/// Cycles any one step may take before the run counts as hung.
const BUDGET: u64 = 400_000_000;

/// One suite's application costs on one MCU.
#[derive(Clone, Debug)]
pub struct AppCost {
    /// The suite.
    pub suite: Suite,
    /// The handshake's three windows (start, the BrokerHello's two parts).
    pub handshake_cycles: u64,
    /// The deepest stack of those windows, counted from the top of SRAM
    /// (so the application's frames below the handshake count too).
    pub handshake_stack: u32,
    /// A reading sealed (its topic built; the ADC and the UART excluded).
    pub seal_cycles: u64,
    /// Its stack, counted likewise.
    pub seal_stack: u32,
    /// A command opened (its topic built).
    pub open_cycles: u64,
    /// Its stack, counted likewise.
    pub open_stack: u32,
    /// Cycles from reset to the end of the command's answer (sleep excluded).
    pub total_cycles: u64,
}

/// Builds (unless `no_build`) and measures the application image of `suite` on `mcu`.
pub fn measure(mcu: Mcu, suite: Suite, no_build: bool) -> Result<(AppCost, std::path::PathBuf), String> {
    let (secrets, registry, keys) = crate::run::sensor::provision_one(suite, ID)?;
    let image = crate::run::sensor::provisioned_image(mcu, Image::sensor_app(suite), &keys)?;
    let elf = crate::build::avr::image_elf(mcu, &image, no_build)?;
    let state = BrokerState { secrets, registry };
    let cost = run(&elf, mcu, suite, &state).map_err(|e| format!("{} on {}: {e}", image.name, mcu.name))?;
    Ok((cost, elf))
}

/// The peak stack of a session (handshake, reading, command) of the
/// application image `elf` of `suite`, provisioned for `state`, on `mcu`:
/// simavr's stack-pointer tracking on the classic parts, the painted peak
/// in yasimavr on the megaAVR 0-series (`cargo xtask boards`).
pub fn session_stack(mcu: Mcu, suite: Suite, elf: &Path, state: &BrokerState) -> Result<u32, String> {
    if mcu.is_mega0() {
        return run_on_mega0(mcu, suite, elf, state).map(|r| r.stack);
    }
    let cost = run(elf, mcu, suite, state)?;
    Ok(cost.handshake_stack.max(cost.seal_stack).max(cost.open_stack))
}

/// The board's serial line, in whichever simulator runs it.
trait Line {
    /// The next `n` bytes the board sends.
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String>;
    /// Bytes to the board.
    fn send(&mut self, bytes: &[u8]) -> Result<(), String>;
}

impl Line for Sim {
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
        self.run_until_output(n, BUDGET).map_err(|e| e.to_string())
    }
    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        Sim::send(self, bytes);
        Ok(())
    }
}

/// The ATmega4808 in yasimavr (`firmware/avr/yasim_app.py`), its USART0 on
/// the child's pipes.
struct Yasim {
    child: std::process::Child,
    stdout: std::process::ChildStdout,
}

impl Line for Yasim {
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
        use std::io::Read;
        let mut buf = vec![0u8; n];
        self.stdout
            .read_exact(&mut buf)
            .map_err(|e| format!("yasimavr stopped sending ({e})"))?;
        Ok(buf)
    }
    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().ok_or("yasimavr's stdin is closed")?;
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.flush())
            .map_err(|e| e.to_string())
    }
}

/// Reads one frame the board sends.
fn read_frame(line: &mut dyn Line) -> Result<(u8, u8, Vec<u8>), String> {
    let head = line.read(wire::HEADER_LEN)?;
    let len = usize::from(u16::from_le_bytes([head[3], head[4]]));
    let rest = line.read(len + 2)?;
    let mut d: Box<Deframer<{ wire::MAX_PAYLOAD }>> = Box::default();
    for &b in head.iter().chain(&rest) {
        match d.push(b) {
            Deframed::Frame { kind, tag, payload } => return Ok((kind, tag, payload.to_vec())),
            Deframed::Dropped(e) => return Err(format!("the board sent a damaged frame ({e:?})")),
            Deframed::Pending => {}
        }
    }
    Err("the board's frame did not end where its length said".into())
}

/// Answers request `tag` with `kind` and `payload`.
fn reply(line: &mut dyn Line, kind: u8, tag: u8, payload: &[u8]) -> Result<(), String> {
    let out = wire::frame(kind, tag, payload).map_err(|e| format!("a reply of {} B: {e:?}", payload.len()))?;
    line.send(&out)
}

/// The next request, which must be of `kind`: its tag and payload.
fn expect(line: &mut dyn Line, kind: u8) -> Result<(u8, Vec<u8>), String> {
    let (k, tag, payload) = read_frame(line)?;
    if k != kind {
        return Err(format!(
            "the board sent {} where {} was due",
            wire::kind_name(k),
            wire::kind_name(kind)
        ));
    }
    Ok((tag, payload))
}

/// A RECORD's sub-topic and the plaintext the broker's session opens.
fn open_record(session: &mut Session, payload: &[u8]) -> Result<(String, Vec<u8>), String> {
    let (sub, record) = wire::split_sub(payload).ok_or("a RECORD without a valid sub-topic")?;
    let sub = String::from_utf8_lossy(sub).into_owned();
    let topic = kem_mqtt_host::topics::sealed_c2b(ID, &sub);
    let mut text = vec![0u8; record.len()];
    let n = session
        .open(topic.as_bytes(), record, &mut text)
        .map_err(|e| format!("the broker cannot open the record on {topic}: {e}"))?;
    text.truncate(n);
    Ok((sub, text))
}

fn run(elf: &Path, mcu: Mcu, suite: Suite, state: &BrokerState) -> Result<AppCost, String> {
    let mut sim = Sim::load(elf, mcu.name).map_err(|e| e.to_string())?;
    session(&mut sim, suite, state)?;
    let total_cycles = sim.cycle();
    let markers = sim.take_markers();
    cost(suite, &markers, mcu, total_cycles)
}

/// What a session of an application image in yasimavr showed.
#[derive(Clone, Debug, PartialEq)]
pub struct Mega0Run {
    /// The peak of the painted stack, counted from the top of SRAM.
    pub stack: u32,
    /// The handshake counter's first reservation in EEPROM.
    pub counter: u32,
    /// A reading sealed, by the on-chip count (its topic built; the empty
    /// window's constant subtracted).
    pub seal_cycles: u64,
    /// A command opened, likewise.
    pub open_cycles: u64,
    /// The stack of the seal window, counted from the top of SRAM (painted
    /// again at the window's start), and of the open window.
    pub seal_stack: u32,
    /// See `seal_stack`.
    pub open_stack: u32,
}

/// yasim_app.py's closing line,
/// `eeprom HEX cycles N windows E,S,O window-stack S,O stack S`.
#[derive(Clone, Debug, PartialEq)]
struct YasimReport {
    /// The first 8 EEPROM bytes.
    eeprom: Vec<u8>,
    /// The timed windows' counts (empty, seal, open), if the script had their address.
    windows: Option<[u16; 3]>,
    /// The seal and open windows' stack, if measured.
    window_stack: Option<[u32; 2]>,
    /// The painted peak; `None` when the stack ran into static data.
    stack: Option<u32>,
}

impl YasimReport {
    /// Reads the last line of what the script said; a crash or hang line
    /// yields its stack only (`eeprom` empty).
    fn parse(said: &str) -> Result<YasimReport, String> {
        let bad = || format!("yasimavr said {said:?}");
        let line = said.lines().last().unwrap_or("");
        let words: Vec<&str> = line.split_whitespace().collect();
        let after = |key: &str| {
            words
                .iter()
                .position(|w| *w == key)
                .and_then(|i| words.get(i + 1))
                .copied()
        };
        let stack = match after("stack").ok_or_else(bad)? {
            "overflow" => None,
            w => Some(w.parse().map_err(|_| bad())?),
        };
        let eeprom = match after("eeprom") {
            Some(h) if h.len() % 2 == 0 && h.is_ascii() => (0..h.len() / 2)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).map_err(|_| bad()))
                .collect::<Result<Vec<u8>, String>>()?,
            Some(_) => return Err(bad()),
            None => Vec::new(),
        };
        let windows = match after("windows") {
            None | Some("-") => None,
            Some("split") => {
                return Err(format!(
                    "yasimavr: a timed window ran across one of yasim_app.py's fast steps, so its count \
                     may be a cycle short: {said:?}"
                ))
            }
            // `over`: TCB0 wrapped (read as u16::MAX, which no count reaches).
            Some(w) => Some(
                list(w, |c| match c {
                    "over" => Some(u16::MAX),
                    c => c.parse().ok(),
                })
                .ok_or_else(bad)?,
            ),
        };
        let window_stack = match after("window-stack") {
            None | Some("-") => None,
            Some(w) => Some(list(w, |d| d.parse().ok()).ok_or_else(bad)?),
        };
        Ok(YasimReport {
            eeprom,
            windows,
            window_stack,
            stack,
        })
    }
}

/// Exactly `N` comma-separated items, each read by `item`.
fn list<T, const N: usize>(w: &str, item: impl Fn(&str) -> Option<T>) -> Option<[T; N]> {
    let items: Vec<T> = w.split(',').map(item).collect::<Option<_>>()?;
    items.try_into().ok()
}

/// A timed window's cycles: its count less the empty window's. A count at
/// `u16::MAX` is a window TCB0 could not count (65,535 cycles or more).
fn window_cycles(count: u16, empty: u16, what: &str) -> Result<u64, String> {
    match count {
        u16::MAX => Err(format!("{what}: 65,535 cycles or more, beyond TCB0's 16 bits")),
        0 => Err(format!("{what}: the window never ran")),
        c => Ok(u64::from(c.saturating_sub(empty))),
    }
}

/// Runs the application image of `suite` on the ATmega4808 in yasimavr
/// through the same session, its free SRAM painted: the stack's peak, what
/// its EEPROM holds afterwards, and the seal and open windows as the
/// application counted them on chip (yasimavr stamps no marker windows).
/// An image whose stack ran into static data fails with that as the reason.
pub fn run_on_mega0(mcu: Mcu, suite: Suite, elf: &Path, state: &BrokerState) -> Result<Mega0Run, String> {
    let script = crate::util::workspace_root().join("firmware/avr/yasim_app.py");
    let [bss_end, data_start, windows] =
        crate::run::symbols::addresses_of(elf, ["__bss_end", "__data_start", "APP_WINDOW_CYCLES"])?;
    let ramend = data_start + mcu.sram - 1;
    let mut child = crate::setup::yasim(mcu.name)?
        .arg(script)
        .arg(elf)
        .args([bss_end, ramend, windows].map(|a| a.to_string()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run yasimavr: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = Yasim { child, stdout };
    let r = session(&mut line, suite, state);
    drop(line.child.stdin.take());
    let out = line.child.wait_with_output().map_err(|e| e.to_string())?;
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let report = YasimReport::parse(&said);
    if let Ok(YasimReport { stack: None, .. }) = report {
        return Err(format!(
            "{} in yasimavr: the stack ran into static data ({} B of it, {} B of SRAM): {said}",
            mcu.name,
            bss_end - data_start,
            mcu.sram
        ));
    }
    r.map_err(|e| format!("{} in yasimavr: {e} ({said})", mcu.name))?;
    let report = report?;
    let (Some(stack), Some([empty, seal, open]), Some([seal_stack, open_stack])) =
        (report.stack, report.windows, report.window_stack)
    else {
        return Err(format!("yasimavr said {said:?}"));
    };
    // The counter's reservation is the first 4 EEPROM bytes.
    let counter = report
        .eeprom
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| format!("yasimavr said {said:?}"))?;
    if counter != avr_wire::mqtt::COUNTER_BLOCK {
        return Err(format!(
            "after one handshake the EEPROM counter reserves {counter}, not {}",
            avr_wire::mqtt::COUNTER_BLOCK
        ));
    }
    Ok(Mega0Run {
        stack,
        counter,
        seal_cycles: window_cycles(seal, empty, "the seal window")?,
        open_cycles: window_cycles(open, empty, "the open window")?,
        seal_stack,
        open_stack,
    })
}

/// The session the measurements run: a handshake, the first reading
/// acknowledged with a command, the command's answer acknowledged.
fn session(line: &mut dyn Line, suite: Suite, state: &BrokerState) -> Result<(), String> {
    let mut session = handshake(line, suite, state)?;
    first_records(line, &mut session)
}

/// The board's wait before each new handshake while the link answers
/// `LINK_DOWN` to every record (what a party on the serial line can do):
/// `rounds` times a handshake, its first record refused; the simulated
/// seconds from each refusal to the next `NONCE_REQ`.
pub fn back_off(elf: &Path, mcu: Mcu, suite: Suite, state: &BrokerState, rounds: usize) -> Result<Vec<f64>, String> {
    let mut sim = Sim::load(elf, mcu.name).map_err(|e| e.to_string())?;
    let mut waits = Vec::new();
    let mut nonce_req = expect(&mut sim, wire::NONCE_REQ)?;
    for _ in 0..rounds {
        handshake_from(&mut sim, nonce_req, suite, state)?;
        let (tag, _) = expect(&mut sim, wire::RECORD)?;
        reply(&mut sim, wire::LINK_DOWN, tag, &[])?;
        let refused_at = sim.cycle();
        nonce_req = expect(&mut sim, wire::NONCE_REQ)?;
        waits.push((sim.cycle() - refused_at) as f64 / f64::from(sim.frequency()));
    }
    Ok(waits)
}

/// A handshake with the board, from its `NONCE_REQ` to `ESTABLISHED`: the
/// broker's session.
fn handshake(line: &mut dyn Line, suite: Suite, state: &BrokerState) -> Result<Session, String> {
    let nonce_req = expect(line, wire::NONCE_REQ)?;
    handshake_from(line, nonce_req, suite, state)
}

/// [`handshake`] from a `NONCE_REQ` already read (its tag and payload).
fn handshake_from(
    line: &mut dyn Line,
    (tag, payload): (u8, Vec<u8>),
    suite: Suite,
    state: &BrokerState,
) -> Result<Session, String> {
    if payload != [suite.id()] {
        return Err(format!("NONCE_REQ for suite {payload:02x?}, not {:#04x}", suite.id()));
    }
    reply(line, wire::NONCE, tag, &[0x5A; wire::NONCE_LEN])?;
    let (tag, hello) = expect(line, wire::CLIENT_HELLO)?;
    let mut bh = vec![0u8; kem_mqtt::MAX_BROKER_HELLO_LEN];
    let (pending, n) = BrokerHandshake::accept(state, &hello, &mut OsRng, &mut bh)
        .map_err(|e| format!("the broker refuses the ClientHello: {e}"))?;
    bh.truncate(n);
    let head = n.min(kem_mqtt_host::board::layout(suite.kem()).broker_hello_head());
    reply(line, wire::BROKER_HELLO_HEAD, tag, &bh[..head])?;
    let (tag, _) = expect(line, wire::REST_REQ)?;
    reply(line, wire::BROKER_HELLO_REST, tag, &bh[head..])?;
    let (tag, cf) = expect(line, wire::CLIENT_FINISHED)?;
    let session = pending
        .receive_client_finished(&cf)
        .map_err(|e| format!("the broker refuses the ClientFinished: {e}"))?;
    reply(line, wire::ESTABLISHED, tag, &[])?;
    Ok(session)
}

/// The first reading acknowledged with a command, and the command's answer.
fn first_records(line: &mut dyn Line, session: &mut Session) -> Result<(), String> {
    // The first reading, acknowledged with a command.
    let (tag, payload) = expect(line, wire::RECORD)?;
    let (sub, text) = open_record(session, &payload)?;
    let reading = Reading::parse(&text).filter(|r| sub == wire::READING_SUB && r.number == 0);
    if reading.is_none() {
        return Err(format!(
            "the first record is {sub}: {:?}",
            String::from_utf8_lossy(&text)
        ));
    }
    let topic = kem_mqtt_host::topics::sealed_b2c(ID, "led");
    let mut command = vec![0u8; 2 + kem_mqtt::RECORD_OVERHEAD];
    let n = session
        .seal(topic.as_bytes(), b"on", &mut command)
        .map_err(|e| e.to_string())?;
    let mut ack = vec![3u8];
    ack.extend_from_slice(b"led");
    ack.extend_from_slice(&command[..n]);
    reply(line, wire::ACK, tag, &ack)?;
    // The command's answer.
    let (tag, payload) = expect(line, wire::RECORD)?;
    let (sub, text) = open_record(session, &payload)?;
    if sub != wire::ACK_SUB || text != b"led ok" {
        return Err(format!("the answer is {sub}: {:?}", String::from_utf8_lossy(&text)));
    }
    reply(line, wire::ACK, tag, &[])?;
    Ok(())
}

/// A window of the run: its cycles, and the deepest stack within it
/// counted from the top of SRAM (everything on the stack, the
/// application's own frames included).
#[derive(Clone, Copy)]
struct Span {
    cycles: u64,
    depth: u32,
}

/// The windows of one run, read.
fn cost(suite: Suite, markers: &[Marker], mcu: Mcu, total_cycles: u64) -> Result<AppCost, String> {
    // The stack's depth is counted from the byte above RAMEND.
    let top = mcu.facts().ramend() + 1;
    let mut spans: Vec<(u8, Span)> = Vec::new();
    let mut open: Option<&Marker> = None;
    for m in markers {
        match (m.id & 0x80 == 0, open) {
            (true, None) => open = Some(m),
            (false, Some(o)) if o.id == m.id & 0x7F => {
                let span = Span {
                    cycles: m.cycle - o.cycle,
                    depth: top.saturating_sub(u32::from(m.min_sp)),
                };
                spans.push((o.id, span));
                open = None;
            }
            _ => return Err(format!("marker {:#04x} out of order", m.id)),
        }
    }
    let last = |id: u8| {
        spans
            .iter()
            .rev()
            .find(|(w, _)| *w == id)
            .map(|(_, s)| *s)
            .ok_or_else(|| format!("no window {id:#04x}"))
    };
    let (start, head, rest) = (
        last(wire::WINDOW_START)?,
        last(wire::WINDOW_FINISH_HEAD)?,
        last(wire::WINDOW_FINISH_REST)?,
    );
    let seal = spans
        .iter()
        .filter(|(w, _)| *w == wire::WINDOW_SEAL)
        .map(|(_, s)| *s)
        .max_by_key(|s| s.cycles)
        .ok_or("no seal window")?;
    let open = last(wire::WINDOW_OPEN)?;
    Ok(AppCost {
        suite,
        handshake_cycles: start.cycles + head.cycles + rest.cycles,
        handshake_stack: start.depth.max(head.depth).max(rest.depth),
        seal_cycles: seal.cycles,
        seal_stack: seal.depth,
        open_cycles: open.cycles,
        open_stack: open.depth,
        total_cycles,
    })
}

#[cfg(test)]
mod tests {
    use super::{window_cycles, YasimReport};

    #[test]
    fn the_closing_line_is_read_word_by_word() {
        let ok = "yasimavr: a log line\neeprom 40000000ffffffff cycles 41640000 windows 5,48212,37011 \
                  window-stack 1290,1370 stack 2910";
        let r = YasimReport::parse(ok).unwrap();
        assert_eq!(r.stack, Some(2910));
        assert_eq!(r.windows, Some([5, 48212, 37011]));
        assert_eq!(r.window_stack, Some([1290, 1370]));
        // A window the instruction-at-a-time run never saw: no depth, an error.
        assert!(YasimReport::parse("eeprom 40 cycles 1 windows 5,6,7 window-stack -,1370 stack 7").is_err());
        let wrapped = YasimReport::parse("eeprom 40 cycles 1 windows 5,over,37011 stack 7").unwrap();
        assert_eq!(wrapped.windows, Some([5, u16::MAX, 37011]));
        assert_eq!(r.eeprom, [0x40, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        let hung = "hung: no byte for 1000000000 cycles (the last at cycle 13600000), pc 0x46a8, cycles 1013620000, stack overflow";
        let r = YasimReport::parse(hung).unwrap();
        assert_eq!((r.stack, r.windows, r.eeprom.len()), (None, None, 0));
        // Without the addresses the script measures nothing: an error (or
        // no windows), not a zero that would read as room to spare.
        assert!(YasimReport::parse("eeprom 40000000ffffffff cycles 1 windows - stack -").is_err());
        assert_eq!(
            YasimReport::parse("eeprom 40 cycles 1 windows - stack 7")
                .unwrap()
                .windows,
            None
        );
        assert!(YasimReport::parse("eeprom 40 cycles 1 windows 1,2 stack 7").is_err());
        // A window a fast step cut in two is not a count to record.
        assert!(YasimReport::parse("eeprom 40 cycles 1 windows split stack 7").is_err());
        assert!(YasimReport::parse("").is_err());
    }

    #[test]
    fn a_window_the_timer_could_not_count_is_an_error() {
        assert_eq!(window_cycles(48212, 5, "seal"), Ok(48207));
        assert!(window_cycles(u16::MAX, 5, "seal").is_err());
        assert!(window_cycles(0, 5, "seal").is_err());
    }
}
