//! `cargo xtask sim-test`: randomized differential test, firmware in simavr vs modarith on the host.

use firmware::{op_id, Kind, Ring};

use crate::avr;
use crate::device::{encode, Device};
use crate::hosteval::expected;
use crate::opts::{Opts, Rng};

/// Input polynomials for trial `t`: the first trials are the extremes, then random.
pub fn inputs(ring: Ring, kind: Kind, t: u64, rng: &mut Rng) -> Vec<Vec<i16>> {
    let n = ring.n();
    let m = ring.q() as i16 - 1;
    let gen = |rng: &mut Rng, which: usize| -> Vec<i16> {
        (0..n)
            .map(|i| match t {
                0 => m,
                1 => -m,
                2 => {
                    if (i + which) & 1 == 0 {
                        m
                    } else {
                        -m
                    }
                }
                3 => 0,
                // Mostly uniform in [−(q−1), q−1], with extremes sprinkled in.
                _ => match rng.below(16) {
                    0 => m,
                    1 => -m,
                    _ => rng.below(2 * m as u32 + 1) as i16 - m,
                },
            })
            .collect()
    };
    (0..kind.inputs()).map(|w| gen(rng, w)).collect()
}

fn first_difference(got: &[u8], want: &[u8], kind: Kind) -> String {
    if got.len() != want.len() {
        return format!("reply length {} ≠ {}", got.len(), want.len());
    }
    let off = usize::from(kind == Kind::BaseInv);
    if off == 1 && got[0] != want[0] {
        return format!("invertible flag {} ≠ {}", got[0], want[0]);
    }
    let coeff = |b: &[u8], i: usize| i16::from_le_bytes([b[off + 2 * i], b[off + 2 * i + 1]]);
    let n = (got.len() - off) / 2;
    let bad: Vec<usize> = (0..n).filter(|&i| coeff(got, i) != coeff(want, i)).collect();
    match bad.first() {
        Some(&i) => {
            format!(
                "{} coefficients differ, first [{i}]: AVR {} host {}",
                bad.len(),
                coeff(got, i),
                coeff(want, i)
            )
        }
        None => "identical".into(),
    }
}

/// megaAVR-0 parts: simavr has no model, so run the protocol smoke test in
/// yasimavr (`cargo xtask setup --yasimavr` installs it into `.venv`).
fn yasimavr_smoke(mcu: avr::Mcu, no_build: bool) -> Result<(), String> {
    let root = crate::util::workspace_root();
    let python = root.join(".venv/bin/python");
    if !python.exists() {
        return Err(format!(
            "{} cannot be simulated with simavr; the yasimavr smoke test needs {} (run `cargo xtask setup --yasimavr`)",
            mcu.name,
            python.display()
        ));
    }
    let elf = if no_build {
        avr::target_dir(mcu).join("avr-none/release/firmware.elf")
    } else {
        avr::build(mcu)?.elf
    };
    crate::util::run(
        std::process::Command::new(python)
            .arg(root.join("firmware/avr/yasim_smoke.py"))
            .arg(elf),
    )?;
    println!("1 passed, 0 failed");
    Ok(())
}

/// `cargo xtask sim-test [--mcu M] [--trials N] [--seed S] [--filter S] [--no-build]`.
pub fn run(args: &[String]) -> Result<(), String> {
    let o = Opts::parse(args, &["--mcu", "--trials", "--seed", "--filter"], &["--no-build"])?;
    let mcu = avr::mcu(o.value("--mcu").unwrap_or("atmega1284p"))?;
    if !mcu.simulated {
        return yasimavr_smoke(mcu, o.flag("--no-build"));
    }
    let trials = o.number("--trials", 12)?.max(1);
    let seed = o.number("--seed", 0x5EED)?;
    let filter = o.value("--filter").unwrap_or("").to_lowercase();
    let elf = if o.flag("--no-build") {
        avr::target_dir(mcu).join("avr-none/release/firmware.elf")
    } else {
        avr::build(mcu)?.elf
    };
    let mut dev = Device::open(&elf, mcu.name)?;
    let mut rng = Rng::new(seed);
    let (mut passed, mut failed) = (0u32, 0u32);
    for (ring, kind) in firmware::ops() {
        let name = format!("{}.{}", ring.name(), kind.name());
        if !name.to_lowercase().contains(&filter) {
            continue;
        }
        let id = op_id(ring, kind);
        if !dev.ops.contains(&id) {
            return Err(format!("firmware does not register {name} (0x{id:02x})"));
        }
        let mut op_failed = 0;
        for t in 0..trials {
            let inp = inputs(ring, kind, t, &mut rng);
            let got = dev.call(id, &encode(&inp))?;
            let want = expected(ring, kind, &inp);
            if got == want {
                passed += 1;
            } else {
                failed += 1;
                op_failed += 1;
                eprintln!(
                    "FAIL {name} trial {t} (seed {seed}): {}",
                    first_difference(&got, &want, kind)
                );
            }
        }
        dev.take_markers();
        println!(
            "{} {name:<24} {trials} trials",
            if op_failed == 0 { "ok  " } else { "FAIL" }
        );
    }
    let cycles = dev.cycle();
    dev.close()?;
    println!("simulated {cycles} cycles");
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        return Err(format!("{failed} differential test(s) failed"));
    }
    if passed == 0 {
        return Err(format!("no operation matches --filter `{filter}`"));
    }
    Ok(())
}
