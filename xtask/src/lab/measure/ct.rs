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
//!
//! `--mcu atmega4808` checks the 4808's own builds (the sensor images at
//! opt-level "s", each KEM's own image at 3; the compact X25519 field) in yasimavr, by instruction traces of two inputs
//! per operation (the private `mega0` below).

use std::fmt::Write as _;
use std::sync::Mutex;

use avr_wire::kem::{compact_key_op_id, kem_op_id, CompactKeyOp, KemOp, TAPE_LEN};
use kem_registry::Kem;
use rand_core::Rng as _;

use crate::build::avr;
use crate::opts::Rng;
use crate::run::device::Device;
use crate::run::kems::{self, measured, Recorder, TestRng};
use crate::run::symbols;
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
    /// The MCU: atmega1284p (simavr: cycles and per-address counts over
    /// --count inputs), atmega4808 (yasimavr traces: per-address counts and
    /// cycles over two inputs, --count ignored)
    #[arg(long, default_value = "atmega1284p", value_parser = target::mcu)]
    pub mcu: target::Mcu,
    /// Seed of the inputs
    #[arg(long, default_value_t = 0xC7_C7)]
    pub seed: u64,
    /// Only KEM variants whose name contains this text
    #[arg(long, default_value = "")]
    pub filter: String,
    /// Only this KEM: a scheme of the registry (all its variants and
    /// suites, e.g. ml-kem-768) or one variant (e.g. ctru-light-sha3/kred2x)
    #[arg(long, value_parser = crate::target::kem_selector, conflicts_with = "filter")]
    pub kem: Option<String>,
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
        return mega0(o);
    }
    let count = o.count as usize;
    let seed = o.seed;
    let jobs = o.jobs as usize;
    let filter = crate::target::selection(&o.kem, &o.filter);
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

/// `ct --mcu atmega4808`. yasimavr has no instruction profile and no AVRxt
/// timing, so the check is on the instruction path: each operation runs on
/// two inputs one instruction at a time (`crate::run::yasim::yasim_measured_avrxt`),
/// and both runs must execute every address the same number of times in
/// the same number of cycles. The primitives (two random inputs each, the
/// scheme name `primitives` or a primitive's name selects them), each KEM
/// variant's operations (KAT records 0 and 1) and each sensor suite that
/// fits (the image's provisioned keys, two runs of randomness;
/// `kem-mqtt/<suite>`), by
/// `--filter`. CTRU-Light's key generation retries publicly when f is not
/// invertible: a pair whose tapes differ in length is reported, not compared.
/// `requests` on `image`'s build `b` in yasimavr, traced one instruction at a time.
fn trace_mega0(
    mcu: target::Mcu,
    b: &avr::Build,
    image: &target::Image,
    requests: &[(u8, Vec<u8>)],
) -> Result<Vec<crate::run::yasim::Measured>, String> {
    crate::run::yasim::yasim_measured_avrxt(mcu, &b.elf, requests, &image.target_dir(mcu).join("ct-requests.txt"))
}

