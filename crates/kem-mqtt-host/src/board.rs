//! A sensor board on a serial port as the bridge's [`RemoteSensor`]
//! (`kem-mqtt serial-bridge`): the board runs a sensor image with
//! provisioned keys (`cargo xtask flash --image mqtt-… --keys FILE`), and
//! everything secret stays on it.
//!
//! The bridge asks for the sensor's own start
//! ([`firmware::mqtt::OP_HELLO`]) with a fresh nonce from the operating
//! system; the board draws its randomness from its keys, its EEPROM counter
//! and that nonce. Then [`firmware::mqtt::OP_FINISH`] takes the BrokerHello
//! and gives back the ClientFinished and the first sealed reading.

use std::time::Duration;

use firmware::mqtt::{self as fw, Layout, HOST_NONCE_LEN, OP_FINISH, OP_HELLO};
use kem_mqtt::Suite;

use crate::bridge::{Finished, Hello, RemoteSensor};

/// Starts tried before giving up: a CTRU-Light key generation that retries
/// may exhaust the board's randomness tape (status 2); the next start
/// draws a new one (the counter moved on).
const HELLO_ATTEMPTS: u32 = 5;

/// The board, running a provisioned sensor image.
pub struct BoardSensor {
    link: avr_serial::Link<Box<dyn avr_serial::serialport::SerialPort>>,
    suite: Suite,
    layout: Layout,
    /// The timers' count of an empty window, subtracted from each step's.
    empty: u64,
}

impl BoardSensor {
    /// Opens the board on serial port `path` at `baud`, checks that it runs
    /// a sensor image with provisioned keys, and will run `suite` on it.
    /// `timeout` bounds each answer (a hybrid start takes ~1 s at 20 MHz).
    pub fn open(path: &str, baud: u32, suite: Suite, timeout: Duration) -> Result<BoardSensor, String> {
        let port = avr_serial::open(path, baud, timeout).map_err(|e| e.to_string())?;
        let mut link = avr_serial::Link::new(port);
        let ops = link.ping().map_err(|e| format!("{path}: {e}"))?;
        if !ops.contains(&OP_HELLO) || !ops.contains(&OP_FINISH) {
            return Err(format!(
                "{path}: the board's image is no sensor image with provisioned keys (no op 0x{OP_HELLO:02x}); \
                 flash one: cargo xtask flash --image mqtt-<kem>[-x25519] --keys SENSOR.json"
            ));
        }
        let kem = suite.kem();
        let empty = link.empty_window().map_err(|e| format!("{path}: {e}"))?;
        Ok(BoardSensor {
            empty,
            link,
            suite,
            layout: Layout {
                pk: kem.pk_len(),
                sk: kem.sk_len(),
                ct: kem.ct_len(),
            },
        })
    }

    /// The on-chip timers' count of the board's last step.
    fn cycles(&mut self) -> String {
        match self.link.timer_cycles() {
            Ok(c) => format!(", {} cycles on the board", c.saturating_sub(self.empty)),
            Err(e) => format!(" (no cycle count: {e})"),
        }
    }
}

impl RemoteSensor for BoardSensor {
    fn hello(&mut self) -> Result<Hello, String> {
        for attempt in 1..=HELLO_ATTEMPTS {
            let mut request = vec![self.suite.id()];
            let mut nonce = [0u8; HOST_NONCE_LEN];
            rand_core::Rng::fill_bytes(&mut crate::OsRng, &mut nonce);
            request.extend_from_slice(&nonce);
            let reply = self.link.call(OP_HELLO, &request).map_err(|e| e.to_string())?;
            if reply.len() != self.layout.start_reply_len() {
                return Err(format!(
                    "a start reply of {} bytes, not {}: is the board's image for {}?",
                    reply.len(),
                    self.layout.start_reply_len(),
                    self.suite.name()
                ));
            }
            match reply[0] {
                0 => {}
                2 if attempt < HELLO_ATTEMPTS => continue,
                s => return Err(format!("start answered status {s} ({})", fw::error_name(s))),
            }
            let n = u16::from_le_bytes([reply[3], reply[4]]) as usize;
            let client_hello = reply
                .get(5..5 + n)
                .ok_or_else(|| format!("the start reply announces a ClientHello of {n} bytes"))?
                .to_vec();
            return Ok(Hello {
                client_hello,
                note: self.cycles(),
            });
        }
        Err(format!(
            "the board's start exhausted its randomness {HELLO_ATTEMPTS} times"
        ))
    }

    fn finish(&mut self, broker_hello: &[u8]) -> Result<Finished, String> {
        if broker_hello.len() > self.layout.max_broker_hello() {
            return Err(format!(
                "a BrokerHello of {} bytes, more than the {} the board takes",
                broker_hello.len(),
                self.layout.max_broker_hello()
            ));
        }
        let mut request = (broker_hello.len() as u16).to_le_bytes().to_vec();
        request.extend_from_slice(broker_hello);
        request.resize(self.layout.finish_request_len(), 0);
        let reply = self.link.call(OP_FINISH, &request).map_err(|e| e.to_string())?;
        match reply.split_first() {
            Some((0, rest)) if rest.len() > fw::CF_LEN => {
                let (cf, record) = rest.split_at(fw::CF_LEN);
                Ok(Finished {
                    client_finished: cf.to_vec(),
                    record: record.to_vec(),
                    note: self.cycles(),
                })
            }
            Some((&s, _)) if s != 0 => Err(format!("finish answered status {s} ({})", fw::error_name(s))),
            _ => Err(format!("a finish reply of {} bytes", reply.len())),
        }
    }
}
