//! The KEM layer shared by ML-KEM-512 (FIPS 203 §6–7) and round-3 Kyber512:
//! the two differ only in how seeds are drawn and hashed, captured by
//! [`Variant`]. Keys and ciphertexts are typed; secrets zeroize on drop.

use core::fmt;
use core::marker::PhantomData;

use kem_common::{bytes_at, KeySource, SharedSecret, Wipe};
use rand_core::TryCryptoRng;
use subtle::{Choice, ConstantTimeEq};

use super::kpke;
use super::params::{CT_BYTES, DK_BYTES, DK_PKE_BYTES, EK_BYTES, K, POLY_BYTES, Q, SIGMA_BYTES};
use crate::Error;

mod sealed {
    pub trait Sealed {}
}

/// How a parameter set draws and hashes its seeds. Sealed: implemented by
/// [`crate::ml_kem_512::MlKem512`] and [`crate::kyber512_r3::Kyber512R3`].
pub trait Variant: sealed::Sealed + 'static {
    /// Name used in KAT headers and benchmark tables.
    const NAME: &'static str;
    /// Whether keys are checked on import (FIPS 203 §7.2, §7.3).
    const CHECK_KEYS: bool;
    /// Draws d and z in the reference order.
    fn draw_keygen_seeds(rng: &mut impl TryCryptoRng, d: &mut [u8; 32], z: &mut [u8; 32]) -> Result<(), Error>;
    /// (ρ, σ) from d.
    fn expand_seed(d: &[u8; 32]) -> [u8; 64];
    /// The message m from the encapsulation draw, into `m` (no returned
    /// copy on the stack beneath the encryption).
    fn draw_message(rng: &mut impl TryCryptoRng, m: &mut [u8; 32]) -> Result<(), Error>;
    /// The shared secret from K̄ (or z on rejection) and the ciphertext.
    fn derive_key(kbar: &[u8; 32], ct: &[u8; CT_BYTES]) -> [u8; 32];
    /// The shared secret of a rejected ciphertext: from z and the ciphertext.
    fn reject_key(z: &[u8; 32], ct: &[u8; CT_BYTES]) -> [u8; 32];
    /// The shared secret of a decapsulation: [`Variant::derive_key`] of K̄
    /// if `same`, else [`Variant::reject_key`] of z, in constant time (the
    /// same work either way). By default both keys, then the selection.
    fn select_key(kbar: &[u8; 32], z: &[u8; 32], ct: &[u8; CT_BYTES], same: Choice) -> [u8; 32] {
        let mut good = Self::derive_key(kbar, ct);
        let mut bad = Self::reject_key(z, ct);
        let ss = kem_common::select_bytes(&bad, &good, same);
        good.wipe();
        bad.wipe();
        ss
    }
}

pub(crate) use sealed::Sealed;

pub(crate) fn fill(rng: &mut impl TryCryptoRng, out: &mut [u8]) -> Result<(), Error> {
    kem_common::fill(rng, out).map_err(|_| Error::Rng)
}

fn check_len(got: usize, expected: usize) -> Result<(), Error> {
    if got == expected {
        Ok(())
    } else {
        Err(Error::InvalidLength { expected, got })
    }
}

/// An encapsulation (public) key, validated on import for ML-KEM.
///
/// Generic over the parameter set ([`Variant`]); [`crate::ml_kem_512`] and
/// [`crate::kyber512_r3`] name it for theirs
/// (`ml_kem_512::EncapsulationKey` = `EncapsulationKey<MlKem512>`).
///
/// ```
/// use kyber512_avr::ml_kem_512::{self, MlKem512};
/// use kyber512_avr::EncapsulationKey;
///
/// let (_dk, ek) = ml_kem_512::keygen(&mut rand::rng())?;
/// // Sent as its 800 bytes; imported with the FIPS 203 §7.2 modulus check.
/// let received = EncapsulationKey::<MlKem512>::from_bytes(ek.as_bytes())?;
/// assert_eq!(received, ek);
/// assert_eq!(
///     EncapsulationKey::<MlKem512>::from_bytes(&[0xff; 800]), // 4095 ≥ q
///     Err(kyber512_avr::Error::EncapsulationKeyNotReduced)
/// );
/// # Ok::<(), kyber512_avr::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct EncapsulationKey<V> {
    bytes: [u8; EK_BYTES],
    _v: PhantomData<V>,
}

