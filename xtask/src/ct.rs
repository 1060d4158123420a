//! `cargo xtask ct`: constant-time check of every KEM variant in simavr.
//!
//! For each KEM, N random key generations, N encapsulations (each to a
//! different key) and N decapsulations (each under a different key; even
//! inputs valid ciphertexts, odd ones random bytes) run on the firmware; every
//! result is compared with the host, and each operation must take exactly the
//! same number of cycles on every input (min == max) and run every
//! instruction address the same number of times (the simulator's
//! per-address counts of the whole call; valid and random ciphertexts
//! alike for decapsulation). CTRU-Light key
//! generation retries when f is not invertible; a retry is public (it only
//! discards a candidate key), so such inputs are detected on the host (their
//! tape is longer than one attempt's) and excluded from the comparison, and
//! reported with their cycle counts. Every varying operation is explained:
//! its fastest and slowest inputs run again with the instruction profile on,
//! and the functions whose instruction counts differ are named.

use std::fmt::Write as _;
use std::sync::Mutex;

use firmware::kem::{kem_op_id, Kem, KemOp, TAPE_LEN};
use rand_core::Rng as _;

use crate::avr;
use crate::device::Device;
use crate::kems::{self, measured, Recorder, TestRng};
use crate::opts::Rng;
use crate::symbols;
use crate::target;

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
    /// Request payloads of a fastest and a slowest input (for `--explain`).
    pub extremes: Option<(Vec<u8>, Vec<u8>)>,
    /// Per-address instruction counts of the first input's call.
    pub trace: Option<Vec<u32>>,
    /// The first address whose count differed from the first input's.
    pub trace_differs: Option<u32>,
}

impl Stats {
    fn add(&mut self, cycles: u64, stack: u32, request: &[u8]) {
        if self.n == 0 {
            self.min = cycles;
            self.max = cycles;
            self.extremes = Some((request.to_vec(), request.to_vec()));
        }
        self.n += 1;
        if let Some((lo, hi)) = self.extremes.as_mut() {
            if cycles < self.min {
                *lo = request.to_vec();
            }
            if cycles > self.max {
                *hi = request.to_vec();
            }
        }
        self.min = self.min.min(cycles);
        self.max = self.max.max(cycles);
        self.stack = self.stack.max(stack);
    }

    /// Compares one input's per-address counts with the first input's.
    fn add_trace(&mut self, counts: Vec<u32>) {
        match &self.trace {
            None => self.trace = Some(counts),
            Some(first) => {
                if self.trace_differs.is_none() {
                    self.trace_differs = symbols::first_difference(first, &counts);
                }
            }
        }
    }

    fn merged(&self, o: &Stats) -> Stats {
        if o.n == 0 {
            return self.clone();
        }
        if self.n == 0 {
            return o.clone();
        }
        let pick = |a: &Stats, b: &Stats, lo: bool| {
            let (x, y) = (
                a.extremes.clone().unwrap_or_default(),
                b.extremes.clone().unwrap_or_default(),
            );
            match (lo, a.min <= b.min, a.max >= b.max) {
                (true, true, _) => x.0,
                (true, false, _) => y.0,
                (false, _, true) => x.1,
                (false, _, false) => y.1,
            }
        };
        let across = match (&self.trace, &o.trace) {
            (Some(a), Some(b)) => symbols::first_difference(a, b),
            _ => None,
        };
        Stats {
            n: self.n + o.n,
            min: self.min.min(o.min),
            max: self.max.max(o.max),
            stack: self.stack.max(o.stack),
            extremes: Some((pick(self, o, true), pick(self, o, false))),
            trace: self.trace.clone(),
            trace_differs: self.trace_differs.or(o.trace_differs).or(across),
        }
    }

