//! `cargo xtask mqtt --broker HOST:PORT --key FILE [--mode auth|topic]`: the
//! AVR sensor (the firmware in simavr, ATmega1284p) against a real MQTT
//! broker over TCP.
//!
//! The firmware computes everything the sensor computes: its ClientHello
//! ([`fw::OP_START`], with the keys of a `kem-mqtt provision` key file and
//! fresh randomness from the operating system), its ClientFinished and a
//! record sealing [`fw::PAYLOAD`] on [`fw::TOPIC`] ([`fw::OP_FINISH`]). The
//! host only carries those bytes over MQTT v5 ([`kem_mqtt_host::mqtt`]); it
//! never computes the sensor's cryptography.
//!
//! - AUTH mode (mosquitto with the project's plugin): CONNECT with the
//!   Authentication Method [`kem_mqtt::AUTH_METHOD`] and the ClientHello as
//!   Authentication Data; AUTH 0x18 brings the BrokerHello, AUTH 0x18 takes
//!   the ClientFinished back, CONNACK 0x00 establishes the session; then the
//!   record is published on [`fw::TOPIC`].
//! - Topic mode (a `kem-mqtt gateway` beside a plain broker): plain CONNECT,
//!   the flights as PUBLISH payloads on `kem-mqtt/hs/<id>/c2b` and `…/b2c`,
//!   the gateway's confirmation on `kem-mqtt/data/<id>/b2c`, then the record.
//!
//! The record's topic is its associated data and is compiled into the
//! firmware (`kem-mqtt/data/avr-1/c2b/t`), so the key file's client id must
//! be `avr-1`: another id is refused before anything runs.
//!
//! Every wait has a deadline ([`WAIT`]); every failure is a [`LiveError`].

use std::fmt;
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use firmware::mqtt::{self as fw, Layout};
use kem_mqtt::Suite;
use kem_mqtt_host::addr::BrokerAddr;
use kem_mqtt_host::keys::SensorKeys;
use kem_mqtt_host::mqtt::{self as wire, Connection, Packet};

use crate::device::Device;
use crate::kems::{self, Measured};
use crate::sensor;
use crate::target::Mcu;

/// How long each wait lasts: for the TCP connection, for each answer of the
/// broker or the gateway (simavr runs the sensor's KEM steps in a few
/// seconds, outside these waits).
pub const WAIT: Duration = Duration::from_secs(20);

/// Start requests tried before giving up: a CTRU-Light key generation that
/// retries (f not invertible) may exhaust the [`fw::TAPE_LEN`]-byte tape
/// (status 2), and then the start runs again with a new tape.
const START_ATTEMPTS: u32 = 5;

pub use kem_mqtt_host::Mode;

/// Why a live run failed.
#[derive(Debug)]
pub enum LiveError {
    /// Before any traffic: the MCU, the key file, the client id, the image.
    Setup(String),
    /// The simulated AVR: a failed call, or a step that answered an error status.
    Avr(String),
    /// No TCP connection to the broker.
    Connect {
        /// The broker.
        addr: String,
        /// The last address's error.
        error: std::io::Error,
    },
    /// Sending or receiving failed.
    Io {
        /// What was going on.
        during: String,
        /// The error.
        error: std::io::Error,
    },
    /// Nothing arrived in time.
    Timeout {
        /// What was awaited.
        waiting_for: String,
        /// For how long.
        after: Duration,
    },
    /// The broker closed the connection.
    Closed {
        /// What was awaited.
        waiting_for: String,
    },
    /// The broker refused: a CONNACK or SUBACK with a failure reason code.
    Refused {
        /// Which step.
        during: String,
        /// The reason code.
        reason: u8,
    },
    /// A packet that does not belong at this point of the exchange.
    Unexpected {
        /// What was awaited.
        waiting_for: String,
        /// What came.
        packet: String,
    },
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveError::Setup(s) => f.write_str(s),
            LiveError::Avr(s) => write!(f, "the AVR: {s}"),
            LiveError::Connect { addr, error } => write!(f, "cannot connect to the broker at {addr}: {error}"),
            LiveError::Io { during, error } => write!(f, "{during}: {error}"),
            LiveError::Timeout { waiting_for, after } => {
                write!(f, "timed out after {} s waiting for {waiting_for}", after.as_secs_f32())
            }
            LiveError::Closed { waiting_for } => {
                write!(f, "the broker closed the connection while we waited for {waiting_for}")
            }
            LiveError::Refused { during, reason } => {
                write!(
                    f,
                    "{during}: refused, reason code {reason:#04x} ({})",
                    reason_name(*reason)
                )
            }
            LiveError::Unexpected { waiting_for, packet } => {
                write!(f, "waiting for {waiting_for}, the broker sent {packet}")
            }
        }
    }
}

