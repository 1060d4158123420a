//! The KEM half of the op catalog: every scheme and variant the firmware can
//! serve, their buffer sizes, request/reply layouts and op ids.
//!
//! Randomness is a *tape*: the host records the bytes its own run drew from
//! the RNG (e.g. the NIST DRBG of a KAT record) and sends them with the
//! request; the firmware's tape RNG hands them out in order. Layouts:
//!
//! - keygen: request `tape[TAPE_LEN]` → reply `status ‖ used u16 ‖ pk ‖ sk`;
//! - encaps: request `pk ‖ tape[TAPE_LEN]` → reply `status ‖ used u16 ‖ ct ‖ ss`;
//! - decaps: request `sk ‖ ct` → reply `ss`.
//!
//! `status` is 0 on success and 1 when the KEM returned an error (tape
//! exhausted, malformed key); `used` is the number of tape bytes consumed.
//! Which KEMs a firmware image serves depends on its cargo features (see
//! [`Kem::group`]); the catalog itself always lists all of them.

/// Bytes of randomness a request carries (the rest of the tape is padding).
/// 128 B covers CTRU-Light key generation with up to three attempts.
pub const TAPE_LEN: usize = 128;
/// Shared-secret bytes (all schemes).
pub const SS_LEN: usize = 32;
/// Reply prefix of keygen and encaps: status byte and tape bytes used.
pub const PREFIX_LEN: usize = 3;
/// First KEM op id.
pub const FIRST_KEM_OP: u8 = 0x40;
/// CTRU-Light's exact decryption product w = c·f mod 256
/// (`ctru_light::hazmat::pke_decrypt_product`, the same in every
/// arithmetic variant), served by every image with a CTRU-Light KEM, for the
/// differential test of the whole product on the device: request
/// `sk_pke[192] ‖ ct[512]` → reply `w[512]`. Not measured.
pub const OP_CTRU_DECRYPT_PRODUCT: u8 = 0x6C;
/// Request bytes of [`OP_CTRU_DECRYPT_PRODUCT`].
pub const CTRU_PRODUCT_REQUEST_LEN: usize = 192 + 512;
/// Reply bytes of [`OP_CTRU_DECRYPT_PRODUCT`].
pub const CTRU_PRODUCT_REPLY_LEN: usize = 512;

/// A KEM scheme with one arithmetic variant.
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
}

/// The three KEM operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KemOp {
    /// Key generation.
    Keygen = 0,
    /// Encapsulation.
    Encaps = 1,
    /// Decapsulation.
    Decaps = 2,
}

impl KemOp {
    /// All operations, in id order.
    pub const ALL: [KemOp; 3] = [KemOp::Keygen, KemOp::Encaps, KemOp::Decaps];

    /// Short name.
    pub const fn name(self) -> &'static str {
        match self {
            KemOp::Keygen => "keygen",
            KemOp::Encaps => "encaps",
            KemOp::Decaps => "decaps",
        }
    }
}

/// Firmware image groups: one cargo feature (and build) each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    /// `kyber`: ML-KEM-512 and Kyber512-r3.
    Kyber,
    /// `saber`: LightSaber.
    Saber,
    /// `ctru-sha3`: CTRU-Light with SHA-3, all arithmetic variants.
    CtruSha3,
    /// `ctru-ascon`: CTRU-Light with Ascon, all arithmetic variants.
    CtruAscon,
}

impl Group {
    /// All groups.
    pub const ALL: [Group; 4] = [Group::Kyber, Group::Saber, Group::CtruSha3, Group::CtruAscon];

    /// The firmware cargo feature that enables the group.
    pub const fn feature(self) -> &'static str {
        match self {
            Group::Kyber => "kyber",
            Group::Saber => "saber",
            Group::CtruSha3 => "ctru-sha3",
            Group::CtruAscon => "ctru-ascon",
        }
    }
}

impl Kem {
    /// Every KEM variant, in id order.
    pub const ALL: [Kem; 9] = [
        Kem::MlKem512,
        Kem::Kyber512R3,
        Kem::LightSaber,
        Kem::CtruSha3Kred,
        Kem::CtruSha3MontOpt,
        Kem::CtruSha3Mont,
        Kem::CtruAsconKred,
        Kem::CtruAsconMontOpt,
        Kem::CtruAsconMont,
    ];

