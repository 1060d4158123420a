//! A KEM-MQTT/1 sensor on an ATmega1284p: after reset it shakes hands with
//! the broker through `kem-mqtt serial-bridge` on USART0 (the link of
//! `avr_wire::app`), then seals an ADC reading every few seconds on
//! `kem-mqtt/data/c2b/<id>/reading`; applications read the plaintext on
//! `plain/<id>/reading`. When the bridge does not acknowledge a record, the
//! sensor shakes hands again, waiting longer each time the link stays down,
//! and the next reading takes the unacknowledged one's number.
//!
//! What this example leaves out, and the repository's own sensor
//! application (`firmware/src/device/app.rs`) has: commands from
//! applications (acknowledgements that carry one are counted, not acted
//! on), re-keying by policy, sleep modes and the watchdog.
#![no_std]
#![no_main]
// `asm!` on AVR (the EEPROM's timed write sequence); RUSTC_BOOTSTRAP=1 allows it on
// a stable compiler, as it allows build-std.
#![feature(asm_experimental_arch)]

use avr_device::atmega1284p::{Peripherals, ADC, EEPROM, USART0};
use avr_wire::app::{self as link, Deframed, Deframer, Reading, C2B_PREFIX, MAX_SUB, MAX_TEXT, MAX_TOPIC, NONCE_LEN};
use avr_wire::mqtt::{TAPE_LABEL, TAPE_LEN};
use kem_common::{Tape, Wipe};
use kem_mqtt::{Error, SensorCredentials, SensorHandshake, Session, Suite, RECORD_OVERHEAD};
use panic_halt as _;

// SUITE_NAME, CLIENT_ID, KEM_SK, X25519_SK, BROKER_KEM_PK, BROKER_X25519_PK:
// the key file named by KEM_MQTT_SENSOR_KEY at build time (build.rs).
include!(concat!(env!("OUT_DIR"), "/sensor_keys.rs"));

/// The suite: the key file's (one setting, `kem-mqtt provision --suite`).
/// Cargo.toml's kem-mqtt features must compile its parts: a build without
/// them stops here, naming what to turn on.
const SUITE: Suite = match suite_named(SUITE_NAME) {
    Some(suite) => suite,
    None => panic!("the key file names a suite this kem-mqtt does not know"),
};
const _: () = assert!(
    SUITE.enabled(),
    "the key file's suite is not compiled in: turn on its KEM's kem-mqtt feature in Cargo.toml, and `x25519` for a hybrid suite"
);
const _: () = assert!(
    SUITE.is_hybrid() == cfg!(hybrid),
    "build.rs and kem-mqtt disagree on the suite's kind"
);
const _: () = assert!(KEM_SK.len() == SUITE.kem().sk_len() && BROKER_KEM_PK.len() == SUITE.kem().pk_len());

/// The suite called `name` (`Suite::from_name`, at compile time).
const fn suite_named(name: &str) -> Option<Suite> {
    let mut i = 0;
    while i < Suite::ALL.len() {
        let (a, b) = (Suite::ALL[i].name().as_bytes(), name.as_bytes());
        let mut same = a.len() == b.len();
        let mut j = 0;
        while same && j < a.len() {
            same = a[j] == b[j];
            j += 1;
        }
        if same {
            return Some(Suite::ALL[i]);
        }
        i += 1;
    }
    None
}

/// The CPU clock: 20 MHz, which gives the bridge's default 2,500,000 Bd
/// exactly (U2X, divisor 0).
const F_CPU: u32 = 20_000_000;
/// Cycles between two readings (2 s).
const INTERVAL_CYCLES: u32 = 2 * F_CPU;
/// Polls of the receiver before a reply counts as lost: about
/// [`link::REPLY_WAIT_S`] seconds at some ten cycles a poll.
const REPLY_POLLS: u32 = link::REPLY_WAIT_S * (F_CPU / 10);
/// The longest wait before a new handshake while the link is down, in
/// seconds (the wait doubles from one second up to this).
const MAX_BACKOFF_S: u32 = link::MAX_BACKOFF_S;
/// Handshake starts per counter value run: a CTRU-Light key generation
/// may draw more than the tape holds; the next counter value gives a new
/// tape.
const START_ATTEMPTS: u8 = 5;