/// A decapsulation (secret) key: dk_pke ‖ ek ‖ H(ek) ‖ z. Zeroized on drop.
/// Keeps its encapsulation key also as a typed key (a copy of the bytes
/// inside), which [`DecapsulationKey::encapsulation_key`] lends, as
/// RustCrypto's `Decapsulator` asks. Firmware keeping keys in static memory
/// uses the byte-buffer API instead (`raw`), which has no such copy.
///
/// Generic over the parameter set ([`Variant`]); [`crate::ml_kem_512`] and
/// [`crate::kyber512_r3`] name it for theirs
/// (`ml_kem_512::DecapsulationKey` = `DecapsulationKey<MlKem512>`).
///
/// ```
/// use kyber512_avr::ml_kem_512::{self, MlKem512};
/// use kyber512_avr::{DecapsulationKey, Error};
///
/// let (dk, ek) = ml_kem_512::keygen(&mut rand::rng())?;
/// assert_eq!(dk.encapsulation_key(), &ek);
/// // Stored as its 1,632 bytes (secret), loaded with the FIPS 203 §7.3 hash check.
/// let stored: [u8; 1632] = *dk.as_bytes();
/// let loaded = DecapsulationKey::<MlKem512>::from_bytes(&stored)?;
/// assert_eq!(loaded.encapsulation_key(), &ek);
/// let mut corrupted = stored;
/// corrupted[1570] ^= 1; // a byte of H(ek)
/// assert_eq!(
///     DecapsulationKey::<MlKem512>::from_bytes(&corrupted).unwrap_err(),
///     Error::DecapsulationKeyHashMismatch
/// );
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone)]
pub struct DecapsulationKey<V> {
    bytes: [u8; DK_BYTES],
    ek: EncapsulationKey<V>,
    /// d ‖ z, for a key made from them (generated, or from a seed); `None`
    /// for one imported in the expanded form, which does not contain d.
    pub(crate) seed: Option<[u8; 64]>,
}

/// A ciphertext.
///
/// Generic over the parameter set ([`Variant`]); [`crate::ml_kem_512`] and
/// [`crate::kyber512_r3`] name it for theirs
/// (`ml_kem_512::Ciphertext` = `Ciphertext<MlKem512>`).
///
/// ```
/// use kyber512_avr::ml_kem_512::{self, MlKem512};
/// use kyber512_avr::Ciphertext;
///
/// let mut rng = rand::rng();
/// let (dk, ek) = ml_kem_512::keygen(&mut rng)?;
/// let (ct, ss) = ml_kem_512::encapsulate(&ek, &mut rng)?;
/// // Sent as its 768 bytes; any 768 bytes are a ciphertext.
/// let received = Ciphertext::<MlKem512>::from_bytes(ct.as_bytes())?;
/// assert_eq!(ml_kem_512::decapsulate(&dk, &received), ss);
/// assert!(Ciphertext::<MlKem512>::from_bytes(&ct.as_bytes()[..767]).is_err());
/// # Ok::<(), kyber512_avr::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Ciphertext<V> {
    bytes: [u8; CT_BYTES],
    _v: PhantomData<V>,
}

/// FIPS 203 §7.2 modulus check: every 12-bit value of the encoded t̂ is
/// below q, checked as the values stream by (no polynomial buffer). A key
/// of another length fails it.
pub(crate) fn modulus_check<S: KeySource + ?Sized>(ek: &S) -> bool {
    let mut reduced = ek.len() == EK_BYTES;
    for i in 0..K {
        match ek.as_slice() {
            Some(ek) => {
                let t_i = ek.get(i * POLY_BYTES..(i + 1) * POLY_BYTES).unwrap_or(&[]);
                crate::encode::byte_decode(12, t_i, |_, v| reduced &= v < Q);
            }
            None => kem_common::unpack_bits_in(12, crate::params::N, ek, i * POLY_BYTES, |_, v| reduced &= v < Q),
        }
    }
    reduced
}

/// H(ek) = SHA3-256 of the `EK_BYTES` at `at` in `key`.
fn hash_ek<S: KeySource + ?Sized>(key: &S, at: usize) -> [u8; 32] {
    match key.as_slice() {
        Some(bytes) => fips202::sha3_256(&[bytes.get(at..at + EK_BYTES).unwrap_or(&[])]),
        None => fips202::sha3_256_read(&|i, out| key.read(at + i, out), EK_BYTES),
    }
}

impl<V: Variant> EncapsulationKey<V> {
    /// Encoded length.
    pub const LEN: usize = EK_BYTES;

    /// Imports a key. For ML-KEM-512 the §7.2 modulus check applies.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        check_len(bytes.len(), EK_BYTES)?;
        let mut ek = [0u8; EK_BYTES];
        ek.copy_from_slice(bytes);
        if V::CHECK_KEYS && !modulus_check(&ek[..]) {
            return Err(Error::EncapsulationKeyNotReduced);
        }
        Ok(EncapsulationKey {
            bytes: ek,
            _v: PhantomData,
        })
    }

    /// The encoded key.
    pub fn as_bytes(&self) -> &[u8; EK_BYTES] {
        &self.bytes
    }
}

impl<V> fmt::Debug for EncapsulationKey<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncapsulationKey({:02x?}..)", &self.bytes[..8])
    }
}

/// The checks of [`DecapsulationKey::from_bytes`] on the encoded key in
/// place (no copy: a typed key is 1.6 KB of stack): its length and, for
/// ML-KEM-512, the §7.3 hash check.
///
/// `len` is the form's length: `DK_BYTES`, or `COMPACT_DK_BYTES` for a
/// compact key (σ ‖ ek ‖ H(ek) ‖ z), whose hash check is the same.
pub(crate) fn check_decapsulation_key<V: Variant, S: KeySource + ?Sized>(bytes: &S, len: usize) -> Result<(), Error> {
    check_len(bytes.len(), len)?;
    if V::CHECK_KEYS {
        let pke = pke_len(len);
        let h = hash_ek(bytes, pke);
        let mut stored = [0u8; 32];
        if !bool::from(h.ct_eq(bytes_at(bytes, pke + EK_BYTES, &mut stored))) {
            return Err(Error::DecapsulationKeyHashMismatch);
        }
    }
    Ok(())
}

