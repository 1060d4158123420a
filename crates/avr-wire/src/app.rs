//! The sensor application (firmware feature `sensor-app`) and its bridge
//! (`kem-mqtt serial-bridge`): the board runs a whole KEM-MQTT/1 session on
//! its own — handshakes, readings on a schedule, commands, re-keying — and
//! the bridge carries what the board says to the broker and back. The
//! bridge holds no key and sees no plaintext: it forwards flights and
//! sealed records.
//!
//! # The link
//!
//! The board speaks first, always: it sends a request and waits for the one
//! reply, then sleeps. A bridge never writes to a board that did not ask
//! (a sleeping board's UART is off), so a command from an application waits
//! at the bridge until the board's next record, whose acknowledgement
//! carries it — the way a LoRaWAN class-A device gets its downlinks.
//!
//! Every message is a frame:
//!
//! `[SYNC 0x7E][kind u8][tag u8][len u16 le][payload][crc u16 le]`
//!
//! The board numbers its requests (`tag`); a reply repeats the tag, so the
//! board drops a reply that belongs to an earlier request (a bridge that
//! answered late, bytes left in a port). The CRC (CRC-16/CCITT-FALSE over
//! kind, tag, length and payload) finds transmission errors only. What the
//! board seals or opens is authenticated by the session's keys (Ascon-AEAD128
//! with the topic bound): a frame a third party forges or replays on the
//! serial line, with a right CRC, never becomes a delivered reading or an
//! executed command. Such a party can still drop or delay frames: a gap in
//! the readings' numbers shows it.
//!
//! # A session
//!
//! ```text
//! board                                 bridge                    broker
//!   ── NONCE_REQ (suite) ─────────────▶   opens the connection
//!   ◀────────────────────── NONCE (32) ──
//!   ── CLIENT_HELLO ──────────────────▶   ── CONNECT/AUTH … ───▶
//!   ◀─────────────── BROKER_HELLO_HEAD ──   ◀── BrokerHello ─────
//!   ── REST_REQ ──────────────────────▶
//!   ◀─────────────── BROKER_HELLO_REST ──
//!   ── CLIENT_FINISHED ───────────────▶   ── AUTH/PUBLISH ─────▶
//!   ◀───────────────────── ESTABLISHED ──   ◀── CONNACK / confirmation
//!   ── RECORD (sub, record) ──────────▶   ── PUBLISH QoS 1 ────▶
//!   ◀──────────── ACK [command] ─────────   ◀── PUBACK ──────────
//! ```
//!
//! `LINK_DOWN` answers any request the bridge cannot carry (no broker, no
//! session: the bridge restarted, the broker went away); the board then
//! starts a new handshake, later. `REFUSED` answers a handshake step the
//! broker refused. The board takes the next reading only after the bridge
//! acknowledged the last (the broker's PUBACK), and seals an unacknowledged
//! one again under the next session: across a lost link no reading is lost,
//! and one the broker received but whose acknowledgement was lost arrives
//! twice — with the same number, which tells the application.

/// The first byte of every frame.
pub const SYNC: u8 = 0x7E;
/// Bytes of a frame's header: sync, kind, tag, length.
pub const HEADER_LEN: usize = 5;
/// Bytes around a payload: the header and the CRC.
pub const OVERHEAD: usize = HEADER_LEN + 2;
/// The largest payload a frame may carry (the largest flight, a hybrid
/// ML-KEM-512 ClientHello, is 1,700 bytes).
pub const MAX_PAYLOAD: usize = 4096;