impl std::error::Error for LiveError {}

impl From<LiveError> for String {
    fn from(e: LiveError) -> String {
        e.to_string()
    }
}

/// MQTT v5 reason codes a broker refuses with.
fn reason_name(code: u8) -> &'static str {
    match code {
        0x00 => "success",
        0x18 => "continue authentication",
        0x80 => "unspecified error",
        0x81 => "malformed packet",
        0x82 => "protocol error",
        0x83 => "implementation specific error",
        0x84 => "unsupported protocol version",
        0x85 => "client identifier not valid",
        0x86 => "bad user name or password",
        0x87 => "not authorized",
        0x88 => "server unavailable",
        0x89 => "server busy",
        0x8A => "banned",
        0x8C => "bad authentication method",
        0x8F => "topic filter invalid",
        0x97 => "quota exceeded",
        _ => "see the MQTT v5 reason codes",
    }
}

/// A short description of a packet (no payload bytes).
fn describe(p: &Packet) -> String {
    match p {
        Packet::Connect { client_id, .. } => format!("CONNECT ({client_id})"),
        Packet::ConnAck { reason, .. } => format!("CONNACK {reason:#04x} ({})", reason_name(*reason)),
        Packet::Publish { topic, payload } => format!("PUBLISH on {topic} ({} B)", payload.len()),
        Packet::Subscribe { packet_id, .. } => format!("SUBSCRIBE (id {packet_id})"),
        Packet::SubAck { packet_id, reasons } => format!("SUBACK (id {packet_id}, {reasons:02x?})"),
        Packet::Auth { reason, auth_data, .. } => format!(
            "AUTH {reason:#04x} ({}, {} B of data)",
            reason_name(*reason),
            auth_data.as_ref().map_or(0, Vec::len)
        ),
        Packet::PingReq => "PINGREQ".into(),
        Packet::PingResp => "PINGRESP".into(),
        Packet::Disconnect { reason } => format!("DISCONNECT {reason:#04x} ({})", reason_name(*reason)),
    }
}

/// The record topic compiled into the firmware, as an MQTT topic name.
pub fn record_topic() -> Result<&'static str, LiveError> {
    std::str::from_utf8(fw::TOPIC)
        .map_err(|_| LiveError::Setup("firmware::mqtt::TOPIC is not UTF-8, so it is no MQTT topic".into()))
}

/// The client id the firmware's record topic names
/// (`kem-mqtt/data/<id>/c2b[/<sub>]`): the only id a live run can use.
pub fn firmware_client_id() -> Result<&'static str, LiveError> {
    let topic = record_topic()?;
    kem_mqtt_host::topics::parse_sealed_c2b(topic)
        .map(|(id, _)| id)
        .ok_or_else(|| {
            LiveError::Setup(format!(
                "firmware::mqtt::TOPIC {topic:?} is not a sealed sensor → broker topic (kem-mqtt/data/<id>/c2b[/<sub>])"
            ))
        })
}

/// Refuses keys whose client id is not the one the firmware's record topic names.
pub fn check_client_id(keys: &SensorKeys) -> Result<(), LiveError> {
    let want = firmware_client_id()?;
    if keys.client_id == want {
        return Ok(());
    }
    Err(LiveError::Setup(format!(
        "the key file is for client {:?}, but the AVR firmware seals its record on {} (firmware::mqtt::TOPIC), \
         and a record's topic is its associated data: the live run needs the client id {want:?} \
         (kem-mqtt provision --client {want} …)",
        keys.client_id,
        record_topic()?
    )))
}

