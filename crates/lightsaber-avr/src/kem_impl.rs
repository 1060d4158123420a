//! Saber.KEM (round-3 specification Algorithms 20–22 / reference `kem.c`):
//! FO transform with implicit rejection, the reference's RNG draw order.

use core::fmt;

use kem_common::{bytes_at, fill, select_bytes, CiphertextSink, KeyBytes, KeySource, SharedSecret, Wipe};
use rand_core::TryCryptoRng;
use subtle::{Choice, ConstantTimeEq};

use crate::params::COMPACT_SK_BYTES;
use crate::params::{CT_BYTES, PK_BYTES, SEED_BYTES, SK_BYTES, SK_PKE_BYTES};
use crate::pke::{self, PkIn, SecretIn, SecretOut};
use crate::Error;

/// `bytes` as an array of exactly `LEN` bytes (in place).
fn exact_ref<const LEN: usize>(bytes: &[u8]) -> Result<&[u8; LEN], Error> {
    bytes.try_into().map_err(|_| Error::InvalidLength {
        expected: LEN,
        got: bytes.len(),
    })
}

/// A copy of `bytes`, which must be exactly `LEN` long.
fn exact<const LEN: usize>(bytes: &[u8]) -> Result<[u8; LEN], Error> {
    exact_ref(bytes).copied()
}

/// A public key: b ‖ seed_A (any bytes of the right length are valid).
///
/// ```
/// use lightsaber_avr::EncapsulationKey;
///
/// let (_dk, ek) = lightsaber_avr::keygen(&mut rand::rng())?;
/// let bytes: &[u8] = ek.as_ref(); // 672 bytes, public: send them
/// let received = EncapsulationKey::from_bytes(bytes)?;
/// assert_eq!(received, ek);
/// assert!(EncapsulationKey::from_bytes(&bytes[..671]).is_err());
/// # Ok::<(), lightsaber_avr::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct EncapsulationKey([u8; PK_BYTES]);

/// A secret key: s ‖ pk ‖ H(pk) ‖ z. Validated on import; zeroized on drop.
/// Keeps its public key also as a typed key (a copy of the bytes inside),
/// which [`DecapsulationKey::encapsulation_key`] lends, as RustCrypto's
/// `Decapsulator` asks; the byte-buffer API (`*_into`) has no such copy.
///
/// ```
/// use lightsaber_avr::{DecapsulationKey, Error};
///
/// let (dk, ek) = lightsaber_avr::keygen(&mut rand::rng())?;
/// assert_eq!(dk.encapsulation_key(), &ek);
/// // Stored as its 1,568 bytes (secret), loaded with the import checks.
/// let stored: [u8; 1568] = *dk.as_bytes();
/// let loaded = DecapsulationKey::from_bytes(&stored)?;
/// assert_eq!(loaded.encapsulation_key(), &ek);
/// let mut corrupted = stored;
/// corrupted[1510] ^= 1; // a byte of H(pk)
/// assert_eq!(
///     DecapsulationKey::from_bytes(&corrupted).unwrap_err(),
///     Error::DecapsulationKeyHashMismatch
/// );
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone)]
pub struct DecapsulationKey([u8; SK_BYTES], EncapsulationKey);

/// LightSaber, the KEM as a type: RustCrypto's `kem::Kem` is implemented on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LightSaber;

/// A ciphertext: b' ‖ c_m.
///
/// ```
/// use lightsaber_avr::Ciphertext;
///
/// let mut rng = rand::rng();
/// let (dk, ek) = lightsaber_avr::keygen(&mut rng)?;
/// let (ct, ss) = lightsaber_avr::encapsulate(&ek, &mut rng)?;
/// // Sent as its 736 bytes; any 736 bytes are a ciphertext.
/// let received = Ciphertext::from_bytes(ct.as_bytes())?;
/// assert_eq!(lightsaber_avr::decapsulate(&dk, &received), ss);
/// assert!(Ciphertext::from_bytes(&ct.as_bytes()[..735]).is_err());
/// # Ok::<(), lightsaber_avr::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Ciphertext([u8; CT_BYTES]);

impl EncapsulationKey {
    /// Encoded length.
    pub const LEN: usize = PK_BYTES;
    /// Imports a public key.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Ok(EncapsulationKey(exact(bytes)?))
    }
    /// The encoded key.
    pub fn as_bytes(&self) -> &[u8; PK_BYTES] {
        &self.0
    }
}

