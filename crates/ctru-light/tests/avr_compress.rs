//! The AVR assembly ciphertext compression (`asm-avr/ctru_compress.S`)
//! against the portable `compress` (itself checked against the
//! definition's formula for every input by a unit test in `src/pke.rs`),
//! in simavr: exhaustively, every σ mod q ∈ [0, 769) (the centred
//! σ ∈ [−384, 384] the routine takes) with both bits b ∈ {0, 1}, each in
//! one position of its block; the extremes in every position, random
//! blocks and codewords; the ABI, and a data-independent cycle count.
//! Needs avr-gcc and libsimavr (`cargo xtask setup` installs them).

use std::path::PathBuf;

use avr_sim::Sim;
use ctru_light::compress_block_portable;

#[test]
fn assembly_compression_matches_portable_and_is_constant_time() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let elf = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compress_harness.elf");
    avr_sim::harness::build_elf(
        "atmega1284p",
        &elf,
        &[
            root.join("tests/avr/compress_harness.c"),
            root.join("../../asm-avr/test/abi_check.S"),
            root.join("../../asm-avr/ctru_compress.S"),
        ],
    )
    .unwrap_or_else(|e| panic!("the compression harness: {e}"));
    let mut sim = Sim::load(&elf, "atmega1284p").expect("simavr loads the harness");
    let mut next = avr_sim::harness::random(0xC0_4D_5E_u64);
    let mut cases: Vec<([i16; 8], u8)> = Vec::new();
    // Every centred value, with both bits: blocks of eight consecutive
    // values (each value in one position), the codeword's bits alternating
    // or not.
    for start in (-384i16..=384).step_by(8) {
        let block = core::array::from_fn(|j| (start + j as i16).min(384));
        for codeword in [0x00, 0xFF, 0x55, 0xAA] {
            cases.push((block, codeword));
        }
    }
    for codeword in [0x00, 0xFF, 0x0F, 0xF0] {
        cases.push(([384; 8], codeword));
        cases.push(([-384; 8], codeword));
        cases.push(([384, -384, 384, -384, 0, 1, -1, 383], codeword));
    }
    for _ in 0..3000 {
        let r = next();
        let block = core::array::from_fn(|j| ((r >> (7 * j)) % 769) as i16 - 384);
        cases.push((block, (r >> 56) as u8));
    }
    // The cases cover every (σ mod q, b) pair.
    let mut covered = std::collections::BTreeSet::new();
    for (sigma, codeword) in &cases {
        for (j, &x) in sigma.iter().enumerate() {
            covered.insert((x.rem_euclid(769), (codeword >> j) & 1));
        }
    }
    assert_eq!(covered.len(), 2 * 769, "every σ ∈ [0, 769) with both bits");
    for (n, (sigma, codeword)) in cases.iter().enumerate() {
        let mut request = vec![1u8];
        request.extend(sigma.iter().flat_map(|x| x.to_le_bytes()));
        request.push(*codeword);
        sim.send(&request);
        let reply = sim.run_until_output(17, 1_000_000).expect("harness answers");
        let expected = compress_block_portable(sigma, *codeword);
        assert_eq!(reply[..8], expected, "case {n}: {sigma:?}, codeword {codeword:#04x}");
        assert_eq!(reply[8..16], expected, "case {n}, ABI-checked call");
        assert_eq!(reply[16], 0, "callee-saved registers or r1 not preserved");
    }
    let t = avr_sim::harness::stop_and_time(&mut sim).expect("harness stops");
    assert_eq!(t.calls, cases.len());
    println!(
        "ctru_compress_block_avr: {} cycles (max {}), {} blocks",
        t.min, t.max, t.calls
    );
    assert_eq!(t.min, t.max, "the cycle count depends on the block");
}

/// The committed assembly is exactly what its generator prints.
#[test]
fn assembly_is_generated() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr");
    let fresh = avr_sim::harness::is_generated_by(&root.join("ctru_compress.S"), &root.join("gen_ctru_compress.py"));
    assert_eq!(
        fresh,
        Ok(true),
        "run asm-avr/gen_ctru_compress.py > asm-avr/ctru_compress.S"
    );
}