/// The `OP_START` request: `suite ‖ id_len ‖ id[MAX_ID_LEN] ‖ kem_sk ‖
/// x25519_sk ‖ broker_kem_pk ‖ broker_x25519_pk ‖ tape` (see `firmware::mqtt`).
fn start_request(keys: &SensorKeys, tape: &[u8; fw::TAPE_LEN]) -> Result<Vec<u8>, LiveError> {
    let l = sensor::layout(keys.suite.kem());
    let id = keys.client_id.as_bytes();
    if id.len() > fw::MAX_ID_LEN {
        return Err(LiveError::Setup(format!(
            "client id of {} bytes > {}",
            id.len(),
            fw::MAX_ID_LEN
        )));
    }
    let mut r = Vec::with_capacity(l.start_request_len());
    r.push(keys.suite.id());
    r.push(id.len() as u8);
    r.extend_from_slice(id);
    r.resize(2 + fw::MAX_ID_LEN, 0);
    r.extend_from_slice(&keys.kem_sk);
    // Present in every key file; the firmware ignores it for pure suites.
    r.extend_from_slice(&*keys.x25519_sk);
    r.extend_from_slice(&keys.broker_kem_pk);
    r.extend_from_slice(&keys.broker_x25519_pk);
    r.extend_from_slice(tape);
    if r.len() != l.start_request_len() {
        return Err(LiveError::Setup(format!(
            "{}: start request of {} bytes, the firmware takes {}",
            keys.suite.name(),
            r.len(),
            l.start_request_len()
        )));
    }
    Ok(r)
}

/// Overwrites a buffer that held secrets.
fn wipe(buf: &mut [u8]) {
    buf.fill(0);
    std::hint::black_box(buf);
}

/// What the AVR's `start` produced.
struct Started {
    client_hello: Vec<u8>,
    measured: Measured,
    tape_used: usize,
    attempts: u32,
}

/// Runs `OP_START` with fresh tapes until the key generation fits one.
fn avr_start(dev: &mut Device, keys: &SensorKeys) -> Result<Started, LiveError> {
    let l = sensor::layout(keys.suite.kem());
    for attempt in 1..=START_ATTEMPTS {
        let mut tape = [0u8; fw::TAPE_LEN];
        rand_core::Rng::fill_bytes(&mut kem_mqtt_host::OsRng, &mut tape);
        let mut request = start_request(keys, &tape)?;
        wipe(&mut tape);
        let r = kems::measured(dev, fw::OP_START, |d| d.call(fw::OP_START, &request));
        wipe(&mut request);
        let (reply, measured) = r.map_err(LiveError::Avr)?;
        if reply.len() != l.start_reply_len() {
            return Err(LiveError::Avr(format!(
                "start reply of {} bytes, expected {} (is the image for {}?)",
                reply.len(),
                l.start_reply_len(),
                keys.suite.name()
            )));
        }
        match reply[0] {
            0 => {}
            2 if attempt < START_ATTEMPTS => {
                println!(
                    "live: AVR start #{attempt}: random tape exhausted (CTRU-Light key generation retried), \
                     {} cycles; again with a new tape",
                    measured.cycles
                );
                continue;
            }
            s => {
                return Err(LiveError::Avr(format!(
                    "start answered status {s} ({}) after {attempt} attempt(s)",
                    fw::error_name(s)
                )))
            }
        }
        let tape_used = u16::from_le_bytes([reply[1], reply[2]]) as usize;
        let n = u16::from_le_bytes([reply[3], reply[4]]) as usize;
        let client_hello = reply
            .get(5..5 + n)
            .ok_or_else(|| LiveError::Avr(format!("start reply announces a ClientHello of {n} bytes")))?
            .to_vec();
        return Ok(Started {
            client_hello,
            measured,
            tape_used,
            attempts: attempt,
        });
    }
    Err(LiveError::Avr(format!("start exhausted {START_ATTEMPTS} random tapes")))
}

/// What the AVR's `finish` produced.
struct Finished {
    client_finished: Vec<u8>,
    record: Vec<u8>,
    measured: Measured,
}