/// The checks of [`DecapsulationKey::from_bytes`] on the encoded key in place (no
/// 1.6 KB copy on the stack): its length, every secret coefficient in
/// [−5, 5], and H(pk) matching the embedded pk. Out of line: its refusal
/// of a malformed key is the one (public) branch on the key, named so in
/// `ct-check/ct.supp`.
#[inline(never)]
pub fn check_secret_key(bytes: &[u8]) -> Result<(), Error> {
    check_secret_key_in(&exact_ref::<SK_BYTES>(bytes)?[..])
}

/// [`check_secret_key`] of a key that may be in program memory (a classic
/// AVR's flash, read 32 values at a time).
#[inline(never)]
pub fn check_secret_key_from(key: KeyBytes<'_>) -> Result<(), Error> {
    if key.len() != SK_BYTES {
        return Err(Error::InvalidLength {
            expected: SK_BYTES,
            got: key.len(),
        });
    }
    check_secret_key_in(&key)
}

/// The checks of [`check_secret_key`] on a key of the right length.
fn check_secret_key_in<S: KeySource + ?Sized>(key: &S) -> Result<(), Error> {
    if !pke::secret_in_range(key) {
        return Err(Error::DecapsulationKeyMalformed);
    }
    let h = hash_pk(key, SK_PKE_BYTES);
    let mut hpk = [0u8; 32];
    if !bool::from(h.ct_eq(bytes_at(key, SK_PKE_BYTES + PK_BYTES, &mut hpk))) {
        return Err(Error::DecapsulationKeyHashMismatch);
    }
    Ok(())
}

/// H(pk) = SHA3-256 of the `PK_BYTES` at `at` in `key`. Inlined: for a
/// slice it is the one hash call the slice API made.
#[inline(always)]
fn hash_pk<S: KeySource + ?Sized>(key: &S, at: usize) -> [u8; 32] {
    match key.as_slice() {
        Some(bytes) => fips202::sha3_256(&[bytes.get(at..at + PK_BYTES).unwrap_or(&[])]),
        None => fips202::sha3_256_read(&|i, out| key.read(at + i, out), PK_BYTES),
    }
}

impl DecapsulationKey {
    /// Encoded length.
    pub const LEN: usize = SK_BYTES;
    /// Imports a secret key: every secret coefficient must be in [−5, 5]
    /// and H(pk) must match the embedded pk.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        check_secret_key(bytes)?;
        let bytes = exact::<SK_BYTES>(bytes)?;
        let mut pk = EncapsulationKey([0u8; PK_BYTES]);
        pk.0.copy_from_slice(&bytes[SK_PKE_BYTES..SK_PKE_BYTES + PK_BYTES]);
        Ok(DecapsulationKey(bytes, pk))
    }
    /// The encoded key (secret).
    pub fn as_bytes(&self) -> &[u8; SK_BYTES] {
        &self.0
    }
    /// The matching public key.
    pub fn public_key(&self) -> EncapsulationKey {
        self.1.clone()
    }
    /// The matching public key, borrowed.
    pub fn encapsulation_key(&self) -> &EncapsulationKey {
        &self.1
    }
}

impl Drop for DecapsulationKey {
    fn drop(&mut self) {
        self.0.wipe();
    }
}
impl zeroize::ZeroizeOnDrop for DecapsulationKey {}

impl Ciphertext {
    /// Encoded length.
    pub const LEN: usize = CT_BYTES;
    /// Imports a ciphertext (only the length is checked).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Ok(Ciphertext(exact(bytes)?))
    }
    /// The encoded ciphertext.
    pub fn as_bytes(&self) -> &[u8; CT_BYTES] {
        &self.0
    }
}

impl fmt::Debug for EncapsulationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncapsulationKey({:02x?}..)", &self.0[..8])
    }
}
impl fmt::Debug for DecapsulationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DecapsulationKey(..)")
    }
}
impl fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ciphertext({:02x?}..)", &self.0[..8])
    }
}

