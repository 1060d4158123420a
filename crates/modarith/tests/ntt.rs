//! Every ring's NTT against schoolbook multiplication, inverse ∘ forward,
//! base inversion, for every reduction each ring admits.

mod common;
use common::*;

use modarith::rings::*;
use modarith::*;

const TRIALS: usize = 20;

fn check_ring<R: Reduction, const N: usize, const L: u32>(seed: u64, with_inverse: bool) {
    let q = R::Modulus::Q;
    let mut rng = Rng::new(seed);
    for trial in 0..TRIALS {
        let a: [i16; N] = rng.poly(q);
        let b: [i16; N] = rng.poly(q);

        // inverse ∘ forward = identity (canonically).
        let mut t = a;
        Ntt::<R, N, L>::forward(&mut t);
        assert!(t.iter().all(|x| x.abs() <= R::Modulus::HALF), "forward output centred");
        Ntt::<R, N, L>::inverse(&mut t);
        assert_eq!(
            canon_poly(&t, q),
            canon_poly(&a, q),
            "{} inverse∘forward, trial {trial}",
            R::NAME
        );
        assert!(t.iter().all(|x| x.abs() <= R::Modulus::HALF));

        // NTT multiplication = schoolbook.
        let (mut fa, mut fb) = (a, b);
        Ntt::<R, N, L>::forward(&mut fa);
        Ntt::<R, N, L>::forward(&mut fb);
        let mut c = [0i16; N];
        Ntt::<R, N, L>::base_mul(&fa, &fb, &mut c);
        Ntt::<R, N, L>::inverse(&mut c);
        assert_eq!(
            canon_poly(&c, q),
            schoolbook(&a, &b, q),
            "{} product, trial {trial}",
            R::NAME
        );

        // In place: the same product.
        let mut in_place = fa;
        Ntt::<R, N, L>::base_mul_assign(&mut in_place, &fb);
        Ntt::<R, N, L>::inverse(&mut in_place);
        assert_eq!(in_place, c, "{} base_mul_assign", R::NAME);

        // Accumulation: a·b + b·b.
        let mut acc = [0i16; N];
        Ntt::<R, N, L>::base_mul_acc(&fa, &fb, &mut acc);
        Ntt::<R, N, L>::base_mul_acc(&fb, &fb, &mut acc);
        Ntt::<R, N, L>::inverse(&mut acc);
        let ab = schoolbook(&a, &b, q);
        let bb = schoolbook(&b, &b, q);
        let expected: Vec<i64> = ab.iter().zip(&bb).map(|(x, y)| canon(x + y, q)).collect();
        assert_eq!(canon_poly(&acc, q).to_vec(), expected, "{} accumulate", R::NAME);

        if with_inverse {
            // a · a^{-1} = 1 when every block is invertible (almost surely for random a).
            let mut inv = fa;
            let ok = Ntt::<R, N, L>::base_inv(&mut inv);
            if bool::from(ok) {
                let mut one = [0i16; N];
                Ntt::<R, N, L>::base_mul(&fa, &inv, &mut one);
                Ntt::<R, N, L>::inverse(&mut one);
                let mut expected = [0i16; N];
                expected[0] = 1;
                assert_eq!(one, expected, "{} a·a^-1", R::NAME);
            }
        }
    }
}

/// Non-invertible blocks are reported. In every ring here x^D − γ is
/// irreducible over F_q (γ has order 2^(L+1) and a root of x^D − γ would need
/// order D·2^(L+1), which does not divide q − 1 for D > 1), so each block is a
/// field and only the zero block is singular. Sparse non-zero blocks must
/// still invert, so the flag cannot be a plain "some coefficient is zero".
fn check_non_invertible<R: Reduction, const N: usize, const L: u32>() {
    let q = R::Modulus::Q;
    let d = N >> L;
    let mut rng = Rng::new(7);
    let mut a: [i16; N] = rng.poly(q);
    Ntt::<R, N, L>::forward(&mut a);
    a[5 * d..6 * d].fill(0);
    a[9 * d..10 * d].fill(0);
    a[10 * d - 1] = 5; // 5·x^{D−1}: sparse but invertible
    let before = a;
    let ok = Ntt::<R, N, L>::base_inv(&mut a);
    assert!(!bool::from(ok), "{} must report the zero block", R::NAME);
    assert!(a[5 * d..6 * d].iter().all(|&x| x == 0), "a singular block becomes 0");
    let mut prod = [0i16; N];
    Ntt::<R, N, L>::base_mul(&before, &a, &mut prod);
    for (i, blk) in prod.chunks(d).enumerate() {
        if i != 5 {
            assert_eq!(canon(blk[0] as i64, q), 1, "{} block {i}", R::NAME);
            assert!(blk[1..].iter().all(|&x| x == 0), "{} block {i}", R::NAME);
        }
    }
    // With the zero block replaced, the flag is clear again.
    let mut fixed = before;
    fixed[5 * d] = 1;
    assert!(bool::from(Ntt::<R, N, L>::base_inv(&mut fixed)));
}

