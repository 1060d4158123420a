//! The sensor application (feature `app`): after reset the board runs a
//! KEM-MQTT/1 session on its own, over the link of [`avr_wire::app`] to
//! `kem-mqtt serial-bridge`:
//!
//! 1. a handshake with its provisioned keys, its randomness from those keys,
//!    its EEPROM counter and the bridge's nonce (no counter value twice, so
//!    no tape twice, resets and lost links included);
//! 2. a reading (an ADC conversion), sealed on `…/c2b/<id>/reading`, sent
//!    until the bridge acknowledges it — a reading the link lost is sealed
//!    again under the next session, with its number;
//! 3. a command the acknowledgement carries is opened (the session's
//!    replay window refuses an old one), acted on and answered on
//!    `…/c2b/<id>/ack`;
//! 4. a new handshake once the session reached the policy's records or
//!    age, or on the `rekey` command, or after the link went down (after a
//!    wait of 1 s doubling up to [`MAX_BACKOFF_S`] until a record gets
//!    through again);
//! 5. power-down until the next reading, the watchdog armed throughout.

use core::ptr::addr_of_mut;

use avr_harness::{marker_begin, marker_end, Io, Uart};
use avr_wire::app::{
    self as link, Command, Policy, Reading, Text, ACK_SUB, B2C_PREFIX, C2B_PREFIX, MAX_BACKOFF_S, MAX_SUB, MAX_TEXT,
    MAX_TOPIC, NONCE_LEN, READING_SUB, REPLY_WAIT_S,
};
use avr_wire::mqtt::CF_LEN;
use kem_common::Tape;
use kem_mqtt::{Error, SensorCredentials, Session, RECORD_OVERHEAD};

use crate::steps::{self as mqtt, FLIGHT_BUF, L, STATE, SUITE, TAPE};
use avr_harness::board::{self, Deadline};

/// The image's policy: [`Policy::DEFAULT`], or what the build was given
/// (`SENSOR_APP_POLICY` at build time; in the project, `cargo xtask flash
/// --interval … --rekey-records … --rekey-seconds …`).
const POLICY: Policy = include!(concat!(env!("OUT_DIR"), "/sensor_policy.rs"));
const _: () = {
    let p = POLICY;
    assert!(p.interval_s >= Policy::INTERVAL_S.0 && p.interval_s <= Policy::INTERVAL_S.1);
    assert!(p.rekey_records >= Policy::REKEY_RECORDS.0 && p.rekey_records <= Policy::REKEY_RECORDS.1);
    assert!(p.rekey_s >= Policy::REKEY_S.0 && p.rekey_s <= Policy::REKEY_S.1);
};

/// Start attempts of one handshake: a CTRU-Light key generation that
/// retries can exhaust its tape; the next counter value draws a new one.
const START_ATTEMPTS: u8 = 5;

/// The session in force (wiped when dropped).
static mut SESSION: Option<Session> = None;

/// A record waiting for the bridge's acknowledgement.
struct Pending {
    sub: &'static str,
    text: Text,
}

/// What became of a record.
enum Sent {
    /// The broker has it; the acknowledgement carried a command of this
    /// many bytes (in the command buffer), or none.
    Acked(usize),
    /// No acknowledgement: the link or the session is gone.
    Down,
}

/// Bytes of a command frame the board keeps: `sub_len ‖ sub ‖ record`.
const COMMAND_BUF: usize = 1 + MAX_SUB + MAX_TEXT + RECORD_OVERHEAD;

struct App {
    uart: Uart,
    /// The next request's tag.
    tag: u8,
    policy: Policy,
    creds: SensorCredentials<'static>,
    /// The next reading's number.
    readings: u32,
    handshakes: u32,
    /// Frames dropped (bad CRC, a stale tag, too long) and commands that
    /// did not open.
    rejected: u32,
    /// Records under the session in force, and its age in (slept) seconds.
    records: u32,
    age_s: u32,
    rekey_now: bool,
    backoff_s: u32,
    pending: Option<Pending>,
}