    /// Constant time: every input took the same number of cycles and ran
    /// every instruction address the same number of times (a branch on a
    /// secret that costs the same cycles both ways still shows).
    pub fn constant(&self) -> bool {
        self.n > 0 && self.min == self.max && self.trace_differs.is_none()
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
    /// `--explain`: where the fastest and slowest input of each varying operation diverge.
    pub explanations: Vec<String>,
}

/// Runs `call` with the simulator's per-address instruction counts on and
/// returns them with its result (the whole call: request, operation, reply).
fn traced<T>(dev: &mut Device, call: impl FnOnce(&mut Device) -> Result<T, String>) -> Result<(T, Vec<u32>), String> {
    dev.set_profiling(true);
    dev.take_profile();
    let r = call(dev);
    let counts = dev.take_profile();
    dev.set_profiling(false);
    Ok((r?, counts))
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
        let req = kems::request(kem, KemOp::Keygen, &[], &tape)?;
        let ((r, m), counts) = traced(dev, |d| measured(d, id, |d| kems::parse_reply(d.call(id, &req)?)))?;
        if !r.ok || r.body != [&pk[..], &sk[..]].concat() {
            res.mismatches.push(format!("keygen input {}", keys.len()));
        }
        if tape.len() > nominal {
            res.retries.push((attempts, m.cycles));
            continue;
        }
        res.keygen.add(m.cycles, m.stack, &req);
        res.keygen.add_trace(counts);
        keys.push((pk, sk));
    }
    // Encapsulation to every key; decapsulation under every key, valid and invalid in turn.
    for (i, (pk, sk)) in keys.iter().enumerate() {
        let (ct, ss) = kems::encaps(kem, pk, &mut rng)?;
        let tape = rng.take();
        let id = kem_op_id(kem, KemOp::Encaps);
        let req = kems::request(kem, KemOp::Encaps, pk, &tape)?;
        let ((r, m), counts) = traced(dev, |d| measured(d, id, |d| kems::parse_reply(d.call(id, &req)?)))?;
        if !r.ok || r.body != [&ct[..], &ss[..]].concat() {
            res.mismatches.push(format!("encaps input {i}"));
        }
        res.encaps.add(m.cycles, m.stack, &req);
        res.encaps.add_trace(counts);
        let (ct, want, stats) = if i % 2 == 0 {
            (ct, ss, &mut res.decaps_valid)
        } else {
            let mut junk = vec![0u8; kem.ct_len()];
            rng.fill_bytes(&mut junk);
            rng.take();
            let want = kems::decaps(kem, sk, &junk)?;
            (junk, want, &mut res.decaps_invalid)
        };
        let id = kem_op_id(kem, KemOp::Decaps);
        let req = kems::request(kem, KemOp::Decaps, sk, &ct)?;
        let ((got, m), counts) = traced(dev, |d| measured(d, id, |d| d.call(id, &req)))?;
        if got != want {
            res.mismatches.push(format!("decaps input {i}"));
        }
        stats.add(m.cycles, m.stack, &req);
        stats.add_trace(counts);
    }
    Ok(res)
}

/// Runs the fastest and slowest request of `op` with the instruction profile on
/// and names the functions whose instruction counts differ.
fn explain(
    dev: &mut Device,
    (syms, show_pcs): (&[(u32, u32, String)], bool),
    id: u8,
    what: &str,
    st: &Stats,
) -> Result<String, String> {
    let Some((lo, hi)) = &st.extremes else {
        return Ok(String::new());
    };
    let mut profile = |req: &[u8]| -> Result<Vec<u32>, String> {
        dev.set_profiling(true);
        dev.call(id, req)?;
        let p = dev.take_profile();
        dev.set_profiling(false);
        dev.take_markers();
        Ok(p)
    };
    let (a, b) = (profile(lo)?, profile(hi)?);
    let mut per_fn: std::collections::BTreeMap<&str, (i64, u64)> = Default::default();
    let mut pcs = Vec::new();
    for (w, (x, y)) in a.iter().zip(&b).enumerate() {
        if x == y {
            continue;
        }
        let addr = 2 * w as u32;
        pcs.push((addr, *x, *y));
        let name = symbols::function_at(syms, addr);
        let e = per_fn.entry(name).or_default();
        e.0 += *y as i64 - *x as i64;
        e.1 += (*y as i64 - *x as i64).unsigned_abs();
    }
    let mut v: Vec<_> = per_fn.into_iter().collect();
    v.sort_by_key(|(_, (_, abs))| std::cmp::Reverse(*abs));
    let mut s = format!(
        "{what}: {} vs {} cycles; instructions executed, slowest minus fastest input, by function:\n",
        st.min, st.max
    );
    for (name, (net, abs)) in v.iter().take(8) {
        let _ = writeln!(s, "    {net:+8} (|Δ| {abs:>6})  {name}");
    }
    if show_pcs {
        for (addr, x, y) in pcs.iter().take(64) {
            let _ = writeln!(s, "      pc 0x{addr:05x}: {x} → {y}");
        }
    }
    Ok(s)
}

