//! The CTRU-Light KEM (`SPEC.md` §4): FO transform with implicit rejection.

use core::fmt;
use core::marker::PhantomData;

use kem_common::{bytes_at, CiphertextSink, KeyBytes, KeySource, Wipe};
use rand_core::TryCryptoRng;

use crate::arith::{Arithmetic, Kred2x};
use crate::encode::{f_in_keygen_set, pk_check, pk_check_in};
use crate::params::{CT_BYTES, ID_BYTES, KEYGEN_ATTEMPTS, PK_BYTES, SK_BYTES, SK_PKE_BYTES};
use crate::pke;
use crate::symmetric::Backend;
use crate::{Error, SharedSecret};

/// `bytes` as an array of exactly `L` bytes (in place).
fn exact_ref<const L: usize>(bytes: &[u8]) -> Result<&[u8; L], Error> {
    bytes.try_into().map_err(|_| Error::InvalidLength {
        expected: L,
        got: bytes.len(),
    })
}

/// A copy of `bytes`, which must be exactly `L` long.
fn exact<const L: usize>(bytes: &[u8]) -> Result<[u8; L], Error> {
    exact_ref(bytes).copied()
}

/// A public key: 512 coefficients below q, 10 bits each. Validated on import.
///
/// Generic over the symmetric back-end `B` ([`crate::Ascon`] or [`crate::Sha3`]).
///
/// ```
/// use ctru_light::{Ascon, CtruLightAscon, EncapsulationKey, Error};
///
/// let (_dk, ek) = CtruLightAscon::keygen(&mut rand::rng())?;
/// let bytes: &[u8] = ek.as_ref(); // 640 bytes, public: send them
/// let received = EncapsulationKey::<Ascon>::from_bytes(bytes)?;
/// assert_eq!(received, ek);
/// assert_eq!(
///     EncapsulationKey::<Ascon>::from_bytes(&[0xff; 640]), // 1023 ≥ q
///     Err(Error::EncapsulationKeyNotReduced)
/// );
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct EncapsulationKey<B> {
    bytes: [u8; PK_BYTES],
    _b: PhantomData<B>,
}

/// A secret key: PackSK(f) ‖ pk ‖ z. Validated on import; zeroized on drop.
/// Keeps its public key also as a typed key (a copy of the bytes inside),
/// which [`DecapsulationKey::encapsulation_key`] lends, as RustCrypto's
/// `Decapsulator` asks; the byte-buffer API (`*_into`) has no such copy.
///
/// Generic over the symmetric back-end `B` ([`crate::Ascon`] or [`crate::Sha3`]).
///
/// ```
/// use ctru_light::{Ascon, CtruLightAscon, DecapsulationKey};
///
/// let (dk, ek) = CtruLightAscon::keygen(&mut rand::rng())?;
/// assert_eq!(dk.encapsulation_key(), &ek);
/// // Stored as its 864 bytes (secret), loaded with the import checks.
/// let stored: [u8; 864] = *dk.as_bytes();
/// let loaded = DecapsulationKey::<Ascon>::from_bytes(&stored)?;
/// assert_eq!(loaded.encapsulation_key(), &ek);
/// assert!(DecapsulationKey::<Ascon>::from_bytes(&[0; 864]).is_err()); // no key generation makes it
/// # Ok::<(), ctru_light::Error>(())
/// ```
#[derive(Clone)]
pub struct DecapsulationKey<B> {
    bytes: [u8; SK_BYTES],
    pk: EncapsulationKey<B>,
}