/// KeyGen: seed_A ← SHAKE128(randombytes(32), 32), seed_s ← randombytes(32),
/// z ← randombytes(32).
///
/// Returns (decapsulation key, encapsulation key), the order of RustCrypto's
/// `kem` traits; the byte-buffer [`keygen_into`] keeps the reference C
/// code's (pk, sk). Fails only if `rng` does ([`Error::Rng`]).
///
/// ```
/// use lightsaber_avr::{decapsulate, encapsulate, keygen};
///
/// let mut rng = rand::rng();
/// let (dk, ek) = keygen(&mut rng)?; // the secret key first
/// let (ct, ss) = encapsulate(&ek, &mut rng)?;
/// assert_eq!(decapsulate(&dk, &ct), ss);
/// # Ok::<(), lightsaber_avr::Error>(())
/// ```
pub fn keygen(rng: &mut impl TryCryptoRng) -> Result<(DecapsulationKey, EncapsulationKey), Error> {
    let mut pk = EncapsulationKey([0u8; PK_BYTES]);
    let mut sk = DecapsulationKey([0u8; SK_BYTES], EncapsulationKey([0u8; PK_BYTES]));
    keygen_into(rng, &mut pk.0, &mut sk.0)?;
    sk.1 = pk.clone();
    Ok((sk, pk))
}

/// Encapsulation: m = H(randombytes(32)). Returns (ciphertext to send,
/// shared secret to keep); fails only if `rng` does ([`Error::Rng`]).
///
/// ```
/// use lightsaber_avr::{decapsulate, encapsulate, keygen};
///
/// let mut rng = rand::rng();
/// let (dk, ek) = keygen(&mut rng)?;
/// let (ct1, ss1) = encapsulate(&ek, &mut rng)?;
/// let (ct2, ss2) = encapsulate(&ek, &mut rng)?;
/// assert_ne!(ss1, ss2); // a fresh secret each time
/// assert_eq!(decapsulate(&dk, &ct1), ss1);
/// assert_eq!(decapsulate(&dk, &ct2), ss2);
/// # Ok::<(), lightsaber_avr::Error>(())
/// ```
pub fn encapsulate(pk: &EncapsulationKey, rng: &mut impl TryCryptoRng) -> Result<(Ciphertext, SharedSecret), Error> {
    let mut ct = Ciphertext([0u8; CT_BYTES]);
    let ss = encapsulate_into(&pk.0, rng, &mut ct.0)?;
    Ok((ct, ss))
}

/// Decapsulation: never fails; a bad ciphertext yields H(z ‖ H(ct)),
/// selected in constant time.
///
/// ```
/// use lightsaber_avr::{decapsulate, encapsulate, keygen, Ciphertext};
///
/// let mut rng = rand::rng();
/// let (dk, ek) = keygen(&mut rng)?;
/// let (ct, ss) = encapsulate(&ek, &mut rng)?;
/// assert_eq!(decapsulate(&dk, &ct), ss);
/// let mut bytes = *ct.as_bytes();
/// bytes[0] ^= 1; // tampered with on the way
/// let tampered = Ciphertext::from_bytes(&bytes)?;
/// assert_ne!(decapsulate(&dk, &tampered), ss); // another key, no error
/// # Ok::<(), lightsaber_avr::Error>(())
/// ```
pub fn decapsulate(sk: &DecapsulationKey, ct: &Ciphertext) -> SharedSecret {
    decapsulate_into(&sk.0, &ct.0)
}

/// [`keygen`] into caller buffers (firmware keeps keys in static memory).
pub fn keygen_into(rng: &mut impl TryCryptoRng, pk: &mut [u8; PK_BYTES], sk: &mut [u8; SK_BYTES]) -> Result<(), Error> {
    kem_common::keygen_or_wipe(pk, sk, |pk, sk| {
        keygen_secret_into(rng, sk)?;
        pk.copy_from_slice(public_key_in(sk));
        Ok(())
    })
}

/// [`keygen`] into `sk` alone: the public key is the field
/// [`public_key_in`] returns (for firmware that sends it from there instead
/// of keeping a second copy). `sk` is wiped if the RNG fails.
pub fn keygen_secret_into(rng: &mut impl TryCryptoRng, sk: &mut [u8; SK_BYTES]) -> Result<(), Error> {
    kem_common::secret_keygen_or_wipe(sk, |sk| keygen_draw_into(rng, sk))
}

/// The public key inside the encoded secret key `sk` (sk_PKE ‖ pk ‖ H(pk) ‖ z).
pub fn public_key_in(sk: &[u8; SK_BYTES]) -> &[u8; PK_BYTES] {
    sk[SK_PKE_BYTES..SK_PKE_BYTES + PK_BYTES]
        .try_into()
        .unwrap_or(&[0; PK_BYTES])
}