/// Runs `OP_FINISH` on the BrokerHello.
fn avr_finish(dev: &mut Device, l: Layout, broker_hello: &[u8]) -> Result<Finished, LiveError> {
    if broker_hello.len() > l.max_broker_hello() {
        return Err(LiveError::Avr(format!(
            "a BrokerHello of {} bytes, more than the {} this image takes",
            broker_hello.len(),
            l.max_broker_hello()
        )));
    }
    let mut request = (broker_hello.len() as u16).to_le_bytes().to_vec();
    request.extend_from_slice(broker_hello);
    request.resize(l.finish_request_len(), 0);
    let (reply, measured) =
        kems::measured(dev, fw::OP_FINISH, |d| d.call(fw::OP_FINISH, &request)).map_err(LiveError::Avr)?;
    if reply.len() != l.finish_reply_len() {
        return Err(LiveError::Avr(format!(
            "finish reply of {} bytes, expected {}",
            reply.len(),
            l.finish_reply_len()
        )));
    }
    if reply[0] != 0 {
        return Err(LiveError::Avr(format!(
            "finish (receive_broker_hello) answered status {} ({})",
            reply[0],
            fw::error_name(reply[0])
        )));
    }
    Ok(Finished {
        client_finished: reply[1..1 + fw::CF_LEN].to_vec(),
        record: reply[1 + fw::CF_LEN..].to_vec(),
        measured,
    })
}

/// One MQTT connection with a deadline on every wait.
struct Link {
    conn: Connection,
    wait: Duration,
}

impl Link {
    /// Connects to the first address of `broker` that answers within `wait`.
    fn open(broker: &BrokerAddr, wait: Duration) -> Result<Link, LiveError> {
        let mut last = std::io::Error::other("the address resolved to nothing");
        for a in broker.socket_addrs() {
            match TcpStream::connect_timeout(a, wait) {
                Ok(stream) => {
                    stream.set_write_timeout(Some(wait)).map_err(|error| LiveError::Io {
                        during: "setting the write timeout".into(),
                        error,
                    })?;
                    return Ok(Link {
                        conn: Connection::new(stream),
                        wait,
                    });
                }
                Err(e) => last = e,
            }
        }
        Err(LiveError::Connect {
            addr: broker.to_string(),
            error: last,
        })
    }

    fn send(&mut self, p: &Packet) -> Result<(), LiveError> {
        self.conn.send(p).map_err(|error| LiveError::Io {
            during: format!("sending {}", describe(p)),
            error,
        })
    }

    fn publish(&mut self, topic: &str, payload: &[u8]) -> Result<(), LiveError> {
        self.send(&Packet::Publish {
            topic: topic.into(),
            payload: payload.to_vec(),
        })
    }

    /// The next packet, before `deadline`.
    fn recv(&mut self, waiting_for: &str, deadline: Instant) -> Result<Packet, LiveError> {
        let wait = self.wait;
        let timeout = || LiveError::Timeout {
            waiting_for: waiting_for.into(),
            after: wait,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timeout());
        }
        self.conn.set_timeout(Some(left)).map_err(|error| LiveError::Io {
            during: "setting the read timeout".into(),
            error,
        })?;
        self.conn.recv().map_err(|error| match error.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => timeout(),
            std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted => LiveError::Closed {
                waiting_for: waiting_for.into(),
            },
            _ => LiveError::Io {
                during: format!("waiting for {waiting_for}"),
                error,
            },
        })
    }

    /// The payload of the next PUBLISH on `topic` (other PUBLISHes and
    /// PINGRESPs are skipped), within one [`Link::wait`].
    fn wait_publish(&mut self, topic: &str, waiting_for: &str) -> Result<Vec<u8>, LiveError> {
        let deadline = Instant::now() + self.wait;
        loop {
            match self.recv(waiting_for, deadline)? {
                Packet::Publish { topic: t, payload } if t == topic => return Ok(payload),
                Packet::Publish { .. } | Packet::PingResp => {}
                other => {
                    return Err(LiveError::Unexpected {
                        waiting_for: waiting_for.into(),
                        packet: describe(&other),
                    })
                }
            }
        }
    }

    /// Plain CONNECT (no enhanced authentication), CONNACK 0x00 expected.
    fn plain_connect(&mut self, client_id: &str) -> Result<(), LiveError> {
        self.send(&Packet::Connect {
            client_id: client_id.into(),
            keep_alive: 60,
            auth_method: None,
            auth_data: None,
        })?;
        let deadline = Instant::now() + self.wait;
        match self.recv("CONNACK", deadline)? {
            Packet::ConnAck {
                reason: wire::SUCCESS, ..
            } => Ok(()),
            Packet::ConnAck { reason, .. } => Err(LiveError::Refused {
                during: "plain CONNECT".into(),
                reason,
            }),
            other => Err(LiveError::Unexpected {
                waiting_for: "CONNACK".into(),
                packet: describe(&other),
            }),
        }
    }

    /// SUBSCRIBE at QoS 0, SUBACK without a failure expected.
    fn subscribe(&mut self, filters: &[&str]) -> Result<(), LiveError> {
        const ID: u16 = 1;
        self.send(&Packet::Subscribe {
            packet_id: ID,
            filters: filters.iter().map(|f| f.to_string()).collect(),
        })?;
        let deadline = Instant::now() + self.wait;
        loop {
            match self.recv("SUBACK", deadline)? {
                Packet::SubAck { packet_id: ID, reasons } => {
                    return match reasons.iter().find(|r| **r >= 0x80) {
                        Some(&reason) => Err(LiveError::Refused {
                            during: format!("SUBSCRIBE {filters:?}"),
                            reason,
                        }),
                        None => Ok(()),
                    };
                }
                Packet::Publish { .. } | Packet::PingResp => {}
                other => {
                    return Err(LiveError::Unexpected {
                        waiting_for: "SUBACK".into(),
                        packet: describe(&other),
                    })
                }
            }
        }
    }

    /// DISCONNECT (normal); the connection closes when the link is dropped.
    fn disconnect(mut self) -> Result<(), LiveError> {
        self.send(&Packet::Disconnect { reason: 0 })
    }
}