/// A ciphertext: 512 bytes, any value valid.
///
/// Generic over the symmetric back-end `B` ([`crate::Ascon`] or [`crate::Sha3`]).
///
/// ```
/// use ctru_light::{Ascon, Ciphertext, CtruLightAscon};
///
/// let mut rng = rand::rng();
/// let (dk, ek) = CtruLightAscon::keygen(&mut rng)?;
/// let (ct, ss) = CtruLightAscon::encapsulate(&ek, &mut rng)?;
/// // Sent as its 512 bytes; any 512 bytes are a ciphertext.
/// let received = Ciphertext::<Ascon>::from_bytes(ct.as_bytes())?;
/// assert_eq!(CtruLightAscon::decapsulate(&dk, &received), ss);
/// assert!(Ciphertext::<Ascon>::from_bytes(&ct.as_bytes()[..511]).is_err());
/// # Ok::<(), ctru_light::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Ciphertext<B> {
    bytes: [u8; CT_BYTES],
    _b: PhantomData<B>,
}

impl<B: Backend> EncapsulationKey<B> {
    /// Encoded length.
    pub const LEN: usize = PK_BYTES;
    /// Imports a public key; a 10-bit value ≥ q is rejected
    /// ([`Error::EncapsulationKeyNotReduced`]), although the KAT arithmetic would reduce it.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let bytes = exact::<PK_BYTES>(bytes)?;
        pk_check(&bytes)?;
        Ok(EncapsulationKey { bytes, _b: PhantomData })
    }
    /// The encoded key.
    pub fn as_bytes(&self) -> &[u8; PK_BYTES] {
        &self.bytes
    }
}

/// The checks of [`DecapsulationKey::from_bytes`] on the encoded key in place (no
/// copy on the stack): its length, the packed f in the set key generation
/// draws from, and the embedded public key reduced and not zero. Out of
/// line: its refusal of a malformed key is the one (public) branch on the
/// key, named so in `ct-check/ct.supp`.
#[inline(never)]
pub(crate) fn check_secret_key(bytes: &[u8]) -> Result<(), Error> {
    check_secret_key_in(&exact_ref::<SK_BYTES>(bytes)?[..])
}

/// The checks of [`check_secret_key`] on a key of the right length (a
/// slice, or a key in program memory).
fn check_secret_key_in<S: KeySource + ?Sized>(key: &S) -> Result<(), Error> {
    let mut f = [0u8; crate::params::N];
    let f_ok = crate::encode::unpack_sk_in(key, &mut f) & f_in_keygen_set(&f);
    f.wipe();
    if !f_ok {
        return Err(Error::DecapsulationKeyMalformed);
    }
    pk_check_in(key, SK_PKE_BYTES)
}

impl<B: Backend> DecapsulationKey<B> {
    /// Encoded length.
    pub const LEN: usize = SK_BYTES;
    /// Imports a secret key: the packed f must hold values 0..=5 and the
    /// embedded public key must be reduced.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        check_secret_key(bytes)?;
        let bytes = exact::<SK_BYTES>(bytes)?;
        let mut pk = [0u8; PK_BYTES];
        pk.copy_from_slice(&bytes[SK_PKE_BYTES..SK_PKE_BYTES + PK_BYTES]);
        Ok(DecapsulationKey {
            bytes,
            pk: EncapsulationKey {
                bytes: pk,
                _b: PhantomData,
            },
        })
    }
    /// The encoded key (secret).
    pub fn as_bytes(&self) -> &[u8; SK_BYTES] {
        &self.bytes
    }
    /// The matching public key.
    pub fn public_key(&self) -> EncapsulationKey<B> {
        self.pk.clone()
    }
    /// The matching public key, borrowed.
    pub fn encapsulation_key(&self) -> &EncapsulationKey<B> {
        &self.pk
    }
}

impl<B> Drop for DecapsulationKey<B> {
    fn drop(&mut self) {
        self.bytes.wipe();
    }
}
impl<B> zeroize::ZeroizeOnDrop for DecapsulationKey<B> {}

