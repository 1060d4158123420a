//! Fixtures for tests and documentation examples (fixed-size, no allocation).

use rand_core::CryptoRng;

use crate::handshake::{BrokerKeys, ClientEntry, SensorCredentials};
use crate::kem;
use crate::suite::{Scheme, Suite, SuiteSet, MAX_PK_LEN, MAX_SK_LEN};

/// A broker with static keys for one KEM and at most one registered client.
#[derive(Clone)]
pub struct BrokerFixture {
    /// The broker's KEM.
    pub kem: Scheme,
    /// Static KEM secret key (first `kem.sk_len()` bytes).
    pub sk: [u8; MAX_SK_LEN],
    /// Static KEM public key (first `kem.pk_len()` bytes).
    pub pk: [u8; MAX_PK_LEN],
    /// Static X25519 secret key.
    pub x_sk: [u8; 32],
    /// Static X25519 public key.
    pub x_pk: [u8; 32],
    /// The registered client: id, KEM, KEM public key, X25519 public key, policy.
    pub client: Option<RegisteredClient>,
}

/// The registered client: id, id length, KEM, KEM public key, X25519 public key, policy.
pub type RegisteredClient = ([u8; 16], usize, Scheme, [u8; MAX_PK_LEN], Option<[u8; 32]>, SuiteSet);

/// A sensor's static keys.
#[derive(Clone)]
pub struct SensorFixture {
    /// Client id bytes (first `id_len`).
    pub id: [u8; 16],
    /// Client id length.
    pub id_len: usize,
    /// The sensor's KEM.
    pub kem: Scheme,
    /// Static KEM secret key.
    pub sk: [u8; MAX_SK_LEN],
    /// Static KEM public key.
    pub pk: [u8; MAX_PK_LEN],
    /// Static X25519 secret key.
    pub x_sk: [u8; 32],
    /// Static X25519 public key.
    pub x_pk: [u8; 32],
}

fn keys(kem: Scheme, rng: &mut impl CryptoRng) -> ([u8; MAX_SK_LEN], [u8; MAX_PK_LEN], [u8; 32], [u8; 32]) {
    let mut sk = [0u8; MAX_SK_LEN];
    let mut pk = [0u8; MAX_PK_LEN];
    let _ = kem::keygen(kem, rng, &mut pk[..kem.pk_len()], &mut sk[..kem.sk_len()]);
    let mut x_sk = [0u8; 32];
    rng.fill_bytes(&mut x_sk);
    let x_pk = x25519_avr::x25519_base(&x_sk);
    (sk, pk, x_sk, x_pk)
}

/// A fresh broker for `suite`'s KEM, with no client.
pub fn broker_fixture(suite: Suite, rng: &mut impl CryptoRng) -> BrokerFixture {
    let (sk, pk, x_sk, x_pk) = keys(suite.kem(), rng);
    BrokerFixture {
        kem: suite.kem(),
        sk,
        pk,
        x_sk,
        x_pk,
        client: None,
    }
}

/// A fresh sensor `sensor-1` for `suite`'s KEM.
pub fn sensor_fixture(suite: Suite, rng: &mut impl CryptoRng) -> SensorFixture {
    let (sk, pk, x_sk, x_pk) = keys(suite.kem(), rng);
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(b"sensor-1");
    SensorFixture {
        id,
        id_len: 8,
        kem: suite.kem(),
        sk,
        pk,
        x_sk,
        x_pk,
    }
}

impl BrokerFixture {
    /// Registers `sensor` with policy `allowed`.
    pub fn with_client(mut self, sensor: &SensorFixture, allowed: SuiteSet) -> Self {
        self.client = Some((
            sensor.id,
            sensor.id_len,
            sensor.kem,
            sensor.pk,
            Some(sensor.x_pk),
            allowed,
        ));
        self
    }
    /// The broker's static KEM public key.
    pub fn kem_pk(&self) -> &[u8] {
        &self.pk[..self.kem.pk_len()]
    }
}

impl SensorFixture {
    /// The client id.
    pub fn client_id(&self) -> &[u8] {
        &self.id[..self.id_len]
    }
    /// The credentials for a handshake with `broker`.
    pub fn credentials<'a>(&'a self, broker: &'a BrokerFixture) -> SensorCredentials<'a> {
        SensorCredentials {
            client_id: self.client_id(),
            kem_sk: self.sk[..self.kem.sk_len()].into(),
            x25519_sk: Some(&self.x_sk),
            broker_kem_pk: broker.kem_pk().into(),
            broker_x25519_pk: Some(&broker.x_pk),
            x25519_static_secret: None,
        }
    }
}

impl BrokerKeys for BrokerFixture {
    fn kem_secret_key(&self, kem: Scheme) -> Option<&[u8]> {
        (kem == self.kem).then(|| &self.sk[..kem.sk_len()])
    }
    fn x25519_secret_key(&self) -> Option<&[u8; 32]> {
        Some(&self.x_sk)
    }
    fn client(&self, client_id: &[u8]) -> Option<ClientEntry<'_>> {
        let (id, len, kem, pk, x_pk, allowed) = self.client.as_ref()?;
        (&id[..*len] == client_id).then(|| ClientEntry {
            kem: *kem,
            kem_pk: &pk[..kem.pk_len()],
            x25519_pk: *x_pk,
            allowed: *allowed,
        })
    }
}
