//! (A unit test, not in `tests/`: the field, the table and the backend
//! are the crate's internals, not its API.)
//!
//! The AVR assembly field multiplication, squaring, addition and subtraction
//! (`asm-avr/fe25519_mul.S`) against the portable field, in simavr:
//! random and extreme operands, the ABI, and cycle counts independent of the
//! data. Needs avr-gcc and libsimavr
//! (`cargo xtask setup` installs them).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::vec::Vec;
use std::{format, println, vec};

use crate::edwards::{select_niels_portable, BASE_TABLE, NIELS_LEN, ROWS, ROW_LEN};
use crate::field::{add_portable, invert_portable, mul_portable, mul_small_portable, sub_portable, Fe};
use crate::{ladder_step_portable, Workspace};
use avr_sim::{windows, Sim};

/// Random inputs of the inversion test (each about 0.4 M cycles in simavr).
const INVERSIONS: usize = 300;

/// Ladder steps run against the portable step (each about 55 k cycles).
const LADDER_STEPS: usize = 400;

/// The harness around one of the two generated assemblies.
fn build_harness(assembly: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("OUT_DIR")).join(format!("fe25519_harness_{assembly}.elf"));
    avr_sim::harness::build_elf(
        "atmega1284p",
        &out,
        &[
            root.join("tests/avr/harness.c"),
            root.join("tests/avr/base_table.S"),
            root.join("../../asm-avr/ed25519_select.S"),
            root.join("../../asm-avr/test/abi_check.S"),
            root.join("../../asm-avr").join(assembly),
        ],
    )
    .unwrap_or_else(|e| panic!("the fe25519 harness: {e}"));
    out
}

#[test]
fn assembly_field_operations_match_portable_and_are_constant_time() {
    check_assembly("fe25519_mul.S");
}

#[test]
fn compact_assembly_matches_portable_and_is_constant_time() {
    check_assembly("fe25519_compact.S");
}

#[test]
fn tiny_assembly_matches_portable_and_is_constant_time() {
    check_assembly("fe25519_tiny.S");
}