impl<B: Backend> Ciphertext<B> {
    /// Encoded length.
    pub const LEN: usize = CT_BYTES;
    /// Imports a ciphertext (only the length is checked: every byte string is one).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Ok(Ciphertext {
            bytes: exact::<CT_BYTES>(bytes)?,
            _b: PhantomData,
        })
    }
    /// The encoded ciphertext.
    pub fn as_bytes(&self) -> &[u8; CT_BYTES] {
        &self.bytes
    }
}

impl<B> fmt::Debug for EncapsulationKey<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncapsulationKey({:02x?}..)", &self.bytes[..8])
    }
}
impl<B> fmt::Debug for DecapsulationKey<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DecapsulationKey(..)")
    }
}
impl<B> fmt::Debug for Ciphertext<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ciphertext({:02x?}..)", &self.bytes[..8])
    }
}

/// CTRU-Light with symmetric back-end `B` and arithmetic variant `A`
/// (the variant never changes a byte of the output). The default, K-RED2X
/// ([`Kred2x`]), is the fastest and smallest on AVR, where every variant's
/// ring operations are assembly (benchmarked in the project's repository).
///
/// ```
/// use ctru_light::{CtruLight, CtruLightSha3, MontgomeryPlain, Sha3};
///
/// let mut rng = rand::rng();
/// let (dk, ek) = CtruLightSha3::keygen(&mut rng)?;
/// let (ct, ss) = CtruLightSha3::encapsulate(&ek, &mut rng)?;
/// // Another arithmetic, the same bytes: it decapsulates the same way.
/// assert_eq!(CtruLight::<Sha3, MontgomeryPlain>::decapsulate(&dk, &ct), ss);
/// # Ok::<(), ctru_light::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CtruLight<B, A = Kred2x>(PhantomData<(B, A)>);

fn fill(rng: &mut impl TryCryptoRng, out: &mut [u8]) -> Result<(), Error> {
    kem_common::fill(rng, out).map_err(|_| Error::Rng)
}

impl<B: Backend, A: Arithmetic> CtruLight<B, A> {
    /// KEM.KeyGen (§4): draws d until f is invertible (at most
    /// [`KEYGEN_ATTEMPTS`] times; each retry is public), then z. Returns
    /// (decapsulation key, encapsulation key), the order of RustCrypto's
    /// `kem` traits; the byte-buffer [`Self::keygen_into`] keeps the
    /// reference C code's (pk, sk). Fails if `rng` does ([`Error::Rng`]),
    /// or if it gives no invertible f in the allowed attempts
    /// ([`Error::KeyGenExhausted`]: a broken generator).
    ///
    /// ```
    /// use ctru_light::CtruLightAscon;
    ///
    /// let mut rng = rand::rng();
    /// let (dk, ek) = CtruLightAscon::keygen(&mut rng)?; // the secret key first
    /// let (ct, ss) = CtruLightAscon::encapsulate(&ek, &mut rng)?;
    /// assert_eq!(CtruLightAscon::decapsulate(&dk, &ct), ss);
    /// # Ok::<(), ctru_light::Error>(())
    /// ```
    pub fn keygen(rng: &mut impl TryCryptoRng) -> Result<(DecapsulationKey<B>, EncapsulationKey<B>), Error> {
        let mut pk = EncapsulationKey {
            bytes: [0u8; PK_BYTES],
            _b: PhantomData,
        };
        let mut sk = DecapsulationKey {
            bytes: [0u8; SK_BYTES],
            pk: EncapsulationKey {
                bytes: [0u8; PK_BYTES],
                _b: PhantomData,
            },
        };
        Self::keygen_into(rng, &mut pk.bytes, &mut sk.bytes)?;
        sk.pk.bytes = pk.bytes;
        Ok((sk, pk))
    }

