#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
//! What the KEM crates of this workspace share, so each fact lives once:
//! little-endian bit packing, the [`SharedSecret`] type, RNG plumbing,
//! wiping secrets ([`Wipe`]).

use core::fmt;

pub use kem;
pub use rand_core;
use rand_core::{TryCryptoRng, TryRng};
use subtle::{Choice, ConstantTimeEq};
use zeroize::Zeroize;

/// Where an encryption puts its ciphertext: into a buffer (encapsulation),
/// or compared with the received one as the bytes come (decapsulation's
/// re-encryption, which so needs no second ciphertext buffer). An enum
/// rather than a closure type parameter: a closure type per caller would
/// compile the whole encryption once per caller. `N` is the ciphertext
/// length: a constant bound makes each byte's range check a constant
/// comparison (with slices the re-encryption grew by 1.5 KB on the AVR).
pub enum CiphertextSink<'a, const N: usize> {
    /// Writes the ciphertext.
    Write(&'a mut [u8; N]),
    /// ORs each byte's difference from `expected` into `diff`.
    Compare {
        /// The received ciphertext.
        expected: &'a [u8; N],
        /// The OR of all byte differences so far.
        diff: u8,
    },
}

impl<'a, const N: usize> CiphertextSink<'a, N> {
    /// A sink comparing with `expected`.
    pub fn compare(expected: &'a [u8; N]) -> Self {
        CiphertextSink::Compare { expected, diff: 0 }
    }

    /// Byte `pos` of the ciphertext. Branches on the sink's kind (public),
    /// never on the byte; a position outside the buffer is dropped when
    /// writing and counts as a difference when comparing.
    #[inline(always)]
    pub fn put(&mut self, pos: usize, byte: u8) {
        match self {
            CiphertextSink::Write(ct) => {
                if let Some(c) = ct.get_mut(pos) {
                    *c = byte;
                }
            }
            CiphertextSink::Compare { expected, diff } => *diff |= byte ^ expected.get(pos).copied().unwrap_or(!byte),
        }
    }

    /// For a comparing sink: whether every byte put so far equalled the
    /// expected one. Positions never put are not compared: the encryptions
    /// using it put every ciphertext byte. A writing sink is never "equal".
    pub fn equal(&self) -> Choice {
        match self {
            CiphertextSink::Compare { diff, .. } => is_zero(*diff),
            CiphertextSink::Write(_) => Choice::from(0),
        }
    }
}

/// Zeroizes secret buffers through `zeroize` (volatile writes and a
/// compiler fence), in one out-of-line loop per element type.
///
/// Why not `x.zeroize()` on an array: it is inlined with its length known
/// and unrolled at opt-level 3, one volatile store per element. On the AVR
/// a store to a stack slot beyond `std`'s 63-byte displacement then costs
/// seven instructions (moving the frame pointer there and back, with
/// interrupts saved around it): wiping the buffers of one LightSaber
/// decapsulation took 2.5 KB of code. Through [`wipe_bytes`] it is a call.
pub trait Wipe {
    /// Overwrites `self` with zeros.
    fn wipe(&mut self);
}

/// A key generation into caller buffers that leaves no key material behind
/// when it fails (its RNG, part-way: public): `keygen` fills `pk` and `sk`,
/// and on an error both are wiped.
#[inline(always)]
pub fn keygen_or_wipe<E, const P: usize, const S: usize>(
    pk: &mut [u8; P],
    sk: &mut [u8; S],
    keygen: impl FnOnce(&mut [u8; P], &mut [u8; S]) -> Result<(), E>,
) -> Result<(), E> {
    let result = keygen(pk, sk);
    if result.is_err() {
        sk.wipe();
        pk.wipe();
    }
    result
}

/// Runs `keygen` on the caller's secret-key buffer alone (the public key
/// lies inside it); on an error the buffer is wiped.
#[inline(always)]
pub fn secret_keygen_or_wipe<E, const S: usize>(
    sk: &mut [u8; S],
    keygen: impl FnOnce(&mut [u8; S]) -> Result<(), E>,
) -> Result<(), E> {
    let result = keygen(sk);
    if result.is_err() {
        sk.wipe();
    }
    result
}

/// Zeroizes `bytes` (the loop behind [`Wipe`] for byte buffers).
#[inline(never)]
pub fn wipe_bytes(bytes: &mut [u8]) {
    // Element by element (the slice impl builds an iterator on the stack and
    // costs about twice as many cycles a byte on the AVR), four a turn: the
    // loop's pointer update and compare are paid once per four stores.
    let mut quads = bytes.chunks_exact_mut(4);
    for quad in &mut quads {
        for b in quad {
            b.zeroize();
        }
    }
    for b in quads.into_remainder() {
        b.zeroize();
    }
}

