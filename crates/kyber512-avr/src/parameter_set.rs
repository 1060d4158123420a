//! The constants of one FIPS 203 parameter set (§8, Table 2): its four
//! choices (k, η1, d_u, d_v) and every length that follows from them, from
//! one macro, so the three sets' `params` modules cannot disagree in shape.

/// The `params` items of a parameter set, in the invoking module.
macro_rules! parameter_set {
    (k: $k:literal, eta1: $eta1:literal, du: $du:literal, dv: $dv:literal $(,)?) => {
        /// k: module rank.
        pub const K: usize = $k;
        /// η1: noise of s, e and r.
        pub const ETA1: usize = $eta1;
        /// d_u: bits per coefficient of u in the ciphertext.
        pub const DU: u32 = $du;
        /// d_v: bits per coefficient of v in the ciphertext.
        pub const DV: u32 = $dv;

        /// n: coefficients per polynomial.
        pub const N: usize = 256;
        /// q.
        pub const Q: u16 = 3329;
        /// η2: noise of e1 and e2 (2 in every set).
        pub const ETA2: usize = 2;

        /// Bytes of one 12-bit-encoded polynomial.
        pub const POLY_BYTES: usize = 384;
        /// Encapsulation (public) key bytes: 384·k + 32.
        pub const EK_BYTES: usize = POLY_BYTES * K + 32;
        /// K-PKE decryption key bytes: 384·k.
        pub const DK_PKE_BYTES: usize = POLY_BYTES * K;
        /// Decapsulation (secret) key bytes: dk_pke ‖ ek ‖ H(ek) ‖ z.
        pub const DK_BYTES: usize = DK_PKE_BYTES + EK_BYTES + 64;
        /// σ bytes: the PKE secret of a compact decapsulation key, from
        /// which ŝ is sampled again where it is needed.
        pub const SIGMA_BYTES: usize = 32;
        /// Compact decapsulation key bytes: σ ‖ ek ‖ H(ek) ‖ z (ŝ
        /// sampled again from σ instead of stored: 384·k − 32 bytes less).
        pub const COMPACT_DK_BYTES: usize = SIGMA_BYTES + EK_BYTES + 64;
        /// Bytes of the compressed u part of a ciphertext.
        pub const C1_BYTES: usize = 32 * DU as usize * K;
        /// Ciphertext bytes.
        pub const CT_BYTES: usize = C1_BYTES + 32 * DV as usize;
        /// Shared secret bytes.
        pub const SS_BYTES: usize = 32;
    };
}
pub(crate) use parameter_set;