/// The largest frame payload the bridge sends: a BrokerHello part, the
/// nonce, or an acknowledgement carrying a command.
const RX_MAX: usize = max(
    max(SUITE.broker_hello_head_len(), SUITE.broker_hello_rest_len()),
    max(NONCE_LEN, 1 + MAX_SUB + MAX_TEXT + RECORD_OVERHEAD),
);

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// The board's peripherals and its end of the link.
struct Board {
    usart: USART0,
    adc: ADC,
    eeprom: EEPROM,
    /// The last request's number (a reply must repeat it).
    tag: u8,
    rx: Deframer<RX_MAX>,
    /// Frames dropped: a bad CRC, another request's tag, an unexpected kind.
    rejected: u32,
}

#[avr_device::entry]
fn main() -> ! {
    let dp = Peripherals::take().unwrap();
    let mut board = Board::new(dp.USART0, dp.ADC, dp.EEPROM);

    // A hybrid suite's static-static X25519 secret depends on the
    // long-term keys only: computed once, not in every handshake.
    #[cfg(hybrid)]
    let Ok(static_secret) = kem_mqtt::static_x25519_secret(&X25519_SK, &BROKER_X25519_PK) else {
        // A broker key that gives an all-zero secret: nothing to run.
        halt()
    };
    #[cfg(hybrid)]
    let x25519 = (Some(&X25519_SK), Some(&BROKER_X25519_PK), Some(&static_secret));
    // A pure suite uses no X25519 key.
    #[cfg(not(hybrid))]
    let x25519 = (None, None, None);
    let creds = SensorCredentials {
        client_id: CLIENT_ID,
        kem_sk: (&KEM_SK).into(),
        x25519_sk: x25519.0,
        broker_kem_pk: (&BROKER_KEM_PK).into(),
        broker_x25519_pk: x25519.1,
        x25519_static_secret: x25519.2,
    };

    let mut readings = 0u32;
    let mut handshakes = 0u32;
    let mut backoff_s = 1;
    loop {
        let Some(mut session) = board.handshake(creds) else {
            delay_s(backoff_s);
            backoff_s = (backoff_s * 2).min(MAX_BACKOFF_S);
            continue;
        };
        handshakes = handshakes.wrapping_add(1);
        // Readings until a record is not acknowledged; that reading's
        // number goes again (with a new conversion) under the next session.
        loop {
            let reading = Reading {
                number: readings,
                adc: board.read_adc(),
                handshakes,
                rejected: board.rejected,
            };
            if !board.send_reading(&mut session, &reading) {
                break;
            }
            backoff_s = 1;
            readings = readings.wrapping_add(1);
            avr_device::asm::delay_cycles(INTERVAL_CYCLES);
        }
        // The session's keys are wiped when it is dropped here.
    }
}

impl Board {
    fn new(usart: USART0, adc: ADC, eeprom: EEPROM) -> Board {
        // 2.5 Mbd at 20 MHz: double speed, divisor 0; 8N1 is the reset state.
        usart.ucsr0a().write(|w| w.u2x0().set_bit());
        // SAFETY: any 12-bit divisor is a valid baud-rate setting.
        usart.ubrr0().write(|w| unsafe { w.bits(0) });
        usart.ucsr0b().write(|w| w.txen0().set_bit().rxen0().set_bit());
        // ADC0 (PA0) against AVCC, 156 kHz ADC clock.
        adc.admux().write(|w| w.refs().avcc());
        Board {
            usart,
            adc,
            eeprom,
            tag: 0,
            rx: Deframer::new(),
            rejected: 0,
        }
    }

