//! Cipher suites: one id byte fixes the KEM, the X25519 addition and the
//! symmetric family.

use kem_registry::Scheme;

use crate::Error;

/// The key-encapsulation mechanism of a suite: its id on the wire
/// (a suite id's high nibble); what it is, its name and its lengths are the
/// registry's ([`KemId::scheme`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KemId {
    /// CTRU-Light with the Ascon back-end.
    CtruLightAscon = 1,
    /// CTRU-Light with the SHA-3 back-end.
    CtruLightSha3 = 2,
    /// ML-KEM-512, FIPS 203.
    MlKem512 = 3,
    /// Kyber512, NIST round 3.
    Kyber512R3 = 4,
    /// LightSaber, NIST round 3.
    LightSaber = 5,
}

impl KemId {
    /// Every KEM, in id order.
    pub const ALL: [KemId; 5] = [
        KemId::CtruLightAscon,
        KemId::CtruLightSha3,
        KemId::MlKem512,
        KemId::Kyber512R3,
        KemId::LightSaber,
    ];

    /// The KEM with this id (the high nibble of a suite id).
    pub const fn from_id(id: u8) -> Option<KemId> {
        match id {
            1 => Some(KemId::CtruLightAscon),
            2 => Some(KemId::CtruLightSha3),
            3 => Some(KemId::MlKem512),
            4 => Some(KemId::Kyber512R3),
            5 => Some(KemId::LightSaber),
            _ => None,
        }
    }

    /// The registry's scheme behind this id.
    pub const fn scheme(self) -> Scheme {
        match self {
            KemId::CtruLightAscon => Scheme::CtruLightAscon,
            KemId::CtruLightSha3 => Scheme::CtruLightSha3,
            KemId::MlKem512 => Scheme::MlKem512,
            KemId::Kyber512R3 => Scheme::Kyber512R3,
            KemId::LightSaber => Scheme::LightSaber,
        }
    }

    /// The stable short name used in key files and tables (the registry's).
    pub const fn name(self) -> &'static str {
        self.scheme().name()
    }

    /// The KEM named `name` (see [`KemId::name`]).
    pub fn from_name(name: &str) -> Option<KemId> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Public-key length in bytes.
    pub const fn pk_len(self) -> usize {
        self.scheme().pk_len()
    }

    /// Secret-key length in bytes.
    pub const fn sk_len(self) -> usize {
        self.scheme().sk_len()
    }

    /// Length of the sensor's ephemeral secret key: the scheme's compact
    /// secret key (LightSaber's holds s at 4 bits a coefficient; every other
    /// scheme's is its secret key), since it never leaves the sensor.
    pub const fn ephemeral_sk_len(self) -> usize {
        self.scheme().compact_sk_len()
    }

    /// Where the public key sits inside the ephemeral secret key: every KEM
    /// here stores it there (secret ‖ pk ‖ …), so a sensor keeps its
    /// ephemeral public key only once.
    pub const fn ephemeral_pk_offset(self) -> usize {
        self.scheme().compact_sk_pk_offset()
    }

    /// Ciphertext length in bytes.
    pub const fn ct_len(self) -> usize {
        self.scheme().ct_len()
    }

    /// Whether this KEM is compiled in (its cargo feature is on).
    pub const fn enabled(self) -> bool {
        match self {
            KemId::CtruLightAscon => cfg!(feature = "ctru-light-ascon"),
            KemId::CtruLightSha3 => cfg!(feature = "ctru-light-sha3"),
            KemId::MlKem512 => cfg!(feature = "ml-kem-512"),
            KemId::Kyber512R3 => cfg!(feature = "kyber512-r3"),
            KemId::LightSaber => cfg!(feature = "lightsaber"),
        }
    }

    /// The symmetric family that goes with this KEM: Ascon for CTRU-Light
    /// (Ascon), SHA3 for the Keccak-based KEMs (one permutation on the sensor).
    pub const fn family(self) -> Family {
        // With one family's KEMs compiled in, the answer is a constant and the
        // other family's code is not even compiled (`build.rs`).
        #[cfg(all(ascon_family, sha3_family))]
        return match self {
            KemId::CtruLightAscon => Family::Ascon,
            _ => Family::Sha3,
        };
        #[cfg(all(ascon_family, not(sha3_family)))]
        return Family::Ascon;
        #[cfg(all(sha3_family, not(ascon_family)))]
        return Family::Sha3;
    }
}

