#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]
//!
//! Adding a KEM: its crate, a variant here (the `match`es then say what is
//! missing), and the firmware image feature that serves it.
#![cfg_attr(feature = "document-features", doc = "\n# Features\n")]
#![cfg_attr(feature = "document-features", doc = document_features::document_features!())]

#[cfg(feature = "ctru-light")]
use ctru_light::params as ctru;
#[cfg(feature = "kyber512-avr")]
use kyber512_avr::ml_kem_1024::params as kyber1024;
#[cfg(feature = "kyber512-avr")]
use kyber512_avr::ml_kem_768::params as kyber768;
#[cfg(feature = "kyber512-avr")]
use kyber512_avr::params as kyber;
#[cfg(feature = "lightsaber-avr")]
use lightsaber_avr::params as saber;

#[cfg(feature = "ctru-light")]
#[doc(hidden)]
pub use ctru_light;
#[doc(hidden)]
pub use kem_common;
#[cfg(feature = "kyber512-avr")]
#[doc(hidden)]
pub use kyber512_avr;
#[cfg(feature = "lightsaber-avr")]
#[doc(hidden)]
pub use lightsaber_avr;

/// NIST's ACVP known-answer files for FIPS 203 (`key-gen.json`,
/// `encap-decap.json`; provenance in the folder's README), from the
/// workspace root.
pub const ACVP_DIR: &str = "kat-vectors/ml-kem-acvp";

/// Shared-secret bytes (every scheme here).
pub const SS_LEN: usize = 32;

#[cfg(feature = "kyber512-avr")]
const _: () = assert!(kyber::SS_BYTES == SS_LEN && kyber768::SS_BYTES == SS_LEN && kyber1024::SS_BYTES == SS_LEN);
#[cfg(feature = "lightsaber-avr")]
const _: () = assert!(saber::SS_BYTES == SS_LEN);
#[cfg(feature = "ctru-light")]
const _: () = assert!(ctru::SS_BYTES == SS_LEN);

/// The length asked of a scheme whose crate is not compiled in (a build
/// configuration error: a `const` that asks fails to build).
const fn not_compiled_in() -> usize {
    panic!("this scheme's crate is not compiled in (kem-registry feature off)")
}

/// `a == b`, in a `const fn`, for names (public: no constant time; never
/// use it on secrets). Other crates' `const` lookups by name use it too.
pub const fn names_equal(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A KEM scheme: one specification, one set of official vectors, one set of
/// byte lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    /// FIPS 203 ML-KEM-512.
    MlKem512,
    /// Round-3 CRYSTALS-Kyber512.
    Kyber512R3,
    /// Round-3 LightSaber.
    LightSaber,
    /// CTRU-Light (revision 1), SHA-3 back-end.
    CtruLightSha3,
    /// CTRU-Light (revision 1), Ascon back-end.
    CtruLightAscon,
    /// FIPS 203 ML-KEM-768.
    MlKem768,
    /// FIPS 203 ML-KEM-1024.
    MlKem1024,
}

/// The permutation behind a scheme's hashes and XOFs (KEM-MQTT runs its
/// transcript hash and key schedule on the same one, so a sensor carries
/// one permutation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Permutation {
    /// Keccak-f\[1600\] (SHA-3, SHAKE).
    Keccak,
    /// Ascon-p\[12\].
    Ascon,
}

/// The largest of one length over every scheme.
#[cfg(all(feature = "kyber512-avr", feature = "lightsaber-avr", feature = "ctru-light"))]
macro_rules! max_over_schemes {
    ($len:ident) => {{
        let mut m = 0;
        let mut i = 0;
        while i < Scheme::ALL.len() {
            let l = Scheme::ALL[i].$len();
            if l > m {
                m = l;
            }
            i += 1;
        }
        m
    }};
}

/// Largest public key of any scheme.
#[cfg(all(feature = "kyber512-avr", feature = "lightsaber-avr", feature = "ctru-light"))]
pub const MAX_PK_LEN: usize = max_over_schemes!(pk_len);
/// Largest secret key of any scheme.
#[cfg(all(feature = "kyber512-avr", feature = "lightsaber-avr", feature = "ctru-light"))]
pub const MAX_SK_LEN: usize = max_over_schemes!(sk_len);
/// Largest ciphertext of any scheme.
#[cfg(all(feature = "kyber512-avr", feature = "lightsaber-avr", feature = "ctru-light"))]
pub const MAX_CT_LEN: usize = max_over_schemes!(ct_len);