    /// KEM.Encaps (§4): m is 32 bytes from `rng`; G = Hg(ID(pk) ‖ m),
    /// ct = Enc(pk, m, XOF(G[32..64], 128)), K = G[0..32]. Returns
    /// (ciphertext to send, shared secret to keep); fails only if `rng`
    /// does ([`Error::Rng`]).
    ///
    /// ```
    /// use ctru_light::CtruLightAscon;
    ///
    /// let mut rng = rand::rng();
    /// let (dk, ek) = CtruLightAscon::keygen(&mut rng)?;
    /// let (ct1, ss1) = CtruLightAscon::encapsulate(&ek, &mut rng)?;
    /// let (ct2, ss2) = CtruLightAscon::encapsulate(&ek, &mut rng)?;
    /// assert_ne!(ss1, ss2); // a fresh secret each time
    /// assert_eq!(CtruLightAscon::decapsulate(&dk, &ct1), ss1);
    /// assert_eq!(CtruLightAscon::decapsulate(&dk, &ct2), ss2);
    /// # Ok::<(), ctru_light::Error>(())
    /// ```
    pub fn encapsulate(
        pk: &EncapsulationKey<B>,
        rng: &mut impl TryCryptoRng,
    ) -> Result<(Ciphertext<B>, SharedSecret), Error> {
        let mut ct = Ciphertext {
            bytes: [0u8; CT_BYTES],
            _b: PhantomData,
        };
        let ss = Self::encapsulate_unchecked(&pk.bytes[..], rng, &mut ct.bytes)?;
        Ok((ct, ss))
    }

    /// KEM.Decaps (§4): re-encrypts and selects K or Hrej(ct ‖ z) in
    /// constant time. Never fails: a bad ciphertext yields the rejection key.
    ///
    /// ```
    /// use ctru_light::{Ascon, Ciphertext, CtruLightAscon};
    ///
    /// let mut rng = rand::rng();
    /// let (dk, ek) = CtruLightAscon::keygen(&mut rng)?;
    /// let (ct, ss) = CtruLightAscon::encapsulate(&ek, &mut rng)?;
    /// assert_eq!(CtruLightAscon::decapsulate(&dk, &ct), ss);
    /// let mut bytes = *ct.as_bytes();
    /// bytes[0] ^= 1; // tampered with on the way
    /// let tampered = Ciphertext::<Ascon>::from_bytes(&bytes)?;
    /// assert_ne!(CtruLightAscon::decapsulate(&dk, &tampered), ss); // another key, no error
    /// # Ok::<(), ctru_light::Error>(())
    /// ```
    pub fn decapsulate(sk: &DecapsulationKey<B>, ct: &Ciphertext<B>) -> SharedSecret {
        Self::decapsulate_into(&sk.bytes, &ct.bytes)
    }

    /// [`Self::keygen`] into caller buffers (firmware keeps keys in static
    /// memory, so nothing large is returned on the stack).
    pub fn keygen_into(
        rng: &mut impl TryCryptoRng,
        pk: &mut [u8; PK_BYTES],
        sk: &mut [u8; SK_BYTES],
    ) -> Result<(), Error> {
        kem_common::keygen_or_wipe(pk, sk, |pk, sk| {
            Self::keygen_secret_into(rng, sk)?;
            pk.copy_from_slice(Self::public_key_in(sk));
            Ok(())
        })
    }

    /// [`Self::keygen`] into `sk` alone: the public key is the field
    /// [`Self::public_key_in`] returns (for firmware that sends it from
    /// there instead of keeping a second copy). `sk` is wiped on an error.
    pub fn keygen_secret_into(rng: &mut impl TryCryptoRng, sk: &mut [u8; SK_BYTES]) -> Result<(), Error> {
        kem_common::secret_keygen_or_wipe(sk, |sk| Self::keygen_draw_into(rng, sk))
    }

    /// The public key inside the encoded secret key `sk` (sk_PKE ‖ pk ‖ z).
    pub fn public_key_in(sk: &[u8; SK_BYTES]) -> &[u8; PK_BYTES] {
        sk[SK_PKE_BYTES..SK_PKE_BYTES + PK_BYTES]
            .try_into()
            .unwrap_or(&[0; PK_BYTES])
    }

