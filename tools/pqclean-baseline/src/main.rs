//! Measures PQClean's `clean` ML-KEM-512/768/1024 on a simulated
//! ATmega1284p (see README.md): builds the vendored sources with the
//! int-width patches applied, the harness (harness.c) with avr-gcc -O3 and
//! with the host's `cc`, checks the AVR output byte for byte against the
//! host's, and prints cycles, stack, heap, code size and static RAM.
//!
//! Every set runs twice in simavr's ATmega1284p model: once as the real
//! part (16 KB SRAM, via `avr_sim::Sim`), once with the data space raised
//! to 64 KB (`avr_sim::Sim::load_with_ramend`; the same core and instruction timings), because
//! ML-KEM-768 and -1024 in this C code need more than 16 KB of RAM. The
//! figures come from the 64 KB run; for a set that fits, the 16 KB run must
//! give the same bytes, cycles and stack, or the runner fails. Then once
//! more on the ATmega4808's core in yasimavr, with the memory it needs
//! (`mega0`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod mega0;

const MCU: &str = "atmega1284p";
/// SRAM of the ATmega1284p (data space 0x0100..=0x40FF).
const SRAM_BYTES: u32 = 16 * 1024;
const RAMEND_1284P: u16 = 0x40FF;
/// Top of the extended data space of the 64 KB run (its `__stack`).
const RAMEND_EXT: u16 = 0xFFFF;
/// Cycle budget of a whole harness run (three operations, the implicit-
/// rejection decapsulation, painting and the UART dump) in the 64 KB model.
const BUDGET: u64 = 3_000_000_000;
const SETS: [u16; 3] = [512, 768, 1024];
/// Flags of PQClean's own Makefile for these implementations (plus the MCU).
const KEM_CFLAGS: &[&str] = &[
    "-O3",
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Werror",
    "-Wmissing-prototypes",
    "-Wredundant-decls",
    "-std=c99",
];
const HARNESS_CFLAGS: &[&str] = &["-O3", "-Wall", "-Wextra", "-std=c99"];
const OPS: [&str; 3] = ["keygen", "encaps", "decaps"];

/// Sizes of one set's byte strings.
#[derive(Clone, Copy)]
struct SetSizes {
    pk: usize,
    sk: usize,
    ct: usize,
}

fn set_sizes(set: u16) -> SetSizes {
    match set {
        512 => SetSizes {
            pk: 800,
            sk: 1632,
            ct: 768,
        },
        768 => SetSizes {
            pk: 1184,
            sk: 2400,
            ct: 1088,
        },
        1024 => SetSizes {
            pk: 1568,
            sk: 3168,
            ct: 1568,
        },
        _ => unreachable!(),
    }
}

/// Length of the output both builds print: "PQCB", set, pk, sk, ct, 3 secrets.
fn payload_len(set: u16) -> usize {
    let s = set_sizes(set);
    4 + 2 + s.pk + s.sk + s.ct + 3 * 32
}

/// The checked bytes of a harness output, split up.
struct Payload<'a> {
    ss_enc: &'a [u8],
    ss_dec: &'a [u8],
    ss_rej: &'a [u8],
}

fn split_payload(set: u16, bytes: &[u8]) -> Result<Payload<'_>, String> {
    if bytes.len() < payload_len(set) || &bytes[..4] != b"PQCB" || u16::from_le_bytes([bytes[4], bytes[5]]) != set {
        return Err(format!(
            "output of {} bytes is not a ML-KEM-{set} harness dump",
            bytes.len()
        ));
    }
    let s = set_sizes(set);
    let ss = 6 + s.pk + s.sk + s.ct;
    Ok(Payload {
        ss_enc: &bytes[ss..ss + 32],
        ss_dec: &bytes[ss + 32..ss + 64],
        ss_rej: &bytes[ss + 64..ss + 96],
    })
}

/// The AVR-only statistics after the payload: per op heap bytes, lowest
/// painted byte written, SP at the opening marker; then __heap_start.
struct AvrStats {
    heap: [u16; 3],
    lowest_written: [u16; 3],
    sp_open: [u16; 3],
    heap_start: u16,
}

