//! A sensor board on a serial port as the bridge's [`RemoteSensor`]
//! (`kem-mqtt serial-bridge`): the board runs a sensor image with
//! provisioned keys (`cargo xtask flash --image mqtt-… --keys FILE`), and
//! everything secret stays on it.
//!
//! The bridge asks for the sensor's own start
//! ([`avr_wire::mqtt::OP_HELLO`]) with a fresh nonce from the operating
//! system; the board draws its randomness from its keys, its EEPROM counter
//! and that nonce. Then [`avr_wire::mqtt::OP_FINISH`] takes the
//! BrokerHello's first part and [`avr_wire::mqtt::OP_FINISH_REST`] the rest,
//! and gives back the ClientFinished and the first sealed reading.

use std::time::Duration;

use avr_wire::mqtt::{self as fw, Layout, HOST_NONCE_LEN, OP_FINISH, OP_FINISH_REST, OP_HELLO};
use kem_mqtt::Suite;

use crate::bridge::{Finished, Hello, RemoteSensor};

/// The sensor firmware's message lengths for `kem` (`avr_wire::mqtt`).
pub fn layout(kem: kem_mqtt::Scheme) -> Layout {
    Layout::of(kem)
}

/// A start reply (`OP_START`, `OP_HELLO`), read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartReply {
    /// 0, or a `avr_wire::mqtt::error_name` code (2: randomness exhausted, start again).
    pub status: u8,
    /// Randomness bytes the start drew.
    pub tape_used: usize,
    /// The ClientHello (empty unless `status` is 0).
    pub client_hello: Vec<u8>,
}

/// Reads a start reply of an image with `layout`: `status ‖ used u16 ‖ len u16 ‖ ClientHello (padded)`.
pub fn parse_start_reply(layout: Layout, reply: &[u8]) -> Result<StartReply, String> {
    if reply.len() != layout.start_reply_len() {
        return Err(format!(
            "a start reply of {} bytes, not {}: is the image for this KEM?",
            reply.len(),
            layout.start_reply_len()
        ));
    }
    let n = u16::from_le_bytes([reply[3], reply[4]]) as usize;
    Ok(StartReply {
        status: reply[0],
        tape_used: u16::from_le_bytes([reply[1], reply[2]]) as usize,
        client_hello: reply
            .get(5..5 + n)
            .ok_or_else(|| format!("the start reply announces a ClientHello of {n} bytes"))?
            .to_vec(),
    })
}

/// The finish's two requests of an image with `layout`, for
/// [`fw::FINISH_OPS`]: `len u16 ‖ part (padded)` each, the BrokerHello's
/// first [`Layout::broker_hello_head`] bytes and the rest.
pub fn finish_requests(layout: Layout, broker_hello: &[u8]) -> Result<[Vec<u8>; 2], String> {
    if broker_hello.len() > layout.max_broker_hello() {
        return Err(format!(
            "a BrokerHello of {} bytes, more than the {} the image takes",
            broker_hello.len(),
            layout.max_broker_hello()
        ));
    }
    let (head, rest) = broker_hello.split_at(broker_hello.len().min(layout.broker_hello_head()));
    let request = |part: &[u8], len: usize| {
        let mut r = (part.len() as u16).to_le_bytes().to_vec();
        r.extend_from_slice(part);
        r.resize(len, 0);
        r
    };
    Ok([
        request(head, layout.finish_request_len()),
        request(rest, layout.finish_rest_request_len()),
    ])
}

/// Reads the reply to the finish's first request ([`OP_FINISH`]): `status`.
pub fn parse_finish_head_reply(layout: Layout, reply: &[u8]) -> Result<(), String> {
    match reply {
        [0] if reply.len() == layout.finish_reply_len() => Ok(()),
        [s] => Err(format!(
            "finish (the BrokerHello's first part) answered status {s} ({})",
            fw::error_name(*s)
        )),
        _ => Err(format!(
            "a finish reply of {} bytes, not {}",
            reply.len(),
            layout.finish_reply_len()
        )),
    }
}

