//! Tiny option parsing and process helpers for the AVR tasks.

use std::process::Command;

/// Parsed `--key value` options and `--flag`s.
#[derive(Debug, Default)]
pub struct Opts {
    values: Vec<(String, String)>,
    flags: Vec<String>,
}

impl Opts {
    /// Parses `args`; `valued` options take a value, `flags` do not; anything else is an error.
    pub fn parse(args: &[String], valued: &[&str], flags: &[&str]) -> Result<Opts, String> {
        let mut o = Opts::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (key, inline) = match a.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (a.as_str(), None),
            };
            if valued.contains(&key) {
                let v = match inline {
                    Some(v) => v,
                    None => it.next().ok_or_else(|| format!("{key} needs a value"))?.clone(),
                };
                o.values.push((key.to_string(), v));
            } else if flags.contains(&key) && inline.is_none() {
                o.flags.push(key.to_string());
            } else {
                return Err(format!("unexpected argument `{a}`"));
            }
        }
        Ok(o)
    }

    /// The last value of `key`.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A numeric option, or `default`.
    pub fn number(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.value(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("{key}: `{v}` is not a number")),
        }
    }

    /// Whether `flag` was given.
    pub fn flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// Runs a command and returns its stdout; a failure is an error with its stderr.
pub fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A small deterministic PRNG (SplitMix64), so runs are reproducible from a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeds the generator.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (multiply-shift, no division).
    pub fn below(&mut self, bound: u32) -> u32 {
        (((self.next_u64() >> 32) * bound as u64) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        let args: Vec<String> = ["--mcu", "atmega4808", "--filter=kyber", "--quick"]
            .map(String::from)
            .to_vec();
        let o = Opts::parse(&args, &["--mcu", "--filter"], &["--quick"]).unwrap();
        assert_eq!(o.value("--mcu"), Some("atmega4808"));
        assert_eq!(o.value("--filter"), Some("kyber"));
        assert!(o.flag("--quick"));
        assert!(Opts::parse(&["--bogus".to_string()], &[], &[]).is_err());
        assert!(Opts::parse(&["--mcu".to_string()], &["--mcu"], &[]).is_err());
    }

    #[test]
    fn rng_bounds() {
        let mut r = Rng::new(1);
        assert!((0..10_000).all(|_| r.below(7) < 7));
        let mut seen = [false; 5];
        (0..1000).for_each(|_| seen[r.below(5) as usize] = true);
        assert!(seen.iter().all(|&s| s));
    }
}
