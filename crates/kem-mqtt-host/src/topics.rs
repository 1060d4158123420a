//! Where KEM-MQTT/1 messages travel, and how sealed records become
//! application messages — the same in AUTH mode (the mosquitto plugin) and
//! topic mode (the gateway).
//!
//! | topic | who publishes | what |
//! |---|---|---|
//! | `kem-mqtt/hs/<id>/c2b`, `…/b2c` | sensor, gateway | handshake flights (topic mode) |
//! | `kem-mqtt/data/c2b/<id>[/<sub>]` | sensor | a record sealed under the session's c2b keys |
//! | `kem-mqtt/data/b2c/<id>[/<sub>]` | plugin or gateway only | a record sealed under the b2c keys |
//! | `<plain>/<id>[/<sub>]` (`plain/…`) | plugin or gateway only | the opened reading, for applications |
//! | `<command>/<id>[/<sub>]` (`cmd/…`) | applications | a command, sealed to `kem-mqtt/data/b2c/<id>[/<sub>]` |
//!
//! A record's associated data is its whole topic, so a record cannot be
//! moved to another sensor or subtopic; the plaintext topic is derived
//! from the sealed one, never chosen by the publisher. The two prefixes
//! are the operator's (`plugin_opt_plain_prefix`, `--plain-prefix`, …).
//!
//! **The direction comes before the id** (`kem-mqtt/data/c2b/<id>`, not
//! `kem-mqtt/data/<id>/c2b`): mosquitto 2.0 lets a client id contain `/`
//! (its pattern ACLs refuse only `+` and `#`), so `%c` can stand for several
//! topic levels. With the direction first, whatever id a client picks, the
//! pattern `kem-mqtt/data/c2b/%c/#` stays inside the sensor → broker space:
//! no client id reaches a topic a sensor reads (`kem-mqtt/data/b2c/…`). With
//! the id first, the id `bob/b2c/x` could write `kem-mqtt/data/bob/b2c/x/c2b`,
//! which bob's subscription `kem-mqtt/data/bob/b2c/#` matched.

/// The layout's prefixes, defined once in the `no_std` crate the firmware
/// shares ([`avr_wire::topics`]).
pub use avr_wire::topics::{CLUSTER, DATA, DATA_B2C, DATA_C2B, HS, ROOT};

/// Handshake topic, sensor → broker.
pub fn hs_c2b(client_id: &str) -> String {
    format!("{HS}{client_id}/c2b")
}
/// Handshake topic, broker → sensor.
pub fn hs_b2c(client_id: &str) -> String {
    format!("{HS}{client_id}/b2c")
}
/// Sealed records, sensor → broker: `kem-mqtt/data/c2b/<id>`, with `/<sub>` unless `sub` is empty.
pub fn sealed_c2b(client_id: &str, sub: &str) -> String {
    with_sub(format!("{DATA_C2B}{client_id}"), sub)
}
/// Sealed records, broker → sensor: `kem-mqtt/data/b2c/<id>`, with `/<sub>` unless `sub` is empty.
pub fn sealed_b2c(client_id: &str, sub: &str) -> String {
    with_sub(format!("{DATA_B2C}{client_id}"), sub)
}

fn with_sub(mut topic: String, sub: &str) -> String {
    if !sub.is_empty() {
        topic.push('/');
        topic.push_str(sub);
    }
    topic
}

/// `(id, sub)` of `kem-mqtt/data/<direction>/<id>[/<sub>]`, if `topic` is
/// one with a valid client id.
fn parse_sealed<'a>(topic: &'a str, direction: &str) -> Option<(&'a str, &'a str)> {
    let rest = topic.strip_prefix(DATA)?.strip_prefix(direction)?.strip_prefix('/')?;
    let (id, sub) = rest.split_once('/').unwrap_or((rest, ""));
    kem_mqtt::valid_client_id(id.as_bytes()).then_some((id, sub))
}

/// The id of a handshake topic, sensor → broker (`kem-mqtt/hs/<id>/c2b`;
/// the id is checked by the handshake, not here).
pub fn parse_hs_c2b(topic: &str) -> Option<&str> {
    let id = topic.strip_prefix(HS)?.strip_suffix("/c2b")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// `(id, sub)` of a sealed sensor → broker topic.
pub fn parse_sealed_c2b(topic: &str) -> Option<(&str, &str)> {
    parse_sealed(topic, "c2b")
}

/// `(id, sub)` of a sealed broker → sensor topic.
pub fn parse_sealed_b2c(topic: &str) -> Option<(&str, &str)> {
    parse_sealed(topic, "b2c")
}

/// Whether `topic` is in the sealed broker → sensor space (only the broker
/// side publishes there), whatever follows `kem-mqtt/data/b2c`.
pub fn is_sealed_b2c(topic: &str) -> bool {
    under(topic, DATA_B2C.trim_end_matches('/')).is_some()
}

/// Default prefix of the topics that carry opened readings.
pub const DEFAULT_PLAIN_PREFIX: &str = "plain";
/// Default prefix of the topics applications send commands on.
pub const DEFAULT_COMMAND_PREFIX: &str = "cmd";

/// The operator's two application-facing prefixes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Opened readings go to `<plain>/<id>[/<sub>]`.
    pub plain_prefix: String,
    /// Applications publish commands on `<command>/<id>[/<sub>]`.
    pub command_prefix: String,
}

impl Default for Delivery {
    fn default() -> Self {
        Delivery {
            plain_prefix: DEFAULT_PLAIN_PREFIX.into(),
            command_prefix: DEFAULT_COMMAND_PREFIX.into(),
        }
    }
}

