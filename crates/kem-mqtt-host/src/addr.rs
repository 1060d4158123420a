//! Broker addresses as people type them: `HOST`, `HOST:PORT`, an IPv6
//! address bare (`::1`) or in brackets (`[::1]`, `[::1]:PORT`); the port is
//! [`DEFAULT_PORT`] (1883, MQTT without TLS) when none is given.
//!
//! Parsing checks the form first (so garbage is refused without a DNS
//! query) and then resolves the host with [`ToSocketAddrs`]: a name that
//! does not resolve is refused before any key file is read.

use std::fmt;
use std::net::{Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::str::FromStr;

/// The MQTT port used when an address names none.
pub const DEFAULT_PORT: u16 = 1883;

/// A broker address: the host as given, the port, and what the host resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerAddr {
    host: String,
    port: u16,
    addrs: Vec<SocketAddr>,
}

/// Why a broker address was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum AddrError {
    /// Nothing, or nothing before the port.
    NoHost,
    /// A host name with characters a host name cannot have.
    BadHost(String),
    /// `[` without a matching `]` and optional `:PORT`, or not an IPv6 address inside.
    BadBrackets(String),
    /// A port that is not a number in 1..=65535.
    BadPort(String),
    /// The host did not resolve.
    Resolve {
        /// The host.
        host: String,
        /// What the resolver said.
        error: std::io::Error,
    },
    /// The host resolved to no address.
    NoAddress(String),
}

impl fmt::Display for AddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddrError::NoHost => f.write_str("no host (expected HOST, HOST:PORT or [IPv6]:PORT)"),
            AddrError::BadHost(h) => write!(
                f,
                "{h:?} is not a host name or address (letters, digits, '-', '.', '_'; an IPv6 address with a port goes in brackets: [::1]:1883)"
            ),
            AddrError::BadBrackets(s) => write!(f, "{s:?}: expected [IPv6] or [IPv6]:PORT"),
            AddrError::BadPort(p) => write!(f, "port {p:?} is not a number in 1..=65535"),
            AddrError::Resolve { host, error } => write!(f, "cannot resolve {host:?}: {error}"),
            AddrError::NoAddress(h) => write!(f, "{h:?} resolves to no address"),
        }
    }
}

impl std::error::Error for AddrError {}

fn parse_port(p: &str) -> Result<u16, AddrError> {
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(AddrError::BadPort(p.to_string())),
        Ok(n) => Ok(n),
    }
}

fn host_name_ok(h: &str) -> bool {
    h.len() <= 253
        && !h.starts_with('-')
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

/// Splits `s` into host and port, checking the form only (no resolution).
fn split(s: &str) -> Result<(String, u16), AddrError> {
    if let Some(rest) = s.strip_prefix('[') {
        let bad = || AddrError::BadBrackets(s.to_string());
        let (inside, after) = rest.split_once(']').ok_or_else(bad)?;
        inside.parse::<Ipv6Addr>().map_err(|_| bad())?;
        let port = match after {
            "" => DEFAULT_PORT,
            _ => parse_port(after.strip_prefix(':').ok_or_else(bad)?)?,
        };
        return Ok((inside.to_string(), port));
    }
    if s.parse::<Ipv6Addr>().is_ok() {
        return Ok((s.to_string(), DEFAULT_PORT));
    }
    let (host, port) = match s.split_once(':') {
        Some((host, port)) if !port.contains(':') => (host, parse_port(port)?),
        // Several colons and not an IPv6 address.
        Some(_) => return Err(AddrError::BadHost(s.to_string())),
        None => (s, DEFAULT_PORT),
    };
    if host.is_empty() {
        return Err(AddrError::NoHost);
    }
    if !host_name_ok(host) {
        return Err(AddrError::BadHost(host.to_string()));
    }
    Ok((host.to_string(), port))
}

impl BrokerAddr {
    /// The host as given (an IPv6 address without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the host resolved to when the address was parsed, each with the port.
    pub fn socket_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }
}

impl FromStr for BrokerAddr {
    type Err = AddrError;

    fn from_str(s: &str) -> Result<Self, AddrError> {
        let (host, port) = split(s)?;
        let addrs: Vec<SocketAddr> = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|error| AddrError::Resolve {
                host: host.clone(),
                error,
            })?
            .collect();
        if addrs.is_empty() {
            return Err(AddrError::NoAddress(host));
        }
        Ok(BrokerAddr { host, port, addrs })
    }
}

/// `HOST:PORT`, with an IPv6 address in brackets: what [`std::net::TcpStream::connect`]
/// takes (it tries every address the host resolves to).
impl fmt::Display for BrokerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}
