//! ML-KEM-512 beside RustCrypto's `ml-kem` 0.3 (an independent
//! implementation), beyond what `ml_kem_sets.rs` checks for every set: the
//! `kem` 0.3 traits of both crates interoperating, seeds both ways with the
//! import and equality rules, and the typed and trait values converting.
//! The randomised byte-for-byte comparison of every set is in `ml_kem_sets.rs`.

#![allow(deprecated)] // ml-kem's expanded key encoding: the byte form FIPS 203 and we use

use kyber512_avr::ml_kem_512;
use ml_kem::array::Array;
use ml_kem::{Decapsulate, Encapsulate, ExpandedKeyEncoding, KeyExport, MlKem512, TryKeyInit};

/// Through the `kem` 0.3 traits: a key pair of either crate, the other
/// crate's encapsulation to it, and decapsulation to the same shared key.
#[test]
fn kem_traits_interoperate_with_ml_kem() {
    use kem_common::kem::Kem;
    let mut rng = kem_common::test_rng(7);
    let (our_dk, our_ek) = ml_kem_512::MlKem512::generate_keypair_from_rng(&mut rng);
    let their_ek = ml_kem::ml_kem_512::EncapsulationKey::new(&our_ek.to_bytes()).expect("our ek is valid for them");
    let (ct, k_send) = their_ek.encapsulate_with_rng(&mut rng);
    assert_eq!(our_dk.decapsulate(&ct).as_slice(), k_send.as_slice());

    let (their_dk, their_ek) = MlKem512::generate_keypair_from_rng(&mut rng);
    let ek = ml_kem_512::EncapsulationKey::new(&their_ek.to_bytes()).expect("their ek is valid for us");
    let (ct, k_send) = ek.encapsulate_with_rng(&mut rng);
    assert_eq!(their_dk.decapsulate(&ct).as_slice(), k_send.as_slice());
    // And a wrong key does not decapsulate to it.
    assert_ne!(our_dk.decapsulate(&ct).as_slice(), k_send.as_slice());
}