/// The PKE secret's length in a decapsulation key of `len` bytes (PKE
/// secret ‖ ek ‖ H(ek) ‖ z): `DK_PKE_BYTES` for FIPS 203's form,
/// `SIGMA_BYTES` for a compact key.
const fn pke_len(len: usize) -> usize {
    len.saturating_sub(EK_BYTES + 64)
}

impl<V: Variant> DecapsulationKey<V> {
    /// Encoded length.
    pub const LEN: usize = DK_BYTES;

    /// Imports a key: its length and, for ML-KEM-512, the §7.3 hash check
    /// (`raw::check_decapsulation_key` of the parameter set on the bytes, then one copy).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        check_decapsulation_key::<V, [u8]>(bytes, DK_BYTES)?;
        let mut key = DecapsulationKey {
            bytes: [0u8; DK_BYTES],
            ek: EncapsulationKey {
                bytes: [0u8; EK_BYTES],
                _v: PhantomData,
            },
            seed: None,
        };
        key.bytes.copy_from_slice(bytes); // checked: DK_BYTES long
        key.ek
            .bytes
            .copy_from_slice(&bytes[DK_PKE_BYTES..DK_PKE_BYTES + EK_BYTES]);
        Ok(key)
    }

    /// The encoded key (secret: handle with care).
    pub fn as_bytes(&self) -> &[u8; DK_BYTES] {
        &self.bytes
    }

    /// The matching encapsulation key.
    pub fn encapsulation_key(&self) -> &EncapsulationKey<V> {
        &self.ek
    }
}

impl<V> Drop for DecapsulationKey<V> {
    fn drop(&mut self) {
        self.bytes.wipe();
        if let Some(seed) = self.seed.as_mut() {
            seed.wipe();
        }
    }
}

impl<V> zeroize::ZeroizeOnDrop for DecapsulationKey<V> {}

impl<V> fmt::Debug for DecapsulationKey<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DecapsulationKey(..)")
    }
}

impl<V: Variant> Ciphertext<V> {
    /// Encoded length.
    pub const LEN: usize = CT_BYTES;

    /// Imports a ciphertext (any bytes of the right length are a ciphertext).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        check_len(bytes.len(), CT_BYTES)?;
        let mut ct = [0u8; CT_BYTES];
        ct.copy_from_slice(bytes);
        Ok(Ciphertext {
            bytes: ct,
            _v: PhantomData,
        })
    }

    /// The encoded ciphertext.
    pub fn as_bytes(&self) -> &[u8; CT_BYTES] {
        &self.bytes
    }
}

impl<V> fmt::Debug for Ciphertext<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ciphertext({:02x?}..)", &self.bytes[..8])
    }
}

/// KeyGen_internal (Algorithm 16) from d and z, into caller buffers.
pub(crate) fn keygen_bytes<V: Variant>(d: &[u8; 32], z: &[u8; 32], ek: &mut [u8; EK_BYTES], dk: &mut [u8; DK_BYTES]) {
    if let Some((d_slot, z_slot)) = seed_slots(dk) {
        d_slot.copy_from_slice(d);
        z_slot.copy_from_slice(z);
    }
    keygen_in_place::<V>(dk);
    ek.copy_from_slice(encapsulation_key_of(dk));
}

/// The encapsulation key inside an encoded decapsulation key (dk_PKE ‖
/// ek ‖ H(ek) ‖ z).
pub(crate) fn encapsulation_key_of(dk: &[u8; DK_BYTES]) -> &[u8; EK_BYTES] {
    dk[DK_PKE_BYTES..DK_PKE_BYTES + EK_BYTES]
        .try_into()
        .unwrap_or(&[0; EK_BYTES])
}

/// Where key generation keeps its seeds until it needs them, inside the
/// decapsulation key it is writing (either form): d in the H(ek) field
/// (overwritten by H(ek) once ρ and σ are derived), z in its own field.
/// Neither is copied onto the stack under K-PKE.KeyGen.
pub(crate) fn seed_slots(dk: &mut [u8]) -> Option<(&mut [u8; 32], &mut [u8; 32])> {
    let (_, tail) = dk.split_last_chunk_mut::<64>()?;
    let (d, z) = tail.split_at_mut(32);
    Some((d.try_into().ok()?, z.try_into().ok()?))
}

