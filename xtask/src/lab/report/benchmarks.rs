//! `docs/benchmarks.md`: the page as a whole (how it measures, every
//! record per MCU, then its sections), and its KEM and firmware sections:
//! the KEM table with RAM like for like, the fit tables of the MCUs run in
//! yasimavr, the related AVR results and the published tables. The
//! KEM-MQTT sections are `crate::report::benchmarks_mqtt`'s.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::report::benchmarks_mqtt::{app_summary, load_before_after, load_summary, mqtt_summary, registry_summary};
use crate::report::records::{self, bench_dir, hashing_share, Record};
use crate::report::table::{grouped, kcycles, kem_groups, kem_row_of, ratio};
use crate::report::{published, targets};
use crate::target;

/// The recorded fit tables, as sections of `docs/benchmarks.md`.
fn fit_sections() -> String {
    let mut s = String::new();
    for mcu in target::MCUS.iter().filter(|m| !m.simulated) {
        for (name, title) in [
            ("kem-fit", "KEM operations (KAT record 0)"),
            ("kem-mqtt-fit", "KEM-MQTT/1 sensor handshake"),
            ("kem-mqtt-app-fit", "the sensor application"),
        ] {
            let path = bench_dir().join(mcu.name).join(format!("{name}.md"));
            if let Ok(table) = std::fs::read_to_string(&path) {
                let _ = writeln!(
                    s,
                    "## {}: {title} — what fits\n\n\
                     Measured by `cargo xtask bench --mcu {}` (yasimavr; from `benchmarks/{}/{name}.md`).\n\n{table}",
                    mcu.name, mcu.name, mcu.name
                );
                if name == "kem-fit" {
                    s.push_str(&references_beyond(mcu));
                }
            }
        }
    }
    s
}

/// Where the sensor handshake's cycles on the ATmega4808 before issue #50's
/// levers are kept (the measuring firmware's `kem-mqtt` records of an
/// earlier unfiltered `cargo xtask bench --mcu atmega4808`).
fn before_levers_path() -> std::path::PathBuf {
    bench_dir().join("kem-mqtt-4808-before-issue50.json")
}

/// What the levers that fit every sensor suite into the ATmega4808 (issue
/// #50) cost in cycles: the compact assemblies beside the defaults they
/// replace (the same MCU, the same harness), the opt-level and the key
/// forms KEM by KEM, the classic parts' key readers, and the sensor
/// handshake's steps before and after, suite by suite.
fn levers_section(records: &[Record]) -> String {
    const MCU: &str = "atmega4808";
    let find = |variant: &str, op: &str| {
        records
            .iter()
            .find(|r| r.mcu == MCU && r.scheme == "primitives" && r.variant == variant && r.operation == op)
    };
    let mut s = String::from(
        "## Levers that fit the boards (issue #50)\n\n\
         What fits every sensor suite into the ATmega4808 (6 KB of SRAM, 48 KB of flash), and what each \
         costs in cycles there (yasimavr, classic-core timings); then what fits it into the ATmega2560 \
         (keys read from program memory), costed on the ATmega1284p.\n\n\
         The compact assemblies, which a sensor image takes only where it does not fit the part's flash \
         otherwise (the board table says which took them), beside the defaults they replace, each in the \
         `primitives` image of its kind (`primitives`, `primitives-compact`):\n\n\
         | routine | default: cycles, code B | compact: cycles, code B | cycles compact / default |\n\
         |---|---|---|---:|\n",
    );
    for (name, op) in [
        (
            "Keccak-f[1600] (`keccak_f1600_compact.S`, `compact-keccak`)",
            "keccak-f1600",
        ),
        ("X25519 (the tiny field `fe25519_tiny.S`, `compact-x25519`)", "x25519"),
    ] {
        match (find("avr-asm", op), find(records::COMPACT_VARIANT, op)) {
            (Some(d), Some(c)) => {
                let _ = writeln!(
                    s,
                    "| {name} | {}, {} | {}, {} | {} |",
                    d.cycles,
                    d.code_bytes,
                    c.cycles,
                    c.code_bytes,
                    ratio(c.cycles, Some(d.cycles))
                );
            }
            _ => {
                let _ = writeln!(s, "| {name} | not measured yet | | |");
            }
        }
    }
    s.push('\n');
    // The opt-level and the key forms, KEM by KEM (`measure::mega0`'s run).
    match std::fs::read_to_string(bench_dir().join(MCU).join("kem-levers.md")) {
        Ok(table) => {
            let _ = writeln!(
                s,
                "{table}\nThe compact keys: ML-KEM's and Kyber's keep σ instead of ŝ's encoding (ŝ sampled \
                 again: k² − k more samplings of ŝ_j in key generation, k in decapsulation), LightSaber's \
                 seed_s instead of s (one GenSecret more in decapsulation). The frames taken off the stack \
                 beneath the KEM in the sensor cost no cycles by themselves; the handshake's steps below \
                 carry every lever together."
            );
        }
        Err(_) => s.push_str(
            "The opt-level and key-form levers are not measured yet (`cargo xtask bench --mcu atmega4808`).\n",
        ),
    }
    s.push('\n');
    s.push_str(&key_readers_section());
    let Ok(before) = records::read_records(&before_levers_path()) else {
        return s;
    };
    let revision = before.first().map_or("?", |r| r.git_revision.as_str());
    let _ = write!(
        s,
        "The sensor handshake's steps on the {MCU} (the measuring firmware, `cargo xtask bench --mcu {MCU}`), \
         before (revision `{revision}`, `benchmarks/kem-mqtt-4808-before-issue50.json`) and after:\n\n\
         | suite | start before → after | finish before → after | start + finish after / before |\n\
         |---|---:|---:|---:|\n"
    );
    let step = |rs: &[Record], suite: &str, op: &str| {
        rs.iter()
            .find(|r| r.mcu == MCU && r.scheme == "kem-mqtt" && r.variant == suite && r.operation == op)
            .map(|r| r.cycles)
    };
    for suite in kem_mqtt::Suite::ALL {
        let name = suite.name();
        let after = (step(records, name, "start"), step(records, name, "finish"));
        let was = (step(&before, name, "start"), step(&before, name, "finish"));
        let cell = |b: Option<u64>, a: Option<u64>| match (b, a) {
            (Some(b), Some(a)) => format!("{b} → {a}"),
            (None, Some(a)) => format!("– → {a}"),
            (Some(b), None) => format!("{b} → –"),
            (None, None) => "–".into(),
        };
        let total = match (was, after) {
            ((Some(bs), Some(bf)), (Some(a_s), Some(af))) => ratio(a_s + af, Some(bs + bf)),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {total} |",
            cell(was.0, after.0),
            cell(was.1, after.1)
        );
    }
    s.push('\n');
    s
}

