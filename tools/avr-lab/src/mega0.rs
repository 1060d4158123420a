//! ATmega4808 (megaAVR-0) runs in yasimavr: KAT record 0 of every KEM image
//! and what fits (the link support is `mega0_link`).

use std::path::Path;

use avr_wire::frame::{timer_cycles, OP_CYCLES, OP_EMPTY, OP_STACK, STACK_OVERFLOW, TIMERS_LEN};
use avr_wire::kem::{kem_op_id, KemOp};
use kem_registry::Kem;

use crate::target;
use crate::{avr, kems, util};

/// SRAM a sensor or KEM image must leave free beyond its static data and
/// peak stack to count as fitting (issue #25): room for what the painted
/// measure cannot see and for the application around the KEM.
pub const SPARE_SRAM: u32 = 512;

/// Why a KEM image does or does not fit the MCU, from its sizes and the
/// stack its operations measured.
fn fit_note(b: &avr::Build, stack: Option<u32>) -> (bool, String) {
    let m = b.mcu;
    let mut notes = Vec::new();
    let flash_ok = b.flash() <= m.flash;
    if !flash_ok {
        notes.push(format!("flash {} B > {} B", b.flash(), m.flash));
    }
    let free = m.sram.saturating_sub(b.ram());
    let sram_ok = match stack {
        Some(s) => s + SPARE_SRAM <= free,
        None => b.ram() < m.sram,
    };
    if let Some(s) = stack {
        let spare = m.sram as i64 - (b.ram() + s) as i64;
        let short = SPARE_SRAM as i64;
        notes.push(format!(
            "static RAM {} B + peak stack {s} B = {} B of {} B, {spare} B spare{}",
            b.ram(),
            b.ram() + s,
            m.sram,
            if spare < short {
                format!(" (less than the {short} B an image keeps)")
            } else {
                String::new()
            }
        ));
    } else {
        notes.push(format!("static RAM {} B of {} B", b.ram(), m.sram));
    }
    (flash_ok && sram_ok, notes.join("; "))
}

