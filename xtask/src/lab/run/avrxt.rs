//! AVRxt cycle counts of the ATmega4808, priced from an instruction trace.
//!
//! yasimavr times every instruction as the classic core does (AVRe+), except
//! RCALL, which it charges 4 cycles (the 22-bit-PC figure; 3 on a classic
//! core with 48 KB: found by this pricing, 1,296 RCALLs a CTRU-Light
//! decapsulation). The 4808's AVRxt core (16-bit PC) is faster on a few
//! instructions, from the Cycles table of each instruction in Microchip's
//! *AVR Instruction Set Manual* (DS40002198, §6): PUSH, ST/STD, SBI, CBI,
//! RCALL, ICALL and CALL take one cycle less than AVRe, LDS one more; LD,
//! LDD, POP, STS, LPM, RET, the multiplications, jumps, branches and skips
//! take the same. (The manual's tables for the X- and Z-pointer forms of LD
//! and ST did not surface; they are taken as the Y forms'.) See [`timing`].
//!
//! `firmware/avr/yasim_trace.py` runs the requests one instruction at a
//! time and records, for every address executed inside a marker window,
//! its executions and the cycles yasimavr charged them. Each address is
//! decoded from the ELF's disassembly and checked: a fixed-time
//! instruction must have cost exactly its table cycles every time, a branch
//! or skip between its shortest and longest time. The window's AVRxt count
//! is yasimavr's cycles minus what AVRxt saves on its instructions (the
//! branch and skip penalties are the same on both cores), the empty
//! window's subtracted from both, as for the timers.
//!
//! The step-by-step run's timers read the instruction cycles + 3, like the
//! 1284p's markers; the fast-mode run that measures every 4808 row reads up
//! to 3 ppm fewer on long windows (X25519: 55 of 19.4 M cycles), which
//! [`avrxt_cycles`] tolerates and reports nothing else of.
//!
//! Not modelled: AVRxt adds at least one cycle to a data-space load from
//! flash (the manual's "access to NVM" note; the cost depends on the NVM
//! controller). Loads are not told apart by address here, so a window that
//! reads constants through the mapped flash is priced a little low; the
//! sensor's keys (provisioned into flash) are read that way.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

/// Largest difference, in cycles, allowed between a window priced from its
/// trace with yasimavr's timing and the same window by the on-chip timers
/// (each minus the empty window): where the marker and timer reads sit
/// around the window (measured: 0 to 5 cycles).
pub const TOLERANCE: u64 = 16;

/// Cycles of one execution of an instruction: yasimavr's and the AVRxt
/// core's (conditional branches and skips add the same cycles on both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// yasimavr (classic AVRe+ timing, RCALL 4).
    pub yasim: u8,
    /// AVRxt (the ATmega4808).
    pub avrxt: u8,
}

const fn t(yasim: u8, avrxt: u8) -> Option<Timing> {
    Some(Timing { yasim, avrxt })
}