/// Largest public key of any KEM.
pub const MAX_PK_LEN: usize = kem_registry::MAX_PK_LEN;
/// Largest secret key of any KEM.
pub const MAX_SK_LEN: usize = kem_registry::MAX_SK_LEN;
/// Largest ciphertext of any KEM.
pub const MAX_CT_LEN: usize = kem_registry::MAX_CT_LEN;

// For every KEM: its public key lies inside its ephemeral secret key, and
// the rest of a (hybrid) BrokerHello fits that key's storage (the sensor
// receives it there once the ephemeral key is used up).
const _: () = {
    let mut i = 0;
    while i < KemId::ALL.len() {
        let k = KemId::ALL[i];
        assert!(k.ephemeral_pk_offset() + k.pk_len() <= k.ephemeral_sk_len());
        assert!(Suite::new(k, true).broker_hello_rest_len() <= k.ephemeral_sk_len());
        i += 1;
    }
};

/// Largest ephemeral secret key of the KEMs compiled in (sizes the sensor's
/// ephemeral-key state).
pub(crate) const ENABLED_MAX_EPHEMERAL_SK_LEN: usize = {
    let mut m = 0;
    let mut i = 0;
    while i < KemId::ALL.len() {
        let k = KemId::ALL[i];
        if k.enabled() && k.ephemeral_sk_len() > m {
            m = k.ephemeral_sk_len();
        }
        i += 1;
    }
    m
};

/// The symmetric family used for the transcript hash and the key schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Ascon-XOF128 (transcript) and Ascon-CXOF128 (KDF, MAC).
    #[cfg(ascon_family)]
    Ascon,
    /// SHA3-256 (transcript) and SHAKE256 (KDF, MAC).
    #[cfg(sha3_family)]
    Sha3,
}

/// A cipher suite. Its id byte is `kem << 4 | mode` with mode 1 = pure
/// (KEM only) and 2 = hybrid (KEM + X25519); e.g. `0x12` =
/// CTRU-Light (Ascon) + X25519 with the Ascon family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Suite {
    kem: KemId,
    hybrid: bool,
}

impl Suite {
    /// Every suite: each KEM pure and hybrid.
    pub const ALL: [Suite; 10] = [
        Suite::new(KemId::CtruLightAscon, false),
        Suite::new(KemId::CtruLightAscon, true),
        Suite::new(KemId::CtruLightSha3, false),
        Suite::new(KemId::CtruLightSha3, true),
        Suite::new(KemId::MlKem512, false),
        Suite::new(KemId::MlKem512, true),
        Suite::new(KemId::Kyber512R3, false),
        Suite::new(KemId::Kyber512R3, true),
        Suite::new(KemId::LightSaber, false),
        Suite::new(KemId::LightSaber, true),
    ];

    /// The suite of `kem`, pure or hybrid.
    pub const fn new(kem: KemId, hybrid: bool) -> Suite {
        Suite { kem, hybrid }
    }

    /// Decodes a suite id byte.
    pub const fn from_id(id: u8) -> Result<Suite, Error> {
        let hybrid = match id & 0x0F {
            1 => false,
            2 => true,
            _ => return Err(Error::UnknownSuite(id)),
        };
        match KemId::from_id(id >> 4) {
            Some(kem) => Ok(Suite { kem, hybrid }),
            None => Err(Error::UnknownSuite(id)),
        }
    }

    /// The id byte.
    pub const fn id(self) -> u8 {
        ((self.kem as u8) << 4) | if self.hybrid { 2 } else { 1 }
    }

    /// The KEM.
    pub const fn kem(self) -> KemId {
        self.kem
    }

    /// Whether X25519 is combined with the KEM.
    pub const fn is_hybrid(self) -> bool {
        self.hybrid
    }

    /// Whether this suite is compiled in: its KEM's cargo feature, and for
    /// hybrid suites `x25519`.
    pub const fn enabled(self) -> bool {
        self.kem.enabled() && (!self.hybrid || cfg!(feature = "x25519"))
    }

    /// The symmetric family.
    pub const fn family(self) -> Family {
        self.kem.family()
    }