/// `sim-test --mcu atmega4808 --kat 1`: one image per KEM variant (48 KB
/// flash cannot hold more); each one that fits the flash runs KAT record 0
/// (keygen, encaps, decaps, byte for byte) in yasimavr, with its painted
/// stack; prints what fits and what does not, with the numbers. A crash or
/// a stack overflow into static data counts as "does not fit", not as a
/// failure, unless `require_fit` (CI: every KEM must fit the 4808). Fitting
/// means [`SPARE_SRAM`] bytes left beside static RAM and peak stack.
/// With `record`, the table also goes to `benchmarks/<mcu>/kem-fit.md`, which
/// `docs/benchmarks.md` includes (`cargo xtask bench --mcu atmega4808`).
pub fn kat(mcu: target::Mcu, filter: &str, no_build: bool, require_fit: bool, record: bool) -> Result<(), String> {
    let (mut passed, mut failed, mut no_fit) = (0u32, 0u32, 0u32);
    let mut table = String::from(
        "| KEM | flash B | static RAM B | KAT record 0 | cycles K/E/D | AVRxt cycles K/E/D | painted stack K/E/D B | fits |\n|---|---:|---:|---|---|---|---|---|\n",
    );
    for kem in Kem::ALL.into_iter().filter(|k| k.name().contains(filter)) {
        let image = target::Image::kem(kem);
        let b = if no_build {
            avr::sizes(mcu, &image.elf(mcu))?
        } else {
            avr::compile(mcu, &image)?
        };
        if b.flash() > mcu.flash {
            no_fit += 1;
            let (_, note) = fit_note(&b, None);
            table.push_str(&format!(
                "| {} | {} | {} | not run | – | – | – | no: {note} |\n",
                kem.name(),
                b.flash(),
                b.ram()
            ));
            continue;
        }
        let (replies, per_op) = kat0(mcu, kem, &image, &b.elf, record)?;
        let ok = replies.len() == 3 && per_op.iter().all(|&x| x);
        let verdict = if ok {
            "reproduced".to_string()
        } else if replies.is_empty() {
            "no reply (crashed)".to_string()
        } else {
            let names = ["keygen", "encaps", "decaps"];
            let v: Vec<String> = (0..3)
                .map(|i| format!("{} {}", names[i], if per_op[i] { "ok" } else { "WRONG" }))
                .collect();
            v.join(", ")
        };
        let stacks: Vec<u32> = replies.iter().filter_map(|m| m.stack).map(u32::from).collect();
        let cycles: Vec<String> = replies
            .iter()
            .map(|m| m.cycles.map_or("–".into(), |c| c.to_string()))
            .collect();
        let avrxt: Vec<String> = replies
            .iter()
            .map(|m| m.avrxt.map_or("–".into(), |c| c.to_string()))
            .collect();
        let peak = stacks.iter().copied().max().filter(|&s| s != STACK_OVERFLOW as u32);
        let overflow = stacks.contains(&(STACK_OVERFLOW as u32));
        let (fits, mut note) = fit_note(&b, peak.filter(|_| ok && !overflow));
        if overflow {
            note.push_str("; the stack overflowed into static data");
        }
        // A crash or a stack that ran into static data is the SRAM limit, not a wrong result.
        let sram_limit = !ok && (overflow || replies.is_empty());
        if sram_limit {
            no_fit += 1;
            note.push_str(&format!(
                "; {} B of SRAM left for the stack was not enough",
                mcu.sram.saturating_sub(b.ram())
            ));
        }
        if ok {
            passed += 1;
        } else if !sram_limit {
            failed += 1;
            eprintln!(
                "FAIL {} KAT record 0 on {}: {} replies",
                kem.name(),
                mcu.name,
                replies.len()
            );
        }
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {}: {note} |\n",
            kem.name(),
            b.flash(),
            b.ram(),
            verdict,
            cycles.join("/"),
            avrxt.join("/"),
            if stacks.len() == 3 {
                let show = |s: u32| {
                    if s == STACK_OVERFLOW as u32 {
                        format!("overflow (> {} B free)", mcu.sram - b.ram())
                    } else {
                        s.to_string()
                    }
                };
                format!("{}/{}/{}", show(stacks[0]), show(stacks[1]), show(stacks[2]))
            } else {
                "–".into()
            },
            if fits && ok { "yes" } else { "no" }
        ));
    }
    print!("{table}");
    let legend = "(yasimavr; cycles by the on-chip timers between the markers, UART transfer excluded, \
         yasimavr's classic-core (AVRe+) instruction timings; AVRxt: the same windows on the 4808's \
         AVRxt core, priced from an instruction trace and checked against the timers (`tools/avr-lab/src/avrxt.rs`; \
         loads from the mapped flash not charged their extra cycle); painted-stack measure; \
         flash = text + data image + rodata)";
    println!("{legend}");
    if record {
        crate::records::record_fit_table(mcu.name, "kem-fit", &format!("{table}\n{legend}\n"))?;
    }
    println!("{no_fit} KEM(s) do not fit {} (SRAM)", mcu.name);
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        return Err(format!("{failed} KAT run(s) failed on {}", mcu.name));
    }
    if require_fit && no_fit > 0 {
        return Err(format!("{no_fit} KEM(s) do not fit {} (--require-fit)", mcu.name));
    }
    Ok(())
}

