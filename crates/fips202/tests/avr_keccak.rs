//! The AVR assembly Keccak-f[1600], both siblings (`asm-avr/keccak_f1600.S`,
//! unrolled, and `keccak_f1600_compact.S`, looped), against the portable
//! permutation, in simavr: random and extreme states, the ABI (callee-saved
//! registers, r1), and a cycle count independent of the data.
//! Needs avr-gcc and libsimavr (`cargo xtask setup` installs them).

use std::path::PathBuf;

use avr_sim::Sim;

fn build_harness(assembly: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("keccak_harness_{assembly}.elf"));
    avr_sim::harness::build_elf(
        "atmega1284p",
        &out,
        &[
            root.join("tests/avr/harness.c"),
            root.join("../../asm-avr/test/abi_check.S"),
            root.join("../../asm-avr").join(assembly),
        ],
    )
    .unwrap_or_else(|e| panic!("the Keccak harness: {e}"));
    out
}

#[test]
fn assembly_permutation_matches_portable_and_is_constant_time() {
    check("keccak_f1600.S");
}

#[test]
fn compact_assembly_permutation_matches_portable_and_is_constant_time() {
    check("keccak_f1600_compact.S");
}

fn check(assembly: &str) {
    let elf = build_harness(assembly);
    let mut sim = Sim::load(&elf, "atmega1284p").expect("simavr loads the harness");
    let mut next = avr_sim::harness::random(0x1234_5678_9abc_def0);
    let mut states: Vec<[u64; 25]> = vec![[0; 25], [u64::MAX; 25]];
    for _ in 0..1000 {
        states.push(core::array::from_fn(|_| next()));
    }
    for (n, state) in states.iter().enumerate() {
        let mut request = vec![1u8];
        request.extend(state.iter().flat_map(|w| w.to_le_bytes()));
        sim.send(&request);
        let reply = sim.run_until_output(201, 20_000_000).expect("harness answers");
        // The harness permutes twice: once timed, once inside the ABI check.
        let mut expected = *state;
        keccak::Keccak::new().with_f1600(|f1600| {
            f1600(&mut expected);
            f1600(&mut expected);
        });
        let got: Vec<u64> = reply[..200]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, expected, "state {n}");
        assert_eq!(reply[200], 0, "state {n}: callee-saved registers or r1 not preserved");
    }
    let t = avr_sim::harness::stop_and_time(&mut sim).expect("harness stops");
    assert_eq!(t.calls, states.len());
    println!(
        "{assembly} keccak_f1600_avr: {} cycles (max {}), {} bytes of stack, {} states",
        t.min, t.max, t.stack, t.calls
    );
    assert_eq!(t.min, t.max, "the cycle count depends on the state");
}

/// The committed assembly is exactly what its generator prints.
#[test]
fn assembly_is_generated() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr");
    let fresh = avr_sim::harness::is_generated_by(&root.join("keccak_f1600.S"), &root.join("gen_keccak.py"));
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_keccak.py");
    let fresh = avr_sim::harness::is_generated_by_with(
        &root.join("keccak_f1600_compact.S"),
        &root.join("gen_keccak.py"),
        &["--compact"],
    );
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_keccak.py --compact");
}