/// Board → bridge: a handshake is due; payload `suite`. The bridge (re)opens
/// its broker connection and answers [`NONCE`], or [`LINK_DOWN`].
pub const NONCE_REQ: u8 = 0x01;
/// Board → bridge: the ClientHello; answered by [`BROKER_HELLO_HEAD`].
pub const CLIENT_HELLO: u8 = 0x02;
/// Board → bridge: the rest of the BrokerHello, please (after the board has
/// used the first part; it has no room for both); answered by
/// [`BROKER_HELLO_REST`].
pub const REST_REQ: u8 = 0x03;
/// Board → bridge: the ClientFinished; answered by [`ESTABLISHED`].
pub const CLIENT_FINISHED: u8 = 0x04;
/// Board → bridge: a sealed record; payload `sub_len u8 ‖ sub ‖ record`,
/// to publish on `kem-mqtt/data/c2b/<id>/<sub>`; answered by [`ACK`].
pub const RECORD: u8 = 0x05;

/// Bridge → board: the handshake's nonce ([`NONCE_LEN`] bytes: the
/// randomness the board mixes with its keys and EEPROM counter).
pub const NONCE: u8 = 0x81;
/// Bridge → board: the BrokerHello's first part
/// (`mqtt::Layout::broker_hello_head` bytes, all of a shorter one).
pub const BROKER_HELLO_HEAD: u8 = 0x82;
/// Bridge → board: the rest of the BrokerHello (possibly empty).
pub const BROKER_HELLO_REST: u8 = 0x83;
/// Bridge → board: the broker accepted the ClientFinished (AUTH mode:
/// CONNACK 0x00; topic mode: the gateway's confirmation arrived).
pub const ESTABLISHED: u8 = 0x84;
/// Bridge → board: the broker refused the handshake; payload `reason u8`
/// (an MQTT v5 reason code; 0 when the broker only closed the connection).
pub const REFUSED: u8 = 0x85;
/// Bridge → board: the record reached the broker (its PUBACK); payload
/// empty, or the oldest command waiting: `sub_len u8 ‖ sub ‖ record`,
/// received on `kem-mqtt/data/b2c/<id>/<sub>`.
pub const ACK: u8 = 0x86;
/// Bridge → board: no broker session to carry the request (the board
/// starts a new handshake later).
pub const LINK_DOWN: u8 = 0x87;

/// Bytes of [`NONCE`]'s payload.
pub const NONCE_LEN: usize = crate::mqtt::HOST_NONCE_LEN;
/// The longest sub-topic of a record or command.
pub const MAX_SUB: usize = 32;

/// Where the board's records go: `kem-mqtt/data/c2b/<id>/<sub>`
/// (`kem_mqtt_host::topics::sealed_c2b`; the topic is the record's
/// associated data, so both sides must build the same bytes).
pub const C2B_PREFIX: &[u8] = crate::topics::DATA_C2B.as_bytes();
/// Where the board's commands come from: `kem-mqtt/data/b2c/<id>/<sub>`.
pub const B2C_PREFIX: &[u8] = crate::topics::DATA_B2C.as_bytes();
/// The longest record topic: a prefix, a 64-byte id, `/`, a sub-topic.
pub const MAX_TOPIC: usize = C2B_PREFIX.len() + crate::mqtt::MAX_ID_LEN + 1 + MAX_SUB;

/// Marker windows of the application image (the simulator stamps their
/// cycles and stack; on a board they cost an `out` each): the handshake's
/// three steps, a reading sealed (its topic built, the ADC excluded), a
/// command opened.
pub const WINDOW_START: u8 = 0x70;
/// See [`WINDOW_START`].
pub const WINDOW_FINISH_HEAD: u8 = 0x71;
/// See [`WINDOW_START`].
pub const WINDOW_FINISH_REST: u8 = 0x72;
/// See [`WINDOW_START`].
pub const WINDOW_SEAL: u8 = 0x73;
/// See [`WINDOW_START`].
pub const WINDOW_OPEN: u8 = 0x74;

/// Seconds the board waits for a reply before it counts the link as down.
pub const REPLY_WAIT_S: u32 = 10;
/// The longest wait between two handshake attempts while the link is down
/// (the wait doubles from a second up to this).
pub const MAX_BACKOFF_S: u32 = 300;