/// KAT record 0 of `kem` (keygen, encaps, decaps) on its built image `elf`
/// in yasimavr, with `avrxt` also traced: the replies, and per operation
/// whether it reproduced the record's bytes.
pub fn kat0(
    mcu: target::Mcu,
    kem: Kem,
    image: &target::Image,
    elf: &Path,
    avrxt: bool,
) -> Result<(Vec<Measured>, Vec<bool>), String> {
    let case = kems::kat_cases(kem, 1)?.remove(0);
    let r = &case.record;
    let requests = [
        (
            KemOp::Keygen,
            kems::request(kem, KemOp::Keygen, &[], &case.keygen_tape)?,
        ),
        (
            KemOp::Encaps,
            kems::request(kem, KemOp::Encaps, &r.pk, &case.encaps_tape)?,
        ),
        (KemOp::Decaps, kems::request(kem, KemOp::Decaps, &r.sk, &r.ct)?),
    ]
    .map(|(op, payload)| (kem_op_id(kem, op), payload));
    eprintln!("xtask: {} in yasimavr …", kem.name());
    let replies = run_requests(
        mcu,
        elf,
        &requests,
        &image.target_dir(mcu).join("kat0-requests.txt"),
        avrxt,
    )?;
    let want = [
        [&[0u8, case.keygen_tape.len() as u8, 0][..], &r.pk, &r.sk].concat(),
        [&[0u8, case.encaps_tape.len() as u8, 0][..], &r.ct, &r.ss].concat(),
        r.ss.clone(),
    ];
    let per_op: Vec<bool> = (0..3)
        .map(|i| replies.get(i).map(|m| &m.body) == Some(&want[i]))
        .collect();
    Ok((replies, per_op))
}

/// One measured request's outcome in yasimavr.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Reply payload (harness status Ok).
    pub body: Vec<u8>,
    /// Painted stack of its window ([`STACK_OVERFLOW`] if it ran into static data).
    pub stack: Option<u16>,
    /// Cycles of its window by the on-chip timers, minus the empty window's:
    /// no UART transfer inside, the same quantity as the ATmega1284p's
    /// marker counts (where the two agree exactly; `Device::check_timers`).
    pub cycles: Option<u64>,
    /// The same window on the AVRxt core, priced from an instruction trace
    /// ([`yasim_measured_avrxt`], `crate::avrxt`); `None` untraced.
    pub avrxt: Option<u64>,
    /// The window's instructions per address, `[address, executions,
    /// cycles]` (traced runs only): equal for every input of a
    /// constant-time operation.
    pub counts: Vec<[u64; 3]>,
}

