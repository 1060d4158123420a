//! What the sensor application costs on the AVR (issue #36): the
//! application image of a suite (`app-…`, provisioned keys) runs in simavr
//! while the host plays its bridge and broker in one process
//! (`kem_mqtt`'s `BrokerHandshake` and `Session`, no MQTT): a handshake,
//! the first reading sealed, a command (`led on`) sealed by the broker and
//! opened by the board, and the board's sealed answer. The image's marker
//! windows (`avr_wire::app::WINDOW_*`) give the cycles and stack of each
//! step with the UART excluded; the host checks every flight and opens
//! every record, so a measured step is one that worked.

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
    let (secrets, registry, keys) = crate::sensor::provision_one(suite, ID)?;
    let image = crate::sensor::provisioned_image(mcu, Image::sensor_app(suite), &keys)?;
    let elf = crate::avr::image_elf(mcu, &image, no_build)?;
    let state = BrokerState { secrets, registry };
    let cost = run(&elf, mcu, suite, &state).map_err(|e| format!("{} on {}: {e}", image.name, mcu.name))?;
    Ok((cost, elf))
}

/// Reads one frame the board sends.
fn read_frame(sim: &mut Sim) -> Result<(u8, u8, Vec<u8>), String> {
    let head = sim
        .run_until_output(wire::HEADER_LEN, BUDGET)
        .map_err(|e| e.to_string())?;
    let len = usize::from(u16::from_le_bytes([head[3], head[4]]));
    let rest = sim.run_until_output(len + 2, BUDGET).map_err(|e| e.to_string())?;
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
fn reply(sim: &mut Sim, kind: u8, tag: u8, payload: &[u8]) {
    let mut out = vec![];
    let _ = wire::write_frame(kind, tag, &[payload], |b| out.extend_from_slice(b));
    sim.send(&out);
}

/// The next request, which must be of `kind`: its tag and payload.
fn expect(sim: &mut Sim, kind: u8) -> Result<(u8, Vec<u8>), String> {
    let (k, tag, payload) = read_frame(sim)?;
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
    let (tag, payload) = expect(&mut sim, wire::NONCE_REQ)?;
    if payload != [suite.id()] {
        return Err(format!("NONCE_REQ for suite {payload:02x?}, not {:#04x}", suite.id()));
    }
    reply(&mut sim, wire::NONCE, tag, &[0x5A; wire::NONCE_LEN]);
    let (tag, hello) = expect(&mut sim, wire::CLIENT_HELLO)?;
    let mut bh = vec![0u8; kem_mqtt::MAX_BROKER_HELLO_LEN];
    let (pending, n) = BrokerHandshake::accept(state, &hello, &mut OsRng, &mut bh)
        .map_err(|e| format!("the broker refuses the ClientHello: {e}"))?;
    bh.truncate(n);
    let head = n.min(kem_mqtt_host::board::layout(suite.kem()).broker_hello_head());
    reply(&mut sim, wire::BROKER_HELLO_HEAD, tag, &bh[..head]);
    let (tag, _) = expect(&mut sim, wire::REST_REQ)?;
    reply(&mut sim, wire::BROKER_HELLO_REST, tag, &bh[head..]);
    let (tag, cf) = expect(&mut sim, wire::CLIENT_FINISHED)?;
    let mut session = pending
        .receive_client_finished(&cf)
        .map_err(|e| format!("the broker refuses the ClientFinished: {e}"))?;
    reply(&mut sim, wire::ESTABLISHED, tag, &[]);

    // The first reading, acknowledged with a command.
    let (tag, payload) = expect(&mut sim, wire::RECORD)?;
    let (sub, text) = open_record(&mut session, &payload)?;
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
    reply(&mut sim, wire::ACK, tag, &ack);
    // The command's answer.
    let (tag, payload) = expect(&mut sim, wire::RECORD)?;
    let (sub, text) = open_record(&mut session, &payload)?;
    if sub != wire::ACK_SUB || text != b"led ok" {
        return Err(format!("the answer is {sub}: {:?}", String::from_utf8_lossy(&text)));
    }
    reply(&mut sim, wire::ACK, tag, &[]);
    let total_cycles = sim.cycle();
    let markers = sim.take_markers();
    cost(suite, &markers, mcu, total_cycles)
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
    // SRAM ends at 0x100 + size on the classic megaAVR.
    let top = 0x100 + mcu.sram;
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
