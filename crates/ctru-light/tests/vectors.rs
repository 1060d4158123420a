//! CTRU-Light revision 1 against the outside vectors in
//! `kat-vectors/ctru-light/` (provenance in `kat-vectors/README.md`):
//! - all 100 records of both KAT files (the `sha3` one is the authors'
//!   reference C code's output), keygen, encaps and decaps byte for byte, in
//!   every arithmetic variant, through the typed and the byte-buffer API;
//!   decapsulation of the files' ciphertexts gives their shared secrets, and
//!   a modified ciphertext gives Hrej(ct ‖ z);
//! - the draft standard's worked example (Annex E.5);
//! - every intermediate value of record 0 of both files.
//!
//! Hashes are recomputed here with RustCrypto's `sha3` and `ascon-hash`
//! (not the crate's sponges), and sampling, packing, the products and the
//! compression from the definition's formulas (`SPEC.md`), so a value the
//! crate and the vectors both get wrong the same way is unlikely to pass.

use ctru_light::hazmat;
use ctru_light::params::{CT_BYTES, N, PK_BYTES, SK_BYTES, SK_PKE_BYTES};
use ctru_light::symmetric::Backend;
use ctru_light::{
    Arithmetic, Ascon, Ciphertext, CtruLight, Kred2x, MontgomeryOpt, MontgomeryPlain, PublicKey, SecretKey, Sha3,
};
use kem_common::Tape;
use nist_kat::{rsp, NistDrbg};
use rand_core::Rng;
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../kat-vectors/ctru-light/");
const Q: i64 = 769;

/// The definition's symmetric functions (§5), from RustCrypto's crates.
trait Reference: Backend {
    /// `rsp` file of the back-end.
    const KAT: &'static str;
    fn ref_xof(x: &[u8], len: usize) -> Vec<u8>;
    fn ref_hg(x: &[u8]) -> Vec<u8>;
    fn ref_hrej(x: &[u8]) -> Vec<u8>;
}

impl Reference for Sha3 {
    const KAT: &'static str = "ctru-light-sha3_PQCkemKAT_864.rsp";
    fn ref_xof(x: &[u8], len: usize) -> Vec<u8> {
        use sha3::digest::{ExtendableOutput, Update, XofReader};
        let mut h = sha3::Shake256::default();
        h.update(x);
        let mut out = vec![0u8; len];
        h.finalize_xof().read(&mut out);
        out
    }
    fn ref_hg(x: &[u8]) -> Vec<u8> {
        use sha3::Digest;
        sha3::Sha3_512::digest(x).to_vec()
    }
    fn ref_hrej(x: &[u8]) -> Vec<u8> {
        Self::ref_hg(x)[..32].to_vec()
    }
}

impl Reference for Ascon {
    const KAT: &'static str = "ctru-light-ascon_PQCkemKAT_864.rsp";
    fn ref_xof(x: &[u8], len: usize) -> Vec<u8> {
        use ascon_hash::{AsconXof128, ExtendableOutput, Update, XofReader};
        let mut h = AsconXof128::default();
        h.update(x);
        let mut out = vec![0u8; len];
        h.finalize_xof().read(&mut out);
        out
    }
    fn ref_hg(x: &[u8]) -> Vec<u8> {
        Self::ref_xof(x, 64)
    }
    fn ref_hrej(x: &[u8]) -> Vec<u8> {
        Self::ref_xof(x, 32)
    }
}

fn records<B: Reference>() -> Vec<rsp::Record> {
    let text = std::fs::read_to_string(format!("{DIR}{}", B::KAT)).expect("KAT file present");
    let records = rsp::parse(&text).expect("KAT file parses");
    assert_eq!(records.len(), 100);
    records
}

fn hex(s: &str) -> Vec<u8> {
    rsp::hex_decode(s).expect("hex")
}

fn json(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{DIR}{name}")).expect("JSON file present");
    serde_json::from_str(&text).expect("JSON parses")
}

