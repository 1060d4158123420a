//! `cargo xtask sim-test`: randomized differential test of the ring
//! operations (firmware in simavr vs modarith on the host), KAT
//! reproduction of every KEM variant by the firmware in simavr, and
//! CTRU-Light's exact decryption product against the host's.

use avr_wire::rings::{op_id, Kind, Ring};
use kem_registry::Kem;

use crate::build::avr;
use crate::opts::Rng;
use crate::run::device::{encode, Device};
use crate::run::hosteval::expected;
use crate::run::kems;
use crate::target;

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
/// yasimavr (installed into `.venv` on first use).
fn yasimavr_smoke(mcu: target::Mcu, no_build: bool) -> Result<(), String> {
    let root = crate::util::workspace_root();
    let elf = if no_build {
        target::Image::rings().elf(mcu)
    } else {
        avr::build(mcu)?.elf
    };
    crate::util::run(
        crate::setup::yasim(mcu.name)?
            .arg(root.join("firmware/avr/yasim_smoke.py"))
            .arg(elf),
    )?;
    println!("1 passed, 0 failed");
    Ok(())
}

/// Options of `cargo xtask sim-test`.
#[derive(clap::Parser, Debug)]
pub struct SimTestArgs {
    /// The MCU (atmega1284p in simavr; atmega4808 in yasimavr: a smoke test, or
    /// with --kat, KAT record 0 of every KEM that fits)
    #[arg(long, default_value = "atmega1284p", value_parser = target::mcu)]
    pub mcu: target::Mcu,
    /// Random trials per ring operation
    #[arg(long, default_value_t = 12)]
    pub trials: u64,
    /// Official KAT records reproduced per KEM variant (default 3)
    #[arg(long)]
    pub kat: Option<usize>,
    /// Seed of the random trials
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// Only operations and KEMs whose name contains this text
    #[arg(long, default_value = "")]
    pub filter: String,
    /// Only this KEM: a scheme of the registry (all its variants and
    /// suites, e.g. ml-kem-768) or one variant (e.g. ctru-light-sha3/kred2x)
    #[arg(long, value_parser = crate::target::kem_selector, conflicts_with = "filter")]
    pub kem: Option<String>,
    /// Use the images already built
    #[arg(long)]
    pub no_build: bool,
    /// A KEM that does not fit the MCU is a failure
    #[arg(long)]
    pub require_fit: bool,
}