fn avr_stats(set: u16, bytes: &[u8]) -> Result<AvrStats, String> {
    let p = payload_len(set);
    if bytes.len() != p + 20 {
        return Err(format!("AVR output is {} bytes, expected {}", bytes.len(), p + 20));
    }
    let w = |i: usize| u16::from_le_bytes([bytes[p + 2 * i], bytes[p + 2 * i + 1]]);
    Ok(AvrStats {
        heap: [w(0), w(3), w(6)],
        lowest_written: [w(1), w(4), w(7)],
        sp_open: [w(2), w(5), w(8)],
        heap_start: w(9),
    })
}

fn run(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let out = cmd.output().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if !out.stderr.is_empty() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(out.stdout)
}

fn first_line(cmd: &str, arg: &str) -> String {
    Command::new(cmd)
        .arg(arg)
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_string))
        .unwrap_or_else(|| format!("({cmd} not found)"))
}

/// `avr-size -A`: section name → size.
fn sections(file: &Path) -> Result<BTreeMap<String, u64>, String> {
    let out = run(Command::new("avr-size").arg("-A").arg(file))?;
    let mut map = BTreeMap::new();
    for line in String::from_utf8_lossy(&out).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 2 && f[0].starts_with('.') {
            if let Ok(n) = f[1].parse::<u64>() {
                *map.entry(f[0].to_string()).or_insert(0) += n;
            }
        }
    }
    Ok(map)
}

fn sum_sections(map: &BTreeMap<String, u64>, prefix: &str) -> u64 {
    map.iter()
        .filter(|(k, _)| *k == prefix || k.starts_with(&format!("{prefix}.")))
        .map(|(_, v)| v)
        .sum()
}

/// From a linker map: the bytes of `.text*` input sections kept in the
/// image, per input file (only the part after "Linker script and memory map").
fn kept_text(map: &Path) -> Result<BTreeMap<String, u64>, String> {
    let text = std::fs::read_to_string(map).map_err(|e| format!("{}: {e}", map.display()))?;
    let body = text
        .split_once("Linker script and memory map")
        .map(|(_, b)| b)
        .ok_or_else(|| format!("{}: not a GNU ld map", map.display()))?;
    let mut out = BTreeMap::new();
    let mut lines = body.lines().peekable();
    while let Some(line) = lines.next() {
        // An input section: " .text.name  0xADDR  0xSIZE  file", or the name
        // alone with address, size and file on the next line.
        if !line.starts_with(" .text") {
            continue;
        }
        let mut f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 1 {
            if let Some(next) = lines.next() {
                f.extend(next.split_whitespace());
            }
        }
        if f.len() == 4 {
            if let Ok(n) = u64::from_str_radix(f[2].trim_start_matches("0x"), 16) {
                let name = Path::new(f[3])
                    .file_name()
                    .map_or(f[3].to_string(), |n| n.to_string_lossy().into_owned());
                *out.entry(name).or_insert(0) += n;
            }
        }
    }
    Ok(out)
}

