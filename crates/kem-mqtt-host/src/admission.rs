//! Admission control for ClientHellos: cheap rate limits consulted *before*
//! the broker spends a decapsulation (and, hybrid, two X25519) on a hello.
//!
//! Why: a ClientHello for any registered client id, with garbage where the
//! ciphertext goes, costs the broker a full decapsulation, key schedule and
//! two encapsulations (about 10 ms of CPU) before anything can tell it is
//! garbage — the hello is not authenticated until the ClientFinished. Without
//! a limit anyone who knows one client id can keep a broker core busy.
//!
//! What: three token buckets, each a GCRA ("generic cell rate algorithm":
//! one timestamp per key instead of a token count and a refill time), checked
//! together:
//! - per client id (the id inside the hello, after the registry lookup, so
//!   only registered ids get a bucket);
//! - per source (an IP address in the broker plugin; the topic-mode gateway
//!   sees only the broker's connection, so it passes `None`);
//! - one global bucket, the ceiling on decapsulations per second whatever
//!   the ids and sources.
//!
//! A hello is admitted only if all of its buckets have a token, and then
//! takes one from each; a refused hello takes none, so a flood refused by
//! the global bucket does not also drain the ids it names.
//!
//! Memory is bounded: each keyed table holds at most `max_keys` buckets.
//! When it is full, buckets that have refilled completely are dropped
//! (they are indistinguishable from a fresh one); if none can be dropped, a
//! new key shares one *overflow* bucket with every other untracked key, so
//! spraying fresh ids or addresses cannot evict (and thereby refill) the
//! buckets of keys already tracked, nor grow the table.
//!
//! Time is passed in (`now`), never read here, so tests drive the clock.
//!
//! Limits of the design: a per-id bucket can be drained by anyone who knows
//! the id; the sensor then gets no BrokerHello until the bucket refills
//! (a denial of service against that id, bounded in time, not a way in).
//! In topic mode the gateway cannot tell sources apart, so the per-id and
//! global buckets are all it has.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// One bucket's shape: `burst` tokens at most, one more every `interval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Tokens available after a quiet period (≥ 1; 0 is treated as 1).
    pub burst: u32,
    /// Time to earn one token back (a zero interval means "no limit").
    pub interval: Duration,
}

impl Rate {
    /// `burst` tokens, refilled at `per_second` tokens a second (≥ 1 µs
    /// apart; a non-positive or non-finite rate is one token per hour).
    pub fn per_second(burst: u32, per_second: f64) -> Self {
        let interval = if per_second.is_finite() && per_second > 0.0 {
            Duration::from_secs_f64((1.0 / per_second).max(1e-6))
        } else {
            Duration::from_secs(3600)
        };
        Rate { burst, interval }
    }

    /// The time a full burst takes to earn back.
    fn tolerance(&self) -> Duration {
        self.interval.saturating_mul(self.burst.max(1).saturating_sub(1))
    }
}

/// A GCRA bucket: `tat` is the theoretical arrival time of the next
/// conforming request; a request at `now` conforms if
/// `tat − (burst − 1)·interval ≤ now`.
#[derive(Clone, Copy, Debug)]
struct Gcra {
    tat: Option<Instant>,
}

impl Gcra {
    const FRESH: Gcra = Gcra { tat: None };

    fn conforms(&self, rate: &Rate, now: Instant) -> bool {
        match self.tat {
            None => true,
            Some(tat) => match tat.checked_duration_since(now) {
                // tat is in the future: how far must be within the burst.
                Some(ahead) => ahead <= rate.tolerance(),
                None => true,
            },
        }
    }

    fn take(&mut self, rate: &Rate, now: Instant) {
        let base = match self.tat {
            Some(tat) if tat > now => tat,
            _ => now,
        };
        self.tat = Some(base + rate.interval);
    }

    /// Whether the bucket is full again at `now` (it then behaves like a
    /// fresh one and may be forgotten).
    fn refilled(&self, now: Instant) -> bool {
        self.tat.is_none_or(|tat| tat <= now)
    }
}