/// Runs the sensor for good: the board's peripherals, then sessions,
/// readings and sleep (see the module's steps).
pub fn run() -> ! {
    board::init();
    let uart = Uart::init();
    // SAFETY: single-threaded, the first and only keys and credentials.
    let Some(keys) = (unsafe { mqtt::provisioned_keys() }) else {
        // The build provisions well-formed keys; nothing to run without them.
        avr_harness::exit()
    };
    // The static-static X25519 secret, once for the board's life.
    // SAFETY: as above.
    let creds = unsafe { mqtt::credentials(SUITE.id(), keys) };
    let mut app = App {
        uart,
        tag: 0,
        policy: POLICY,
        creds,
        readings: 0,
        handshakes: 0,
        rejected: 0,
        records: 0,
        age_s: 0,
        rekey_now: false,
        backoff_s: 1,
        pending: None,
    };
    loop {
        app.cycle();
    }
}

/// The session in force.
fn session() -> Option<&'static mut Session> {
    // SAFETY: single-threaded; each caller's borrow ends before the next.
    unsafe { (*addr_of_mut!(SESSION)).as_mut() }
}

fn end_session() {
    // SAFETY: as in session(); the old session's keys are wiped on drop.
    unsafe { *addr_of_mut!(SESSION) = None };
}

impl App {
    /// One wake-up: a handshake if there is no session, the reading, the
    /// commands that came back, then sleep.
    ///
    /// Stack: the handshake is the deepest path, so of the application's
    /// own data only [`App`] (in which a lost record outlives a handshake)
    /// is on the stack below it; the exchange's buffers live in
    /// [`App::exchange`]'s frame, never beneath a handshake (on the
    /// ATmega4808, 6 KB of SRAM, this decides whether the ML-KEM images
    /// fit).
    fn cycle(&mut self) {
        board::kick();
        if session().is_none() && self.handshake().is_err() {
            // SAFETY: single-threaded; a failed handshake's state goes.
            unsafe { mqtt::clear_state() };
            self.back_off();
            return;
        }
        if self.exchange() {
            board::sleep_s(self.policy.interval_s);
            self.age_s = self.age_s.saturating_add(self.policy.interval_s);
        }
    }

    /// The reading and the answers to the commands that came back; `false`
    /// when the link went down (the back-off was slept).
    #[inline(never)]
    fn exchange(&mut self) -> bool {
        let mut command = [0u8; COMMAND_BUF];
        if self.pending.is_none() {
            let reading = Reading {
                number: self.readings,
                adc: board::read_adc(),
                handshakes: self.handshakes,
                rejected: self.rejected,
            };
            self.readings = self.readings.wrapping_add(1);
            self.pending = Some(Pending {
                sub: READING_SUB,
                text: reading.text(),
            });
        }
        // The reading, then the answer to each command an acknowledgement
        // brought, until nothing is left.
        while let Some(p) = self.pending.take() {
            match self.send_record(&p, &mut command) {
                Sent::Acked(n) => {
                    self.records += 1;
                    // Only a record the broker took proves the link works.
                    self.backoff_s = 1;
                    if n > 0 {
                        self.pending = self.act(&command[..n]);
                    }
                }
                Sent::Down => {
                    self.pending = Some(p);
                    end_session();
                    self.back_off();
                    return false;
                }
            }
        }
        if self.rekey_now || self.policy.rekey_due(self.records, self.age_s) {
            self.rekey_now = false;
            end_session();
        }
        true
    }

    /// Sleeps before the next handshake: 1 s after the link last carried a
    /// record, doubling up to [`MAX_BACKOFF_S`] while no record gets
    /// through — so a party on the line that answers `LINK_DOWN` to every
    /// record gets a handshake every few minutes at most, not one per
    /// wake-up.
    fn back_off(&mut self) {
        board::sleep_s(self.backoff_s);
        self.backoff_s = (self.backoff_s * 2).min(MAX_BACKOFF_S);
    }

    /// Sends one frame; returns its tag.
    #[inline(never)]
    fn send(&mut self, kind: u8, parts: &[&[u8]]) -> u8 {
        self.tag = self.tag.wrapping_add(1);
        let uart = &mut self.uart;
        // Every payload here is far below MAX_PAYLOAD.
        let _ = link::write_frame(kind, self.tag, parts, |bytes| uart.write_bytes(bytes));
        uart.flush();
        self.tag
    }