/// `prefix ‖ id ‖ / ‖ sub` into `buf`: a record's topic.
pub fn topic<'a>(buf: &'a mut [u8; MAX_TOPIC], prefix: &[u8], id: &[u8], sub: &[u8]) -> &'a [u8] {
    let mut n = 0;
    for part in [prefix, id, b"/", sub] {
        for &b in part {
            if n < MAX_TOPIC {
                buf[n] = b;
                n += 1;
            }
        }
    }
    &buf[..n]
}

/// A frame kind's name, for logs.
pub const fn kind_name(kind: u8) -> &'static str {
    match kind {
        NONCE_REQ => "NONCE_REQ",
        CLIENT_HELLO => "CLIENT_HELLO",
        REST_REQ => "REST_REQ",
        CLIENT_FINISHED => "CLIENT_FINISHED",
        RECORD => "RECORD",
        NONCE => "NONCE",
        BROKER_HELLO_HEAD => "BROKER_HELLO_HEAD",
        BROKER_HELLO_REST => "BROKER_HELLO_REST",
        ESTABLISHED => "ESTABLISHED",
        REFUSED => "REFUSED",
        ACK => "ACK",
        LINK_DOWN => "LINK_DOWN",
        _ => "unknown",
    }
}

/// The CRC's initial value.
pub const CRC_INIT: u16 = 0xFFFF;

/// CRC-16/CCITT-FALSE (polynomial 0x1021), continued from `crc` over `b`:
/// the byte at a time without a table (x ^= x >> 4 folds the polynomial's
/// taps). The bit-at-a-time loop it replaces was turned by LLVM into a
/// 512-byte table, which a classic AVR copies into SRAM.
pub const fn crc16_byte(crc: u16, b: u8) -> u16 {
    let mut x = (crc >> 8) as u8 ^ b;
    x ^= x >> 4;
    let x = x as u16;
    (crc << 8) ^ (x << 12) ^ (x << 5) ^ x
}

/// [`crc16_byte`] over `bytes`.
pub const fn crc16(mut crc: u16, bytes: &[u8]) -> u16 {
    let mut i = 0;
    while i < bytes.len() {
        crc = crc16_byte(crc, bytes[i]);
        i += 1;
    }
    crc
}

/// A frame's header, and the CRC over it (to be continued over the payload).
pub const fn header(kind: u8, tag: u8, len: u16) -> ([u8; HEADER_LEN], u16) {
    let l = len.to_le_bytes();
    let h = [SYNC, kind, tag, l[0], l[1]];
    let crc = crc16(CRC_INIT, &[kind, tag, l[0], l[1]]);
    (h, crc)
}

/// Why a frame was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The CRC does not match: a transmission error.
    Crc,
    /// A length beyond the reader's buffer (or noise that looked like a
    /// start byte).
    TooLong,
}

/// Writes a frame whose payload is the concatenation of `parts` through
/// `write` (one call per run of bytes), so that a sender never assembles a
/// large payload in one buffer.
pub fn write_frame(kind: u8, tag: u8, parts: &[&[u8]], mut write: impl FnMut(&[u8])) -> Result<(), FrameError> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len > MAX_PAYLOAD {
        return Err(FrameError::TooLong);
    }
    let (h, mut crc) = header(kind, tag, len as u16);
    write(&h);
    for p in parts {
        crc = crc16(crc, p);
        write(p);
    }
    write(&crc.to_le_bytes());
    Ok(())
}

/// One whole frame in a new buffer (the hosts': the bridge, the lab).
#[cfg(feature = "std")]
pub fn frame(kind: u8, tag: u8, payload: &[u8]) -> Result<std::vec::Vec<u8>, FrameError> {
    let mut out = std::vec::Vec::with_capacity(payload.len() + OVERHEAD);
    write_frame(kind, tag, &[payload], |b| out.extend_from_slice(b))?;
    Ok(out)
}

