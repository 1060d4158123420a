//! Provisioning: broker key generation and sensor enrolment.

use kem_mqtt::{Scheme, Suite, SuiteSet};
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use crate::keys::{BrokerSecrets, Client, KeyError, Registry, SensorKeys};

fn keypair(kem: Scheme, rng: &mut impl CryptoRng) -> (Zeroizing<Vec<u8>>, Vec<u8>) {
    let mut sk = Zeroizing::new(vec![0u8; kem.sk_len()]);
    let mut pk = vec![0u8; kem.pk_len()];
    // The buffers have the exact lengths; only an RNG failure remains, and the system RNG (`OsRng`) panics on its own then.
    kem_mqtt::generate_keypair(kem, rng, &mut pk, &mut sk).expect("key generation");
    (sk, pk)
}

fn x25519_pair(rng: &mut impl CryptoRng) -> (Zeroizing<[u8; 32]>, [u8; 32]) {
    let mut sk = Zeroizing::new([0u8; 32]);
    rng.fill_bytes(&mut *sk);
    let pk = x25519_dalek::x25519(*sk, x25519_dalek::X25519_BASEPOINT_BYTES);
    (sk, pk)
}

/// Generates broker static keys for `kems` and one X25519 key pair.
pub fn generate_broker(kems: &[Scheme], rng: &mut impl CryptoRng) -> BrokerSecrets {
    let (x25519_sk, x25519_pk) = x25519_pair(rng);
    BrokerSecrets {
        kems: kems.iter().map(|&k| (k, keypair(k, rng))).collect(),
        x25519_sk,
        x25519_pk,
    }
}

/// Enrols a sensor: generates its static keys for `suite`'s KEM, registers
/// it with policy `allowed` and returns its key file contents. An id that
/// is already in `registry` is [`KeyError::AlreadyEnrolled`]: replacing a
/// sensor's keys locks the deployed sensor out, so it takes
/// [`reprovision_sensor`].
pub fn provision_sensor(
    broker: &BrokerSecrets,
    registry: &mut Registry,
    client_id: &str,
    suite: Suite,
    allowed: SuiteSet,
    rng: &mut impl CryptoRng,
) -> Result<SensorKeys, KeyError> {
    if registry.clients.contains_key(client_id) {
        return Err(KeyError::AlreadyEnrolled(client_id.to_string()));
    }
    reprovision_sensor(broker, registry, client_id, suite, allowed, rng)
}

/// [`provision_sensor`] that replaces the keys and policy of an enrolled id
/// (`kem-mqtt provision --force`).
pub fn reprovision_sensor(
    broker: &BrokerSecrets,
    registry: &mut Registry,
    client_id: &str,
    suite: Suite,
    allowed: SuiteSet,
    rng: &mut impl CryptoRng,
) -> Result<SensorKeys, KeyError> {
    let (client, keys) = new_sensor(broker, client_id, suite, allowed, rng)?;
    registry.clients.insert(client_id.to_string(), client);
    Ok(keys)
}

/// A new sensor's static keys for `suite`'s KEM under policy `allowed`: its
/// registry entry and its key file contents, for a
/// [`RegistryStore`](crate::store::RegistryStore) to enrol.
pub fn new_sensor(
    broker: &BrokerSecrets,
    client_id: &str,
    suite: Suite,
    allowed: SuiteSet,
    rng: &mut impl CryptoRng,
) -> Result<(Client, SensorKeys), KeyError> {
    if !kem_mqtt::valid_client_id(client_id.as_bytes()) {
        return Err(KeyError::Invalid(format!(
            "client id {client_id:?}: 1..=64 of [A-Za-z0-9._-]"
        )));
    }
    if !allowed.contains(suite) || allowed.iter().any(|s| s.kem() != suite.kem()) {
        return Err(KeyError::Invalid(
            "the policy must allow the suite and use its KEM only".into(),
        ));
    }
    let kem = suite.kem();
    let (_, broker_kem_pk) = broker
        .kems
        .get(&kem)
        .ok_or_else(|| KeyError::Invalid(format!("the broker has no {} key", kem.name())))?;
    let (kem_sk, kem_pk) = keypair(kem, rng);
    let (x25519_sk, x25519_pk) = x25519_pair(rng);
    let client = Client {
        kem,
        kem_pk: kem_pk.clone(),
        x25519_pk,
        allowed,
    };
    Ok((
        client,
        SensorKeys {
            client_id: client_id.to_string(),
            suite,
            kem_sk,
            kem_pk,
            x25519_sk,
            x25519_pk,
            broker_kem_pk: broker_kem_pk.clone(),
            broker_x25519_pk: broker.x25519_pk,
        },
    ))
}