/// Zeroizes `values` (the loop behind [`Wipe`] for coefficient buffers).
#[inline(never)]
pub fn wipe_i16(values: &mut [i16]) {
    let mut quads = values.chunks_exact_mut(4); // as in wipe_bytes
    for quad in &mut quads {
        for v in quad {
            v.zeroize();
        }
    }
    for v in quads.into_remainder() {
        v.zeroize();
    }
}

impl Wipe for [u8] {
    #[inline(always)]
    fn wipe(&mut self) {
        wipe_bytes(self);
    }
}

impl<const N: usize> Wipe for [u8; N] {
    #[inline(always)]
    fn wipe(&mut self) {
        wipe_bytes(self);
    }
}

impl<const N: usize, const M: usize> Wipe for [[u8; M]; N] {
    #[inline(always)]
    fn wipe(&mut self) {
        wipe_bytes(self.as_flattened_mut());
    }
}

impl<const N: usize> Wipe for [i16; N] {
    #[inline(always)]
    fn wipe(&mut self) {
        wipe_i16(self);
    }
}

/// Packs `count` values of `d` bits (1 ≤ d ≤ 16; upper bits ignored) as a
/// little-endian bit stream into `out` (count·d/8 bytes).
#[inline]
pub fn pack_bits(d: u32, count: usize, out: &mut [u8], value: impl FnMut(usize) -> u16) {
    let mut bytes = out.iter_mut();
    pack_bits_with(d, count, value, |_, byte| {
        if let Some(b) = bytes.next() {
            *b = byte;
        }
    });
}

/// Like [`pack_bits`], but hands byte k of the stream to `emit(k, byte)`:
/// a caller can compare a stream against a buffer without storing it.
/// Groups of 8 values, like [`unpack_bits`], so every shift is a constant.
#[inline]
pub fn pack_bits_with(d: u32, count: usize, mut value: impl FnMut(usize) -> u16, mut emit: impl FnMut(usize, u8)) {
    let width = d as usize;
    let mask = (1u32 << d) - 1;
    let (mut i, mut pos) = (0, 0);
    while i < count {
        let mut group = [0u8; 18];
        for k in 0..8 {
            if i + k < count {
                let bit = k * width;
                let window = (value(i + k) as u32 & mask) << (bit & 7);
                let b = &mut group[bit >> 3..];
                b[0] |= window as u8;
                b[1] |= (window >> 8) as u8;
                b[2] |= (window >> 16) as u8;
            }
        }
        // Whole bytes only: a trailing partial byte is dropped.
        for &byte in &group[..((count - i).min(8) * width) >> 3] {
            emit(pos, byte);
            pos += 1;
        }
        i += 8;
    }
}

/// Unpacks `count` values of `d` bits from a little-endian bit stream,
/// calling `sink(i, value)`; missing input bytes read as zero.
///
/// Works in groups of 8 values (= d bytes): once inlined with a constant
/// `d`, every shift is a constant. (A running bit count makes every shift
/// variable, and a variable shift on the AVR is a loop, one bit a turn.)
#[inline]
pub fn unpack_bits(d: u32, count: usize, input: &[u8], mut sink: impl FnMut(usize, u16)) {
    let width = d as usize;
    let mask = (1u32 << d) - 1;
    let mut i = 0;
    // Every group is read in place (a value never reaches past its group's
    // d bytes), so nothing is copied: a copy of a run of bytes is a `memcpy`
    // call on the AVR. A short last group, and any group after it, reads
    // its missing bytes as zero through `get`.
    let mut groups = input.chunks_exact(width);
    let mut tail = groups.remainder();
    while i < count {
        let bytes: &[u8] = match groups.next() {
            Some(bytes) => bytes,
            None => core::mem::take(&mut tail),
        };
        let byte = |j: usize| bytes.get(j).copied().unwrap_or(0) as u32;
        for k in 0..8 {
            if i + k < count {
                let bit = k * width;
                let at = bit >> 3;
                let window = byte(at) | byte(at + 1) << 8 | byte(at + 2) << 16;
                sink(i + k, ((window >> (bit & 7)) & mask) as u16);
            }
        }
        i += 8;
    }
}