    /// One handshake: the bridge's nonce, the ClientHello, the BrokerHello
    /// in its two parts, the ClientFinished. `None` when the bridge or the
    /// broker did not play along (the caller waits, then tries again).
    fn handshake(&mut self, creds: SensorCredentials<'_>) -> Option<Session> {
        // A nonce of another length is refused, like any malformed reply.
        let nonce: [u8; NONCE_LEN] = self
            .request(link::NONCE_REQ, &[&[SUITE.id()]], link::NONCE)?
            .try_into()
            .ok()?;

        let mut hello = [0u8; SUITE.client_hello_len(CLIENT_ID.len())];
        let (state, hello_len) = self.start(creds, &nonce, &mut hello)?;
        let head = self.request(link::CLIENT_HELLO, &[&hello[..hello_len]], link::BROKER_HELLO_HEAD)?;
        // The BrokerHello comes in two parts (a board short of SRAM takes
        // them one at a time); this one has room for both.
        let mut broker_hello = [0u8; SUITE.broker_hello_len()];
        let n = head.len();
        broker_hello.get_mut(..n)?.copy_from_slice(head);
        let rest = self.request(link::REST_REQ, &[], link::BROKER_HELLO_REST)?;
        let len = n + rest.len();
        broker_hello.get_mut(n..len)?.copy_from_slice(rest);

        let mut finished = [0u8; SUITE.client_finished_len()];
        // Checks the broker's proof in constant time; the ephemeral keys
        // are wiped whatever the outcome.
        let (session, cf_len) = state.receive_broker_hello(&broker_hello[..len], &mut finished).ok()?;
        self.request(link::CLIENT_FINISHED, &[&finished[..cf_len]], link::ESTABLISHED)?;
        Some(session)
    }

