//! The KEM half of the op catalog: for every KEM of the registry
//! (`kem_registry::Kem`), its buffer sizes, request/reply layouts and op ids.
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
//! `Kem::group`); the catalog itself always lists all of them.
//!
//! A KEM with a compact secret key (`Scheme::compact_sk_len`: ML-KEM,
//! Kyber, LightSaber; the form a sensor's ephemeral key takes) has two
//! more operations, [`CompactKeyOp`], so that the key form's cost is
//! measured apart from the handshake around it:
//!
//! - compact keygen: request `tape[TAPE_LEN]` → reply `status ‖ used u16 ‖ sk`,
//!   the public key inside `sk` at `Scheme::compact_sk_pk_offset`;
//! - compact decaps: request `sk ‖ ct` → reply `ss`.

/// Bytes of randomness a request carries (the rest of the tape is padding).
/// 128 B covers CTRU-Light key generation with up to three attempts.
pub const TAPE_LEN: usize = 128;
/// Shared-secret bytes (all schemes).
pub const SS_LEN: usize = kem_registry::SS_LEN;
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
#[cfg(feature = "ctru-light")]
pub const CTRU_PRODUCT_REQUEST_LEN: usize = ctru_light::params::SK_PKE_BYTES + ctru_light::params::CT_BYTES;
/// Reply bytes of [`OP_CTRU_DECRYPT_PRODUCT`].
#[cfg(feature = "ctru-light")]
pub const CTRU_PRODUCT_REPLY_LEN: usize = ctru_light::params::CT_BYTES;

pub use kem_registry::{Group, Kem, Scheme};

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

/// The operations of a compact secret key (the module docs give their layouts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompactKeyOp {
    /// Key generation into the compact key.
    Keygen = 0,
    /// Decapsulation with the compact key.
    Decaps = 1,
}

impl CompactKeyOp {
    /// Both operations, in id order.
    pub const ALL: [CompactKeyOp; 2] = [CompactKeyOp::Keygen, CompactKeyOp::Decaps];

    /// Short name.
    pub const fn name(self) -> &'static str {
        match self {
            CompactKeyOp::Keygen => "keygen-compact",
            CompactKeyOp::Decaps => "decaps-compact",
        }
    }
}

/// First compact-key op id.
pub const FIRST_COMPACT_KEY_OP: u8 = 0x73;

/// Request id of a compact-key operation of `kem`; `None` where `kem`
/// has no compact key.
pub const fn compact_key_op_id(kem: Kem, op: CompactKeyOp) -> Option<u8> {
    if !kem.scheme().has_compact_key() {
        return None;
    }
    // Dense over the KEMs that have one, in `Kem::ALL`'s order.
    let mut before = 0u8;
    let mut i = 0;
    while i < Kem::ALL.len() && Kem::ALL[i] as u8 != kem as u8 {
        if Kem::ALL[i].scheme().has_compact_key() {
            before += 1;
        }
        i += 1;
    }
    Some(FIRST_COMPACT_KEY_OP + 2 * before + op as u8)
}

/// Request payload bytes of a compact-key operation of `kem`.
pub const fn compact_key_request_len(kem: Kem, op: CompactKeyOp) -> u16 {
    (match op {
        CompactKeyOp::Keygen => TAPE_LEN,
        CompactKeyOp::Decaps => kem.scheme().compact_sk_len() + kem.ct_len(),
    }) as u16
}

/// Reply payload bytes of a compact-key operation of `kem`.
pub const fn compact_key_reply_len(kem: Kem, op: CompactKeyOp) -> u16 {
    (match op {
        CompactKeyOp::Keygen => PREFIX_LEN + kem.scheme().compact_sk_len(),
        CompactKeyOp::Decaps => SS_LEN,
    }) as u16
}

/// Static buffer bytes the firmware needs for `kem`: the largest pair of
/// buffers one operation uses at once (keygen pk+sk, encaps pk+ct, decaps
/// sk+ct) — the three never run at the same time, so they share.
pub const fn arena_len(kem: Kem) -> usize {
    let (pk, sk, ct) = (kem.pk_len(), kem.sk_len(), kem.ct_len());
    max(max(pk + sk, pk + ct), sk + ct)
}

/// Request payload bytes of `op` of `kem`.
pub const fn request_len(kem: Kem, op: KemOp) -> u16 {
    (match op {
        KemOp::Keygen => TAPE_LEN,
        KemOp::Encaps => kem.pk_len() + TAPE_LEN,
        KemOp::Decaps => kem.sk_len() + kem.ct_len(),
    }) as u16
}

/// Reply payload bytes of `op` of `kem`.
pub const fn reply_len(kem: Kem, op: KemOp) -> u16 {
    (match op {
        KemOp::Keygen => PREFIX_LEN + kem.pk_len() + kem.sk_len(),
        KemOp::Encaps => PREFIX_LEN + kem.ct_len() + SS_LEN,
        KemOp::Decaps => SS_LEN,
    }) as u16
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
    FIRST_KEM_OP + kem as u8 * 3 + op as u8
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
        for (r, k) in crate::rings::ops() {
            seen[crate::rings::op_id(r, k) as usize] = true;
        }
        for (k, o) in kem_ops() {
            let id = kem_op_id(k, o);
            assert!(id < crate::frame::OP_EXIT && !seen[id as usize], "{k:?} {o:?}");
            seen[id as usize] = true;
            assert_eq!(decode_kem_op(id), Some((k, o)));
        }
        let mut compact = 0;
        for k in Kem::ALL {
            for o in CompactKeyOp::ALL {
                let Some(id) = compact_key_op_id(k, o) else {
                    assert!(!k.scheme().has_compact_key(), "{k:?}");
                    continue;
                };
                compact += 1;
                let taken = [
                    crate::mqtt::OP_START,
                    crate::mqtt::OP_FINISH,
                    crate::mqtt::OP_FINISH_REST,
                    crate::mqtt::OP_HELLO,
                    OP_CTRU_DECRYPT_PRODUCT,
                ];
                assert!(
                    id < crate::frame::OP_EXIT && !seen[id as usize] && !taken.contains(&id),
                    "{k:?} {o:?}"
                );
                assert!(crate::primitives::PRIMITIVES.iter().all(|p| p.id != id), "{k:?} {o:?}");
                seen[id as usize] = true;
            }
        }
        // ML-KEM-512/768/1024, Kyber512 and LightSaber: two each.
        assert_eq!(compact, 10);
    }

    #[test]
    fn sizes() {
        let ctru = Kem::CtruSha3Mont;
        assert_eq!(arena_len(ctru), ctru.sk_len() + ctru.pk_len());
        assert_eq!(
            reply_len(ctru, KemOp::Keygen) as usize,
            PREFIX_LEN + ctru.pk_len() + ctru.sk_len()
        );
        for k in Kem::ALL {
            assert!(arena_len(k) >= k.sk_len() + k.ct_len() && arena_len(k) >= k.pk_len() + k.sk_len());
        }
    }
}
