//! The reference results: the same operations run by `modarith` on the host.

use avr_wire::rings::{Kind, Ring};

/// The reply payload the firmware must produce for `inputs` (one `Vec` per input polynomial).
pub fn expected(ring: Ring, kind: Kind, inputs: &[Vec<i16>]) -> Vec<u8> {
    macro_rules! on {
        ($T:ty) => {{
            type T = $T;
            const N: usize = T::BLOCKS * T::BASE_DEGREE;
            let arr = |i: usize| -> [i16; N] { inputs[i].as_slice().try_into().expect("input length") };
            let enc = |a: &[i16; N]| -> Vec<u8> { a.iter().flat_map(|x| x.to_le_bytes()).collect() };
            match kind {
                Kind::Forward => {
                    let mut a = arr(0);
                    T::forward(&mut a);
                    enc(&a)
                }
                Kind::Inverse => {
                    let mut a = arr(0);
                    T::inverse(&mut a);
                    enc(&a)
                }
                Kind::BaseMul => {
                    let mut c = [0i16; N];
                    T::base_mul(&arr(0), &arr(1), &mut c);
                    enc(&c)
                }
                Kind::BaseMulAcc => {
                    let mut c = arr(2);
                    T::base_mul_acc(&arr(0), &arr(1), &mut c);
                    enc(&c)
                }
                Kind::BaseInv => {
                    let mut a = arr(0);
                    let ok = T::base_inv(&mut a).unwrap_u8();
                    let mut v = vec![ok];
                    v.extend(enc(&a));
                    v
                }
            }
        }};
    }
    match ring {
        Ring::Ctru769 => on!(modarith::rings::Ctru769),
        Ring::Ctru3329 => on!(modarith::rings::Ctru3329),
        Ring::Kyber => on!(modarith::rings::Kyber),
        Ring::Saber3329 => on!(modarith::rings::Saber3329),
        Ring::Saber7681 => on!(modarith::rings::Saber7681),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_matches_modarith() {
        for (ring, kind) in avr_wire::rings::ops() {
            let n = ring.n();
            let inputs = vec![vec![1i16; n]; kind.inputs()];
            assert_eq!(
                expected(ring, kind, &inputs).len(),
                kind.reply_len(n) as usize,
                "{ring:?} {kind:?}"
            );
        }
    }
}
