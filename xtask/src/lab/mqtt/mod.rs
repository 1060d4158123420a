//! The KEM-MQTT/1 sensor on the AVR, from its handshake in a simulator to
//! a deployed broker: `site` (Debian's mosquitto with the shipped
//! configurations, for these commands and the plugin's tests),
//! `registry_db` (Debian's PostgreSQL holding the registry, also for
//! kem-mqtt-host's tests), `registry_bench` (`cargo xtask registry`:
//! enrolment and revocation against a large registry in each store), `handshake` (`cargo xtask mqtt`: every suite's
//! handshake measured, and what fits the ATmega4808), `app_cost` (the
//! sensor application's steps, the host playing bridge and broker), `live`
//! (`mqtt --broker`: against a real broker), `e2e` and `e2e_session`
//! (`cargo xtask e2e`, `sensor-sim`: through mosquitto as deployed) and
//! `mqtt_load` (`cargo xtask mqtt-load`: a fleet of host sensors),
//! `rabbitmq` (a RabbitMQ cluster on loopback) and `fleet` (`cargo xtask
//! fleet`: a fleet on that cluster, a node killed, a sensor revoked). The
//! host's half of the handshake itself is `crate::run::sensor`.

pub mod app_cost;
pub mod e2e;
pub mod e2e_session;
pub mod fleet;
pub mod handshake;
pub mod live;
pub mod mqtt_load;
pub mod rabbitmq;
pub mod registry_bench;
pub mod registry_db;
pub mod site;
