//! The figures the sensor application's energy estimate rests on (issue
//! #36): each MCU's supply currents from its datasheet (its `avr_mcu`
//! record's), and the schedule and battery the estimate is priced for. An estimate, labelled as one
//! wherever it is printed: the measured part is the cycle counts; the
//! currents are datasheet typicals at 25 °C.
//!
//! The model, per day:
//!
//! ```text
//! t_handshake = handshake cycles / f + ROUND_TRIPS_PER_HANDSHAKE × t_link
//! t_reading   = seal cycles / f + t_link
//! t_awake     = READINGS_PER_DAY × t_reading + HANDSHAKES_PER_DAY × t_handshake
//! I_average   = I_sleep + (I_active − I_sleep) × t_awake / 86 400 s
//! life        = capacity / I_average
//! E_step      = V × I_active × t_step
//! ```
//!
//! `t_link` is the time the board stays awake per request for the link:
//! its frame out, the bridge's round trip to the broker (PUBACK), the reply
//! in, polled in active mode. It is assumed, not measured ([`LINK_S`]).

/// The CPU clock of every measurement (both MCUs run at 20 MHz, which
/// needs a 4.5–5.5 V supply on both).
pub const F_HZ: f64 = avr_mcu::CLOCK_HZ as f64;
/// The supply voltage the active current is given for.
pub const SUPPLY_V: f64 = 5.0;
/// Awake time per request for the link (assumed: a LAN broker's round trip).
pub const LINK_S: f64 = 0.020;
/// Requests of a handshake: nonce, ClientHello, rest, ClientFinished.
pub const ROUND_TRIPS_PER_HANDSHAKE: f64 = 4.0;
/// The default policy (`avr_wire::app::Policy::DEFAULT`): a reading a minute…
pub const READINGS_PER_DAY: f64 = 1440.0;
/// …and a handshake a day.
pub const HANDSHAKES_PER_DAY: f64 = 1.0;
/// The battery: 4 × AA alkaline (≈ 2,500 mAh) through a 5 V low-dropout
/// regulator, whose own quiescent current is not counted. (2 × AA give
/// 3 V, too little for 20 MHz on either MCU.)
pub const BATTERY_MAH: f64 = 2500.0;
/// The battery, as the tables name it.
pub const BATTERY: &str = "4 × AA (2,500 mAh) through a 5 V LDO";

/// One MCU's datasheet currents (its record's, `avr_mcu::Currents`, in
/// the units the estimate computes in).
#[derive(Clone, Copy, Debug)]
pub struct Currents {
    /// The MCU.
    pub mcu: &'static str,
    /// Active at 20 MHz, 5 V (mA).
    pub active_ma: f64,
    /// Asleep between readings, with the wake-up timer and the watchdog (µA).
    pub sleep_ua: f64,
    /// Where the figures come from, and how they were derived.
    pub source: &'static str,
}

/// Every MCU whose record has currents.
pub fn all() -> impl Iterator<Item = Currents> {
    avr_mcu::ALL.iter().filter_map(|m| {
        m.currents.map(|c| Currents {
            mcu: m.name,
            active_ma: f64::from(c.active_ua) / 1000.0,
            sleep_ua: f64::from(c.sleep_na) / 1000.0,
            source: c.source,
        })
    })
}

/// The currents of `mcu`, if known.
pub fn currents(mcu: &str) -> Option<Currents> {
    all().find(|c| c.mcu == mcu)
}

/// The estimate for one MCU and suite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Energy of a handshake (mJ).
    pub handshake_mj: f64,
    /// Energy of a reading (µJ).
    pub reading_uj: f64,
    /// Active cycles per hour at the schedule (link waits as cycles).
    pub active_cycles_per_hour: f64,
    /// The average current (µA).
    pub average_ua: f64,
    /// The battery's life (years).
    pub life_years: f64,
}

/// The estimate from a handshake's and a sealed reading's cycles.
pub fn estimate(c: Currents, handshake_cycles: u64, seal_cycles: u64) -> Estimate {
    let t_hs = handshake_cycles as f64 / F_HZ + ROUND_TRIPS_PER_HANDSHAKE * LINK_S;
    let t_reading = seal_cycles as f64 / F_HZ + LINK_S;
    let awake_s = READINGS_PER_DAY * t_reading + HANDSHAKES_PER_DAY * t_hs;
    let active_ua = c.active_ma * 1000.0;
    let average_ua = c.sleep_ua + (active_ua - c.sleep_ua) * awake_s / 86_400.0;
    Estimate {
        handshake_mj: SUPPLY_V * c.active_ma * t_hs,
        reading_uj: SUPPLY_V * c.active_ma * t_reading * 1000.0,
        active_cycles_per_hour: awake_s / 24.0 * F_HZ,
        average_ua,
        life_years: BATTERY_MAH * 1000.0 / average_ua / 24.0 / 365.25,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formula, by hand: 20 M cycles (1 s) + 4 × 20 ms of handshake,
    /// 20,000 cycles (1 ms) + 20 ms a reading.
    #[test]
    fn the_estimate_follows_its_formula() {
        let c = Currents {
            mcu: "x",
            active_ma: 10.0,
            sleep_ua: 1.0,
            source: "",
        };
        let e = estimate(c, 20_000_000, 20_000);
        assert!((e.handshake_mj - 5.0 * 10.0 * 1.08).abs() < 1e-9);
        assert!((e.reading_uj - 5.0 * 10.0 * 0.021 * 1000.0).abs() < 1e-6);
        let awake = 1440.0 * 0.021 + 1.08;
        assert!((e.average_ua - (1.0 + 9999.0 * awake / 86_400.0)).abs() < 1e-9);
        assert!((e.life_years * e.average_ua * 24.0 * 365.25 - 2_500_000.0).abs() < 1e-3);
        assert!(currents("atmega4808").is_some() && currents("atmega328p").is_none());
    }
}