/// The classic parts' lever: the sensor's keys read from program memory
/// (`cargo xtask mqtt --key-readers`, every suite, on the ATmega1284p).
fn key_readers_section() -> String {
    const MCU: &str = "atmega1284p";
    let path = bench_dir().join(MCU).join(format!("{}.md", records::KEY_READERS_TABLE));
    match std::fs::read_to_string(path) {
        Ok(table) => format!(
            "The classic parts' lever: on the ATmega2560 (8 KB of SRAM) the sensor's keys stay in program \
             memory and the KEMs read them a piece at a time (`kem_common::KeyBytes::Reader`, `elpm`). \
             What the readers cost, like for like on the simulated {MCU} (the measuring firmware's handshake, \
             start + finish, its keys through readers against the same keys in slices; \
             `cargo xtask mqtt --key-readers`, from `benchmarks/{MCU}/{}.md`):\n\n{table}\n",
            records::KEY_READERS_TABLE
        ),
        Err(_) => "The key readers' cost is not measured yet (`cargo xtask mqtt --key-readers`).\n\n".into(),
    }
}

/// Why a fit table's ratio column is empty for most KEMs: their published
/// references were measured on the ATmega1284p, and those whose stack alone
/// exceeds `mcu`'s SRAM cannot run on it at all, so there is nothing like
/// for like to set beside ours there (the ATmega1284p's section has their
/// ratios). KEMs with a reference measured on `mcu`'s core are left out.
fn references_beyond(mcu: &target::Mcu) -> String {
    let beyond: Vec<String> = kem_registry::Kem::ALL
        .iter()
        .filter(|&&k| published::kem_reference_on_core(k, mcu.name).is_none())
        .filter_map(|&k| published::kem_reference(k, published::Tables::Flash).map(|r| (k, r)))
        .filter(|(_, r)| r.stack.iter().any(|&b| b > mcu.sram))
        .map(|(k, r)| {
            let [kg, en, de] = r.stack;
            format!("{} ({}: {kg}/{en}/{de} B of stack)", k.name(), r.name)
        })
        .collect();
    if beyond.is_empty() {
        return String::new();
    }
    format!(
        "The other KEMs have no ratio here: their published references were measured on the ATmega1284p \
         (the ratios are in its rows), and some of them need more than this part's {} B of SRAM for their \
         stack alone, so they could not run here either: {}.\n\n",
        mcu.sram,
        beyond.join("; ")
    )
}

