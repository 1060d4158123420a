//! Parameters (`SPEC.md` §1).

/// n: coefficients per polynomial; the ring is Z_q\[x\]/(x^512 + 1).
pub const N: usize = 512;
/// q.
pub const Q: u16 = 769;
/// q2: the ciphertext modulus.
pub const Q2: u16 = 256;
/// Message bytes (4 bits per block of 8 coefficients, E8 code).
pub const MSG_BYTES: usize = 32;
/// Public key bytes: 512 10-bit values.
pub const PK_BYTES: usize = 640;
/// Packed f bytes: 512 3-bit values.
pub const SK_PKE_BYTES: usize = 192;
/// Secret key bytes: PackSK(f) ‖ pk ‖ z.
pub const SK_BYTES: usize = SK_PKE_BYTES + PK_BYTES + 32;
/// Ciphertext bytes: one byte per coefficient.
pub const CT_BYTES: usize = 512;
/// Shared secret bytes.
pub const SS_BYTES: usize = 32;
/// Bytes of ID(pk), the public-key prefix hashed into G (§4).
pub const ID_BYTES: usize = 33;
/// Key-generation attempts before giving up (each fails with probability
/// about 128/769^4; exhaustion means a broken RNG).
pub const KEYGEN_ATTEMPTS: usize = 8;