    /// A stable name such as `ctru-light-ascon+x25519`.
    pub const fn name(self) -> &'static str {
        match (self.kem, self.hybrid) {
            (KemId::CtruLightAscon, false) => "ctru-light-ascon",
            (KemId::CtruLightAscon, true) => "ctru-light-ascon+x25519",
            (KemId::CtruLightSha3, false) => "ctru-light-sha3",
            (KemId::CtruLightSha3, true) => "ctru-light-sha3+x25519",
            (KemId::MlKem512, false) => "ml-kem-512",
            (KemId::MlKem512, true) => "ml-kem-512+x25519",
            (KemId::Kyber512R3, false) => "kyber512-r3",
            (KemId::Kyber512R3, true) => "kyber512-r3+x25519",
            (KemId::LightSaber, false) => "lightsaber",
            (KemId::LightSaber, true) => "lightsaber+x25519",
        }
    }

    /// The suite named `name` (see [`Suite::name`]).
    pub fn from_name(name: &str) -> Option<Suite> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Length of the ClientHello with a client id of `id_len` bytes.
    pub const fn client_hello_len(self, id_len: usize) -> usize {
        4 + id_len + 32 + self.kem.pk_len() + self.kem.ct_len() + if self.hybrid { 32 } else { 0 }
    }

    /// Length of the BrokerHello.
    pub const fn broker_hello_len(self) -> usize {
        3 + 32 + 2 * self.kem.ct_len() + if self.hybrid { 32 } else { 0 } + crate::MAC_LEN
    }

    /// Length of the BrokerHello's first part (header, nonce, the
    /// ciphertext to the sensor's ephemeral key): what
    /// `AwaitBrokerHello::receive_broker_hello_head` takes.
    pub const fn broker_hello_head_len(self) -> usize {
        3 + 32 + self.kem.ct_len()
    }

    /// Length of the rest of the BrokerHello (the ciphertext to the sensor's
    /// static key, the X25519 share, BrokerFinished): it fits the ephemeral
    /// secret key's storage, which receives it.
    pub const fn broker_hello_rest_len(self) -> usize {
        self.broker_hello_len() - self.broker_hello_head_len()
    }

    /// Length of the ClientFinished.
    pub const fn client_finished_len(self) -> usize {
        2 + crate::MAC_LEN
    }
}

/// A set of suites (a per-client policy): bit `i` stands for `Suite::ALL[i]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SuiteSet(u16);

impl SuiteSet {
    /// No suite.
    pub const EMPTY: SuiteSet = SuiteSet(0);

    fn bit(suite: Suite) -> u16 {
        let i = Suite::ALL.iter().position(|s| *s == suite).unwrap_or(15);
        1 << i
    }

    /// The set with `suite` added.
    pub fn with(self, suite: Suite) -> SuiteSet {
        SuiteSet(self.0 | Self::bit(suite))
    }

    /// Whether `suite` is in the set.
    pub fn contains(self, suite: Suite) -> bool {
        self.0 & Self::bit(suite) != 0
    }

    /// The suites of `kem`: hybrid only, or pure and hybrid.
    pub fn for_kem(kem: KemId, hybrid_only: bool) -> SuiteSet {
        let s = SuiteSet::EMPTY.with(Suite::new(kem, true));
        if hybrid_only {
            s
        } else {
            s.with(Suite::new(kem, false))
        }
    }

    /// Iterates over the suites in the set.
    pub fn iter(self) -> impl Iterator<Item = Suite> {
        Suite::ALL.into_iter().filter(move |s| self.contains(*s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_errors() {
        for s in Suite::ALL {
            assert_eq!(Suite::from_id(s.id()), Ok(s));
            assert_eq!(Suite::from_name(s.name()), Some(s));
        }
        for id in [0x00, 0x10, 0x13, 0x61, 0xF2, 0x01] {
            assert_eq!(Suite::from_id(id), Err(Error::UnknownSuite(id)));
        }
    }

    #[test]
    fn policy_sets() {
        let hybrid_only = SuiteSet::for_kem(KemId::CtruLightAscon, true);
        assert!(hybrid_only.contains(Suite::new(KemId::CtruLightAscon, true)));
        assert!(!hybrid_only.contains(Suite::new(KemId::CtruLightAscon, false)));
        assert_eq!(SuiteSet::for_kem(KemId::LightSaber, false).iter().count(), 2);
    }
}