/// Reads frames from a byte stream: feed it bytes, take whole frames. It
/// never allocates; `N` is the largest payload it keeps.
pub struct Deframer<const N: usize> {
    buf: [u8; N],
    state: State,
    kind: u8,
    tag: u8,
    len: usize,
    got: usize,
    crc: u16,
    crc_low: u8,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Sync,
    Kind,
    Tag,
    Len0,
    Len1,
    Payload,
    Crc0,
    Crc1,
}

/// What one byte completed.
#[derive(Debug, PartialEq, Eq)]
pub enum Deframed<'a> {
    /// Nothing yet.
    Pending,
    /// A frame: its kind, tag and payload.
    Frame {
        /// The kind.
        kind: u8,
        /// The request number it carries or answers.
        tag: u8,
        /// The payload.
        payload: &'a [u8],
    },
    /// A frame that failed and was dropped; the reader looks for the next
    /// start byte.
    Dropped(FrameError),
}

impl<const N: usize> Default for Deframer<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Deframer<N> {
    /// A reader waiting for a start byte.
    pub const fn new() -> Self {
        Deframer {
            buf: [0; N],
            state: State::Sync,
            kind: 0,
            tag: 0,
            len: 0,
            got: 0,
            crc: CRC_INIT,
            crc_low: 0,
        }
    }

    /// Takes one byte.
    pub fn push(&mut self, b: u8) -> Deframed<'_> {
        if self.state != State::Sync && self.state != State::Crc0 && self.state != State::Crc1 {
            self.crc = crc16_byte(self.crc, b);
        }
        match self.state {
            State::Sync => {
                if b == SYNC {
                    self.state = State::Kind;
                    self.crc = CRC_INIT;
                }
            }
            State::Kind => {
                self.kind = b;
                self.state = State::Tag;
            }
            State::Tag => {
                self.tag = b;
                self.state = State::Len0;
            }
            State::Len0 => {
                self.len = b as usize;
                self.state = State::Len1;
            }
            State::Len1 => {
                self.len |= (b as usize) << 8;
                if self.len > N || self.len > MAX_PAYLOAD {
                    self.state = State::Sync;
                    return Deframed::Dropped(FrameError::TooLong);
                }
                self.got = 0;
                self.state = if self.len == 0 { State::Crc0 } else { State::Payload };
            }
            State::Payload => {
                self.buf[self.got] = b;
                self.got += 1;
                if self.got == self.len {
                    self.state = State::Crc0;
                }
            }
            State::Crc0 => {
                self.crc_low = b;
                self.state = State::Crc1;
            }
            State::Crc1 => {
                self.state = State::Sync;
                if u16::from_le_bytes([self.crc_low, b]) != self.crc {
                    return Deframed::Dropped(FrameError::Crc);
                }
                return Deframed::Frame {
                    kind: self.kind,
                    tag: self.tag,
                    payload: &self.buf[..self.len],
                };
            }
        }
        Deframed::Pending
    }

    /// The payload of the frame the last [`Self::push`] returned, until the
    /// next push: for a caller that matched on the frame's kind and tag and
    /// wants its payload after the match (the borrow of a `push` result
    /// cannot leave a loop that pushes).
    pub fn payload(&self) -> &[u8] {
        &self.buf[..self.len.min(N)]
    }
}

/// Splits a [`RECORD`] payload or an [`ACK`]'s command into `(sub, record)`:
/// `sub_len u8 ‖ sub ‖ record`. `None` if the sub-topic is empty, cut
/// short, longer than [`MAX_SUB`], or not a plain topic level of printable
/// ASCII (no `/`, `+`, `#`, space or control byte).
pub fn split_sub(payload: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&n, rest) = payload.split_first()?;
    let n = n as usize;
    if n == 0 || n > MAX_SUB || rest.len() < n {
        return None;
    }
    let (sub, record) = rest.split_at(n);
    if sub
        .iter()
        .any(|&c| !(0x21..0x7F).contains(&c) || c == b'/' || c == b'+' || c == b'#')
    {
        return None;
    }
    Some((sub, record))
}

