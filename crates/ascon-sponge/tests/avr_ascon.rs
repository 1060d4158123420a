//! The AVR assembly Ascon permutation (`asm-avr/ascon_p.S`) against the
//! portable one, in simavr: random and extreme states for 12, 8 and 6
//! rounds, the ABI, and a cycle count independent of the data. Needs avr-gcc
//! and libsimavr (`cargo xtask setup` installs them).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ascon_sponge::permute_portable;
use avr_sim::{windows, Sim};

fn build_harness() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ascon_harness.elf");
    avr_sim::harness::build_elf(
        "atmega1284p",
        &out,
        &[
            root.join("tests/avr/harness.c"),
            root.join("../../asm-avr/test/abi_check.S"),
            root.join("../../asm-avr/ascon_p.S"),
        ],
    )
    .unwrap_or_else(|e| panic!("the Ascon harness: {e}"));
    out
}

#[test]
fn assembly_permutation_matches_portable_and_is_constant_time() {
    let elf = build_harness();
    let mut sim = Sim::load(&elf, "atmega1284p").expect("simavr loads the harness");
    let mut next = avr_sim::harness::random(0x0123_4567_89ab_cdef);
    let mut states: Vec<[u64; 5]> = vec![[0; 5], [u64::MAX; 5]];
    for _ in 0..1000 {
        states.push(core::array::from_fn(|_| next()));
    }
    for rounds in [12u8, 8, 6] {
        for (n, state) in states.iter().enumerate() {
            let mut request = vec![rounds];
            request.extend(state.iter().flat_map(|w| w.to_le_bytes()));
            sim.send(&request);
            let reply = sim.run_until_output(41, 5_000_000).expect("harness answers");
            // Timed once, then once more inside the ABI check.
            let mut expected = *state;
            permute_portable(&mut expected, rounds);
            permute_portable(&mut expected, rounds);
            let got: Vec<u64> = reply[..40]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(got, expected, "{rounds} rounds, state {n}");
            assert_eq!(reply[40], 0, "callee-saved registers or r1 not preserved");
        }
    }
    sim.send(&[0]);
    sim.run_to_exit(1_000_000).expect("harness stops");
    let mut by_rounds: BTreeMap<u8, Vec<(u64, u16)>> = BTreeMap::new();
    for w in windows(&sim.take_markers()).expect("paired markers") {
        by_rounds.entry(w.id).or_default().push((w.cycles, w.stack_bytes));
    }
    for (rounds, runs) in by_rounds {
        let (min, max) = (
            runs.iter().map(|r| r.0).min().unwrap(),
            runs.iter().map(|r| r.0).max().unwrap(),
        );
        let stack = runs.iter().map(|r| r.1).max().unwrap();
        println!("ascon_permute_avr, {rounds} rounds: {min} cycles (max {max}), {stack} bytes of stack");
        assert_eq!(min, max, "the cycle count depends on the state");
    }
}

/// The committed assembly is exactly what its generator prints.
#[test]
fn assembly_is_generated() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr");
    let fresh = avr_sim::harness::is_generated_by(&root.join("ascon_p.S"), &root.join("gen_ascon.py"));
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_ascon.py");
}