fn field_hex(v: &Value, key: &str) -> Vec<u8> {
    hex(v[key].as_str().unwrap_or_else(|| panic!("`{key}` is a string")))
}

fn field_ints(v: &Value, key: &str) -> Vec<i64> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("`{key}` is an array"))
        .iter()
        .map(|x| x.as_i64().expect("integer"))
        .collect()
}

/// The ciphertext with one byte changed (position and XOR from `n`).
fn modified(ct: &[u8], n: usize) -> Vec<u8> {
    let mut bad = ct.to_vec();
    bad[(n * 37 + 5) % CT_BYTES] ^= (n % 255) as u8 + 1;
    bad
}

/// Hrej(ct ‖ z) of the definition (§4), z = the last 32 bytes of sk.
fn reference_rejection<B: Reference>(sk: &[u8], ct: &[u8]) -> Vec<u8> {
    B::ref_hrej(&[ct, &sk[SK_BYTES - 32..]].concat())
}

/// Every record: keygen, encaps, decaps byte for byte from the record's
/// DRBG (typed and byte-buffer API); decapsulation of the file's
/// ciphertext under the file's key, and of a modified one.
fn kat_records<B: Reference, A: Arithmetic>() {
    let mut compared = 0;
    for (n, r) in records::<B>().iter().enumerate() {
        let seed: [u8; 48] = r.seed.as_slice().try_into().expect("48-byte seed");
        let mut rng = NistDrbg::new(&seed);
        let (sk, pk) = CtruLight::<B, A>::keygen(&mut rng).expect("keygen");
        assert_eq!(&pk.as_bytes()[..], &r.pk[..], "{} record {n}: pk", B::NAME);
        assert_eq!(&sk.as_bytes()[..], &r.sk[..], "{} record {n}: sk", B::NAME);
        let (ct, ss) = CtruLight::<B, A>::encapsulate(&pk, &mut rng).expect("encaps");
        assert_eq!(&ct.as_bytes()[..], &r.ct[..], "{} record {n}: ct", B::NAME);
        assert_eq!(&ss.as_bytes()[..], &r.ss[..], "{} record {n}: ss", B::NAME);

        // The byte-buffer API (the firmware's) from a fresh DRBG.
        let mut rng = NistDrbg::new(&seed);
        let (mut pk2, mut sk2, mut ct2) = ([0u8; PK_BYTES], [0u8; SK_BYTES], [0u8; CT_BYTES]);
        CtruLight::<B, A>::keygen_into(&mut rng, &mut pk2, &mut sk2).expect("keygen_into");
        let ss2 = CtruLight::<B, A>::encapsulate_into(&pk2, &mut rng, &mut ct2).expect("encapsulate_into");
        assert_eq!((&pk2[..], &sk2[..]), (&r.pk[..], &r.sk[..]), "record {n}: keygen_into");
        assert_eq!(
            (&ct2[..], &ss2.as_bytes()[..]),
            (&r.ct[..], &r.ss[..]),
            "record {n}: encapsulate_into"
        );

        // Decapsulation of the file's ciphertext with the file's key.
        let their_sk = SecretKey::<B>::from_bytes(&r.sk).expect("the file's sk imports");
        let their_ct = Ciphertext::<B>::from_bytes(&r.ct).expect("the file's ct imports");
        let their_pk = PublicKey::<B>::from_bytes(&r.pk).expect("the file's pk imports");
        assert_eq!(their_pk.as_bytes(), their_sk.public_key().as_bytes());
        let k = CtruLight::<B, A>::decapsulate(&their_sk, &their_ct);
        assert_eq!(&k.as_bytes()[..], &r.ss[..], "{} record {n}: decaps", B::NAME);
        let sk_bytes: &[u8; SK_BYTES] = r.sk.as_slice().try_into().expect("sk length");
        let ct_bytes: &[u8; CT_BYTES] = r.ct.as_slice().try_into().expect("ct length");
        assert_eq!(
            &CtruLight::<B, A>::decapsulate_into(sk_bytes, ct_bytes).as_bytes()[..],
            &r.ss[..]
        );

        // A modified ciphertext: the rejection key Hrej(ct ‖ z).
        let bad = modified(&r.ct, n);
        let k = CtruLight::<B, A>::decapsulate(&their_sk, &Ciphertext::from_bytes(&bad).expect("length"));
        assert_eq!(
            &k.as_bytes()[..],
            &reference_rejection::<B>(&r.sk, &bad)[..],
            "{} record {n}: implicit rejection",
            B::NAME
        );
        assert_ne!(&k.as_bytes()[..], &r.ss[..]);
        compared += 1;
    }
    assert_eq!(compared, 100);
}

