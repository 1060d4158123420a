//! The AVR assembly NTTs (`asm-avr/ntt_forward.S`) against the portable
//! `Ntt` of the same reduction, in simavr: every variant (the NTT-friendly
//! routines against `NttFriendlyMontgomery`, the plain `_mont` ones against
//! `Montgomery`, the `_kred2x` ones of q = 769 against `KRed2x`), random inputs and the extremes of the input
//! range, bit-for-bit equal outputs, and a data-independent cycle count;
//! both table placements (`ntt_forward.S` reads SRAM, `ntt_forward_flash.S`
//! flash).
//! Needs avr-gcc and libsimavr (`cargo xtask setup` installs them).

use std::path::PathBuf;

use avr_sim::{windows, Sim};
use modarith::ntt::SMALL_INPUT;
use modarith::{KRed2x, Modulus, Montgomery, Ntt, NttFriendlyMontgomery, Reduction, Q3329, Q7681, Q769};

mod common;
use common::Rng;

/// Random inputs per routine (besides the extremes), times
/// [`repeat`]: every transform sees 250, the base multiplications run 84
/// cases three ways each (out, accumulate, in place), the base inversion 50.
/// About 17,000 simulated calls per table placement. Four times as many (the
/// count every CI ran until issue #33) took 7 minutes of one core; that run
/// is one `AVR_NTT_REPEAT=4` away.
const TRANSFORM_CASES: usize = 250;
const BASE_MUL_CASES: usize = 84;
const BASE_INV_CASES: usize = 50;

/// `AVR_NTT_REPEAT=N` multiplies the random cases by N (a longer run, e.g.
/// after changing the generator); 1 when unset.
fn repeat() -> usize {
    std::env::var("AVR_NTT_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n >= 1)
        .unwrap_or(1)
}

/// Where the routines under test read their tables.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Placement {
    /// `ntt_forward.S`: tables in SRAM (`ld`), as the harness received them.
    Sram,
    /// `ntt_forward_flash.S`: tables in flash (`lpm`); the harness passes the
    /// flash copy of every table it receives, from a C file built from
    /// [`CASES`].
    Flash,
}

/// The harness linked with the routines of `placement`.
fn build_harness(placement: Placement) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (asm, tables) = match placement {
        Placement::Sram => ("ntt_forward.S", vec![]),
        Placement::Flash => ("ntt_forward_flash.S", CASES.iter().map(|c| (c.tables)()).collect()),
    };
    let table_file = tmp.join(format!("ntt_tables_{placement:?}.c"));
    std::fs::write(&table_file, flash_tables_c(&tables)).expect("write the table file");
    let out = tmp.join(format!("ntt_harness_{placement:?}.elf"));
    avr_sim::harness::build_elf(
        "atmega1284p",
        &out,
        &[
            root.join("tests/avr/harness.c"),
            root.join("../../asm-avr").join(asm),
            table_file,
        ],
    )
    .unwrap_or_else(|e| panic!("the NTT harness: {e}"));
    out
}

/// C source of the harness's flash tables: each request's 256 twiddles and
/// 2 factors (duplicates kept: the harness takes the first equal one).
fn flash_tables_c(tables: &[Vec<i16>]) -> String {
    let mut c = String::from("#include <avr/pgmspace.h>\n");
    c += &format!("const uint8_t flash_table_count = {};\n", tables.len());
    c += &format!(
        "const int16_t flash_tables[{}][258] PROGMEM = {{\n",
        tables.len().max(1)
    );
    for t in tables {
        assert_eq!(t.len(), 258);
        let values: Vec<String> = t.iter().map(|v| v.to_string()).collect();
        c += &format!("\t{{{}}},\n", values.join(","));
    }
    if tables.is_empty() {
        c += "\t{0},\n";
    }
    c + "};\n"
}

/// The tables a transform request sends: its twiddles (the inverse's for
/// ids 3-5 and 11) and the inverse's last-layer factors.
fn ring_tables<R: Reduction, const N: usize, const L: u32>(id: u8) -> Vec<i16> {
    let inverse = id & 0x0F == 11 || (3..6).contains(&(id & 0x0F));
    let zetas = if inverse {
        Ntt::<R, N, L>::ZETAS_INV
    } else {
        Ntt::<R, N, L>::ZETAS
    };
    let mut t = zetas.to_vec();
    t.extend(Ntt::<R, N, L>::INVERSE_LAST_LAYER);
    t
}

