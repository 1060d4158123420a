//! Each KEM crate's SRAM floor (`avr_asm_build::SRAM_FLOOR_FILE` in its
//! folder), generated from the ATmega1284p benchmark records: the least
//! SRAM any one operation of the crate needs, its measured peak stack plus
//! the keys, ciphertext and shared secret it reads and writes. The crate's
//! `build.rs` refuses an MCU with less SRAM (`avr_asm_build::require_sram`)
//! with a message naming the crate, the MCU and these bytes (issue #35).

use std::path::PathBuf;

use kem_registry::{Scheme, SS_LEN};

use crate::report::board_table::Fit;
use crate::report::records::{write, Record};
use crate::util;

/// The measured MCU the floors come from.
const MCU: &str = "atmega1284p";

/// One operation's need: (bytes in all, stack, buffers, "scheme op").
type Need = (u32, u32, u32, String);

/// The bytes an operation of `scheme` reads and writes.
fn buffers(scheme: Scheme, op: &str) -> Option<u32> {
    let (pk, sk, ct, ss) = (scheme.pk_len(), scheme.sk_len(), scheme.ct_len(), SS_LEN);
    let bytes = match op {
        "keygen" => pk + sk,
        "encaps" => pk + ct + ss,
        "decaps" => sk + ct + ss,
        _ => return None,
    };
    u32::try_from(bytes).ok()
}

/// The MCU the small-SRAM floors come from (`docs/boards.md`'s runs, a
/// painted stack per operation).
const SMALL_MCU: &str = "atmega4808";

/// The lightest operation of `crate_name`'s schemes by `need` (an
/// operation's (stack, buffers), [`op_need`] or [`small_op_need`]), if
/// any is measured.
fn lightest(crate_name: &str, need: impl Fn(Scheme, usize) -> Option<(u32, u32)>) -> Option<Need> {
    Scheme::ALL
        .into_iter()
        .filter(|s| s.crate_name() == crate_name)
        .flat_map(|scheme| (0..OPS.len()).map(move |op| (scheme, op)))
        .filter_map(|(scheme, op)| {
            let (stack, buf) = need(scheme, op)?;
            Some((stack + buf, stack, buf, format!("{} {}", scheme.name(), OPS[op])))
        })
        // Between equal needs, the first name: the choice does not hang on
        // the order the records were read in.
        .min_by(|a, b| (a.0, &a.3).cmp(&(b.0, &b.3)))
}

/// The operations, in the order of [`Fit::op_stack_bytes`].
const OPS: [&str; 3] = ["keygen", "encaps", "decaps"];

/// `stack + buffers = need` for one operation, or "–" if not measured.
fn sum_cell(need: Option<(u32, u32)>) -> String {
    need.map_or("–".into(), |(stack, buf)| {
        format!("{stack} + {buf} = **{}**", stack + buf)
    })
}

/// `scheme`'s operation `op` on the ATmega1284p (tables in flash):
/// (stack, buffers) of the lighter measured variant.
fn op_need(records: &[Record], scheme: Scheme, op: usize) -> Option<(u32, u32)> {
    let buf = buffers(scheme, OPS[op])?;
    records
        .iter()
        .filter(|r| r.mcu == MCU && r.tables.as_deref() != Some("sram"))
        .filter(|r| r.scheme == scheme.name() && r.operation == OPS[op])
        .map(|r| (r.stack_bytes, buf))
        .min()
}

/// The same in the small-SRAM configuration (the ATmega4808's painted run).
fn small_op_need(fits: &[Fit], scheme: Scheme, op: usize) -> Option<(u32, u32)> {
    let stacks = fits
        .iter()
        .find(|f| f.mcu == SMALL_MCU && f.kind == "kem" && f.name == scheme.name())?
        .op_stack_bytes?;
    Some((stacks[op], buffers(scheme, OPS[op])?))
}