/// The timing of `mnemonic` (as avr-objdump prints it), without a branch's
/// or skip's extra cycles; `None` for an instruction this table does not
/// know (pricing then fails rather than guess).
pub fn timing(mnemonic: &str) -> Option<Timing> {
    match mnemonic {
        // One cycle on both.
        "add" | "adc" | "sub" | "subi" | "sbc" | "sbci" | "and" | "andi" | "or" | "ori" | "eor" | "com" | "neg"
        | "sbr" | "cbr" | "inc" | "dec" | "tst" | "clr" | "ser" | "mov" | "movw" | "ldi" | "in" | "out" | "lsl"
        | "lsr" | "rol" | "ror" | "asr" | "swap" | "bst" | "bld" | "sec" | "clc" | "sen" | "cln" | "sez" | "clz"
        | "sei" | "cli" | "ses" | "cls" | "sev" | "clv" | "set" | "clt" | "seh" | "clh" | "bset" | "bclr" | "nop"
        | "cp" | "cpc" | "cpi" => t(1, 1),
        // Conditional branches: 1, 2 when taken (the extra cycle counted apart).
        m if m.starts_with("br") && m != "break" => t(1, 1),
        // Skips: 1, 2 or 3 when they skip (the extra cycles counted apart).
        "cpse" | "sbrc" | "sbrs" | "sbic" | "sbis" => t(1, 1),
        "adiw" | "sbiw" | "mul" | "muls" | "mulsu" | "fmul" | "fmuls" | "fmulsu" => t(2, 2),
        // Loads from SRAM: 2 on both (AVRxt: + at least 1 from flash, not modelled).
        "ld" | "ldd" | "pop" => t(2, 2),
        "lds" => t(2, 3),
        // Stores: one cycle less on AVRxt.
        "st" | "std" | "push" => t(2, 1),
        "sts" => t(2, 2),
        "sbi" | "cbi" => t(2, 1),
        "lpm" | "elpm" => t(3, 3),
        "rjmp" | "ijmp" => t(2, 2),
        "jmp" => t(3, 3),
        // yasimavr charges RCALL 4 cycles; the classic core with a 16-bit
        // PC takes 3, AVRxt 2.
        "rcall" => t(4, 2),
        "icall" => t(3, 2),
        "call" => t(4, 3),
        "ret" | "reti" => t(4, 4),
        _ => None,
    }
}

/// The executable instructions of an ELF: address → (mnemonic, bytes).
pub struct Disassembly(HashMap<u64, (String, u64)>);

impl Disassembly {
    /// `avr-objdump -d` of `elf`.
    pub fn load(elf: &Path) -> Result<Disassembly, String> {
        let text = crate::opts::output(Command::new("avr-objdump").arg("-d").arg(elf))?;
        Ok(Self::parse(&text))
    }

    /// Parses avr-objdump's `  addr:\tXX XX \tmnemonic\toperands` lines.
    fn parse(text: &str) -> Disassembly {
        let mut map = HashMap::new();
        for line in text.lines() {
            let mut parts = line.split('\t');
            let (Some(addr), Some(bytes), Some(mnemonic)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            let Some(addr) = addr.trim().strip_suffix(':') else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let size = bytes.split_whitespace().count() as u64;
            let mnemonic = mnemonic.trim();
            if size > 0 && !mnemonic.is_empty() && !mnemonic.starts_with('.') {
                map.insert(addr, (mnemonic.to_string(), size));
            }
        }
        Disassembly(map)
    }
}

/// One request's trace (`firmware/avr/yasim_trace.py`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Trace {
    /// The request's op.
    pub op: u8,
    /// `[address, executions, cycles]` of every instruction executed in a
    /// window, the cycles as yasimavr charged them.
    pub pcs: Vec<[u64; 3]>,
}

/// A window priced under both timings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Priced {
    /// Instructions executed.
    pub instructions: u64,
    /// Cycles under yasimavr's timing.
    pub yasim: u64,
    /// Cycles under AVRxt timing.
    pub avrxt: u64,
}

/// Prices the window of `trace` with the instructions of `d`, checking
/// each address's cycles against [`timing`] (see the module documentation).
pub fn price(d: &Disassembly, trace: &Trace) -> Result<Priced, String> {
    let mut p = Priced::default();
    for &[pc, n, cycles] in &trace.pcs {
        let (mnemonic, size) =
            d.0.get(&pc)
                .ok_or_else(|| format!("no instruction at 0x{pc:x} in the disassembly"))?;
        let tm = timing(mnemonic).ok_or_else(|| format!("no timing for `{mnemonic}` (at 0x{pc:x})"))?;
        // A taken branch costs one more cycle; a skip one or two more.
        let extra = match mnemonic.as_str() {
            m if m.starts_with("br") => 1,
            "cpse" | "sbrc" | "sbrs" | "sbic" | "sbis" => 2,
            _ => 0,
        };
        let base = n * u64::from(tm.yasim);
        if !(base..=base + n * extra).contains(&cycles) {
            return Err(format!(
                "`{mnemonic}` at 0x{pc:x} ({size} B) cost {cycles} cycles in {n} executions; \
                 the table says {} each{}",
                tm.yasim,
                if extra > 0 {
                    format!(" (+ up to {extra})")
                } else {
                    String::new()
                }
            ));
        }
        p.instructions += n;
        p.yasim += cycles;
        // The branch and skip penalties are the same on both cores.
        let delta = i64::from(tm.avrxt) - i64::from(tm.yasim);
        p.avrxt = (p.avrxt as i64 + cycles as i64 + n as i64 * delta) as u64;
    }
    Ok(p)
}