pub(super) fn docs_markdown(records: &[Record]) -> String {
    let mut s = String::from(
        "<!-- Generated by `cargo xtask bench` / `cargo xtask report` from benchmarks/*/*.json. Do not edit. -->\n\
         # Benchmarks\n\n\
         Cycles are measured in simavr (cycle-accurate for the classic AVR core) between two\n\
         GPIOR0 marker writes around an `#[inline(never)]` call, minus the cost of an empty\n\
         window. Stack is the lowest SP inside the window (simulator), cross-checked by a\n\
         painted-stack scan in the firmware. Code is the measured function plus everything it\n\
         calls (static call graph). Tables: where the image keeps its NTT twiddle tables (flash,\n\
         the default, read with `lpm`; or SRAM with `ntt-tables-in-sram`), compared with the\n\
         published row of the same placement.\n\
         Hashing is the share of a KEM operation's cycles inside Keccak-f[1600] and Ascon-p[12]:\n\
         their calls in the window (simulator instruction profile) times their own cycles\n\
         (scheme `primitives`, measured on the same MCU), as pqm4 reports it. On the ATmega4808\n\
         (yasimavr) and on boards the cycles come from the firmware's on-chip timers read at the\n\
         marker points (equal to the marker count + 3 in simavr, checked on every operation).\n\n\
         Published figures: CTRU-Light paper artifact, ATmega1284p @ 20 MHz, avr-gcc 14.1 -O3\n\
         († tables in flash, ‡ in SRAM); ratio < 1 means we are faster.\n\n",
    );
    let mut by_mcu: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in records {
        by_mcu.entry(&r.mcu).or_default().push(r);
    }
    for (mcu, rs) in by_mcu {
        let _ = writeln!(s, "## {mcu}\n");
        if let Some(r) = rs.first() {
            let _ = writeln!(
                s,
                "Toolchain: {} · revision `{}` · {}\n",
                r.toolchain, r.git_revision, r.simulator
            );
        }
        // The ATmega4808's rows also on its AVRxt core (`cycles_avrxt`, priced from a trace).
        let avrxt = rs.iter().any(|r| r.cycles_avrxt.is_some());
        s.push_str("| scheme | variant | tables | operation | cycles |");
        s.push_str(if avrxt { " AVRxt cycles |" } else { "" });
        s.push_str(" hashing | stack B (sim / painted) | code B | published k-cycles | reference | ours/published |\n");
        s.push_str(if avrxt {
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|\n"
        } else {
            "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|\n"
        });
        // The application's image rows (sizes only) are in its own section.
        for r in rs.iter().filter(|r| r.operation != "image") {
            let painted = r
                .stack_bytes_painted
                .map(|p| p.to_string())
                .unwrap_or_else(|| "–".into());
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {}{} | {} | {} / {} | {} | {} | {} | {} |",
                r.scheme,
                r.variant,
                r.tables.as_deref().unwrap_or("–"),
                r.operation,
                r.cycles,
                if avrxt {
                    format!(" | {}", r.cycles_avrxt.map_or("–".into(), |c| c.to_string()))
                } else {
                    String::new()
                },
                hashing_share(records, r).map_or("–".into(), |x| format!("{:.0} %", 100.0 * x)),
                r.stack_bytes,
                painted,
                r.code_bytes,
                kcycles(r.published_cycles),
                r.published_reference.as_deref().unwrap_or(""),
                ratio(r.cycles, r.published_cycles)
            );
        }
        s.push('\n');
    }
    s.push_str(&kem_summary(records));
    s.push_str(&mqtt_summary(records));
    s.push_str(&app_summary(records));
    if let Some(run) = records::load_run() {
        s.push_str(&load_summary(&run));
        if let Some(before) = records::load_run_at(&records::load_before_rumqttc_path()) {
            s.push_str(&load_before_after(&before, &run));
        }
    }
    if let Some(run) = records::registry_run() {
        s.push_str(&registry_summary(&run));
    }
    s.push_str(&fit_sections());
    s.push_str(&levers_section(records));
    s.push_str(&targets::section(records));
    s.push_str(&related_summary(records));
    s.push_str("![KEM cycles, ours beside published](bench-kem.svg)\n\n![NTT routines](bench-ntt.svg)\n\n![RAM: stack + static tables](bench-ram.svg)\n\n## Published NTT table (embedded in the xtask)\n\n");
    s.push_str("| ring | implementation | NTT | iNTT | base mult | base inv |\n|---|---|---:|---:|---:|---:|\n");
    for r in published::NTT_TABLE {
        let mark = match r.tables {
            published::Tables::Flash => "†",
            published::Tables::Sram => "‡",
        };
        let k: Vec<String> = r
            .kcycles
            .iter()
            .map(|c| c.map(|c| format!("{c:.1}")).unwrap_or("–".into()))
            .collect();
        let _ = writeln!(s, "| {} | {}{mark} | {} |", r.ring, r.implementation, k.join(" | "));
    }
    s
}

