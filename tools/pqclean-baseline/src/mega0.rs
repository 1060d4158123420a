//! The same PQClean code on the ATmega4808's core (megaAVR-0, AVRxt), in
//! yasimavr: the simulator the repository measures its own ATmega4808 rows
//! with (`cargo xtask bench --mcu atmega4808`), so that a ratio against them
//! compares like with like.
//!
//! PQClean's clean ML-KEM does not fit the part: its image is ≈ 60 KB of
//! code (48 KB of flash) and it needs 10–27 KB of SRAM (6 KB). The run uses
//! yasimavr's ATmega4808 model with 128 KB of flash and its data space above
//! the EEPROM given to SRAM (`yasim_ext.py`): the same core, the same
//! instruction timings. The image is linked for avr-gcc 5.4's generic
//! `avrxmega3` core with the repository's megaAVR-0 start-up code (avr-gcc
//! 5.4 has no ATmega4808 spec), and its `.rodata` is moved into `.data`
//! (copied to SRAM at start-up, as on the classic parts), because the
//! extended model maps no flash into the data space. A load from SRAM costs
//! what a load from the mapped flash costs in yasimavr.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{avr_stats, first_difference, payload_len, run, sections, thousands, HARNESS_CFLAGS, KEM_CFLAGS};

/// avr-gcc's core for the megaAVR-0 parts.
const CORE: &str = "avrxmega3";
/// The extended model's SRAM: from the end of the EEPROM to the top of the data space.
const SRAM_START: u32 = 0x1500;
const RAMEND: u32 = 0xFFFF;
/// The real part.
const PART: avr_mcu::Mcu = avr_mcu::facts("atmega4808");

/// One set on the 4808's core.
pub struct Mega0Result {
    /// yasimavr cycles of keygen, encaps, decaps (opening to closing marker).
    pub cycles: [u64; 3],
    /// The same for an empty marker pair.
    pub empty_window: u64,
    /// SP at the opening marker minus the lowest byte the op wrote (painted).
    pub stack_painted: [u16; 3],
    pub heap: [u16; 3],
    pub image_text: u64,
    pub image_data: u64,
    pub image_bss: u64,
    /// Per op: .data + .bss + heap + every byte from the lowest one the
    /// stack wrote to the top of the data space.
    pub sram_need: [u32; 3],
}

impl Mega0Result {
    /// Whether the image would fit the real part, and the numbers.
    pub fn real_part(&self) -> String {
        let flash = self.image_text + self.image_data;
        let sram = self.sram_need.iter().copied().max().unwrap_or(0);
        if flash <= u64::from(PART.flash) && sram <= PART.sram {
            return "fits".into();
        }
        format!(
            "does not fit: flash {} B of {}, SRAM {} B of {} (its largest op)",
            thousands(flash),
            thousands(PART.flash.into()),
            thousands(sram.into()),
            thousands(PART.sram.into())
        )
    }
}

/// Moves every `.rodata*` section of `obj` into `.data`.
fn rodata_to_data(obj: &Path) -> Result<(), String> {
    for name in sections(obj)?.keys().filter(|n| n.starts_with(".rodata")) {
        run(Command::new("avr-objcopy")
            .arg(format!("--rename-section={name}=.data,alloc,load,data,contents"))
            .arg(obj))?;
    }
    Ok(())
}

/// The data address of `name` in `elf`.
fn data_symbol(elf: &Path, name: &str) -> Result<u32, String> {
    super::symbol(elf, name).map(|a| a & 0xFFFF)
}

