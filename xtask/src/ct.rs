//! `cargo xtask ct`: constant-time check of every KEM variant in simavr.
//!
//! For each KEM, N random key generations, N encapsulations (each to a
//! different key) and N decapsulations (each under a different key; even
//! inputs valid ciphertexts, odd ones random bytes) run on the firmware; every
//! result is compared with the host, and each operation must take exactly the
//! same number of cycles on every input (min == max). CTRU-Light key
//! generation retries when f is not invertible; a retry is public (it only
//! discards a candidate key), so such inputs are detected on the host (their
//! tape is longer than one attempt's) and excluded from the comparison, and
//! reported with their cycle counts.

use std::fmt::Write as _;
use std::sync::Mutex;

use firmware::kem::{kem_op_id, Group, Kem, KemOp, TAPE_LEN};
use rand_core::RngCore as _;

use crate::avr;
use crate::device::Device;
use crate::kems::{self, measured, Recorder, TestRng};
use crate::opts::{Opts, Rng};
use crate::simtest::image_elf;

/// Cycle statistics of one operation over its inputs.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Inputs measured.
    pub n: usize,
    /// Fewest cycles.
    pub min: u64,
    /// Most cycles.
    pub max: u64,
    /// Largest stack (simulator).
    pub stack: u32,
}

impl Stats {
    fn add(&mut self, cycles: u64, stack: u32) {
        if self.n == 0 {
            self.min = cycles;
            self.max = cycles;
        }
        self.n += 1;
        self.min = self.min.min(cycles);
        self.max = self.max.max(cycles);
        self.stack = self.stack.max(stack);
    }

    fn merged(&self, o: &Stats) -> Stats {
        let mut m = self.clone();
        if o.n > 0 {
            m.add(o.min, o.stack);
            m.add(o.max, o.stack);
            m.n = self.n + o.n;
        }
        m
    }

    /// Constant time: every input took the same number of cycles.
    pub fn constant(&self) -> bool {
        self.n > 0 && self.min == self.max
    }
}

/// The outcome for one KEM.
#[derive(Clone, Debug, Default)]
pub struct KemResult {
    /// Key generation (inputs without a retry).
    pub keygen: Stats,
    /// Encapsulation.
    pub encaps: Stats,
    /// Decapsulation of valid ciphertexts.
    pub decaps_valid: Stats,
    /// Decapsulation of random (invalid) ciphertexts.
    pub decaps_invalid: Stats,
    /// Cycles of the key generations that retried (excluded), with their attempt counts.
    pub retries: Vec<(usize, u64)>,
    /// Outputs that differed from the host.
    pub mismatches: Vec<String>,
}

fn run_kem(dev: &mut Device, kem: Kem, count: usize, seed: u64) -> Result<KemResult, String> {
    let mut res = KemResult::default();
    let mut rng = Recorder::new(TestRng(Rng::new(seed ^ (kem as u64) << 32)));
    let nominal = kems::keygen_tape_len(kem);
    let mut keys = Vec::new();
    // Key generation: N inputs without a retry (plus the excluded ones).
    while keys.len() < count {
        let (pk, sk) = kems::keygen(kem, &mut rng)?;
        let tape = rng.take();
        let attempts = 1 + (tape.len() - nominal) / 32;
        if tape.len() > TAPE_LEN {
            // More attempts than the firmware's tape holds: excluded without a run.
            res.retries.push((attempts, 0));
            continue;
        }
        let id = kem_op_id(kem, KemOp::Keygen);
        let (r, m) = measured(dev, id, |d| kems::dev_keygen(d, kem, &tape))?;
        if !r.ok || r.body != [&pk[..], &sk[..]].concat() {
            res.mismatches.push(format!("keygen input {}", keys.len()));
        }
        if tape.len() > nominal {
            res.retries.push((attempts, m.cycles));
            continue;
        }
        res.keygen.add(m.cycles, m.stack);
        keys.push((pk, sk));
    }
    // Encapsulation to every key; decapsulation under every key, valid and invalid in turn.
    for (i, (pk, sk)) in keys.iter().enumerate() {
        let (ct, ss) = kems::encaps(kem, pk, &mut rng)?;
        let tape = rng.take();
        let (r, m) = measured(dev, kem_op_id(kem, KemOp::Encaps), |d| {
            kems::dev_encaps(d, kem, pk, &tape)
        })?;
        if !r.ok || r.body != [&ct[..], &ss[..]].concat() {
            res.mismatches.push(format!("encaps input {i}"));
        }
        res.encaps.add(m.cycles, m.stack);
        let (ct, want, stats) = if i % 2 == 0 {
            (ct, ss, &mut res.decaps_valid)
        } else {
            let mut junk = vec![0u8; kem.ct_len()];
            rng.fill_bytes(&mut junk);
            rng.take();
            let want = kems::decaps(kem, sk, &junk)?;
            (junk, want, &mut res.decaps_invalid)
        };
        let (got, m) = measured(dev, kem_op_id(kem, KemOp::Decaps), |d| {
            kems::dev_decaps(d, kem, sk, &ct)
        })?;
        if got != want {
            res.mismatches.push(format!("decaps input {i}"));
        }
        stats.add(m.cycles, m.stack);
    }
    Ok(res)
}