/// A table of buckets, one per key, bounded to `max_keys` entries plus one
/// shared overflow bucket.
#[derive(Debug)]
pub struct Limiter<K> {
    rate: Rate,
    max_keys: usize,
    buckets: HashMap<K, Gcra>,
    overflow: Gcra,
    // After a sweep that freed nothing, no new sweep before this instant:
    // a table full of busy buckets is not rescanned for every request.
    next_sweep: Option<Instant>,
}

/// Which slot of a [`Limiter`] a key uses.
enum Slot<K> {
    Tracked(K),
    New(K),
    Overflow,
}

impl<K: Eq + Hash + Clone> Limiter<K> {
    /// A table with buckets of `rate`, holding at most `max_keys` keys.
    pub fn new(rate: Rate, max_keys: usize) -> Self {
        Limiter {
            rate,
            max_keys,
            buckets: HashMap::new(),
            overflow: Gcra::FRESH,
            next_sweep: None,
        }
    }

    /// Keys currently tracked (never more than `max_keys`).
    pub fn tracked(&self) -> usize {
        self.buckets.len()
    }

    /// Checks and, if it conforms, takes a token for `key` (a one-table
    /// [`Admission`]).
    pub fn check(&mut self, key: &K, now: Instant) -> bool {
        let slot = self.slot(key, now);
        let ok = self.conforms(&slot, now);
        if ok {
            self.take(slot, now);
        }
        ok
    }

    fn slot(&mut self, key: &K, now: Instant) -> Slot<K> {
        if self.buckets.contains_key(key) {
            return Slot::Tracked(key.clone());
        }
        if self.buckets.len() >= self.max_keys {
            self.sweep(now);
        }
        if self.buckets.len() < self.max_keys {
            Slot::New(key.clone())
        } else {
            Slot::Overflow
        }
    }

    fn sweep(&mut self, now: Instant) {
        if self.next_sweep.is_some_and(|t| now < t) {
            return;
        }
        self.buckets.retain(|_, b| !b.refilled(now));
        self.next_sweep = (self.buckets.len() >= self.max_keys).then(|| now + self.rate.interval);
    }

    fn conforms(&self, slot: &Slot<K>, now: Instant) -> bool {
        match slot {
            Slot::Tracked(k) => self.buckets.get(k).is_none_or(|b| b.conforms(&self.rate, now)),
            Slot::New(_) => true,
            Slot::Overflow => self.overflow.conforms(&self.rate, now),
        }
    }

    fn take(&mut self, slot: Slot<K>, now: Instant) {
        let rate = self.rate;
        match slot {
            Slot::Tracked(k) | Slot::New(k) => self.buckets.entry(k).or_insert(Gcra::FRESH).take(&rate, now),
            Slot::Overflow => self.overflow.take(&rate, now),
        }
    }
}

/// Why a hello was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Too many hellos for this client id.
    ClientId,
    /// Too many hellos from this source.
    Source,
    /// Too many hellos overall.
    Global,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::ClientId => "rate limit for this client id",
            Refusal::Source => "rate limit for this source",
            Refusal::Global => "global handshake rate limit",
        })
    }
}

/// Limits for an [`Admission`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// Per client id.
    pub per_id: Rate,
    /// Per source.
    pub per_source: Rate,
    /// For everything together.
    pub global: Rate,
    /// Keys tracked per table (ids and sources each).
    pub max_keys: usize,
}

impl Default for AdmissionConfig {
    /// A sensor needs one handshake per connection: 4 at once per id, then
    /// one every 5 s; 16 at once per source, then 2 a second; 200 at once
    /// overall, then 50 a second (with ≈10 ms per hello, half a core at
    /// most); 4,096 ids and sources tracked (≈100 bytes each).
    fn default() -> Self {
        AdmissionConfig {
            per_id: Rate {
                burst: 4,
                interval: Duration::from_secs(5),
            },
            per_source: Rate::per_second(16, 2.0),
            global: Rate::per_second(200, 50.0),
            max_keys: 4096,
        }
    }
}