/// `cargo xtask sim-test [--mcu M] [--trials N] [--kat N] [--seed S] [--filter S] [--no-build] [--require-fit]`.
pub fn run(o: &SimTestArgs) -> Result<(), String> {
    let mcu = o.mcu;
    if !mcu.simulated {
        if o.kat.is_some() {
            let selected = crate::target::selection(&o.kem, &o.filter);
            return crate::measure::mega0::kat(mcu, &selected, o.no_build, o.require_fit, false);
        }
        return yasimavr_smoke(mcu, o.no_build);
    }
    let trials = o.trials;
    let kat_count = o.kat.unwrap_or(3);
    let seed = o.seed;
    let filter = crate::target::selection(&o.kem, &o.filter);
    let no_build = o.no_build;
    let (mut passed, mut failed) = (0u32, 0u32);
    let rings_selected =
        avr_wire::rings::ops().any(|(r, k)| format!("{}.{}", r.name(), k.name()).to_lowercase().contains(&filter));
    if trials > 0 && rings_selected && target::runnable(mcu, &target::Image::rings(), no_build) {
        let (p, f) = rings(mcu, trials, seed, &filter, no_build)?;
        passed += p;
        failed += f;
    }
    if kat_count > 0 {
        for (image, kems) in target::kem_images_matching(mcu, &filter, no_build) {
            let (p, f) = kat(mcu, &image, &kems, kat_count, no_build)?;
            passed += p;
            failed += f;
            if kems.iter().any(|k| k.scheme().name().starts_with("ctru")) {
                let (p, f) = ctru_product(mcu, &image, seed)?;
                passed += p;
                failed += f;
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        return Err(format!("{failed} simulator test(s) failed"));
    }
    if passed == 0 {
        return Err(format!("no operation matches --filter `{filter}`"));
    }
    Ok(())
}

/// KAT reproduction in the simulator: the first `count` records of the
/// official KAT file of each KEM `image` serves, byte for byte (pk, sk, ct,
/// ss), with decaps checked on the record's ciphertext and on a corrupted one.
fn kat(
    mcu: target::Mcu,
    image: &target::Image,
    kems: &[Kem],
    count: usize,
    no_build: bool,
) -> Result<(u32, u32), String> {
    let elf = avr::image_elf(mcu, image, no_build)?;
    let statics = kem_statics(&elf)?;
    let mut dev = Device::open(&elf, mcu.name)?;
    let (mut passed, mut failed) = (0u32, 0u32);
    for &kem in kems {
        let mut bad = Vec::new();
        let mut cases = kems::kat_cases(kem, count)?;
        // The authors' own worked example (CTRU-Light's sha3 definition).
        if kem.scheme() == kem_registry::Scheme::CtruLightSha3 {
            cases.push(kems::e5_case(kem)?);
        }
        for case in &cases {
            let r = &case.record;
            let mut check = |what: &str, ok: bool| {
                if ok {
                    passed += 1;
                } else {
                    failed += 1;
                    bad.push(format!("{} {what}", case.label));
                }
            };
            let kg = kems::dev_keygen(&mut dev, kem, &case.keygen_tape)?;
            check(
                "keygen",
                kg.ok && kg.used == case.keygen_tape.len() && kg.body == [&r.pk[..], &r.sk[..]].concat(),
            );
            let en = kems::dev_encaps(&mut dev, kem, &r.pk, &case.encaps_tape)?;
            check(
                "encaps",
                en.ok && en.used == case.encaps_tape.len() && en.body == [&r.ct[..], &r.ss[..]].concat(),
            );
            check("decaps", kems::dev_decaps(&mut dev, kem, &r.sk, &r.ct)? == r.ss);
            let mut forged = r.ct.clone();
            let at = (r.count + case.label.len()) % forged.len();
            forged[at] ^= 1;
            let want = kems::decaps(kem, &r.sk, &forged)?;
            check(
                "decaps (corrupted ct)",
                want != r.ss && kems::dev_decaps(&mut dev, kem, &r.sk, &forged)? == want,
            );
        }
        // ACVP's own encapsulation (ek, m → c, K) and decapsulation (dk, c →
        // K; modified ciphertexts too) cases, for the FIPS 203 sets.
        if kem.scheme().acvp_parameter_set().is_some() {
            for case in kems::acvp(kem, "encap-decap.json", Some("encapsulation"), count)? {
                let en = kems::dev_encaps(&mut dev, kem, case.get("ek")?, case.get("m")?)?;
                let ok = en.ok && en.body == [case.get("c")?, case.get("k")?].concat();
                if ok {
                    passed += 1;
                } else {
                    failed += 1;
                    bad.push(case.label.clone());
                }
            }
            for case in kems::acvp(kem, "encap-decap.json", Some("decapsulation"), count)? {
                if kems::dev_decaps(&mut dev, kem, case.get("dk")?, case.get("c")?)? == case.get("k")? {
                    passed += 1;
                } else {
                    failed += 1;
                    bad.push(case.label.clone());
                }
            }
        }
        // The handlers wipe their statics (keys, ciphertext, tape, shared
        // secret) once the reply is sent: read them back from the RAM.
        for (addr, size, name) in &statics {
            if dev.read_data(*addr, *size as usize)?.iter().all(|&b| b == 0) {
                passed += 1;
            } else {
                failed += 1;
                bad.push(format!("static {name} not wiped after the operations"));
            }
        }
        dev.take_markers();
        for b in &bad {
            eprintln!("FAIL {} KAT {b}", kem.name());
        }
        println!(
            "{} {:<32} KAT records 0..{count}{} (keygen, encaps, decaps, decaps of a corrupted ct)",
            if bad.is_empty() { "ok  " } else { "FAIL" },
            kem.name(),
            if cases.len() > count {
                " and the draft standard's E.5"
            } else {
                ""
            }
        );
    }
    let cycles = dev.cycle();
    dev.close()?;
    println!("{}: simulated {cycles} cycles", image.name);
    Ok((passed, failed))
}

/// The KEM handlers' statics in `elf`: (data address, size, name) of the
/// key/ciphertext arena, the randomness tape and the shared secret
/// (`firmware/src/device/kems.rs`; v0-mangled names end in the length-
/// prefixed identifier).
fn kem_statics(elf: &std::path::Path) -> Result<Vec<(u32, u32, String)>, String> {
    let all = crate::run::symbols::data_symbols(elf)?;
    ["ARENA", "TAPE", "SS"]
        .iter()
        .map(|short| {
            let suffix = format!("4kems{}{short}", short.len());
            all.iter()
                .find(|(_, _, name)| name.ends_with(&suffix))
                .map(|(a, s, _)| (*a, *s, format!("kems::{short}")))
                .ok_or_else(|| format!("{}: no static kems::{short}", elf.display()))
        })
        .collect()
}

/// Trials of [`ctru_product`]: the extremes, then random keys and ciphertexts.
const CTRU_PRODUCT_TRIALS: u64 = 32;

/// CTRU-Light's decryption product w = c·f mod 256 computed by the firmware
/// (the AVR Karatsuba with its assembly) against the host's portable one,
/// byte for byte. Decapsulation alone could not show a small error, which
/// E8 decoding absorbs. Keys hold any 3-bit values (6 and 7 give f = −3,
/// −4, a malformed key's extremes); the first trials are the extremes.
fn ctru_product(mcu: target::Mcu, image: &target::Image, seed: u64) -> Result<(u32, u32), String> {
    use avr_wire::kem::OP_CTRU_DECRYPT_PRODUCT;
    use ctru_light::hazmat::pke_decrypt_product;
    use ctru_light::params::{CT_BYTES, SK_PKE_BYTES};

    let mut dev = Device::open(&image.elf(mcu), mcu.name)?;
    let mut rng = Rng::new(seed ^ 0xC7_4D);
    let (mut passed, mut failed) = (0u32, 0u32);
    for t in 0..CTRU_PRODUCT_TRIALS {
        // 3-bit values v (f = 3 − v) packed little-endian, eight per 3 bytes.
        let sk: [u8; SK_PKE_BYTES] = match t {
            0 => [0xFF; SK_PKE_BYTES], // v = 7: f = −4 everywhere
            1 => [0x00; SK_PKE_BYTES], // f = 3
            _ => core::array::from_fn(|_| rng.next_u64() as u8),
        };
        let ct: [u8; CT_BYTES] = match t {
            0 => [0x80; CT_BYTES],
            1 => [0x7F; CT_BYTES],
            _ => core::array::from_fn(|_| rng.next_u64() as u8),
        };
        let want = pke_decrypt_product(&sk, &ct);
        let got = dev.call(OP_CTRU_DECRYPT_PRODUCT, &[&sk[..], &ct[..]].concat())?;
        if got[..] == want[..] {
            passed += 1;
        } else {
            failed += 1;
            let at = got.iter().zip(want.iter()).position(|(a, b)| a != b);
            eprintln!("FAIL CTRU-Light decryption product, trial {t}: first difference at {at:?}");
        }
    }
    dev.take_markers();
    dev.close()?;
    println!(
        "{} {:<32} decryption product c·f mod 256, {CTRU_PRODUCT_TRIALS} keys and ciphertexts",
        if failed == 0 { "ok  " } else { "FAIL" },
        image.name
    );
    Ok((passed, failed))
}

/// The randomized differential test of the ring operations.
fn rings(mcu: target::Mcu, trials: u64, seed: u64, filter: &str, no_build: bool) -> Result<(u32, u32), String> {
    let elf = avr::image_elf(mcu, &target::Image::rings(), no_build)?;
    let mut dev = Device::open(&elf, mcu.name)?;
    let mut rng = Rng::new(seed);
    let (mut passed, mut failed) = (0u32, 0u32);
    for (ring, kind) in avr_wire::rings::ops() {
        let name = format!("{}.{}", ring.name(), kind.name());
        if !name.to_lowercase().contains(filter) {
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
    println!("rings: simulated {cycles} cycles");
    Ok((passed, failed))
}