impl Scheme {
    /// Every scheme.
    pub const ALL: [Scheme; 7] = [
        Scheme::MlKem512,
        Scheme::Kyber512R3,
        Scheme::LightSaber,
        Scheme::CtruLightSha3,
        Scheme::CtruLightAscon,
        Scheme::MlKem768,
        Scheme::MlKem1024,
    ];

    /// The stable short name: key files, tables, `cargo xtask kat
    /// --scheme`, and the cargo feature that selects the scheme wherever
    /// one does (`kem-mqtt`, the firmware).
    pub const fn name(self) -> &'static str {
        self.names().0
    }

    /// The name of the scheme's hybrid KEM-MQTT suite (the KEM and X25519).
    pub const fn hybrid_name(self) -> &'static str {
        self.names().1
    }

    /// Both names from one literal each.
    const fn names(self) -> (&'static str, &'static str) {
        macro_rules! names {
            ($($s:ident => $n:literal,)*) => {
                match self {
                    $(Scheme::$s => ($n, concat!($n, "+x25519")),)*
                }
            };
        }
        names! {
            MlKem512 => "ml-kem-512",
            Kyber512R3 => "kyber512-r3",
            LightSaber => "lightsaber",
            CtruLightSha3 => "ctru-light-sha3",
            CtruLightAscon => "ctru-light-ascon",
            MlKem768 => "ml-kem-768",
            MlKem1024 => "ml-kem-1024",
        }
    }

    /// The KEM's id in KEM-MQTT/1 (a suite id's high nibble), for the
    /// schemes that have suites. ML-KEM-1024 has none: its 3,168-byte
    /// secret key and 1,568-byte ciphertexts fit no 8-bit sensor we serve.
    pub const fn mqtt_id(self) -> Option<u8> {
        match self {
            Scheme::CtruLightAscon => Some(1),
            Scheme::CtruLightSha3 => Some(2),
            Scheme::MlKem512 => Some(3),
            Scheme::Kyber512R3 => Some(4),
            Scheme::LightSaber => Some(5),
            Scheme::MlKem768 => Some(6),
            Scheme::MlKem1024 => None,
        }
    }

    /// The scheme with KEM-MQTT id `id` (see [`Scheme::mqtt_id`]).
    pub const fn from_mqtt_id(id: u8) -> Option<Scheme> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if let Some(m) = Self::ALL[i].mqtt_id() {
                if m == id {
                    return Some(Self::ALL[i]);
                }
            }
            i += 1;
        }
        None
    }

    /// The permutation behind the scheme's hashes.
    pub const fn permutation(self) -> Permutation {
        match self {
            Scheme::CtruLightAscon => Permutation::Ascon,
            _ => Permutation::Keccak,
        }
    }

    /// How people write the scheme's name (tables, reports).
    pub const fn title(self) -> &'static str {
        match self {
            Scheme::MlKem512 => "ML-KEM-512",
            Scheme::Kyber512R3 => "Kyber512 (round 3)",
            Scheme::LightSaber => "LightSaber",
            Scheme::CtruLightSha3 => "CTRU-Light (SHA3)",
            Scheme::CtruLightAscon => "CTRU-Light (Ascon)",
            Scheme::MlKem768 => "ML-KEM-768",
            Scheme::MlKem1024 => "ML-KEM-1024",
        }
    }

    /// Random bytes one key generation draws when it needs no retry: d ‖ z
    /// (FIPS 203, and round-3 Kyber's two seeds), LightSaber's seed_A,
    /// seed_s and z, CTRU-Light's seed and z.
    pub const fn keygen_random_bytes(self) -> usize {
        match self {
            Scheme::LightSaber => 96,
            _ => 64,
        }
    }

    /// Whether key generation may draw again (CTRU-Light retries when f is
    /// not invertible, on public information): its cycles and its random
    /// bytes then vary from key to key.
    pub const fn keygen_retries(self) -> bool {
        matches!(self, Scheme::CtruLightSha3 | Scheme::CtruLightAscon)
    }

    /// The scheme named `name` (see [`Scheme::name`]).
    pub const fn from_name(name: &str) -> Option<Scheme> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if names_equal(name, Self::ALL[i].name()) {
                return Some(Self::ALL[i]);
            }
            i += 1;
        }
        None
    }

    /// Public (encapsulation) key bytes.
    pub const fn pk_len(self) -> usize {
        match self {
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem512 | Scheme::Kyber512R3 => kyber::EK_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem768 => kyber768::EK_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem1024 => kyber1024::EK_BYTES,
            #[cfg(feature = "lightsaber-avr")]
            Scheme::LightSaber => saber::PK_BYTES,
            #[cfg(feature = "ctru-light")]
            Scheme::CtruLightSha3 | Scheme::CtruLightAscon => ctru::PK_BYTES,
            #[allow(unreachable_patterns)]
            _ => not_compiled_in(),
        }
    }

    /// Secret (decapsulation) key bytes.
    pub const fn sk_len(self) -> usize {
        match self {
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem512 | Scheme::Kyber512R3 => kyber::DK_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem768 => kyber768::DK_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem1024 => kyber1024::DK_BYTES,
            #[cfg(feature = "lightsaber-avr")]
            Scheme::LightSaber => saber::SK_BYTES,
            #[cfg(feature = "ctru-light")]
            Scheme::CtruLightSha3 | Scheme::CtruLightAscon => ctru::SK_BYTES,
            #[allow(unreachable_patterns)]
            _ => not_compiled_in(),
        }
    }

    /// Ciphertext bytes.
    pub const fn ct_len(self) -> usize {
        match self {
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem512 | Scheme::Kyber512R3 => kyber::CT_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem768 => kyber768::CT_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem1024 => kyber1024::CT_BYTES,
            #[cfg(feature = "lightsaber-avr")]
            Scheme::LightSaber => saber::CT_BYTES,
            #[cfg(feature = "ctru-light")]
            Scheme::CtruLightSha3 | Scheme::CtruLightAscon => ctru::CT_BYTES,
            #[allow(unreachable_patterns)]
            _ => not_compiled_in(),
        }
    }

    /// Whether the scheme has a secret-key form smaller than its standard
    /// one ([`Scheme::compact_sk_len`]): ML-KEM, Kyber and LightSaber do;
    /// CTRU-Light's key is its smallest form already. Known whichever KEM
    /// crates are compiled in (the firmware's op ids follow from it).
    pub const fn has_compact_key(self) -> bool {
        !matches!(self, Scheme::CtruLightSha3 | Scheme::CtruLightAscon)
    }

    /// The smallest secret-key form the crate computes with: the ML-KEM
    /// and Kyber compact key (σ in place of ŝ's encoding, ŝ sampled again
    /// at decapsulation), LightSaber's compact key (seed_s in place of s,
    /// s generated again), CTRU-Light's secret key. A key that never leaves its
    /// device (a sensor's ephemeral key) can take it.
    pub const fn compact_sk_len(self) -> usize {
        match self {
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem512 | Scheme::Kyber512R3 => kyber::COMPACT_DK_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem768 => kyber768::COMPACT_DK_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem1024 => kyber1024::COMPACT_DK_BYTES,
            #[cfg(feature = "lightsaber-avr")]
            Scheme::LightSaber => saber::COMPACT_SK_BYTES,
            _ => self.sk_len(),
        }
    }

    /// Where the public key sits inside the secret key, after the PKE
    /// secret (ŝ, s or f): every scheme here stores secret ‖ pk ‖ (H(pk)) ‖
    /// z, the implicit-rejection secret z in the last 32 bytes.
    pub const fn sk_pk_offset(self) -> usize {
        match self {
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem512 | Scheme::Kyber512R3 => kyber::DK_PKE_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem768 => kyber768::DK_PKE_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem1024 => kyber1024::DK_PKE_BYTES,
            #[cfg(feature = "lightsaber-avr")]
            Scheme::LightSaber => saber::SK_PKE_BYTES,
            _ => self.compact_sk_pk_offset(),
        }
    }

    /// The byte ranges of a secret key that are secret: the PKE secret and
    /// z (the embedded public key and its hash are public).
    pub const fn sk_secret_ranges(self) -> [core::ops::Range<usize>; 2] {
        [0..self.sk_pk_offset(), self.sk_len() - 32..self.sk_len()]
    }

    /// [`Scheme::sk_secret_ranges`] of the compact secret key.
    pub const fn compact_sk_secret_ranges(self) -> [core::ops::Range<usize>; 2] {
        [
            0..self.compact_sk_pk_offset(),
            self.compact_sk_len() - 32..self.compact_sk_len(),
        ]
    }

    /// Where the public key sits inside the compact secret key: every
    /// scheme here stores it there (secret ‖ pk ‖ …).
    pub const fn compact_sk_pk_offset(self) -> usize {
        match self {
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem512 | Scheme::Kyber512R3 => kyber::SIGMA_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem768 => kyber768::SIGMA_BYTES,
            #[cfg(feature = "kyber512-avr")]
            Scheme::MlKem1024 => kyber1024::SIGMA_BYTES,
            #[cfg(feature = "lightsaber-avr")]
            Scheme::LightSaber => saber::SEED_BYTES,
            #[cfg(feature = "ctru-light")]
            Scheme::CtruLightSha3 | Scheme::CtruLightAscon => ctru::SK_PKE_BYTES,
            #[allow(unreachable_patterns)]
            _ => not_compiled_in(),
        }
    }

    /// The official NIST-DRBG KAT file (`.rsp`), from the workspace root
    /// (provenance: `kat-vectors/README.md`; the `# ` header line is the
    /// file's own). The scheme's crate reproduces it in its `tests/kat.rs`.
    /// The FIPS 203 sets also have NIST's ACVP vectors
    /// ([`Scheme::acvp_parameter_set`]).
    pub const fn kat_file(self) -> Option<&'static str> {
        match self {
            Scheme::MlKem512 => Some("kat-vectors/ml-kem-512/ML-KEM-512_nistdrbg_kat.rsp"),
            Scheme::Kyber512R3 => Some("kat-vectors/kyber512-r3/Kyber512_r3_PQCkemKAT_1632.rsp"),
            Scheme::LightSaber => Some("kat-vectors/lightsaber/LightSaber_PQCkemKAT_1568.rsp"),
            Scheme::CtruLightSha3 => Some("kat-vectors/ctru-light/ctru-light-sha3_PQCkemKAT_864.rsp"),
            Scheme::CtruLightAscon => Some("kat-vectors/ctru-light/ctru-light-ascon_PQCkemKAT_864.rsp"),
            Scheme::MlKem768 => Some("kat-vectors/ml-kem-768/ML-KEM-768_nistdrbg_kat.rsp"),
            Scheme::MlKem1024 => Some("kat-vectors/ml-kem-1024/ML-KEM-1024_nistdrbg_kat.rsp"),
        }
    }

    /// The `parameterSet` of the scheme's cases in NIST's ACVP files
    /// ([`ACVP_DIR`]), for the FIPS 203 sets.
    pub const fn acvp_parameter_set(self) -> Option<&'static str> {
        match self {
            Scheme::MlKem512 => Some("ML-KEM-512"),
            Scheme::MlKem768 => Some("ML-KEM-768"),
            Scheme::MlKem1024 => Some("ML-KEM-1024"),
            _ => None,
        }
    }

    /// The crate that implements this scheme (its folder under `crates/`).
    pub const fn crate_name(self) -> &'static str {
        match self {
            Scheme::MlKem512 | Scheme::Kyber512R3 | Scheme::MlKem768 | Scheme::MlKem1024 => "kyber512-avr",
            Scheme::LightSaber => "lightsaber-avr",
            Scheme::CtruLightSha3 | Scheme::CtruLightAscon => "ctru-light",
        }
    }

    /// The variant the KAT runs and the host tools use for this scheme
    /// (every variant of a scheme gives the same bytes).
    pub const fn default_kem(self) -> Kem {
        match self {
            Scheme::MlKem512 => Kem::MlKem512,
            Scheme::Kyber512R3 => Kem::Kyber512R3,
            Scheme::LightSaber => Kem::LightSaber,
            Scheme::CtruLightSha3 => Kem::CtruSha3Kred,
            Scheme::CtruLightAscon => Kem::CtruAsconKred,
            Scheme::MlKem768 => Kem::MlKem768,
            Scheme::MlKem1024 => Kem::MlKem1024,
        }
    }
}

