//! The stored measurements and everything generated from them. `records`
//! reads and writes `benchmarks/<mcu>/*.json` (and the load runs and fit
//! tables); `published` holds the figures they are compared with,
//! `targets` this round's goals, `energy` the datasheet currents of the
//! battery estimate, `board_table` the board table's data and page,
//! `floors` each KEM crate's SRAM floor. [`regenerate`] (`cargo xtask
//! report`) writes every generated document: `docs/benchmarks.md`
//! (`benchmarks`, `benchmarks_mqtt`), the README glance (`glance`), the
//! charts (`chart`), `docs/boards.md`; `table` is what their tables share.
//!
//! Everything here reads files and renders text: no build, no simulator.
//! The commands that measure (in `measure` and `mqtt`) save their records
//! here and call [`regenerate`] from above.

pub mod benchmarks;
pub mod benchmarks_mqtt;
pub mod board_table;
pub mod chart;
pub mod energy;
pub mod floors;
pub mod glance;
pub mod published;
pub mod records;
pub mod table;
pub mod targets;

use crate::report::benchmarks::docs_markdown;
use crate::report::glance::{glance_rows, readme_glance, replace_between_markers};
use crate::report::records::{all_records, bench_dir, write};
use crate::util;

/// `cargo xtask report`: regenerates `benchmarks/latest.json`, `docs/benchmarks.md` and the SVG chart.
pub fn regenerate() -> Result<(), String> {
    let records = all_records()?;
    let json = serde_json::to_string_pretty(&records).map_err(|e| e.to_string())?;
    write(&bench_dir().join("latest.json"), &(json + "\n"))?;
    let docs = util::workspace_root().join("docs");
    write(&docs.join("benchmarks.md"), &docs_markdown(&records))?;
    crate::report::floors::write_all(&records)?;
    let boards = crate::report::board_table::load()?;
    if !boards.is_empty() {
        let floors = crate::report::floors::boards_section(&records, &boards);
        write(
            &docs.join("boards.md"),
            &crate::report::board_table::markdown(&boards, &floors),
        )?;
    }
    // One chart per quantity; the README shows the KEM one.
    let kem = chart::bars_svg(
        "KEM operations on the ATmega1284p: ours beside the published AVR figures",
        "k-cycles (simavr, 20 MHz)",
        &chart::kem_bars(&records, &glance_rows()),
        true,
    )?;
    write(&docs.join("bench-kem.svg"), &kem)?;
    let ntt = chart::bars_svg(
        "NTT routines on the ATmega1284p: ours beside the published ones",
        "k-cycles (simavr, 20 MHz)",
        &chart::ntt_bars(&records),
        true,
    )?;
    write(&docs.join("bench-ntt.svg"), &ntt)?;
    let ram = chart::bars_svg(
        "RAM per KEM operation: peak stack + static tables, beside the published row with tables in SRAM",
        "bytes",
        &chart::ram_bars(&records, &glance_rows()),
        true,
    )?;
    write(&docs.join("bench-ram.svg"), &ram)?;
    // The single chart of earlier reports, replaced by the three above.
    let old = docs.join("benchmarks.svg");
    if old.exists() {
        std::fs::remove_file(&old).map_err(|e| format!("cannot remove {}: {e}", old.display()))?;
    }
    let readme = util::workspace_root().join("README.md");
    let text = std::fs::read_to_string(&readme).map_err(|e| format!("cannot read {}: {e}", readme.display()))?;
    write(&readme, &replace_between_markers(&text, &readme_glance(&records))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::records::Record;

    /// A cut of a real `benchmarks/latest.json` (CTRU-Light SHA3 K-RED2X,
    /// Kyber512-r3, two Kyber NTT routines, two KEM-MQTT suites).
    fn fixture() -> Vec<Record> {
        serde_json::from_str(include_str!("../../../tests/fixtures/records.json")).unwrap()
    }

    #[test]
    fn the_report_is_generated_from_stored_records() {
        let records = fixture();
        let md = docs_markdown(&records);
        for want in [
            "| atmega1284p | ctru-light-sha3 | kred2x |",
            "### RAM: stack + static data",
            "| atmega1284p | kyber512-r3 | default | flash | 1031 |",
            "## KEM-MQTT/1 sensor handshake",
            "## Related AVR results",
            "| ml-kem-512 default keygen | not measured | – |",
            "![KEM cycles, ours beside published](bench-kem.svg)",
        ] {
            assert!(md.contains(want), "docs/benchmarks.md lacks `{want}`");
        }
        let glance = readme_glance(&records);
        assert!(glance.contains("| CTRU-Light (SHA3) |"), "{glance}");
        assert!(glance.contains("| Kyber512 (round 3) |"), "{glance}");
        // Rows the fixture has no records for are left out, not invented.
        assert!(!glance.contains("LightSaber"), "{glance}");
        // Each chart draws the fixture's rows, with words for labels.
        let kem = chart::kem_bars(&records, &glance_rows());
        assert_eq!(kem.len(), 6);
        assert!(kem.iter().any(|b| b.label == "Kyber512 (round 3): decapsulation"));
        assert_eq!(
            chart::ntt_bars(&records).len(),
            1,
            "base_mul_acc has no published figure"
        );
        assert_eq!(chart::ram_bars(&records, &glance_rows()).len(), 6);
        let svg = chart::bars_svg("t", "k-cycles", &kem, true).unwrap();
        assert!(svg.contains("Kyber512 (round 3): decapsulation") && svg.contains("ours / published"));
    }
}
