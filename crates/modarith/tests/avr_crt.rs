//! The AVR assembly CRT block lift (`crt_lift_block_q769_q3329` in
//! `asm-avr/ntt_forward.S`) against `modarith::crt::lift_block_769_3329_portable`,
//! in simavr: random blocks and the extremes of the input range (packed
//! values 0 and 768, w at ±1664), the ABI, and a data-independent cycle count.
//! Needs avr-gcc and libsimavr (`cargo xtask setup` installs them).

use std::path::PathBuf;

use avr_sim::Sim;
use modarith::crt::{lift_block_769_3329_portable, LIFT_769_3329_INV_R, PACKED_BLOCK_BYTES};

mod common;
use common::Rng;

/// Packs eight values in [0, 768] as a little-endian 10-bit stream.
fn pack(values: &[u16; 8]) -> [u8; PACKED_BLOCK_BYTES] {
    let mut out = [0u8; PACKED_BLOCK_BYTES];
    for (i, &v) in values.iter().enumerate() {
        for bit in 0..10 {
            if v >> bit & 1 == 1 {
                let at = 10 * i + bit;
                out[at / 8] |= 1 << (at % 8);
            }
        }
    }
    out
}

#[test]
fn assembly_crt_block_lift_matches_portable_and_is_constant_time() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let elf = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("crt_harness.elf");
    avr_sim::harness::build_elf(
        "atmega1284p",
        &elf,
        &[
            root.join("tests/avr/crt_harness.c"),
            root.join("../../asm-avr/test/abi_check.S"),
            root.join("../../asm-avr/ntt_forward.S"),
        ],
    )
    .unwrap_or_else(|e| panic!("the CRT harness: {e}"));
    let mut sim = Sim::load(&elf, "atmega1284p").expect("simavr loads the harness");
    let mut rng = Rng::new(0x0C27_1F7E);
    let mut cases: Vec<([u16; 8], [i16; 8])> = vec![
        ([0; 8], [-1664; 8]),
        ([768; 8], [1664; 8]),
        ([0; 8], [1664; 8]),
        ([768; 8], [-1664; 8]),
        ([384; 8], [0; 8]),
    ];
    for _ in 0..2000 {
        let v: [u16; 8] = core::array::from_fn(|_| (rng.next_u64() % 769) as u16);
        let w: [i16; 8] = core::array::from_fn(|_| (rng.next_u64() % 3329) as i16 - 1664);
        cases.push((v, w));
    }
    for (n, (v, w)) in cases.iter().enumerate() {
        let packed = pack(v);
        let mut request = vec![1u8];
        request.extend_from_slice(&packed);
        for x in w.iter().chain([LIFT_769_3329_INV_R].iter()) {
            request.extend_from_slice(&x.to_le_bytes());
        }
        sim.send(&request);
        let reply = sim.run_until_output(17, 2_000_000).expect("harness answers");
        let mut expected = [0u8; 8];
        lift_block_769_3329_portable(&packed, w, &mut expected);
        assert_eq!(reply[..8], expected, "case {n}");
        assert_eq!(reply[8..16], expected, "case {n}, ABI-checked call");
        assert_eq!(reply[16], 0, "callee-saved registers or r1 not preserved");
    }
    let t = avr_sim::harness::stop_and_time(&mut sim).expect("harness stops");
    assert_eq!(t.calls, cases.len());
    println!(
        "crt_lift_block_q769_q3329: {} cycles (max {}), {} blocks",
        t.min, t.max, t.calls
    );
    assert_eq!(t.min, t.max, "the cycle count depends on the data");
}