/// A scheme with one arithmetic variant. The discriminant is the KEM's id
/// in the firmware's op catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kem {
    /// FIPS 203 ML-KEM-512.
    MlKem512 = 0,
    /// Round-3 CRYSTALS-Kyber512.
    Kyber512R3 = 1,
    /// Round-3 LightSaber.
    LightSaber = 2,
    /// CTRU-Light, SHA-3 back-end, K-RED2X arithmetic.
    CtruSha3Kred = 3,
    /// CTRU-Light, SHA-3 back-end, optimised Montgomery arithmetic.
    CtruSha3MontOpt = 4,
    /// CTRU-Light, SHA-3 back-end, plain Montgomery arithmetic.
    CtruSha3Mont = 5,
    /// CTRU-Light, Ascon back-end, K-RED2X arithmetic.
    CtruAsconKred = 6,
    /// CTRU-Light, Ascon back-end, optimised Montgomery arithmetic.
    CtruAsconMontOpt = 7,
    /// CTRU-Light, Ascon back-end, plain Montgomery arithmetic.
    CtruAsconMont = 8,
    /// FIPS 203 ML-KEM-768.
    MlKem768 = 9,
    /// FIPS 203 ML-KEM-1024.
    MlKem1024 = 10,
}

/// Firmware image families: one cargo feature (and build) each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// `kyber`: ML-KEM-512 and Kyber512-r3.
    Kyber,
    /// `lightsaber`: LightSaber.
    Saber,
    /// `ctru-light-sha3`: CTRU-Light with SHA-3, all arithmetic variants.
    CtruSha3,
    /// `ctru-light-ascon`: CTRU-Light with Ascon, all arithmetic variants.
    CtruAscon,
    /// `ml-kem-large`: ML-KEM-768 and ML-KEM-1024 (apart from `kyber`, so
    /// the ML-KEM-512 image and its figures stay as they are).
    MlKemLarge,
}