fn keygen_draw_into(rng: &mut impl TryCryptoRng, sk: &mut [u8; SK_BYTES]) -> Result<(), Error> {
    let (sk_pke, rest) = sk.split_at_mut(SK_PKE_BYTES);
    match (<&mut [u8; SK_PKE_BYTES]>::try_from(sk_pke), key_tail(rest)) {
        (Ok(sk_pke), Some(tail)) => keygen_draws(rng, SecretOut::Packed(sk_pke), tail),
        _ => Ok(()), // unreachable: the lengths are the layout's
    }
}

/// The fields after the secret: pk ‖ H(pk) ‖ z.
type KeyTail<'a> = (&'a mut [u8; PK_BYTES], &'a mut [u8; 32], &'a mut [u8; 32]);

fn key_tail(rest: &mut [u8]) -> Option<KeyTail<'_>> {
    let (pk, rest) = rest.split_at_mut(PK_BYTES);
    let (hpk, z) = rest.split_at_mut(32);
    Some((pk.try_into().ok()?, hpk.try_into().ok()?, z.try_into().ok()?))
}

/// The reference's draws (seed_A, seed_s, z) and key generation, the secret
/// written as `s_out` says.
fn keygen_draws(rng: &mut impl TryCryptoRng, s_out: SecretOut<'_>, (pk, hpk, z): KeyTail<'_>) -> Result<(), Error> {
    let mut raw = [0u8; SEED_BYTES];
    fill(rng, &mut raw)?;
    let seed_a: [u8; SEED_BYTES] = fips202::shake128(&[&raw]);
    raw.wipe();
    let mut seed_s = [0u8; SEED_BYTES];
    if let Err(e) = fill(rng, &mut seed_s) {
        seed_s.wipe();
        return Err(e.into());
    }
    pke::keygen(&seed_a, &seed_s, pk, s_out);
    hpk.copy_from_slice(&fips202::sha3_256(&[pk]));
    seed_s.wipe();
    Ok(fill(rng, z)?)
}

/// (K̄, r) = G(m ‖ H(pk)), H(pk) the 32 bytes at `hpk_at` in `key`: the
/// 64-byte hash and H(pk) in a frame of their own (gone before the
/// encryption runs).
#[inline(never)]
fn key_and_r<S: KeySource + ?Sized>(m: &[u8; 32], key: &S, hpk_at: usize) -> ([u8; 32], [u8; 32]) {
    let mut hpk = [0u8; 32];
    let mut kr = fips202::sha3_512(&[m, bytes_at(key, hpk_at, &mut hpk)]);
    let (mut kbar, mut r) = ([0u8; 32], [0u8; 32]);
    kbar.copy_from_slice(&kr[..32]);
    r.copy_from_slice(&kr[32..]);
    kr.wipe();
    (kbar, r)
}

/// Encapsulation's m = H(raw) from 32 drawn bytes, and (K̄, r) =
/// G(m ‖ H(pk)), into `seeds` as [m, K̄, r]; the draw and the hashes'
/// buffers in a frame of their own.
#[inline(never)]
fn encapsulation_seeds<S: KeySource + ?Sized>(
    pk: &S,
    rng: &mut impl TryCryptoRng,
    seeds: &mut [[u8; 32]; 3],
) -> Result<(), Error> {
    let mut raw = [0u8; 32];
    fill(rng, &mut raw)?;
    seeds[0] = fips202::sha3_256(&[&raw]);
    raw.wipe();
    let mut hpk = hash_pk(pk, 0);
    (seeds[1], seeds[2]) = key_and_r(&seeds[0], &hpk[..], 0);
    hpk.wipe();
    Ok(())
}

/// The shared secret H(K̄ ‖ H(ct)), in a frame of its own.
#[inline(never)]
fn shared_secret(kbar: &[u8; 32], ct: &[u8; CT_BYTES]) -> SharedSecret {
    SharedSecret::new(fips202::sha3_256(&[kbar, &fips202::sha3_256(&[ct])]))
}

/// [`encapsulate`] to an encoded public key, into `ct`.
pub fn encapsulate_into(
    pk: &[u8; PK_BYTES],
    rng: &mut impl TryCryptoRng,
    ct: &mut [u8; CT_BYTES],
) -> Result<SharedSecret, Error> {
    encapsulate_in(&pk[..], rng, ct)
}