/// Per-id, per-source and global limits on ClientHellos (see the module
/// documentation). `S` is the source's type: an IP address by default.
#[derive(Debug)]
pub struct Admission<S = IpAddr> {
    ids: Limiter<Vec<u8>>,
    sources: Limiter<S>,
    global: Gcra,
    global_rate: Rate,
}

impl<S: Eq + Hash + Clone> Admission<S> {
    /// Limits as configured.
    pub fn new(config: AdmissionConfig) -> Self {
        Admission {
            ids: Limiter::new(config.per_id, config.max_keys),
            sources: Limiter::new(config.per_source, config.max_keys),
            global: Gcra::FRESH,
            global_rate: config.global,
        }
    }

    /// Whether a hello for `client_id` from `source` (`None`: unknown) may
    /// be processed at `now`; if so its tokens are taken. Call it after the
    /// cheap checks (format, registered id, allowed suite) and before any
    /// decapsulation.
    pub fn admit(&mut self, client_id: &[u8], source: Option<&S>, now: Instant) -> Result<(), Refusal> {
        // Global first: under a flood it is the one that is empty, and
        // checking it touches no table.
        if !self.global.conforms(&self.global_rate, now) {
            return Err(Refusal::Global);
        }
        let id_slot = self.ids.slot(&client_id.to_vec(), now);
        if !self.ids.conforms(&id_slot, now) {
            return Err(Refusal::ClientId);
        }
        let source_slot = match source {
            Some(s) => {
                let slot = self.sources.slot(s, now);
                if !self.sources.conforms(&slot, now) {
                    return Err(Refusal::Source);
                }
                Some(slot)
            }
            None => None,
        };
        self.global.take(&self.global_rate, now);
        self.ids.take(id_slot, now);
        if let Some(slot) = source_slot {
            self.sources.take(slot, now);
        }
        Ok(())
    }

    /// Client ids and sources currently tracked (each at most `max_keys`).
    pub fn tracked(&self) -> (usize, usize) {
        (self.ids.tracked(), self.sources.tracked())
    }
}

impl<S: Eq + Hash + Clone> Default for Admission<S> {
    fn default() -> Self {
        Self::new(AdmissionConfig::default())
    }
}

/// `BURST/INTERVAL` as the plugin's options and the gateway's flags write a
/// rate: `BURST` hellos at once, then one more every
/// `INTERVAL` (`5s`, `500ms`); `off` for no limit.
pub fn parse_rate(v: &str) -> Result<Rate, String> {
    let bad = || format!("rate {v:?}: expected BURST/INTERVAL such as 4/5s or 16/500ms, or off");
    if v.trim() == "off" {
        return Ok(Rate {
            burst: 1,
            interval: Duration::ZERO,
        });
    }
    let (burst, interval) = v.trim().split_once('/').ok_or_else(bad)?;
    let burst: u32 = burst.trim().parse().map_err(|_| bad())?;
    let interval = parse_duration(interval).ok_or_else(bad)?;
    if burst == 0 {
        return Err(bad());
    }
    Ok(Rate { burst, interval })
}