/// Copies `vendor` to `dst` and applies patches/*.patch in name order.
fn patched_tree(root: &Path, dst: &Path) -> Result<Vec<String>, String> {
    if dst.exists() {
        std::fs::remove_dir_all(dst).map_err(|e| format!("cannot clear {}: {e}", dst.display()))?;
    }
    std::fs::create_dir_all(dst).map_err(|e| e.to_string())?;
    run(Command::new("cp").arg("-r").arg(root.join("vendor/.")).arg(dst))?;
    let mut patches: Vec<PathBuf> = std::fs::read_dir(root.join("patches"))
        .map_err(|e| format!("no patches folder: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "patch"))
        .collect();
    patches.sort();
    let mut names = Vec::new();
    for p in &patches {
        run(Command::new("patch")
            .args(["-p1", "-s", "--no-backup-if-mismatch", "-d"])
            .arg(dst)
            .arg("-i")
            .arg(p))
        .map_err(|e| format!("patch {} does not apply: {e}", p.display()))?;
        names.push(p.file_name().unwrap().to_string_lossy().into_owned());
    }
    Ok(names)
}

fn c_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    v.sort();
    Ok(v)
}

/// Builds and runs the host harness from the tree `src`; returns its stdout.
fn host_run(root: &Path, src: &Path, set: u16, out_dir: &Path, tag: &str) -> Result<(Vec<u8>, bool), String> {
    let clean = src.join(format!("crypto_kem/ml-kem-{set}/clean"));
    let exe = out_dir.join(format!("host-{tag}"));
    let mut sources = c_files(&clean)?;
    sources.push(src.join("common/fips202.c"));
    sources.push(root.join("randombytes.c"));
    sources.push(root.join("harness.c"));
    let build = |ubsan: bool| {
        let mut cmd = Command::new("cc");
        cmd.args(["-O2", "-std=c99", "-Wall", "-Wextra"]);
        if ubsan {
            cmd.args(["-fsanitize=undefined", "-fno-sanitize-recover=all"]);
        }
        cmd.arg(format!("-DMLKEM_SET={set}"))
            .arg("-I")
            .arg(src.join("common"))
            .arg("-I")
            .arg(&clean)
            .args(&sources)
            .arg("-o")
            .arg(&exe);
        run(&mut cmd)
    };
    let ubsan = match build(true) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("note: host build with -fsanitize=undefined failed, building without it:\n{e}");
            build(false)?;
            false
        }
    };
    Ok((run(&mut Command::new(&exe))?, ubsan))
}

/// What one set's measurement gave.
struct SetResult {
    set: u16,
    cycles: [u64; 3],
    empty_window: u64,
    /// Cycles of randombytes(64) (the keygen window has one such call).
    rng64: u64,
    stack_sp: [u16; 3],
    stack_painted: [u16; 3],
    heap: [u16; 3],
    kem_text: u64,
    fips_text: u64,
    /// The same after --gc-sections (unused functions dropped).
    kem_text_linked: u64,
    fips_text_linked: u64,
    kem_rodata: u64,
    kem_data_bss: u64,
    image_text: u64,
    image_data: u64,
    image_bss: u64,
    /// Deepest stack of the whole run, from the top of data space.
    stack_depth: u32,
    /// Per op: .data + .bss + heap + stack from the top of data space.
    sram_need: [u32; 3],
    real_part: String,
    host_ubsan: bool,
    /// The same code on the ATmega4808's core (yasimavr).
    mega0: mega0::Mega0Result,
}

/// Compiles the KEM's C `sources` for the ATmega1284p with [`KEM_CFLAGS`]
/// and `extra` flags into `dir`, one object per source.
fn compile_kem(sources: &[PathBuf], includes: &[&Path], dir: &Path, extra: &[&str]) -> Result<Vec<PathBuf>, String> {
    compile_avr(MCU, sources, includes, dir, &[KEM_CFLAGS, extra].concat())
}

/// Compiles C `sources` for `mmcu` with `flags` into `dir`, one object per source.
fn compile_avr(
    mmcu: &str,
    sources: &[PathBuf],
    includes: &[&Path],
    dir: &Path,
    flags: &[&str],
) -> Result<Vec<PathBuf>, String> {
    let mut objs = Vec::new();
    for c in sources {
        let obj = dir.join(c.file_name().unwrap()).with_extension("o");
        let mut cmd = Command::new("avr-gcc");
        cmd.arg(format!("-mmcu={mmcu}")).args(flags);
        for i in includes {
            cmd.arg("-I").arg(i);
        }
        run(cmd.arg("-c").arg(c).arg("-o").arg(&obj))?;
        objs.push(obj);
    }
    Ok(objs)
}