/// [`encapsulate_into`] to a key that may be in program memory (a classic
/// AVR's flash, read 32 values at a time): the same draws and output.
pub fn encapsulate_from(
    pk: KeyBytes<'_>,
    rng: &mut impl TryCryptoRng,
    ct: &mut [u8; CT_BYTES],
) -> Result<SharedSecret, Error> {
    if pk.len() != PK_BYTES {
        return Err(Error::InvalidLength {
            expected: PK_BYTES,
            got: pk.len(),
        });
    }
    encapsulate_in(&pk, rng, ct)
}

/// Encapsulation to the `PK_BYTES` of `pk`: (K̄, r) = G(m ‖ H(pk)), then
/// ct = Enc(m, r) byte by byte into `ct`; only m, K̄ and r are held while
/// the encryption runs (the hashes work in frames of their own).
fn encapsulate_in<S: KeySource + ?Sized>(
    pk: &S,
    rng: &mut impl TryCryptoRng,
    ct: &mut [u8; CT_BYTES],
) -> Result<SharedSecret, Error> {
    let mut seeds = [[0u8; 32]; 3]; // m, K̄, r
    encapsulation_seeds(pk, rng, &mut seeds)?;
    let [m, kbar, r] = &seeds;
    pke::encrypt(m, r, PkIn { key: pk, at: 0 }, &mut CiphertextSink::Write(ct));
    let ss = shared_secret(kbar, ct);
    seeds.wipe();
    Ok(ss)
}

/// [`decapsulate`] with an encoded secret key, which must come from
/// [`keygen_into`] or have passed [`check_secret_key`].
pub fn decapsulate_into(sk: &[u8; SK_BYTES], ct: &[u8; CT_BYTES]) -> SharedSecret {
    // Slices start at the fields (offset 0): every slice caller then passes
    // the same constant, which the compiler folds into the body.
    decapsulate_with(SecretIn::Packed(&sk[..SK_PKE_BYTES]), &sk[SK_PKE_BYTES..], 0, ct)
}

/// [`decapsulate_into`] with a key that may be in program memory (a
/// classic AVR's flash, read 32 values at a time); it must come from
/// [`keygen_into`] or have passed [`check_secret_key_from`].
pub fn decapsulate_from(sk: KeyBytes<'_>, ct: &[u8; CT_BYTES]) -> SharedSecret {
    decapsulate_with(SecretIn::Packed(&sk), &sk, SK_PKE_BYTES, ct)
}

/// Decapsulation with the secret `s` and pk ‖ H(pk) ‖ z at `rest_at` in
/// `key` (one body for both key formats: flash is scarce where the compact
/// one is used).
#[inline(never)]
fn decapsulate_with<S: KeySource + ?Sized>(
    s: SecretIn<'_, S>,
    key: &S,
    rest_at: usize,
    ct: &[u8; CT_BYTES],
) -> SharedSecret {
    let mut m = [0u8; 32];
    pke::decrypt(s, ct, &mut m);
    let (mut kbar, mut r) = key_and_r(&m, key, rest_at + PK_BYTES);
    // Re-encrypt and compare as the bytes come (no second ciphertext buffer):
    // the OR of all byte differences is zero iff equal. (subtle's slice
    // ct_eq compiled to a branch per byte on AVR: `cargo xtask ct` saw it.)
    let mut sink = CiphertextSink::compare(ct);
    pke::encrypt(&m, &r, PkIn { key, at: rest_at }, &mut sink);
    r.wipe();
    m.wipe();
    let ss = decapsulation_result(&kbar, key, rest_at + PK_BYTES + 32, ct, !sink.equal());
    kbar.wipe();
    ss
}

/// H(K̄ ‖ H(ct)), or H(z ‖ H(ct)) (z the 32 bytes at `z_at` in `key`,
/// read in place) if the ciphertexts differed, selected in constant time;
/// in a frame of its own. The reference hashes the received ciphertext,
/// valid or not.
#[inline(never)]
fn decapsulation_result<S: KeySource + ?Sized>(
    kbar: &[u8; 32],
    key: &S,
    z_at: usize,
    ct: &[u8; CT_BYTES],
    fail: Choice,
) -> SharedSecret {
    let mut z_copy = [0u8; 32];
    let z: &[u8; 32] = bytes_at(key, z_at, &mut z_copy).try_into().unwrap_or(&[0; 32]); // the key's layout
    let mut chosen = select_bytes(kbar, z, fail);
    if key.as_slice().is_none() {
        z_copy.wipe(); // z read out of program memory
    }
    let ss = shared_secret(&chosen, ct);
    chosen.wipe();
    ss
}

