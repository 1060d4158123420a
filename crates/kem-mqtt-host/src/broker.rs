//! An embedded MQTT v5 broker for the demo and the tests: `rumqttd`, a
//! maintained broker written in Rust, in this process, listening on
//! 127.0.0.1 (topic mode: no ACL, no plugin; anyone may publish anything).
//!
//! It is also this project's second broker implementation: the topic-mode
//! tests of this crate (`tests/loopback.rs`, `tests/gateway.rs`,
//! `tests/cli.rs`) run the gateway, sensors and applications through it,
//! and `crates/mosquitto-kem-plugin/tests/topic_mode.rs` runs them through
//! mosquitto. What the design needs of a broker, and what each was tested
//! with, is in `docs/gateway.md`.
//!
//! `rumqttd` 0.20 has no way to stop a running broker: it serves until the
//! process ends ([`EmbeddedBroker::stop`] only forgets it).

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A running embedded broker.
#[derive(Debug)]
pub struct EmbeddedBroker {
    addr: SocketAddr,
}

/// The broker's configuration: one MQTT v5 listener on `addr`.
fn config(addr: SocketAddr) -> rumqttd::Config {
    let connections = rumqttd::ConnectionSettings {
        connection_timeout_ms: 60_000,
        max_payload_size: 256 * 1024,
        max_inflight_count: 200,
        auth: None,
        external_auth: None,
        dynamic_filters: true,
    };
    let server = rumqttd::ServerSettings {
        name: "kem-mqtt-embedded".into(),
        listen: addr,
        tls: None,
        next_connection_delay_ms: 0,
        connections,
    };
    rumqttd::Config {
        id: 0,
        router: rumqttd::RouterConfig {
            max_connections: 10_010,
            max_outgoing_packet_count: 1_000,
            max_segment_size: 16 * 1024 * 1024,
            max_segment_count: 10,
            ..Default::default()
        },
        v5: Some([("1".to_string(), server)].into_iter().collect()),
        ..Default::default()
    }
}

impl EmbeddedBroker {
    /// Starts a broker on 127.0.0.1 on a free port and waits (at most 10 s)
    /// until it accepts connections.
    pub fn start() -> io::Result<Self> {
        // A free port: the OS picks one for a listener we then close; the
        // broker binds it right after (rumqttd cannot report the port it
        // would pick itself).
        let addr = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let mut broker = rumqttd::Broker::new(config(addr));
        std::thread::Builder::new()
            .name("rumqttd".into())
            // It returns only on an error (it cannot bind, say): then the
            // wait below reports that nothing listens.
            .spawn(move || broker.start().map_err(|e| e.to_string()))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the embedded broker did not listen on {addr}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(EmbeddedBroker { addr })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Forgets the broker (it serves until the process ends: see the
    /// module documentation).
    pub fn stop(self) {}
}