/// Reads the reply to the finish's second request ([`OP_FINISH_REST`]):
/// `status ‖ ClientFinished ‖ record`; the ClientFinished and the record,
/// or the status as an error.
pub fn parse_finish_reply(layout: Layout, reply: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    if reply.len() != layout.finish_rest_reply_len() {
        return Err(format!(
            "a finish reply of {} bytes, not {}",
            reply.len(),
            layout.finish_rest_reply_len()
        ));
    }
    match reply.split_first() {
        Some((0, rest)) => {
            let (cf, record) = rest.split_at(fw::CF_LEN);
            Ok((cf.to_vec(), record.to_vec()))
        }
        Some((&s, _)) => Err(format!(
            "finish (receive_broker_hello) answered status {s} ({})",
            fw::error_name(s)
        )),
        None => Err("an empty finish reply".into()),
    }
}

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
        let mut link = avr_serial::link(port);
        let ops = link.ping().map_err(|e| format!("{path}: {e}"))?;
        if !ops.contains(&OP_HELLO) || !ops.contains(&OP_FINISH) || !ops.contains(&OP_FINISH_REST) {
            return Err(format!(
                "{path}: the board's image is no sensor image with provisioned keys (no op 0x{OP_HELLO:02x}); \
                 flash one: cargo xtask flash --image mqtt-<kem>[-x25519] --keys SENSOR.json"
            ));
        }
        let empty = link.empty_window().map_err(|e| format!("{path}: {e}"))?;
        Ok(BoardSensor {
            empty,
            link,
            suite,
            layout: layout(suite.kem()),
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
            let r = parse_start_reply(self.layout, &reply)?;
            match r.status {
                0 => {
                    return Ok(Hello {
                        client_hello: r.client_hello,
                        note: self.cycles(),
                    })
                }
                2 if attempt < HELLO_ATTEMPTS => continue,
                s => return Err(format!("start answered status {s} ({})", fw::error_name(s))),
            }
        }
        Err(format!(
            "the board's start exhausted its randomness {HELLO_ATTEMPTS} times"
        ))
    }

    fn finish(&mut self, broker_hello: &[u8]) -> Result<Finished, String> {
        let [head, rest] = finish_requests(self.layout, broker_hello)?;
        let reply = self.link.call(OP_FINISH, &head).map_err(|e| e.to_string())?;
        parse_finish_head_reply(self.layout, &reply)?;
        let first = self.cycles();
        let reply = self.link.call(OP_FINISH_REST, &rest).map_err(|e| e.to_string())?;
        let (client_finished, record) = parse_finish_reply(self.layout, &reply)?;
        Ok(Finished {
            client_finished,
            record,
            note: format!("{first}{}", self.cycles().replacen(", ", "; then ", 1)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kem_mqtt::Scheme;

    #[test]
    fn replies_and_requests_have_the_firmware_layout() {
        let l = layout(Scheme::CtruLightAscon);
        let mut reply = vec![0u8; l.start_reply_len()];
        reply[1..5].copy_from_slice(&[160, 0, 3, 0]);
        reply[5..8].copy_from_slice(&[7, 8, 9]);
        let r = parse_start_reply(l, &reply).unwrap();
        assert_eq!((r.status, r.tape_used, r.client_hello), (0, 160, vec![7, 8, 9]));
        assert!(parse_start_reply(l, &reply[1..]).is_err());
        reply[3..5].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(
            parse_start_reply(l, &reply).is_err(),
            "a ClientHello longer than the reply"
        );

        let [head, rest] = finish_requests(l, &[1, 2, 3]).unwrap();
        assert_eq!((head.len(), &head[..5]), (l.finish_request_len(), &[3, 0, 1, 2, 3][..]));
        assert_eq!((rest.len(), &rest[..2]), (l.finish_rest_request_len(), &[0, 0][..]));
        let bh: Vec<u8> = (0..l.max_broker_hello()).map(|i| i as u8).collect();
        let [head, rest] = finish_requests(l, &bh).unwrap();
        let at = l.broker_hello_head();
        assert_eq!((&head[2..], &rest[2..]), (&bh[..at], &bh[at..]));
        assert!(finish_requests(l, &vec![0; l.max_broker_hello() + 1]).is_err());
        assert!(parse_finish_head_reply(l, &[0]).is_ok());
        assert!(parse_finish_head_reply(l, &[3]).unwrap_err().contains("invalid key"));
        assert!(parse_finish_head_reply(l, &[]).is_err());

        let mut fin = vec![0u8; l.finish_rest_reply_len()];
        fin[1] = 0xCF;
        let (cf, record) = parse_finish_reply(l, &fin).unwrap();
        assert_eq!((cf.len(), cf[0], record.len()), (fw::CF_LEN, 0xCF, fw::RECORD_LEN));
        fin[0] = 5;
        assert!(parse_finish_reply(l, &fin).unwrap_err().contains("BrokerFinished"));
        assert!(parse_finish_reply(l, &fin[1..]).is_err());
    }
}
