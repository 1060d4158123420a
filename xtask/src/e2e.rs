//! `cargo xtask e2e`: the simulated AVR sensor (ATmega1284p) end to end
//! through Debian's mosquitto, as a user would deploy it (issue #24):
//!
//! - AUTH mode: mosquitto with the KEM-MQTT plugin and the shipped
//!   `mosquitto.conf`/`kem-mqtt.acl`;
//! - topic mode: mosquitto without the plugin, the shipped
//!   `mosquitto-gateway.conf`/`gateway.acl`, and a `kem-mqtt` gateway;
//!
//! in both, `mosquitto_sub` as the application must print exactly the
//! reading the AVR sealed (`firmware::mqtt::PAYLOAD`) on
//! `plain/avr-1/t`. The host only carries the flights (`crate::live`).
//! The host sensor's end-to-end tests, commands included, are
//! `crates/mosquitto-kem-plugin/tests/{mosquitto,topic_mode}.rs`.

use std::path::Path;
use std::sync::Arc;

use firmware::mqtt as fw;
use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::addr::BrokerAddr;
use kem_mqtt_host::gateway::{Gateway, GatewayConfig};
use kem_mqtt_host::keys::{BrokerState, Registry};
use kem_mqtt_host::provision::{generate_broker, provision_sensor};
use kem_mqtt_host::OsRng;
use mosquitto_site::{Conf, Site, Subscriber, GATEWAY_PASSWORD, GATEWAY_USER};

use crate::live::{self, Mode};

/// The suite the AVR runs here: the hybrid one the project recommends.
const SUITE: &str = "ctru-light-ascon+x25519";

/// Options of `cargo xtask e2e`.
#[derive(clap::Parser, Debug)]
pub struct E2eArgs {
    /// Use the AVR image already built
    #[arg(long)]
    pub no_build: bool,
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
    let mcu = crate::target::mcu("atmega1284p")?;
    let suite = Suite::from_name(SUITE).ok_or("unknown suite")?;
    let client_id = live::firmware_client_id()?;
    let secrets = generate_broker(&[suite.kem()], &mut OsRng);
    let mut registry = Registry::default();
    let keys = provision_sensor(
        &secrets,
        &mut registry,
        client_id,
        suite,
        SuiteSet::EMPTY.with(suite),
        &mut OsRng,
    )
    .map_err(|e| e.to_string())?;

    // AUTH mode.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = crate::util::workspace_root().join("target");
    let plugin = mosquitto_site::build_plugin(Path::new(&cargo), &target, &[])?;
    let site = Site::auth_mode("e2e-auth", &secrets, &registry, Conf::Documented, &plugin)?;
    let app = Subscriber::start(&site, "plain/#", 1, 60)?;
    live::run_on_image(mcu, &keys, &broker_addr(&site)?, Mode::Auth, args.no_build)?;
    check_delivery(Mode::Auth, app).map_err(|e| format!("{e}\nbroker log:\n{}", site.log()))?;
    drop(site);

    // Topic mode: the same sensor through a gateway on a broker without the plugin.
    let site = Site::topic_mode("e2e-topic")?;
    let state = Arc::new(BrokerState { secrets, registry });
    let login = Some((GATEWAY_USER, GATEWAY_PASSWORD));
    let gateway = Gateway::connect_login(&site.addr(), state, GatewayConfig::default(), login)
        .and_then(Gateway::spawn)
        .map_err(|e| format!("gateway: {e}"))?;
    let app = Subscriber::start(&site, "plain/#", 1, 60)?;
    let sensor = live::run_on_image(mcu, &keys, &broker_addr(&site)?, Mode::Topic, true);
    let delivered = sensor.and_then(|()| check_delivery(Mode::Topic, app));
    let stats = gateway.stop().map_err(|e| format!("gateway: {e}"))?;
    delivered.map_err(|e| format!("{e}\ngateway: {stats}\nbroker log:\n{}", site.log()))?;
    println!("e2e: gateway: {stats}");
    Ok(())
}
