//! Progress on long work: a bar with the elapsed time when stderr is a
//! terminal; otherwise one plain line per step, so CI logs stay readable.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

/// The steps of one long task (`bench`, `ci`, …).
pub struct Progress {
    label: &'static str,
    total: u64,
    done: u64,
    started: Instant,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A task of `total` steps.
    pub fn new(label: &'static str, total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            let style =
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {prefix} {bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_prefix(label);
            bar.enable_steady_tick(std::time::Duration::from_millis(250));
            bar
        });
        Progress {
            label,
            total,
            done: 0,
            started: Instant::now(),
            bar,
        }
    }

    /// Starts the next step, named `what`.
    pub fn step(&mut self, what: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done);
                bar.set_message(what.to_string());
            }
            None => eprintln!("{}", self.line(what)),
        }
        self.done += 1;
    }

    /// The plain line of a step (no terminal).
    fn line(&self, what: &str) -> String {
        format!(
            "xtask: {} {}/{} [{:.0} s]: {what}",
            self.label,
            self.done + 1,
            self.total,
            self.started.elapsed().as_secs_f64()
        )
    }

    /// Ends the task, with its elapsed time.
    pub fn finish(self) {
        let secs = self.started.elapsed().as_secs_f64();
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        eprintln!("xtask: {} done: {} steps in {secs:.0} s", self.label, self.done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_count_steps() {
        let mut p = Progress {
            label: "bench",
            total: 3,
            done: 0,
            started: Instant::now(),
            bar: None,
        };
        assert!(p.line("rings").starts_with("xtask: bench 1/3 [0 s]: rings"));
        p.step("rings");
        assert!(p.line("kyber").starts_with("xtask: bench 2/3"));
        assert_eq!(p.done, 1);
    }
}