/// Small signed coefficients (|c| ≤ 7) kept 4 bits each, two's complement,
/// low nibble first: a quarter of an i16 polynomial's RAM. Writes
/// `2·packed.len()` values (at most `out.len()`).
pub fn unpack_nibbles(packed: &[u8], out: &mut [i16]) {
    // A byte at a time: constant shifts (a variable one loops on the AVR).
    for (pair, &byte) in out.chunks_exact_mut(2).zip(packed.iter()) {
        pair[0] = low_nibble(byte);
        pair[1] = low_nibble(byte >> 4);
    }
}

/// Coefficient `i` of nibble-packed small coefficients (see [`unpack_nibbles`]).
#[inline(always)]
pub fn nibble(packed: &[u8], i: usize) -> i16 {
    low_nibble(packed[i >> 1] >> ((i & 1) << 2))
}

/// The low 4 bits of `byte` as a two's complement value.
#[inline(always)]
fn low_nibble(byte: u8) -> i16 {
    ((byte << 4) as i8 >> 4) as i16
}

/// Coefficient `c` (|c| ≤ 7) into nibble `i` of `packed` (which must be
/// zero there before).
#[inline(always)]
pub fn set_nibble(packed: &mut [u8], i: usize, c: i16) {
    packed[i >> 1] |= ((c as u8) & 0xF) << ((i & 1) << 2);
}

/// A 32-byte shared secret. Zeroized on drop; compared in constant time.
#[derive(Clone)]
pub struct SharedSecret([u8; 32]);

impl SharedSecret {
    /// Wraps secret bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        SharedSecret(bytes)
    }
    /// The secret bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl ConstantTimeEq for SharedSecret {
    fn ct_eq(&self, other: &Self) -> Choice {
        bytes_equal(&self.0, &other.0)
    }
}
impl PartialEq for SharedSecret {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(other).into()
    }
}
impl Eq for SharedSecret {}
impl Drop for SharedSecret {
    fn drop(&mut self) {
        self.0.wipe();
    }
}
impl zeroize::ZeroizeOnDrop for SharedSecret {}
impl fmt::Debug for SharedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedSecret(..)")
    }
}

/// The RNG failed (a KEM crate maps this into its own error type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RngError;

impl fmt::Display for RngError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("random number generator failed")
    }
}

impl core::error::Error for RngError {}

/// One `randombytes(out.len())` call: KATs depend on the call boundaries.
/// Any `rand_core` 0.10 [`TryCryptoRng`] (every [`rand_core::CryptoRng`] is one).
pub fn fill<R: TryCryptoRng + ?Sized>(rng: &mut R, out: &mut [u8]) -> Result<(), RngError> {
    rng.try_fill_bytes(out).map_err(|_| RngError)
}

/// An RNG adapter that keeps the error of the RNG it wraps, so that an
/// operation reporting only "the RNG failed" (our KEMs' `Error::Rng`) can
/// hand the RNG's own error back, as RustCrypto's `Generate` asks.
#[derive(Debug)]
pub struct ErrorCapture<'a, R: TryCryptoRng + ?Sized> {
    rng: &'a mut R,
    error: Option<R::Error>,
}