impl Group {
    /// All groups.
    pub const ALL: [Group; 5] = [
        Group::Kyber,
        Group::Saber,
        Group::CtruSha3,
        Group::CtruAscon,
        Group::MlKemLarge,
    ];

    /// The firmware cargo feature that enables the group.
    pub const fn feature(self) -> &'static str {
        match self {
            Group::Kyber => "kyber",
            Group::Saber => "lightsaber",
            Group::CtruSha3 => "ctru-light-sha3",
            Group::CtruAscon => "ctru-light-ascon",
            Group::MlKemLarge => "ml-kem-large",
        }
    }
}

impl Kem {
    /// Every KEM variant, in id order.
    pub const ALL: [Kem; 11] = [
        Kem::MlKem512,
        Kem::Kyber512R3,
        Kem::LightSaber,
        Kem::CtruSha3Kred,
        Kem::CtruSha3MontOpt,
        Kem::CtruSha3Mont,
        Kem::CtruAsconKred,
        Kem::CtruAsconMontOpt,
        Kem::CtruAsconMont,
        Kem::MlKem768,
        Kem::MlKem1024,
    ];

    /// The scheme this is a variant of.
    pub const fn scheme(self) -> Scheme {
        match self {
            Kem::MlKem512 => Scheme::MlKem512,
            Kem::Kyber512R3 => Scheme::Kyber512R3,
            Kem::LightSaber => Scheme::LightSaber,
            Kem::CtruSha3Kred | Kem::CtruSha3MontOpt | Kem::CtruSha3Mont => Scheme::CtruLightSha3,
            Kem::CtruAsconKred | Kem::CtruAsconMontOpt | Kem::CtruAsconMont => Scheme::CtruLightAscon,
            Kem::MlKem768 => Scheme::MlKem768,
            Kem::MlKem1024 => Scheme::MlKem1024,
        }
    }