#[test]
fn sha3_kat_kred2x() {
    kat_records::<Sha3, Kred2x>();
}

#[test]
fn sha3_kat_montgomery_opt() {
    kat_records::<Sha3, MontgomeryOpt>();
}

#[test]
fn sha3_kat_montgomery_plain() {
    kat_records::<Sha3, MontgomeryPlain>();
}

#[test]
fn ascon_kat_kred2x() {
    kat_records::<Ascon, Kred2x>();
}

#[test]
fn ascon_kat_montgomery_opt() {
    kat_records::<Ascon, MontgomeryOpt>();
}

#[test]
fn ascon_kat_montgomery_plain() {
    kat_records::<Ascon, MontgomeryPlain>();
}

/// CBD1 (§2): coefficient 4i + j = bit 2j − bit 2j+1 of byte i.
fn cbd1(buf: &[u8]) -> Vec<i64> {
    buf.iter()
        .flat_map(|&b| (0..4).map(move |j| ((b >> (2 * j)) & 1) as i64 - ((b >> (2 * j + 1)) & 1) as i64))
        .collect()
}

/// Little-endian bit-stream of `bits`-bit values (§2).
fn unpack(bytes: &[u8], bits: usize, count: usize) -> Vec<i64> {
    (0..count)
        .map(|i| {
            (0..bits).fold(0, |v, k| {
                let bit = i * bits + k;
                v | (((bytes[bit / 8] >> (bit % 8)) & 1) as i64) << k
            })
        })
        .collect()
}

/// a·b in Z_m[x]/(x^512 + 1), schoolbook, coefficients in [0, m).
fn negacyclic(a: &[i64], b: &[i64], m: i64) -> Vec<i64> {
    let mut out = vec![0i64; N];
    for (i, &x) in a.iter().enumerate() {
        for (j, &y) in b.iter().enumerate() {
            if i + j < N {
                out[i + j] += x * y;
            } else {
                out[i + j - N] -= x * y;
            }
        }
    }
    out.iter().map(|v| v.rem_euclid(m)).collect()
}

/// The key-generation polynomials (§3) from 256 coin bytes: (f', g, f).
fn keygen_polys(coins: &[u8]) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let f_prime = cbd1(&coins[..128]);
    let g = cbd1(&coins[128..]);
    let mut f: Vec<i64> = f_prime.iter().map(|x| 2 * x).collect();
    f[0] += 1;
    (f_prime, g, f)
}

/// The ciphertext compression of the definition (§3): an exact division.
fn compress_spec(sigma: i64, bit: i64) -> u8 {
    ((256 * sigma + 384).div_euclid(769) + 128 * bit).rem_euclid(256) as u8
}

