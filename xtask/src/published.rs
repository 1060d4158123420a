//! Published NTT figures we compare against (the CTRU-Light paper's artifact,
//! ATmega1284p at 20 MHz, avr-gcc 14.1 -O3; see
//! `/work/shared/specs/published-results.md`). Cycles in thousands.

use firmware::{Kind, Ring};

/// Where an implementation keeps its twiddle tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tables {
    /// † in flash.
    Flash,
    /// ‡ in SRAM (stack).
    Sram,
}

/// One row of the published NTT table.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The ring as the paper writes it.
    pub ring: &'static str,
    /// Implementation (and source, when not the paper's own).
    pub implementation: &'static str,
    /// Table placement.
    pub tables: Tables,
    /// NTT, iNTT, base multiplication, base inversion (k-cycles).
    pub kcycles: [Option<f64>; 4],
}

const fn row(ring: &'static str, implementation: &'static str, tables: Tables, k: [Option<f64>; 4]) -> Row {
    Row {
        ring,
        implementation,
        tables,
        kcycles: k,
    }
}

use Tables::{Flash as F, Sram as S};

/// The NTT table, verbatim.
pub const NTT_TABLE: &[Row] = &[
    row(
        "Z_769[x]/(x^512+1)",
        "Montgomery",
        F,
        [Some(131.1), Some(161.5), Some(117.3), Some(621.4)],
    ),
    row(
        "Z_769[x]/(x^512+1)",
        "NTT-friendly",
        F,
        [Some(115.0), Some(140.8), Some(101.5), Some(518.9)],
    ),
    row(
        "Z_769[x]/(x^512+1)",
        "NTT-friendly",
        S,
        [Some(114.7), Some(140.5), Some(101.6), Some(518.9)],
    ),
    row(
        "Z_769[x]/(x^512+1)",
        "K-RED2X",
        F,
        [Some(108.1), Some(127.2), Some(99.7), Some(439.4)],
    ),
    row(
        "Z_3329[x]/(x^512+1)",
        "Montgomery",
        F,
        [Some(136.3), Some(250.9), Some(144.0), None],
    ),
    row(
        "Z_3329[x]/(x^512+1)",
        "NTT-friendly",
        F,
        [Some(115.0), Some(193.3), Some(102.5), None],
    ),
    row(
        "Z_3329[x]/(x^512+1)",
        "NTT-friendly",
        S,
        [Some(114.7), Some(193.0), Some(102.5), None],
    ),
    row(
        "Z_3329[x]/(x^256+1) Kyber",
        "Montgomery [KS25]",
        S,
        [Some(67.1), Some(119.3), Some(95.6), None],
    ),
    row(
        "Z_3329[x]/(x^256+1) Kyber",
        "Signed LUT [KS25]",
        F,
        [Some(62.2), Some(72.4), Some(43.3), None],
    ),
    row(
        "Z_3329[x]/(x^256+1) Kyber",
        "Signed LUT [KS25]",
        S,
        [Some(58.4), Some(67.8), Some(41.2), None],
    ),
    row(
        "Z_3329[x]/(x^256+1) Kyber",
        "NTT-friendly",
        S,
        [Some(58.1), Some(70.0), Some(38.6), None],
    ),
    row(
        "Z_3329[x]/(x^256+1) Saber",
        "Barrett [HKS25]",
        S,
        [Some(60.0), Some(163.5), Some(353.7), None],
    ),
    row(
        "Z_3329[x]/(x^256+1) Saber",
        "NTT-friendly",
        F,
        [Some(58.3), Some(80.0), Some(43.2), None],
    ),
    row(
        "Z_3329[x]/(x^256+1) Saber",
        "NTT-friendly",
        S,
        [Some(58.1), Some(70.0), Some(38.7), None],
    ),
    row(
        "Z_7681[x]/(x^256+1) Saber",
        "Barrett [HKS25]",
        F,
        [Some(70.3), Some(188.7), Some(197.5), None],
    ),
    row(
        "Z_7681[x]/(x^256+1) Saber",
        "NTT-friendly",
        F,
        [Some(67.7), Some(89.6), Some(21.9), None],
    ),
    row(
        "Z_7681[x]/(x^256+1) Saber",
        "NTT-friendly",
        S,
        [Some(67.2), Some(91.5), Some(24.3), None],
    ),
];

/// The row our ring is compared with: the paper's version of the same
/// reduction, tables in SRAM where published (ours are in SRAM on the 1284p).
pub fn reference(ring: Ring) -> &'static Row {
    let index = match ring {
        Ring::Ctru769 => 3,    // K-RED2X† (no ‡ row)
        Ring::Ctru3329 => 6,   // NTT-friendly‡
        Ring::Kyber => 10,     // NTT-friendly‡
        Ring::Saber3329 => 13, // NTT-friendly‡
        Ring::Saber7681 => 16, // NTT-friendly‡
    };
    &NTT_TABLE[index]
}

/// Published cycles for (ring, kind), if the paper measured it.
pub fn cycles(ring: Ring, kind: Kind) -> Option<u64> {
    let col = match kind {
        Kind::Forward => 0,
        Kind::Inverse => 1,
        Kind::BaseMul => 2,
        Kind::BaseInv => 3,
        Kind::BaseMulAcc => return None,
    };
    reference(ring).kcycles[col].map(|k| (k * 1000.0).round() as u64)
}

/// A short label of the reference row.
pub fn label(ring: Ring) -> String {
    let r = reference(ring);
    let mark = match r.tables {
        Tables::Flash => "†",
        Tables::Sram => "‡",
    };
    format!("{} {}{mark}", r.ring, r.implementation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_match_rings() {
        assert_eq!(cycles(Ring::Kyber, Kind::Forward), Some(58_100));
        assert_eq!(cycles(Ring::Ctru769, Kind::BaseInv), Some(439_400));
        assert_eq!(cycles(Ring::Kyber, Kind::BaseInv), None);
        for r in Ring::ALL {
            let row = reference(r);
            assert!(row.ring.contains(&format!("Z_{}", r.q())) && row.ring.contains(&format!("^{}", r.n())));
        }
    }
}