/// The image of `mcu` that serves `suite`.
fn image_for(mcu: Mcu, suite: Suite) -> Result<crate::target::Image, LiveError> {
    sensor::images(mcu, "")
        .into_iter()
        .find(|i| sensor::suites_of(i).contains(&suite))
        .ok_or_else(|| LiveError::Setup(format!("no KEM-MQTT image of {} serves {}", mcu.name, suite.name())))
}

/// `cargo xtask mqtt --broker … --key … [--mode …]`: loads the key file,
/// builds (unless `no_build`) and opens the image that serves its suite, and
/// runs the handshake and the record against the broker at `broker`.
pub fn cmd(mcu: Mcu, broker: &BrokerAddr, key: &Path, mode: Mode, no_build: bool) -> Result<(), String> {
    if !(mcu.simulated && mcu.name == "atmega1284p") {
        return Err(format!(
            "--broker runs the sensor in simavr, which simulates the atmega1284p, not the {} \
             (its yasimavr run is batch-mode and cannot wait for a broker's answer)",
            mcu.name
        ));
    }
    let keys = SensorKeys::load(key)
        .map_err(|e| format!("--key {}: {e} (write one with `kem-mqtt provision`)", key.display()))?;
    run_on_image(mcu, &keys, broker, mode, no_build)
}

/// Builds (unless `no_build`) and opens the image of `mcu` that serves the
/// suite of `keys`, runs [`run`] on it and closes the simulator, whatever
/// happened on the network.
pub fn run_on_image(
    mcu: Mcu,
    keys: &SensorKeys,
    broker: &BrokerAddr,
    mode: Mode,
    no_build: bool,
) -> Result<(), String> {
    check_client_id(keys)?;
    let image = image_for(mcu, keys.suite)?;
    if no_build && !image.elf(mcu).exists() {
        return Err(format!(
            "--no-build, and {} is not built (cargo xtask build-avr --mcu {} --image {})",
            image.name, mcu.name, image.name
        ));
    }
    let elf = crate::avr::image_elf(mcu, &image, no_build)?;
    let mut dev = Device::open(&elf, mcu.name)?;
    println!(
        "live: {} as {} ({}), broker {broker}, image {} on the simulated {}",
        keys.suite.name(),
        keys.client_id,
        mode,
        image.name,
        mcu.name
    );
    let result = run(&mut dev, keys, broker, mode, WAIT);
    let closed = dev.close();
    result?;
    closed
}