    /// Arithmetic variant name.
    pub const fn variant(self) -> &'static str {
        match self {
            Kem::MlKem512 | Kem::Kyber512R3 | Kem::LightSaber | Kem::MlKem768 | Kem::MlKem1024 => "default",
            Kem::CtruSha3Kred | Kem::CtruAsconKred => "kred2x",
            Kem::CtruSha3MontOpt | Kem::CtruAsconMontOpt => "montgomery-opt",
            Kem::CtruSha3Mont | Kem::CtruAsconMont => "montgomery",
        }
    }

    /// `scheme/variant` (or just the scheme when it has one variant).
    pub const fn name(self) -> &'static str {
        match self {
            Kem::MlKem512 => "ml-kem-512",
            Kem::Kyber512R3 => "kyber512-r3",
            Kem::LightSaber => "lightsaber",
            Kem::CtruSha3Kred => "ctru-light-sha3/kred2x",
            Kem::CtruSha3MontOpt => "ctru-light-sha3/montgomery-opt",
            Kem::CtruSha3Mont => "ctru-light-sha3/montgomery",
            Kem::CtruAsconKred => "ctru-light-ascon/kred2x",
            Kem::CtruAsconMontOpt => "ctru-light-ascon/montgomery-opt",
            Kem::CtruAsconMont => "ctru-light-ascon/montgomery",
            Kem::MlKem768 => "ml-kem-768",
            Kem::MlKem1024 => "ml-kem-1024",
        }
    }

    /// The firmware image group serving this KEM.
    pub const fn group(self) -> Group {
        match self {
            Kem::MlKem512 | Kem::Kyber512R3 => Group::Kyber,
            Kem::LightSaber => Group::Saber,
            Kem::CtruSha3Kred | Kem::CtruSha3MontOpt | Kem::CtruSha3Mont => Group::CtruSha3,
            Kem::CtruAsconKred | Kem::CtruAsconMontOpt | Kem::CtruAsconMont => Group::CtruAscon,
            Kem::MlKem768 | Kem::MlKem1024 => Group::MlKemLarge,
        }
    }

    /// The firmware module implementing it (code size is looked up by this name).
    pub const fn module(self) -> &'static str {
        match self {
            Kem::MlKem512 => "ml_kem_512",
            Kem::Kyber512R3 => "kyber512_r3",
            Kem::LightSaber => "lightsaber",
            Kem::CtruSha3Kred => "ctru_sha3_kred",
            Kem::CtruSha3MontOpt => "ctru_sha3_montopt",
            Kem::CtruSha3Mont => "ctru_sha3_mont",
            Kem::CtruAsconKred => "ctru_ascon_kred",
            Kem::CtruAsconMontOpt => "ctru_ascon_montopt",
            Kem::CtruAsconMont => "ctru_ascon_mont",
            Kem::MlKem768 => "ml_kem_768",
            Kem::MlKem1024 => "ml_kem_1024",
        }
    }

    /// The published (or independently measured) row this variant is
    /// compared with, by its name in the lab's tables
    /// (`xtask/src/lab/report/published.rs`), for NTT tables in flash
    /// or (`tables_in_sram`) in SRAM: the same scheme's row of that
    /// placement (their "-stack" rows count the tables). Round-3 Kyber512
    /// and LightSaber with their best (whose stacks are those of their
    /// "-flash" rows), CTRU-Light K-RED2X with Kred, optimised Montgomery
    /// with Montgomery-opt, plain Montgomery with Montgomery-flash-sha3 (no
    /// Ascon row was published); the FIPS 203 sets with PQClean's `clean`
    /// code measured here (its tables in `.data`, so under either placement).
    pub const fn published_row(self, tables_in_sram: bool) -> Option<&'static str> {
        Some(match (self, tables_in_sram) {
            (Kem::MlKem512, _) => "ML-KEM-512 PQClean clean -O3 (measured here)",
            (Kem::MlKem768, _) => "ML-KEM-768 PQClean clean -O3 (measured here, 64 KB data space)",
            (Kem::MlKem1024, _) => "ML-KEM-1024 PQClean clean -O3 (measured here, 64 KB data space)",
            (Kem::Kyber512R3, false) => "Kyber512 Montgomery (their best)",
            (Kem::Kyber512R3, true) => "Kyber512 LUT-stack [KS25]",
            (Kem::LightSaber, false) => "LightSaber Montgomery-speed (their best)",
            (Kem::LightSaber, true) => "LightSaber Montgomery-stack",
            (Kem::CtruAsconKred, false) => "CTRU-Light Kred-ascon (their best)",
            (Kem::CtruAsconMontOpt, false) => "CTRU-Light Montgomery-opt-flash-ascon",
            (Kem::CtruAsconMontOpt, true) => "CTRU-Light Montgomery-opt-stack-ascon",
            (Kem::CtruSha3Kred, false) => "CTRU-Light Kred-sha3",
            (Kem::CtruSha3MontOpt, false) => "CTRU-Light Montgomery-opt-flash-sha3",
            (Kem::CtruSha3MontOpt, true) => "CTRU-Light Montgomery-opt-stack-sha3",
            (Kem::CtruSha3Mont, false) => "CTRU-Light Montgomery-flash-sha3",
            (Kem::CtruAsconMont, _) | (Kem::CtruAsconKred | Kem::CtruSha3Kred | Kem::CtruSha3Mont, true) => {
                return None
            }
        })
    }

    /// Public (encapsulation) key bytes.
    pub const fn pk_len(self) -> usize {
        self.scheme().pk_len()
    }

    /// Secret (decapsulation) key bytes.
    pub const fn sk_len(self) -> usize {
        self.scheme().sk_len()
    }

    /// Ciphertext bytes.
    pub const fn ct_len(self) -> usize {
        self.scheme().ct_len()
    }
}