/// The tables a base multiplication or inversion request sends: the γ
/// table (the upper half of the twiddles) and 2^32 mod q.
fn gamma_tables<R: Reduction, const N: usize, const L: u32>(_id: u8) -> Vec<i16> {
    let half = 1usize << (L - 1);
    let mut t = vec![0i16; 258];
    t[..half].copy_from_slice(&Ntt::<R, N, L>::ZETAS[half..2 * half]);
    t[256] = Ntt::<R, N, L>::S2;
    t
}

/// Request bytes: routine id, then the tables; after a routine's first
/// request (`first` false) only the id with bit 0x40, and the harness uses
/// the tables it holds (sending 516 bytes a case was most of the test's
/// simulated time).
fn request(id: u8, tables: &[i16], first: bool) -> Vec<u8> {
    if !first {
        return vec![id | 0x40];
    }
    let mut r = vec![id];
    r.extend(tables.iter().flat_map(|z| z.to_le_bytes()));
    r
}

/// Runs base multiplication routine `id` (6-8, 12), plain, accumulating
/// and with out aliasing a or b, against `base_mul`, `base_mul_acc` and
/// `base_mul_assign`; returns the plain calls' cycle counts.
fn run_base_mul<R: Reduction, const N: usize, const L: u32>(sim: &mut Sim, id: u8, seed: u64) -> Vec<u64> {
    let q = R::Modulus::Q;
    let tables = gamma_tables::<R, N, L>(id);
    let mut rng = Rng::new(seed);
    let extreme = [(q - 1) as i16; N];
    let mut cases: Vec<([i16; N], [i16; N], [i16; N])> = vec![
        (extreme, extreme, extreme),
        (extreme, [1 - q as i16; N], [1 - q as i16; N]),
    ];
    cases.extend((0..BASE_MUL_CASES * repeat()).map(|_| (rng.poly::<N>(q), rng.poly::<N>(q), rng.poly::<N>(q))));
    // 0: out = a∘b, 1: out += a∘b, 2: a = a∘b (out aliases a), 4: b = a∘b.
    const MODES: [u8; 4] = [0, 1, 2, 4];
    for (n, (a, b, out)) in cases.iter().enumerate() {
        for acc in MODES {
            let mut request = request(id, &tables, n == 0 && acc == MODES[0]);
            for p in [a, b, out] {
                request.extend(p.iter().flat_map(|c| c.to_le_bytes()));
            }
            request.push(acc);
            sim.send(&request);
            let reply = sim.run_until_output(2 * N, 50_000_000).expect("harness answers");
            let got: Vec<i16> = reply
                .chunks_exact(2)
                .map(|c| i16::from_le_bytes([c[0], c[1]]))
                .collect();
            let mut expected = *out;
            match acc {
                0 | 4 => Ntt::<R, N, L>::base_mul(a, b, &mut expected),
                1 => Ntt::<R, N, L>::base_mul_acc(a, b, &mut expected),
                _ => {
                    expected = *a;
                    Ntt::<R, N, L>::base_mul_assign(&mut expected, b);
                }
            }
            assert_eq!(got, expected.to_vec(), "routine {id}, case {n}, acc {acc}");
        }
    }
    let w: Vec<u64> = windows(&sim.take_markers())
        .expect("paired markers")
        .iter()
        .map(|w| w.cycles)
        .collect();
    // `acc` and the aliasing are public and may choose the loop; within a
    // mode the count must not depend on the data.
    for (m, mode) in MODES.iter().enumerate() {
        let c: Vec<u64> = w.iter().skip(m).step_by(MODES.len()).copied().collect();
        let (min, max) = (c.iter().min().unwrap(), c.iter().max().unwrap());
        println!("  routine {id:#x} mode {mode}: {min} cycles (max {max})");
        assert_eq!(
            min, max,
            "routine {id:#x}, mode {mode}: the cycle count depends on the data"
        );
    }
    w.into_iter().step_by(MODES.len()).collect()
}