/// Why a prefix is refused.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    let bad = prefix.is_empty()
        || prefix.starts_with('/')
        || prefix.ends_with('/')
        || prefix.starts_with('$')
        || prefix.contains(['+', '#', '\0'])
        || prefix == ROOT.trim_end_matches('/')
        || prefix.starts_with(ROOT);
    if bad {
        Err(format!(
            "topic prefix {prefix:?}: expected one or more topic levels without wildcards, \
             not starting with $ or /, outside {ROOT}"
        ))
    } else {
        Ok(())
    }
}

impl Delivery {
    /// Both prefixes checked: valid, and neither inside the other.
    pub fn new(plain_prefix: &str, command_prefix: &str) -> Result<Self, String> {
        check_prefix(plain_prefix)?;
        check_prefix(command_prefix)?;
        let nested = |a: &str, b: &str| a == b || a.starts_with(&format!("{b}/"));
        if nested(plain_prefix, command_prefix) || nested(command_prefix, plain_prefix) {
            return Err(format!(
                "the plain prefix {plain_prefix:?} and the command prefix {command_prefix:?} overlap"
            ));
        }
        Ok(Delivery {
            plain_prefix: plain_prefix.into(),
            command_prefix: command_prefix.into(),
        })
    }

    /// Where the reading of a record on `kem-mqtt/data/c2b/<id>[/<sub>]` is delivered.
    pub fn plain_topic(&self, client_id: &str, sub: &str) -> String {
        with_sub(format!("{}/{client_id}", self.plain_prefix), sub)
    }

    /// Whether `topic` is under the plain prefix (only the broker side publishes there).
    pub fn is_plain(&self, topic: &str) -> bool {
        under(topic, &self.plain_prefix).is_some()
    }

    /// `(id, sub)` of a command topic `<command>/<id>[/<sub>]` with a valid id.
    pub fn parse_command<'a>(&self, topic: &'a str) -> Option<(&'a str, &'a str)> {
        let rest = under(topic, &self.command_prefix)?;
        let (id, sub) = rest.split_once('/').unwrap_or((rest, ""));
        kem_mqtt::valid_client_id(id.as_bytes()).then_some((id, sub))
    }

    /// The subscription filter for every command.
    pub fn command_filter(&self) -> String {
        format!("{}/#", self.command_prefix)
    }
}

/// What follows `prefix/` in `topic` (`""` for `topic == prefix`).
fn under<'a>(topic: &'a str, prefix: &str) -> Option<&'a str> {
    match topic.strip_prefix(prefix)? {
        "" => Some(""),
        rest => rest.strip_prefix('/'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_topics_round_trip_and_bad_ones_are_not_records() {
        assert_eq!(sealed_c2b("s1", ""), "kem-mqtt/data/c2b/s1");
        assert_eq!(sealed_c2b("s1", "t/x"), "kem-mqtt/data/c2b/s1/t/x");
        assert_eq!(parse_sealed_c2b("kem-mqtt/data/c2b/s1"), Some(("s1", "")));
        assert_eq!(parse_sealed_c2b("kem-mqtt/data/c2b/s1/t/x"), Some(("s1", "t/x")));
        assert_eq!(parse_sealed_b2c("kem-mqtt/data/b2c/s1/led"), Some(("s1", "led")));
        for bad in [
            "kem-mqtt/data/c2bx/s1",
            "kem-mqtt/data/b2c/s1",
            "kem-mqtt/data/c2b",
            "kem-mqtt/data/c2b/",
            "kem-mqtt/data/c2b//t",
            "kem-mqtt/data/c2b/s 1",
            // The layout before the direction came first.
            "kem-mqtt/data/s1/c2b",
            "kem-mqtt/hs/s1/c2b",
            "x/kem-mqtt/data/c2b/s1",
        ] {
            assert_eq!(parse_sealed_c2b(bad), None, "{bad}");
        }
        assert!(is_sealed_b2c("kem-mqtt/data/b2c/s1/led"));
        assert!(is_sealed_b2c("kem-mqtt/data/b2c"));
        assert!(!is_sealed_b2c("kem-mqtt/data/c2b/s1/led"));
        assert!(!is_sealed_b2c("kem-mqtt/data/b2cx/s1"));
    }

    #[test]
    fn plain_and_command_topics() {
        let d = Delivery::default();
        assert_eq!(d.plain_topic("s1", "t"), "plain/s1/t");
        assert_eq!(d.plain_topic("s1", ""), "plain/s1");
        assert!(d.is_plain("plain/s1/t") && d.is_plain("plain") && !d.is_plain("plainer/s1"));
        assert_eq!(d.parse_command("cmd/s1/led"), Some(("s1", "led")));
        assert_eq!(d.parse_command("cmd/s1"), Some(("s1", "")));
        assert_eq!(d.parse_command("cmd"), None);
        assert_eq!(d.parse_command("cmdx/s1"), None);
        assert_eq!(d.command_filter(), "cmd/#");
    }

    #[test]
    fn prefixes_are_checked() {
        assert!(Delivery::new("site/a/plain", "site/a/cmd").is_ok());
        for (p, c) in [
            ("", "cmd"),
            ("plain/", "cmd"),
            ("plain", "plain"),
            ("plain", "plain/cmd"),
            ("p/+", "cmd"),
            ("$SYS", "cmd"),
            ("kem-mqtt/x", "cmd"),
        ] {
            assert!(Delivery::new(p, c).is_err(), "{p} {c}");
        }
    }
}