/// `500ms`, `5s`, `10m` or `24h`, not zero (the options of the plugin and the gateway).
pub fn parse_duration(v: &str) -> Option<Duration> {
    let v = v.trim();
    let (number, unit) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1_000)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60_000)
    } else {
        (v.strip_suffix('h')?, 3_600_000)
    };
    let d = Duration::from_millis(number.trim().parse::<u64>().ok()?.checked_mul(unit)?);
    (!d.is_zero()).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_bad_ones_are_errors() {
        assert_eq!(
            parse_rate("4/5s"),
            Ok(Rate {
                burst: 4,
                interval: Duration::from_secs(5)
            })
        );
        assert_eq!(
            parse_rate(" 16 / 500ms "),
            Ok(Rate {
                burst: 16,
                interval: Duration::from_millis(500)
            })
        );
        assert_eq!(parse_rate("off").map(|r| r.interval), Ok(Duration::ZERO));
        for bad in ["", "4", "4/", "/5s", "0/5s", "4/0s", "4/5", "4/5x", "-1/5s", "4/1.5s"] {
            assert!(parse_rate(bad).is_err(), "{bad:?}");
        }
        for (text, ms) in [("250ms", 250), ("5s", 5_000), ("10m", 600_000), ("24h", 86_400_000)] {
            assert_eq!(parse_duration(text), Some(Duration::from_millis(ms)), "{text}");
        }
        for bad in ["", "0s", "5", "5d", "h", "1.5h", "99999999999999999h"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn rate(burst: u32, interval_ms: u64) -> Rate {
        Rate {
            burst,
            interval: ms(interval_ms),
        }
    }

    #[test]
    fn burst_then_one_per_interval() {
        let t0 = Instant::now();
        let mut l = Limiter::new(rate(3, 100), 16);
        let k = 7u32;
        assert!(l.check(&k, t0));
        assert!(l.check(&k, t0));
        assert!(l.check(&k, t0));
        assert!(!l.check(&k, t0), "burst of 3 exhausted");
        assert!(!l.check(&k, t0 + ms(99)), "not yet one interval later");
        assert!(l.check(&k, t0 + ms(100)));
        assert!(!l.check(&k, t0 + ms(150)));
        // After a long quiet period the burst is back, not more.
        let t1 = t0 + ms(10_000);
        for _ in 0..3 {
            assert!(l.check(&k, t1));
        }
        assert!(!l.check(&k, t1));
    }

    #[test]
    fn keys_are_independent() {
        let t0 = Instant::now();
        let mut l = Limiter::new(rate(1, 1000), 16);
        assert!(l.check(&1u8, t0));
        assert!(!l.check(&1u8, t0));
        assert!(l.check(&2u8, t0), "another key has its own bucket");
    }

    #[test]
    fn memory_is_bounded_and_spraying_keys_does_not_refill_tracked_ones() {
        let t0 = Instant::now();
        let mut l = Limiter::new(rate(1, 1000), 4);
        assert!(l.check(&0u32, t0));
        assert!(!l.check(&0u32, t0));
        for k in 1..10_000u32 {
            l.check(&k, t0);
            assert!(l.tracked() <= 4);
        }
        // Key 0 is still tracked and still empty.
        assert!(!l.check(&0u32, t0 + ms(1)));
        // The untracked keys shared one overflow bucket: one token in all.
        assert!(!l.check(&123_456u32, t0 + ms(1)));
        // Once the tracked buckets refill they are swept and new keys get their own.
        let later = t0 + ms(5000);
        assert!(l.check(&555_555u32, later));
        assert!(l.check(&666_666u32, later));
        assert!(l.tracked() <= 4);
    }

    #[test]
    fn admission_checks_all_buckets_and_refusals_take_nothing() {
        let t0 = Instant::now();
        let mut a: Admission<u32> = Admission::new(AdmissionConfig {
            per_id: rate(2, 1000),
            per_source: rate(3, 1000),
            global: rate(5, 1000),
            max_keys: 64,
        });
        assert_eq!(a.admit(b"s1", Some(&1), t0), Ok(()));
        assert_eq!(a.admit(b"s1", Some(&1), t0), Ok(()));
        assert_eq!(a.admit(b"s1", Some(&1), t0), Err(Refusal::ClientId));
        assert_eq!(a.admit(b"s2", Some(&1), t0), Ok(()));
        assert_eq!(a.admit(b"s3", Some(&1), t0), Err(Refusal::Source));
        // The refused s3 took no token from s3's bucket.
        assert_eq!(a.admit(b"s3", Some(&2), t0), Ok(()));
        assert_eq!(a.admit(b"s3", None, t0), Ok(()));
        // 5 admitted: the global bucket is empty for everyone.
        assert_eq!(a.admit(b"s9", Some(&9), t0), Err(Refusal::Global));
        assert_eq!(a.admit(b"s9", Some(&9), t0 + ms(1000)), Ok(()));
    }

    #[test]
    fn rate_per_second() {
        let r = Rate::per_second(4, 2.0);
        assert_eq!(r.interval, ms(500));
        assert_eq!(Rate::per_second(1, 0.0).interval, Duration::from_secs(3600));
        assert_eq!(Rate::per_second(1, f64::NAN).interval, Duration::from_secs(3600));
    }
}