fn measure_set(root: &Path, work: &Path, src: &Path, set: u16) -> Result<SetResult, String> {
    let dir = work.join(format!("ml-kem-{set}"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let clean = src.join(format!("crypto_kem/ml-kem-{set}/clean"));
    let common = src.join("common");

    // AVR objects: the KEM's own (scheme + fips202), then the harness's.
    let mut kem_sources = c_files(&clean)?;
    kem_sources.push(common.join("fips202.c"));
    let kem_objs = compile_kem(&kem_sources, &[&common, &clean], &dir, &[])?;
    let mut objs = kem_objs.clone();
    for (c, o) in [("harness.c", "harness.o"), ("randombytes.c", "randombytes.o")] {
        let obj = dir.join(o);
        run(Command::new("avr-gcc")
            .arg(format!("-mmcu={MCU}"))
            .args(HARNESS_CFLAGS)
            .arg(format!("-DMLKEM_SET={set}"))
            .arg("-I")
            .arg(&common)
            .arg("-I")
            .arg(&clean)
            .arg("-c")
            .arg(root.join(c))
            .arg("-o")
            .arg(&obj))?;
        objs.push(obj);
    }
    let elf_real = dir.join("mlkem-atmega1284p.elf");
    let elf_ext = dir.join("mlkem-atmega1284p-64k.elf");
    for (elf, extra) in [
        (&elf_real, None),
        (&elf_ext, Some(format!("-Wl,--defsym=__stack=0x{RAMEND_EXT:04X}"))),
    ] {
        let mut cmd = Command::new("avr-gcc");
        cmd.arg(format!("-mmcu={MCU}")).arg("-O3").args(&objs);
        if let Some(x) = extra {
            cmd.arg(x);
        }
        cmd.arg(format!("-Wl,-Map={}", elf.with_extension("map").display()))
            .arg("-o")
            .arg(elf);
        run(&mut cmd)?;
    }

    // Sizes.
    let (mut kem_text, mut fips_text, mut kem_rodata, mut kem_data_bss) = (0, 0, 0, 0);
    for o in &kem_objs {
        let s = sections(o)?;
        let text = sum_sections(&s, ".text");
        if o.file_name().unwrap() == "fips202.o" {
            fips_text = text;
        }
        kem_text += text;
        kem_rodata += sum_sections(&s, ".rodata");
        kem_data_bss += sum_sections(&s, ".data") + sum_sections(&s, ".bss");
    }
    // Code the image really needs: a size-only build of the same sources
    // with -ffunction-sections, linked with --gc-sections (not measured).
    let gc_dir = dir.join("gc");
    std::fs::create_dir_all(&gc_dir).map_err(|e| e.to_string())?;
    let gc_objs = compile_kem(
        &kem_sources,
        &[&common, &clean],
        &gc_dir,
        &["-ffunction-sections", "-fdata-sections"],
    )?;
    let gc_map = gc_dir.join("gc.map");
    run(Command::new("avr-gcc")
        .arg(format!("-mmcu={MCU}"))
        .arg("-O3")
        .args(&gc_objs)
        .args(&objs[kem_objs.len()..])
        .args(["-Wl,--gc-sections"])
        .arg(format!("-Wl,-Map={}", gc_map.display()))
        .arg("-o")
        .arg(gc_dir.join("gc.elf")))?;
    let kept = kept_text(&gc_map)?;
    let kem_names: Vec<String> = kem_sources
        .iter()
        .map(|c| {
            c.with_extension("o")
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let kem_text_linked: u64 = kem_names.iter().filter_map(|n| kept.get(n)).sum();
    let fips_text_linked = kept.get("fips202.o").copied().unwrap_or(0);

    let img = sections(&elf_real)?;
    let (image_text, image_data, image_bss) = (img[".text"], img[".data"], img[".bss"]);

    // The reference: the host build of the patched tree, and of the
    // unpatched vendor tree (the patches must not change the host's bytes).
    let (host, host_ubsan) = host_run(root, src, set, &dir, "patched")?;
    let (host_unpatched, _) = host_run(root, &root.join("vendor"), set, &dir, "unpatched")?;
    if host != host_unpatched {
        return Err(format!(
            "ML-KEM-{set}: host output differs between patched and unpatched sources"
        ));
    }
    if host != fips203_reference(set) {
        return Err(format!(
            "ML-KEM-{set}: the host build's bytes differ from RustCrypto ml-kem's{}",
            first_difference(&host, &fips203_reference(set))
        ));
    }
    let p = split_payload(set, &host)?;
    if host.len() != payload_len(set) || p.ss_enc != p.ss_dec || p.ss_rej == p.ss_enc {
        return Err(format!(
            "ML-KEM-{set}: the host build is not consistent (secrets differ or rejection agrees)"
        ));
    }

    let repo = root.join("../..");
    let mega0 = mega0::measure(&repo, root, &dir, &kem_sources, &[&common, &clean], set, &host)?;

    // The 64 KB run: the figures.
    let mut xs = avr_sim::Sim::load_with_ramend(
        &elf_ext,
        MCU,
        avr_sim::DEFAULT_FREQUENCY,
        avr_sim::GPIOR0_CLASSIC,
        RAMEND_EXT,
    )
    .map_err(|e| format!("ML-KEM-{set}, 64 KB run: {e}"))?;
    if xs.ramend() != RAMEND_EXT {
        return Err(format!(
            "ML-KEM-{set}, 64 KB run: ramend is 0x{:04x}, not 0x{RAMEND_EXT:04x}",
            xs.ramend()
        ));
    }
    xs.run_to_exit(BUDGET)
        .map_err(|e| format!("ML-KEM-{set}, 64 KB run: {e}"))?;
    let total_cycles = xs.cycle();
    let out = xs.take_output();
    let markers = xs.take_markers();
    let deepest = xs.stack_depth_since_reset();
    drop(xs);
    if out.len() < payload_len(set) || out[..payload_len(set)] != host[..] {
        return Err(format!(
            "ML-KEM-{set}: AVR output ({} bytes) differs from the host's ({} bytes){}",
            out.len(),
            host.len(),
            first_difference(&out, &host)
        ));
    }
    let stats = avr_stats(set, &out)?;
    let windows = avr_sim::windows(&markers).map_err(|e| format!("ML-KEM-{set}: {e}"))?;
    let by_id = |id: u8| {
        windows
            .iter()
            .find(|w| w.id == id)
            .copied()
            .ok_or_else(|| format!("ML-KEM-{set}: no window {id}"))
    };
    let (w_kg, w_enc, w_dec, w_empty) = (by_id(1)?, by_id(2)?, by_id(3)?, by_id(4)?);
    let rng64 = by_id(5)?.cycles;
    let wins = [w_kg, w_enc, w_dec];
    let cycles = wins.map(|w| w.cycles);
    let stack_sp = wins.map(|w| w.stack_bytes);
    let stack_painted: [u16; 3] = std::array::from_fn(|i| stats.sp_open[i].wrapping_sub(stats.lowest_written[i]));
    let heap = stats.heap;
    let stack_depth = u32::from(deepest);
    let static_ram = (image_data + image_bss) as u32;
    let mut sram_need = [0u32; 3];
    for i in 0..3 {
        sram_need[i] =
            static_ram + u32::from(heap[i]) + u32::from(RAMEND_EXT - stats.sp_open[i]) + u32::from(stack_sp[i]);
    }
    let fits = sram_need.iter().all(|&n| n <= SRAM_BYTES);
    if u64::from(stats.heap_start) != 0x100 + image_data + image_bss {
        return Err(format!(
            "ML-KEM-{set}: __heap_start 0x{:04x} is not the end of .data + .bss (0x{:04x})",
            stats.heap_start,
            0x100 + image_data + image_bss
        ));
    }

    // The real part (16 KB): the same objects, linked with the part's own
    // `__stack`. Every window it completes must equal the 64 KB run's.
    let real = real_run(&elf_real, set, &host, 2 * total_cycles + 10_000_000)?;
    for w in &real.windows {
        let x = wins[usize::from(w.id - 1)];
        if w.cycles != x.cycles || w.stack_bytes != x.stack_bytes {
            return Err(format!(
                "ML-KEM-{set}: {} in the 16 KB run took {} cycles / {} B stack, in the 64 KB run {} / {}",
                OPS[usize::from(w.id - 1)],
                w.cycles,
                w.stack_bytes,
                x.cycles,
                x.stack_bytes
            ));
        }
    }
    let done: Vec<&str> = real.windows.iter().map(|w| OPS[usize::from(w.id - 1)]).collect();
    let real_part = match real.outcome {
        Ok(()) if real.windows.len() == 3 => "runs: right bytes, same cycles and stack".to_string(),
        Ok(()) => return Err(format!("ML-KEM-{set}: 16 KB run lacks windows")),
        Err(e) if fits => return Err(format!("ML-KEM-{set} fits in 16 KB but its 16 KB run failed: {e}")),
        Err(e) => format!(
            "FAILS: {e}{}",
            if done.is_empty() {
                String::new()
            } else {
                format!(" ({} completed with the 64 KB run's cycles and stack)", done.join(", "))
            }
        ),
    };

    Ok(SetResult {
        set,
        cycles,
        empty_window: w_empty.cycles,
        rng64,
        stack_sp,
        stack_painted,
        heap,
        kem_text,
        fips_text,
        kem_text_linked,
        fips_text_linked,
        kem_rodata,
        kem_data_bss,
        image_text,
        image_data,
        image_bss,
        stack_depth,
        sram_need,
        real_part,
        host_ubsan,
        mega0,
    })
}

/// What RustCrypto's `ml-kem` prints for the harness's inputs: seed (d, z)
/// = bytes 0..64 of the counter stream (the keypair's randombytes), message
/// m = bytes 64..96 (encapsulation's), and a decapsulation of the
/// ciphertext with bit 0 of byte len/2 flipped: the harness's output.
macro_rules! fips203_dump {
    ($module:ident, $set:expr) => {{
        #[allow(deprecated)]
        use ml_kem::{Decapsulate, ExpandedKeyEncoding, KeyExport};
        let seed: [u8; 64] = std::array::from_fn(|i| i as u8);
        let m: [u8; 32] = std::array::from_fn(|i| (64 + i) as u8);
        let dk = ml_kem::$module::DecapsulationKey::from_seed(seed.into());
        let ek = dk.encapsulation_key();
        let (ct, ss) = ek.encapsulate_deterministic(&m.into());
        let mut bad = ct.clone();
        let half = bad.len() / 2;
        bad[half] ^= 1;
        let ss_dec = dk.decapsulate(&ct);
        let ss_rej = dk.decapsulate(&bad);
        let mut v = b"PQCB".to_vec();
        v.extend_from_slice(&u16::to_le_bytes($set));
        v.extend_from_slice(&ek.to_bytes());
        v.extend_from_slice(&dk.to_expanded_bytes());
        v.extend_from_slice(&ct);
        v.extend_from_slice(&ss);
        v.extend_from_slice(&ss_dec);
        v.extend_from_slice(&ss_rej);
        v
    }};
}

#[allow(deprecated)] // the expanded key is PQClean's secret-key format
fn fips203_reference(set: u16) -> Vec<u8> {
    match set {
        512 => fips203_dump!(ml_kem_512, 512),
        768 => fips203_dump!(ml_kem_768, 768),
        1024 => fips203_dump!(ml_kem_1024, 1024),
        _ => unreachable!(),
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!(" (first difference at byte {i})"),
        None => String::new(),
    }
}

struct RealRun {
    /// Ok if the run stopped and printed the host's bytes.
    outcome: Result<(), String>,
    /// The windows it completed (ids 1..=3).
    windows: Vec<avr_sim::Window>,
}

/// Runs the 16 KB image in avr-sim.
fn real_run(elf: &Path, set: u16, host: &[u8], budget: u64) -> Result<RealRun, String> {
    let mut sim = avr_sim::Sim::load(elf, MCU).map_err(|e| e.to_string())?;
    let ended = sim.run_to_exit(budget);
    let lowest = RAMEND_1284P.saturating_sub(sim.stack_depth());
    let out = sim.take_output();
    let mut markers = sim.take_markers();
    // The windows it completed: the markers up to the last closing one.
    let open = markers
        .iter()
        .rposition(|m| m.id & 0x80 != 0)
        .map_or(markers.len(), |i| i + 1);
    let unclosed: Vec<u8> = markers[open..]
        .iter()
        .map(|m| m.id)
        .filter(|&id| (1..=3).contains(&id))
        .collect();
    markers.truncate(open);
    let windows: Vec<avr_sim::Window> = avr_sim::windows(&markers)
        .map_err(|e| format!("16 KB run: {e}"))?
        .into_iter()
        .filter(|w| (1..=3).contains(&w.id))
        .collect();
    let img = sections(elf)?;
    let bss_end = 0x100 + img[".data"] + img[".bss"];
    let during = unclosed
        .last()
        .map_or(String::new(), |&id| format!(" during {}", OPS[usize::from(id - 1)]));
    let outcome = match ended {
        Err(avr_sim::Error::CycleLimit { pc, .. }) => {
            let stop = symbol(elf, "__stop_program")?;
            let exit = symbol(elf, "_exit")?;
            if (exit..=stop).contains(&pc) {
                Err(format!(
                    "stopped in exit(){during}: fips202's malloc of a Keccak state failed (exit(111)) once \
                     the stack had grown down to 0x{lowest:04x}, below the end of .bss 0x{bss_end:04x}"
                ))
            } else {
                Err(format!(
                    "hung at pc 0x{pc:05x}{during}; lowest SP 0x{lowest:04x}, end of .bss 0x{bss_end:04x}"
                ))
            }
        }
        Err(e) => Err(format!(
            "{e}{during}; lowest SP 0x{lowest:04x}, end of .bss 0x{bss_end:04x}"
        )),
        Ok(()) if out.len() < payload_len(set) || out[..payload_len(set)] != host[..] => Err(format!(
            "wrong output ({} bytes{}): the stack (down to 0x{lowest:04x}) collided with .data/.bss \
             (ending 0x{bss_end:04x})",
            out.len(),
            first_difference(&out, host)
        )),
        Ok(()) => Ok(()),
    };
    Ok(RealRun { outcome, windows })
}

/// The address of `name` in `elf` (byte address).
fn symbol(elf: &Path, name: &str) -> Result<u32, String> {
    let out = run(Command::new("avr-nm").arg(elf))?;
    String::from_utf8_lossy(&out)
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == name)
                .then(|| u32::from_str_radix(f[0], 16).ok())
                .flatten()
        })
        .ok_or_else(|| format!("no symbol {name} in {}", elf.display()))
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Keygen, encaps and decaps figures with thousands separators, joined by `sep`.
fn per_op<T: Copy + Into<u64>>(v: [T; 3], sep: &str) -> String {
    v.map(|x| thousands(x.into())).join(sep)
}

fn real_main() -> Result<(), String> {
    if !avr_sim::AVAILABLE {
        return Err("avr-sim was built without libsimavr (install libsimavr-dev libelf-dev)".into());
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let work = root.join("target/pqclean-build");
    let src = work.join("src");
    let patches = patched_tree(&root, &src)?;
    eprintln!("applied patches: {}", patches.join(", "));

    let mut results = Vec::new();
    for set in SETS {
        eprintln!("ML-KEM-{set}: building and simulating …");
        let t = std::time::Instant::now();
        let r = measure_set(&root, &work, &src, set)?;
        eprintln!("ML-KEM-{set}: done in {:.1} s", t.elapsed().as_secs_f64());
        results.push(r);
    }

    let mut s = String::new();
    writeln!(
        s,
        "toolchain: {} | {} | libsimavr (Debian simavr)",
        first_line("avr-gcc", "--version"),
        first_line("cc", "--version")
    )
    .unwrap();
    writeln!(
        s,
        "build: avr-gcc -mmcu={MCU} {} (PQClean's Makefile flags); simavr {MCU} at 20 MHz\n",
        KEM_CFLAGS.join(" ")
    )
    .unwrap();
    writeln!(s, "| set | keygen cycles | encaps cycles | decaps cycles | stack B keygen/encaps/decaps | KEM code .text B (of which fips202) | KEM .text linked with --gc-sections (fips202) | image .data / .bss B |").unwrap();
    writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    for r in &results {
        writeln!(
            s,
            "| ML-KEM-{} | {} | {} | {} ({}) | {} ({}) | {} / {} |",
            r.set,
            per_op(r.cycles, " | "),
            per_op(r.stack_sp, "/"),
            thousands(r.kem_text),
            thousands(r.fips_text),
            thousands(r.kem_text_linked),
            thousands(r.fips_text_linked),
            thousands(r.image_data),
            thousands(r.image_bss),
        )
        .unwrap();
    }
    writeln!(s).unwrap();
    writeln!(s, "| set | heap B keygen/encaps/decaps (malloc'd Keccak state) | painted stack B | KEM const tables B (.rodata, in RAM) | image .text B | deepest stack of run B | SRAM need B keygen/encaps/decaps (static+heap+stack) | 16 KB ATmega1284p | marker pair cycles | randombytes(64) cycles |").unwrap();
    writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|").unwrap();
    for r in &results {
        let need: Vec<String> = r
            .sram_need
            .iter()
            .map(|&n| format!("{}{}", thousands(n.into()), if n > SRAM_BYTES { "*" } else { "" }))
            .collect();
        writeln!(
            s,
            "| ML-KEM-{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.set,
            per_op(r.heap, "/"),
            per_op(r.stack_painted, "/"),
            r.kem_rodata,
            thousands(r.image_text),
            thousands(r.stack_depth.into()),
            need.join("/"),
            r.real_part,
            r.empty_window,
            r.rng64,
        )
        .unwrap();
        if r.kem_data_bss != 0 {
            writeln!(
                s,
                "(ML-KEM-{}: the KEM objects also have {} B of .data/.bss)",
                r.set, r.kem_data_bss
            )
            .unwrap();
        }
    }
    writeln!(s, "* more than the part's {} B of SRAM", thousands(SRAM_BYTES.into())).unwrap();
    writeln!(s).unwrap();
    writeln!(
        s,
        "ATmega4808 core (AVRxt): avr-gcc -mmcu=avrxmega3, the same flags, .rodata in .data; yasimavr's \
         atmega4808 model with 128 KB of flash and SRAM from 0x1500 to 0xFFFF, 20 MHz (yasimavr's \
         instruction timings, as the repository's ATmega4808 rows)\n"
    )
    .unwrap();
    writeln!(s, "| set | keygen cycles | encaps cycles | decaps cycles | painted stack B keygen/encaps/decaps | heap B | image .text B | image .data / .bss B | SRAM need B keygen/encaps/decaps | real ATmega4808 | marker pair cycles |").unwrap();
    writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|").unwrap();
    for r in &results {
        let m = &r.mega0;
        writeln!(
            s,
            "| ML-KEM-{} | {} | {} | {} | {} | {} / {} | {} | {} | {} |",
            r.set,
            per_op(m.cycles, " | "),
            per_op(m.stack_painted, "/"),
            per_op(m.heap, "/"),
            thousands(m.image_text),
            thousands(m.image_data),
            thousands(m.image_bss),
            per_op(m.sram_need, "/"),
            m.real_part(),
            m.empty_window,
        )
        .unwrap();
    }
    writeln!(s).unwrap();
    let ml512 = results.iter().find(|r| r.set == 512).unwrap();
    let base = [8_770_000f64, 10_033_000.0, 11_593_000.0];
    let base_stack = [6028f64, 8628.0, 9397.0];
    write!(
        s,
        "ML-KEM-512 vs the project's baseline (8,770/10,033/11,593 k cycles, 6,028/8,628/9,397 B):"
    )
    .unwrap();
    for i in 0..3 {
        write!(
            s,
            " {} {:+.2} % cycles, {:+} B stack;",
            OPS[i],
            (ml512.cycles[i] as f64 / base[i] - 1.0) * 100.0,
            f64::from(ml512.stack_sp[i]) - base_stack[i]
        )
        .unwrap();
    }
    writeln!(s).unwrap();
    writeln!(
        s,
        "checks: AVR bytes (pk, sk, ct, ss_enc, ss_dec, ss_reject) = host cc build{}; ss_enc = ss_dec; \
         patched and unpatched host builds agree; host bytes = RustCrypto ml-kem 0.3.4 (FIPS 203) for the same seed and message",
        if results.iter().all(|r| r.host_ubsan) { " with -fsanitize=undefined" } else { "" }
    )
    .unwrap();
    print!("{s}");
    std::fs::write(work.join("results.md"), &s).map_err(|e| e.to_string())?;
    Ok(())
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
