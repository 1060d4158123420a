//! `cargo xtask boards`: which KEM and which KEM-MQTT suite fits which
//! board (issue #35). For every measured MCU of `avr_mcu` (the Uno's
//! ATmega328p, the Mega's ATmega2560, the ATmega1284p, the Nano Every's
//! ATmega4809 and the ATmega4808) it builds each KEM's image and each
//! suite's sensor application, reads flash and static RAM off the ELF, and
//! runs it in the part's simulator for the peak stack: a KEM's KAT records
//! (simavr's stack-pointer tracking; painted in yasimavr), a suite's whole
//! session (handshake, reading, command). What does not build says why: a
//! KEM crate refusing the MCU (`avr_asm_build::require_sram`) or the
//! linker. Results go to `benchmarks/boards.json`; `docs/boards.md` is
//! generated from it (`crate::report::board_table`).

use avr_wire::frame::STACK_OVERFLOW;
use clap::Args;
use kem_registry::Scheme;

use crate::build::avr;
use crate::measure::{bench, mega0};
use crate::mqtt::app_cost;
use crate::report::board_table::{json_path, load, Fit};
use crate::report::records::write;
use crate::run::sensor;
use crate::target::{self, Image, Mcu};

/// Options of `cargo xtask boards`.
#[derive(Args, Debug, Clone)]
pub struct BoardsArgs {
    /// Only this MCU (its rows are replaced, the others kept)
    #[arg(long, value_parser = target::mcu)]
    pub mcu: Option<Mcu>,
    /// Only the KEMs and suites whose name contains this
    #[arg(long, default_value = "")]
    pub filter: String,
}

/// The MCUs of the table, as the lab builds for them, the one with the
/// most SRAM first: its stack is the reference when a smaller part's run
/// dies ([`measured`]).
fn mcus() -> Vec<Mcu> {
    let mut v: Vec<Mcu> = avr_mcu::measured().filter_map(|m| target::mcu(m.name).ok()).collect();
    v.sort_by_key(|m| std::cmp::Reverse(m.sram));
    v
}

/// The MCU whose peak stacks are the reference (the most SRAM).
const REFERENCE: &str = "atmega1284p";

/// The reference MCU's peak stack for the same row, if measured.
fn reference_stack(fits: &[Fit], kind: &str, name: &str) -> Option<u32> {
    fits.iter()
        .find(|f| f.mcu == REFERENCE && f.kind == kind && f.name == name)
        .and_then(|f| f.stack_bytes)
}

/// `cargo xtask boards`.
pub fn run(o: &BoardsArgs) -> Result<(), String> {
    let mcus: Vec<Mcu> = match o.mcu {
        Some(m) => vec![m],
        None => mcus(),
    };
    let filter = o.filter.to_lowercase();
    let kems: Vec<Scheme> = Scheme::ALL.into_iter().filter(|s| s.name().contains(&filter)).collect();
    let suites: Vec<kem_mqtt::Suite> = kem_mqtt::Suite::ALL
        .into_iter()
        .filter(|s| s.name().contains(&filter))
        .collect();
    if kems.is_empty() && suites.is_empty() {
        return Err(format!("no KEM or suite matches --filter `{filter}`"));
    }
    let revision = crate::opts::git_revision();
    let mut fits = load()?;
    let steps = (mcus.len() * (kems.len() + suites.len())) as u64;
    let mut progress = crate::progress::Progress::new("boards", steps);
    for mcu in &mcus {
        for &scheme in &kems {
            progress.step(&format!("{} on {}", scheme.name(), mcu.name));
            let reference = reference_stack(&fits, "kem", scheme.name());
            let fit = kem_fit(*mcu, scheme, reference, &revision);
            println!("{}", line(&fit));
            replace(&mut fits, fit);
        }
        for &suite in &suites {
            progress.step(&format!("{} sensor on {}", suite.name(), mcu.name));
            let reference = reference_stack(&fits, "suite", suite.name());
            let fit = suite_fit(*mcu, suite, reference, &revision);
            println!("{}", line(&fit));
            replace(&mut fits, fit);
        }
    }
    progress.finish();
    // A stable order, so that a re-run's diff shows only what changed.
    fits.sort_by(|a, b| (&a.mcu, &a.kind, &a.name).cmp(&(&b.mcu, &b.kind, &b.name)));
    let json = serde_json::to_string_pretty(&fits).map_err(|e| e.to_string())?;
    write(&json_path(), &(json + "\n"))?;
    crate::report::regenerate()
}

/// Puts `fit` in place of the stored one of the same MCU and row.
fn replace(fits: &mut Vec<Fit>, fit: Fit) {
    fits.retain(|f| !(f.mcu == fit.mcu && f.kind == fit.kind && f.name == fit.name));
    fits.push(fit);
}

