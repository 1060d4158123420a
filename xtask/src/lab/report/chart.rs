//! The benchmark report's charts (`docs/bench-*.svg`), one per quantity:
//! KEM cycles, NTT routines and RAM, ours beside the published figure, each
//! with real axes, words for labels, and (for cycles) a ratio panel.

use plotters::prelude::*;

use crate::report::records::Record;

/// One bar pair: a label, our value and the published one.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// What is measured, in words.
    pub label: String,
    /// Ours.
    pub ours: f64,
    /// The published figure it is compared with.
    pub theirs: f64,
}

const OURS: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const THEIRS: RGBColor = RGBColor(0xbb, 0xbb, 0xbb);
const ROW: u32 = 26;

/// Words for a KEM operation.
fn kem_op(op: &str) -> &str {
    match op {
        "keygen" => "key generation",
        "encaps" => "encapsulation",
        "decaps" => "decapsulation",
        other => other,
    }
}

/// Words for an NTT routine.
fn ntt_op(op: &str) -> &str {
    match op {
        "forward" => "forward NTT",
        "inverse" => "inverse NTT",
        "base_mul" => "base multiplication",
        "base_inv" => "base inversion",
        other => other,
    }
}

/// The ATmega1284p record of a KEM operation, tables in flash (the default).
fn kem_row<'r>(records: &'r [Record], scheme: &str, variant: &str, op: &str) -> Option<&'r Record> {
    records.iter().find(|r| {
        r.mcu == "atmega1284p"
            && r.scheme == scheme
            && r.variant == variant
            && r.operation == op
            && r.default_placement()
    })
}

/// The KEM rows (`schemes`: scheme, variant, label) with a published figure, in k-cycles.
pub fn kem_bars(records: &[Record], schemes: &[(&str, &str, &str)]) -> Vec<Bar> {
    let mut bars = Vec::new();
    for (scheme, variant, label) in schemes {
        for op in ["keygen", "encaps", "decaps"] {
            let found = kem_row(records, scheme, variant, op);
            if let Some(r) = found {
                if let Some(p) = r.published_cycles {
                    bars.push(Bar {
                        label: format!("{label}: {}", kem_op(op)),
                        ours: r.cycles as f64 / 1e3,
                        theirs: p as f64 / 1e3,
                    });
                }
            }
        }
    }
    bars
}

/// The NTT routines with a published figure, in k-cycles.
pub fn ntt_bars(records: &[Record]) -> Vec<Bar> {
    records
        .iter()
        .filter(|r| r.mcu == "atmega1284p" && r.scheme == crate::report::records::SCHEME)
        .filter_map(|r| {
            let reference = r.published_reference.as_deref()?;
            // "Z_769[x]/(x^512+1) K-RED2X†" → the ring and the published implementation.
            Some(Bar {
                label: format!(
                    "{}: {}",
                    reference.replace('†', " (flash)").replace('‡', " (SRAM)"),
                    ntt_op(&r.operation)
                ),
                ours: r.cycles as f64 / 1e3,
                theirs: r.published_cycles? as f64 / 1e3,
            })
        })
        .collect()
}

/// RAM per KEM operation (peak stack + the scheme's static data) beside
/// the published row of the same table placement (the default: flash), in bytes.
pub fn ram_bars(records: &[Record], schemes: &[(&str, &str, &str)]) -> Vec<Bar> {
    let mut bars = Vec::new();
    for (scheme, variant, label) in schemes {
        let Some(kem) = kem_registry::Kem::ALL
            .into_iter()
            .find(|k| k.scheme().name() == *scheme && k.variant() == *variant)
        else {
            continue;
        };
        let Some(row) = crate::report::published::kem_reference(kem, crate::report::published::Tables::Flash) else {
            continue;
        };
        for (i, op) in ["keygen", "encaps", "decaps"].into_iter().enumerate() {
            let found = kem_row(records, scheme, variant, op);
            if let Some((r, statics)) = found.and_then(|r| Some((r, r.static_ram_bytes?))) {
                bars.push(Bar {
                    label: format!("{label}: {}", kem_op(op)),
                    ours: f64::from(r.stack_bytes + statics),
                    theirs: f64::from(row.stack[i]),
                });
            }
        }
    }
    bars
}

