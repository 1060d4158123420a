//! Every reduction checked exhaustively over its documented input range:
//! output bound and congruence r ≡ a·S^{-1} (mod q).

use modarith::modulus::inv_mod;
use modarith::reduce::{kred, kred2x, montgomery};
use modarith::*;

/// Walks a over (−INPUT_BOUND, INPUT_BOUND), tracking a·S^{-1} mod q
/// incrementally (no division in the hot loop), and checks every output.
fn exhaustive<R: Reduction>() {
    let q = R::Modulus::Q as i64;
    let s_inv = inv_mod(R::SCALE as u32, q as u32) as i64;
    let lo = -(R::INPUT_BOUND as i64) + 1;
    let mut expected = (lo * s_inv).rem_euclid(q);
    let mut worst = 0i32;
    for a in lo..R::INPUT_BOUND as i64 {
        let r = R::reduce(a as i32);
        worst = worst.max((r as i32).abs());
        assert_eq!(
            R::Modulus::to_unsigned(r) as i64,
            expected,
            "{} mod {}: a = {a}, r = {r}",
            R::NAME,
            q
        );
        expected += s_inv;
        if expected >= q {
            expected -= q;
        }
    }
    assert!(
        worst < R::OUTPUT_BOUND,
        "{} mod {}: |r| reached {worst}, bound {}",
        R::NAME,
        q,
        R::OUTPUT_BOUND
    );
}

macro_rules! exhaustive_tests {
    ($($name:ident: $r:ty),* $(,)?) => { $(
        #[test]
        fn $name() { exhaustive::<$r>(); }
    )* };
}

exhaustive_tests! {
    montgomery_769: Montgomery<Q769>,
    montgomery_3329: Montgomery<Q3329>,
    montgomery_7681: Montgomery<Q7681>,
    ntt_friendly_montgomery_769: NttFriendlyMontgomery<Q769>,
    ntt_friendly_montgomery_3329: NttFriendlyMontgomery<Q3329>,
    ntt_friendly_montgomery_7681: NttFriendlyMontgomery<Q7681>,
    barrett_769: Barrett<Q769>,
    barrett_3329: Barrett<Q3329>,
    barrett_7681: Barrett<Q7681>,
    ntt_friendly_barrett_769: NttFriendlyBarrett<Q769>,
    ntt_friendly_barrett_3329: NttFriendlyBarrett<Q3329>,
    ntt_friendly_barrett_7681: NttFriendlyBarrett<Q7681>,
    kred_769: KRed<Q769>,
    kred_3329: KRed<Q3329>,
    kred_7681: KRed<Q7681>,
    kred2x_769: KRed2x<Q769>,
}

/// The NTT-friendly Montgomery reduction is the plain one, bit for bit.
#[test]
fn ntt_friendly_montgomery_equals_montgomery() {
    fn check<M: Modulus>() {
        let bound = (M::Q as i32) << 15;
        for a in (-bound + 1)..bound {
            assert_eq!(
                Montgomery::<M>::reduce(a),
                NttFriendlyMontgomery::<M>::reduce(a),
                "a = {a}"
            );
        }
    }
    check::<Q769>();
    check::<Q3329>();
    check::<Q7681>();
}

/// CTRU-Light paper: Montgomery with R = 2^m (t = a mod 2^m, since
/// q^{-1} ≡ 1 mod 2^m) equals −K-RED exactly.
#[test]
fn montgomery_2m_is_minus_kred() {
    fn check<M: Modulus>() {
        let bound = 1i32 << (M::M + 14);
        for a in (-bound + 1)..bound {
            let t = a & ((1 << M::M) - 1);
            let mont = (a - t * M::Q as i32) >> M::M;
            assert_eq!(mont, -kred::<M>(a), "q = {}, a = {a}", M::Q);
        }
    }
    check::<Q769>();
    check::<Q3329>();
    check::<Q7681>();
}

/// CTRU-Light paper: for m = 8, 2^{-16} ≡ k² (mod q), so 16-bit Montgomery
/// and K-RED2X agree up to a small multiple of q.
#[test]
fn montgomery_16_is_kred2x_up_to_small_multiple_of_q() {
    fn check<M: Modulus>() -> i32 {
        assert_eq!(M::M, 8);
        let bound = (M::Q as i32) << 15;
        let mut most = 0;
        for a in (-bound + 1)..bound {
            let diff = montgomery::<M>(a) as i32 - kred2x::<M>(a);
            assert_eq!(diff.rem_euclid(M::Q as i32), 0, "q = {}, a = {a}", M::Q);
            most = most.max((diff / M::Q as i32).abs());
        }
        most
    }
    // The multiple is bounded by (k² + k)·2^8 / q + 2: at most 5 for 769, 15 for 3329.
    assert!(check::<Q769>() <= 5);
    assert!(check::<Q3329>() <= 15);
}

#[test]
fn center_is_canonical_for_every_i16() {
    fn check<M: Modulus>() {
        for a in i16::MIN..=i16::MAX {
            let c = M::center(a);
            assert!(c.abs() <= M::HALF, "q = {}, a = {a}, c = {c}", M::Q);
            assert_eq!((a as i32 - c as i32).rem_euclid(M::Q as i32), 0);
            let u = M::to_unsigned(a);
            assert!(u < M::Q);
            assert_eq!((a as i32 - u as i32).rem_euclid(M::Q as i32), 0);
        }
    }
    check::<Q769>();
    check::<Q3329>();
    check::<Q7681>();
}

/// The multiplication-free helpers over their whole documented domains:
/// `center_fixup` on |a| ≤ q + (q−1)/2, `to_unsigned_small` on (−q, q).
#[test]
fn masked_helpers_are_canonical_on_their_domains() {
    fn check<M: Modulus>() {
        let q = M::Q as i16;
        for a in -q - M::HALF..=q + M::HALF {
            assert_eq!(M::center_fixup(a), M::center(a), "q = {q}, a = {a}");
        }
        for a in -q + 1..q {
            assert_eq!(M::to_unsigned_small(a), M::to_unsigned(a), "q = {q}, a = {a}");
        }
    }
    check::<Q769>();
    check::<Q3329>();
    check::<Q7681>();
}

#[test]
fn center_wide_is_canonical() {
    fn check<M: Modulus>() {
        let mut a: i32 = -(1 << 30) + 1;
        while a < 1 << 30 {
            let c = M::center_wide(a);
            assert!(c.abs() <= M::HALF);
            assert_eq!((a - c as i32).rem_euclid(M::Q as i32), 0, "a = {a}");
            a += 997; // a prime stride visits every residue class
        }
        for a in [(1 << 30) - 1, -(1 << 30) + 1, 0, 1, -1] {
            let c = M::center_wide(a);
            assert_eq!((a - c as i32).rem_euclid(M::Q as i32), 0);
        }
    }
    check::<Q769>();
    check::<Q3329>();
    check::<Q7681>();
}

#[test]
fn derived_constants_match_the_specs() {
    assert_eq!((Q769::K, Q769::M), (3, 8));
    assert_eq!((Q3329::K, Q3329::M), (13, 8));
    assert_eq!((Q7681::K, Q7681::M), (15, 9));
    // Kyber's reference implementation: QINV = -3327 ≡ 62209 (mod 2^16).
    assert_eq!(Q3329::QINV, 62209);
    assert_eq!(Q3329::R_MOD_Q, 2285);
    assert_eq!(Q3329::R2_MOD_Q, 1353);
}
