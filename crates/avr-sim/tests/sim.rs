//! End-to-end tests of the simulator binding with a C fixture built by avr-gcc.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use avr_pqc_sim::{windows, Sim};

/// Builds tests/fixture.c once per test run (the tests run in parallel:
/// each building the same ELF raced with the others reading it); `None`
/// (test skipped) when avr-gcc or libsimavr is absent.
fn fixture() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| build_fixture("avr-sim-fixture.elf", &[])).clone()
}

/// The fixture linked with its stack at the top of a 64 KB data space.
fn fixture_64k() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| build_fixture("avr-sim-fixture-64k.elf", &["-Wl,--defsym=__stack=0xFFFF"]))
        .clone()
}

fn build_fixture(name: &str, extra: &[&str]) -> Option<PathBuf> {
    if !avr_pqc_sim::AVAILABLE {
        eprintln!("avr-sim built without libsimavr: skipping (run `cargo xtask setup`)");
        return None;
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixture.c");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("avr-gcc")
        .args(["-mmcu=atmega1284p", "-Os"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        Ok(s) => panic!("avr-gcc failed: {s}"),
        Err(_) => {
            eprintln!("avr-gcc not found: skipping (run `cargo xtask setup`)");
            None
        }
    }
}

#[test]
fn uart_markers_stack_and_speed() {
    let Some(elf) = fixture() else { return };
    let mut sim = Sim::load(&elf, "atmega1284p").unwrap();

    // Input queued before the firmware enabled RX must still arrive.
    let msg: Vec<u8> = (0..200u16).map(|i| (i * 7) as u8).collect();
    sim.send(&[msg.len() as u8]);
    sim.send(&msg);
    let echo = sim.run_until_output(msg.len(), 10_000_000).unwrap();
    assert_eq!(echo, msg.iter().map(|b| b.wrapping_add(1)).collect::<Vec<_>>());

    // No marker yet: the deepest since reset, main and the UART calls only.
    let shallow = sim.stack_depth();
    assert!((2..40).contains(&shallow), "echo used {shallow} bytes of stack");

    sim.send(&[5]);
    assert_eq!(sim.run_until_output(1, 1_000_000).unwrap(), vec![5 + 5]);
    // deep()'s 64-byte buffer, below main's frame.
    let deep = sim.stack_depth();
    assert!(
        (shallow + 66..shallow + 110).contains(&deep),
        "deep() reached {deep} bytes"
    );

    let count: u32 = 600_000;
    sim.send(&count.to_le_bytes());
    let start = Instant::now();
    let c0 = sim.cycle();
    assert_eq!(sim.run_until_output(1, 100_000_000).unwrap(), b"!");
    let secs = start.elapsed().as_secs_f64();
    let rate = (sim.cycle() - c0) as f64 / secs;
    println!(
        "simulated {} cycles in {secs:.3} s: {:.1} M cycles/s",
        sim.cycle() - c0,
        rate / 1e6
    );
    sim.run_to_exit(1_000_000).unwrap();

    let w = windows(&sim.take_markers()).unwrap();
    assert_eq!(w.iter().map(|w| w.id).collect::<Vec<_>>(), vec![7, 9, 11]);
    assert_eq!(w[0].stack_bytes, 0);
    assert!(w[0].cycles <= 2, "empty window costs {} cycles", w[0].cycles);
    // 64-byte buffer + return address + saved frame pointer at least.
    assert!(
        (68..100).contains(&w[1].stack_bytes),
        "deep() used {} bytes",
        w[1].stack_bytes
    );
    assert!(w[2].cycles > 10 * count as u64);
    // Loose floor: the machine may be busy; xtask bench reports the real rate.
    assert!(rate > 2e6, "simulator too slow: {rate:.0} cycles/s");
}

#[test]
fn cycle_limit_is_an_error() {
    let Some(elf) = fixture() else { return };
    let mut sim = Sim::load(&elf, "atmega1284p").unwrap();
    // No input: the firmware waits for its first byte forever.
    let err = sim.run_until_output(1, 200_000).unwrap_err();
    assert!(matches!(err, avr_pqc_sim::Error::CycleLimit { .. }), "{err}");
    assert!(err.to_string().contains("cycle limit"));
}

#[test]
fn unknown_mcu_is_an_error() {
    let Some(elf) = fixture() else { return };
    let err = Sim::load(&elf, "atmega9999").unwrap_err();
    assert!(matches!(err, avr_pqc_sim::Error::UnknownMcu(_)), "{err}");
}

/// Feeds the fixture its inputs and runs it to the end.
fn drive(sim: &mut Sim) {
    sim.send(&[3, 1, 2, 3]);
    assert_eq!(sim.run_until_output(3, 10_000_000).unwrap(), vec![2, 3, 4]);
    sim.send(&[5]);
    assert_eq!(sim.run_until_output(1, 1_000_000).unwrap(), vec![5 + 5]);
    sim.send(&1000u32.to_le_bytes());
    assert_eq!(sim.run_until_output(1, 10_000_000).unwrap(), b"!");
    sim.run_to_exit(1_000_000).unwrap();
}

#[test]
fn extended_data_space_keeps_timings() {
    let (Some(elf), Some(elf_64k)) = (fixture(), fixture_64k()) else {
        return;
    };
    let f = avr_pqc_sim::DEFAULT_FREQUENCY;
    let marker = avr_pqc_sim::GPIOR0_CLASSIC;

    let mut real = Sim::load(&elf, "atmega1284p").unwrap();
    assert_eq!(real.ramend(), 0x40FF);
    assert!(real.read_data(0xFF00, 0x100).is_none());
    drive(&mut real);

    let mut big = Sim::load_with_ramend(&elf_64k, "atmega1284p", f, marker, 0xFFFF).unwrap();
    assert_eq!(big.ramend(), 0xFFFF);
    drive(&mut big);
    // The stack lives at the top of the 64 KB.
    let top = big.read_data(0xFF00, 0x100).unwrap();
    assert!(top.iter().any(|&b| b != 0), "nothing written near 0xFFFF");

    // Same cycles and stack, window by window and for the whole run.
    let (w_real, w_big) = (
        windows(&real.take_markers()).unwrap(),
        windows(&big.take_markers()).unwrap(),
    );
    assert_eq!(w_real, w_big);
    assert_eq!(real.cycle(), big.cycle());
    let depth = big.stack_depth_since_reset();
    assert_eq!(depth, real.stack_depth_since_reset());
    // deep()'s window is the deepest point, below main's frame; the last
    // window (the spin loop) went less deep, so `stack_depth` is smaller.
    assert!(depth > w_big[1].stack_bytes, "{depth} vs {:?}", w_big[1]);
    assert!(big.stack_depth() < depth);

    // An override below the part's own RAMEND is refused.
    let err = Sim::load_with_ramend(&elf, "atmega1284p", f, marker, 0x1000).unwrap_err();
    assert!(matches!(err, avr_pqc_sim::Error::Load(_)), "{err}");
}
