//! LightSaber parameters (Saber round-3 specification, Table 8).

/// n.
pub const N: usize = 256;
/// l: module rank.
pub const L: usize = 2;
/// ε_q: q = 2^13.
pub const EQ: u32 = 13;
/// ε_p: p = 2^10.
pub const EP: u32 = 10;
/// ε_T: T = 2^3.
pub const ET: u32 = 3;
/// μ: secrets are centred binomial with μ/2 = 5 coin pairs (|s_i| ≤ 5).
pub const MU: usize = 10;
/// h1 = 2^(ε_q − ε_p − 1).
pub const H1: u16 = 1 << (EQ - EP - 1);
/// h2 = 2^(ε_p − 2) − 2^(ε_p − ε_T − 1) + 2^(ε_q − ε_p − 1).
pub const H2: u16 = (1 << (EP - 2)) - (1 << (EP - ET - 1)) + (1 << (EQ - EP - 1));

/// Seed bytes (seed_A, seed_s, message, keys).
pub const SEED_BYTES: usize = 32;
/// Bytes of one polynomial mod q (13 bits a coefficient).
pub const POLY_Q_BYTES: usize = (EQ as usize * N) >> 3;
/// Bytes of one polynomial mod p (10 bits a coefficient).
pub const POLY_P_BYTES: usize = (EP as usize * N) >> 3;
/// Bytes of the vector b or b' mod p.
pub const POLYVEC_P_BYTES: usize = L * POLY_P_BYTES;
/// Bytes of the T-compressed c_m.
pub const POLY_T_BYTES: usize = (ET as usize * N) >> 3;
/// Public key bytes: b ‖ seed_A.
pub const PK_BYTES: usize = POLYVEC_P_BYTES + SEED_BYTES;
/// PKE secret key bytes: s mod q.
pub const SK_PKE_BYTES: usize = L * POLY_Q_BYTES;
/// KEM secret key bytes: s ‖ pk ‖ H(pk) ‖ z.
pub const SK_BYTES: usize = SK_PKE_BYTES + PK_BYTES + 64;
/// The secret s at 4 bits a coefficient (|s_i| ≤ μ/2 = 5), as the
/// computations hold it: not a specification format.
pub const SK_NIBBLE_BYTES: usize = L * (N >> 1);
/// Compact secret key bytes (this crate's device-local format, never
/// exchanged): seed_s ‖ pk ‖ H(pk) ‖ z, s generated again from seed_s.
pub const COMPACT_SK_BYTES: usize = SEED_BYTES + PK_BYTES + 64;
/// Ciphertext bytes: b' ‖ c_m.
pub const CT_BYTES: usize = POLYVEC_P_BYTES + POLY_T_BYTES;
/// Shared secret bytes.
pub const SS_BYTES: usize = 32;

const _: () = assert!(PK_BYTES == 672 && SK_BYTES == 1568 && CT_BYTES == 736 && COMPACT_SK_BYTES == 768);
