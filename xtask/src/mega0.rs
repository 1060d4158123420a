//! ATmega4808 (megaAVR-0) runs in yasimavr: KAT record 0 of every KEM image
//! and what fits (the link support is `mega0_link`).

use std::process::Command;

use avr_harness::protocol::{OP_STACK, STACK_OVERFLOW};
use firmware::kem::{kem_op_id, Kem, KemOp};

use crate::target;
use crate::{avr, kems, util};

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
        Some(s) => s <= free,
        None => b.ram() < m.sram,
    };
    if let Some(s) = stack {
        notes.push(format!(
            "static RAM {} B + peak stack {s} B = {} B of {} B",
            b.ram(),
            b.ram() + s,
            m.sram
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
/// failure, unless `require_fit` (CI: every KEM must fit the 4808).
/// With `record`, the table also goes to `benchmarks/<mcu>/kem-fit.md`, which
/// `docs/benchmarks.md` includes (`cargo xtask bench --mcu atmega4808`).
pub fn kat(mcu: target::Mcu, filter: &str, no_build: bool, require_fit: bool, record: bool) -> Result<(), String> {
    let root = util::workspace_root();
    let python = root.join(".venv/bin/python");
    if !python.exists() {
        return Err(format!(
            "{} needs yasimavr in {} (run `cargo xtask setup --yasimavr`)",
            mcu.name,
            python.display()
        ));
    }
    let (mut passed, mut failed, mut no_fit) = (0u32, 0u32, 0u32);
    let mut table = String::from(
        "| KEM | flash B | static RAM B | KAT record 0 | painted stack K/E/D B | fits |\n|---|---:|---:|---|---|---|\n",
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
                "| {} | {} | {} | not run | – | no: {note} |\n",
                kem.name(),
                b.flash(),
                b.ram()
            ));
            continue;
        }
        let case = kems::kat_cases(kem, 1)?.remove(0);
        let r = &case.record;
        let mut lines = String::new();
        for (op, payload) in [
            (
                KemOp::Keygen,
                kems::request(kem, KemOp::Keygen, &[], &case.keygen_tape)?,
            ),
            (
                KemOp::Encaps,
                kems::request(kem, KemOp::Encaps, &r.pk, &case.encaps_tape)?,
            ),
            (KemOp::Decaps, kems::request(kem, KemOp::Decaps, &r.sk, &r.ct)?),
        ] {
            lines.push_str(&format!("{:02x} {}\n", kem_op_id(kem, op), hex(&payload)));
            lines.push_str(&format!("{OP_STACK:02x}\n"));
        }
        let req_file = image.target_dir(mcu).join("kat0-requests.txt");
        std::fs::write(&req_file, lines).map_err(|e| format!("cannot write {}: {e}", req_file.display()))?;
        eprintln!("xtask: {} in yasimavr …", kem.name());
        let out = Command::new(&python)
            .arg(root.join("firmware/avr/yasim_run.py"))
            .arg(&b.elf)
            .arg(&req_file)
            .output()
            .map_err(|e| format!("cannot run yasimavr: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let replies: Vec<Vec<u8>> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let status = it.next()?;
                let body = it.next().unwrap_or("");
                (status == "00").then(|| unhex(body))
            })
            .collect();
        let want = [
            [&[0u8, case.keygen_tape.len() as u8, 0][..], &r.pk, &r.sk].concat(),
            [&[0u8, case.encaps_tape.len() as u8, 0][..], &r.ct, &r.ss].concat(),
            r.ss.clone(),
        ];
        let per_op: Vec<bool> = (0..3).map(|i| replies.get(2 * i) == Some(&want[i])).collect();
        let ok = replies.len() == 6 && per_op.iter().all(|&x| x);
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
        let stacks: Vec<u32> = (0..3)
            .filter_map(|i| replies.get(2 * i + 1))
            .filter(|s| s.len() == 2)
            .map(|s| u16::from_le_bytes([s[0], s[1]]) as u32)
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
                "FAIL {} KAT record 0 on {}: {} replies{}",
                kem.name(),
                mcu.name,
                replies.len(),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default()
            );
        }
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {}: {note} |\n",
            kem.name(),
            b.flash(),
            b.ram(),
            verdict,
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
    let legend = "(yasimavr; painted-stack measure; flash = text + data image + rodata)";
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

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok())
        .collect()
}