/// The draft standard's worked example (Annex E.5): keygen from its seed
/// and z, encaps with its m, decaps, and the intermediate values printed
/// there, in every arithmetic variant.
fn draft_standard_example<A: Arithmetic>() {
    let e5 = json("ctru-light_draft-standard_E5.json");
    let seed = field_hex(&e5, "keygen_seed");
    let z = field_hex(&e5, "z");
    let m = field_hex(&e5, "encaps_m");
    let (pk, sk, ct, k) = (
        field_hex(&e5, "pk"),
        field_hex(&e5, "sk"),
        field_hex(&e5, "ct"),
        field_hex(&e5, "K"),
    );

    // Key generation's intermediates, recomputed from the definition.
    let coins = Sha3::ref_xof(&seed, 256);
    assert_eq!(coins, field_hex(&e5, "keygen_coins_shake256_seed_256"));
    let int16be = |key: &str| -> Vec<i64> {
        field_hex(&e5, key)
            .chunks_exact(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]) as i64)
            .collect()
    };
    let (f_prime, g, f) = keygen_polys(&coins);
    assert_eq!(f_prime, int16be("f_prime_int16be"));
    assert_eq!(g, int16be("g_int16be"));
    // pk = Pack10(h) with h·f = g; sk = PackSK(f) ‖ pk ‖ z, PackSK(f) = 3 − f.
    let h = unpack(&pk, 10, N);
    let g_mod_q: Vec<i64> = g.iter().map(|x| x.rem_euclid(Q)).collect();
    assert_eq!(negacyclic(&h, &f, Q), g_mod_q);
    assert_eq!(
        unpack(&sk[..SK_PKE_BYTES], 3, N),
        f.iter().map(|x| 3 - x).collect::<Vec<_>>()
    );
    assert_eq!(
        (&sk[SK_PKE_BYTES..SK_PKE_BYTES + PK_BYTES], &sk[SK_BYTES - 32..]),
        (&pk[..], &z[..])
    );

    // The KEM from the example's randomness, in its order: seed, z, m.
    let randomness = [&seed[..], &z, &m].concat();
    let mut tape = Tape::new(&randomness);
    let (our_sk, our_pk) = CtruLight::<Sha3, A>::keygen(&mut tape).expect("keygen");
    assert_eq!((&our_pk.as_bytes()[..], &our_sk.as_bytes()[..]), (&pk[..], &sk[..]));
    let (our_ct, our_k) = CtruLight::<Sha3, A>::encapsulate(&our_pk, &mut tape).expect("encaps");
    assert_eq!(tape.used(), randomness.len(), "keygen and encaps drew the whole tape");

    // Encapsulation's intermediates: G = Hg(ID(pk) ‖ m), coins = XOF(G[32..], 128).
    let big_g = Sha3::ref_hg(&[&pk[..33], &m[..]].concat());
    assert_eq!(big_g, field_hex(&e5, "encaps_G_K_rho"));
    let enc_coins = Sha3::ref_xof(&big_g[32..], 128);
    assert_eq!(enc_coins, field_hex(&e5, "encaps_coins_shake256_rho_128"));
    assert_eq!(&big_g[..32], &k[..]);
    let sigma = negacyclic(&h, &cbd1(&enc_coins), Q);
    let bits = hazmat::e8_bits(m.as_slice().try_into().expect("32 bytes"));
    let c: Vec<u8> = (0..N).map(|i| compress_spec(sigma[i], bits[i] as i64)).collect();
    assert_eq!(c, ct, "the definition's Enc gives the example's ct");
    assert_eq!((&our_ct.as_bytes()[..], &our_k.as_bytes()[..]), (&ct[..], &k[..]));

    // Decapsulation: the example's K, and (its printed decaps_m is not a
    // message; see kat-vectors/README.md) the message m back.
    let sk_typed = SecretKey::<Sha3>::from_bytes(&sk).expect("sk imports");
    let ct_typed = Ciphertext::<Sha3>::from_bytes(&ct).expect("ct imports");
    let k2 = CtruLight::<Sha3, A>::decapsulate(&sk_typed, &ct_typed);
    assert_eq!(&k2.as_bytes()[..], &field_hex(&e5, "decaps_K")[..]);
    assert_eq!(field_hex(&e5, "decaps_G"), big_g);
    assert_eq!(field_hex(&e5, "decaps_coins"), enc_coins);
    let sk_pke: &[u8; SK_PKE_BYTES] = sk[..SK_PKE_BYTES].try_into().expect("length");
    let ct_arr: &[u8; CT_BYTES] = ct.as_slice().try_into().expect("length");
    assert_eq!(&hazmat::pke_decrypt(sk_pke, ct_arr)[..], &m[..]);
    let bad = modified(&ct, 1);
    let k3 = CtruLight::<Sha3, A>::decapsulate(&sk_typed, &Ciphertext::from_bytes(&bad).expect("length"));
    assert_eq!(&k3.as_bytes()[..], &reference_rejection::<Sha3>(&sk, &bad)[..]);
}