/// Why [`keygen_compact_into`] made no key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactKeygenError {
    /// The KEM has no compact key ([`Scheme::has_compact_key`]), or its
    /// crate is not compiled in.
    NoCompactKey,
    /// The output is not [`Scheme::compact_sk_len`] bytes.
    Length,
    /// The KEM's key generation failed (the randomness ran out).
    Keygen,
}

impl core::fmt::Display for CompactKeygenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            CompactKeygenError::NoCompactKey => "the KEM has no compact key here",
            CompactKeygenError::Length => "the output is not the compact key's length",
            CompactKeygenError::Keygen => "key generation failed (randomness)",
        })
    }
}

/// Key generation into `kem`'s compact secret key (`sk`: exactly
/// [`Scheme::compact_sk_len`] bytes; the public key inside it at
/// [`Scheme::compact_sk_pk_offset`]), the form a sensor's ephemeral key
/// takes: the KEM crate's `keygen_compact_into`.
pub fn keygen_compact_into(
    kem: Kem,
    rng: &mut impl kem_common::rand_core::TryCryptoRng,
    sk: &mut [u8],
) -> Result<(), CompactKeygenError> {
    #[allow(unused_macros)]
    macro_rules! into {
        ($f:path) => {
            $f(rng, sk.try_into().map_err(|_| CompactKeygenError::Length)?).map_err(|_| CompactKeygenError::Keygen)
        };
    }
    match kem {
        #[cfg(feature = "kyber512-avr")]
        Kem::MlKem512 => into!(kyber512_avr::ml_kem_512::raw::keygen_compact_into),
        #[cfg(feature = "kyber512-avr")]
        Kem::Kyber512R3 => into!(kyber512_avr::kyber512_r3::raw::keygen_compact_into),
        #[cfg(feature = "kyber512-avr")]
        Kem::MlKem768 => into!(kyber512_avr::ml_kem_768::raw::keygen_compact_into),
        #[cfg(feature = "kyber512-avr")]
        Kem::MlKem1024 => into!(kyber512_avr::ml_kem_1024::raw::keygen_compact_into),
        #[cfg(feature = "lightsaber-avr")]
        Kem::LightSaber => into!(lightsaber_avr::keygen_compact_into),
        _ => {
            let _ = (rng, sk); // used by the arms a build without the KEM crates leaves out
            Err(CompactKeygenError::NoCompactKey)
        }
    }
}

