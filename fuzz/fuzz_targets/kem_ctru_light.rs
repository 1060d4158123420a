//! CTRU-Light (both back-ends, all three arithmetic variants): key and
//! ciphertext decoding, decapsulation of arbitrary ciphertexts with honest
//! and with arbitrary import-validated keys. The three arithmetic variants
//! must agree bit for bit on every input (a differential check).
#![no_main]
use ctru_light::params::{CT_BYTES, PK_BYTES, SK_BYTES, SK_PKE_BYTES};
use ctru_light::{
    Ascon, Backend, Ciphertext, CtruLight, Kred2x, MontgomeryOpt, MontgomeryPlain, PublicKey, SecretKey, Sha3,
};
use kem_fuzz::{fixed, remap_bits, split, FuzzRng};

fn decaps_all<B: Backend>(sk: &SecretKey<B>, ct: &Ciphertext<B>) -> [u8; 32] {
    let a = *CtruLight::<B, Kred2x>::decapsulate(sk, ct).as_bytes();
    let b = *CtruLight::<B, MontgomeryOpt>::decapsulate(sk, ct).as_bytes();
    let c = *CtruLight::<B, MontgomeryPlain>::decapsulate(sk, ct).as_bytes();
    assert_eq!(a, b, "Kred2x vs MontgomeryOpt");
    assert_eq!(a, c, "Kred2x vs MontgomeryPlain");
    a
}

fn run<B: Backend>(mode: u8, rest: &[u8]) {
    match mode % 3 {
        0 => {
            let _ = SecretKey::<B>::from_bytes(rest);
            let _ = Ciphertext::<B>::from_bytes(rest);
            if let Ok(pk) = PublicKey::<B>::from_bytes(rest) {
                let _ = CtruLight::<B>::encapsulate(&pk, &mut FuzzRng::new(7)).unwrap();
            }
        }
        1 => {
            // Keygen is cheap enough to redo (a static would need one per back-end).
            let (sk, pk) = CtruLight::<B>::keygen(&mut FuzzRng::new(3)).unwrap();
            let ct_bytes: [u8; CT_BYTES] = fixed(rest);
            let ss = decaps_all(&sk, &Ciphertext::from_bytes(&ct_bytes).unwrap());
            assert_eq!(
                &ss,
                CtruLight::<B>::decapsulate_into(sk.as_bytes(), &ct_bytes).as_bytes()
            );
            let (ct2, ss2) = CtruLight::<B>::encapsulate(&pk, &mut FuzzRng::from_bytes(rest)).unwrap();
            assert_eq!(&decaps_all(&sk, &ct2), ss2.as_bytes());
        }
        _ => {
            let (sk_part, ct_part) = split(rest, SK_BYTES);
            let mut sk: [u8; SK_BYTES] = fixed(sk_part);
            // f into the set key generation draws from (packed 3 − f: even at
            // index 0, odd elsewhere, at most 5), the embedded pk's values
            // below q = 769 and not all zero.
            let mut f = [0u16; 512];
            kem_common::unpack_bits(3, 512, &sk[..SK_PKE_BYTES], |i, v| f[i] = v);
            for (i, v) in f.iter_mut().enumerate() {
                *v = (*v % 3) * 2 + u16::from(i != 0);
            }
            kem_common::pack_bits(3, 512, &mut sk[..SK_PKE_BYTES], |i| f[i]);
            remap_bits(&mut sk[SK_PKE_BYTES..SK_PKE_BYTES + PK_BYTES], 10, 512, |v| v % 769);
            if sk[SK_PKE_BYTES..SK_PKE_BYTES + PK_BYTES].iter().all(|&b| b == 0) {
                sk[SK_PKE_BYTES] = 1;
            }
            let typed = SecretKey::<B>::from_bytes(&sk).expect("repaired key imports");
            let ct_bytes: [u8; CT_BYTES] = fixed(ct_part);
            let ss = decaps_all(&typed, &Ciphertext::from_bytes(&ct_bytes).unwrap());
            assert_eq!(&ss, CtruLight::<B>::decapsulate_into(&sk, &ct_bytes).as_bytes());
            let _ = CtruLight::<B>::encapsulate(&typed.public_key(), &mut FuzzRng::new(5)).unwrap();
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 0x80 == 0 {
        run::<Sha3>(mode, rest)
    } else {
        run::<Ascon>(mode, rest)
    }
});
