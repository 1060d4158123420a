//! Issue #37: KEM-MQTT/1 over the shipped TLS listener
//! (`crates/kem-mqtt-host/mosquitto-tls.conf`, its paths and port replaced,
//! with a CA and server certificate generated here), in both modes. The
//! clients check the broker's certificate: against the site's CA they
//! connect, against another CA or another name they are refused before any
//! MQTT packet is sent.

mod common;
use common::*;

use std::sync::Arc;
use std::time::Duration;

use kem_mqtt_host::gateway::{Gateway, GatewayConfig};
use kem_mqtt_host::keys::BrokerState;
use kem_mqtt_host::sensor::SensorClient;
use kem_mqtt_host::transport::{Endpoint, Tls};
use kem_mqtt_host::HostError;

const TIMEOUT: Duration = Duration::from_secs(10);

/// TLS that trusts only a CA of its own (another site's; `name` keeps
/// the sites of tests running in parallel apart).
fn foreign_tls(name: &str) -> Tls {
    let other = Broker::start_topic_mode(name);
    let other = Broker(other.0.with_tls().unwrap());
    Tls::from_ca_file(&other.ca_file()).unwrap()
}

fn refused_by_tls(r: Result<SensorClient, HostError>) -> bool {
    match r {
        Err(e) => {
            let text = e.to_string().to_lowercase();
            text.contains("certificate") || text.contains("tls")
        }
        Ok(_) => false,
    }
}

#[test]
fn auth_mode_over_tls_with_the_brokers_certificate_checked() {
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s)]);
    let broker = Broker::start("tls-auth", &secrets, &registry, Conf::Documented, &plugin_path());
    let mut broker = Broker(broker.0.with_tls().unwrap());
    let tls = Tls::from_ca_file(&broker.ca_file()).unwrap();
    let app = Subscriber::start_tls(&broker, "plain/#", 1, 60).unwrap();
    let endpoint = Endpoint::tls(broker.tls_addr().unwrap(), tls.clone());
    let mut alice = SensorClient::connect_auth_mode(&endpoint, &keys[0], TIMEOUT).unwrap();
    alice.send_on("t", b"21.5 over TLS").unwrap();
    assert!(app_publish(&broker, "cmd/alice/led", "on"));
    assert_eq!(alice.recv_command().unwrap(), ("led".to_string(), b"on".to_vec()));
    assert_eq!(app.lines().unwrap(), ["plain/alice/t 21.5 over TLS"]);
    // The same listener by its IP address, which the certificate (for
    // `localhost` only) does not name: refused, though the CA is right.
    let port = broker.tls_port.unwrap();
    let by_ip = Endpoint::tls(format!("127.0.0.1:{port}"), tls);
    assert!(refused_by_tls(SensorClient::connect_auth_mode(
        &by_ip, &keys[0], TIMEOUT
    )));
    // A client that trusts another CA does not talk to this broker.
    let wrong_ca = Endpoint::tls(broker.tls_addr().unwrap(), foreign_tls("tls-other-ca-auth"));
    assert!(refused_by_tls(SensorClient::connect_auth_mode(
        &wrong_ca, &keys[0], TIMEOUT
    )));
    broker.assert_alive();
}