/// When the sensor reads and when it shakes hands again. Every field can be
/// changed by a command ([`Command`]); the defaults are the image's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Seconds between two readings.
    pub interval_s: u32,
    /// A new handshake after this many records under one session.
    pub rekey_records: u32,
    /// A new handshake after a session this many seconds old.
    pub rekey_s: u32,
}

impl Policy {
    /// A reading a minute; a new handshake a day (1,440 records, or 24 h,
    /// whichever comes first). SECURITY.md gives the reasoning: a leaked
    /// session key exposes at most a day of readings, and a day's handshake
    /// costs the battery less than its readings do.
    pub const DEFAULT: Policy = Policy {
        interval_s: 60,
        rekey_records: 1440,
        rekey_s: 86_400,
    };
    /// Bounds of [`Policy::interval_s`]: a second to a day.
    pub const INTERVAL_S: (u32, u32) = (1, 86_400);
    /// Bounds of [`Policy::rekey_records`].
    pub const REKEY_RECORDS: (u32, u32) = (1, 1_000_000);
    /// Bounds of [`Policy::rekey_s`]: a minute to thirty days.
    pub const REKEY_S: (u32, u32) = (60, 30 * 86_400);

    /// Whether a session with `records` records and `age_s` seconds is due
    /// for a new handshake.
    pub const fn rekey_due(&self, records: u32, age_s: u32) -> bool {
        records >= self.rekey_records || age_s >= self.rekey_s
    }
}

/// A command an application sends to the sensor: the sub-topic names it,
/// the payload is its argument (ASCII). `cmd/<id>/led` with `on`, say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `led`: `on` or `off` (the board's LED pin).
    Led(bool),
    /// `interval`: seconds between readings.
    Interval(u32),
    /// `rekey-records`: records per session.
    RekeyRecords(u32),
    /// `rekey-seconds`: a session's longest life.
    RekeySeconds(u32),
    /// `rekey`: a new handshake now (the argument is ignored).
    Rekey,
}

/// Why a command was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandError {
    /// No such command.
    Unknown,
    /// The argument is not what the command takes (or out of its bounds).
    BadArgument,
}

impl CommandError {
    /// The word the sensor's acknowledgement uses.
    pub const fn as_str(self) -> &'static str {
        match self {
            CommandError::Unknown => "unknown",
            CommandError::BadArgument => "bad-argument",
        }
    }
}

impl Command {
    /// Reads the command on sub-topic `sub` with argument `arg`.
    #[inline(never)]
    pub fn parse(sub: &[u8], arg: &[u8]) -> Result<Command, CommandError> {
        let arg = trim(arg);
        let number = |bounds| bounded(arg, bounds);
        match sub {
            b"led" => match arg {
                b"on" => Ok(Command::Led(true)),
                b"off" => Ok(Command::Led(false)),
                _ => Err(CommandError::BadArgument),
            },
            b"interval" => number(Policy::INTERVAL_S).map(Command::Interval),
            b"rekey-records" => number(Policy::REKEY_RECORDS).map(Command::RekeyRecords),
            b"rekey-seconds" => number(Policy::REKEY_S).map(Command::RekeySeconds),
            b"rekey" => Ok(Command::Rekey),
            _ => Err(CommandError::Unknown),
        }
    }

    /// Applies a policy command to `policy` (the others leave it as it is).
    pub fn apply(self, policy: &mut Policy) {
        match self {
            Command::Interval(s) => policy.interval_s = s,
            Command::RekeyRecords(n) => policy.rekey_records = n,
            Command::RekeySeconds(s) => policy.rekey_s = s,
            Command::Led(_) | Command::Rekey => {}
        }
    }
}

/// `arg` as a number within `lo..=hi` (out of line: one copy for every
/// command that takes a number).
#[inline(never)]
fn bounded(arg: &[u8], (lo, hi): (u32, u32)) -> Result<u32, CommandError> {
    match parse_9_digits(arg) {
        Some(n) if n >= lo && n <= hi => Ok(n),
        _ => Err(CommandError::BadArgument),
    }
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\n' | b'\r' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\n' | b'\r' | b'\t'] = s {
        s = rest;
    }
    s
}