/// Other AVR lattice results beside our closest operation: the same
/// quantity (cycles of one call), with the MCU and what each count includes.
fn related_summary(records: &[Record]) -> String {
    let mut s = String::from(
        "## Related AVR results\n\n\
         Other published or independently measured AVR lattice implementations, beside our\n\
         closest operation on the simulated ATmega1284p. Only cycles are compared; the work\n\
         differs where the last column says so, and the ATmega1281 is the same classic core.\n\n\
         | implementation | operation | MCU | cycles | ours | our cycles | ours/theirs | what ours includes |\n\
         |---|---|---|---:|---|---:|---:|---|\n",
    );
    for r in published::RELATED {
        let (scheme, variant, op) = r.ours;
        let ours = records.iter().find(|x| {
            x.mcu == "atmega1284p"
                && x.scheme == scheme
                && x.variant == variant
                && x.operation == op
                && x.default_placement()
        });
        let (cycles, ratio) = match ours {
            Some(x) => (grouped(x.cycles), format!("{:.2}", x.cycles as f64 / r.cycles as f64)),
            None => ("not measured".into(), "–".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {scheme} {variant} {op} | {cycles} | {ratio} | {} |",
            r.work,
            r.operation,
            r.mcu,
            grouped(r.cycles),
            r.ours_includes
        );
    }
    s.push('\n');
    s
}

/// RAM like for like: our peak stack plus the scheme's static data,
/// against the published row of the same table placement (a "-stack" row's
/// stack figure counts its tables, as our static data counts ours).
fn ram_summary(groups: &[[&Record; 3]]) -> String {
    let mut s = String::from(
        "\n### RAM: stack + static data, against the published row of the same placement\n\n\
         RAM = peak stack + the scheme's static data in the image (`.data`/`.bss` outside the\n\
         firmware harness: the NTT twiddle tables when they are in SRAM). The published \"-stack\"\n\
         rows keep their tables on the stack, so their stack figure is the same quantity; with\n\
         tables in flash neither side counts them.\n\n\
         | MCU | scheme | variant | tables | static B | RAM K/E/D | published row | pub. K/E/D | ratio K/E/D |\n\
         |---|---|---|---|---:|---|---|---|---|\n",
    );
    for [k, e, d] in groups {
        let Some(statics) = k.static_ram_bytes else { continue };
        let Some(row) = kem_row_of(k) else { continue };
        let ram = [k, e, d].map(|r| r.stack_bytes + statics);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {statics} | {}/{}/{} | {} | {}/{}/{} | {} |",
            k.mcu,
            k.scheme,
            k.variant,
            k.table_placement().name(),
            ram[0],
            ram[1],
            ram[2],
            row.name,
            row.stack[0],
            row.stack[1],
            row.stack[2],
            (0..3)
                .map(|i| format!("{:.2}", ram[i] as f64 / row.stack[i] as f64))
                .collect::<Vec<_>>()
                .join("/")
        );
    }
    s
}