fn mega0(o: &CtArgs) -> Result<(), String> {
    use avr_wire::primitives::PRIMITIVES;
    let (mcu, filter) = (o.mcu, crate::target::selection(&o.kem, &o.filter));
    let mut report = Vec::new();
    let mut failures = Vec::new();
    // Each result as it comes (a full run takes minutes), and in the summary.
    let mut record = |r: Result<String, String>| match r {
        Ok(line) => {
            println!("{line}");
            report.push(line);
        }
        Err(e) => {
            println!("FAIL {e}");
            failures.push(e);
        }
    };
    let build = |image: &target::Image| match o.no_build {
        true => avr::sizes(mcu, &image.elf(mcu)),
        false => avr::compile(mcu, image),
    };
    // Primitives.
    let selected: Vec<_> = PRIMITIVES
        .iter()
        .filter(|p| p.name.contains(&filter) || kems::PRIMITIVES_SCHEME.contains(&filter))
        .collect();
    if !selected.is_empty() {
        let image = target::Image::primitives();
        let b = build(&image)?;
        let mut rng = Rng::new(o.seed);
        let requests: Vec<(u8, Vec<u8>)> = selected
            .iter()
            .flat_map(|p| [0, 1].map(|_| (p.id, (0..p.request_len).map(|_| rng.next_u64() as u8).collect())))
            .collect();
        eprintln!("xtask: primitives on {} traced in yasimavr …", mcu.name);
        let r = trace_mega0(mcu, &b, &image, &requests).unwrap_or_else(|e| {
            record(Err(format!("primitives: {e}")));
            Vec::new()
        });
        for (i, p) in selected.iter().enumerate() {
            record(compare_runs(
                format!("primitives/{}", p.name),
                r.get(2 * i),
                r.get(2 * i + 1),
                false,
            ));
        }
    }
    // KEM operations: KAT records 0 and 1.
    for kem in Kem::ALL.into_iter().filter(|k| k.name().contains(&filter)) {
        let image = target::Image::kem(kem);
        let b = build(&image)?;
        if b.flash() > mcu.flash {
            record(Ok(format!("{}: does not fit the flash, not run", kem.name())));
            continue;
        }
        let cases = kems::kat_cases(kem, 2)?;
        let mut requests = Vec::new();
        for op in KemOp::ALL {
            for c in &cases {
                let r = &c.record;
                let payload = match op {
                    KemOp::Keygen => kems::request(kem, op, &[], &c.keygen_tape)?,
                    KemOp::Encaps => kems::request(kem, op, &r.pk, &c.encaps_tape)?,
                    KemOp::Decaps => kems::request(kem, op, &r.sk, &r.ct)?,
                };
                requests.push((kem_op_id(kem, op), payload));
            }
        }
        // The compact key's two operations (the sensor's ephemeral key):
        // keygen from each record's draws, decaps of its ciphertext.
        let mut compact_ops = Vec::new();
        let compact_keys = match kem.scheme().has_compact_key() {
            true => cases
                .iter()
                .map(|c| Ok(kems::compact_keygen(kem, &c.keygen_tape)?.unwrap_or_default()))
                .collect::<Result<Vec<_>, String>>()?,
            false => Vec::new(),
        };
        for op in CompactKeyOp::ALL {
            let Some(id) = compact_key_op_id(kem, op) else {
                break;
            };
            for (c, key) in cases.iter().zip(&compact_keys) {
                let data = match op {
                    CompactKeyOp::Keygen => &c.keygen_tape,
                    CompactKeyOp::Decaps => &c.record.ct,
                };
                requests.push((id, kems::compact_key_request(kem, op, key, data)?));
            }
            compact_ops.push(op);
        }
        eprintln!("xtask: {} traced in yasimavr …", kem.name());
        let r = match trace_mega0(mcu, &b, &image, &requests) {
            Ok(r) => r,
            Err(e) => {
                record(Err(format!("{}: {e}", kem.name())));
                continue;
            }
        };
        let retry = cases[0].keygen_tape.len() != cases[1].keygen_tape.len();
        for (i, op) in KemOp::ALL.into_iter().enumerate() {
            let public = op == KemOp::Keygen && retry;
            record(compare_runs(
                format!("{}/{}", kem.name(), op.name()),
                r.get(2 * i),
                r.get(2 * i + 1),
                public,
            ));
        }
        for (j, op) in compact_ops.into_iter().enumerate() {
            let i = KemOp::ALL.len() + j;
            record(compare_runs(
                format!("{}/{}", kem.name(), op.name()),
                r.get(2 * i),
                r.get(2 * i + 1),
                false,
            ));
        }
    }
    // Sensor suites: two seeds.
    for image in crate::run::sensor::images(mcu, &crate::target::Suites::new(None, &filter))? {
        let Some(&suite) = crate::run::sensor::suites_of(&image).last() else {
            continue;
        };
        let b = match build(&image) {
            Ok(b) if b.flash() <= mcu.flash => b,
            _ => {
                record(Ok(format!(
                    "kem-mqtt/{}: does not fit the flash, not run",
                    suite.name()
                )));
                continue;
            }
        };
        // Its static RAM and the stack the same code peaks at on the
        // ATmega1284p exceed the SRAM: the run would crash, and comparing
        // a crash's answers says nothing about timing.
        if let Some(need) = crate::mqtt::handshake::stack_need_1284p(suite).filter(|&n| b.ram() + n > mcu.sram) {
            record(Ok(format!(
                "kem-mqtt/{}: beyond the SRAM by the numbers ({} B static + {need} B of stack on the ATmega1284p > {} B), not run",
                suite.name(),
                b.ram(),
                mcu.sram
            )));
            continue;
        }
        // The image's provisioned keys, two runs of randomness.
        let seed = crate::run::sensor::SEED;
        let cases = [seed, seed + 1].map(|run| crate::run::sensor::prepare_with(suite, seed, run));
        // The second run's finish finds the first run's session in its
        // static and wipes it (a public fact: whether a session came
        // before); a first handshake before the two compared puts both in
        // that state.
        const WARM_UP: usize = 3;
        let mut requests = Vec::new();
        for c in std::iter::once(&cases[0]).chain(&cases) {
            let c = c.as_ref().map_err(Clone::clone)?;
            requests.push((avr_wire::mqtt::OP_START, c.start_request.clone()));
            for (op, r) in avr_wire::mqtt::FINISH_OPS.into_iter().zip(&c.finish_requests) {
                requests.push((op, r.clone()));
            }
        }
        eprintln!("xtask: kem-mqtt/{} traced in yasimavr …", suite.name());
        let r = match trace_mega0(mcu, &b, &image, &requests) {
            Ok(r) => r,
            Err(e) => {
                record(Err(format!("kem-mqtt/{}: {e}", suite.name())));
                continue;
            }
        };
        if r.len() < WARM_UP + 6 {
            record(Ok(format!(
                "kem-mqtt/{}: stopped early (does not fit the SRAM), not compared",
                suite.name()
            )));
            continue;
        }
        let retry = match &cases {
            [Ok(a), Ok(b)] => a.tape_len != b.tape_len,
            _ => false,
        };
        // Both handshakes must have completed (the broker accepts them).
        let mut completed = true;
        for (k, case) in cases.into_iter().enumerate() {
            let at = WARM_UP + 3 * k;
            let checked = case.and_then(|c| c.check(&r[at].body, &r[at + 1].body, &r[at + 2].body));
            if let Err(e) = checked {
                record(Err(format!("kem-mqtt/{}, run {k}: {e}", suite.name())));
                completed = false;
            }
        }
        if !completed {
            continue;
        }
        for (i, step) in ["start", "finish (first part)", "finish (rest)"]
            .into_iter()
            .enumerate()
        {
            record(compare_runs(
                format!("kem-mqtt/{}/{step}", suite.name()),
                r.get(WARM_UP + i),
                r.get(WARM_UP + 3 + i),
                i == 0 && retry,
            ));
        }
    }
    match failures.len() {
        0 if report.is_empty() => Err(format!("nothing on {} matches --filter `{filter}`", mcu.name)),
        0 => Ok(()),
        n => Err(format!("{n} operation(s) not constant on {}", mcu.name)),
    }
}