/// Runs the base inversion (routine 9, q = 769; `id` carries the variant
/// bit 0x10) against `base_inv`, with zero blocks planted so the
/// non-invertible count is exercised.
fn run_base_inv<R: Reduction, const N: usize, const L: u32>(sim: &mut Sim, id: u8, seed: u64) -> Vec<u64> {
    let tables = gamma_tables::<R, 512, 7>(id);
    let mut rng = Rng::new(seed);
    let mut cases: Vec<[i16; 512]> = vec![[768; 512], [-768; 512], [1; 512]];
    cases.extend((0..BASE_INV_CASES * repeat()).map(|_| rng.poly::<512>(769)));
    for (i, case) in cases.iter_mut().enumerate().skip(3).step_by(3) {
        let at = (8 * i) % 512; // a block start (multiple of 4)
        case[at..at + 4].fill(0); // a zero block: not invertible
    }
    for (n, a) in cases.iter().enumerate() {
        let mut request = request(id, &tables, n == 0);
        request.extend(a.iter().flat_map(|c| c.to_le_bytes()));
        sim.send(&request);
        let reply = sim.run_until_output(1025, 50_000_000).expect("harness answers");
        let got: Vec<i16> = reply[..1024]
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        let mut expected = *a;
        let invertible = Ntt::<R, 512, 7>::base_inv(&mut expected);
        assert_eq!(got, expected.to_vec(), "base_inv case {n}");
        assert_eq!(reply[1024] == 0, bool::from(invertible), "base_inv flag, case {n}");
    }
    windows(&sim.take_markers())
        .expect("paired markers")
        .iter()
        .map(|w| w.cycles)
        .collect()
}

/// How far the q = 7681 forward NTT leaves the ranges it can survive when
/// no layer but the last centres its outputs (the schedule the generator
/// emitted before it tracked the growth), with the routine's own twiddles:
/// a middle layer's coefficients must fit 16 bits (they feed the next
/// products), the last layer's must stay inside the final centring's
/// domain [−(q−1)/2 − 4q, 2^16 − (q−1)/2 − 4q). Positive: broken.
fn uncentred_excess(input: &[i16; 256]) -> i32 {
    let zetas = Ntt::<NttFriendlyMontgomery<Q7681>, 256, 8>::ZETAS;
    let (low, high) = (-(3840 + 4 * 7681), 65536 - (3840 + 4 * 7681));
    let mut a: [i32; 256] = core::array::from_fn(|i| input[i] as i32);
    let (mut k, mut len, mut excess) = (1, 128, i32::MIN);
    while len > 0 {
        for start in (0..256).step_by(2 * len) {
            let z = zetas[k] as i32;
            k += 1;
            for j in start..start + len {
                let t = modarith::reduce::montgomery::<Q7681>(a[j + len] * z) as i32;
                a[j + len] = a[j] - t;
                a[j] += t;
                for x in [a[j], a[j + len]] {
                    excess = excess.max(if len > 1 {
                        x.abs() - 32767
                    } else {
                        (x - high + 1).max(low - x)
                    });
                }
            }
        }
        len /= 2;
    }
    excess
}

/// An input (|a_i| < q) that breaks that schedule: a seeded hill climb on
/// [`uncentred_excess`].
fn q7681_growth_input() -> [i16; 256] {
    let mut rng = Rng::new(77);
    let mut best = rng.poly::<256>(7681);
    let mut score = uncentred_excess(&best);
    for _ in 0..50_000 {
        if score > 0 {
            break;
        }
        let mut c = best;
        for _ in 0..1 + rng.next_u64() % 4 {
            let i = (rng.next_u64() % 256) as usize;
            c[i] = match rng.next_u64() % 3 {
                0 => 7680,
                1 => -7680,
                _ => rng.coeff(7681),
            };
        }
        let s = uncentred_excess(&c);
        if s >= score {
            best = c;
            score = s;
        }
    }
    assert!(score > 0, "the search got within {} of breaking it only", -score);
    best
}

