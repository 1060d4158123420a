//! What the generated tables share: ratios, k-cycles and grouped digits,
//! a KEM variant's three records and the published row it is held to, and
//! the plain table of records `cargo xtask bench` prints.

use std::fmt::Write as _;

use crate::report::published;
use crate::report::records::{Record, SCHEME};

/// `ours / theirs` to two places (empty without `theirs`).
pub fn ratio(ours: u64, theirs: Option<u64>) -> String {
    theirs
        .map(|t| format!("{:.2}", ours as f64 / t as f64))
        .unwrap_or_default()
}

/// The published row `r`'s KEM variant is compared with (same placement).
pub(super) fn kem_row_of(r: &Record) -> Option<&'static published::KemRow> {
    let kem = kem_registry::Kem::ALL
        .into_iter()
        .find(|k| k.scheme().name() == r.scheme && k.variant() == r.variant)?;
    published::kem_reference(kem, r.table_placement())
}

pub(super) fn kcycles(c: Option<u64>) -> String {
    c.map(|c| format!("{:.1}", c as f64 / 1000.0)).unwrap_or_default()
}

/// The Markdown table of `records`.
pub fn markdown_table(records: &[Record]) -> String {
    let mut s = String::from(
        "| operation | cycles | k-cycles | stack B | code B | published k-cycles | ours/published |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in records {
        let _ = writeln!(
            s,
            "| {}.{} | {} | {} | {} | {} | {} | {} |",
            r.variant,
            r.operation,
            r.cycles,
            kcycles(Some(r.cycles)),
            r.stack_bytes,
            r.code_bytes,
            kcycles(r.published_cycles),
            ratio(r.cycles, r.published_cycles)
        );
    }
    s
}

/// 1234567 → "1,234,567".
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One KEM variant's three records, in operation order.
pub(super) fn kem_groups(records: &[Record]) -> Vec<[&Record; 3]> {
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.scheme != SCHEME && r.operation == "keygen") {
        let find = |op: &str| {
            records.iter().find(|x| {
                x.mcu == r.mcu
                    && x.scheme == r.scheme
                    && x.variant == r.variant
                    && x.operation == op
                    && x.tables == r.tables
            })
        };
        if let (Some(e), Some(d)) = (find("encaps"), find("decaps")) {
            out.push([r, e, d]);
        }
    }
    out
}
