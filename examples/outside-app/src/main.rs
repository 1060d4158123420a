//! One generic function over every KEM: RustCrypto's ML-KEM-512 and this
//! project's KEMs (every FIPS 203 set, Kyber512, LightSaber, CTRU-Light), through RustCrypto's `kem` 0.3 traits, with a
//! current `rand`'s thread RNG.

use kem::{Decapsulate, Encapsulate, Kem, KeyExport, TryKeyInit};

/// Key generation, encapsulation, decapsulation, and the encapsulation key
/// through its bytes, for any KEM; returns (ek, ct) lengths.
fn round_trip<K>(rng: &mut impl rand::CryptoRng) -> (usize, usize)
where
    K: Kem,
    K::DecapsulationKey: Decapsulate,
{
    let (dk, ek) = K::generate_keypair_from_rng(rng);
    let (ct, k_send) = ek.encapsulate_with_rng(rng);
    assert_eq!(dk.decapsulate(&ct), k_send, "decapsulation disagrees");

    let bytes = ek.to_bytes();
    let imported = K::EncapsulationKey::new(&bytes).expect("own key re-imports");
    assert!(imported == ek);
    let (ct2, k2) = imported.encapsulate_with_rng(rng);
    assert_eq!(dk.decapsulate(&ct2), k2);
    assert_ne!(k2, k_send, "fresh encapsulations differ");

    // A tampered ciphertext: implicit rejection, a different key.
    let mut bad = ct.clone();
    bad[0] ^= 1;
    assert_ne!(dk.decapsulate(&bad), k_send);
    (bytes.len(), ct.len())
}

fn main() {
    let mut rng = rand::rng();
    let results = [
        (
            "ml-kem (RustCrypto) ML-KEM-512",
            round_trip::<ml_kem::MlKem512>(&mut rng),
        ),
        (
            "kyber512-avr ML-KEM-512",
            round_trip::<kyber512_avr::ml_kem_512::MlKem512>(&mut rng),
        ),
        (
            "kyber512-avr ML-KEM-768",
            round_trip::<kyber512_avr::ml_kem_768::MlKem768>(&mut rng),
        ),
        (
            "kyber512-avr ML-KEM-1024",
            round_trip::<kyber512_avr::ml_kem_1024::MlKem1024>(&mut rng),
        ),
        (
            "kyber512-avr Kyber512 round 3",
            round_trip::<kyber512_avr::kyber512_r3::Kyber512R3>(&mut rng),
        ),
        (
            "lightsaber-avr LightSaber",
            round_trip::<lightsaber_avr::LightSaber>(&mut rng),
        ),
        (
            "ctru-light CTRU-Light SHA3",
            round_trip::<ctru_light::CtruLightSha3>(&mut rng),
        ),
        (
            "ctru-light CTRU-Light Ascon",
            round_trip::<ctru_light::CtruLightAscon>(&mut rng),
        ),
    ];
    for (name, (ek_len, ct_len)) in results {
        println!("{name}: ok (encapsulation key {ek_len} B, ciphertext {ct_len} B)");
    }

    // The two ML-KEM-512 implementations interoperate through the traits.
    let (our_dk, our_ek) = kyber512_avr::ml_kem_512::MlKem512::generate_keypair_from_rng(&mut rng);
    let their_ek = ml_kem::ml_kem_512::EncapsulationKey::new(&our_ek.to_bytes()).expect("valid key");
    let (ct, k) = their_ek.encapsulate_with_rng(&mut rng);
    assert_eq!(our_dk.decapsulate(&ct), k);
    let (their_dk, their_ek) = ml_kem::MlKem512::generate_keypair_from_rng(&mut rng);
    let ek = kyber512_avr::ml_kem_512::EncapsulationKey::new(&their_ek.to_bytes()).expect("valid key");
    let (ct, k) = ek.encapsulate_with_rng(&mut rng);
    assert_eq!(their_dk.decapsulate(&ct), k);
    println!("ml-kem <-> kyber512-avr ML-KEM-512: interoperate both ways");

    // Decapsulation keys in ml-kem's seed form (d ‖ z, 64 bytes), both ways.
    let (their_dk, their_ek) = ml_kem::MlKem512::generate_keypair_from_rng(&mut rng);
    let seed = their_dk.to_seed().expect("a generated key keeps its seed");
    let (our_dk, our_ek) = <kyber512_avr::ml_kem_512::MlKem512 as kem::FromSeed>::from_seed(&seed);
    assert_eq!(our_ek.to_bytes(), their_ek.to_bytes());
    let (ct, k) = their_ek.encapsulate_with_rng(&mut rng);
    assert_eq!(our_dk.decapsulate(&ct), k);
    let ours = kyber512_avr::ml_kem_512::Seed::generate(&mut rng).expect("rng");
    let (_, our_ek) = ours.keys(); // (dk, ek), as the kem traits
    let their_dk = ml_kem::ml_kem_512::DecapsulationKey::from_seed((*ours.as_bytes()).into());
    assert_eq!(their_dk.encapsulation_key().to_bytes(), our_ek.to_bytes());
    println!("ml-kem <-> kyber512-avr ML-KEM-512: a decapsulation key's 64-byte seed gives the same keys both ways");
}