/// Runs routine `id` (0-2 forward, 3-5 inverse) on random and extreme inputs.
fn run_ring<R: Reduction, const N: usize, const L: u32>(sim: &mut Sim, id: u8, seed: u64) -> Vec<u64> {
    let q = R::Modulus::Q;
    let inverse = id & 0x0F == 11 || (3..6).contains(&(id & 0x0F));
    let tables = ring_tables::<R, N, L>(id);
    let mut rng = Rng::new(seed);
    // Ids 13, 14: the small-input forward transforms, |a_i| ≤ SMALL_INPUT.
    let small = matches!(id & 0x0F, 13 | 14);
    let mut inputs: Vec<[i16; N]> = if small {
        let s = SMALL_INPUT;
        vec![
            [s; N],
            [-s; N],
            core::array::from_fn(|i| if i % 2 == 0 { s } else { -s }),
            [0; N],
        ]
    } else {
        vec![[(q - 1) as i16; N], [1 - q as i16; N], [0; N]]
    };
    if small {
        let span = 2 * SMALL_INPUT as u64 + 1;
        inputs.extend(
            (0..TRANSFORM_CASES * repeat())
                .map(|_| core::array::from_fn(|_| (rng.next_u64() % span) as i16 - SMALL_INPUT)),
        );
    } else if q == 7681 && !inverse {
        // Breaks the routine unless a middle layer centres its outputs.
        let growth = q7681_growth_input();
        inputs.push(core::array::from_fn(|i| growth[i % 256]));
    }
    if !small {
        inputs.extend((0..TRANSFORM_CASES * repeat()).map(|_| rng.poly::<N>(q)));
    }
    for (n, input) in inputs.iter().enumerate() {
        let mut request = request(id, &tables, n == 0);
        request.extend(input.iter().flat_map(|c| c.to_le_bytes()));
        sim.send(&request);
        let reply = sim.run_until_output(2 * N, 50_000_000).expect("harness answers");
        let got: Vec<i16> = reply
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        let mut expected = *input;
        if inverse {
            Ntt::<R, N, L>::inverse(&mut expected);
        } else {
            Ntt::<R, N, L>::forward(&mut expected);
        }
        if got != expected.to_vec() {
            let bad: Vec<(usize, i16, i16)> = got
                .iter()
                .zip(expected.iter())
                .enumerate()
                .filter(|(_, (a, b))| a != b)
                .map(|(i, (a, b))| (i, *a, *b))
                .take(8)
                .collect();
            panic!(
                "ring {id}, input {n}: {} differ, first {bad:?}",
                got.iter().zip(expected.iter()).filter(|(a, b)| a != b).count()
            );
        }
    }
    windows(&sim.take_markers())
        .expect("paired markers")
        .iter()
        .map(|w| w.cycles)
        .collect()
}

type F3329 = NttFriendlyMontgomery<Q3329>;
type F769 = NttFriendlyMontgomery<Q769>;
type F7681 = NttFriendlyMontgomery<Q7681>;
type P3329 = Montgomery<Q3329>;
type P769 = Montgomery<Q769>;
type P7681 = Montgomery<Q7681>;
type K769 = KRed2x<Q769>;
const PLAIN: u8 = 0x10;
const KRED2X: u8 = 0x20;

/// One routine under test: its request id, the seed of its inputs, the
/// tables its requests carry, and the run against the portable code.
struct Case {
    id: u8,
    seed: u64,
    tables: fn() -> Vec<i16>,
    run: fn(&mut Sim, u8, u64) -> Vec<u64>,
}

macro_rules! cases {
    ($($id:expr, $seed:expr => $run:ident, $tables:ident, $r:ty, $n:expr, $l:expr;)*) => {
        [$(Case {
            id: $id,
            seed: $seed,
            tables: || $tables::<$r, $n, $l>($id),
            run: $run::<$r, $n, $l>,
        }),*]
    };
}

/// Every routine of every variant (ids: see the harness).
const CASES: [Case; 35] = cases! {
    0, 1 => run_ring, ring_tables, F3329, 256, 7;
    1, 2 => run_ring, ring_tables, F769, 512, 7;
    2, 3 => run_ring, ring_tables, F3329, 512, 7;
    3, 4 => run_ring, ring_tables, F3329, 256, 7;
    4, 5 => run_ring, ring_tables, F769, 512, 7;
    5, 6 => run_ring, ring_tables, F3329, 512, 7;
    6, 7 => run_base_mul, gamma_tables, F3329, 256, 7;
    7, 8 => run_base_mul, gamma_tables, F769, 512, 7;
    8, 9 => run_base_mul, gamma_tables, F3329, 512, 7;
    9, 10 => run_base_inv, gamma_tables, F769, 512, 7;
    10, 11 => run_ring, ring_tables, F7681, 256, 8;
    11, 12 => run_ring, ring_tables, F7681, 256, 8;
    12, 13 => run_base_mul, gamma_tables, F7681, 256, 8;
    13, 14 => run_ring, ring_tables, F769, 512, 7;
    14, 15 => run_ring, ring_tables, F3329, 512, 7;
    PLAIN, 21 => run_ring, ring_tables, P3329, 256, 7;
    PLAIN | 1, 22 => run_ring, ring_tables, P769, 512, 7;
    PLAIN | 2, 23 => run_ring, ring_tables, P3329, 512, 7;
    PLAIN | 3, 24 => run_ring, ring_tables, P3329, 256, 7;
    PLAIN | 4, 25 => run_ring, ring_tables, P769, 512, 7;
    PLAIN | 5, 26 => run_ring, ring_tables, P3329, 512, 7;
    PLAIN | 6, 27 => run_base_mul, gamma_tables, P3329, 256, 7;
    PLAIN | 7, 28 => run_base_mul, gamma_tables, P769, 512, 7;
    PLAIN | 8, 29 => run_base_mul, gamma_tables, P3329, 512, 7;
    PLAIN | 9, 10 => run_base_inv, gamma_tables, P769, 512, 7;
    PLAIN | 10, 31 => run_ring, ring_tables, P7681, 256, 8;
    PLAIN | 11, 32 => run_ring, ring_tables, P7681, 256, 8;
    PLAIN | 12, 33 => run_base_mul, gamma_tables, P7681, 256, 8;
    PLAIN | 13, 34 => run_ring, ring_tables, P769, 512, 7;
    PLAIN | 14, 35 => run_ring, ring_tables, P3329, 512, 7;
    KRED2X | 1, 42 => run_ring, ring_tables, K769, 512, 7;
    KRED2X | 4, 45 => run_ring, ring_tables, K769, 512, 7;
    KRED2X | 13, 46 => run_ring, ring_tables, K769, 512, 7;
    KRED2X | 7, 48 => run_base_mul, gamma_tables, K769, 512, 7;
    KRED2X | 9, 10 => run_base_inv, gamma_tables, K769, 512, 7;
};