macro_rules! ring_tests {
    ($($name:ident: $r:ty, $n:literal, $l:literal, inv = $inv:literal;)*) => { $(
        #[test]
        fn $name() {
            check_ring::<$r, $n, $l>(0x5EED ^ $n ^ ($l << 12), $inv);
            if $inv {
                check_non_invertible::<$r, $n, $l>();
            }
        }
    )* };
}

ring_tests! {
    ctru769_kred2x: KRed2x<Q769>, 512, 7, inv = true;
    ctru769_kred: KRed<Q769>, 512, 7, inv = true;
    ctru769_montgomery: Montgomery<Q769>, 512, 7, inv = true;
    ctru769_ntt_friendly_montgomery: NttFriendlyMontgomery<Q769>, 512, 7, inv = true;
    ctru769_barrett: Barrett<Q769>, 512, 7, inv = true;
    ctru769_ntt_friendly_barrett: NttFriendlyBarrett<Q769>, 512, 7, inv = true;
    ctru3329_montgomery: Montgomery<Q3329>, 512, 7, inv = true;
    ctru3329_ntt_friendly_montgomery: NttFriendlyMontgomery<Q3329>, 512, 7, inv = false;
    ctru3329_barrett: Barrett<Q3329>, 512, 7, inv = false;
    kyber_montgomery: Montgomery<Q3329>, 256, 7, inv = true;
    kyber_ntt_friendly_montgomery: NttFriendlyMontgomery<Q3329>, 256, 7, inv = true;
    kyber_barrett: Barrett<Q3329>, 256, 7, inv = false;
    kyber_ntt_friendly_barrett: NttFriendlyBarrett<Q3329>, 256, 7, inv = false;
    saber7681_montgomery: Montgomery<Q7681>, 256, 8, inv = true;
    saber7681_ntt_friendly_montgomery: NttFriendlyMontgomery<Q7681>, 256, 8, inv = true;
    saber7681_barrett: Barrett<Q7681>, 256, 8, inv = false;
    saber7681_ntt_friendly_barrett: NttFriendlyBarrett<Q7681>, 256, 8, inv = false;
}

/// The aliases are the rings the specs name, with the roots they name.
#[test]
fn ring_aliases_match_the_specs() {
    assert_eq!(Ctru769::ROOT, 7); // CTRU-Light definition §6
    assert_eq!(Ctru3329::ROOT, 17); // Kyber's root
    assert_eq!(Kyber::ROOT, 17);
    assert_eq!((Kyber::BLOCKS, Kyber::BASE_DEGREE), (128, 2));
    assert_eq!((Ctru769::BLOCKS, Ctru769::BASE_DEGREE), (128, 4));
    assert_eq!((Saber7681::BLOCKS, Saber7681::BASE_DEGREE), (256, 1));
    assert_eq!(Saber3329::ZETAS, Kyber::ZETAS);
    // FIPS 203 §4.3: ζ^{brv7(1)} = 17^64 = 1729, the first twiddle.
    let z1 = (Kyber::ZETAS[1] as i64 * modarith::modulus::inv_mod(Q3329::R_MOD_Q as u32, 3329) as i64).rem_euclid(3329);
    assert_eq!(z1, 1729);
}

/// The default aliases work end to end (the doc example, at full size).
#[test]
fn default_aliases_multiply() {
    let mut rng = Rng::new(99);
    let a: [i16; 512] = rng.poly(769);
    let b: [i16; 512] = rng.poly(769);
    let (mut fa, mut fb, mut c) = (a, b, [0i16; 512]);
    Ctru769::forward(&mut fa);
    Ctru769::forward(&mut fb);
    Ctru769::base_mul(&fa, &fb, &mut c);
    Ctru769::inverse(&mut c);
    assert_eq!(canon_poly(&c, 769), schoolbook(&a, &b, 769));
}