/// Runs `$body` with `$k` the `kem_common::BufferKem` marker type of
/// `$kem` (a [`Kem`]), for code generic over every KEM: key generation,
/// encapsulation and decapsulation into caller buffers (`K::EK_ZERO`,
/// `K::keygen_into`, …). Every arm is compiled, so it is for hosts (the
/// default features: every KEM crate); a firmware image serves the KEMs its
/// features select.
///
/// ```
/// use kem_common::BufferKem;
/// use kem_registry::{with_kem, Kem};
///
/// fn ek_len(kem: Kem) -> usize {
///     with_kem!(kem, K => K::EK_ZERO.as_ref().len())
/// }
/// assert!(Kem::ALL.into_iter().all(|k| ek_len(k) == k.pk_len()));
/// ```
#[macro_export]
macro_rules! with_kem {
    ($kem:expr, $k:ident => $body:expr) => {{
        use $crate::ctru_light::{Ascon, CtruLight, Kred2x, MontgomeryOpt, MontgomeryPlain, Sha3};
        match $kem {
            $crate::Kem::MlKem512 => {
                type $k = $crate::kyber512_avr::ml_kem_512::MlKem512;
                $body
            }
            $crate::Kem::MlKem768 => {
                type $k = $crate::kyber512_avr::ml_kem_768::MlKem768;
                $body
            }
            $crate::Kem::MlKem1024 => {
                type $k = $crate::kyber512_avr::ml_kem_1024::MlKem1024;
                $body
            }
            $crate::Kem::Kyber512R3 => {
                type $k = $crate::kyber512_avr::kyber512_r3::Kyber512R3;
                $body
            }
            $crate::Kem::LightSaber => {
                type $k = $crate::lightsaber_avr::LightSaber;
                $body
            }
            $crate::Kem::CtruSha3Kred => {
                type $k = CtruLight<Sha3, Kred2x>;
                $body
            }
            $crate::Kem::CtruSha3MontOpt => {
                type $k = CtruLight<Sha3, MontgomeryOpt>;
                $body
            }
            $crate::Kem::CtruSha3Mont => {
                type $k = CtruLight<Sha3, MontgomeryPlain>;
                $body
            }
            $crate::Kem::CtruAsconKred => {
                type $k = CtruLight<Ascon, Kred2x>;
                $body
            }
            $crate::Kem::CtruAsconMontOpt => {
                type $k = CtruLight<Ascon, MontgomeryOpt>;
                $body
            }
            $crate::Kem::CtruAsconMont => {
                type $k = CtruLight<Ascon, MontgomeryPlain>;
                $body
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;
    use kem_common::BufferKem;

    #[test]
    fn compact_keys_are_smaller_exactly_where_the_scheme_says_so() {
        for s in Scheme::ALL {
            assert_eq!(s.has_compact_key(), s.compact_sk_len() < s.sk_len(), "{s:?}");
        }
    }

    #[test]
    fn every_kem_has_its_schemes_lengths_and_name() {
        for k in Kem::ALL {
            assert!(k.name().starts_with(k.scheme().name()), "{k:?}");
            let (ek, dk, ct) =
                with_kem!(k, K => (K::EK_ZERO.as_ref().len(), K::DK_ZERO.as_ref().len(), K::CT_ZERO.as_ref().len()));
            assert_eq!((ek, dk, ct), (k.pk_len(), k.sk_len(), k.ct_len()), "{k:?}");
            assert_eq!(Kem::ALL[k as usize], k);
        }
        for s in Scheme::ALL {
            assert_eq!(Scheme::from_name(s.name()), Some(s));
            assert_eq!(s.default_kem().scheme(), s);
            assert!(s.compact_sk_pk_offset() + s.pk_len() <= s.compact_sk_len());
            let [secret, z] = s.sk_secret_ranges();
            assert!(secret.end + s.pk_len() <= z.start && z.end == s.sk_len(), "{s:?}");
            let [secret, z] = s.compact_sk_secret_ranges();
            assert!(
                secret.end + s.pk_len() <= z.start && z.end == s.compact_sk_len(),
                "{s:?}"
            );
        }
        assert_eq!(Scheme::from_name("kyber768"), None);
    }
}