/// The seed form both ways (issue #34): a seed `ml-kem` exports gives the
/// same keys here (`Seed`, and RustCrypto's `FromSeed` on our `MlKem512`),
/// and a seed drawn here gives the same keys in `ml-kem`; each side
/// decapsulates what the other encapsulates to the key of the shared seed.
#[test]
fn seeds_move_between_ml_kem_and_this_crate_both_ways() {
    use kem_common::kem::{FromSeed, Generate, Kem};
    let mut rng = kem_common::test_rng(64);
    for _ in 0..20 {
        // Theirs → ours.
        let (their_dk, their_ek) = MlKem512::generate_keypair_from_rng(&mut rng);
        let their_seed = their_dk.to_seed().expect("a generated key keeps its seed");
        let seed = ml_kem_512::Seed::try_from(their_seed.as_slice()).expect("64 bytes");
        let (dk, ek) = seed.keys();
        assert_eq!(ek.as_bytes().as_slice(), their_ek.to_bytes().as_slice());
        assert_eq!(dk.as_bytes().as_slice(), their_dk.to_expanded_bytes().as_slice());
        let (dk_t, ek_t) = ml_kem_512::MlKem512::from_seed(&their_seed);
        assert_eq!((dk_t.as_bytes(), ek_t.as_bytes()), (dk.as_bytes(), ek.as_bytes()));
        let (ct, k) = their_ek.encapsulate_with_rng(&mut rng);
        assert_eq!(dk.decapsulate(&ct).as_slice(), k.as_slice());

        // Ours → theirs.
        let ours = ml_kem_512::Seed::generate(&mut rng).expect("rng");
        let (dk, ek) = ours.keys();
        // The decapsulation key exports the seed it was made from (#51).
        assert_eq!(dk.to_seed().as_ref(), Some(&ours));
        let their_dk = ml_kem::ml_kem_512::DecapsulationKey::from_seed(Array::from(*dk.to_seed().unwrap().as_bytes()));
        assert_eq!(
            their_dk.encapsulation_key().to_bytes().as_slice(),
            ek.as_bytes().as_slice()
        );
        assert_eq!(their_dk.to_seed().unwrap().as_slice(), ours.as_bytes().as_slice());
        let (ct, k) = ek.encapsulate_with_rng(&mut rng);
        assert_eq!(their_dk.decapsulate(&ct).as_slice(), k.as_slice());
        let _ = dk;
    }
    // Draws as keygen does: the same RNG state gives the same pair.
    let (mut a, mut b) = (kem_common::test_rng(9), kem_common::test_rng(9));
    let (dk, ek) = ml_kem_512::keygen(&mut a).unwrap();
    let (dk2, ek2) = ml_kem_512::Seed::generate(&mut b).unwrap().keys();
    assert_eq!((ek.as_bytes(), dk.as_bytes()), (ek2.as_bytes(), dk2.as_bytes()));
    // keygen's key keeps its seed too; a key imported expanded has none.
    let seed = dk.to_seed().expect("a generated key keeps its seed");
    assert_eq!(seed.keys().0.as_bytes(), dk.as_bytes());
    let imported = ml_kem_512::DecapsulationKey::from_bytes(dk.as_bytes()).unwrap();
    assert!(imported.to_seed().is_none());
    // A generated decapsulation key (the `Generate` trait) is unaffected.
    let _ = ml_kem_512::DecapsulationKey::generate_from_rng(&mut rng);
    // Wrong lengths are a typed error; equality is on the bytes.
    assert!(matches!(
        ml_kem_512::Seed::try_from(&[0u8; 63][..]),
        Err(kyber512_avr::Error::InvalidLength { expected: 64, got: 63 })
    ));
    assert_eq!(
        ml_kem_512::Seed::from_bytes(&[7; 64]),
        ml_kem_512::Seed::from_bytes(&[7; 64])
    );
    assert_ne!(
        ml_kem_512::Seed::from_bytes(&[7; 64]),
        ml_kem_512::Seed::from_bytes(&[8; 64])
    );
}

/// The typed API and the trait API meet (issue #34): a typed ciphertext
/// converts into the trait's and compares with it, a typed shared secret
/// compares with the trait's shared key (both ways), and the trait's
/// ciphertext converts back through `TryFrom<&[u8]>`.
#[test]
fn typed_and_trait_values_convert_and_compare() {
    use kem_common::kem::{Ciphertext, SharedKey};
    let mut rng = kem_common::test_rng(11);
    let (dk, ek) = ml_kem_512::keygen(&mut rng).unwrap();
    let (ct, ss) = ml_kem_512::encapsulate(&ek, &mut rng).unwrap();

    let trait_ct: Ciphertext<ml_kem_512::MlKem512> = (&ct).into();
    assert!(ct == trait_ct);
    assert!(trait_ct == ct);
    let trait_ss: SharedKey<ml_kem_512::MlKem512> = dk.decapsulate(&trait_ct);
    assert!(ss == trait_ss);
    assert!(trait_ss == ss);
    assert_eq!(kem_common::SharedSecret::from(&trait_ss), ss);

    let back = ml_kem_512::Ciphertext::try_from(trait_ct.as_slice()).unwrap();
    assert_eq!(back.as_bytes(), ct.as_bytes());
    assert_eq!(ml_kem_512::decapsulate(&dk, &back), ss);

    // A different ciphertext or key is unequal in both directions.
    let (other_ct, other_ss) = ml_kem_512::encapsulate(&ek, &mut rng).unwrap();
    assert!(other_ct != trait_ct);
    assert!(trait_ct != other_ct);
    assert!(other_ss != trait_ss);
    assert!(trait_ss != other_ss);
    let moved: Ciphertext<ml_kem_512::MlKem512> = other_ct.into();
    assert!(moved != trait_ct);
}
