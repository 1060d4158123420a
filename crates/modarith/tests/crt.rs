//! The CRT lift is exact over the whole range it claims.

use modarith::crt::{crt_bound_holds, crt_lift, crt_lift_centred};
use modarith::*;

// Worst cases the schemes rely on (asserted at compile time, as they do).
const _: () = assert!(crt_bound_holds(131_200, 769, 3329)); // c·f of CTRU-Light, §3's method
const _: () = assert!(crt_bound_holds(4096 * 5 * 256 * 2, 3329, 7681)); // LightSaber, L = 2
const _: () = assert!(!crt_bound_holds(1_280_001, 769, 3329));

fn exhaustive<M1: Modulus, M2: Modulus>() {
    let half = (M1::Q as i32 * M2::Q as i32 - 1) / 2;
    for x in -half..=half {
        let r1 = x.rem_euclid(M1::Q as i32) as i16; // unsigned representatives
        let r2 = (x % M2::Q as i32) as i16; // signed representatives
        assert_eq!(crt_lift::<M1, M2>(r1, r2), x);
        let (c1, c2) = (M1::center(r1), M2::center(r2));
        assert_eq!(crt_lift_centred::<M1, M2>(c1, c2), x);
    }
}

#[test]
fn crt_769_3329_exact_over_full_range() {
    exhaustive::<Q769, Q3329>();
}

#[test]
fn crt_3329_7681_exact_over_full_range() {
    exhaustive::<Q3329, Q7681>();
}