impl<R: TryCryptoRng + ?Sized> TryRng for ErrorCapture<'_, R> {
    type Error = RngError;
    fn try_next_u32(&mut self) -> Result<u32, RngError> {
        let mut b = [0u8; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn try_next_u64(&mut self) -> Result<u64, RngError> {
        let mut b = [0u8; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), RngError> {
        self.rng.try_fill_bytes(dst).map_err(|e| {
            self.error = Some(e);
            RngError
        })
    }
}

impl<R: TryCryptoRng + ?Sized> TryCryptoRng for ErrorCapture<'_, R> {}

/// Runs `op`, whose only failure is its RNG's, with `rng` and returns the
/// RNG's own error if it fails. An error of `op` without one of the RNG
/// (which the KEM operations here never return) reruns `op` rather than
/// panicking. With an infallible RNG (`R::Error = Infallible`) the result
/// is irrefutably `Ok`.
pub fn with_rng<R: TryCryptoRng + ?Sized, T, E>(
    rng: &mut R,
    mut op: impl FnMut(&mut ErrorCapture<'_, R>) -> Result<T, E>,
) -> Result<T, R::Error> {
    loop {
        let mut capture = ErrorCapture {
            rng: &mut *rng,
            error: None,
        };
        match op(&mut capture) {
            Ok(value) => return Ok(value),
            Err(_) => {
                if let Some(error) = capture.error {
                    return Err(error);
                }
            }
        }
    }
}

/// Whether `a` equals `b` (different lengths, which are public, are
/// unequal), in constant time: every byte pair's XOR is ORed into one
/// byte, and only that total is compared. Use it instead of subtle's slice
/// `ct_eq` on AVR: LLVM turns subtle's per-byte masks back into
/// comparisons, and the AVR (no set-on-condition instruction) branches on
/// each byte; `cargo xtask mqtt --seeds` caught it in the X25519 zero check.
pub fn bytes_equal(a: &[u8], b: &[u8]) -> Choice {
    if a.len() != b.len() {
        return Choice::from(0);
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    is_zero(diff)
}

/// Whether `x` is zero, in constant time and without a branch on AVR:
/// 0 − x borrows (high byte 0xFF) iff x ≠ 0, and that difference passes
/// through `black_box` before its high bit is taken. subtle's `ct_eq`
/// leaves LLVM free to fold its arithmetic back into `x != 0`, which the
/// AVR (no set-on-condition instruction) lowers to a branch: `cargo xtask
/// ct` found one, cycle-balanced, deciding the FO re-encryption check.
pub fn is_zero(x: u8) -> Choice {
    let borrow_word = core::hint::black_box((x as u16).wrapping_neg());
    Choice::from(1 ^ ((borrow_word >> 8) as u8 & 1))
}

/// Selects `b` where `choice` is set, else `a`, byte by byte in constant time.
pub fn select_bytes<const L: usize>(a: &[u8; L], b: &[u8; L], choice: Choice) -> [u8; L] {
    use subtle::ConditionallySelectable;
    core::array::from_fn(|i| u8::conditional_select(&a[i], &b[i], choice))
}

/// An RNG that replays `bytes` in order, for tests that feed a KEM known
/// randomness (a KAT's draws, a standard's worked example): a draw past the
/// end fails (`try_fill_bytes`, which the KEMs use, returns an error; the
/// KEM returns its own), so a test also learns when more was drawn than
/// the tape holds. `used()` tells how much was drawn.
#[doc(hidden)]
pub struct Tape<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Tape<'a> {
    /// A tape over `bytes`, nothing drawn yet.
    pub fn new(bytes: &'a [u8]) -> Self {
        Tape { bytes, pos: 0 }
    }
    /// Bytes drawn so far (all of them after a failed draw).
    pub fn used(&self) -> usize {
        self.pos
    }
}

/// A [`Tape`] read past its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TapeExhausted;

impl fmt::Display for TapeExhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("randomness tape exhausted")
    }
}

impl core::error::Error for TapeExhausted {}

impl TryRng for Tape<'_> {
    type Error = TapeExhausted;
    fn try_next_u32(&mut self) -> Result<u32, TapeExhausted> {
        let mut b = [0u8; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn try_next_u64(&mut self) -> Result<u64, TapeExhausted> {
        let mut b = [0u8; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), TapeExhausted> {
        let end = self.pos + dest.len();
        match self.bytes.get(self.pos..end) {
            Some(src) => {
                dest.copy_from_slice(src);
                self.pos = end;
                Ok(())
            }
            None => {
                self.pos = self.bytes.len();
                Err(TapeExhausted)
            }
        }
    }
}

impl TryCryptoRng for Tape<'_> {}

/// Hex-string serde support for fixed-size byte types (feature `serde`).
#[cfg(feature = "serde")]
pub mod hex_serde {
    use core::fmt;

    pub use serde;
    use serde::de::{Error, Visitor};

    struct Hex<'a>(&'a [u8]);

    impl fmt::Display for Hex<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
        }
    }

    /// Serializes bytes as a lower-case hex string.
    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&Hex(bytes))
    }

    struct ArrayVisitor<const N: usize>;

    impl<const N: usize> Visitor<'_> for ArrayVisitor<N> {
        type Value = [u8; N];
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a hex string of {N} bytes")
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<[u8; N], E> {
            if v.len() != 2 * N {
                return Err(E::invalid_length(v.len() / 2, &self));
            }
            let mut out = [0u8; N];
            let mut valid = true;
            for (o, pair) in out.iter_mut().zip(v.as_bytes().chunks_exact(2)) {
                let digit = |c: u8| (c as char).to_digit(16);
                match (digit(pair[0]), digit(pair[1])) {
                    (Some(hi), Some(lo)) => *o = (hi << 4 | lo) as u8,
                    _ => valid = false,
                }
            }
            if valid {
                Ok(out)
            } else {
                // What was decoded may be part of a secret key.
                crate::Wipe::wipe(&mut out);
                Err(E::custom("invalid hex digit"))
            }
        }
    }

    /// Deserializes a hex string of exactly `N` bytes.
    pub fn deserialize<'de, D: serde::Deserializer<'de>, const N: usize>(d: D) -> Result<[u8; N], D::Error> {
        d.deserialize_str(ArrayVisitor::<N>)
    }
}