/// Runs each `(op, payload)` request, a measured op, on the firmware `elf`
/// in yasimavr (`firmware/avr/yasim_run.py`, request file in `scratch`),
/// each followed by its painted stack and timer reading; the empty window's
/// timer reading comes first, for calibration. Returns the replies in order
/// while the harness answered Ok: fewer than requested when the firmware
/// crashed or refused one (a handler's own error is in its payload).
pub fn yasim_measured(
    mcu: target::Mcu,
    elf: &Path,
    requests: &[(u8, Vec<u8>)],
    scratch: &Path,
) -> Result<Vec<Measured>, String> {
    let root = util::workspace_root();
    let mut lines = format!(
        "{OP_EMPTY:02x}
{OP_CYCLES:02x}
"
    );
    for (op, payload) in requests {
        lines.push_str(&format!(
            "{op:02x} {}
{OP_STACK:02x}
{OP_CYCLES:02x}
",
            hex(payload)
        ));
    }
    std::fs::write(scratch, lines).map_err(|e| format!("cannot write {}: {e}", scratch.display()))?;
    let out = crate::setup::yasim(mcu.name)?
        .arg(root.join("firmware/avr/yasim_run.py"))
        .arg(elf)
        .arg(scratch)
        .output()
        .map_err(|e| format!("cannot run yasimavr: {e}"))?;
    if !out.status.success() {
        // The run stopped early (the replies say how far it got).
        if let Some(l) = String::from_utf8_lossy(&out.stderr).lines().last() {
            eprintln!("xtask: yasimavr: {l}");
        }
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut ok: Vec<Vec<u8>> = Vec::new();
    for l in text.lines() {
        // `STATUS PAYLOAD CYCLES`, one space apart (an empty payload leaves two).
        let mut it = l.split(' ');
        if it.next() != Some("00") {
            break;
        }
        let payload = it.next().unwrap_or("");
        ok.push(
            base16ct::mixed::decode_vec(payload)
                .map_err(|_| format!("yasimavr replied {l:?}: its payload is not hex"))?,
        );
    }
    let timers = |r: Option<&Vec<u8>>| {
        r.and_then(|t| <[u8; TIMERS_LEN]>::try_from(t.as_slice()).ok())
            .map(timer_cycles)
    };
    let empty = timers(ok.get(1));
    Ok(ok
        .get(2..)
        .unwrap_or(&[])
        .chunks(3)
        .map(|c| Measured {
            body: c[0].clone(),
            stack: c
                .get(1)
                .filter(|s| s.len() == 2)
                .map(|s| u16::from_le_bytes([s[0], s[1]])),
            cycles: timers(c.get(2)).zip(empty).map(|(t, e)| t.saturating_sub(e)),
            avrxt: None,
            counts: Vec::new(),
        })
        .collect())
}

/// [`yasim_measured`], or with `avrxt` [`yasim_measured_avrxt`] (the
/// recorded runs of `cargo xtask bench --mcu atmega4808`).
pub fn run_requests(
    mcu: target::Mcu,
    elf: &Path,
    requests: &[(u8, Vec<u8>)],
    scratch: &Path,
    avrxt: bool,
) -> Result<Vec<Measured>, String> {
    match avrxt {
        true => yasim_measured_avrxt(mcu, elf, requests, scratch),
        false => yasim_measured(mcu, elf, requests, scratch),
    }
}

/// [`yasim_measured`], then the same requests again one instruction at a
/// time (`firmware/avr/yasim_trace.py`, trace in `scratch`'s directory):
/// each window's AVRxt count ([`crate::avrxt`], checked against its timer
/// count). Tracing runs at about 1.5 M instructions a second.
pub fn yasim_measured_avrxt(
    mcu: target::Mcu,
    elf: &Path,
    requests: &[(u8, Vec<u8>)],
    scratch: &Path,
) -> Result<Vec<Measured>, String> {
    let mut measured = yasim_measured(mcu, elf, requests, scratch)?;
    let root = util::workspace_root();
    let trace_file = scratch.with_extension("trace.json");
    let out = crate::setup::yasim(mcu.name)?
        .arg(root.join("firmware/avr/yasim_trace.py"))
        .arg(elf)
        .arg(scratch)
        .arg(&trace_file)
        .output()
        .map_err(|e| format!("cannot run yasimavr: {e}"))?;
    let text = std::fs::read_to_string(&trace_file).map_err(|e| format!("{}: {e}", trace_file.display()))?;
    let traces: Vec<crate::avrxt::Trace> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", trace_file.display()))?;
    // The request file's lines: the empty window and its timers, then per
    // request the op, its stack and its timers.
    let line_of = |i: usize| 2 + 3 * i;
    if traces.len() < line_of(measured.len()) {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "the traced run stopped early: {}",
            why.lines().last().unwrap_or("")
        ));
    }
    let d = crate::avrxt::Disassembly::load(elf)?;
    let empty = crate::avrxt::price(&d, &traces[0])?;
    for (i, m) in measured.iter_mut().enumerate() {
        let Some(cycles) = m.cycles else { continue };
        let trace = &traces[line_of(i)];
        if trace.op != requests[i].0 {
            return Err(format!(
                "trace {} is of op 0x{:02x}, not 0x{:02x}",
                line_of(i),
                trace.op,
                requests[i].0
            ));
        }
        let window = crate::avrxt::price(&d, trace)?;
        m.counts = trace.pcs.clone();
        m.avrxt = Some(
            crate::avrxt::avrxt_cycles(cycles, &window, &empty)
                .map_err(|e| format!("request {i} (op 0x{:02x}): {e}", requests[i].0))?,
        );
    }
    Ok(measured)
}

/// A row measured on `mcu` in yasimavr: its toolchain (the MCU's opt-level),
/// the revision, and the simulator and cycle source; the figures are left
/// for the caller (`stack_bytes` is the painted measure: yasimavr has no SP
/// tracking).
pub fn yasim_record(
    mcu: target::Mcu,
    scheme: &str,
    variant: &str,
    operation: &str,
    stack: Option<u32>,
) -> crate::records::Record {
    let toolchain = crate::records::toolchain();
    crate::records::Record {
        stack_bytes: stack.unwrap_or(0),
        stack_bytes_painted: stack,
        toolchain: match mcu.opt_level {
            Some(level) => toolchain.replace("opt-level 3", &format!("opt-level {level}")),
            None => toolchain,
        },
        git_revision: crate::opts::git_revision(),
        simulator: format!(
            "yasimavr {} @ 20 MHz, classic-core timings; cycles by the on-chip timers",
            mcu.name
        ),
        ..crate::records::Record::unmeasured(mcu.name, scheme, variant, operation)
    }
}