    /// Scheme name as `cargo xtask kat --scheme` spells it (the KAT file to reproduce).
    pub const fn scheme(self) -> &'static str {
        match self {
            Kem::MlKem512 => "ml-kem-512",
            Kem::Kyber512R3 => "kyber512-r3",
            Kem::LightSaber => "lightsaber",
            Kem::CtruSha3Kred | Kem::CtruSha3MontOpt | Kem::CtruSha3Mont => "ctru-light-sha3",
            Kem::CtruAsconKred | Kem::CtruAsconMontOpt | Kem::CtruAsconMont => "ctru-light-ascon",
        }
    }

    /// Arithmetic variant name.
    pub const fn variant(self) -> &'static str {
        match self {
            Kem::MlKem512 | Kem::Kyber512R3 | Kem::LightSaber => "default",
            Kem::CtruSha3Kred | Kem::CtruAsconKred => "kred2x",
            Kem::CtruSha3MontOpt | Kem::CtruAsconMontOpt => "montgomery-opt",
            Kem::CtruSha3Mont | Kem::CtruAsconMont => "montgomery",
        }
    }

    /// `scheme/variant` (or just the scheme when it has one variant).
    pub fn name(self) -> &'static str {
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
        }
    }

    /// The firmware image group serving this KEM.
    pub const fn group(self) -> Group {
        match self {
            Kem::MlKem512 | Kem::Kyber512R3 => Group::Kyber,
            Kem::LightSaber => Group::Saber,
            Kem::CtruSha3Kred | Kem::CtruSha3MontOpt | Kem::CtruSha3Mont => Group::CtruSha3,
            Kem::CtruAsconKred | Kem::CtruAsconMontOpt | Kem::CtruAsconMont => Group::CtruAscon,
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
        }
    }

    /// Public (encapsulation) key bytes.
    pub const fn pk_len(self) -> usize {
        match self {
            Kem::MlKem512 | Kem::Kyber512R3 => 800,
            Kem::LightSaber => 672,
            _ => 640,
        }
    }

    /// Secret (decapsulation) key bytes.
    pub const fn sk_len(self) -> usize {
        match self {
            Kem::MlKem512 | Kem::Kyber512R3 => 1632,
            Kem::LightSaber => 1568,
            _ => 864,
        }
    }

    /// Ciphertext bytes.
    pub const fn ct_len(self) -> usize {
        match self {
            Kem::MlKem512 | Kem::Kyber512R3 => 768,
            Kem::LightSaber => 736,
            _ => 512,
        }
    }

    /// Static buffer bytes the firmware needs for this KEM: the largest pair
    /// of buffers one operation uses at once (keygen pk+sk, encaps pk+ct,
    /// decaps sk+ct) — the three never run at the same time, so they share.
    pub const fn arena_len(self) -> usize {
        let (pk, sk, ct) = (self.pk_len(), self.sk_len(), self.ct_len());
        max(max(pk + sk, pk + ct), sk + ct)
    }

    /// Request payload bytes of `op`.
    pub const fn request_len(self, op: KemOp) -> u16 {
        (match op {
            KemOp::Keygen => TAPE_LEN,
            KemOp::Encaps => self.pk_len() + TAPE_LEN,
            KemOp::Decaps => self.sk_len() + self.ct_len(),
        }) as u16
    }

    /// Reply payload bytes of `op`.
    pub const fn reply_len(self, op: KemOp) -> u16 {
        (match op {
            KemOp::Keygen => PREFIX_LEN + self.pk_len() + self.sk_len(),
            KemOp::Encaps => PREFIX_LEN + self.ct_len() + SS_LEN,
            KemOp::Decaps => SS_LEN,
        }) as u16
    }
}

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// Request (and marker window) id of a KEM operation.
pub const fn kem_op_id(kem: Kem, op: KemOp) -> u8 {
    FIRST_KEM_OP + kem as u8 * 4 + op as u8
}

/// Every KEM operation.
pub fn kem_ops() -> impl Iterator<Item = (Kem, KemOp)> {
    Kem::ALL
        .into_iter()
        .flat_map(|k| KemOp::ALL.into_iter().map(move |o| (k, o)))
}

/// The KEM operation behind a request id.
pub fn decode_kem_op(id: u8) -> Option<(Kem, KemOp)> {
    kem_ops().find(|&(k, o)| kem_op_id(k, o) == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_clear_of_ring_ops() {
        let mut seen = [false; 256];
        for (r, k) in crate::ops() {
            seen[crate::op_id(r, k) as usize] = true;
        }
        for (k, o) in kem_ops() {
            let id = kem_op_id(k, o);
            assert!(id < avr_harness::protocol::OP_EXIT && !seen[id as usize], "{k:?} {o:?}");
            seen[id as usize] = true;
            assert_eq!(decode_kem_op(id), Some((k, o)));
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(Kem::MlKem512.arena_len(), 2432);
        assert_eq!(Kem::LightSaber.arena_len(), 2304);
        assert_eq!(Kem::CtruAsconKred.arena_len(), 1504);
        assert_eq!(Kem::CtruSha3Mont.reply_len(KemOp::Keygen), 3 + 640 + 864);
        for k in Kem::ALL {
            assert!(k.name().starts_with(k.scheme()));
        }
    }
}