fn run_group(
    mcu: avr::Mcu,
    group: Group,
    kems: &[Kem],
    count: usize,
    seed: u64,
    no_build: bool,
) -> Result<Vec<(Kem, KemResult)>, String> {
    let elf = image_elf(mcu, &avr::Image::group(group), no_build)?;
    let mut dev = Device::open(&elf, mcu.name)?;
    let mut out = Vec::new();
    for &kem in kems {
        let r = run_kem(&mut dev, kem, count, seed)?;
        eprintln!("xtask: ct {} done", kem.name());
        out.push((kem, r));
    }
    dev.close()?;
    Ok(out)
}

fn row(s: &mut String, kem: Kem, op: &str, st: &Stats, note: &str) {
    let _ = writeln!(
        s,
        "| {} | {op} | {} | {} | {} | {} | {} |",
        kem.name(),
        st.n,
        st.min,
        st.max,
        if st.constant() { "constant" } else { "VARIES" },
        note
    );
}

/// `cargo xtask ct [--count N] [--mcu M] [--seed S] [--filter S] [--jobs J] [--no-build]`.
pub fn run(args: &[String]) -> Result<(), String> {
    let o = Opts::parse(
        args,
        &["--count", "--mcu", "--seed", "--filter", "--jobs"],
        &["--no-build"],
    )?;
    let mcu = avr::mcu(o.value("--mcu").unwrap_or("atmega1284p"))?;
    if !mcu.simulated {
        return Err(format!(
            "{}: the constant-time check needs cycle-accurate simulation (simavr has no model; \
             yasimavr's AVRxt timings are approximations)",
            mcu.name
        ));
    }
    let count = o.number("--count", 100)?.max(2) as usize;
    let seed = o.number("--seed", 0xC7_C7)?;
    let jobs = o.number("--jobs", 2)?.max(1) as usize;
    let filter = o.value("--filter").unwrap_or("").to_lowercase();
    let no_build = o.flag("--no-build");
    let work: Vec<(Group, Vec<Kem>)> = Group::ALL
        .into_iter()
        .map(|g| {
            let ks = Kem::ALL
                .into_iter()
                .filter(|k| k.group() == g && k.name().contains(&filter))
                .collect::<Vec<_>>();
            (g, ks)
        })
        .filter(|(_, ks)| !ks.is_empty())
        .collect();
    if work.is_empty() {
        return Err(format!("no KEM matches --filter `{filter}`"));
    }
    // Build sequentially (one heavy build at a time), then simulate `jobs` images at once.
    if !no_build {
        for (g, _) in &work {
            avr::build_image(mcu, &avr::Image::group(*g))?;
        }
    }
    let start = std::time::Instant::now();
    let queue = Mutex::new(work.clone());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(work.len()) {
            s.spawn(|| loop {
                let Some((g, ks)) = queue.lock().expect("queue").pop() else {
                    break;
                };
                let r = run_group(mcu, g, &ks, count, seed, true);
                results.lock().expect("results").push((g, r));
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(g, _)| Group::ALL.iter().position(|x| x == g));
    let mut table = String::from(
        "| KEM | operation | inputs | min cycles | max cycles | timing | note |\n|---|---|---:|---:|---:|---|---|\n",
    );
    let (mut failures, mut summary) = (Vec::new(), Vec::new());
    for (_, r) in results {
        for (kem, res) in r? {
            let retry_note = if res.retries.is_empty() {
                String::new()
            } else {
                let list: Vec<String> = res
                    .retries
                    .iter()
                    .map(|(a, c)| format!("{a} attempts: {c} cycles"))
                    .collect();
                format!("{} input(s) retried, excluded ({})", res.retries.len(), list.join("; "))
            };
            row(&mut table, kem, "keygen", &res.keygen, &retry_note);
            row(&mut table, kem, "encaps", &res.encaps, "");
            row(&mut table, kem, "decaps (valid ct)", &res.decaps_valid, "");
            row(&mut table, kem, "decaps (random ct)", &res.decaps_invalid, "");
            let decaps = res.decaps_valid.merged(&res.decaps_invalid);
            for (op, st) in [("keygen", &res.keygen), ("encaps", &res.encaps), ("decaps", &decaps)] {
                if !st.constant() {
                    failures.push(format!("{} {op}: {}..{} cycles", kem.name(), st.min, st.max));
                }
            }
            for m in &res.mismatches {
                failures.push(format!("{} {m}: firmware output differs from the host", kem.name()));
            }
            summary.push((kem, res.retries.len()));
        }
    }
    print!("{table}");
    let excluded: usize = summary.iter().map(|s| s.1).sum();
    println!(
        "{count} inputs per operation, {} KEM variants, {excluded} retried key generation(s) excluded, {:.0} s",
        summary.len(),
        start.elapsed().as_secs_f64()
    );
    for f in &failures {
        eprintln!("FAIL {f}");
    }
    let checks = summary.len() * 3;
    println!(
        "{} passed, {} failed",
        checks - failures.len().min(checks),
        failures.len()
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} constant-time check(s) failed", failures.len()))
    }
}