#[test]
fn topic_mode_over_tls_gateway_sensor_and_application() {
    let s = suite("ml-kem-512+x25519");
    let (secrets, registry, keys) = enrol(&[("bob", s)]);
    let broker = Broker(Broker::start_topic_mode("tls-topic").0.with_tls().unwrap());
    let tls = Tls::from_ca_file(&broker.ca_file()).unwrap();
    let endpoint = Endpoint::tls(broker.tls_addr().unwrap(), tls);
    let state = Arc::new(BrokerState { secrets, registry });
    let login = Some((GATEWAY_USER, GATEWAY_PASSWORD));
    let gw = Gateway::connect_login(&endpoint, state, GatewayConfig::default(), login)
        .and_then(Gateway::spawn)
        .unwrap();
    let app = Subscriber::start_tls(&broker, "plain/#", 1, 60).unwrap();
    let mut bob = SensorClient::connect_topic_mode(&endpoint, &keys[0], TIMEOUT).unwrap();
    bob.send_on("t", b"22.0 over TLS").unwrap();
    assert!(app_publish(&broker, "cmd/bob/led", "off"));
    assert_eq!(bob.recv_command().unwrap(), ("led".to_string(), b"off".to_vec()));
    assert_eq!(app.lines().unwrap(), ["plain/bob/t 22.0 over TLS"]);
    // A name the certificate is not for (the CA is right): refused; and
    // another CA: refused.
    let port = broker.tls_port.unwrap();
    let tls = Tls::from_ca_file(&broker.ca_file()).unwrap();
    let wrong_name = Endpoint::tls(format!("127.0.0.1:{port}"), tls);
    assert!(refused_by_tls(SensorClient::connect_topic_mode(
        &wrong_name,
        &keys[0],
        TIMEOUT
    )));
    let wrong_ca = Endpoint::tls(broker.tls_addr().unwrap(), foreign_tls("tls-other-ca-topic"));
    assert!(refused_by_tls(SensorClient::connect_topic_mode(
        &wrong_ca, &keys[0], TIMEOUT
    )));
    let stats = gw.stop().unwrap();
    assert_eq!(
        (stats.established, stats.records_opened, stats.commands_sealed),
        (1, 1, 1),
        "{stats}"
    );
}

/// The guides show the shipped TLS listener as it is.
#[test]
fn the_guides_show_the_shipped_tls_listener() {
    for (name, guide) in [
        ("docs/broker.md", include_str!("../../../docs/broker.md")),
        ("docs/gateway.md", include_str!("../../../docs/gateway.md")),
    ] {
        assert!(
            guide.contains(&shipped(Shipped::TlsConf)),
            "{name} does not contain mosquitto-tls.conf as shipped"
        );
    }
}

/// Issue #47: the OpenSSL commands docs/broker.md gives (run as they are,
/// with `localhost` for the name, in a directory of the test's own) make a
/// CA and a server certificate that the shipped TLS listener serves and a
/// sensor accepts by name; by IP address it refuses them.
#[test]
fn the_documented_openssl_commands_make_a_ca_and_a_certificate_clients_accept() {
    use std::os::unix::fs::MetadataExt;
    let guide = include_str!("../../../docs/broker.md");
    let start = guide
        .find("```sh\ncd /etc/mosquitto/certs\n")
        .expect("the guide's openssl block")
        + 6;
    let block = &guide[start..start + guide[start..].find("```").unwrap()];
    let s = suite("ctru-light-ascon+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s)]);
    let broker = Broker::start("tls-openssl", &secrets, &registry, Conf::Documented, &plugin_path());
    let mut broker = Broker(broker.0.with_tls().unwrap());
    let certs = broker.dir.join("openssl");
    std::fs::create_dir_all(&certs).unwrap();
    let script = block
        .replace("cd /etc/mosquitto/certs\n", &format!("cd {}\n", certs.display()))
        .replace("BROKER=broker.example\n", "BROKER=localhost\n");
    let out = std::process::Command::new("bash")
        .args(["-euc", &script])
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "the guide's openssl commands failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // In place of the test's own certificates, owned as the broker's files are.
    let owner = std::fs::metadata(&broker.dir).unwrap();
    for f in ["ca.crt", "server.crt", "server.key"] {
        let to = broker.dir.join(f);
        std::fs::copy(certs.join(f), &to).unwrap();
        std::os::unix::fs::chown(&to, Some(owner.uid()), Some(owner.gid())).unwrap();
    }
    broker.kill();
    broker.restart();
    let tls = Tls::from_ca_file(&certs.join("ca.crt")).unwrap();
    let endpoint = Endpoint::tls(broker.tls_addr().unwrap(), tls.clone());
    let mut alice = SensorClient::connect_auth_mode(&endpoint, &keys[0], TIMEOUT).unwrap();
    alice.send_on("t", b"over the guide's TLS").unwrap();
    let by_ip = Endpoint::tls(format!("127.0.0.1:{}", broker.tls_port.unwrap()), tls);
    assert!(refused_by_tls(SensorClient::connect_auth_mode(
        &by_ip, &keys[0], TIMEOUT
    )));
    broker.assert_alive();
}