    /// The ClientHello into `out`, with randomness no other handshake of
    /// this board used: a KDF of its secret keys, the next EEPROM counter
    /// value and the bridge's nonce. (An ATmega has no random-number
    /// generator; the counter makes the randomness fresh across resets,
    /// the keys make it secret.)
    fn start<'a>(
        &mut self,
        creds: SensorCredentials<'a>,
        nonce: &[u8; NONCE_LEN],
        out: &mut [u8],
    ) -> Option<(kem_mqtt::AwaitBrokerHello<'a>, usize)> {
        let mut tape = [0u8; TAPE_LEN];
        for _ in 0..START_ATTEMPTS {
            let counter = self.next_counter()?;
            kem_mqtt::sym::kdf(
                SUITE.family(),
                TAPE_LABEL,
                &[&KEM_SK, &X25519_SK, &counter.to_le_bytes(), nonce],
                &mut tape,
            );
            let started = SensorHandshake::start(SUITE, creds, &mut Tape::new(&tape), out);
            tape.wipe();
            match started {
                Ok(s) => return Some(s),
                Err(Error::Rng) => continue,
                Err(_) => return None,
            }
        }
        None
    }

    /// Seals `reading` under `session` and sends it; `true` once the
    /// bridge acknowledged it (the broker has it).
    fn send_reading(&mut self, session: &mut Session, reading: &Reading) -> bool {
        let sub = link::READING_SUB.as_bytes();
        let mut topic_buf = [0u8; MAX_TOPIC];
        // The record's topic is its associated data: the broker opens it
        // only on this topic.
        let topic = link::topic(&mut topic_buf, C2B_PREFIX, CLIENT_ID, sub);
        let mut record = [0u8; MAX_TEXT + RECORD_OVERHEAD];
        let Ok(n) = session.seal(topic, reading.text().as_bytes(), &mut record) else {
            // The session's sequence numbers are used up: a new handshake.
            return false;
        };
        match self.request(link::RECORD, &[&[sub.len() as u8], sub, &record[..n]], link::ACK) {
            // An acknowledgement may carry a command: not acted on here.
            Some(command) => {
                if !command.is_empty() {
                    self.rejected = self.rejected.wrapping_add(1);
                }
                true
            }
            None => false,
        }
    }

    /// Sends a `kind` frame of `parts` and returns the payload of the reply
    /// if it is a `want` frame for this request; `None` on another reply
    /// (`LINK_DOWN`, `REFUSED`) or none within [`REPLY_POLLS`].
    fn request(&mut self, kind: u8, parts: &[&[u8]], want: u8) -> Option<&[u8]> {
        self.tag = self.tag.wrapping_add(1);
        let usart = &self.usart;
        // Every payload here is far below the frame's limit.
        let _ = link::write_frame(kind, self.tag, parts, |bytes| {
            for &b in bytes {
                while usart.ucsr0a().read().udre0().bit_is_clear() {}
                usart.udr0().write(|w| w.set(b));
            }
        });
        // Every poll counts, a received byte too: a line that never stops
        // sending cannot hold the board here either.
        let mut polls = REPLY_POLLS;
        loop {
            polls = polls.checked_sub(1)?;
            if self.usart.ucsr0a().read().rxc0().bit_is_clear() {
                continue;
            }
            match self.rx.push(self.usart.udr0().read().bits()) {
                Deframed::Pending => {}
                Deframed::Frame { kind, tag, .. } if tag == self.tag && kind == want => break,
                Deframed::Frame { tag, .. } if tag == self.tag => return None,
                _ => self.rejected = self.rejected.wrapping_add(1),
            }
        }
        // The frame the loop stopped at.
        Some(self.rx.payload())
    }

    /// One conversion of ADC0 against AVCC (10 bits).
    fn read_adc(&mut self) -> u16 {
        self.adc
            .adcsra()
            .write(|w| w.aden().set_bit().adsc().set_bit().adps().prescaler_128());
        while self.adc.adcsra().read().adsc().bit_is_set() {}
        self.adc.adc().read().bits()
    }

    /// The next handshake counter value: the EEPROM's first four bytes hold
    /// the next value (erased: 0), written and read back before the value is
    /// used, so no value is used twice, resets and power losses included.
    /// `None` when the counter is used up or the EEPROM does not keep what
    /// is written. (One write per handshake: at one handshake a day the
    /// EEPROM's 100,000 write cycles last centuries.)
    fn next_counter(&mut self) -> Option<u32> {
        let stored = u32::from_le_bytes([0, 1, 2, 3].map(|a| self.eeprom_read(a)));
        let value = if stored == u32::MAX { 0 } else { stored };
        let next = value.checked_add(1).filter(|&n| n != u32::MAX)?;
        for (a, b) in (0..4).zip(next.to_le_bytes()) {
            self.eeprom_write(a, b);
        }
        let kept = u32::from_le_bytes([0, 1, 2, 3].map(|a| self.eeprom_read(a)));
        (kept == next).then_some(value)
    }

    fn eeprom_read(&self, addr: u16) -> u8 {
        while self.eeprom.eecr().read().eepe().bit_is_set() {}
        // SAFETY: any address below the EEPROM's 4 KB.
        self.eeprom.eear().write(|w| unsafe { w.bits(addr) });
        self.eeprom.eecr().write(|w| w.eere().set_bit());
        self.eeprom.eedr().read().bits()
    }

    fn eeprom_write(&mut self, addr: u16, value: u8) {
        while self.eeprom.eecr().read().eepe().bit_is_set() {}
        // SAFETY: any address below the EEPROM's 4 KB, any byte.
        self.eeprom.eear().write(|w| unsafe { w.bits(addr) });
        self.eeprom.eedr().write(|w| unsafe { w.bits(value) });
        // EEMPE, then EEPE within four cycles (interrupts are off): erase
        // and write. `sbi` on EECR (I/O address 0x1F) is the only way to
        // meet the four cycles.
        // SAFETY: sets two bits of EECR; no memory, stack or flags touched.
        unsafe { core::arch::asm!("sbi 0x1F, 2", "sbi 0x1F, 1", options(nostack, preserves_flags)) };
        while self.eeprom.eecr().read().eepe().bit_is_set() {}
    }
}

/// Waits about `s` seconds.
fn delay_s(s: u32) {
    for _ in 0..s {
        avr_device::asm::delay_cycles(F_CPU);
    }
}

/// Stops for good: sleep with interrupts off.
#[cfg(hybrid)]
fn halt() -> ! {
    avr_device::interrupt::disable();
    loop {
        avr_device::asm::sleep();
    }
}