/// A suite's sensor on `mcu`: `static + stack = need`, or why there is no
/// figure.
fn suite_cell(fits: &[Fit], mcu: &str, suite: &str) -> String {
    let Some(f) = fits
        .iter()
        .find(|f| f.mcu == mcu && f.kind == "suite" && f.name == suite)
    else {
        return "–".into();
    };
    match (f.static_ram_bytes, f.stack_bytes) {
        (Some(ram), Some(stack)) if f.verdict == "fits" => format!("{ram} + {stack} = **{}**", ram + stack),
        (Some(ram), _) => format!("≥ {ram} (static alone; did not run)"),
        _ => format!("– (does not link: {})", f.verdict),
    }
}

/// The least SRAM of every KEM operation and every suite's sensor, for
/// `docs/boards.md`: the measured peak stack plus what the operation holds
/// outside its stack (a KEM operation's keys, ciphertext and secret; a
/// sensor image's static RAM).
pub fn boards_section(records: &[Record], fits: &[Fit]) -> String {
    let small = avr_mcu::facts(SMALL_MCU);
    let mut s = format!(
        "## The least SRAM each operation needs\n\n\
         Measured, in bytes: peak stack + what the operation holds outside its stack = the least SRAM \
         it runs in. A KEM operation holds its keys, ciphertext and shared secret (keygen: the key pair; \
         encaps: public key, ciphertext, secret; decaps: secret key, ciphertext, secret); its stack is \
         its image's on the {MCU} (NTT tables in flash; CTRU-Light: the lighter of its two reductions), \
         and, in the configuration the KEM crates build for parts with 8 KB of SRAM or less (their \
         `*_small_sram` choices: less stack for more cycles), the painted stack on the {SMALL_MCU}. Each crate's \
         `avr-sram-floor.txt` is the least of its operations; a part with less SRAM is refused at build \
         time.\n\n\
         | KEM | operation | {MCU}: stack + buffers = SRAM | {SMALL_MCU} ({} B SRAM): stack + buffers = SRAM |\n\
         |---|---|---|---|\n",
        small.sram
    );
    for scheme in Scheme::ALL {
        for (i, op) in OPS.iter().enumerate() {
            s.push_str(&format!(
                "| {} | {op} | {} | {} |\n",
                scheme.name(),
                sum_cell(op_need(records, scheme, i)),
                sum_cell(small_op_need(fits, scheme, i))
            ));
        }
    }
    s.push_str(&format!(
        "\nA sensor's handshake, reading and command need its image's static RAM (the session, the \
         handshake state, the link's buffers; on the ATmega1284p also the provisioned keys, copied to \
         SRAM at start-up) plus the peak stack of its run:\n\n\
         | suite | {SMALL_MCU} (keys in flash): static + stack = SRAM | {MCU} (keys in SRAM): static + stack = SRAM |\n\
         |---|---|---|\n"
    ));
    for suite in kem_mqtt::Suite::ALL {
        s.push_str(&format!(
            "| {} | {} | {} |\n",
            suite.name(),
            suite_cell(fits, SMALL_MCU, suite.name()),
            suite_cell(fits, MCU, suite.name())
        ));
    }
    s.push('\n');
    s
}

/// The floor file of the KEM crate `crate_name`.
pub fn path(crate_name: &str) -> PathBuf {
    util::workspace_root()
        .join("crates")
        .join(crate_name)
        .join(avr_asm_build::SRAM_FLOOR_FILE)
}