fn line(f: &Fit) -> String {
    format!("{} {} {}: {} ({})", f.mcu, f.kind, f.name, f.verdict, f.note)
}

/// A row not measured yet: what the build said.
fn unbuilt(mcu: Mcu, kind: &str, name: &str, err: &str, revision: &str) -> Fit {
    let (verdict, note) = if let Some(at) = err.find("cannot run on the") {
        // From the crate's name, which the message starts with.
        let start = err[..at].rfind(": ").map_or(at, |i| i + 2);
        let why = without_pointer(&err[start..]);
        ("refused", format!("the build refuses it: {why}"))
    } else if err.contains("overflowed by") || err.contains("is not within region") {
        let why = avr::link_overflow(err, mcu);
        let verdict = if why.contains("flash") { "flash" } else { "sram" };
        (verdict, why)
    } else {
        (
            "failed",
            format!("the build failed: {}", err.lines().last().unwrap_or(err)),
        )
    };
    Fit {
        mcu: mcu.name.into(),
        kind: kind.into(),
        name: name.into(),
        flash_bytes: None,
        static_ram_bytes: None,
        stack_bytes: None,
        op_stack_bytes: None,
        verdict: verdict.into(),
        note,
        git_revision: revision.into(),
        compact_keccak: false,
        compact_x25519: false,
    }
}

/// A built image's row: `ran` is its peak stack, or why the run failed;
/// `reference` the ATmega1284p's peak stack for the same row.
fn measured(
    mcu: Mcu,
    (kind, name): (&str, &str),
    b: &avr::Build,
    ran: Result<u32, String>,
    reference: Option<u32>,
    revision: &str,
) -> Fit {
    let (stack, verdict, note) = match ran {
        Ok(stack) => {
            let spare = i64::from(mcu.sram) - i64::from(b.ram()) - i64::from(stack);
            let said = format!(
                "static RAM {} B + peak stack {stack} B of {} B: {}",
                b.ram(),
                mcu.sram,
                if spare >= 0 {
                    format!("{spare} B spare")
                } else {
                    format!("{} B short", -spare)
                }
            );
            (Some(stack), if spare >= 0 { "fits" } else { "sram" }, said)
        }
        Err(e) => {
            let e = e.replace('\n', "; ");
            // A run that dies with less SRAM beside static data than the
            // 1284p's run of the same code needed: the stack ran into it.
            let room = mcu.sram.saturating_sub(b.ram());
            let short = reference.filter(|&r| r > room);
            let verdict = if e.contains("overflow") || short.is_some() {
                "sram"
            } else {
                "failed"
            };
            let why = match short {
                Some(r) => format!(", less than the {r} B of peak stack the same code takes on the {REFERENCE}"),
                None => String::new(),
            };
            (
                None,
                verdict,
                format!(
                    "static RAM {} B leaves {room} B of {} B for the stack{why}; the run failed: {e}",
                    b.ram(),
                    mcu.sram
                ),
            )
        }
    };
    Fit {
        mcu: mcu.name.into(),
        kind: kind.into(),
        name: name.into(),
        flash_bytes: Some(b.flash()),
        static_ram_bytes: Some(b.ram()),
        stack_bytes: stack,
        op_stack_bytes: None,
        verdict: verdict.into(),
        note,
        git_revision: revision.into(),
        compact_keccak: b.compact_keccak,
        compact_x25519: b.compact_x25519,
    }
}

/// A KEM's own image on `mcu`: its KAT records, for the peak stack.
fn kem_fit(mcu: Mcu, scheme: Scheme, reference: Option<u32>, revision: &str) -> Fit {
    let kem = scheme.default_kem();
    let image = Image::kem(kem);
    let b = match avr::compile(mcu, &image) {
        Ok(b) => b,
        Err(e) => return unbuilt(mcu, "kem", scheme.name(), &e, revision),
    };
    let mut op_stacks = None;
    let ran = if mcu.is_mega0() {
        mega0::kat0(mcu, kem, &image, &b.elf, false).and_then(|(replies, per_op)| {
            let stacks: Vec<u32> = replies.iter().filter_map(|m| m.stack).map(u32::from).collect();
            if stacks.contains(&u32::from(STACK_OVERFLOW)) {
                Err("the stack overflowed into static data".into())
            } else if replies.len() < 3 || per_op.iter().any(|ok| !ok) {
                Err(format!("KAT record 0 not reproduced ({} of 3 replies)", replies.len()))
            } else {
                op_stacks = stacks.clone().try_into().ok();
                stacks.into_iter().max().ok_or_else(|| "no stack reading".into())
            }
        })
    } else {
        bench::kem_peak_stack(mcu, &image, kem)
    };
    let mut fit = measured(mcu, ("kem", scheme.name()), &b, ran, reference, revision);
    fit.op_stack_bytes = op_stacks;
    fit
}