/// A horizontal grouped bar chart (ours beside theirs), with a ratio panel
/// (ours / theirs, the line at 1 = as fast) when `ratio` is set.
pub fn bars_svg(title: &str, unit: &str, bars: &[Bar], ratio: bool) -> Result<String, String> {
    let err = |e: &dyn std::fmt::Display| format!("chart `{title}`: {e}");
    let n = bars.len().max(1);
    let height = 90 + ROW * n as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(|e| err(&e))?;
        let (left, right) = if ratio {
            let (l, r) = root.split_horizontally(820);
            (l, Some(r))
        } else {
            (root.clone(), None)
        };
        let max = bars.iter().map(|b| b.ours.max(b.theirs)).fold(0.0, f64::max) * 1.05;
        let labels: Vec<&str> = bars.iter().map(|b| b.label.as_str()).collect();
        let label_of = |y: &f64| -> String {
            let i = y.round();
            if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                // The first bar on top.
                labels
                    .get(n - 1 - i as usize)
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            } else {
                String::new()
            }
        };
        let mut chart = ChartBuilder::on(&left)
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(380)
            .build_cartesian_2d(0.0..max.max(1.0), -0.5..(n as f64 - 0.5))
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&label_of)
            .x_desc(unit)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(|e| err(&e))?;
        // Ours above, theirs below the row's centre line.
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let y = (n - 1 - i) as f64;
                Rectangle::new([(0.0, y - 0.02), (b.ours, y - 0.38)], OURS.filled())
            }))
            .map_err(|e| err(&e))?
            .label("ours")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], OURS.filled()));
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let y = (n - 1 - i) as f64;
                Rectangle::new([(0.0, y + 0.02), (b.theirs, y + 0.38)], THEIRS.filled())
            }))
            .map_err(|e| err(&e))?
            .label("published")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], THEIRS.filled()));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(|e| err(&e))?;
        if let Some(right) = &right {
            let top = bars.iter().map(|b| b.ours / b.theirs).fold(1.0, f64::max) * 1.1;
            let mut r = ChartBuilder::on(right)
                .margin(8)
                .x_label_area_size(36)
                .y_label_area_size(4)
                .build_cartesian_2d(0.0..top, -0.5..(n as f64 - 0.5))
                .map_err(|e| err(&e))?;
            r.configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_labels(5)
                .x_desc("ours / published")
                .label_style(("sans-serif", 12))
                .draw()
                .map_err(|e| err(&e))?;
            r.draw_series(bars.iter().enumerate().map(|(i, b)| {
                let y = (n - 1 - i) as f64;
                Rectangle::new([(0.0, y - 0.3), (b.ours / b.theirs, y + 0.3)], OURS.mix(0.7).filled())
            }))
            .map_err(|e| err(&e))?;
            r.draw_series(std::iter::once(PathElement::new(
                vec![(1.0, -0.5), (1.0, n as f64 - 0.5)],
                BLACK.stroke_width(1),
            )))
            .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_has_axes_words_and_both_series() {
        let bars = vec![
            Bar {
                label: "Kyber512 (round 3): key generation".into(),
                ours: 3946.6,
                theirs: 5231.0,
            },
            Bar {
                label: "LightSaber: decapsulation".into(),
                ours: 6069.5,
                theirs: 7496.0,
            },
        ];
        let svg = bars_svg("KEM cycles", "k-cycles", &bars, true).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for text in [
            "KEM cycles",
            "k-cycles",
            "ours / published",
            "Kyber512 (round 3): key generation",
            "published",
        ] {
            assert!(svg.contains(text), "missing `{text}`");
        }
        // Four data bars and two ratio bars, at least: rectangles filled in our colours.
        assert!(svg.matches("fill=\"#1F77B4\"").count() >= 3, "{svg}");
    }
}