/// Implements hex-string `Serialize`/`Deserialize` for a key or ciphertext
/// type with `as_bytes()` and a validating `from_bytes()`. Expands to
/// nothing unless kem-common's `serde` feature is on (the KEM crates'
/// `serde` features turn it on).
#[cfg(feature = "serde")]
#[macro_export]
macro_rules! impl_serde_hex {
    ([$($generics:tt)*] $ty:ty, $len:expr) => {
        impl<$($generics)*> $crate::hex_serde::serde::Serialize for $ty {
            fn serialize<S: $crate::hex_serde::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::hex_serde::serialize(self.as_bytes(), s)
            }
        }
        impl<'de, $($generics)*> $crate::hex_serde::serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::hex_serde::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let mut bytes = $crate::hex_serde::deserialize::<D, { $len }>(d)?;
                let key = <$ty>::from_bytes(&bytes);
                // The decoded bytes may be a secret key: only the typed copy
                // (zeroized on drop) stays.
                $crate::Wipe::wipe(&mut bytes);
                key.map_err(<D::Error as $crate::hex_serde::serde::de::Error>::custom)
            }
        }
    };
}

/// Implements, for a key or ciphertext type with `as_bytes() -> &[u8; LEN]`
/// and a validating `from_bytes(&[u8]) -> Result<Self, Error>`: the
/// conversions `TryFrom<&[u8]>` (= `from_bytes`) and `AsRef<[u8]>`
/// (= `as_bytes`), and with the `serde` feature hex-string serde
/// ([`impl_serde_hex!`]). Every byte type of the three KEM crates has them.
#[macro_export]
macro_rules! impl_bytes {
    ([$($generics:tt)*] $ty:ty, $len:expr, $error:ty) => {
        impl<'a, $($generics)*> TryFrom<&'a [u8]> for $ty {
            type Error = $error;
            /// [`Self::from_bytes`]: the length and the import checks.
            fn try_from(bytes: &'a [u8]) -> Result<Self, $error> {
                <$ty>::from_bytes(bytes)
            }
        }
        impl<$($generics)*> AsRef<[u8]> for $ty {
            /// [`Self::as_bytes`].
            fn as_ref(&self) -> &[u8] {
                self.as_bytes()
            }
        }
        $crate::impl_serde_hex!([$($generics)*] $ty, $len);
    };
}

/// Without the `serde` feature: nothing to implement.
#[cfg(not(feature = "serde"))]
#[macro_export]
macro_rules! impl_serde_hex {
    ($($anything:tt)*) => {};
}

/// The one seeded generator of the workspace's tests, benchmarks and
/// examples: ChaCha20 from a 64-bit seed (feature `test-rng`).
/// Deterministic, so never for real keys: those come from the system RNG
/// (e.g. `rand::rng()`) or a hardware TRNG.
#[cfg(feature = "test-rng")]
pub fn test_rng(seed: u64) -> rand_chacha::ChaCha20Rng {
    rand_core::SeedableRng::seed_from_u64(seed)
}