    /// A handshake with the bridge's broker; the session goes into
    /// [`SESSION`].
    #[inline(never)]
    fn handshake(&mut self) -> Result<(), ()> {
        end_session();
        let tag = self.send(link::NONCE_REQ, &[&[SUITE.id()]]);
        let mut nonce = [0u8; NONCE_LEN];
        match receive(&mut self.rejected, tag, &mut nonce) {
            Some((link::NONCE, NONCE_LEN)) => {}
            _ => return Err(()),
        }
        let (head, len) = self.start(&nonce)?;
        // SAFETY: single-threaded; one borrow of each static, the state's
        // borrow of the ephemeral key goes through the state.
        let (slot, flight) = unsafe { (&mut *addr_of_mut!(STATE), &mut *addr_of_mut!(FLIGHT_BUF)) };
        // The ClientHello around the ephemeral public key, where key
        // generation left it.
        let pk: &[u8] = slot.as_ref().map_or(&[], |s| s.ephemeral_public_key());
        let tag = self.send(link::CLIENT_HELLO, &[&flight[..head], pk, &flight[head..len]]);
        let n = match receive(&mut self.rejected, tag, &mut flight[..L.broker_hello_head()]) {
            Some((link::BROKER_HELLO_HEAD, n)) => n,
            _ => return Err(()),
        };
        marker_begin(link::WINDOW_FINISH_HEAD);
        let r = mqtt::k_finish(slot, &flight[..n]);
        marker_end(link::WINDOW_FINISH_HEAD);
        r.map_err(drop)?;
        self.finish_handshake(slot)
    }

    /// The handshake after the BrokerHello's head: its rest, the
    /// ClientFinished, the session. The ClientFinished goes into the tape
    /// (dead once the start is done) and the session straight into
    /// [`SESSION`] (no session is in force: [`Self::handshake`] ended it),
    /// so neither takes stack beneath the second decapsulation.
    #[inline(never)]
    fn finish_handshake(&mut self, slot: &mut Option<mqtt::Sensor>) -> Result<(), ()> {
        let tag = self.send(link::REST_REQ, &[]);
        let rest = slot.as_mut().ok_or(())?.rest_buffer();
        let n = match receive(&mut self.rejected, tag, rest) {
            Some((link::BROKER_HELLO_REST, n)) => n,
            _ => return Err(()),
        };
        // SAFETY: single-threaded; the tape's only borrow was the start's
        // (over), and no borrow of the session is live.
        let (tape, session) = unsafe { (&mut *addr_of_mut!(TAPE), &mut *addr_of_mut!(SESSION)) };
        let cf = tape.first_chunk_mut::<CF_LEN>().ok_or(())?;
        marker_begin(link::WINDOW_FINISH_REST);
        let r = mqtt::k_finish_rest(slot, n, cf, session);
        marker_end(link::WINDOW_FINISH_REST);
        r.map_err(drop)?;
        let tag = self.send(link::CLIENT_FINISHED, &[&cf[..]]);
        match receive(&mut self.rejected, tag, &mut [0u8; 1]) {
            Some((link::ESTABLISHED, _)) => {}
            _ => {
                end_session();
                return Err(());
            }
        }
        self.handshakes = self.handshakes.wrapping_add(1);
        self.records = 0;
        self.age_s = 0;
        Ok(())
    }

    /// The handshake's first step with randomness from the next counter
    /// value and `nonce`: the ClientHello's pieces `(head, len)`. Inlined
    /// into [`Self::handshake`]: one frame and one set of saved registers
    /// fewer beneath the KEM.
    #[inline(always)]
    fn start(&mut self, nonce: &[u8; NONCE_LEN]) -> Result<(usize, usize), ()> {
        for _ in 0..START_ATTEMPTS {
            let counter = mqtt::next_counter().ok_or(())?;
            // SAFETY: single-threaded; the start's buffers, which borrow the
            // tape, are taken below, after the previous state is gone.
            unsafe { mqtt::derive_tape(SUITE, counter, nonce) };
            // SAFETY: single-threaded; the previous state, which borrowed
            // the ephemeral key, goes first.
            let (slot, ephemeral, tape, flight) = unsafe {
                mqtt::clear_state();
                mqtt::start_buffers()
            };
            let mut rng = Tape::new(tape.as_slice());
            marker_begin(link::WINDOW_START);
            let r = mqtt::k_start(SUITE, self.creds, &mut rng, flight, ephemeral, slot);
            marker_end(link::WINDOW_START);
            match r {
                Ok(pieces) => return Ok(pieces),
                Err(Error::Rng) => {}
                Err(_) => return Err(()),
            }
        }
        Err(())
    }

