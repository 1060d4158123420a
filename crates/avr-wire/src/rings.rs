//! The modarith ring operations (firmware feature `rings`).
//!
//! The firmware (`firmware/src/main.rs`) registers one operation per (ring, kind)
//! below; the host tools (`cargo xtask sim-test`, `bench`) use the same
//! catalog to build requests and to compute the expected results with
//! `modarith` on the host.
//!
//! Payloads are little-endian `i16` polynomials:
//! - forward / inverse: `a` → `a`;
//! - base_mul: `a ‖ b` → `a ∘ b`;
//! - base_mul_acc: `a ‖ b ‖ c` → `c + a ∘ b`;
//! - base_inv: `a` → `[invertible u8] ‖ a⁻¹`.

/// The rings of `modarith::rings`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ring {
    /// Z_769\[x\]/(x^512+1), K-RED2X.
    Ctru769 = 0,
    /// Z_3329\[x\]/(x^512+1), NTT-friendly Montgomery.
    Ctru3329 = 1,
    /// Kyber's Z_3329\[x\]/(x^256+1).
    Kyber = 2,
    /// Saber's first NTT prime (same ring as Kyber).
    Saber3329 = 3,
    /// Saber's Z_7681\[x\]/(x^256+1).
    Saber7681 = 4,
}

impl Ring {
    /// Every ring, in id order.
    pub const ALL: [Ring; 5] = [
        Ring::Ctru769,
        Ring::Ctru3329,
        Ring::Kyber,
        Ring::Saber3329,
        Ring::Saber7681,
    ];

    /// Polynomial length N.
    pub const fn n(self) -> usize {
        match self {
            Ring::Ctru769 | Ring::Ctru3329 => 512,
            _ => 256,
        }
    }

    /// The modulus q.
    pub const fn q(self) -> u16 {
        match self {
            Ring::Ctru769 => 769,
            Ring::Saber7681 => 7681,
            _ => 3329,
        }
    }

    /// The `modarith::rings` alias name.
    pub const fn name(self) -> &'static str {
        match self {
            Ring::Ctru769 => "Ctru769",
            Ring::Ctru3329 => "Ctru3329",
            Ring::Kyber => "Kyber",
            Ring::Saber3329 => "Saber3329",
            Ring::Saber7681 => "Saber7681",
        }
    }
}

/// The operations each ring registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `forward`.
    Forward = 0,
    /// `inverse`.
    Inverse = 1,
    /// `base_mul`.
    BaseMul = 2,
    /// `base_mul_acc`.
    BaseMulAcc = 3,
    /// `base_inv`.
    BaseInv = 4,
}

impl Kind {
    /// Every kind, in id order.
    pub const ALL: [Kind; 5] = [
        Kind::Forward,
        Kind::Inverse,
        Kind::BaseMul,
        Kind::BaseMulAcc,
        Kind::BaseInv,
    ];

    /// The `modarith` function name.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Forward => "forward",
            Kind::Inverse => "inverse",
            Kind::BaseMul => "base_mul",
            Kind::BaseMulAcc => "base_mul_acc",
            Kind::BaseInv => "base_inv",
        }
    }

    /// Number of input polynomials.
    pub const fn inputs(self) -> usize {
        match self {
            Kind::BaseMul => 2,
            Kind::BaseMulAcc => 3,
            _ => 1,
        }
    }

    /// Request payload bytes for polynomials of length `n`.
    pub const fn request_len(self, n: usize) -> u16 {
        (2 * n * self.inputs()) as u16
    }

    /// Reply payload bytes for polynomials of length `n`.
    pub const fn reply_len(self, n: usize) -> u16 {
        match self {
            Kind::BaseInv => 1 + 2 * n as u16,
            _ => 2 * n as u16,
        }
    }
}

/// Request (and marker window) id of an operation.
pub const fn op_id(ring: Ring, kind: Kind) -> u8 {
    crate::frame::FIRST_USER_OP + ring as u8 * 8 + kind as u8
}

/// Every registered operation.
pub fn ops() -> impl Iterator<Item = (Ring, Kind)> {
    Ring::ALL
        .into_iter()
        .flat_map(|r| Kind::ALL.into_iter().map(move |k| (r, k)))
}

/// The operation behind a request id.
pub fn decode_op(id: u8) -> Option<(Ring, Kind)> {
    ops().find(|&(r, k)| op_id(r, k) == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_decode() {
        let mut seen = [false; 256];
        for (r, k) in ops() {
            let id = op_id(r, k);
            assert!(id < crate::frame::OP_EXIT && !seen[id as usize]);
            seen[id as usize] = true;
            assert_eq!(decode_op(id), Some((r, k)));
        }
        assert_eq!(decode_op(0), None);
    }
}