    fn keygen_draw_into(rng: &mut impl TryCryptoRng, sk: &mut [u8; SK_BYTES]) -> Result<(), Error> {
        let (sk_pke, rest) = sk.split_at_mut(SK_PKE_BYTES);
        let sk_pke: &mut [u8; SK_PKE_BYTES] = sk_pke.try_into().map_err(|_| Error::Rng)?;
        let (pk_part, z) = rest.split_at_mut(PK_BYTES);
        let pk: &mut [u8; PK_BYTES] = pk_part.try_into().map_err(|_| Error::Rng)?;
        // The 256 coin bytes wait in the public-key field, which the public
        // key overwrites once they are used: no stack copy beside f and g.
        let mut found = false;
        for _ in 0..KEYGEN_ATTEMPTS {
            let coins: &mut [u8; 256] = (&mut pk[..256]).try_into().map_err(|_| Error::Rng)?;
            Self::keygen_coins(rng, coins)?;
            let ok = pke::keygen::<A>(pk, sk_pke);
            // Retrying on a non-invertible f is public (it excludes the key).
            if bool::from(ok) {
                found = true;
                break;
            }
        }
        if !found {
            return Err(Error::KeyGenExhausted);
        }
        fill(rng, z)
    }

    /// coins = XOF(d) for a fresh d (not inlined: d and the XOF state are
    /// gone before key generation's polynomials are on the stack).
    #[inline(never)]
    fn keygen_coins(rng: &mut impl TryCryptoRng, coins: &mut [u8; 256]) -> Result<(), Error> {
        let mut d = [0u8; 32];
        fill(rng, &mut d)?;
        B::xof(&[&d], coins);
        d.wipe();
        Ok(())
    }

    /// [`Self::encapsulate`] to an encoded public key (checked as on import) into `ct`.
    pub fn encapsulate_into(
        pk: &[u8; PK_BYTES],
        rng: &mut impl TryCryptoRng,
        ct: &mut [u8; CT_BYTES],
    ) -> Result<SharedSecret, Error> {
        pk_check(pk)?;
        Self::encapsulate_unchecked(&pk[..], rng, ct)
    }

