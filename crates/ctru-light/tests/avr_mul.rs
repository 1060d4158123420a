//! The AVR routines of the decryption product modulo 256
//! (`asm-avr/ctru_mul.S`) against their portable code, in simavr: the
//! schoolbook base case against `leaf_product_portable` and each Karatsuba
//! recombination against `combine_portable`, on random operands and the
//! extremes (all 0x00, 0xFF, 0x80, one-hot); the ABI, no write outside the
//! output (guard bytes), and a data-independent cycle count per routine. Needs avr-gcc and libsimavr (`cargo xtask
//! setup` installs them).

use std::path::PathBuf;

use avr_sim::Sim;
use ctru_light::{combine_portable, leaf_product_portable};

const LEAF: usize = 32;

/// The harness, built once per test (each test times one routine).
fn harness(name: &str) -> Sim {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let elf = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("mul_harness_{name}.elf"));
    avr_sim::harness::build_elf(
        "atmega1284p",
        &elf,
        &[
            root.join("tests/avr/mul_harness.c"),
            root.join("../../asm-avr/test/abi_check.S"),
            root.join("../../asm-avr/ctru_mul.S"),
        ],
    )
    .unwrap_or_else(|e| panic!("the product harness: {e}"));
    Sim::load(&elf, "atmega1284p").expect("simavr loads the harness")
}

#[test]
fn assembly_base_case_matches_portable_and_is_constant_time() {
    let mut sim = harness("leaf");
    let mut random = avr_sim::harness::random(0x5EED_CAFE);
    let mut next = || random() as u8;
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
        let reply = sim.run_until_output(130, 1_000_000).expect("harness answers");
        let mut expected = [0u8; 2 * LEAF];
        leaf_product_portable(a, b, &mut expected);
        assert_eq!(reply[..64], expected, "case {n}: a = {a:?}, b = {b:?}");
        assert_eq!(reply[64..128], expected, "case {n}, ABI-checked call");
        assert_eq!(reply[128], 0, "callee-saved registers or r1 not preserved");
        assert_eq!(reply[129], 0, "a write outside r");
    }
    let t = avr_sim::harness::stop_and_time(&mut sim).expect("harness stops");
    assert_eq!(t.calls, cases.len());
    println!("ctru_mul32_avr: {} cycles (max {}), {} products", t.min, t.max, t.calls);
    assert_eq!(t.min, t.max, "the cycle count depends on the operands");
}

fn combine_matches_portable(h: usize) {
    let mut sim = harness(&format!("combine{h}"));
    let mut random = avr_sim::harness::random(0xC0DE_0000 + h as u64);
    let mut next = || random() as u8;
    let mut cases: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (x, y) in [(0x00, 0x00), (0xFF, 0xFF), (0x80, 0x7F), (0xFF, 0x00), (0x00, 0xFF)] {
        cases.push((vec![x; 4 * h], vec![y; 2 * h]));
    }
    // One-hot in every position of r and of m: each lands where it must.
    for i in 0..4 * h {
        let mut r = vec![0u8; 4 * h];
        r[i] = 1;
        cases.push((r, (0..2 * h).map(|j| j as u8).collect()));
    }
    for i in 0..2 * h {
        let mut m = vec![0u8; 2 * h];
        m[i] = 0x81;
        cases.push(((0..4 * h).map(|j| (3 * j) as u8).collect(), m));
    }
    for _ in 0..300 {
        cases.push((
            (0..4 * h).map(|_| next()).collect(),
            (0..2 * h).map(|_| next()).collect(),
        ));
    }
    for (n, (r, m)) in cases.iter().enumerate() {
        let mut request = vec![2u8, h as u8];
        request.extend_from_slice(r);
        request.extend_from_slice(m);
        sim.send(&request);
        let reply = sim.run_until_output(8 * h + 2, 10_000_000).expect("harness answers");
        let mut expected = r.clone();
        combine_portable(&mut expected, m);
        assert_eq!(reply[..4 * h], expected[..], "h = {h}, case {n}");
        assert_eq!(reply[4 * h..8 * h], expected[..], "h = {h}, case {n}, ABI-checked call");
        assert_eq!(reply[8 * h], 0, "callee-saved registers or r1 not preserved");
        assert_eq!(reply[8 * h + 1], 0, "a write outside r");
    }
    let t = avr_sim::harness::stop_and_time(&mut sim).expect("harness stops");
    assert_eq!(t.calls, cases.len());
    println!(
        "ctru_kara_combine{h}_avr: {} cycles (max {}), {} calls",
        t.min, t.max, t.calls
    );
    assert_eq!(t.min, t.max, "the cycle count depends on the data");
}

#[test]
fn assembly_recombination_h32_matches_portable_and_is_constant_time() {
    combine_matches_portable(32);
}

#[test]
fn assembly_recombination_h64_matches_portable_and_is_constant_time() {
    combine_matches_portable(64);
}

#[test]
fn assembly_recombination_h128_matches_portable_and_is_constant_time() {
    combine_matches_portable(128);
}

/// The committed assembly is exactly what its generator prints.
#[test]
fn assembly_is_generated() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr");
    let fresh = avr_sim::harness::is_generated_by(&root.join("ctru_mul.S"), &root.join("gen_ctru_mul.py"));
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_ctru_mul.py > asm-avr/ctru_mul.S");
}