/// Builds and runs `set` on the 4808's core; its output must equal `host`.
pub fn measure(
    repo: &Path,
    tool: &Path,
    dir: &Path,
    kem_sources: &[PathBuf],
    includes: &[&Path],
    set: u16,
    host: &[u8],
) -> Result<Mega0Result, String> {
    let dir = dir.join("atmega4808");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut objs = super::compile_avr(CORE, kem_sources, includes, &dir, KEM_CFLAGS)?;
    let defines = ["-DPQCB_MEGA0".to_string(), format!("-DMLKEM_SET={set}")];
    let harness_flags: Vec<&str> = HARNESS_CFLAGS
        .iter()
        .copied()
        .chain(defines.iter().map(String::as_str))
        .collect();
    objs.extend(super::compile_avr(
        CORE,
        &[tool.join("harness.c"), tool.join("randombytes.c")],
        includes,
        &dir,
        &harness_flags,
    )?);
    for obj in &objs {
        rodata_to_data(obj)?;
    }
    let crt0 = dir.join("crt0-mega0.o");
    run(Command::new("avr-gcc")
        .arg(format!("-mmcu={CORE}"))
        .arg("-c")
        .arg(repo.join("firmware/avr/crt0-mega0.S"))
        .arg("-o")
        .arg(&crt0))?;
    let elf = dir.join(format!("mlkem{set}-atmega4808-ext.elf"));
    run(Command::new("avr-gcc")
        .arg(format!("-mmcu={CORE}"))
        .args(["-O3", "-nostartfiles"])
        .arg(&crt0)
        .args(&objs)
        .args([
            "-Wl,--defsym=__TEXT_REGION_LENGTH__=0x20000".to_string(),
            format!("-Wl,--defsym=__DATA_REGION_ORIGIN__={:#X}", 0x80_0000 + SRAM_START),
            format!("-Wl,--defsym=__DATA_REGION_LENGTH__={:#X}", RAMEND + 1 - SRAM_START),
            format!("-Wl,--defsym=__stack={RAMEND:#X}"),
            // avr-libc's malloc: no fixed heap end (it grows up to the stack).
            "-Wl,--defsym=__heap_end=0".to_string(),
            format!("-Wl,-Map={}", elf.with_extension("map").display()),
        ])
        .arg("-o")
        .arg(&elf))?;
    let img = sections(&elf)?;
    let get = |s: &str| img.get(s).copied().unwrap_or(0);
    let (image_text, image_data, image_bss) = (get(".text"), get(".data"), get(".bss"));
    if get(".rodata") != 0 {
        return Err(format!("ML-KEM-{set}, ATmega4808 image: .rodata left in flash"));
    }

    let python = repo.join(".venv/bin/python");
    if !python.exists() {
        return Err(format!(
            "{} is missing: `cargo xtask setup --yasimavr` installs yasimavr (the ATmega4808 simulator) there",
            python.display()
        ));
    }
    let marker = data_symbol(&elf, "pqcb_marker")?;
    let out = run(Command::new(&python)
        .arg(tool.join("yasim_ext.py"))
        .arg(&elf)
        .arg(format!("{marker:x}")))?;
    let (mut state, mut marks, mut uart) = (String::new(), Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["state", s] => state = s.to_string(),
            ["mark", v, c] => marks.push((
                v.parse::<u8>().map_err(|e| e.to_string())?,
                c.parse::<u64>().map_err(|e| e.to_string())?,
            )),
            ["out", hex] => {
                uart = (0..hex.len() / 2)
                    .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
                    .collect::<Result<_, _>>()
                    .map_err(|e| e.to_string())?
            }
            _ => {}
        }
    }
    if state != "Done" {
        return Err(format!("ML-KEM-{set}, ATmega4808 run: ended {state}, not Done"));
    }
    let p = payload_len(set);
    if uart.len() < p || uart[..p] != host[..] {
        return Err(format!(
            "ML-KEM-{set}: the ATmega4808 output ({} bytes) differs from the host's{}",
            uart.len(),
            first_difference(&uart, host)
        ));
    }
    let stats = avr_stats(set, &uart)?;
    if u32::from(stats.heap_start) != SRAM_START + (image_data + image_bss) as u32 {
        return Err(format!(
            "ML-KEM-{set}, ATmega4808: __heap_start 0x{:04x} is not the end of .data + .bss",
            stats.heap_start
        ));
    }
    // A window: the cycle of the write of `id` to that of `id | 0x80`, next to it.
    let window = |id: u8| {
        marks
            .windows(2)
            .find(|w| w[0].0 == id && w[1].0 == id | 0x80)
            .map(|w| w[1].1 - w[0].1)
            .ok_or_else(|| format!("ML-KEM-{set}, ATmega4808 run: no window {id}"))
    };
    let cycles = [window(1)?, window(2)?, window(3)?];
    let stack_painted = std::array::from_fn(|i| stats.sp_open[i].wrapping_sub(stats.lowest_written[i]));
    let static_ram = (image_data + image_bss) as u32;
    let sram_need = std::array::from_fn(|i| {
        static_ram + u32::from(stats.heap[i]) + (RAMEND + 1 - u32::from(stats.lowest_written[i]))
    });
    Ok(Mega0Result {
        cycles,
        empty_window: window(4)?,
        stack_painted,
        heap: stats.heap,
        image_text,
        image_data,
        image_bss,
        sram_need,
    })
}