#[test]
fn draft_standard_example_kred2x() {
    draft_standard_example::<Kred2x>();
}

#[test]
fn draft_standard_example_montgomery_opt() {
    draft_standard_example::<MontgomeryOpt>();
}

#[test]
fn draft_standard_example_montgomery_plain() {
    draft_standard_example::<MontgomeryPlain>();
}

/// Every intermediate value of record 0 (`*_intermediates_count0.json`):
/// recomputed from the definition here, and compared with the crate's
/// byte-level functions where it exposes them.
fn intermediates<B: Reference, A: Arithmetic>() {
    let all = json("ctru-light_intermediates_count0.json");
    let v = &all[B::NAME];
    assert_eq!(v["backend"].as_str(), Some(B::NAME));
    assert_eq!(v["revision"].as_i64(), Some(1));
    let record = &records::<B>()[0];
    assert_eq!(field_hex(v, "kat_seed"), record.seed);

    // The DRBG's draws: d (once per attempt), z, m.
    let seed: [u8; 48] = record.seed.as_slice().try_into().expect("48 bytes");
    let mut drbg = NistDrbg::new(&seed);
    let ds = v["keygen_d"].as_array().expect("keygen_d is a list");
    assert_eq!(ds.len(), 1, "record 0 needs one attempt");
    let mut d = [0u8; 32];
    drbg.fill_bytes(&mut d);
    assert_eq!(d.to_vec(), hex(ds[0].as_str().expect("hex")));
    let (mut z, mut m) = ([0u8; 32], [0u8; 32]);
    drbg.fill_bytes(&mut z);
    drbg.fill_bytes(&mut m);
    assert_eq!((z.to_vec(), m.to_vec()), (field_hex(v, "z"), field_hex(v, "m")));

    // Key generation.
    let coins = B::ref_xof(&d, 256);
    assert_eq!(coins, field_hex(v, "keygen_coins"));
    let (f_prime, g, f) = keygen_polys(&coins);
    assert_eq!(
        (f_prime, g.clone(), f.clone()),
        (field_ints(v, "f_prime"), field_ints(v, "g"), field_ints(v, "f"))
    );
    let h = field_ints(v, "h");
    let g_mod_q: Vec<i64> = g.iter().map(|x| x.rem_euclid(Q)).collect();
    assert_eq!(negacyclic(&h, &f, Q), g_mod_q, "h·f = g");
    let pk = field_hex(v, "pk");
    let sk = field_hex(v, "sk");
    assert_eq!(unpack(&pk, 10, N), h);
    assert_eq!(
        unpack(&sk[..SK_PKE_BYTES], 3, N),
        f.iter().map(|x| 3 - x).collect::<Vec<_>>()
    );
    assert_eq!(
        (&pk, &sk, &field_hex(v, "ct"), &field_hex(v, "ss")),
        (&record.pk, &record.sk, &record.ct, &record.ss)
    );
    let coins_arr: &[u8; 256] = coins.as_slice().try_into().expect("256 bytes");
    let (our_pk, our_sk_pke, invertible) = hazmat::pke_keygen::<A>(coins_arr);
    assert!(invertible);
    assert_eq!((&our_pk[..], &our_sk_pke[..]), (&pk[..], &sk[..SK_PKE_BYTES]));

    // Encapsulation.
    let g_input = [&pk[..33], &m[..]].concat();
    assert_eq!(g_input, field_hex(v, "G_input"));
    let big_g = B::ref_hg(&g_input);
    assert_eq!(big_g, field_hex(v, "G"));
    let enc_coins = B::ref_xof(&big_g[32..], 128);
    assert_eq!(enc_coins, field_hex(v, "enc_coins"));
    let r = cbd1(&enc_coins);
    assert_eq!(r, field_ints(v, "r"));
    let sigma = negacyclic(&h, &r, Q);
    assert_eq!(sigma, field_ints(v, "sigma"));
    let bits = hazmat::e8_bits(&m);
    assert_eq!(
        bits.iter().map(|&b| b as i64).collect::<Vec<_>>(),
        field_ints(v, "e8_bits")
    );
    let c: Vec<u8> = (0..N).map(|i| compress_spec(sigma[i], bits[i] as i64)).collect();
    assert_eq!(c.iter().map(|&x| x as i64).collect::<Vec<_>>(), field_ints(v, "c"));
    assert_eq!(c, record.ct);
    let pk_arr: &[u8; PK_BYTES] = pk.as_slice().try_into().expect("length");
    let enc_coins_arr: &[u8; 128] = enc_coins.as_slice().try_into().expect("128 bytes");
    assert_eq!(&hazmat::pke_encrypt::<A>(pk_arr, &m, enc_coins_arr)[..], &record.ct[..]);
    assert_eq!(&big_g[..32], &record.ss[..]);

    // Decryption: w = c·f mod q2 = 256, then E8 decoding.
    let ct_ints: Vec<i64> = record.ct.iter().map(|&x| x as i64).collect();
    let w = negacyclic(&ct_ints, &f, 256);
    assert_eq!(w, field_ints(v, "dec_cf_mod_q2"));
    let sk_pke: &[u8; SK_PKE_BYTES] = sk[..SK_PKE_BYTES].try_into().expect("length");
    let ct_arr: &[u8; CT_BYTES] = record.ct.as_slice().try_into().expect("length");
    let our_w = hazmat::pke_decrypt_product(sk_pke, ct_arr);
    assert_eq!(our_w.iter().map(|&x| x as i64).collect::<Vec<_>>(), w);
    assert_eq!(hazmat::pke_decrypt(sk_pke, ct_arr).to_vec(), field_hex(v, "dec_m"));

    // The implicit-rejection example: byte 0 of ct XOR 0x01.
    let example = &v["implicit_reject_example"];
    assert_eq!(example["ct_modified"].as_str(), Some("ct with byte 0 xor 0x01"));
    let mut bad = record.ct.clone();
    bad[0] ^= 0x01;
    let k_bar = field_hex(example, "K_bar");
    assert_eq!(reference_rejection::<B>(&sk, &bad), k_bar);
    let sk_typed = SecretKey::<B>::from_bytes(&sk).expect("sk imports");
    let k = CtruLight::<B, A>::decapsulate(&sk_typed, &Ciphertext::from_bytes(&bad).expect("length"));
    assert_eq!(&k.as_bytes()[..], &k_bar[..]);
}

#[test]
fn sha3_record0_intermediates() {
    intermediates::<Sha3, Kred2x>();
    intermediates::<Sha3, MontgomeryOpt>();
    intermediates::<Sha3, MontgomeryPlain>();
}

#[test]
fn ascon_record0_intermediates() {
    intermediates::<Ascon, Kred2x>();
    intermediates::<Ascon, MontgomeryOpt>();
    intermediates::<Ascon, MontgomeryPlain>();
}

/// The E8 codeword table of the intermediates file is the crate's (§2).
#[test]
fn e8_codeword_table() {
    let all = json("ctru-light_intermediates_count0.json");
    let table = &all["e8_codewords"];
    for v in 0..16u8 {
        let mut m = [0u8; 32];
        m[0] = v;
        let bits = hazmat::e8_bits(&m);
        let codeword = (0..8).fold(0i64, |cw, j| cw | (bits[j] as i64) << j);
        assert_eq!(Some(codeword), table[v.to_string()].as_i64(), "v = {v}");
    }
}
