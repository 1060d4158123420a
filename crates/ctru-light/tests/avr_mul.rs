//! The AVR schoolbook base case of the decryption product modulo 256
//! (`asm-avr/ctru_mul.S`) against the portable `leaf_product_portable`, in
//! simavr: random operands, the extremes (all 0x00, 0xFF, 0x80, one-hot),
//! the ABI, and a data-independent cycle count. Needs avr-gcc and libsimavr
//! (`cargo xtask setup` installs them).

use std::path::PathBuf;

use avr_sim::Sim;
use ctru_light::leaf_product_portable;

const LEAF: usize = 32;

#[test]
fn assembly_base_case_matches_portable_and_is_constant_time() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let elf = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mul_harness.elf");
    avr_sim::harness::build_elf(
        "atmega1284p",
        &elf,
        &[
            root.join("tests/avr/mul_harness.c"),
            root.join("../../asm-avr/test/abi_check.S"),
            root.join("../../asm-avr/ctru_mul.S"),
        ],
    )
    .unwrap_or_else(|e| panic!("the base-case harness: {e}"));
    let mut sim = Sim::load(&elf, "atmega1284p").expect("simavr loads the harness");
    let mut seed = 0x5EED_CAFE_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as u8
    };
    let mut cases: Vec<([u8; LEAF], [u8; LEAF])> = Vec::new();
    for x in [0x00, 0xFF, 0x80, 0x7F, 0x01] {
        for y in [0x00, 0xFF, 0x80, 0xFC, 0x03] {
            cases.push(([x; LEAF], [y; LEAF]));
        }
    }
    for i in 0..LEAF {
        let mut one = [0u8; LEAF];
        one[i] = 1;
        cases.push((one, core::array::from_fn(|j| j as u8 + 1)));
        cases.push((core::array::from_fn(|j| 0xF0 ^ j as u8), one));
    }
    for n in 0..2000 {
        let a = core::array::from_fn(|_| next());
        // Half the cases with b as decryption's leaves see it: small values
        // and their sums (f_i ∈ [−4, 3]).
        let b = core::array::from_fn(|_| {
            if n % 2 == 0 {
                next()
            } else {
                (next() % 8).wrapping_sub(4)
            }
        });
        cases.push((a, b));
    }
    for (n, (a, b)) in cases.iter().enumerate() {
        let mut request = vec![1u8];
        request.extend_from_slice(a);
        request.extend_from_slice(b);
        sim.send(&request);
        let reply = sim.run_until_output(129, 1_000_000).expect("harness answers");
        let mut expected = [0u8; 2 * LEAF];
        leaf_product_portable(a, b, &mut expected);
        assert_eq!(reply[..64], expected, "case {n}: a = {a:?}, b = {b:?}");
        assert_eq!(reply[64..128], expected, "case {n}, ABI-checked call");
        assert_eq!(reply[128], 0, "callee-saved registers or r1 not preserved");
    }
    let t = avr_sim::harness::stop_and_time(&mut sim).expect("harness stops");
    assert_eq!(t.calls, cases.len());
    println!("ctru_mul32_avr: {} cycles (max {}), {} products", t.min, t.max, t.calls);
    assert_eq!(t.min, t.max, "the cycle count depends on the operands");
}

/// The committed assembly is exactly what its generator prints.
#[test]
fn assembly_is_generated() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr");
    let fresh = avr_sim::harness::is_generated_by(&root.join("ctru_mul.S"), &root.join("gen_ctru_mul.py"));
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_ctru_mul.py > asm-avr/ctru_mul.S");
}