    /// Seals `p` under the session in force and sends it; a command the
    /// acknowledgement carries goes into `command`.
    #[inline(never)]
    fn send_record(&mut self, p: &Pending, command: &mut [u8; COMMAND_BUF]) -> Sent {
        let Some(s) = session() else { return Sent::Down };
        let mut topic_buf = [0u8; MAX_TOPIC];
        let mut record = [0u8; MAX_TEXT + RECORD_OVERHEAD];
        let sealed = board::timed(board::SLOT_SEAL, link::WINDOW_SEAL, || {
            let topic = link::topic(&mut topic_buf, C2B_PREFIX, self.creds.client_id, p.sub.as_bytes());
            s.seal(topic, p.text.as_bytes(), &mut record)
        });
        // An exhausted sequence (or any error): a new session.
        let Ok(n) = sealed else { return Sent::Down };
        let sub = p.sub.as_bytes();
        let tag = self.send(link::RECORD, &[&[sub.len() as u8], sub, &record[..n]]);
        match receive(&mut self.rejected, tag, command) {
            Some((link::ACK, n)) => Sent::Acked(n),
            _ => Sent::Down,
        }
    }

    /// Opens `command` (`sub_len ‖ sub ‖ record`) and acts on it; the
    /// answer to send, or `None` for a command that does not open (counted
    /// as rejected, never acted on).
    #[inline(never)]
    fn act(&mut self, command: &[u8]) -> Option<Pending> {
        let Some((sub, record)) = link::split_sub(command) else {
            self.rejected = self.rejected.wrapping_add(1);
            return None;
        };
        let s = session()?;
        let mut topic_buf = [0u8; MAX_TOPIC];
        let mut text = [0u8; MAX_TEXT];
        let opened = board::timed(board::SLOT_OPEN, link::WINDOW_OPEN, || {
            let topic = link::topic(&mut topic_buf, B2C_PREFIX, self.creds.client_id, sub);
            s.open(topic, record, &mut text)
        });
        let Ok(len) = opened else {
            self.rejected = self.rejected.wrapping_add(1);
            return None;
        };
        let parsed = Command::parse(sub, &text[..len]);
        match parsed {
            Ok(Command::Led(on)) => board::led(on),
            Ok(Command::Rekey) => self.rekey_now = true,
            Ok(c) => c.apply(&mut self.policy),
            Err(_) => {}
        }
        Some(Pending {
            sub: ACK_SUB,
            text: link::command_answer(sub, parsed),
        })
    }
}

/// The reply to request `tag` within [`REPLY_WAIT_S`]: its kind and
/// length, the payload in `dest` (a longer one is dropped). Frames with
/// another tag or a bad CRC are dropped and counted in `rejected`.
fn receive(rejected: &mut u32, tag: u8, dest: &mut [u8]) -> Option<(u8, usize)> {
    let mut deadline = Deadline::in_s(REPLY_WAIT_S);
    loop {
        if byte(&mut deadline)? != link::SYNC {
            continue;
        }
        let mut head = [0u8; link::HEADER_LEN - 1];
        for h in head.iter_mut() {
            *h = byte(&mut deadline)?;
        }
        let [kind, t, l0, l1] = head;
        let len = usize::from(u16::from_le_bytes([l0, l1]));
        let fits = len <= dest.len();
        // Received first, checked after: at 2.5 Mbaud a byte comes every
        // 80 cycles, too few to fold it into the CRC on the way.
        for i in 0..len {
            let b = byte(&mut deadline)?;
            if let Some(d) = dest.get_mut(i) {
                *d = b;
            }
        }
        let crc = [byte(&mut deadline)?, byte(&mut deadline)?];
        let ok = fits
            && t == tag
            && u16::from_le_bytes(crc) == link::crc16(link::crc16(link::CRC_INIT, &head), &dest[..len]);
        if ok {
            return Some((kind, len));
        }
        *rejected = rejected.wrapping_add(1);
    }
}

/// The next received byte, or `None` once `deadline` passed.
fn byte(deadline: &mut Deadline) -> Option<u8> {
    loop {
        // A tight poll; the deadline is looked at every 64 tries.
        for _ in 0..64 {
            if let Some(b) = board::try_read() {
                return Some(b);
            }
        }
        if deadline.passed() {
            return None;
        }
    }
}
