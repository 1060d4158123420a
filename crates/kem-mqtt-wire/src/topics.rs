//! The KEM-MQTT/1 topic layout, once: every prefix a sensor, the broker
//! plugin, the gateway, the host tools and the firmware build topics from
//! (`kem_mqtt::wire::topics`, and `avr_wire::topics` for the firmware).
//! Here, in the dependency-free leaf both sides depend on, so that a change
//! to the layout reaches the AVR firmware and the host together (a
//! record's topic is its associated data: both sides must build the same
//! bytes).
//!
//! | topic | what |
//! |---|---|
//! | [`HS`]`<id>/c2b`, `…/b2c` | handshake flights (topic mode) |
//! | [`DATA_C2B`]`<id>[/<sub>]` | records sealed by a sensor |
//! | [`DATA_B2C`]`<id>[/<sub>]` | records sealed for a sensor |
//! | [`CLUSTER`]`<group>/…` | the gateways' coordination (topic mode) |
//!
//! `kem_mqtt_host::topics` builds and parses them on hosts; why the
//! direction comes before the id is written there.

/// Every KEM-MQTT topic starts with this level.
pub const ROOT: &str = "kem-mqtt/";
/// Handshake flights: `kem-mqtt/hs/<id>/c2b` and `…/b2c`.
pub const HS: &str = "kem-mqtt/hs/";
/// Sealed records, either direction: `kem-mqtt/data/<direction>/…`.
pub const DATA: &str = "kem-mqtt/data/";
/// Sealed records, sensor → broker: `kem-mqtt/data/c2b/<id>[/<sub>]`.
pub const DATA_C2B: &str = "kem-mqtt/data/c2b/";
/// Sealed records, broker → sensor: `kem-mqtt/data/b2c/<id>[/<sub>]`.
pub const DATA_B2C: &str = "kem-mqtt/data/b2c/";
/// Topic-mode gateways' coordination: `kem-mqtt/cluster/<group>/…`.
pub const CLUSTER: &str = "kem-mqtt/cluster/";

/// `prefix` followed by `rest`, as an array of `N` bytes (`N` must be the
/// sum of their lengths: a `const` that gets it wrong does not build).
pub const fn join<const N: usize>(prefix: &str, rest: &[u8]) -> [u8; N] {
    let prefix = prefix.as_bytes();
    assert!(prefix.len() + rest.len() == N, "join: N is not the joined length");
    let mut out = [0u8; N];
    let mut i = 0;
    while i < prefix.len() {
        out[i] = prefix[i];
        i += 1;
    }
    while i < N {
        out[i] = rest[i - prefix.len()];
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prefix_is_under_the_root_and_the_data_ones_under_data() {
        for p in [HS, DATA, DATA_C2B, DATA_B2C, CLUSTER] {
            assert!(p.starts_with(ROOT) && p.ends_with('/'), "{p}");
        }
        assert!(DATA_C2B.starts_with(DATA) && DATA_B2C.starts_with(DATA));
        assert_eq!(&join::<21>(DATA_C2B, b"s/t"), b"kem-mqtt/data/c2b/s/t");
    }
}
