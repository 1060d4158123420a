//! An embedded MQTT v5 broker for demos and tests: CONNECT, SUBSCRIBE
//! (QoS 0, `+`/`#` wildcards), PUBLISH (QoS 0), PING, DISCONNECT, on
//! 127.0.0.1 with a free port. Optionally it requires KEM-MQTT/1 enhanced
//! authentication (AUTH mode), like the mosquitto plugin.

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::OsRng;
use kem_mqtt::{BrokerHandshake, AUTH_METHOD};

use crate::keys::BrokerState;
use crate::mqtt::{self, Connection, Packet};

type Writer = Arc<Mutex<TcpStream>>;

#[derive(Default)]
struct Shared {
    /// connection id → (writer, subscriptions)
    clients: Mutex<HashMap<u64, (Writer, Vec<String>)>>,
    stop: AtomicBool,
}

/// A running embedded broker; stopped on [`EmbeddedBroker::stop`] or drop.
pub struct EmbeddedBroker {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl EmbeddedBroker {
    /// Starts a broker on 127.0.0.1 with an OS-assigned port. With `auth`,
    /// every client must complete a KEM-MQTT/1 handshake in CONNECT/AUTH.
    pub fn start(auth: Option<Arc<BrokerState>>) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let sh = shared.clone();
        let accept = std::thread::Builder::new().name("mqtt-accept".into()).spawn(move || {
            let next = AtomicU64::new(1);
            for stream in listener.incoming() {
                if sh.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let id = next.fetch_add(1, Ordering::SeqCst);
                let (sh, auth) = (sh.clone(), auth.clone());
                let _ = std::thread::Builder::new()
                    .name(format!("mqtt-conn-{id}"))
                    .spawn(move || {
                        let _ = serve(id, stream, &sh, auth.as_deref());
                        sh.clients.lock().map(|mut c| c.remove(&id)).ok();
                    });
            }
        })?;
        Ok(EmbeddedBroker {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes every connection and joins the accept thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Ok(clients) = self.shared.clients.lock() {
            for (w, _) in clients.values() {
                if let Ok(s) = w.lock() {
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
        }
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

impl Drop for EmbeddedBroker {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn send(w: &Writer, p: &Packet) -> io::Result<()> {
    use std::io::Write;
    let bytes = p.encode();
    w.lock().map_err(|_| io::Error::other("poisoned"))?.write_all(&bytes)
}

fn connack(conn: &mut Connection, reason: u8) -> io::Result<()> {
    conn.send(&Packet::ConnAck {
        reason,
        auth_method: None,
        auth_data: None,
    })
}

/// Runs the KEM-MQTT/1 exchange inside CONNECT/AUTH; returns the CONNACK reason.
fn authenticate(
    conn: &mut Connection,
    state: &BrokerState,
    method: Option<String>,
    data: Option<Vec<u8>>,
) -> io::Result<u8> {
    if method.as_deref() != Some(AUTH_METHOD) {
        return Ok(mqtt::BAD_AUTHENTICATION_METHOD);
    }
    let mut buf = vec![0u8; kem_mqtt::MAX_BROKER_HELLO_LEN];
    let Ok((pending, n)) = BrokerHandshake::accept(state, &data.unwrap_or_default(), &mut OsRng, &mut buf) else {
        return Ok(mqtt::NOT_AUTHORIZED);
    };
    conn.send(&Packet::Auth {
        reason: mqtt::CONTINUE_AUTHENTICATION,
        auth_method: Some(AUTH_METHOD.into()),
        auth_data: Some(buf[..n].to_vec()),
    })?;
    match conn.recv()? {
        Packet::Auth {
            reason: mqtt::CONTINUE_AUTHENTICATION,
            auth_method: Some(m),
            auth_data: Some(cf),
        } if m == AUTH_METHOD => Ok(match pending.receive_client_finished(&cf) {
            Ok(_session) => mqtt::SUCCESS,
            Err(_) => mqtt::NOT_AUTHORIZED,
        }),
        Packet::Auth {
            auth_method: Some(m), ..
        } if m != AUTH_METHOD => Ok(mqtt::BAD_AUTHENTICATION_METHOD),
        _ => Ok(mqtt::NOT_AUTHORIZED),
    }
}

fn serve(id: u64, stream: TcpStream, sh: &Shared, auth: Option<&BrokerState>) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let writer: Writer = Arc::new(Mutex::new(stream.try_clone()?));
    let mut conn = Connection::new(stream);
    match conn.recv()? {
        Packet::Connect {
            auth_method, auth_data, ..
        } => {
            let reason = match (auth, auth_method) {
                (None, None) => mqtt::SUCCESS,
                (None, Some(_)) => mqtt::BAD_AUTHENTICATION_METHOD,
                (Some(_), None) => mqtt::NOT_AUTHORIZED,
                (Some(state), method) => authenticate(&mut conn, state, method, auth_data)?,
            };
            connack(&mut conn, reason)?;
            if reason != mqtt::SUCCESS {
                return Ok(());
            }
        }
        _ => return Ok(()),
    }
    sh.clients
        .lock()
        .map_err(|_| io::Error::other("poisoned"))?
        .insert(id, (writer.clone(), vec![]));
    loop {
        match conn.recv()? {
            Packet::Subscribe { packet_id, filters } => {
                let n = filters.len();
                if let Ok(mut c) = sh.clients.lock() {
                    if let Some(entry) = c.get_mut(&id) {
                        entry.1.extend(filters);
                    }
                }
                send(
                    &writer,
                    &Packet::SubAck {
                        packet_id,
                        reasons: vec![0; n],
                    },
                )?;
            }
            Packet::Publish { topic, payload } => {
                let targets: Vec<Writer> = sh
                    .clients
                    .lock()
                    .map_err(|_| io::Error::other("poisoned"))?
                    .values()
                    .filter(|(_, subs)| subs.iter().any(|f| mqtt::topic_matches(f, &topic)))
                    .map(|(w, _)| w.clone())
                    .collect();
                let p = Packet::Publish { topic, payload };
                for w in targets {
                    let _ = send(&w, &p);
                }
            }
            Packet::PingReq => send(&writer, &Packet::PingResp)?,
            Packet::Disconnect { .. } => return Ok(()),
            _ => return Ok(()),
        }
    }
}
