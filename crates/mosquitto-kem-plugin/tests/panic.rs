//! A panic inside the plugin is contained (issue #21): the plugin built with
//! the test-only feature `fault-injection` panics on demand, in the
//! authentication callback (holding the lock of the pending handshakes, so
//! that lock is poisoned) and in the disconnect callback; Debian's mosquitto,
//! running the shipped configuration plus the two fault options, must keep
//! running, keep its other clients connected and authenticate new ones.

mod common;
use common::*;

use std::time::Duration;

use kem_mqtt_host::mqtt::{self, Packet};
use kem_mqtt_host::sensor::SensorClient;

const TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn a_panic_inside_the_plugin_is_contained() {
    let s = suite("ml-kem-512+x25519");
    let (secrets, registry, keys) = enrol(&[("alice", s), ("boom", s), ("leaver", s), ("carol", s)]);
    let (alice, boom, leaver, carol) = (&keys[0], &keys[1], &keys[2], &keys[3]);
    let mut broker = Broker::start(
        "panic",
        &secrets,
        &registry,
        Conf::DocumentedWith("plugin_opt_fault_panic_start_id boom\nplugin_opt_fault_panic_disconnect_id leaver\n"),
        &fault_plugin_path(),
    );
    let addr = broker.addr();

    // A bystander, connected throughout.
    let (mut bystander, outcome) = auth_attempt(&addr, alice, "alice", None);
    assert_eq!(outcome, Attempt::ConnAck(mqtt::SUCCESS));

    // 1. Panic while answering boom's ClientHello: boom is refused, nothing else happens.
    for _ in 0..2 {
        let (_, outcome) = auth_attempt(&addr, boom, "boom", None);
        assert!(
            matches!(outcome, Attempt::ConnAck(mqtt::NOT_AUTHORIZED) | Attempt::Closed),
            "{outcome:?}"
        );
        broker.assert_alive();
    }
    // 2. Panic when leaver's connection goes away.
    SensorClient::connect_auth_mode(&addr, leaver, TIMEOUT)
        .unwrap()
        .disconnect()
        .unwrap();
    let t = std::time::Instant::now();
    while !broker.log().contains("internal error in disconnect") && t.elapsed() < TIMEOUT {
        std::thread::sleep(Duration::from_millis(20));
    }
    broker.assert_alive();

    // The bystander is still connected and served.
    bystander.send(&Packet::PingReq).unwrap();
    bystander.set_timeout(Some(TIMEOUT)).unwrap();
    assert!(
        matches!(bystander.recv(), Ok(Packet::PingResp)),
        "the bystander lost its connection"
    );
    // New clients still authenticate, through the lock the panic poisoned.
    for keys in [carol, leaver] {
        let mut c = SensorClient::connect_auth_mode(&addr, keys, TIMEOUT)
            .unwrap_or_else(|e| panic!("{} after the panics: {e}", keys.client_id));
        c.send_on("t", b"1").unwrap();
    }
    let log = broker.log();
    assert!(
        log.contains("internal error in authentication (fault injection: panic in EXT_AUTH_START)"),
        "{log}"
    );
    assert!(
        log.contains("internal error in disconnect (fault injection: panic in DISCONNECT)"),
        "{log}"
    );
    broker.assert_alive();
}

/// The fault options exist only in the fault-injection build: the plugin
/// as shipped refuses them (unknown option), and mosquitto does not start.
#[test]
fn the_shipped_plugin_refuses_fault_options() {
    let s = suite("ml-kem-512");
    let (secrets, registry, _) = enrol(&[("alice", s)]);
    let dir = std::env::temp_dir().join(format!("kem-mqtt-nofault-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    secrets.save(&dir.join("broker-key.json")).unwrap();
    registry.save(&dir.join("registry.json")).unwrap();
    std::fs::write(dir.join("kem-mqtt.acl"), shipped(Shipped::AuthAcl)).unwrap();
    let conf = site::auth_mode_config(
        &Conf::DocumentedWith("plugin_opt_fault_panic_start_id alice\n"),
        &dir,
        free_port(),
        &plugin_path(),
    )
    .unwrap();
    std::fs::write(dir.join("mosquitto.conf"), conf).unwrap();
    let log_path = dir.join("mosquitto.log");
    let mut child = std::process::Command::new(site::MOSQUITTO)
        .arg("-c")
        .arg(dir.join("mosquitto.conf"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if t.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        status.is_some_and(|s| !s.success()),
        "mosquitto started with a fault option:\n{log}"
    );
    assert!(log.contains("unknown option plugin_opt_fault_panic_start_id"), "{log}");
}