/// A decimal `u32` (no sign, no spaces, no overflow).
pub fn parse_u32(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 10 {
        return None;
    }
    let mut n: u32 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
    }
    Some(n)
}

/// A decimal number of 1 to 9 digits: every bound a command has fits, and
/// nine digits cannot overflow a `u32`, so the board's copy needs no
/// overflow checks (code the 4808's flash is short of).
fn parse_9_digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 9 {
        return None;
    }
    let mut n: u32 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u32::from(c - b'0');
    }
    Some(n)
}

/// The sub-topic of readings.
pub const READING_SUB: &str = "reading";
/// The sub-topic of the sensor's answers to commands.
pub const ACK_SUB: &str = "ack";
/// The longest plaintext the sensor seals.
pub const MAX_TEXT: usize = 64;

/// A small text being written: the sensor's plaintexts, without `core::fmt`
/// (whose machinery costs kilobytes of flash on the AVR).
pub struct Text {
    buf: [u8; MAX_TEXT],
    len: usize,
}

impl Default for Text {
    fn default() -> Self {
        Self::new()
    }
}

impl Text {
    /// An empty text.
    pub const fn new() -> Text {
        Text {
            buf: [0; MAX_TEXT],
            len: 0,
        }
    }
    /// Appends `s` (cut at [`MAX_TEXT`]).
    #[inline(never)]
    pub fn push(&mut self, s: &[u8]) -> &mut Text {
        for &b in s {
            if self.len < MAX_TEXT {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
        self
    }
    /// Appends `n` in decimal (by subtraction: a 32-bit division costs an
    /// AVR a kilobyte of flash).
    pub fn number(&mut self, mut n: u32) -> &mut Text {
        const POWERS: [u32; 10] = [
            1_000_000_000,
            100_000_000,
            10_000_000,
            1_000_000,
            100_000,
            10_000,
            1_000,
            100,
            10,
            1,
        ];
        let mut started = false;
        for (i, &p) in POWERS.iter().enumerate() {
            let mut digit = b'0';
            while n >= p {
                n -= p;
                digit += 1;
            }
            if digit != b'0' || started || i == POWERS.len() - 1 {
                started = true;
                self.push(&[digit]);
            }
        }
        self
    }
    /// The text so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// What a reading says, as the application receives it:
/// `r=<number> adc=<raw> hs=<handshakes> rej=<rejected>` — the reading's
/// number (from 0 at reset), the ADC conversion, the handshakes since
/// reset, and the frames the sensor refused since reset (bad CRC, a
/// command that did not open, a replayed one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// The reading's number since reset.
    pub number: u32,
    /// The ADC's raw result.
    pub adc: u16,
    /// Handshakes since reset.
    pub handshakes: u32,
    /// Frames and commands refused since reset.
    pub rejected: u32,
}

impl Reading {
    /// The plaintext.
    pub fn text(&self) -> Text {
        let mut t = Text::new();
        t.push(b"r=")
            .number(self.number)
            .push(b" adc=")
            .number(u32::from(self.adc))
            .push(b" hs=")
            .number(self.handshakes)
            .push(b" rej=")
            .number(self.rejected);
        t
    }

    /// Reads a reading's plaintext back (the application's side).
    pub fn parse(text: &[u8]) -> Option<Reading> {
        let mut fields = [None; 4];
        for word in text.split(|&c| c == b' ') {
            let eq = word.iter().position(|&c| c == b'=')?;
            let (k, v) = (&word[..eq], parse_u32(&word[eq + 1..])?);
            let i = match k {
                b"r" => 0,
                b"adc" => 1,
                b"hs" => 2,
                b"rej" => 3,
                _ => return None,
            };
            fields[i] = Some(v);
        }
        Some(Reading {
            number: fields[0]?,
            adc: u16::try_from(fields[1]?).ok()?,
            handshakes: fields[2]?,
            rejected: fields[3]?,
        })
    }
}

/// The sensor's answer to a command, sealed on [`ACK_SUB`]: `<sub> ok`, or
/// `<sub> <error>` ([`CommandError::as_str`]).
pub fn command_answer(sub: &[u8], result: Result<Command, CommandError>) -> Text {
    let mut t = Text::new();
    t.push(sub).push(b" ");
    match result {
        Ok(_) => t.push(b"ok"),
        Err(e) => t.push(e.as_str().as_bytes()),
    };
    t
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn frame(kind: u8, tag: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_frame(kind, tag, &[payload], |b| out.extend_from_slice(b)).unwrap();
        out
    }

    #[test]
    fn crc_is_ccitt_false() {
        // The check value of CRC-16/CCITT-FALSE.
        assert_eq!(crc16(CRC_INIT, b"123456789"), 0x29B1);
        // The byte at a time equals the definition's bit at a time, for
        // every byte from a spread of states.
        let by_bits = |mut crc: u16, b: u8| {
            crc ^= (b as u16) << 8;
            for _ in 0..8 {
                crc = if crc & 0x8000 != 0 {
                    (crc << 1) ^ 0x1021
                } else {
                    crc << 1
                };
            }
            crc
        };
        for crc in (0..=u16::MAX).step_by(257) {
            for b in 0..=255u8 {
                assert_eq!(crc16_byte(crc, b), by_bits(crc, b), "{crc:04x} {b:02x}");
            }
        }
    }

    #[test]
    fn the_payload_stays_readable_after_the_frame_until_the_next_push() {
        let mut d: Deframer<16> = Deframer::new();
        for (kind, payload) in [(NONCE, &b"nonce bytes"[..]), (ACK, &[][..]), (ESTABLISHED, &[1, 2][..])] {
            let mut completed = false;
            for b in frame(kind, 5, payload) {
                completed = matches!(d.push(b), Deframed::Frame { kind: k, .. } if k == kind);
            }
            assert!(completed);
            assert_eq!(d.payload(), payload);
        }
        // After a frame too long for the buffer: never more than the buffer.
        for b in [SYNC, NONCE, 0, 0xFF, 0xFF] {
            d.push(b);
        }
        assert!(d.payload().len() <= 16);
    }

    #[test]
    fn frames_survive_noise_and_damaged_ones_are_dropped() {
        let mut d: Deframer<64> = Deframer::new();
        let mut stream = std::vec![0x00, 0x13, SYNC ^ 1];
        stream.extend(frame(RECORD, 3, b"hello"));
        let mut bad = frame(ACK, 3, b"tampered");
        bad[HEADER_LEN + 1] ^= 0x20;
        stream.extend(&bad);
        let mut bad_tag = frame(ACK, 3, b"x");
        bad_tag[2] = 4;
        stream.extend(&bad_tag);
        stream.extend(frame(ACK, 9, &[]));
        // A start byte followed by a length beyond the buffer: dropped.
        stream.extend([SYNC, NONCE, 0, 0xFF, 0xFF]);
        stream.extend(frame(LINK_DOWN, 200, &[7]));
        let mut seen = Vec::new();
        for b in stream {
            match d.push(b) {
                Deframed::Pending => {}
                Deframed::Frame { kind, tag, payload } => seen.push(Ok((kind, tag, payload.to_vec()))),
                Deframed::Dropped(e) => seen.push(Err(e)),
            }
        }
        assert_eq!(
            seen,
            [
                Ok((RECORD, 3, b"hello".to_vec())),
                Err(FrameError::Crc),
                Err(FrameError::Crc),
                Ok((ACK, 9, Vec::new())),
                Err(FrameError::TooLong),
                Ok((LINK_DOWN, 200, std::vec![7])),
            ]
        );
    }

    #[test]
    fn a_frame_can_be_written_in_parts() {
        let mut whole = Vec::new();
        write_frame(CLIENT_HELLO, 1, &[b"ab", b"", b"cde"], |b| whole.extend_from_slice(b)).unwrap();
        assert_eq!(whole, frame(CLIENT_HELLO, 1, b"abcde"));
        assert_eq!(whole.len(), 5 + OVERHEAD);
        let long = std::vec![0u8; MAX_PAYLOAD + 1];
        assert_eq!(write_frame(RECORD, 0, &[&long], |_| {}), Err(FrameError::TooLong));
    }

    #[test]
    fn subs_are_plain_topic_levels() {
        assert_eq!(split_sub(b"\x07readingXYZ"), Some((&b"reading"[..], &b"XYZ"[..])));
        assert_eq!(split_sub(b"\x03led"), Some((&b"led"[..], &b""[..])));
        for bad in [
            &b""[..],
            b"\x00abc",
            b"\x05ab",
            b"\x03a/b",
            b"\x01#",
            b"\x01+",
            b"\x02\xff\xfe",
            b"\x01\n",
            b"\x03a b",
        ] {
            assert_eq!(split_sub(bad), None, "{bad:?}");
        }
        let mut long = std::vec![MAX_SUB as u8 + 1];
        long.extend(std::iter::repeat_n(b'a', MAX_SUB + 1));
        assert_eq!(split_sub(&long), None);
    }

    #[test]
    fn commands_parse_within_their_bounds() {
        use Command::*;
        assert_eq!(Command::parse(b"led", b"on"), Ok(Led(true)));
        assert_eq!(Command::parse(b"led", b" off\n"), Ok(Led(false)));
        assert_eq!(Command::parse(b"led", b"blink"), Err(CommandError::BadArgument));
        assert_eq!(Command::parse(b"interval", b"30"), Ok(Interval(30)));
        assert_eq!(Command::parse(b"interval", b"0"), Err(CommandError::BadArgument));
        assert_eq!(Command::parse(b"interval", b"86401"), Err(CommandError::BadArgument));
        assert_eq!(
            Command::parse(b"interval", b"4294967296"),
            Err(CommandError::BadArgument)
        );
        assert_eq!(Command::parse(b"interval", b"-5"), Err(CommandError::BadArgument));
        assert_eq!(Command::parse(b"rekey-records", b"40"), Ok(RekeyRecords(40)));
        assert_eq!(Command::parse(b"rekey-seconds", b"59"), Err(CommandError::BadArgument));
        assert_eq!(Command::parse(b"rekey", b""), Ok(Rekey));
        assert_eq!(Command::parse(b"reboot", b""), Err(CommandError::Unknown));
        let mut p = Policy::DEFAULT;
        Interval(5).apply(&mut p);
        RekeyRecords(3).apply(&mut p);
        Led(true).apply(&mut p);
        assert_eq!((p.interval_s, p.rekey_records, p.rekey_s), (5, 3, 86_400));
        assert!(!p.rekey_due(2, 0) && p.rekey_due(3, 0) && p.rekey_due(0, 86_400));
    }

    #[test]
    fn readings_round_trip_as_text() {
        let r = Reading {
            number: 4_000_000_000,
            adc: 1023,
            handshakes: 7,
            rejected: 0,
        };
        let t = r.text();
        assert_eq!(t.as_bytes(), b"r=4000000000 adc=1023 hs=7 rej=0");
        assert_eq!(Reading::parse(t.as_bytes()), Some(r));
        assert_eq!(Reading::parse(b"r=1 adc=2"), None);
        assert_eq!(Reading::parse(b"r=1 adc=70000 hs=0 rej=0"), None);
        assert_eq!(Reading::parse(b"led ok"), None);
        assert_eq!(command_answer(b"led", Ok(Command::Led(true))).as_bytes(), b"led ok");
        assert_eq!(
            command_answer(b"reboot", Err(CommandError::Unknown)).as_bytes(),
            b"reboot unknown"
        );
        let mut long = Text::new();
        long.push(&[b'x'; MAX_TEXT + 5]);
        assert_eq!(long.as_bytes().len(), MAX_TEXT);
    }
}