/// KeyGen_internal (Algorithm 16) with d and z in their [`seed_slots`]:
/// the encapsulation key is written into its field of `dk` only (see
/// [`encapsulation_key_of`]). `dk` is `DK_BYTES` long (FIPS 203's form)
/// or `COMPACT_DK_BYTES` (σ where ŝ's encoding would be); another
/// length is left as it is.
#[inline(never)]
pub(crate) fn keygen_in_place<V: Variant>(dk: &mut [u8]) {
    let pke = pke_len(dk.len());
    if pke != DK_PKE_BYTES && pke != SIGMA_BYTES {
        return;
    }
    let (secret, rest) = dk.split_at_mut(pke);
    let (ek, rest) = rest.split_at_mut(EK_BYTES);
    let h = &mut rest[..32];
    let mut d = [0u8; 32];
    d.copy_from_slice(h);
    let (mut rho, mut sigma) = expand_split::<V>(&d);
    d.wipe();
    // A compact key keeps σ, and K-PKE gets no dk_pke to write.
    let dk_pke = match pke == SIGMA_BYTES {
        true => {
            secret.copy_from_slice(&sigma);
            &mut []
        }
        false => secret,
    };
    if let Ok(ek) = <&mut [u8; EK_BYTES]>::try_from(&mut *ek) {
        kpke::keygen(&rho, &sigma, ek, dk_pke);
    }
    h.copy_from_slice(&fips202::sha3_256(&[ek]));
    rho.wipe();
    sigma.wipe();
}

/// Draws d ‖ z into `dk`'s [`seed_slots`] and generates the key in place
/// (either form); on a failing draw `dk` is wiped.
pub(crate) fn keygen_seeded<V: Variant>(rng: &mut impl TryCryptoRng, dk: &mut [u8]) -> Result<(), Error> {
    let Some((d, z)) = seed_slots(dk) else {
        return Err(Error::Rng);
    };
    if let Err(e) = V::draw_keygen_seeds(rng, d, z) {
        dk.wipe();
        return Err(e);
    }
    keygen_in_place::<V>(dk);
    Ok(())
}

/// (ρ, σ) from d. Not inlined (nor the two below): the 64-byte hash and
/// its halves are gone before K-PKE's polynomials are on the stack.
#[inline(never)]
fn expand_split<V: Variant>(d: &[u8; 32]) -> ([u8; 32], [u8; 32]) {
    let mut rho_sigma = V::expand_seed(d);
    let halves = split(&rho_sigma);
    rho_sigma.wipe();
    halves
}

/// [K̄, r] = G(m ‖ h) into `out` (no returned copy on the stack beneath
/// the encryption).
fn key_and_coins(m: &[u8; 32], h: &[u8], out: &mut [[u8; 32]; 2]) {
    let mut kr = fips202::sha3_512(&[m, h]);
    out.as_flattened_mut().copy_from_slice(&kr);
    kr.wipe();
}

/// [K̄, r] = G(m ‖ H(ek)) into `out`, H(ek) in this frame.
#[inline(never)]
fn key_and_coins_for<S: KeySource + ?Sized>(m: &[u8; 32], ek: &S, out: &mut [[u8; 32]; 2]) {
    key_and_coins(m, &hash_ek(ek, 0), out)
}

/// [K̄, r] = G(m ‖ h) into `out`, h the 32 bytes at `h_at` in `dk` (read
/// into this frame).
#[inline(never)]
fn key_and_coins_at<S: KeySource + ?Sized>(m: &[u8; 32], dk: &S, h_at: usize, out: &mut [[u8; 32]; 2]) {
    let mut h = [0u8; 32];
    key_and_coins(m, bytes_at(dk, h_at, &mut h), out)
}

/// Whether decapsulation's re-encryption keeps each r_j packed (K·128 B of
/// stack) instead of sampling it again for every product that needs it
/// (PRF and CBD K² − K times more: rows take j in alternating order, so
/// each of the K + 1 rows but the first loads K − 1 of them again; ≈ 0.1 M
/// cycles each on the AVR, most of it one Keccak permutation). Everywhere
/// but on MCUs with 6 KB of SRAM or less (`build.rs`), where the KEM-MQTT
/// sensor's finish needs that room beside its static buffers.
const DECAPS_KEEPS_NOISE: bool = !cfg!(kyber_small_sram);

/// The same choice for encapsulation, from k = 3 on: there the resampling
/// costs 6 (k = 3) and 12 (k = 4) PRF calls, and the 384/512 B fit the
/// stack targets of ML-KEM-768/1024 (3,072/3,584 B). At k = 2 encapsulation
/// keeps its 2.2 KB stack budget (2 more PRF calls).
const ENCAPS_KEEPS_NOISE: bool = DECAPS_KEEPS_NOISE && K > 2;

/// Runs `f` with the noise source `keep` asks for: r_j kept packed (a
/// [`kpke::PackedNoise`] in this frame) or sampled again each time.
/// `keep` is a constant, so one branch is compiled.
#[inline(always)]
fn with_noise<R>(keep: bool, f: impl FnOnce(&mut kpke::Noise) -> R) -> R {
    if keep {
        let mut kept = kpke::PackedNoise::default();
        f(&mut kpke::Noise::KeepPacked(&mut kept))
    } else {
        f(&mut kpke::Noise::Resample)
    }
}

/// Encaps_internal (Algorithm 17) with message m (after the variant's hashing).
/// `ek` is `EK_BYTES` long (checked by the callers).
pub(crate) fn encaps_bytes<V: Variant, S: KeySource + ?Sized>(
    ek: &S,
    m: &[u8; 32],
    ct: &mut [u8; CT_BYTES],
) -> SharedSecret {
    let mut coins = [[0u8; 32]; 2]; // K̄, r
    key_and_coins_for(m, ek, &mut coins);
    with_noise(ENCAPS_KEEPS_NOISE, |noise| {
        kpke::encrypt(ek, 0, m, &coins[1], noise, &mut kem_common::CiphertextSink::Write(ct));
    });
    let ss = SharedSecret::new(V::derive_key(&coins[0], ct));
    coins.wipe();
    ss
}