/// The live handshake and record of `keys` on `dev` against `broker`.
pub fn run(
    dev: &mut Device,
    keys: &SensorKeys,
    broker: &BrokerAddr,
    mode: Mode,
    wait: Duration,
) -> Result<(), LiveError> {
    check_client_id(keys)?;
    let topic = record_topic()?;
    let id = keys.client_id.as_str();
    let l = sensor::layout(keys.suite.kem());

    let s = avr_start(dev, keys)?;
    println!(
        "live: AVR start: ClientHello {} B, {} cycles, stack {} B, {} tape bytes{}",
        s.client_hello.len(),
        s.measured.cycles,
        s.measured.stack,
        s.tape_used,
        if s.attempts > 1 {
            format!(" (attempt {})", s.attempts)
        } else {
            String::new()
        }
    );
    let mut link = Link::open(broker, wait)?;
    let broker_hello = match mode {
        Mode::Auth => {
            link.send(&Packet::Connect {
                client_id: id.into(),
                keep_alive: 60,
                auth_method: Some(kem_mqtt::AUTH_METHOD.into()),
                auth_data: Some(s.client_hello.clone()),
            })?;
            let waiting = "AUTH 0x18 with the BrokerHello";
            let bh = match link.recv(waiting, Instant::now() + wait)? {
                Packet::Auth {
                    reason: wire::CONTINUE_AUTHENTICATION,
                    auth_data: Some(d),
                    ..
                } => d,
                Packet::ConnAck { reason, .. } => {
                    return Err(LiveError::Refused {
                        during: format!("CONNECT with the ClientHello ({})", kem_mqtt::AUTH_METHOD),
                        reason,
                    })
                }
                other => {
                    return Err(LiveError::Unexpected {
                        waiting_for: waiting.into(),
                        packet: describe(&other),
                    })
                }
            };
            println!(
                "live: CONNECT (method {}, ClientHello {} B) → AUTH 0x18, BrokerHello {} B",
                kem_mqtt::AUTH_METHOD,
                s.client_hello.len(),
                bh.len()
            );
            bh
        }
        Mode::Topic => {
            link.plain_connect(id)?;
            let (hs_b2c, data_b2c) = (kem_mqtt_host::hs_b2c(id), kem_mqtt_host::data_b2c(id));
            link.subscribe(&[&hs_b2c, &data_b2c])?;
            link.publish(&kem_mqtt_host::hs_c2b(id), &s.client_hello)?;
            let bh = link.wait_publish(
                &hs_b2c,
                &format!("the BrokerHello on {hs_b2c} (is a kem-mqtt gateway running?)"),
            )?;
            println!(
                "live: CONNECT, SUBSCRIBE {hs_b2c} + {data_b2c}, PUBLISH ClientHello {} B on {} → BrokerHello {} B",
                s.client_hello.len(),
                kem_mqtt_host::hs_c2b(id),
                bh.len()
            );
            bh
        }
    };

    let f = avr_finish(dev, l, &broker_hello)?;
    println!(
        "live: AVR finish: BrokerFinished verified, ClientFinished {} B, record {} B sealed on {topic}, {} cycles, stack {} B",
        f.client_finished.len(),
        f.record.len(),
        f.measured.cycles,
        f.measured.stack
    );

    match mode {
        Mode::Auth => {
            link.send(&Packet::Auth {
                reason: wire::CONTINUE_AUTHENTICATION,
                auth_method: Some(kem_mqtt::AUTH_METHOD.into()),
                auth_data: Some(f.client_finished.clone()),
            })?;
            let waiting = "CONNACK after the ClientFinished";
            match link.recv(waiting, Instant::now() + wait)? {
                Packet::ConnAck {
                    reason: wire::SUCCESS, ..
                } => {}
                Packet::ConnAck { reason, .. } => {
                    return Err(LiveError::Refused {
                        during: "AUTH with the ClientFinished".into(),
                        reason,
                    })
                }
                other => {
                    return Err(LiveError::Unexpected {
                        waiting_for: waiting.into(),
                        packet: describe(&other),
                    })
                }
            }
            println!(
                "live: AUTH 0x18 (ClientFinished {} B) → CONNACK 0x00: session established",
                f.client_finished.len()
            );
        }
        Mode::Topic => {
            let hs_c2b = kem_mqtt_host::hs_c2b(id);
            let data_b2c = kem_mqtt_host::data_b2c(id);
            link.publish(&hs_c2b, &f.client_finished)?;
            // The gateway's confirmation is the session's first b2c record,
            // which only a gateway that verified this ClientFinished can
            // seal. The AVR image has no op to open records and the host
            // does not hold the session keys (they live on the AVR), so any
            // PUBLISH on that topic counts; without one the gateway holds no
            // session and the record would be lost.
            let confirmation = link.wait_publish(
                &data_b2c,
                &format!("the gateway's confirmation on {data_b2c} (it dropped or refused the ClientFinished?)"),
            )?;
            println!(
                "live: PUBLISH ClientFinished {} B on {hs_c2b} → confirmation {} B on {data_b2c}: session established",
                f.client_finished.len(),
                confirmation.len()
            );
        }
    }

    link.publish(topic, &f.record)?;
    println!(
        "live: PUBLISH {topic}: record {} B sealed on the AVR (sequence {}), plaintext {:?}",
        f.record.len(),
        f.record
            .first_chunk::<{ kem_mqtt::SEQ_LEN }>()
            .map_or(0, |s| u64::from_be_bytes(*s)),
        String::from_utf8_lossy(fw::PAYLOAD)
    );
    link.disconnect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_firmware_topic_names_the_live_client() {
        assert_eq!(record_topic().unwrap(), "kem-mqtt/data/avr-1/c2b/t");
        assert_eq!(firmware_client_id().unwrap(), "avr-1");
        assert_eq!(
            kem_mqtt_host::topics::parse_sealed_c2b(record_topic().unwrap()),
            Some(("avr-1", "t"))
        );
        assert!(fw::TOPIC.len() <= kem_mqtt::MAX_TOPIC_LEN);
    }

    fn keys(id: &str, suite: Suite) -> SensorKeys {
        let kem = suite.kem();
        SensorKeys {
            client_id: id.into(),
            suite,
            kem_sk: vec![1; kem.sk_len()].into(),
            kem_pk: vec![2; kem.pk_len()],
            x25519_sk: [3; 32].into(),
            x25519_pk: [4; 32],
            broker_kem_pk: vec![5; kem.pk_len()],
            broker_x25519_pk: [6; 32],
        }
    }

    #[test]
    fn start_requests_have_the_firmware_layout_and_other_ids_are_refused() {
        for suite in Suite::ALL {
            let k = keys("avr-1", suite);
            let r = start_request(&k, &[7; fw::TAPE_LEN]).unwrap();
            let l = sensor::layout(suite.kem());
            assert_eq!(r.len(), l.start_request_len(), "{}", suite.name());
            assert_eq!(&r[..7], &[suite.id(), 5, b'a', b'v', b'r', b'-', b'1']);
            assert_eq!(r[2 + fw::MAX_ID_LEN], 1, "the KEM secret key follows the padded id");
            assert_eq!(r[l.start_request_len() - fw::TAPE_LEN - 1], 6);
            check_client_id(&k).unwrap();
        }
        let e = check_client_id(&keys("s1", Suite::ALL[0])).unwrap_err().to_string();
        assert!(e.contains("\"s1\"") && e.contains("\"avr-1\""), "{e}");
    }

    /// A broker that accepts the connection and says nothing: every wait
    /// ends with a timeout error, not a hang or a panic.
    #[test]
    fn a_silent_broker_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr: BrokerAddr = listener.local_addr().unwrap().to_string().parse().unwrap();
        let mut link = Link::open(&addr, Duration::from_millis(200)).unwrap();
        let _peer = listener.accept().unwrap();
        let e = link.plain_connect("avr-1").unwrap_err();
        assert!(matches!(e, LiveError::Timeout { .. }), "{e}");
        let e = link.wait_publish("x", "the BrokerHello").unwrap_err().to_string();
        assert!(e.contains("timed out") && e.contains("the BrokerHello"), "{e}");
    }

    /// A broker that closes the connection is reported as such.
    #[test]
    fn a_closed_connection_is_reported() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr: BrokerAddr = listener.local_addr().unwrap().to_string().parse().unwrap();
        let mut link = Link::open(&addr, Duration::from_secs(5)).unwrap();
        drop(listener.accept().unwrap());
        let e = link.plain_connect("avr-1").unwrap_err();
        assert!(matches!(e, LiveError::Closed { .. } | LiveError::Io { .. }), "{e}");
    }
}