// ------------------------------------------------ compact secret keys

/// Key generation into a **compact secret key** (768 bytes instead of
/// 1,568): seed_s ‖ pk ‖ H(pk) ‖ z, s generated again from seed_s where it
/// is needed. The same draws and the same public key as [`keygen_into`];
/// decapsulation with [`decapsulate_compact_into`] gives the same shared
/// secrets.
///
/// A format of this crate, not of the specification: for a key that never
/// leaves the device, such as a sensor's ephemeral key between the two
/// flights of a handshake (800 bytes of SRAM less). A key to store or
/// exchange is the specification's ([`keygen_into`]). `sk` is wiped if
/// the RNG fails.
pub fn keygen_compact_into(rng: &mut impl TryCryptoRng, sk: &mut [u8; COMPACT_SK_BYTES]) -> Result<(), Error> {
    kem_common::secret_keygen_or_wipe(sk, |sk| {
        let (seed_s, rest) = sk.split_at_mut(SEED_BYTES);
        match (<&mut [u8; SEED_BYTES]>::try_from(seed_s), key_tail(rest)) {
            (Ok(seed_s), Some(tail)) => keygen_draws(rng, SecretOut::Seed(seed_s), tail),
            _ => Ok(()), // unreachable: the lengths are the layout's
        }
    })
}

/// The public key inside a compact secret key.
pub fn public_key_in_compact(sk: &[u8; COMPACT_SK_BYTES]) -> &[u8; PK_BYTES] {
    sk[SEED_BYTES..SEED_BYTES + PK_BYTES]
        .try_into()
        .unwrap_or(&[0; PK_BYTES])
}

/// The checks of [`check_secret_key`] on a compact secret key, in place:
/// its length and H(pk) matching the embedded pk (any seed_s gives
/// secrets in range).
#[inline(never)]
pub fn check_compact_secret_key(bytes: &[u8]) -> Result<(), Error> {
    let bytes = exact_ref::<COMPACT_SK_BYTES>(bytes)?;
    let (pk, hpk) = bytes[SEED_BYTES..].split_at(PK_BYTES);
    if !bool::from(fips202::sha3_256(&[pk]).ct_eq(&hpk[..32])) {
        return Err(Error::DecapsulationKeyHashMismatch);
    }
    Ok(())
}

/// [`decapsulate_into`] with a compact secret key from
/// [`keygen_compact_into`] (or one that passed [`check_compact_secret_key`]):
/// s is generated again from seed_s (one GenSecret more than with the
/// specification's key).
pub fn decapsulate_compact_into(sk: &[u8; COMPACT_SK_BYTES], ct: &[u8; CT_BYTES]) -> SharedSecret {
    let seed_s = sk[..SEED_BYTES].try_into().unwrap_or(&[0; SEED_BYTES]); // the layout's length
    decapsulate_with(SecretIn::Seed(seed_s), &sk[SEED_BYTES..], 0, ct)
}

kem_common::impl_bytes!([] EncapsulationKey, PK_BYTES, Error);
kem_common::impl_bytes!([] DecapsulationKey, SK_BYTES, Error);
kem_common::impl_bytes!([] Ciphertext, CT_BYTES, Error);

kem_common::impl_buffer_kem!(
    [] LightSaber, name: "LightSaber", error: Error, lens: (PK_BYTES, SK_BYTES, CT_BYTES),
    keygen_into: keygen_into, encapsulate_into: encapsulate_into,
    check_decapsulation_key: check_secret_key, decapsulate_into: decapsulate_into,
);

kem_common::impl_kem_traits!(
    [] kem: LightSaber, ek: EncapsulationKey, dk: DecapsulationKey, ct: Ciphertext,
    ek_size: kem_common::kem::consts::U672, ct_size: kem_common::kem::consts::U736, ct_len: CT_BYTES,
    keygen: |rng: &mut _| keygen(rng),
    encapsulate: |pk: &EncapsulationKey, rng: &mut _| encapsulate(pk, rng),
    decapsulate: |sk: &DecapsulationKey, ct: &[u8; CT_BYTES]| decapsulate_into(sk.as_bytes(), ct),
);