/// Decaps_internal (Algorithm 18): re-encrypts and selects, in constant time,
/// between the derived key and the implicit-rejection key. `dk` must be
/// well-formed (from key generation or a checked import). Decryption and
/// the re-encryption run in frames of their own: only m is held here.
/// `dk` is the encoded key (in the data space or in program memory), in
/// FIPS 203's form or compact (its length says which).
pub(crate) fn decaps_bytes<V: Variant, S: KeySource + ?Sized>(dk: &S, ct: &[u8; CT_BYTES]) -> SharedSecret {
    let mut m = kpke::decrypt(dk, pke_len(dk.len()), ct);
    let ss = reencrypt_select::<V, S>(dk, ct, &m);
    m.wipe();
    ss
}

/// The rest of Decaps_internal after decryption, from ek ‖ H(ek) ‖ z in `dk`.
#[inline(never)]
fn reencrypt_select<V: Variant, S: KeySource + ?Sized>(dk: &S, ct: &[u8; CT_BYTES], m: &[u8; 32]) -> SharedSecret {
    let pke = pke_len(dk.len());
    let mut coins = [[0u8; 32]; 2]; // K̄, r
    key_and_coins_at(m, dk, pke + EK_BYTES, &mut coins);
    // Re-encrypt and compare byte by byte as the bytes come (no second
    // ciphertext buffer); the OR of all differences is zero iff equal.
    let mut sink = kem_common::CiphertextSink::compare(ct);
    // A key of the wrong length (impossible for a checked key) is a difference.
    let mut same = Choice::from(0);
    if pke == DK_PKE_BYTES || pke == SIGMA_BYTES {
        with_noise(DECAPS_KEEPS_NOISE, |noise| {
            kpke::encrypt(dk, pke, m, &coins[1], noise, &mut sink)
        });
        same = sink.equal();
    }
    let ss = select_key::<V, S>(&coins[0], dk, ct, same);
    coins.wipe();
    ss
}

/// K̄'s key if `same`, else the implicit-rejection key from z (the last 32
/// bytes of `dk`, in either form), in constant time.
#[inline(never)]
fn select_key<V: Variant, S: KeySource + ?Sized>(
    kbar: &[u8; 32],
    dk: &S,
    ct: &[u8; CT_BYTES],
    same: Choice,
) -> SharedSecret {
    let mut z_arr = [0u8; 32];
    dk.read(dk.len().saturating_sub(32), &mut z_arr);
    let ss = V::select_key(kbar, &z_arr, ct, same);
    z_arr.wipe();
    SharedSecret::new(ss)
}

/// KeyGen_internal into typed keys: (decapsulation key, encapsulation key),
/// the decapsulation key keeping d ‖ z.
pub(crate) fn keygen_internal<V: Variant>(d: &[u8; 32], z: &[u8; 32]) -> (DecapsulationKey<V>, EncapsulationKey<V>) {
    let mut ek = EncapsulationKey {
        bytes: [0u8; EK_BYTES],
        _v: PhantomData,
    };
    let mut seed = [0u8; 64];
    seed[..32].copy_from_slice(d);
    seed[32..].copy_from_slice(z);
    let mut dk = DecapsulationKey {
        bytes: [0u8; DK_BYTES],
        ek: EncapsulationKey {
            bytes: [0u8; EK_BYTES],
            _v: PhantomData,
        },
        seed: Some(seed),
    };
    seed.wipe();
    keygen_bytes::<V>(d, z, &mut ek.bytes, &mut dk.bytes);
    dk.ek.bytes = ek.bytes;
    (dk, ek)
}

/// Encaps_internal on typed keys.
pub(crate) fn encaps_internal<V: Variant>(ek: &EncapsulationKey<V>, m: &[u8; 32]) -> (Ciphertext<V>, SharedSecret) {
    let mut ct = Ciphertext {
        bytes: [0u8; CT_BYTES],
        _v: PhantomData,
    };
    let ss = encaps_bytes::<V, [u8]>(&ek.bytes, m, &mut ct.bytes);
    (ct, ss)
}

/// Decaps_internal on typed keys.
pub(crate) fn decaps_internal<V: Variant>(dk: &DecapsulationKey<V>, ct: &Ciphertext<V>) -> SharedSecret {
    decaps_bytes::<V, [u8]>(&dk.bytes, &ct.bytes)
}

/// The two 32-byte halves of a 64-byte hash output.
fn split(kr: &[u8; 64]) -> ([u8; 32], [u8; 32]) {
    let mut a = [0u8; 32];
    let mut b = [0u8; 32];
    a.copy_from_slice(&kr[..32]);
    b.copy_from_slice(&kr[32..]);
    (a, b)
}