fn run_image(
    mcu: target::Mcu,
    image: &target::Image,
    kems: &[Kem],
    (count, seed, explain_varying, show_pcs, profile): (usize, u64, bool, bool, bool),
    no_build: bool,
) -> Result<Vec<(Kem, KemResult)>, String> {
    let elf = avr::image_elf(mcu, image, no_build)?;
    let syms = if explain_varying || profile {
        symbols::symbols(&elf)?
    } else {
        Vec::new()
    };
    let mut dev = Device::open(&elf, mcu.name)?;
    let mut out = Vec::new();
    for &kem in kems {
        let mut r = run_kem(&mut dev, kem, count, seed)?;
        if profile {
            for (op, what, st) in [
                (KemOp::Keygen, "keygen", &r.keygen),
                (KemOp::Encaps, "encaps", &r.encaps),
                (KemOp::Decaps, "decaps", &r.decaps_valid),
            ] {
                if let Some((req, _)) = &st.extremes {
                    let p = symbols::profile_top(
                        &mut dev,
                        &syms,
                        kem_op_id(kem, op),
                        &format!("{} {what}", kem.name()),
                        req,
                    )?;
                    eprint!("{p}");
                }
            }
        }
        if explain_varying {
            let decaps = r.decaps_valid.merged(&r.decaps_invalid);
            for (op, what, st) in [
                (KemOp::Keygen, "keygen", &r.keygen),
                (KemOp::Encaps, "encaps", &r.encaps),
                (KemOp::Decaps, "decaps", &decaps),
            ] {
                if !st.constant() {
                    let e = explain(&mut dev, (&syms, show_pcs), kem_op_id(kem, op), what, st)?;
                    r.explanations.push(e);
                }
            }
        }
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

/// Options of `cargo xtask ct`.
#[derive(clap::Parser, Debug)]
pub struct CtArgs {
    /// Random inputs per operation (at least 2)
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..))]
    pub count: u64,
    /// The MCU (cycle-accurate simulation: atmega1284p)
    #[arg(long, default_value = "atmega1284p", value_parser = target::mcu)]
    pub mcu: target::Mcu,
    /// Seed of the inputs
    #[arg(long, default_value_t = 0xC7_C7)]
    pub seed: u64,
    /// Only KEM variants whose name contains this text
    #[arg(long, default_value = "")]
    pub filter: String,
    /// Images simulated at once
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: u64,
    /// Print the PCs whose instruction counts differ
    #[arg(long)]
    pub explain: bool,
    /// Print where each operation spends its instructions
    #[arg(long)]
    pub profile: bool,
    /// Use the images already built
    #[arg(long)]
    pub no_build: bool,
}

/// `cargo xtask ct [--count N] [--mcu M] [--seed S] [--filter S] [--jobs J] [--explain] [--profile] [--no-build]`.
///
/// Every operation whose cycles vary is re-run on its fastest and slowest
/// input with the simulator's instruction profile, and the functions whose
/// instruction counts differ are printed (`--explain`: with the PCs).
pub fn run(o: &CtArgs) -> Result<(), String> {
    // Varying operations are always explained by function; `--explain` adds the PCs;
    // `--profile` prints where each operation spends its instructions.
    let explain_varying = true;
    let show_pcs = o.explain;
    let profile = o.profile;
    let mcu = o.mcu;
    if !mcu.simulated {
        return Err(format!(
            "{}: the constant-time check needs cycle-accurate simulation (simavr has no model; \
             yasimavr's AVRxt timings are approximations)",
            mcu.name
        ));
    }
    let count = o.count as usize;
    let seed = o.seed;
    let jobs = o.jobs as usize;
    let filter = o.filter.to_lowercase();
    let no_build = o.no_build;
    let work = target::kem_images_matching(mcu, &filter, no_build);
    if work.is_empty() {
        return Err(format!("no KEM matches --filter `{filter}`"));
    }
    // Build sequentially (one heavy build at a time), then simulate `jobs` images at once.
    if !no_build {
        for (image, _) in &work {
            avr::build_image(mcu, image)?;
        }
    }
    let start = std::time::Instant::now();
    let queue = Mutex::new(work.iter().enumerate().rev().collect::<Vec<_>>());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(work.len()) {
            s.spawn(|| loop {
                let Some((i, (image, ks))) = queue.lock().expect("queue").pop() else {
                    break;
                };
                let r = run_image(mcu, image, ks, (count, seed, explain_varying, show_pcs, profile), true);
                results.lock().expect("results").push((i, r));
            });
        }
    });
    let mut results = results.into_inner().expect("results");
    results.sort_by_key(|(i, _)| *i);
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
                    let at = st
                        .trace_differs
                        .map(|a| format!(", instruction counts first differ at {a:#x}"))
                        .unwrap_or_default();
                    failures.push(format!("{} {op}: {}..{} cycles{at}", kem.name(), st.min, st.max));
                }
            }
            for e in &res.explanations {
                eprint!("{}: {e}", kem.name());
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