/// The byte-buffer API of every KEM of the workspace as one trait, for
/// code generic over the KEMs that keeps keys in memory of its own (a
/// firmware's statics): key generation, encapsulation and decapsulation
/// into and from caller buffers, and the secret-key import checks on bytes
/// in place. The same RNG draws and outputs as the typed API and the `kem`
/// traits. Implemented on the KEM marker types (`MlKem512`, `Kyber512R3`,
/// `LightSaber`, `CtruLight<B, A>` for every arithmetic).
///
/// ```
/// use kem_common::BufferKem;
/// use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
///
/// /// One round trip through caller buffers, for any KEM.
/// fn round_trip<K: BufferKem>(seed: u64) -> bool {
///     let mut rng = ChaCha20Rng::seed_from_u64(seed); // seeded: deterministic example
///     let (mut ek, mut dk, mut ct) = (K::EK_ZERO, K::DK_ZERO, K::CT_ZERO);
///     K::keygen_into(&mut rng, &mut ek, &mut dk).expect("rng");
///     K::check_decapsulation_key(dk.as_ref()).expect("fresh key");
///     let sent = K::encapsulate_into(&ek, &mut rng, &mut ct).expect("valid key");
///     K::decapsulate_into(&dk, &ct) == sent
/// }
///
/// assert!(round_trip::<kyber512_avr::ml_kem_512::MlKem512>(1));
/// assert!(round_trip::<kyber512_avr::kyber512_r3::Kyber512R3>(2));
/// assert!(round_trip::<lightsaber_avr::LightSaber>(3));
/// assert!(round_trip::<ctru_light::CtruLightSha3>(4));
/// assert!(round_trip::<ctru_light::CtruLightAscon>(5));
/// ```
pub trait BufferKem {
    /// The scheme's name.
    const NAME: &'static str;
    /// The crate's error type.
    type Error: fmt::Debug + fmt::Display;
    /// `[u8; EK_LEN]`: an encoded encapsulation (public) key.
    type EncapsulationKeyBytes: AsRef<[u8]> + AsMut<[u8]> + Copy;
    /// `[u8; DK_LEN]`: an encoded decapsulation (secret) key.
    type DecapsulationKeyBytes: AsRef<[u8]> + AsMut<[u8]> + Copy;
    /// `[u8; CT_LEN]`: a ciphertext.
    type CiphertextBytes: AsRef<[u8]> + AsMut<[u8]> + Copy;
    /// An all-zero encapsulation-key buffer (not a valid key).
    const EK_ZERO: Self::EncapsulationKeyBytes;
    /// An all-zero decapsulation-key buffer (not a valid key).
    const DK_ZERO: Self::DecapsulationKeyBytes;
    /// An all-zero ciphertext buffer.
    const CT_ZERO: Self::CiphertextBytes;

    /// Key generation into `ek` and `dk`; on an RNG failure both are wiped.
    fn keygen_into(
        rng: &mut impl TryCryptoRng,
        ek: &mut Self::EncapsulationKeyBytes,
        dk: &mut Self::DecapsulationKeyBytes,
    ) -> Result<(), Self::Error>;
    /// Encapsulation to the encoded key `ek` (checked as on import) into `ct`.
    fn encapsulate_into(
        ek: &Self::EncapsulationKeyBytes,
        rng: &mut impl TryCryptoRng,
        ct: &mut Self::CiphertextBytes,
    ) -> Result<SharedSecret, Self::Error>;
    /// The import checks of the typed decapsulation key, on bytes in place.
    fn check_decapsulation_key(dk: &[u8]) -> Result<(), Self::Error>;
    /// Decapsulation with `dk`, which must come from [`Self::keygen_into`]
    /// or have passed [`Self::check_decapsulation_key`]. Never fails: a bad
    /// ciphertext yields the implicit-rejection key.
    fn decapsulate_into(dk: &Self::DecapsulationKeyBytes, ct: &Self::CiphertextBytes) -> SharedSecret;
}

/// Implements [`BufferKem`] on a KEM marker type from its `*_into`
/// functions (paths taking the same arguments as the trait's methods).
#[macro_export]
macro_rules! impl_buffer_kem {
    (
        [$($generics:tt)*] $kem:ty, name: $name:expr, error: $error:ty,
        lens: ($ek:expr, $dk:expr, $ct:expr),
        keygen_into: $keygen:expr, encapsulate_into: $encaps:expr,
        check_decapsulation_key: $check:expr, decapsulate_into: $decaps:expr $(,)?
    ) => {
        impl<$($generics)*> $crate::BufferKem for $kem {
            const NAME: &'static str = $name;
            type Error = $error;
            type EncapsulationKeyBytes = [u8; $ek];
            type DecapsulationKeyBytes = [u8; $dk];
            type CiphertextBytes = [u8; $ct];
            const EK_ZERO: [u8; $ek] = [0; $ek];
            const DK_ZERO: [u8; $dk] = [0; $dk];
            const CT_ZERO: [u8; $ct] = [0; $ct];
            fn keygen_into(
                rng: &mut impl $crate::rand_core::TryCryptoRng,
                ek: &mut [u8; $ek],
                dk: &mut [u8; $dk],
            ) -> Result<(), $error> {
                $keygen(rng, ek, dk)
            }
            fn encapsulate_into(
                ek: &[u8; $ek],
                rng: &mut impl $crate::rand_core::TryCryptoRng,
                ct: &mut [u8; $ct],
            ) -> Result<$crate::SharedSecret, $error> {
                $encaps(ek, rng, ct)
            }
            fn check_decapsulation_key(dk: &[u8]) -> Result<(), $error> {
                $check(dk)
            }
            fn decapsulate_into(dk: &[u8; $dk], ct: &[u8; $ct]) -> $crate::SharedSecret {
                $decaps(dk, ct)
            }
        }
    };
}

