//! The AVR assembly E8 decoder (`asm-avr/e8_decode.S`) against the portable
//! decoder, in simavr: blocks of the values where the decoder's choices
//! turn (0, 64, 128, 192, 255 and their neighbours), blocks of two values
//! (ties everywhere), noisy codewords, random blocks; the ABI, and a
//! data-independent cycle count. Needs avr-gcc and libsimavr
//! (`cargo xtask setup` installs them).

use std::path::PathBuf;

use avr_sim::Sim;
use ctru_light::e8_decode_block_portable;

#[test]
fn assembly_e8_decoder_matches_portable_and_is_constant_time() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let elf = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e8_harness.elf");
    avr_sim::harness::build_elf(
        "atmega1284p",
        &elf,
        &[
            root.join("tests/avr/e8_harness.c"),
            root.join("../../asm-avr/test/abi_check.S"),
            root.join("../../asm-avr/e8_decode.S"),
        ],
    )
    .unwrap_or_else(|e| panic!("the E8 harness: {e}"));
    let mut sim = Sim::load(&elf, "atmega1284p").expect("simavr loads the harness");
    let mut next = avr_sim::harness::random(0x00E8_A5B0_u64);
    let edges = [0u8, 1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 254, 255];
    let mut blocks: Vec<[u8; 8]> = Vec::new();
    for a in edges {
        for b in edges {
            blocks.push([a, b, a, b, b, a, b, a]);
            blocks.push([a, a, a, a, b, b, b, b]);
        }
    }
    for n in 0..6000 {
        let r = next();
        blocks.push(match n % 3 {
            0 => core::array::from_fn(|j| edges[((r >> (5 * j)) % edges.len() as u64) as usize]),
            // A codeword (bits × 128) plus noise of up to ±48.
            1 => core::array::from_fn(|j| {
                let bit = ((r >> j) & 1) as u8 * 128;
                bit.wrapping_add(((r >> (8 + 8 * (j % 7))) as u8 % 97).wrapping_sub(48))
            }),
            _ => core::array::from_fn(|j| (r >> (8 * j)) as u8),
        });
    }
    for (n, v) in blocks.iter().enumerate() {
        let mut request = vec![1u8];
        request.extend_from_slice(v);
        sim.send(&request);
        let reply = sim.run_until_output(3, 1_000_000).expect("harness answers");
        let expected = e8_decode_block_portable(v);
        assert_eq!(reply[0], expected, "block {n}: {v:?}");
        assert_eq!(reply[1], expected, "block {n}, ABI-checked call");
        assert_eq!(reply[2], 0, "callee-saved registers or r1 not preserved");
    }
    let t = avr_sim::harness::stop_and_time(&mut sim).expect("harness stops");
    assert_eq!(t.calls, blocks.len());
    println!(
        "ctru_e8_decode_block_avr: {} cycles (max {}), {} blocks",
        t.min, t.max, t.calls
    );
    assert_eq!(t.min, t.max, "the cycle count depends on the block");
}

/// The committed assembly is exactly what its generator prints.
#[test]
fn assembly_is_generated() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr");
    let fresh = avr_sim::harness::is_generated_by(&root.join("e8_decode.S"), &root.join("gen_e8.py"));
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_e8.py > asm-avr/e8_decode.S");
}