/// The KEM table: ours beside the published row of each variant, and the published table.
fn kem_summary(records: &[Record]) -> String {
    let groups = kem_groups(records);
    let mut s = String::new();
    if !groups.is_empty() {
        s.push_str(
            "## KEMs\n\n\
             Each operation runs on two KAT records (randomness replayed from the NIST DRBG);\n\
             k-cycles are the larger run. Stack is the simulator's SP-tracking measure of the KEM\n\
             call alone; code is every function reachable from the scheme's three measured\n\
             functions (static call graph) or executed while they ran (calls through function\n\
             pointers), each function once; constant tables in `.data`/`.rodata` are not included\n\
             (they are counted as RAM below). Published: CTRU-Light paper artifact (avr-gcc 14.1 -O3, ATmega1284p).\n\
             Our Kyber512-r3 is compared with their Kyber512 (round 3); ML-KEM-512 is shown beside\n\
             the same row.\n\n\
             Variants (CTRU-Light; they never change an output byte) choose the reduction of the\n\
             q = 769 NTT (key generation, encryption, re-encryption): `montgomery-opt` is\n\
             NTT-friendly Montgomery (q = k·2^8 + 1, so the products by q⁻¹ and q are products by\n\
             the small k: two byte products per reduction), assembly; `montgomery` is\n\
             plain Montgomery (general 16-bit q⁻¹ and q: seven byte products), assembly;\n\
             `kred2x` is K-RED2X (k²·C0 − k·C1 + C2, two byte products, no 2^16 scaling),\n\
             assembly. Decryption's c·f is the same in all three: Karatsuba modulo q2 = 256 with a\n\
             32×32 assembly base case (the method the paper's tables imply lifts two NTT products,\n\
             mod 769 and mod 3329, by CRT; the definition allows any exact method, §6).\n\
             `default` (Kyber, LightSaber) is NTT-friendly Montgomery assembly. Tables: the NTT twiddle\n\
             tables in flash (the default) or in SRAM (`ntt-tables-in-sram`, the 1284p images the paper\n\
             also published with tables in SRAM); each row is compared with the published row of the same\n\
             placement (flash: their best or \"-flash\" row; SRAM: their \"-stack\" row).\n\n\
             | MCU | scheme | variant | tables | keygen k | encaps k | decaps k | stack K/E/D | code B | published row | pub. k K/E/D | pub. stack K/E/D | pub. code | ratio K/E/D |\n\
             |---|---|---|---|---:|---:|---:|---|---:|---|---|---|---:|---|\n",
        );
    }
    for [k, e, d] in &groups {
        let three = |f: &dyn Fn(&Record) -> String| format!("{}/{}/{}", f(k), f(e), f(d));
        let published = k.published_cycles.is_some();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            k.mcu,
            k.scheme,
            k.variant,
            k.table_placement().name(),
            kcycles(Some(k.cycles)),
            kcycles(Some(e.cycles)),
            kcycles(Some(d.cycles)),
            three(&|r| r.stack_bytes.to_string()),
            k.code_bytes,
            k.published_reference.as_deref().unwrap_or("–"),
            if published {
                three(&|r| kcycles(r.published_cycles))
            } else {
                "–".into()
            },
            if published {
                three(&|r| r.published_stack_bytes.map(|x| x.to_string()).unwrap_or_default())
            } else {
                "–".into()
            },
            k.published_code_bytes.map(|x| x.to_string()).unwrap_or("–".into()),
            if published {
                three(&|r| ratio(r.cycles, r.published_cycles))
            } else {
                "–".into()
            },
        );
    }
    s.push_str(&ram_summary(&groups));
    s.push_str("\n### Published KEM table (embedded in the xtask)\n\n");
    s.push_str(
        "| scheme, variant | keygen k | encaps k | decaps k | stack K/E/D | code B |\n|---|---:|---:|---:|---|---:|\n",
    );
    for r in published::KEM_TABLE {
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} | {:.1} | {}/{}/{} | {} |",
            r.name, r.kcycles[0], r.kcycles[1], r.kcycles[2], r.stack[0], r.stack[1], r.stack[2], r.code
        );
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    /// On the 6 KB part, the references that cannot run there are named
    /// with their stacks; those that could (CTRU-Light's, under 3.1 KB) are
    /// not, nor the ML-KEM sets, whose PQClean reference was measured on the
    /// part's own core (their ratio is in the table).
    #[test]
    fn references_beyond_the_sram_are_named_with_their_stack() {
        let note = references_beyond(&target::mcu("atmega4808").unwrap());
        assert!(
            note.contains("lightsaber (") && note.contains("10614/11266/11265 B"),
            "{note}"
        );
        assert!(!note.contains("ctru-light"), "{note}");
        assert!(!note.contains("ml-kem"), "{note}");
    }

    use super::*;
    use crate::report::chart;
    use crate::report::records::SCHEME;
    use crate::report::table::markdown_table;

    fn rec(op: &str, cycles: u64, published: Option<u64>) -> Record {
        Record {
            cycles,
            stack_bytes: 10,
            stack_bytes_painted: Some(10),
            code_bytes: 100,
            toolchain: "t".into(),
            git_revision: "r".into(),
            simulator: "s".into(),
            published_cycles: published,
            published_reference: published.map(|_| "ref".into()),
            ..Record::unmeasured("atmega1284p", SCHEME, "Kyber", op)
        }
    }

    #[test]
    fn the_hashing_share_counts_each_permutation_at_its_own_cost_on_the_same_mcu() {
        let mut keccak = rec("keccak-f1600", 100_000, None);
        keccak.scheme = "primitives".into();
        let mut ascon = rec("ascon-p12", 8_000, None);
        ascon.scheme = "primitives".into();
        let mut op = rec("keygen", 4_000_000, None);
        op.permutation_calls = Some([30, 5]);
        let records = [keccak.clone(), ascon, op.clone()];
        let share = hashing_share(&records, &op).unwrap();
        assert!((share - (30.0 * 100_000.0 + 5.0 * 8_000.0) / 4_000_000.0).abs() < 1e-12);
        // Without the permutations' own figures on that MCU, or without calls: none.
        assert_eq!(hashing_share(&[keccak, op.clone()], &op), None);
        op.mcu = "atmega4808".into();
        assert_eq!(hashing_share(&records, &op), None);
        op.permutation_calls = None;
        assert_eq!(hashing_share(&records, &op), None);
    }

    #[test]
    fn related_results_sit_beside_our_closest_operation() {
        let mut r = rec("keygen", 4_385_000, None);
        (r.scheme, r.variant) = ("ml-kem-512".into(), "default".into());
        let t = related_summary(&[r]);
        // PQClean's ML-KEM-512 keygen, 8,770,000 cycles: ours is half of it.
        assert!(
            t.contains("| ml-kem-512 default keygen | 4,385,000 | 0.50 | the same operation (FIPS 203) |"),
            "{t}"
        );
        // Rows whose operation we did not measure say so instead of a ratio.
        assert!(t.contains("| not measured | – |"), "{t}");
    }

    #[test]
    fn ram_is_stack_plus_statics_against_the_row_of_the_same_placement() {
        let group = |tables: &str, statics: u32| -> Vec<Record> {
            [("keygen", 1632), ("encaps", 2134), ("decaps", 2377)]
                .into_iter()
                .map(|(op, stack)| {
                    let mut r = rec(op, 1, None);
                    (r.scheme, r.variant) = ("kyber512-r3".into(), "default".into());
                    r.stack_bytes = stack;
                    r.static_ram_bytes = Some(statics);
                    r.tables = Some(tables.into());
                    r
                })
                .collect()
        };
        let sram = group("sram", 1030);
        let t = ram_summary(&[[&sram[0], &sram[1], &sram[2]]]);
        // KS25 LUT-stack: 3668/3742/4297 B; ours 2662/3164/3407 B.
        assert!(
            t.contains(
                "| sram | 1030 | 2662/3164/3407 | Kyber512 LUT-stack [KS25] | 3668/3742/4297 | 0.73/0.85/0.79 |"
            ),
            "{t}"
        );
        // Tables in flash: against their best (the flash row's stack).
        let flash = group("flash", 0);
        let t = ram_summary(&[[&flash[0], &flash[1], &flash[2]]]);
        assert!(
            t.contains(
                "| flash | 0 | 1632/2134/2377 | Kyber512 Montgomery (their best) | 2132/2206/2761 | 0.77/0.97/0.86 |"
            ),
            "{t}"
        );
    }

    #[test]
    fn reports_render() {
        let rs = [rec("forward", 50_000, Some(58_100)), rec("base_mul_acc", 1000, None)];
        let t = markdown_table(&rs);
        assert!(
            t.contains("| Kyber.forward | 50000 | 50.0 | 10 | 100 | 58.1 | 0.86 |"),
            "{t}"
        );
        // The NTT chart from records: the routine with a published figure only.
        let mut ntt = rs.clone();
        ntt[0].published_reference = Some("Z_3329[x]/(x^256+1) Kyber NTT-friendly‡".into());
        let bars = chart::ntt_bars(&ntt);
        assert_eq!(bars.len(), 1);
        assert_eq!(
            bars[0].label,
            "Z_3329[x]/(x^256+1) Kyber NTT-friendly (SRAM): forward NTT"
        );
        assert_eq!((bars[0].ours, bars[0].theirs), (50.0, 58.1));
        let md = docs_markdown(&rs);
        assert!(md.contains("Do not edit") && md.contains("## atmega1284p"));
        let json = serde_json::to_string(&rs).unwrap();
        assert_eq!(serde_json::from_str::<Vec<Record>>(&json).unwrap(), rs);
    }
}