/// Why `scheme`'s crate refuses `mcu` (`avr_asm_build::require_sram`), if it does.
fn own_refusal(mcu: Mcu, scheme: Scheme) -> Option<String> {
    let text = std::fs::read_to_string(crate::report::floors::path(scheme.crate_name())).ok()?;
    let facts = mcu.facts();
    let floor = avr_asm_build::sram_floor(&text, facts)?;
    let why = avr_asm_build::sram_refusal(scheme.crate_name(), floor, facts)?;
    Some(without_pointer(&why).to_string())
}

/// A refusal message without its closing pointer to `docs/boards.md`
/// (the table it would point to is the one being written).
fn without_pointer(why: &str) -> &str {
    why.split(". Which KEM").next().unwrap_or(why)
}

/// A suite's sensor application on `mcu`, provisioned with fresh keys: a
/// whole session, for the peak stack.
fn suite_fit(mcu: Mcu, suite: kem_mqtt::Suite, reference: Option<u32>, revision: &str) -> Fit {
    let built = sensor::provision_one(suite, "avr-1").and_then(|(secrets, registry, keys)| {
        let image = sensor::provisioned_image(mcu, Image::sensor_app(suite), &keys)?;
        let b = avr::build_image(mcu, &image)?;
        Ok((b, kem_mqtt_host::keys::BrokerState { secrets, registry }))
    });
    let (b, state) = match built {
        Ok(x) => x,
        Err(e) => {
            let mut fit = unbuilt(mcu, "suite", suite.name(), &e, revision);
            // Every KEM crate is in a sensor image's build (kem-mqtt's
            // registry), and any of them may be the first to refuse: name
            // the suite's own, by the check its build script makes.
            if let (true, Some(own)) = (fit.verdict == "refused", own_refusal(mcu, suite.kem())) {
                fit.note = format!("the build refuses it: {own}");
            }
            return fit;
        }
    };
    let ran = app_cost::session_stack(mcu, suite, &b.elf, &state);
    measured(mcu, ("suite", suite.name()), &b, ran, reference, revision)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_build_says_who_refused_it() {
        let uno = target::mcu("atmega328p").unwrap();
        let refusal = "cargo build failed with exit status: 101: error: kyber512-avr@0.1.0: kyber512-avr cannot run \
             on the atmega328p (Arduino Uno): its lightest operation needs 3734 B of SRAM (…) and the atmega328p \
             has 2048 B. Which KEM fits which board: docs/boards.md";
        let f = unbuilt(uno, "kem", "ml-kem-512", refusal, "r");
        assert_eq!(f.verdict, "refused");
        assert!(
            f.note
                .starts_with("the build refuses it: kyber512-avr cannot run on the atmega328p"),
            "{}",
            f.note
        );
        assert!(f.note.ends_with("has 2048 B"), "{}", f.note);

        let m4808 = target::mcu("atmega4808").unwrap();
        let overflow = "failed: region `text' overflowed by 3617 bytes";
        let f = unbuilt(m4808, "suite", "ctru-light-sha3+x25519", overflow, "r");
        assert_eq!((f.verdict.as_str(), f.flash_bytes), ("flash", None));
        assert!(f.note.contains("3617 B over 49152 B"), "{}", f.note);

        assert_eq!(unbuilt(uno, "kem", "x", "no such file", "r").verdict, "failed");
    }

    #[test]
    fn a_run_that_dies_short_of_the_reference_stack_is_an_sram_verdict() {
        let m2560 = target::mcu("atmega2560").unwrap();
        let b = avr::Build {
            mcu: m2560,
            elf: "x.elf".into(),
            text: 50_000,
            data: 3_816,
            bss: 2_674,
            rodata: 0,
            compact_keccak: false,
            compact_x25519: false,
        };
        let died = || Err::<u32, String>("firmware crashed".into());
        let f = measured(m2560, ("suite", "ml-kem-512"), &b, died(), Some(2_971), "r");
        assert_eq!(f.verdict, "sram");
        assert!(
            f.note.contains("leaves 1702 B of 8192 B") && f.note.contains("2971 B"),
            "{}",
            f.note
        );
        // Room enough for the reference stack: a failure, not a fit verdict.
        assert_eq!(
            measured(m2560, ("suite", "x"), &b, died(), Some(1_000), "r").verdict,
            "failed"
        );
        let ok = measured(m2560, ("kem", "x"), &b, Ok(1_000), None, "r");
        assert_eq!((ok.verdict.as_str(), ok.stack_bytes), ("fits", Some(1_000)));
        assert!(ok.note.ends_with("702 B spare"), "{}", ok.note);
    }
}
