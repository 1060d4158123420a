//! Cipher suites: one id byte fixes the KEM, the X25519 addition and the
//! symmetric family.

pub use kem_registry::Scheme;

use crate::Error;

/// Whether `kem` is compiled in (its cargo feature, spelled as its name, is on).
pub const fn kem_enabled(kem: Scheme) -> bool {
    crate::kem::compiled_in(kem)
}

/// The KEMs with KEM-MQTT suites (the registry's schemes with a wire id), in id order.
pub const KEMS: [Scheme; KEM_COUNT] = {
    let mut out = [Scheme::MlKem512; KEM_COUNT];
    let (mut n, mut id) = (0, 1);
    while id < 16 {
        if let Some(k) = Scheme::from_mqtt_id(id) {
            out[n] = k;
            n += 1;
        }
        id += 1;
    }
    out
};

/// How many KEMs have suites.
const KEM_COUNT: usize = {
    let (mut n, mut i) = (0, 0);
    while i < Scheme::ALL.len() {
        if Scheme::ALL[i].mqtt_id().is_some() {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The largest of one length over [`KEMS`].
macro_rules! max_over_kems {
    ($len:ident) => {{
        let (mut m, mut i) = (0, 0);
        while i < KEMS.len() {
            if KEMS[i].$len() > m {
                m = KEMS[i].$len();
            }
            i += 1;
        }
        m
    }};
}

/// Largest public key of any KEM with suites.
pub const MAX_PK_LEN: usize = max_over_kems!(pk_len);
/// Largest secret key of any KEM with suites.
pub const MAX_SK_LEN: usize = max_over_kems!(sk_len);
/// Largest ciphertext of any KEM with suites.
pub const MAX_CT_LEN: usize = max_over_kems!(ct_len);

// For every KEM: its public key lies inside its ephemeral secret key.
const _: () = {
    let mut i = 0;
    while i < KEMS.len() {
        let k = KEMS[i];
        assert!(k.compact_sk_pk_offset() + k.pk_len() <= k.compact_sk_len());
        i += 1;
    }
};

/// The bytes of the sensor's ephemeral-key storage ([`EphemeralKey`](crate::EphemeralKey)),
/// over the KEMs compiled in: the ephemeral secret key, and then the rest
/// of the BrokerHello (the sensor receives it there once the key is used
/// up; a hybrid's with `x25519`). The ephemeral key is the scheme's compact
/// secret key ([`Scheme::compact_sk_len`]: seeds in place of ML-KEM's and
/// LightSaber's secrets), since it never leaves the sensor; the public key
/// sits inside it ([`Scheme::compact_sk_pk_offset`]), so the sensor keeps
/// it only once.
pub(crate) const ENABLED_MAX_EPHEMERAL_SK_LEN: usize = {
    let mut m = 0;
    let mut i = 0;
    while i < KEMS.len() {
        let k = KEMS[i];
        let rest = Suite::new(k, cfg!(feature = "x25519")).broker_hello_rest_len();
        if kem_enabled(k) && k.compact_sk_len() > m {
            m = k.compact_sk_len();
        }
        if kem_enabled(k) && rest > m {
            m = rest;
        }
        i += 1;
    }
    m
};

/// The one KEM compiled in, if exactly one is (a sensor image).
const SOLE_KEM: Option<Scheme> = {
    let (mut sole, mut n, mut i) = (None, 0, 0);
    while i < KEMS.len() {
        if kem_enabled(KEMS[i]) {
            sole = Some(KEMS[i]);
            n += 1;
        }
        i += 1;
    }
    if n == 1 {
        sole
    } else {
        None
    }
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

impl Family {
    /// The family that goes with `kem`: the one on its own permutation
    /// (Ascon for CTRU-Light (Ascon), SHA3 for the Keccak-based KEMs), so a
    /// sensor carries one permutation.
    pub const fn of(kem: Scheme) -> Family {
        // With one family's KEMs compiled in, the answer is a constant and the
        // other family's code is not even compiled (`build.rs`).
        #[cfg(all(ascon_family, sha3_family))]
        return match kem.permutation() {
            kem_registry::Permutation::Ascon => Family::Ascon,
            kem_registry::Permutation::Keccak => Family::Sha3,
        };
        #[cfg(all(ascon_family, not(sha3_family)))]
        return {
            let _ = kem;
            Family::Ascon
        };
        #[cfg(all(sha3_family, not(ascon_family)))]
        return {
            let _ = kem;
            Family::Sha3
        };
    }
}

/// A cipher suite. Its id byte is `kem << 4 | mode` with mode 1 = pure
/// (KEM only) and 2 = hybrid (KEM + X25519); e.g. `0x12` =
/// CTRU-Light (Ascon) + X25519 with the Ascon family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Suite {
    kem: Scheme,
    hybrid: bool,
}

impl Suite {
    /// Every suite: each KEM of [`KEMS`] pure, then hybrid.
    pub const ALL: [Suite; 2 * KEM_COUNT] = {
        let mut out = [Suite::new(Scheme::MlKem512, false); 2 * KEM_COUNT];
        let mut i = 0;
        while i < KEM_COUNT {
            out[2 * i] = Suite::new(KEMS[i], false);
            out[2 * i + 1] = Suite::new(KEMS[i], true);
            i += 1;
        }
        out
    };

    /// The suite of `kem`, pure or hybrid. A scheme without a KEM-MQTT id
    /// ([`Scheme::mqtt_id`]) makes a suite that is never enabled.
    pub const fn new(kem: Scheme, hybrid: bool) -> Suite {
        Suite { kem, hybrid }
    }

    /// Decodes a suite id byte.
    pub const fn from_id(id: u8) -> Result<Suite, Error> {
        let hybrid = match id & 0x0F {
            1 => false,
            2 => true,
            _ => return Err(Error::UnknownSuite(id)),
        };
        match Scheme::from_mqtt_id(id >> 4) {
            Some(kem) => Ok(Suite { kem, hybrid }),
            None => Err(Error::UnknownSuite(id)),
        }
    }

    /// The id byte (0 for a scheme without a KEM-MQTT id: no suite on the wire).
    pub const fn id(self) -> u8 {
        match self.kem.mqtt_id() {
            Some(k) => (k << 4) | if self.hybrid { 2 } else { 1 },
            None => 0,
        }
    }

    /// This suite, known to be enabled (a sensor's handshake state holds
    /// no other): with one KEM compiled in, its KEM is that constant, so
    /// its lengths fold instead of indexing tables over every scheme.
    pub(crate) const fn of_enabled(self) -> Suite {
        match SOLE_KEM {
            Some(kem) => Suite::new(kem, self.hybrid),
            None => self,
        }
    }

    /// The KEM.
    pub const fn kem(self) -> Scheme {
        self.kem
    }

    /// Whether X25519 is combined with the KEM.
    pub const fn is_hybrid(self) -> bool {
        self.hybrid
    }

    /// Whether this suite is compiled in: its KEM's cargo feature, and for
    /// hybrid suites `x25519`.
    pub const fn enabled(self) -> bool {
        self.kem.mqtt_id().is_some() && kem_enabled(self.kem) && (!self.hybrid || cfg!(feature = "x25519"))
    }

    /// The symmetric family.
    pub const fn family(self) -> Family {
        Family::of(self.kem)
    }

    /// A stable name such as `ctru-light-ascon+x25519` (the registry's).
    pub const fn name(self) -> &'static str {
        if self.hybrid {
            self.kem.hybrid_name()
        } else {
            self.kem.name()
        }
    }

    /// The suite named `name` (see [`Suite::name`]).
    pub const fn from_name(name: &str) -> Option<Suite> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if kem_registry::names_equal(name, Self::ALL[i].name()) {
                return Some(Self::ALL[i]);
            }
            i += 1;
        }
        None
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
        crate::CLIENT_FINISHED_LEN
    }
}

/// A set of suites (a per-client policy): bit `i` stands for `Suite::ALL[i]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SuiteSet(u32);

const _: () = assert!(Suite::ALL.len() < 32);

impl SuiteSet {
    /// No suite.
    pub const EMPTY: SuiteSet = SuiteSet(0);

    fn bit(suite: Suite) -> u32 {
        match Suite::ALL.iter().position(|s| *s == suite) {
            Some(i) => 1 << i,
            None => 0,
        }
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
    pub fn for_kem(kem: Scheme, hybrid_only: bool) -> SuiteSet {
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
        for id in [0x00, 0x10, 0x13, 0x71, 0xF2, 0x01] {
            assert_eq!(Suite::from_id(id), Err(Error::UnknownSuite(id)));
        }
    }

    #[test]
    fn policy_sets() {
        let hybrid_only = SuiteSet::for_kem(Scheme::CtruLightAscon, true);
        assert!(hybrid_only.contains(Suite::new(Scheme::CtruLightAscon, true)));
        assert!(!hybrid_only.contains(Suite::new(Scheme::CtruLightAscon, false)));
        assert_eq!(SuiteSet::for_kem(Scheme::LightSaber, false).iter().count(), 2);
    }
}
