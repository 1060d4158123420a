//! The primitives every scheme's time goes into, as ops of their own
//! (cargo feature `primitives`): Keccak-f\[1600\], Ascon-p\[12\] and X25519,
//! measured by `cargo xtask bench` beside the published AVR figures.
//!
//! - [`OP_KECCAK_F1600`]: request = state (200 B, lanes little-endian), reply = the permuted state;
//! - [`OP_ASCON_P12`]: request = state (40 B, words big-endian), reply = the permuted state;
//! - [`OP_X25519`]: request = scalar (32 B) ‖ u-coordinate (32 B), reply = X25519(k, u) (RFC 7748).

/// Keccak-f\[1600\] on a 200-byte state.
pub const OP_KECCAK_F1600: u8 = 0x70;
/// Ascon-p\[12\] on a 40-byte state.
pub const OP_ASCON_P12: u8 = 0x71;
/// X25519 scalar multiplication.
pub const OP_X25519: u8 = 0x72;

/// A primitive: its op id, name (a benchmark operation) and request/reply bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Primitive {
    /// Request (and marker window) id.
    pub id: u8,
    /// Its name in the benchmark tables.
    pub name: &'static str,
    /// Request bytes.
    pub request_len: u16,
    /// Reply bytes.
    pub reply_len: u16,
}

/// Every primitive op.
pub const PRIMITIVES: [Primitive; 3] = [
    Primitive {
        id: OP_KECCAK_F1600,
        name: "keccak-f1600",
        request_len: 200,
        reply_len: 200,
    },
    Primitive {
        id: OP_ASCON_P12,
        name: "ascon-p12",
        request_len: 40,
        reply_len: 40,
    },
    Primitive {
        id: OP_X25519,
        name: "x25519",
        request_len: 64,
        reply_len: 32,
    },
];

#[cfg(all(test, feature = "kems"))]
mod tests {
    use super::*;

    #[test]
    fn ids_are_free() {
        for p in PRIMITIVES {
            for (k, o) in crate::kem::kem_ops() {
                assert_ne!(p.id, crate::kem::kem_op_id(k, o));
            }
            for (r, k) in crate::rings::ops() {
                assert_ne!(p.id, crate::rings::op_id(r, k));
            }
            let taken = [
                crate::mqtt::OP_START,
                crate::mqtt::OP_FINISH,
                crate::mqtt::OP_FINISH_REST,
                crate::mqtt::OP_HELLO,
                crate::kem::OP_CTRU_DECRYPT_PRODUCT,
            ];
            assert!(!taken.contains(&p.id));
            assert!(p.id < crate::frame::OP_EXIT);
        }
    }
}