/// Keccak-f\[1600\], Ascon-p\[12\] and X25519 on `mcu` in yasimavr (the
/// `primitives` image): two random inputs each, output checked against the
/// host's reference, I/O-free cycles by the on-chip timers. With `record`,
/// the rows go to `benchmarks/<mcu>/primitives.json`.
pub fn primitives(mcu: target::Mcu, filter: &str, no_build: bool, record: bool) -> Result<(), String> {
    use avr_wire::primitives::PRIMITIVES;
    let selected: Vec<_> = PRIMITIVES
        .iter()
        .filter(|p| p.name.contains(filter) || kems::PRIMITIVES_SCHEME.contains(filter))
        .collect();
    if selected.is_empty() {
        return Ok(());
    }
    let image = target::Image::primitives();
    let b = if no_build {
        avr::sizes(mcu, &image.elf(mcu))?
    } else {
        avr::compile(mcu, &image)?
    };
    let mut rng = crate::opts::Rng::new(0x5052_494D);
    let requests: Vec<(u8, Vec<u8>)> = selected
        .iter()
        .flat_map(|p| [0, 1].map(|_| (p.id, (0..p.request_len).map(|_| rng.next_u64() as u8).collect())))
        .collect();
    eprintln!("xtask: primitives on {} in yasimavr …", mcu.name);
    let replies = run_requests(
        mcu,
        &b.elf,
        &requests,
        &image.target_dir(mcu).join("primitives-requests.txt"),
        record,
    )?;
    let graph = avr::CallGraph::load(&b.elf)?;
    let mut records = Vec::new();
    for (i, p) in selected.iter().enumerate() {
        let runs = [2 * i, 2 * i + 1].map(|j| replies.get(j));
        let mut cycles = Vec::new();
        let mut avrxt = Vec::new();
        let mut stack = 0;
        for (j, run) in runs.iter().enumerate() {
            let m = run.ok_or_else(|| format!("{}: no reply from the {} (crashed?)", p.name, mcu.name))?;
            if Some(&m.body) != kems::primitive_reference(p.id, &requests[2 * i + j].1).as_ref() {
                return Err(format!(
                    "{} on {}: the output differs from the host's reference",
                    p.name, mcu.name
                ));
            }
            cycles.push(m.cycles.ok_or_else(|| format!("{}: no timer reading", p.name))?);
            avrxt.extend(m.avrxt);
            stack = stack.max(m.stack.unwrap_or(0) as u32);
        }
        println!(
            "{} on {}: {} cycles (I/O excluded, classic-core timings){}, stack {stack} B",
            p.name,
            mcu.name,
            cycles[0],
            avrxt
                .first()
                .map_or(String::new(), |x| format!(", {x} on the AVRxt core"))
        );
        let (published, reference) = crate::published::primitive(p.name).unzip();
        let mut r = yasim_record(mcu, kems::PRIMITIVES_SCHEME, "avr-asm", p.name, Some(stack));
        r.cycles = cycles.iter().copied().max().unwrap_or(0);
        r.cycles_avrxt = avrxt.iter().copied().max();
        // What the handler reaches (no profile in yasimavr): the primitive and the I/O around it.
        r.code_bytes = graph
            .find("primitives", p.name.split('-').next().unwrap_or(p.name))
            .map_or(0, |f| graph.reachable_size(f));
        r.static_ram_bytes = Some(b.ram());
        r.published_cycles = published;
        r.published_reference = reference.map(Into::into);
        records.push(r);
    }
    if record {
        crate::records::save(mcu.name, kems::PRIMITIVES_SCHEME, &records, false)?;
    }
    Ok(())
}

fn hex(b: &[u8]) -> String {
    base16ct::lower::encode_string(b)
}