/// Implements RustCrypto's `kem` 0.3 traits for one KEM of this workspace:
/// `Kem` on the marker type, `Encapsulate` + `TryKeyInit` + `KeyExport` on
/// its encapsulation key, `Decapsulate` + `Decapsulator` + `Generate` on its
/// decapsulation key. The crate provides the typed operations:
/// `ek_from_bytes`, `ek.as_bytes()`, `dk.encapsulation_key() -> &Ek`,
/// `keygen(rng) -> Result<(Dk, Ek), _>`, `encapsulate(ek, rng)` and
/// `decapsulate(dk, &[u8; CT])`. Their only error with a typed key is the
/// RNG's, which [`with_rng`] hands back as the RNG's own error.
#[macro_export]
macro_rules! impl_kem_traits {
    (
        [$($generics:tt)*] kem: $kem:ty, ek: $ek:ty, dk: $dk:ty,
        ek_size: $eks:ty, ct_size: $cts:ty, ct_len: $ctlen:expr,
        keygen: $keygen:expr, encapsulate: $encaps:expr, decapsulate: $decaps:expr $(,)?
    ) => {
        impl<$($generics)*> $crate::kem::Kem for $kem {
            type DecapsulationKey = $dk;
            type EncapsulationKey = $ek;
            type SharedKeySize = $crate::kem::consts::U32;
            type CiphertextSize = $cts;
        }
        impl<$($generics)*> $crate::kem::KeySizeUser for $ek {
            type KeySize = $eks;
        }
        impl<$($generics)*> $crate::kem::TryKeyInit for $ek {
            fn new(key: &$crate::kem::Key<Self>) -> Result<Self, $crate::kem::InvalidKey> {
                <$ek>::from_bytes(key.as_slice()).map_err(|_| $crate::kem::InvalidKey)
            }
        }
        impl<$($generics)*> $crate::kem::KeyExport for $ek {
            fn to_bytes(&self) -> $crate::kem::Key<Self> {
                (*<$ek>::as_bytes(self)).into()
            }
        }
        impl<$($generics)*> $crate::kem::Encapsulate for $ek {
            type Kem = $kem;
            fn encapsulate_with_rng<R: $crate::rand_core::CryptoRng + ?Sized>(
                &self,
                rng: &mut R,
            ) -> ($crate::kem::Ciphertext<$kem>, $crate::kem::SharedKey<$kem>) {
                let (ct, ss) = match $crate::with_rng(rng, |rng| ($encaps)(self, rng)) {
                    Ok(out) => out,
                    Err(never) => match never {},
                };
                ((*ct.as_bytes()).into(), (*ss.as_bytes()).into())
            }
        }
        impl<$($generics)*> $crate::kem::Decapsulator for $dk {
            type Kem = $kem;
            fn encapsulation_key(&self) -> &$ek {
                <$dk>::encapsulation_key(self)
            }
        }
        impl<$($generics)*> $crate::kem::Decapsulate for $dk {
            fn decapsulate(&self, ct: &$crate::kem::Ciphertext<$kem>) -> $crate::kem::SharedKey<$kem> {
                let ct: &[u8; $ctlen] = ct.into();
                let ss = ($decaps)(self, ct);
                (*ss.as_bytes()).into()
            }
        }
        impl<$($generics)*> $crate::kem::Generate for $dk {
            fn try_generate_from_rng<R: $crate::rand_core::TryCryptoRng + ?Sized>(rng: &mut R) -> Result<Self, R::Error> {
                $crate::with_rng(rng, |rng| ($keygen)(rng)).map(|(dk, _ek)| dk)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tape_replays_in_order_and_fails_past_its_end() {
        let bytes = [1u8, 2, 3, 4, 5];
        let mut tape = Tape::new(&bytes);
        let (mut a, mut b) = ([0u8; 2], [0u8; 3]);
        assert!(tape.try_fill_bytes(&mut a).is_ok());
        assert!(tape.try_fill_bytes(&mut b).is_ok());
        assert_eq!((a, b, tape.used()), ([1, 2], [3, 4, 5], 5));
        let mut c = [9u8; 1];
        assert!(tape.try_fill_bytes(&mut c).is_err());
        assert_eq!((c, tape.used()), ([9], 5));
        let mut short = Tape::new(&bytes[..1]);
        assert!(
            short.try_fill_bytes(&mut a).is_err(),
            "a draw longer than the rest fails whole"
        );
        assert_eq!(a, [1, 2]);
    }

    #[test]
    fn is_zero_only_for_zero() {
        for x in 0..=255u8 {
            assert_eq!(bool::from(is_zero(x)), x == 0, "{x}");
        }
    }

    #[test]
    fn bytes_equal_finds_every_single_difference() {
        let a = [0x5Au8; 33];
        assert!(bool::from(bytes_equal(&a, &a)));
        assert!(bool::from(bytes_equal(&[], &[])));
        assert!(!bool::from(bytes_equal(&a, &a[..32])));
        for i in 0..a.len() {
            for bit in 0..8 {
                let mut b = a;
                b[i] ^= 1 << bit;
                assert!(!bool::from(bytes_equal(&a, &b)), "byte {i}, bit {bit}");
            }
        }
    }

    #[test]
    fn bit_packing_round_trips_for_every_width() {
        for d in 1..=16u32 {
            let count = 64;
            // A count that is not a multiple of 8 and a short input (zeros).
            let mut odd = [0u16; 11];
            unpack_bits(d, 11, &[0xFF; 2], |i, v| odd[i] = v);
            let ones = (16 / d as usize).min(11);
            assert!(odd[..ones].iter().all(|&v| v == ((1u32 << d) - 1) as u16), "d = {d}");
            assert!(odd[(ones + 1).min(11)..].iter().all(|&v| v == 0), "d = {d}");
            let values: [u16; 64] =
                core::array::from_fn(|i| ((i as u32).wrapping_mul(2654435761) >> 7) as u16 & ((1u32 << d) - 1) as u16);
            let mut bytes = [0u8; 128];
            let len = count * d as usize / 8;
            pack_bits(d, count, &mut bytes[..len], |i| values[i]);
            let mut back = [0u16; 64];
            unpack_bits(d, count, &bytes[..len], |i, v| back[i] = v);
            assert_eq!(back, values, "d = {d}");
        }
    }

    #[test]
    fn nibbles_round_trip_every_small_value() {
        let values: [i16; 16] = core::array::from_fn(|i| i as i16 - 8);
        let mut packed = [0u8; 8];
        for (i, &v) in values.iter().enumerate() {
            set_nibble(&mut packed, i, v);
        }
        let mut back = [0i16; 16];
        unpack_nibbles(&packed, &mut back);
        assert_eq!(back, values);
    }

    #[test]
    fn little_endian_order() {
        let mut out = [0u8; 5];
        pack_bits(10, 4, &mut out, |i| [0x3FF, 0, 1, 0x200][i]);
        assert_eq!(out, [0xFF, 0x03, 0x10, 0x00, 0x80]);
    }

    #[test]
    fn wipe_clears_every_buffer_shape() {
        let mut bytes = [0xA5u8; 70];
        let mut rows = [[0x5Au8; 3]; 4];
        let mut coefficients = [-7i16; 33];
        let mut tail = [0xFFu8; 9];
        bytes.wipe();
        rows.wipe();
        coefficients.wipe();
        tail[2..].wipe();
        assert!(bytes.iter().all(|&b| b == 0));
        assert!(rows.iter().flatten().all(|&b| b == 0));
        assert!(coefficients.iter().all(|&c| c == 0));
        assert_eq!(tail, [0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn ciphertext_sink_writes_and_compares() {
        let expected = [1u8, 2, 3, 4];
        let mut written = [0u8; 4];
        let mut sink = CiphertextSink::Write(&mut written);
        for (k, &b) in expected.iter().enumerate() {
            sink.put(k, b);
        }
        sink.put(4, 9); // outside: dropped
        assert!(!bool::from(sink.equal()));
        assert_eq!(written, expected);

        let mut same = CiphertextSink::compare(&expected);
        for (k, &b) in expected.iter().enumerate() {
            same.put(k, b);
        }
        assert!(bool::from(same.equal()));
        for bad in 0..4 {
            for flip in [1u8, 0x80] {
                let mut sink = CiphertextSink::compare(&expected);
                for (k, &b) in expected.iter().enumerate() {
                    sink.put(k, if k == bad { b ^ flip } else { b });
                }
                assert!(!bool::from(sink.equal()), "byte {bad}, flip {flip:#x}");
            }
        }
        let mut outside = CiphertextSink::compare(&expected);
        outside.put(4, 0);
        assert!(!bool::from(outside.equal()));
    }
}
