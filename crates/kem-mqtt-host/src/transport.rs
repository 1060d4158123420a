//! How a client reaches the broker: an address, and TLS or not.
//!
//! KEM-MQTT/1 authenticates the sensor to the broker side and protects
//! what a record carries; it does not hide metadata (client ids, topics,
//! sizes) nor protect the MQTT packets around the records. A TLS listener
//! does: [`Endpoint::tls`] connects with rustls (the `ring` provider),
//! checking the broker's certificate against the CA certificates of a PEM
//! file and the host name (or IP address) of the broker address, as any
//! TLS client does (SECURITY.md, "What each layer covers").

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::HostError;

/// TLS to the broker: the CA certificates the broker's certificate must
/// chain to (it must also be valid for the host of the broker address).
#[derive(Clone)]
pub struct Tls {
    /// The rustls client configuration (CA roots, the `ring` provider).
    pub config: Arc<rustls::ClientConfig>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Tls {
    /// TLS that trusts the CA certificates in the PEM file `ca`. Errors
    /// name the file.
    pub fn from_ca_file(ca: &Path) -> Result<Tls, HostError> {
        let bad = |what: String| HostError::Unexpected(format!("{}: {what}", ca.display()));
        let mut roots = rustls::RootCertStore::empty();
        let certs = CertificateDer::pem_file_iter(ca).map_err(|e| bad(e.to_string()))?;
        for cert in certs {
            let cert = cert.map_err(|e| bad(e.to_string()))?;
            roots.add(cert).map_err(|e| bad(e.to_string()))?;
        }
        if roots.is_empty() {
            return Err(bad("no CA certificate in the file".into()));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Tls {
            config: Arc::new(config),
        })
    }
}

/// The MQTT version a broker speaks to topic-mode clients
/// ([`crate::client::MqttClient`]). AUTH mode is MQTT v5 only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MqttVersion {
    /// MQTT v5 (mosquitto, rumqttd).
    #[default]
    V5,
    /// MQTT 3.1.1, for brokers without v5 (RabbitMQ 3.10's MQTT plugin).
    V311,
}

impl std::str::FromStr for MqttVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "5" | "v5" => Ok(MqttVersion::V5),
            "3.1.1" | "311" | "v3.1.1" => Ok(MqttVersion::V311),
            _ => Err(format!("MQTT version {s:?}: 5 or 3.1.1")),
        }
    }
}

/// Where a client connects: `host:port`, over TLS or plain TCP, and the
/// MQTT version the broker there speaks.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// `host:port`.
    pub addr: String,
    /// `Some`: TLS, the broker's certificate checked.
    pub tls: Option<Tls>,
    /// The MQTT version of topic mode's client (v5 by default).
    pub version: MqttVersion,
}

impl Endpoint {
    /// Plain TCP to `addr`.
    pub fn tcp(addr: impl Into<String>) -> Endpoint {
        Endpoint {
            addr: addr.into(),
            tls: None,
            version: MqttVersion::V5,
        }
    }

    /// TLS to `addr`.
    pub fn tls(addr: impl Into<String>, tls: Tls) -> Endpoint {
        Endpoint {
            addr: addr.into(),
            tls: Some(tls),
            version: MqttVersion::V5,
        }
    }

    /// The same endpoint, spoken to in MQTT `version`.
    pub fn with_version(mut self, version: MqttVersion) -> Endpoint {
        self.version = version;
        self
    }

    /// The host and port, for clients that take them apart.
    pub(crate) fn host_port(&self) -> Result<(String, u16), HostError> {
        let bad = || HostError::Unexpected(format!("broker address {:?}: expected HOST:PORT", self.addr));
        let (host, port) = self.addr.rsplit_once(':').ok_or_else(bad)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Ok((host.to_string(), port.parse().map_err(|_| bad())?))
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tls {
            Some(_) => write!(f, "{} (TLS)", self.addr)?,
            None => f.write_str(&self.addr)?,
        }
        match self.version {
            MqttVersion::V5 => Ok(()),
            MqttVersion::V311 => f.write_str(" (MQTT 3.1.1)"),
        }
    }
}

impl From<&str> for Endpoint {
    fn from(addr: &str) -> Endpoint {
        Endpoint::tcp(addr)
    }
}

impl From<&String> for Endpoint {
    fn from(addr: &String) -> Endpoint {
        Endpoint::tcp(addr.as_str())
    }
}

impl From<String> for Endpoint {
    fn from(addr: String) -> Endpoint {
        Endpoint::tcp(addr)
    }
}

impl From<&Endpoint> for Endpoint {
    fn from(e: &Endpoint) -> Endpoint {
        e.clone()
    }
}
