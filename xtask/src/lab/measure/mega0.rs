//! ATmega4808 (megaAVR-0) runs in yasimavr: KAT record 0 of every KEM image
//! and the primitives, and what fits (the runs are `crate::run::yasim`'s,
//! the link support is `crate::build::mega0_link`).

use std::path::Path;

use avr_wire::frame::STACK_OVERFLOW;
use avr_wire::kem::{compact_key_op_id, kem_op_id, CompactKeyOp, KemOp};
use kem_registry::Kem;

use crate::build::avr;
use crate::report::published;
use crate::report::records::COMPACT_VARIANT;
use crate::run::kems;
use crate::run::yasim::{run_requests, yasim_record, Measured, SPARE_SRAM};
use crate::target;

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
    let (mut opt_rows, mut form_rows) = (Vec::new(), Vec::new());
    let mut table = String::from(
        "| KEM | flash B | static RAM B | KAT record 0 | cycles K/E/D | AVRxt cycles K/E/D | painted stack K/E/D B | ours/PQClean on this core K/E/D | fits |\n|---|---:|---:|---|---|---|---|---|---|\n",
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
                "| {} | {} | {} | not run | – | – | – | – | no: {note} |\n",
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
            note.push_str(&format!(
                "; {} B of SRAM left for the stack was not enough",
                mcu.sram.saturating_sub(b.ram())
            ));
            // Beyond the SRAM by the numbers (its stack as measured on the
            // ATmega1284p): no fault of this image, and `--require-fit`
            // does not ask it.
            match stack_elsewhere(kem) {
                Some(stack) if b.ram() + stack > mcu.sram => note.push_str(&format!(
                    "; it needs {} B static + {stack} B stack (its peak on the ATmega1284p) = {} B",
                    b.ram(),
                    b.ram() + stack
                )),
                _ => no_fit += 1,
            }
        }
        if ok && record && mcu.opt_level.is_some() && sensor_kems().contains(&kem) {
            let (opt_row, form_row) = size_levers(mcu, kem, no_build, (&b, &replies))?;
            opt_rows.push(opt_row);
            form_rows.extend(form_row);
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
        let against_pqclean = match (published::kem_reference_on_core(kem, mcu.name), ok) {
            (Some(r), true) => {
                let ratios: Vec<String> = (0..3)
                    .map(|i| match replies[i].cycles {
                        Some(c) => format!("{:.2}", c as f64 / (r.kcycles[i] * 1000.0)),
                        None => "–".into(),
                    })
                    .collect();
                ratios.join("/")
            }
            _ => "–".into(),
        };
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {against_pqclean} | {}: {note} |\n",
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
    let opt_level = target::Image::kem(Kem::MlKem512).opt_level_on(mcu).unwrap_or("3");
    let legend = format!("(each image built at opt-level {opt_level}; yasimavr; cycles by the on-chip timers between the markers, UART transfer excluded, \
         yasimavr's classic-core (AVRe+) instruction timings; AVRxt: the same windows on the 4808's \
         AVRxt core, priced from an instruction trace and checked against the timers (`xtask/src/lab/run/avrxt.rs`; \
         loads from the mapped flash not charged their extra cycle); painted-stack measure; \
         flash = text + data image + rodata; ours/PQClean: cycles against PQClean's clean ML-KEM \
         of the same set, measured on this core in yasimavr with the memory it needs, which the part \
         does not have (`tools/pqclean-baseline`))");
    println!("{legend}");
    if record {
        crate::report::records::record_fit_table(mcu.name, "kem-fit", &format!("{table}\n{legend}\n"))?;
        if !opt_rows.is_empty() {
            let levers = levers_table(mcu, &opt_rows, &form_rows);
            print!("{levers}");
            crate::report::records::record_fit_table(mcu.name, "kem-levers", &levers)?;
        }
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

/// The peak stack of `kem`'s operations on the ATmega1284p (tables in
/// flash), from the benchmark records, if they have it.
fn stack_elsewhere(kem: Kem) -> Option<u32> {
    crate::report::records::all_records()
        .ok()?
        .iter()
        .filter(|r| r.mcu == "atmega1284p" && r.scheme == kem.scheme().name() && r.variant == kem.variant())
        .filter(|r| r.default_placement())
        .map(|r| r.stack_bytes)
        .max()
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
    kat0_with(mcu, kem, image, elf, avrxt, false)
}

/// [`kat0`], and with `compact_key` (where `kem` has one) the compact
/// key's keygen from the record's draws and its decapsulation of the
/// record's ciphertext after them: the key the host makes from the same
/// draws, and the record's shared secret.
fn kat0_with(
    mcu: target::Mcu,
    kem: Kem,
    image: &target::Image,
    elf: &Path,
    avrxt: bool,
    compact_key: bool,
) -> Result<(Vec<Measured>, Vec<bool>), String> {
    let case = kems::kat_cases(kem, 1)?.remove(0);
    let r = &case.record;
    let used = [0u8, case.keygen_tape.len() as u8, 0];
    let mut requests = vec![
        (
            kem_op_id(kem, KemOp::Keygen),
            kems::request(kem, KemOp::Keygen, &[], &case.keygen_tape)?,
        ),
        (
            kem_op_id(kem, KemOp::Encaps),
            kems::request(kem, KemOp::Encaps, &r.pk, &case.encaps_tape)?,
        ),
        (
            kem_op_id(kem, KemOp::Decaps),
            kems::request(kem, KemOp::Decaps, &r.sk, &r.ct)?,
        ),
    ];
    let mut want = vec![
        [&used[..], &r.pk, &r.sk].concat(),
        [&[0u8, case.encaps_tape.len() as u8, 0][..], &r.ct, &r.ss].concat(),
        r.ss.clone(),
    ];
    let compact = match compact_key {
        true => kems::compact_keygen(kem, &case.keygen_tape)?,
        false => None,
    };
    if let Some(sk) = compact {
        for op in CompactKeyOp::ALL {
            let id = compact_key_op_id(kem, op).ok_or_else(|| format!("{}: no compact key op", kem.name()))?;
            let (payload, reply) = match op {
                CompactKeyOp::Keygen => (&case.keygen_tape, [&used[..], &sk].concat()),
                CompactKeyOp::Decaps => (&r.ct, r.ss.clone()),
            };
            requests.push((id, kems::compact_key_request(kem, op, &sk, payload)?));
            want.push(reply);
        }
    }
    eprintln!("xtask: {} in yasimavr …", kem.name());
    let replies = run_requests(
        mcu,
        elf,
        &requests,
        &image.target_dir(mcu).join("kat0-requests.txt"),
        avrxt,
    )?;
    let per_op: Vec<bool> = (0..want.len())
        .map(|i| replies.get(i).map(|m| &m.body) == Some(&want[i]))
        .collect();
    Ok((replies, per_op))
}

/// The KEMs a sensor suite takes (each scheme's default variant).
fn sensor_kems() -> Vec<Kem> {
    Kem::ALL
        .into_iter()
        .filter(|&k| kem_mqtt::Suite::ALL.iter().any(|s| s.kem().default_kem() == k))
        .collect()
}

/// `kem` built as the sensor images are on `mcu` (opt-level "s"; its
/// [`target::Image::kem_for_size`] image): KAT record 0 and, where `kem`
/// has one, the compact key's two operations. Returns the row of the
/// opt-level table (beside `fast`, the opt-level 3 image's flash and
/// replies) and the row of the key-form table.
fn size_levers(
    mcu: target::Mcu,
    kem: Kem,
    no_build: bool,
    fast: (&avr::Build, &[Measured]),
) -> Result<(String, Option<String>), String> {
    let image = target::Image::kem_for_size(kem);
    let b = if no_build {
        avr::sizes(mcu, &image.elf(mcu))?
    } else {
        avr::compile(mcu, &image)?
    };
    let (replies, per_op) = kat0_with(mcu, kem, &image, &b.elf, false, true)?;
    if per_op.len() < 3 || !per_op.iter().all(|&x| x) || replies.len() != per_op.len() {
        return Err(format!(
            "{} at opt-level {}: the KAT record or the compact key did not reproduce ({per_op:?})",
            kem.name(),
            image.opt_level_on(mcu).unwrap_or("3")
        ));
    }
    let cycles = |m: &Measured| m.cycles.ok_or_else(|| format!("{}: no timer reading", kem.name()));
    let small: Vec<u64> = replies.iter().map(cycles).collect::<Result<_, _>>()?;
    let (fast_build, fast_replies) = fast;
    let quick: Vec<u64> = fast_replies.iter().map(cycles).collect::<Result<_, _>>()?;
    let join = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" / ");
    let change: Vec<String> = (0..3)
        .map(|i| format!("{:+.1} %", (quick[i] as f64 / small[i] as f64 - 1.0) * 100.0))
        .collect();
    let opt_row = format!(
        "| {} | {} | {} | {} | {} / {} |",
        kem.name(),
        join(&small[..3]),
        join(&quick[..3]),
        change.join(" / "),
        b.flash(),
        fast_build.flash()
    );
    let stack = |m: &Measured| m.stack.map_or("–".into(), |s| s.to_string());
    let form_row = (small.len() == 5).then(|| {
        let s = kem.scheme();
        format!(
            "| {} | {} → {} | {} → {} ({}) | {} → {} ({}) | {} → {} / {} → {} |",
            kem.name(),
            kem.sk_len(),
            s.compact_sk_len(),
            small[0],
            small[3],
            crate::report::table::ratio(small[3], Some(small[0])),
            small[2],
            small[4],
            crate::report::table::ratio(small[4], Some(small[2])),
            stack(&replies[0]),
            stack(&replies[3]),
            stack(&replies[2]),
            stack(&replies[4]),
        )
    });
    Ok((opt_row, form_row))
}

/// The opt-level and key-form tables of [`size_levers`]' rows, for
/// `docs/benchmarks.md` § Levers.
fn levers_table(mcu: target::Mcu, opt_rows: &[String], form_rows: &[String]) -> String {
    let level = mcu.opt_level.unwrap_or("3");
    format!(
        "Opt-level \"{level}\", at which every sensor image is built here, against 3, at which the KEM rows above \
         are (each KEM its own image both ways; KAT record 0; cycles keygen / encaps / decaps, classic-core \
         timings; flash = text + data image + rodata):\n\n\
         | KEM | opt-level {level}: cycles | opt-level 3: cycles | 3 against {level} | flash B {level} / 3 |\n\
         |---|---|---|---|---|\n{}\n\n\
         The key forms, in the opt-level \"{level}\" images: key generation into the compact secret key (the \
         sensor's ephemeral key) from KAT record 0's draws, and decapsulation of the record's ciphertext with \
         it, against the standard key's in the same image (checked: the key the host makes from the same \
         draws, the record's shared secret):\n\n\
         | KEM | secret key B: standard → compact | keygen cycles: standard → compact (ratio) | decaps cycles: \
         standard → compact (ratio) | painted stack B: keygen / decaps |\n\
         |---|---|---|---|---|\n{}\n",
        opt_rows.join("\n"),
        form_rows.join("\n"),
    )
}

/// Keccak-f\[1600\], Ascon-p\[12\] and X25519 on `mcu` in yasimavr (the
/// `primitives` image, variant `avr-asm`), and Keccak-f\[1600\] and
/// X25519 again with the compact assemblies a sensor may take there (the
/// `primitives-compact` image, variant [`COMPACT_VARIANT`]): two random
/// inputs each, output checked against the host's reference, I/O-free
/// cycles by the on-chip timers. With `record`, the rows go to
/// `benchmarks/<mcu>/primitives.json`.
pub fn primitives(mcu: target::Mcu, filter: &str, no_build: bool, record: bool) -> Result<(), String> {
    let mut records = primitives_of(mcu, &target::Image::primitives(), "avr-asm", filter, no_build, record)?;
    records.extend(primitives_of(
        mcu,
        &target::Image::primitives_compact(),
        COMPACT_VARIANT,
        filter,
        no_build,
        record,
    )?);
    if record && !records.is_empty() {
        crate::report::records::save(mcu.name, kems::PRIMITIVES_SCHEME, &records, false)?;
    }
    Ok(())
}

/// [`primitives`] of one image: its rows, `variant` (the compact image
/// has no Ascon row: nothing of Ascon's changes); `avrxt`: the AVRxt
/// core's cycles too.
fn primitives_of(
    mcu: target::Mcu,
    image: &target::Image,
    variant: &str,
    filter: &str,
    no_build: bool,
    avrxt: bool,
) -> Result<Vec<crate::report::records::Record>, String> {
    use avr_wire::primitives::PRIMITIVES;
    let selected: Vec<_> = PRIMITIVES
        .iter()
        .filter(|p| p.name.contains(filter) || kems::PRIMITIVES_SCHEME.contains(filter))
        .filter(|p| variant != COMPACT_VARIANT || p.name != "ascon-p12")
        .collect();
    if selected.is_empty() {
        return Ok(Vec::new());
    }
    let b = if no_build {
        avr::sizes(mcu, &image.elf(mcu))?
    } else {
        avr::compile(mcu, image)?
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
        &image.target_dir(mcu).join(format!("{}-requests.txt", image.name)),
        avrxt,
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
        let (published, reference) = crate::report::published::primitive(p.name).unzip();
        let mut r = yasim_record(mcu, kems::PRIMITIVES_SCHEME, variant, p.name, Some(stack));
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
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each table of the levers page ends before the next paragraph
    /// starts (markdown would run them together).
    #[test]
    fn the_levers_tables_are_apart_from_their_text() {
        let mcu = target::mcu("atmega4808").unwrap();
        let t = levers_table(
            mcu,
            &["| a | 1 | 2 | 3 | 4 |".into()],
            &["| b | 1 | 2 | 3 | 4 |".into()],
        );
        assert!(t.contains("| a | 1 | 2 | 3 | 4 |\n\nThe key forms"), "{t}");
        assert!(t.ends_with("| b | 1 | 2 | 3 | 4 |\n"), "{t}");
        assert!(t.contains("opt-level s: cycles"));
    }
}