/// The floor file of every KEM crate: (path, contents). `fits`: the
/// board table's rows (`benchmarks/boards.json`).
pub fn files(records: &[Record], fits: &[Fit]) -> Result<Vec<(PathBuf, String)>, String> {
    let mut crates: Vec<&str> = Scheme::ALL.iter().map(|s| s.crate_name()).collect();
    crates.dedup();
    crates
        .into_iter()
        .map(|name| {
            let (need, stack, buf, what) = lightest(name, |s, op| op_need(records, s, op))
                .ok_or_else(|| format!("no {MCU} KEM record of {name}: run `cargo xtask bench` first"))?;
            let mut text = format!(
                "# Generated by `cargo xtask report` from benchmarks/{MCU}/*.json and\n\
                 # benchmarks/boards.json; do not edit.\n\
                 # The least SRAM any one operation of this crate needs (bytes, then what):\n\
                 # its peak stack measured on the ATmega1284p plus the keys, ciphertext and\n\
                 # shared secret it reads and writes; the `small` line, the same for the\n\
                 # configuration the crate builds for parts with 8 KB of SRAM or less,\n\
                 # measured (painted) on the ATmega4808. build.rs refuses an MCU with less.\n\
                 {need} {what}: {stack} B of stack + {buf} B of keys, ciphertext and secret\n"
            );
            if let Some((need, stack, buf, what)) = lightest(name, |s, op| small_op_need(fits, s, op)) {
                text.push_str(&format!(
                    "{}{need} {what}: {stack} B of stack + {buf} B of keys, ciphertext and secret\n",
                    avr_asm_build::SMALL_FLOOR_PREFIX
                ));
            }
            Ok((path(name), text))
        })
        .collect()
}

/// Writes every KEM crate's floor file.
pub fn write_all(records: &[Record]) -> Result<(), String> {
    for (path, text) in files(records, &crate::report::board_table::load()?)? {
        write(&path, &text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every KEM operation and every suite has a row of measured figures,
    /// and each crate's floor (its lightest operation) is among them.
    #[test]
    fn the_boards_page_gives_every_operations_least_sram() {
        let records = crate::report::records::all_records().unwrap();
        let fits = crate::report::board_table::load().unwrap();
        let section = boards_section(&records, &fits);
        for scheme in Scheme::ALL {
            for op in OPS {
                let row = format!("| {} | {op} | ", scheme.name());
                assert!(section.contains(&row), "{row}");
            }
            let (need, stack, buf, what) = lightest(scheme.crate_name(), |s, op| op_need(&records, s, op)).unwrap();
            assert!(section.contains(&format!("{stack} + {buf} = **{need}**")), "{what}");
        }
        for suite in kem_mqtt::Suite::ALL {
            assert!(
                section.contains(&format!("\n| {} | ", suite.name())),
                "{}",
                suite.name()
            );
        }
        let ran = fits
            .iter()
            .find(|f| f.mcu == SMALL_MCU && f.kind == "suite" && f.verdict == "fits")
            .unwrap();
        let (ram, stack) = (ran.static_ram_bytes.unwrap(), ran.stack_bytes.unwrap());
        assert!(section.contains(&format!("| {} | {ram} + {stack} = **{}** |", ran.name, ram + stack)));
    }

    /// The committed floor files are what the committed records give: a
    /// re-measured stack cannot leave a crate refusing (or admitting) an
    /// MCU on old figures.
    #[test]
    fn committed_floors_match_the_records() {
        let records = crate::report::records::all_records().unwrap();
        let fits = crate::report::board_table::load().unwrap();
        let uno = avr_mcu::facts("atmega328p");
        let small = avr_mcu::facts(SMALL_MCU);
        for (path, text) in files(&records, &fits).unwrap() {
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(committed, text, "{} is stale: run `cargo xtask report`", path.display());
            let need = avr_asm_build::sram_floor(&committed, uno).unwrap().bytes;
            assert!(need > 0 && need < 16 * 1024, "{need}");
            // What docs/boards.md and the examples say: no KEM fits the Uno.
            assert!(need > uno.sram, "{}: {need} B", path.display());
            // Every KEM runs on the ATmega4808 (CI's KAT step there): its
            // floor admits it.
            let need = avr_asm_build::sram_floor(&committed, small).unwrap().bytes;
            assert!(need <= small.sram, "{}: {need} B on the {SMALL_MCU}", path.display());
        }
    }
}