    /// [`Self::encapsulate_into`] to a key that may be in program memory
    /// (a classic AVR's flash, read 32 values at a time): the same checks,
    /// draws and output.
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
        pk_check_in(&pk, 0)?;
        Self::encapsulate_unchecked(&pk, rng, ct)
    }

    fn encapsulate_unchecked<S: KeySource + ?Sized>(
        pk: &S,
        rng: &mut impl TryCryptoRng,
        ct: &mut [u8; CT_BYTES],
    ) -> Result<SharedSecret, Error> {
        // m: 32 bytes straight from the RNG (§4), no hash of them; wiped
        // whether or not the RNG failed part-way.
        let mut m = [0u8; 32];
        let ss = fill(rng, &mut m).map(|()| Self::encrypt_derive(pk, 0, &m, &mut CiphertextSink::Write(ct)));
        m.wipe();
        ss
    }

    /// The checks [`DecapsulationKey::from_bytes`] makes, on the encoded key in
    /// place (for callers that keep keys as bytes).
    pub fn check_secret_key(sk: &[u8]) -> Result<(), Error> {
        check_secret_key(sk)
    }

    /// [`Self::decapsulate`] with an encoded secret key, which must come from
    /// [`Self::keygen_into`] or have passed [`Self::check_secret_key`].
    /// Decryption and the re-encryption run in frames of their own, so only
    /// m is held here while the (larger) decryption product runs.
    pub fn decapsulate_into(sk: &[u8; SK_BYTES], ct: &[u8; CT_BYTES]) -> SharedSecret {
        Self::decapsulate_in(&sk[..], ct)
    }

    /// [`Self::check_secret_key`] of a key that may be in program memory.
    pub fn check_secret_key_from(sk: KeyBytes<'_>) -> Result<(), Error> {
        if sk.len() != SK_BYTES {
            return Err(Error::InvalidLength {
                expected: SK_BYTES,
                got: sk.len(),
            });
        }
        check_secret_key_in(&sk)
    }

    /// [`Self::decapsulate_into`] with a key that may be in program memory
    /// (a classic AVR's flash, read a piece at a time); it must come from
    /// [`Self::keygen_into`] or have passed [`Self::check_secret_key_from`].
    pub fn decapsulate_from(sk: KeyBytes<'_>, ct: &[u8; CT_BYTES]) -> SharedSecret {
        Self::decapsulate_in(&sk, ct)
    }

    fn decapsulate_in<S: KeySource + ?Sized>(sk: &S, ct: &[u8; CT_BYTES]) -> SharedSecret {
        let mut m = [0u8; 32];
        let _ = pke::decrypt(sk, ct, &mut m);
        let ss = Self::reencrypt_select(sk, ct, &m);
        m.wipe();
        ss
    }

    /// Re-encrypts m under pk (in `sk` after sk_pke), compares as the
    /// bytes come (no second ciphertext buffer; the OR of all differences
    /// is zero iff equal), and selects K or Hrej(ct ‖ z) (z: the key's
    /// last 32 bytes) in constant time.
    #[inline(never)]
    fn reencrypt_select<S: KeySource + ?Sized>(sk: &S, ct: &[u8; CT_BYTES], m: &[u8; 32]) -> SharedSecret {
        let mut sink = CiphertextSink::compare(ct);
        let good = Self::encrypt_derive(sk, SK_PKE_BYTES, m, &mut sink);
        let same = sink.equal();
        let mut z_copy = [0u8; 32];
        let mut bad = B::hrej(&[ct, bytes_at(sk, SK_PKE_BYTES + PK_BYTES, &mut z_copy)]);
        if sk.as_slice().is_none() {
            z_copy.wipe(); // z read out of program memory
        }
        let ss = SharedSecret::new(kem_common::select_bytes(&bad, good.as_bytes(), same));
        bad.wipe();
        ss
    }

    /// G = Hg(ID(pk) ‖ m); ct = Enc(pk, m, XOF(G[32..64], 128)); K = G[0..32].
    /// Not inlined: the callers' frames stay small under the encryption.
    #[inline(never)]
    fn encrypt_derive<S: KeySource + ?Sized>(
        key: &S,
        pk_at: usize,
        m: &[u8; 32],
        sink: &mut CiphertextSink<CT_BYTES>,
    ) -> SharedSecret {
        let mut r = [0i16; crate::params::N];
        let k = Self::key_and_r(key, pk_at, m, &mut r);
        pke::encrypt_with_r::<A, S>(key, pk_at, m, &mut r, sink);
        SharedSecret::new(k)
    }

    /// K, and r sampled from the coins XOF(G[32..64], 128), for
    /// G = Hg(ID(pk) ‖ m). Not inlined: G and the coins are gone before the
    /// encryption's polynomials are on the stack.
    #[inline(never)]
    fn key_and_r<S: KeySource + ?Sized>(
        key: &S,
        pk_at: usize,
        m: &[u8; 32],
        r: &mut [i16; crate::params::N],
    ) -> [u8; 32] {
        let mut id = [0u8; ID_BYTES];
        let mut g = B::hg(&[bytes_at(key, pk_at, &mut id), m]);
        let mut coins = [0u8; 128];
        B::xof(&[&g[32..]], &mut coins);
        pke::sample_r(&coins, r);
        let mut k = [0u8; 32];
        k.copy_from_slice(&g[..32]);
        g.wipe();
        coins.wipe();
        k
    }
}

/// Byte-level PKE and KEM functions for tests and the firmware harness:
/// deterministic given their coins.
pub mod hazmat {
    use super::*;

