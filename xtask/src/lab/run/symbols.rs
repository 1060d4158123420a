//! Where firmware time goes, by function: ELF symbols and the simulator's
//! per-address instruction profiles (used by `ct` and `mqtt --profile`).

use std::fmt::Write as _;

use crate::run::device::Device;

/// The first word address whose instruction count differs between two
/// per-address profiles, as a byte address.
pub fn first_difference(a: &[u32], b: &[u32]) -> Option<u32> {
    (0..a.len().max(b.len()))
        .find(|&w| a.get(w).copied().unwrap_or(0) != b.get(w).copied().unwrap_or(0))
        .map(|w| 2 * w as u32)
}

/// `avr-nm -S` rows of `elf` whose kind letter is one of `kinds`:
/// (address, size, name); `demangle` adds `-C`.
fn nm_rows(elf: &std::path::Path, demangle: bool, kinds: &[&str]) -> Result<Vec<(u32, u32, String)>, String> {
    let mut cmd = std::process::Command::new("avr-nm");
    cmd.arg("-S");
    if demangle {
        cmd.arg("-C");
    }
    let nm = crate::opts::output(cmd.arg(elf))?;
    Ok(nm
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(4, ' ');
            let (a, sz, kind, name) = (it.next()?, it.next()?, it.next()?, it.next()?);
            if !kinds.contains(&kind) {
                return None;
            }
            Some((
                u32::from_str_radix(a, 16).ok()?,
                u32::from_str_radix(sz, 16).ok()?,
                name.to_string(),
            ))
        })
        .collect())
}

/// Function symbols of an ELF: (start byte address, size, demangled name), sorted.
pub fn symbols(elf: &std::path::Path) -> Result<Vec<(u32, u32, String)>, String> {
    let mut v = nm_rows(elf, true, &["t", "T", "w", "W"])?;
    v.sort();
    Ok(v)
}

/// Static variables of an ELF (`avr-nm` kinds b, B, d, D): (data-space
/// address, size, mangled name); AVR ELF data addresses carry 0x800000.
pub fn data_symbols(elf: &std::path::Path) -> Result<Vec<(u32, u32, String)>, String> {
    let mut v = nm_rows(elf, false, &["b", "B", "d", "D"])?;
    for (addr, _, _) in &mut v {
        *addr &= 0xFFFF;
    }
    Ok(v)
}

/// The addresses of the linker-defined symbols `names` (sizeless, such as
/// `__bss_end`), in their order, data-space addresses without their
/// 0x800000; one `avr-nm` run for all of them.
pub fn addresses_of<const N: usize>(elf: &std::path::Path, names: [&str; N]) -> Result<[u32; N], String> {
    let nm = crate::opts::output(std::process::Command::new("avr-nm").arg(elf))?;
    let address = |name: &str| {
        nm.lines()
            .find_map(|l| {
                let mut it = l.split_whitespace();
                let (a, _kind, n) = (it.next()?, it.next()?, it.next()?);
                (n == name).then(|| u32::from_str_radix(a, 16).ok()).flatten()
            })
            .map(|a| a & 0xFFFF)
            .ok_or_else(|| format!("{} has no symbol {name}", elf.display()))
    };
    let mut out = [0; N];
    for (slot, name) in out.iter_mut().zip(names) {
        *slot = address(name)?;
    }
    Ok(out)
}

/// The function (by ELF symbol) whose body holds byte address `addr`, or "?".
/// `syms` is sorted by start address; zero-sized symbols still claim their
/// first word so labels in assembly files are found.
pub fn function_at(syms: &[(u32, u32, String)], addr: u32) -> &str {
    syms.iter()
        .rev()
        .find(|(s, sz, _)| *s <= addr && addr < s + (*sz).max(2))
        .map(|(_, _, n)| n.as_str())
        .unwrap_or("?")
}

/// Where one run of `op` spends its instructions, by function (the top 12):
/// the per-function profile that guides optimisation (`--profile`).
pub fn profile_top(
    dev: &mut Device,
    syms: &[(u32, u32, String)],
    id: u8,
    what: &str,
    req: &[u8],
) -> Result<String, String> {
    dev.set_profiling(true);
    dev.call(id, req)?;
    let p = dev.take_profile();
    dev.set_profiling(false);
    dev.take_markers();
    // XTASK_PROFILE_DUMP=FILE appends the per-address counts (to compare
    // two inputs instruction by instruction).
    if let Some(path) = std::env::var_os("XTASK_PROFILE_DUMP") {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.to_string_lossy()))?;
        for (w, n) in p.iter().enumerate().filter(|(_, n)| **n > 0) {
            writeln!(f, "{what} {:#07x} {n}", 2 * w).map_err(|e| e.to_string())?;
        }
        writeln!(f, "end").map_err(|e| e.to_string())?;
    }
    let mut per_fn: std::collections::BTreeMap<&str, u64> = Default::default();
    for (w, n) in p.iter().enumerate().filter(|(_, n)| **n > 0) {
        let addr = 2 * w as u32;
        let name = function_at(syms, addr);
        *per_fn.entry(name).or_default() += *n as u64;
    }
    let total: u64 = per_fn.values().sum();
    let mut v: Vec<_> = per_fn.into_iter().collect();
    v.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let mut s = format!("{what}: {total} instructions executed, by function:\n");
    // XTASK_PROFILE_TOP=N lists N functions instead of 12.
    let top = std::env::var("XTASK_PROFILE_TOP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    for (name, n) in v.iter().take(top) {
        let _ = writeln!(s, "    {n:>9} {:5.1} %  {name}", 100.0 * *n as f64 / total as f64);
    }
    Ok(s)
}