/// Two traced runs of one operation (`ct --mcu atmega4808`): a report line,
/// or the failure. `public`: inputs whose paths may differ for a public
/// reason (CTRU-Light's key generation retry) are not compared.
fn compare_runs(
    what: String,
    a: Option<&crate::run::yasim::Measured>,
    b: Option<&crate::run::yasim::Measured>,
    public: bool,
) -> Result<String, String> {
    let (Some(a), Some(b)) = (a, b) else {
        return Err(format!("{what}: no reply"));
    };
    if a.counts.is_empty() || b.counts.is_empty() {
        return Err(format!("{what}: not traced"));
    }
    if a.counts != b.counts {
        if public {
            return Ok(format!("{what}: public retry, not compared"));
        }
        let first = a
            .counts
            .iter()
            .zip(&b.counts)
            .find(|(x, y)| x != y)
            .map_or(0, |(x, _)| x[0]);
        return Err(format!(
            "{what}: the instruction path depends on the input (first difference at 0x{first:x})"
        ));
    }
    // Equal counts and cycles at every address: the same path and time. (The
    // fast-mode timer counts are not compared: they read a few cycles low
    // on long windows, `crate::run::avrxt`.)
    let n: u64 = a.counts.iter().map(|c| c[1]).sum();
    let cycles: u64 = a.counts.iter().map(|c| c[2]).sum();
    Ok(format!(
        "{what}: constant ({cycles} cycles in the trace, {n} instructions, on both inputs)"
    ))
}