/// The AVRxt count of a window from its trace and the empty window's
/// (yasimavr's cycles of the window minus the empty window's, less what
/// AVRxt saves on the difference). `timers`, the fast-mode run's count of
/// the same window, must agree with the trace within [`TOLERANCE`] cycles
/// or 3 ppm: the two runs took the same path.
pub fn avrxt_cycles(timers: u64, window: &Priced, empty: &Priced) -> Result<u64, String> {
    let traced = window.yasim as i64 - empty.yasim as i64;
    let slack = TOLERANCE.max(timers / 300_000);
    if traced.abs_diff(timers as i64) > slack {
        return Err(format!(
            "the trace counts {traced} cycles in the window, the timers {timers}: not the same run"
        ));
    }
    Ok((window.avrxt as i64 - empty.avrxt as i64).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\
00000100 <f>:
 100:\t0f 93       \tpush\tr16
 102:\t0e 94 00 02 \tcall\t0x400\t; 0x400 <g>
 106:\t00 81       \tld\tr16, Z
 108:\t01 30       \tcpi\tr16, 0x01\t; 1
 10a:\te9 f7       \tbrne\t.-6      \t; 0x106 <f+0x6>
 10c:\t00 fd       \tsbrc\tr16, 0
 10e:\t0c 94 00 02 \tjmp\t0x400\t; 0x400 <g>
 112:\t0f 91       \tpop\tr16
 114:\t08 95       \tret
";

    #[test]
    fn a_window_is_priced_from_its_counts_and_checked_cycles() {
        let d = Disassembly::parse(LISTING);
        assert_eq!(d.0.get(&0x102), Some(&("call".to_string(), 4)));
        // push, call (returns to 0x106), three loads and compares, the
        // branch taken twice, a skip over the 2-word jmp, pop, ret.
        let trace = Trace {
            op: 1,
            pcs: vec![
                [0x100, 1, 2],
                [0x102, 1, 4],
                [0x106, 3, 6],
                [0x108, 3, 3],
                [0x10a, 3, 5],
                [0x10c, 1, 3],
                [0x112, 1, 2],
                [0x114, 1, 4],
            ],
        };
        let p = price(&d, &trace).unwrap();
        assert_eq!((p.instructions, p.yasim), (14, 29));
        // AVRxt: push and call one cycle less.
        assert_eq!(p.avrxt, 27);
        let empty = Priced {
            instructions: 2,
            yasim: 3,
            avrxt: 2,
        };
        assert_eq!(avrxt_cycles(26, &p, &empty), Ok(27 - 2));
        assert!(avrxt_cycles(26 + TOLERANCE + 1, &p, &empty).is_err());
        // A push that cost 3 cycles, or a branch that cost more than taken
        // every time: the table (or the trace) is wrong.
        let mut bad = trace.clone();
        bad.pcs[0] = [0x100, 1, 3];
        assert!(price(&d, &bad).unwrap_err().contains("push"));
        bad.pcs[0] = [0x100, 1, 2];
        bad.pcs[4] = [0x10a, 3, 7];
        assert!(price(&d, &bad).unwrap_err().contains("brne"));
        let unknown = Trace {
            pcs: vec![[0x200, 1, 1]],
            ..trace
        };
        assert!(price(&d, &unknown).unwrap_err().contains("0x200"));
    }

    #[test]
    fn every_mnemonic_the_firmware_uses_has_a_timing() {
        for m in [
            "rcall", "icall", "call", "st", "std", "push", "lds", "sbi", "brne", "sbrc", "lpm", "mulsu",
        ] {
            assert!(timing(m).is_some(), "{m}");
        }
        assert_eq!(timing("spm"), None, "not in any measured window: refused, not guessed");
    }
}
