//! `cargo xtask e2e`: the simulated AVR sensor (ATmega1284p) end to end
//! through Debian's mosquitto, as a user would deploy it (issue #24):
//!
//! - AUTH mode: mosquitto with the KEM-MQTT plugin and the shipped
//!   `mosquitto.conf`/`kem-mqtt.acl`;
//! - topic mode: mosquitto with the plugin as a topic guard only, the shipped
//!   `mosquitto-gateway.conf`/`gateway.acl`, and a `kem-mqtt` gateway;
//!
//! in both, `mosquitto_sub` as the application must print exactly the
//! reading the AVR sealed (`avr_wire::mqtt::PAYLOAD`) on
//! `plain/avr-1/t`. The host only carries the flights (`crate::mqtt::live`).
//! The host sensor's end-to-end tests, commands included, are
//! `crates/mosquitto-kem-plugin/tests/{mosquitto,topic_mode}.rs`.

use std::path::Path;
use std::sync::Arc;

use crate::mqtt::site::{self, Conf, Site, Subscriber, GATEWAY_PASSWORD, GATEWAY_USER};
use avr_wire::mqtt as fw;
use kem_mqtt::Suite;
use kem_mqtt_host::addr::BrokerAddr;
use kem_mqtt_host::gateway::{Gateway, GatewayConfig};
use kem_mqtt_host::keys::BrokerState;

use crate::mqtt::live::{self, Mode};

/// The suite the AVR runs here: the hybrid one the project recommends.
const SUITE: &str = "ctru-light-ascon+x25519";

/// Options of `cargo xtask e2e`.
#[derive(clap::Parser, Debug)]
pub struct E2eArgs {
    /// Use the AVR image already built
    #[arg(long)]
    pub no_build: bool,
    /// Only the sensor application's session (readings, commands, re-keys,
    /// a bridge restart, an attacked serial line)
    #[arg(long)]
    pub session_only: bool,
}

fn broker_addr(site: &Site) -> Result<BrokerAddr, String> {
    site.addr()
        .parse()
        .map_err(|e: kem_mqtt_host::addr::AddrError| e.to_string())
}

/// Checks what the application received.
fn check_delivery(mode: Mode, app: Subscriber) -> Result<(), String> {
    let lines = app.lines()?;
    let expected = format!("plain/avr-1/t {}", String::from_utf8_lossy(fw::PAYLOAD));
    if lines != [expected.clone()] {
        return Err(format!(
            "{mode}: the application received {lines:?}, not [{expected:?}]"
        ));
    }
    println!("e2e: {mode}: mosquitto_sub received {expected:?}");
    Ok(())
}

/// Runs both modes; an error names the mode and what was missing.
pub fn run(args: &E2eArgs) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = crate::util::workspace_root().join("target");
    if args.session_only {
        let plugin = site::build_plugin(Path::new(&cargo), &target)?;
        return crate::mqtt::e2e_session::run(&plugin, &crate::mqtt::e2e_session::kem_mqtt_cli()?);
    }
    let mcu = crate::target::mcu("atmega1284p")?;
    let suite = Suite::from_name(SUITE).ok_or("unknown suite")?;
    let client_id = live::firmware_client_id()?;
    let (secrets, registry, keys) = crate::run::sensor::provision_one(suite, client_id)?;

    // AUTH mode.
    let plugin = site::build_plugin(Path::new(&cargo), &target)?;
    let site = Site::auth_mode("e2e-auth", &secrets, &registry, Conf::Documented, &plugin)?;
    let app = Subscriber::start(&site, "plain/#", 1, 60)?;
    live::run_on_image(mcu, &keys, &broker_addr(&site)?, Mode::Auth, args.no_build)?;
    check_delivery(Mode::Auth, app).map_err(|e| format!("{e}\nbroker log:\n{}", site.log()))?;
    drop(site);

    // Topic mode: the same sensor through a gateway, the plugin only guarding topics.
    let site = Site::topic_mode("e2e-topic", &plugin)?;
    let state = Arc::new(BrokerState { secrets, registry });
    let login = Some((GATEWAY_USER, GATEWAY_PASSWORD));
    let gateway = Gateway::connect_login(site.addr(), state.clone(), GatewayConfig::default(), login)
        .and_then(Gateway::spawn)
        .map_err(|e| format!("gateway: {e}"))?;
    let app = Subscriber::start(&site, "plain/#", 1, 60)?;
    let sensor = live::run_on_image(mcu, &keys, &broker_addr(&site)?, Mode::Topic, true);
    let delivered = sensor.and_then(|()| check_delivery(Mode::Topic, app));
    let stats = gateway.stop().map_err(|e| format!("gateway: {e}"))?;
    delivered.map_err(|e| format!("{e}\ngateway: {stats}\nbroker log:\n{}", site.log()))?;
    println!("e2e: gateway: {stats}");

    // A board on a serial port: the simulated 1284p on a pty, running the
    // sensor image with the key file compiled in, and `kem-mqtt
    // serial-bridge`, which holds no key, carrying it to the plugin.
    let image = crate::run::sensor::provisioned_image(mcu, crate::target::Image::mqtt(suite.kem(), true), &keys)?;
    let elf = crate::build::avr::image_elf(mcu, &image, false)?;
    sensor_draws_fresh_randomness(&elf, mcu.name, suite)?;
    let bin = crate::mqtt::e2e_session::kem_mqtt_cli()?;
    let site = Site::auth_mode("e2e-serial", &state.secrets, &state.registry, Conf::Documented, &plugin)?;
    let app = Subscriber::start(&site, "plain/#", 1, 60)?;
    let board = crate::run::pty::SimOnPty::start(&elf, mcu.name)?;
    let out = std::process::Command::new(&bin)
        .args([
            "serial-bridge",
            "--port",
            board.path(),
            "--broker",
            &site.addr(),
            "--suite",
            SUITE,
        ])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    board.finish()?;
    let printed = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "kem-mqtt serial-bridge failed:\n{printed}{}\nbroker log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            site.log()
        ));
    }
    print!("{printed}");
    check_delivery(Mode::Auth, app).map_err(|e| format!("serial bridge: {e}\nbroker log:\n{}", site.log()))?;
    drop(site);

    // The sensor application: a whole session through the bridge.
    crate::mqtt::e2e_session::run(&plugin, &bin)
}

/// The provisioned image's own start (`OP_HELLO`) twice with the same host
/// nonce: both succeed and the ClientHellos differ, so the EEPROM counter
/// moved on (a bridge replaying its nonce cannot make the sensor repeat
/// its randomness).
fn sensor_draws_fresh_randomness(elf: &Path, mcu: &str, suite: Suite) -> Result<(), String> {
    let mut dev = crate::run::device::Device::open(elf, mcu)?;
    let mut request = vec![suite.id()];
    request.extend_from_slice(&[0x5A; fw::HOST_NONCE_LEN]);
    let mut hellos = Vec::new();
    for _ in 0..2 {
        let reply = dev.call(fw::OP_HELLO, &request)?;
        match reply.first() {
            Some(0) => hellos.push(reply),
            s => return Err(format!("OP_HELLO answered status {s:?}")),
        }
    }
    dev.close()?;
    if hellos[0] == hellos[1] {
        return Err(
            "two OP_HELLOs with the same host nonce gave the same ClientHello: the counter did not move".into(),
        );
    }
    println!("e2e: the provisioned sensor's two starts with one host nonce differ (EEPROM counter)");
    Ok(())
}