    /// PKE.KeyGen from 256 coin bytes: (pk, sk_pke, invertible).
    pub fn pke_keygen<A: Arithmetic>(coins: &[u8; 256]) -> ([u8; PK_BYTES], [u8; SK_PKE_BYTES], bool) {
        let mut pk = [0u8; PK_BYTES];
        pk[..256].copy_from_slice(coins);
        let mut sk = [0u8; SK_PKE_BYTES];
        let ok = pke::keygen::<A>(&mut pk, &mut sk);
        (pk, sk, ok.into())
    }

    /// PKE.Enc.
    pub fn pke_encrypt<A: Arithmetic>(pk: &[u8; PK_BYTES], m: &[u8; 32], coins: &[u8; 128]) -> [u8; CT_BYTES] {
        let mut ct = [0u8; CT_BYTES];
        pke::encrypt::<A>(pk, m, coins, &mut CiphertextSink::Write(&mut ct));
        ct
    }

    /// The exact decryption product w = c·f mod 256 that PKE.Dec decodes
    /// (for noise measurements).
    pub fn pke_decrypt_product(sk_pke: &[u8; SK_PKE_BYTES], ct: &[u8; CT_BYTES]) -> [u8; CT_BYTES] {
        let mut w = [0u8; CT_BYTES];
        let _ = pke::product_blocks(sk_pke, ct, |b, block| w[8 * b..8 * b + 8].copy_from_slice(block));
        w
    }

    /// The E8 codeword bits of message `m` (bit j of block b is coefficient 8b + j).
    pub fn e8_bits(m: &[u8; 32]) -> [u8; CT_BYTES] {
        core::array::from_fn(|k| (crate::encode::e8_codeword(m, k >> 3) >> (k & 7)) & 1)
    }

    /// PKE.Dec (the same in every arithmetic: its product is taken mod 256).
    pub fn pke_decrypt(sk_pke: &[u8; SK_PKE_BYTES], ct: &[u8; CT_BYTES]) -> [u8; 32] {
        let mut m = [0u8; 32];
        let _ = pke::decrypt(sk_pke, ct, &mut m);
        m
    }
}

kem_common::impl_bytes!([B: Backend] EncapsulationKey<B>, PK_BYTES, Error);
kem_common::impl_bytes!([B: Backend] DecapsulationKey<B>, SK_BYTES, Error);
kem_common::impl_bytes!([B: Backend] Ciphertext<B>, CT_BYTES, Error);

kem_common::impl_buffer_kem!(
    [B: Backend, A: Arithmetic] CtruLight<B, A>, name: "CTRU-Light", error: Error, lens: (PK_BYTES, SK_BYTES, CT_BYTES),
    keygen_into: Self::keygen_into, encapsulate_into: Self::encapsulate_into,
    check_decapsulation_key: check_secret_key, decapsulate_into: Self::decapsulate_into,
);

// RustCrypto's `kem` traits, on the default arithmetic (the variants give
// identical bytes; a key type names one `Kem`). Key generation that finds
// no invertible f (a broken RNG) is rerun with fresh randomness.
kem_common::impl_kem_traits!(
    [B: Backend] kem: CtruLight<B>, ek: EncapsulationKey<B>, dk: DecapsulationKey<B>, ct: Ciphertext<B>,
    ek_size: kem_common::kem::consts::U640, ct_size: kem_common::kem::consts::U512, ct_len: CT_BYTES,
    keygen: |rng: &mut _| CtruLight::<B>::keygen(rng),
    encapsulate: |pk: &EncapsulationKey<B>, rng: &mut _| CtruLight::<B>::encapsulate(pk, rng),
    decapsulate: |sk: &DecapsulationKey<B>, ct: &[u8; CT_BYTES]| CtruLight::<B>::decapsulate_into(sk.as_bytes(), ct),
);