/// Implements the public API of one parameter set. The invoking module has
/// that set's `kem_impl` and `params` modules in scope under those names
/// (the paths below resolve where the macro is invoked), and names the
/// `kem` traits' sizes of its encapsulation key and ciphertext (typenum
/// types; the trait impls do not compile if they disagree with `params`).
macro_rules! kem_api {
    ($variant:ty, ek_size: $ek_size:ty, ct_size: $ct_size:ty $(,)?) => {
        /// Encapsulation (public) key of this parameter set: the bytes a
        /// sender encapsulates to, checked on import as the parameter set says.
        ///
        /// ```
        #[doc = concat!("use ", module_path!(), "::{keygen, EncapsulationKey};")]
        ///
        /// let (_dk, ek) = keygen(&mut rand::rng())?;
        /// let bytes: &[u8] = ek.as_ref(); // EncapsulationKey::LEN bytes, public
        /// let received = EncapsulationKey::try_from(bytes)?;
        /// assert_eq!(received, ek);
        /// assert!(EncapsulationKey::try_from(&bytes[1..]).is_err());
        /// # Ok::<(), kyber512_avr::Error>(())
        /// ```
        pub type EncapsulationKey = kem_impl::EncapsulationKey<$variant>;
        /// Decapsulation (secret) key of this parameter set, with its
        /// encapsulation key inside. Zeroized on drop.
        ///
        /// ```
        #[doc = concat!("use ", module_path!(), "::{keygen, DecapsulationKey};")]
        ///
        /// let (dk, ek) = keygen(&mut rand::rng())?;
        /// assert_eq!(dk.encapsulation_key(), &ek);
        /// let stored: [u8; DecapsulationKey::LEN] = *dk.as_bytes(); // secret: keep it so
        /// let loaded = DecapsulationKey::from_bytes(&stored)?;
        /// assert_eq!(loaded.as_bytes(), dk.as_bytes());
        /// # Ok::<(), kyber512_avr::Error>(())
        /// ```
        pub type DecapsulationKey = kem_impl::DecapsulationKey<$variant>;
        /// Ciphertext of this parameter set (`Ciphertext::LEN` bytes; any
        /// bytes of that length are one).
        ///
        /// ```
        #[doc = concat!("use ", module_path!(), "::{decapsulate, encapsulate, keygen, Ciphertext};")]
        ///
        /// let mut rng = rand::rng();
        /// let (dk, ek) = keygen(&mut rng)?;
        /// let (ct, ss) = encapsulate(&ek, &mut rng)?;
        /// let received = Ciphertext::try_from(ct.as_ref())?;
        /// assert_eq!(decapsulate(&dk, &received), ss);
        /// # Ok::<(), kyber512_avr::Error>(())
        /// ```
        pub type Ciphertext = kem_impl::Ciphertext<$variant>;
        pub use kem_common::SharedSecret;

        kem_common::impl_kem_traits!(
            [] kem: $variant, ek: EncapsulationKey, dk: DecapsulationKey, ct: Ciphertext,
            ek_size: $ek_size, ct_size: $ct_size,
            ct_len: params::CT_BYTES,
            keygen: |rng: &mut _| keygen(rng),
            encapsulate: |ek: &EncapsulationKey, rng: &mut _| encapsulate(ek, rng),
            decapsulate: |dk: &DecapsulationKey, ct: &[u8; params::CT_BYTES]| {
                kem_impl::decaps_bytes::<$variant, [u8]>(dk.as_bytes(), ct)
            },
        );

        /// Generates a key pair, drawing randomness in the reference order:
        /// (decapsulation key, encapsulation key), the order of RustCrypto's
        /// `kem` traits and `ml-kem`. Fails only if `rng` does (`Error::Rng`).
        ///
        /// ```
        #[doc = concat!("use ", module_path!(), "::{decapsulate, encapsulate, keygen};")]
        ///
        /// let mut rng = rand::rng();
        /// let (dk, ek) = keygen(&mut rng)?; // the secret key first
        /// let (ct, ss) = encapsulate(&ek, &mut rng)?;
        /// assert_eq!(decapsulate(&dk, &ct), ss);
        /// # Ok::<(), kyber512_avr::Error>(())
        /// ```
        pub fn keygen(
            rng: &mut impl rand_core::TryCryptoRng,
        ) -> Result<(DecapsulationKey, EncapsulationKey), $crate::Error> {
            use kem_impl::Variant;
            let (mut d, mut z) = ([0u8; 32], [0u8; 32]);
            <$variant>::draw_keygen_seeds(rng, &mut d, &mut z)?;
            let keys = kem_impl::keygen_internal::<$variant>(&d, &z);
            kem_common::Wipe::wipe(&mut d);
            kem_common::Wipe::wipe(&mut z);
            Ok(keys)
        }

        /// Encapsulates a fresh shared secret to `ek`: (ciphertext to send,
        /// shared secret to keep). Fails only if `rng` does (`Error::Rng`).
        ///
        /// ```
        #[doc = concat!("use ", module_path!(), "::{decapsulate, encapsulate, keygen};")]
        ///
        /// let mut rng = rand::rng();
        /// let (dk, ek) = keygen(&mut rng)?;
        /// let (ct1, ss1) = encapsulate(&ek, &mut rng)?;
        /// let (ct2, ss2) = encapsulate(&ek, &mut rng)?;
        /// assert_ne!(ss1, ss2); // a fresh secret each time
        /// assert_eq!(decapsulate(&dk, &ct1), ss1);
        /// assert_eq!(decapsulate(&dk, &ct2), ss2);
        /// # Ok::<(), kyber512_avr::Error>(())
        /// ```
        pub fn encapsulate(
            ek: &EncapsulationKey,
            rng: &mut impl rand_core::TryCryptoRng,
        ) -> Result<(Ciphertext, SharedSecret), $crate::Error> {
            use kem_impl::Variant;
            let mut m = [0u8; 32];
                <$variant>::draw_message(rng, &mut m)?;
            let out = kem_impl::encaps_internal(ek, &m);
            kem_common::Wipe::wipe(&mut m);
            Ok(out)
        }

        /// Decapsulates `ct`. Never fails: an invalid ciphertext yields the
        /// implicit-rejection key, indistinguishably and in constant time.
        ///
        /// ```
        #[doc = concat!("use ", module_path!(), "::{decapsulate, encapsulate, keygen, Ciphertext};")]
        ///
        /// let mut rng = rand::rng();
        /// let (dk, ek) = keygen(&mut rng)?;
        /// let (ct, ss) = encapsulate(&ek, &mut rng)?;
        /// assert_eq!(decapsulate(&dk, &ct), ss);
        /// let mut bytes = *ct.as_bytes();
        /// bytes[0] ^= 1; // tampered with on the way
        /// let tampered = Ciphertext::from_bytes(&bytes)?;
        /// assert_ne!(decapsulate(&dk, &tampered), ss); // another key, no error
        /// # Ok::<(), kyber512_avr::Error>(())
        /// ```
        pub fn decapsulate(dk: &DecapsulationKey, ct: &Ciphertext) -> SharedSecret {
            kem_impl::decaps_internal(dk, ct)
        }

        kem_common::impl_buffer_kem!(
            [] $variant, name: <$variant as kem_impl::Variant>::NAME, error: $crate::Error,
            lens: (params::EK_BYTES, params::DK_BYTES, params::CT_BYTES),
            keygen_into: raw::keygen_into, encapsulate_into: raw::encapsulate_into,
            check_decapsulation_key: raw::check_decapsulation_key, decapsulate_into: raw::decapsulate_into,
        );

        /// The same operations on caller-provided byte buffers, for firmware
        /// that keeps keys in static memory (nothing large is returned on the
        /// stack). Same RNG draws and outputs as the typed API.
        pub mod raw {
            use super::*;
            use super::params::{CT_BYTES, DK_BYTES, EK_BYTES};

            /// Key generation into `ek` and `dk`.
            pub fn keygen_into(
                rng: &mut impl rand_core::TryCryptoRng,
                ek: &mut [u8; EK_BYTES],
                dk: &mut [u8; DK_BYTES],
            ) -> Result<(), $crate::Error> {
                keygen_secret_into(rng, dk)?;
                ek.copy_from_slice(encapsulation_key_in(dk));
                Ok(())
            }

            /// Key generation into `dk` alone: the encapsulation key is the
            /// field [`encapsulation_key_in`] returns (for firmware that
            /// sends it from there instead of keeping a second copy).
            pub fn keygen_secret_into(
                rng: &mut impl rand_core::TryCryptoRng,
                dk: &mut [u8; DK_BYTES],
            ) -> Result<(), $crate::Error> {
                kem_impl::keygen_seeded::<$variant>(rng, dk)
            }

            /// Key generation into a compact decapsulation key, σ ‖ ek ‖
            /// H(ek) ‖ z (`COMPACT_DK_BYTES`: 384·k − 32 bytes less than
            /// FIPS 203's form, for a key that never leaves its device,
            /// such as a sensor's ephemeral key): the same draws, the same
            /// encapsulation key (at byte `SIGMA_BYTES`) and the same
            /// shared secrets as [`keygen_secret_into`]; decapsulation
            /// samples ŝ again from σ ([`decapsulate_compact_into`]).
            pub fn keygen_compact_into(
                rng: &mut impl rand_core::TryCryptoRng,
                dk: &mut [u8; params::COMPACT_DK_BYTES],
            ) -> Result<(), $crate::Error> {
                kem_impl::keygen_seeded::<$variant>(rng, dk)
            }

            /// [`check_decapsulation_key`] of a compact key: its length and
            /// the same hash check.
            pub fn check_compact_decapsulation_key(dk: &[u8]) -> Result<(), $crate::Error> {
                kem_impl::check_decapsulation_key::<$variant, [u8]>(dk, params::COMPACT_DK_BYTES)
            }

            /// Decapsulation with a compact key, which must come from
            /// [`keygen_compact_into`] or have passed
            /// [`check_compact_decapsulation_key`]: the shared secret
            /// [`decapsulate_into`] gives with the FIPS 203 key of the same
            /// draws.
            pub fn decapsulate_compact_into(
                dk: &[u8; params::COMPACT_DK_BYTES],
                ct: &[u8; CT_BYTES],
            ) -> SharedSecret {
                kem_impl::decaps_bytes::<$variant, [u8]>(dk, ct)
            }

            /// The encapsulation key inside the encoded decapsulation key
            /// `dk` (dk_PKE ‖ ek ‖ H(ek) ‖ z).
            pub fn encapsulation_key_in(dk: &[u8; DK_BYTES]) -> &[u8; EK_BYTES] {
                kem_impl::encapsulation_key_of(dk)
            }

            /// Encapsulation to the encoded key `ek` (checked as on import) into `ct`.
            pub fn encapsulate_into(
                ek: &[u8; EK_BYTES],
                rng: &mut impl rand_core::TryCryptoRng,
                ct: &mut [u8; CT_BYTES],
            ) -> Result<SharedSecret, $crate::Error> {
                use kem_impl::Variant;
                if <$variant>::CHECK_KEYS && !kem_impl::modulus_check(&ek[..]) {
                    return Err($crate::Error::EncapsulationKeyNotReduced);
                }
                let mut m = [0u8; 32];
                <$variant>::draw_message(rng, &mut m)?;
                let ss = kem_impl::encaps_bytes::<$variant, [u8]>(ek, &m, ct);
                kem_common::Wipe::wipe(&mut m);
                Ok(ss)
            }

            /// The checks `DecapsulationKey::from_bytes` makes, on the
            /// encoded key in place.
            pub fn check_decapsulation_key(dk: &[u8]) -> Result<(), $crate::Error> {
                kem_impl::check_decapsulation_key::<$variant, [u8]>(dk, DK_BYTES)
            }

            /// Decapsulation with the encoded key `dk`, which must come from
            /// [`keygen_into`] or have passed [`check_decapsulation_key`].
            pub fn decapsulate_into(dk: &[u8; DK_BYTES], ct: &[u8; CT_BYTES]) -> SharedSecret {
                kem_impl::decaps_bytes::<$variant, [u8]>(dk, ct)
            }

            /// [`check_decapsulation_key`] or [`check_compact_decapsulation_key`]
            /// by the key's length (another length: the first's error).
            pub fn check_decapsulation_key_either(dk: &[u8]) -> Result<(), $crate::Error> {
                let len = match dk.len() == params::COMPACT_DK_BYTES {
                    true => params::COMPACT_DK_BYTES,
                    false => DK_BYTES,
                };
                kem_impl::check_decapsulation_key::<$variant, [u8]>(dk, len)
            }

            /// Decapsulation with an encoded key of either form, its length
            /// saying which: FIPS 203's (`DK_BYTES`, as [`decapsulate_into`])
            /// or compact (`COMPACT_DK_BYTES`, as
            /// [`decapsulate_compact_into`]); it must come from key
            /// generation or have passed its check. For a caller holding
            /// keys of both forms, whose two decapsulations then share one
            /// copy of the code. A key of another length yields the
            /// implicit-rejection key of its last 32 bytes.
            pub fn decapsulate_either_into(dk: &[u8], ct: &[u8; CT_BYTES]) -> SharedSecret {
                kem_impl::decaps_bytes::<$variant, [u8]>(dk, ct)
            }

            /// [`encapsulate_into`] to a key that may be in program memory
            /// (a classic AVR's flash, read 32 values at a time): the
            /// same checks, draws and output.
            pub fn encapsulate_from(
                ek: kem_common::KeyBytes<'_>,
                rng: &mut impl rand_core::TryCryptoRng,
                ct: &mut [u8; CT_BYTES],
            ) -> Result<SharedSecret, $crate::Error> {
                use kem_common::KeySource;
                use kem_impl::Variant;
                if ek.len() != EK_BYTES {
                    return Err($crate::Error::InvalidLength { expected: EK_BYTES, got: ek.len() });
                }
                if <$variant>::CHECK_KEYS && !kem_impl::modulus_check(&ek) {
                    return Err($crate::Error::EncapsulationKeyNotReduced);
                }
                let mut m = [0u8; 32];
                <$variant>::draw_message(rng, &mut m)?;
                let ss = kem_impl::encaps_bytes::<$variant, _>(&ek, &m, ct);
                kem_common::Wipe::wipe(&mut m);
                Ok(ss)
            }

            /// [`check_decapsulation_key`] of a key that may be in program memory.
            pub fn check_decapsulation_key_from(dk: kem_common::KeyBytes<'_>) -> Result<(), $crate::Error> {
                kem_impl::check_decapsulation_key::<$variant, _>(&dk, DK_BYTES)
            }

            /// [`decapsulate_into`] with a key that may be in program
            /// memory; it must come from [`keygen_into`] or have passed
            /// [`check_decapsulation_key_from`].
            pub fn decapsulate_from(dk: kem_common::KeyBytes<'_>, ct: &[u8; CT_BYTES]) -> SharedSecret {
                kem_impl::decaps_bytes::<$variant, _>(&dk, ct)
            }
        }
    };
}
pub(crate) use kem_api;

kem_common::impl_bytes!([V: Variant] EncapsulationKey<V>, EK_BYTES, Error);
kem_common::impl_bytes!([V: Variant] DecapsulationKey<V>, DK_BYTES, Error);
kem_common::impl_bytes!([V: Variant] Ciphertext<V>, CT_BYTES, Error);