fn check_assembly(assembly: &str) {
    let elf = build_harness(assembly);
    let mut sim = Sim::load(&elf, "atmega1284p").expect("simavr loads the harness");
    let mut random = avr_sim::harness::random(0x0123_4567_89ab_cdef);
    let mut next = || (random() >> 24) as u8;
    // Extremes: 0, 1, all ones (the largest column sums and both folds), p.
    let mut p = [0xFFu8; 32];
    p[0] = 0xED;
    p[31] = 0x7F;
    let one: [u8; 32] = core::array::from_fn(|i| (i == 0) as u8);
    let mut cases: Vec<([u8; 32], [u8; 32])> = vec![
        ([0; 32], [0; 32]),
        ([0xFF; 32], [0xFF; 32]),
        ([0xFF; 32], one),
        (p, p),
        (p, [0xFF; 32]),
        // Subtraction borrowing twice, and once.
        ([0; 32], [0xFF; 32]),
        ([0; 32], one),
    ];
    // Karatsuba's halves: equal halves (a zero middle difference), and the
    // middle product with either sign at its largest.
    let halves = |low: u8, high: u8| -> [u8; 32] { core::array::from_fn(|i| if i < 16 { low } else { high }) };
    let equal_halves: [u8; 32] = core::array::from_fn(|i| (i % 16) as u8 * 17);
    cases.extend([
        (equal_halves, [0xFF; 32]),
        ([0xFF; 32], equal_halves),
        // A zero middle product under a negative sign mask.
        (equal_halves, halves(0, 0xFF)),
        (halves(0, 0xFF), equal_halves),
        // Negative middle sign, both orientations; positive, both.
        (halves(0, 0xFF), halves(0xFF, 0)),
        (halves(0xFF, 0), halves(0, 0xFF)),
        (halves(0, 0xFF), halves(0, 0xFF)),
        (halves(0xFF, 0), halves(0xFF, 0)),
    ]);
    for _ in 0..2000 {
        let a: [u8; 32] = core::array::from_fn(|_| next());
        let b: [u8; 32] = core::array::from_fn(|_| next());
        cases.push((a, b));
    }
    let names = [
        "",
        "fe25519_mul_avr",
        "fe25519_sqr_avr",
        "fe25519_add_avr",
        "fe25519_sub_avr",
        "fe25519_mul_small_avr",
        "ed25519_select_avr",
        "fe25519_invert_avr",
        "fe25519_ladder_step",
        "fe25519_ladder_step (small x1)",
    ];
    // The small constants: the ladder's two, the extremes of [0, 2^24).
    for c in [121_665u32, 9, 0, 1, (1 << 24) - 1] {
        let mut b = [0u8; 32];
        b[..3].copy_from_slice(&c.to_le_bytes()[..3]);
        cases.push(([0xFF; 32], b));
    }
    for op in 1u8..=5 {
        let name = names[op as usize];
        for (n, (a, b)) in cases.iter().enumerate() {
            let mut request = vec![op];
            request.extend_from_slice(a);
            request.extend_from_slice(b);
            sim.send(&request);
            let reply = sim.run_until_output(65, 5_000_000).expect("harness answers");
            let mut expected = [0u8; 32];
            match op {
                1 => mul_portable(&mut expected, a, b),
                2 => mul_portable(&mut expected, a, a),
                3 => add_portable(&mut expected, a, b),
                5 => mul_small_portable(&mut expected, a, u32::from_le_bytes([b[0], b[1], b[2], 0])),
                _ => sub_portable(&mut expected, a, b),
            }
            assert_eq!(reply[..32], expected, "{name}, case {n}");
            assert_eq!(reply[32..64], expected, "{name}, case {n}, ABI-checked call");
            assert_eq!(reply[64], 0, "{name}: callee-saved registers or r1 not preserved");
        }
    }
    // The fixed-base table's selection: every row, every digit −8..=8 (0
    // and the out-of-range ±9, 127, −128 give the neutral element).
    let mut selections = 0;
    for row in 0..ROWS as u8 {
        for digit in (-9..=9i8).chain([127, -128]) {
            let mut request = vec![6, row, digit as u8];
            request.resize(65, 0);
            sim.send(&request);
            let reply = sim
                .run_until_output(2 * NIELS_LEN + 1, 5_000_000)
                .expect("harness answers");
            let entries: &[u8; ROW_LEN] = BASE_TABLE[row as usize * ROW_LEN..][..ROW_LEN].try_into().unwrap();
            let mut expected = [[0u8; 32]; 3];
            select_niels_portable(&mut expected, entries, digit);
            let expected = expected.as_flattened();
            assert_eq!(
                &reply[..NIELS_LEN],
                expected,
                "ed25519_select_avr, row {row}, digit {digit}"
            );
            assert_eq!(
                &reply[NIELS_LEN..2 * NIELS_LEN],
                expected,
                "ed25519_select_avr, ABI-checked call"
            );
            assert_eq!(
                reply[2 * NIELS_LEN],
                0,
                "ed25519_select_avr: callee-saved registers or r1 not preserved"
            );
            selections += 1;
        }
    }
    // Inversion: edges (0 and the other multiples of p, 1, p ± 1, the top
    // bit, all ones) and random values, compared as canonical residues.
    let mut inversions: Vec<[u8; 32]> = vec![[0; 32], one, p, [0xFF; 32]];
    let two_p: [u8; 32] = core::array::from_fn(|i| if i == 0 { 0xDA } else { 0xFF });
    let mut p_plus_one = p;
    p_plus_one[0] += 1;
    let mut p_minus_one = p;
    p_minus_one[0] -= 1;
    let top: [u8; 32] = core::array::from_fn(|i| if i == 31 { 0x80 } else { 0 });
    let nineteen: [u8; 32] = core::array::from_fn(|i| if i == 0 { 19 } else { 0 });
    inversions.extend([two_p, p_plus_one, p_minus_one, top, nineteen, equal_halves]);
    for _ in 0..INVERSIONS {
        inversions.push(core::array::from_fn(|_| next()));
    }
    for (n, a) in inversions.iter().enumerate() {
        let mut request = vec![7];
        request.extend_from_slice(a);
        request.resize(65, 0);
        sim.send(&request);
        let reply = sim.run_until_output(65, 20_000_000).expect("harness answers");
        let mut expected = [0u8; 32];
        invert_portable(&mut expected, a);
        let expected = Fe(expected).to_bytes();
        let first: [u8; 32] = reply[..32].try_into().unwrap();
        let second: [u8; 32] = reply[32..64].try_into().unwrap();
        assert_eq!(Fe(first).to_bytes(), expected, "fe25519_invert_avr, case {n}");
        assert_eq!(second, first, "fe25519_invert_avr, case {n}, ABI-checked call");
        assert_eq!(
            reply[64], 0,
            "fe25519_invert_avr: callee-saved registers or r1 not preserved"
        );
    }
    // Ladder steps: random and extreme states, x1 random (op 8) or the base
    // point's 9 (op 9, small), both swaps, against the portable step.
    let mut steps = [0usize; 2];
    for n in 0..LADDER_STEPS {
        let small = n % 4 == 3;
        let x1 = if small {
            Fe::from_u32(9)
        } else {
            let mut x: [u8; 32] = core::array::from_fn(|_| next());
            x[31] &= 0x7F;
            Fe(x)
        };
        let mut ws = Workspace::new(&x1);
        ws.state = match n {
            0 => [Fe([0xFF; 32]); 4],
            1 => [Fe::ZERO, Fe::ZERO, Fe([0xFF; 32]), Fe::ONE],
            2 => [Fe(p), Fe(p), Fe::ZERO, Fe([0xFF; 32])],
            _ => core::array::from_fn(|_| Fe(core::array::from_fn(|_| next()))),
        };
        let swap = (n / 2 % 2) as u8;
        let mut request = vec![if small { 9 } else { 8 }];
        for s in &ws.state {
            request.extend_from_slice(&s.0);
        }
        request.extend_from_slice(&x1.0);
        request.extend_from_slice(ws.x1_difference());
        request.push(swap);
        sim.send(&request);
        let reply = sim.run_until_output(257, 20_000_000).expect("harness answers");
        ladder_step_portable(&mut ws, swap, small);
        let expected: Vec<u8> = ws.state.iter().flat_map(|s| s.0).collect();
        assert_eq!(reply[..128], expected[..], "fe25519_ladder_step, case {n}");
        assert_eq!(
            reply[128..256],
            expected[..],
            "fe25519_ladder_step, case {n}, ABI-checked call"
        );
        assert_eq!(
            reply[256], 0,
            "fe25519_ladder_step: callee-saved registers or r1 not preserved"
        );
        steps[usize::from(small)] += 1;
    }
    sim.send(&[0]);
    sim.run_to_exit(1_000_000).expect("harness stops");
    let mut by_op: BTreeMap<u8, Vec<(u64, u16)>> = BTreeMap::new();
    for w in windows(&sim.take_markers()).expect("paired markers") {
        by_op.entry(w.id).or_default().push((w.cycles, w.stack_bytes));
    }
    assert_eq!(by_op.len(), 9);
    for (op, runs) in by_op {
        let min = runs.iter().map(|r| r.0).min().unwrap();
        let max = runs.iter().map(|r| r.0).max().unwrap();
        let stack = runs.iter().map(|r| r.1).max().unwrap();
        let name = names[op as usize];
        println!(
            "{assembly} {name}: {min} cycles (max {max}), {stack} bytes of stack, {} runs",
            runs.len()
        );
        let expected_runs = match op {
            6 => selections,
            7 => inversions.len(),
            8 => steps[0],
            9 => steps[1],
            _ => cases.len(),
        };
        assert_eq!(runs.len(), expected_runs);
        assert_eq!(min, max, "{name}: the cycle count depends on the operands");
    }
}

/// The committed assembly is exactly what its generator prints.
#[test]
fn assembly_is_generated() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr");
    let fresh = avr_sim::harness::is_generated_by(&root.join("fe25519_mul.S"), &root.join("gen_fe25519.py"));
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_fe25519.py");
    let fresh = avr_sim::harness::is_generated_by_with(
        &root.join("fe25519_compact.S"),
        &root.join("gen_fe25519.py"),
        &["--compact"],
    );
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_fe25519.py --compact");
    let fresh =
        avr_sim::harness::is_generated_by_with(&root.join("fe25519_tiny.S"), &root.join("gen_fe25519.py"), &["--tiny"]);
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_fe25519.py --tiny");
}