/// Every case of [`CASES`] against the portable code with constant cycles,
/// the routines reading their tables from `placement`.
fn check_placement(placement: Placement) {
    let elf = build_harness(placement);
    let mut sim = Sim::load(&elf, "atmega1284p").expect("simavr loads the harness");
    for case in &CASES {
        let id = case.id;
        let cycles = (case.run)(&mut sim, id, case.seed);
        let (min, max) = (cycles.iter().min().unwrap(), cycles.iter().max().unwrap());
        const NAMES: [&str; 15] = [
            "forward q3329 n256",
            "forward q769 n512",
            "forward q3329 n512",
            "inverse q3329 n256",
            "inverse q769 n512",
            "inverse q3329 n512",
            "base_mul q3329 n256",
            "base_mul q769 n512",
            "base_mul q3329 n512",
            "base_inv q769 n512",
            "forward q7681 n256",
            "inverse q7681 n256",
            "base_mul q7681 n256",
            "forward_small q769 n512",
            "forward_small q3329 n512",
        ];
        let variant = match id & 0x30 {
            PLAIN => "plain Montgomery",
            KRED2X => "K-RED2X",
            _ => "NTT-friendly Montgomery",
        };
        println!(
            "{placement:?} tables: {}, {variant}: {min} cycles (max {max}) over {} calls",
            NAMES[(id & 0x0F) as usize],
            cycles.len()
        );
        assert_eq!(min, max, "routine {id:#x}: the cycle count depends on the data");
    }
    sim.send(&[0xFF]);
    sim.run_to_exit(1_000_000).expect("harness stops");
}

/// The SRAM-table routines (`ntt-tables-in-sram`).
#[test]
fn assembly_ntts_with_tables_in_sram_match_portable_and_are_constant_time() {
    check_placement(Placement::Sram);
}

/// The flash-table routines (the default); a test of its own, so the two
/// run in parallel.
#[test]
fn assembly_ntts_with_tables_in_flash_match_portable_and_are_constant_time() {
    check_placement(Placement::Flash);
}

/// The generator proves the small-input transforms' ranges for the bound
/// the Rust side documents.
#[test]
fn small_input_bound_agrees_with_the_generator() {
    let gen = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr/gen_ntt.py");
    let text = std::fs::read_to_string(gen).expect("gen_ntt.py");
    assert!(
        text.contains(&format!("\nSMALL_INPUT = {SMALL_INPUT}\n")),
        "SMALL_INPUT differs"
    );
}

/// The committed assembly is exactly what its generator prints.
#[test]
fn assembly_is_generated() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../asm-avr");
    let gen = root.join("gen_ntt.py");
    let fresh = avr_sim::harness::is_generated_by(&root.join("ntt_forward.S"), &gen);
    assert_eq!(fresh, Ok(true), "run asm-avr/gen_ntt.py > asm-avr/ntt_forward.S");
    let fresh = avr_sim::harness::is_generated_by_with(&root.join("ntt_forward_flash.S"), &gen, &["flash"]);
    assert_eq!(
        fresh,
        Ok(true),
        "run asm-avr/gen_ntt.py flash > asm-avr/ntt_forward_flash.S"
    );
}
