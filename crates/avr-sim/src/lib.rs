#![doc = include_str!("../README.md")]

pub mod harness;

use std::ffi::{c_char, c_int, CString};
use std::fmt;
use std::path::{Path, PathBuf};

/// The clock every benchmark assumes (the published figures use 20 MHz).
pub const DEFAULT_FREQUENCY: u32 = avr_mcu::CLOCK_HZ;
/// GPIOR0 in data space on classic megaAVR parts (I/O 0x1E + 0x20).
pub const GPIOR0_CLASSIC: u16 = 0x3E;

#[repr(C)]
struct ShimT {
    _private: [u8; 0],
}

#[cfg(not(no_simavr))]
extern "C" {
    fn shim_new(
        elf: *const c_char,
        mcu: *const c_char,
        freq: u32,
        marker: u16,
        ramend: u16,
        out: *mut *mut ShimT,
    ) -> c_int;
    fn shim_free(s: *mut ShimT);
    fn shim_push_input(s: *mut ShimT, data: *const u8, len: usize) -> c_int;
    fn shim_pending_input(s: *const ShimT) -> usize;
    fn shim_output_len(s: *const ShimT) -> usize;
    fn shim_take_output(s: *mut ShimT, buf: *mut u8, cap: usize) -> usize;
    fn shim_event_count(s: *const ShimT) -> usize;
    fn shim_event(s: *const ShimT, i: usize, id: *mut u8, cycle: *mut u64, sp: *mut u16, min_sp: *mut u16);
    fn shim_clear_events(s: *mut ShimT);
    fn shim_cycle(s: *const ShimT) -> u64;
    fn shim_pc(s: *const ShimT) -> u32;
    fn shim_sp(s: *const ShimT) -> u16;
    fn shim_min_sp(s: *const ShimT) -> u16;
    fn shim_min_sp_all(s: *const ShimT) -> u16;
    fn shim_ramend(s: *const ShimT) -> u16;
    fn shim_read_data(s: *const ShimT, addr: u32, out: *mut u8, len: usize) -> c_int;
    fn shim_run(s: *mut ShimT, cycle_limit: u64, want_out: usize) -> c_int;
    fn shim_set_adc(s: *mut ShimT, channel: u32, millivolts: u32) -> c_int;
    fn shim_profile(s: *mut ShimT, on: c_int) -> c_int;
    fn shim_profile_take(s: *mut ShimT, buf: *mut u32, cap: usize) -> usize;
    fn shim_profile_len(s: *const ShimT) -> usize;
}

/// Stand-ins when the crate was built without libsimavr: `shim_new` fails, so
/// no [`Sim`] exists and the others are never called.
#[cfg(no_simavr)]
#[allow(clippy::missing_safety_doc)]
mod stub {
    use super::{c_char, c_int, ShimT};
    pub unsafe fn shim_new(_: *const c_char, _: *const c_char, _: u32, _: u16, _: u16, _: *mut *mut ShimT) -> c_int {
        -6
    }
    pub unsafe fn shim_free(_: *mut ShimT) {}
    pub unsafe fn shim_push_input(_: *mut ShimT, _: *const u8, _: usize) -> c_int {
        unreachable!()
    }
    pub unsafe fn shim_pending_input(_: *const ShimT) -> usize {
        unreachable!()
    }
    pub unsafe fn shim_output_len(_: *const ShimT) -> usize {
        unreachable!()
    }
    pub unsafe fn shim_take_output(_: *mut ShimT, _: *mut u8, _: usize) -> usize {
        unreachable!()
    }
    pub unsafe fn shim_event_count(_: *const ShimT) -> usize {
        unreachable!()
    }
    pub unsafe fn shim_event(_: *const ShimT, _: usize, _: *mut u8, _: *mut u64, _: *mut u16, _: *mut u16) {
        unreachable!()
    }
    pub unsafe fn shim_clear_events(_: *mut ShimT) {}
    pub unsafe fn shim_cycle(_: *const ShimT) -> u64 {
        unreachable!()
    }
    pub unsafe fn shim_pc(_: *const ShimT) -> u32 {
        unreachable!()
    }
    pub unsafe fn shim_sp(_: *const ShimT) -> u16 {
        unreachable!()
    }
    pub unsafe fn shim_min_sp(_: *const ShimT) -> u16 {
        unreachable!()
    }
    pub unsafe fn shim_min_sp_all(_: *const ShimT) -> u16 {
        unreachable!()
    }
    pub unsafe fn shim_ramend(_: *const ShimT) -> u16 {
        unreachable!()
    }
    pub unsafe fn shim_read_data(_: *const ShimT, _: u32, _: *mut u8, _: usize) -> c_int {
        unreachable!()
    }
    pub unsafe fn shim_run(_: *mut ShimT, _: u64, _: usize) -> c_int {
        unreachable!()
    }
    pub unsafe fn shim_set_adc(_: *mut ShimT, _: u32, _: u32) -> c_int {
        unreachable!()
    }
    pub unsafe fn shim_profile(_: *mut ShimT, _: c_int) -> c_int {
        unreachable!()
    }
    pub unsafe fn shim_profile_take(_: *mut ShimT, _: *mut u32, _: usize) -> usize {
        unreachable!()
    }
    pub unsafe fn shim_profile_len(_: *const ShimT) -> usize {
        unreachable!()
    }
}
#[cfg(no_simavr)]
use stub::*;

/// Whether this build can simulate (false when libsimavr-dev was missing at build time).
pub const AVAILABLE: bool = !cfg!(no_simavr);

/// Everything that can go wrong loading or running firmware.
#[derive(Debug)]
pub enum Error {
    /// The firmware file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a 32-bit AVR ELF executable.
    BadElf {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// simavr has no model of this MCU.
    UnknownMcu(String),
    /// simavr could not initialise the core or load the firmware.
    Load(&'static str),
    /// The simulated MCU has no UART0 (the harness protocol needs it).
    NoUart,
    /// avr-sim was built without libsimavr (install libsimavr-dev libelf-dev and rebuild).
    Unavailable,
    /// The cycle limit was reached before the firmware finished.
    CycleLimit {
        /// The limit, in absolute cycles.
        limit: u64,
        /// Program counter (byte address) when it was hit.
        pc: u32,
        /// Bytes of input the firmware had not consumed yet.
        pending_input: usize,
        /// Output bytes collected so far.
        output_len: usize,
    },
    /// simavr reported a crash (bad opcode, watchdog, …).
    Crashed {
        /// Program counter (byte address).
        pc: u32,
        /// Cycle of the crash.
        cycle: u64,
    },
    /// The firmware stopped (`cli; sleep`) while output was still expected.
    Exited {
        /// Cycle at which it stopped.
        cycle: u64,
        /// Output bytes collected (fewer than expected).
        output_len: usize,
    },
    /// Marker writes do not pair up as `id`, `id | 0x80`.
    UnpairedMarker {
        /// The offending marker value.
        id: u8,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Error::BadElf { path, reason } => write!(f, "{} is not AVR firmware: {reason}", path.display()),
            Error::UnknownMcu(m) => write!(f, "simavr has no model of MCU `{m}`"),
            Error::Load(what) => write!(f, "simavr: {what}"),
            Error::NoUart => write!(f, "the simulated MCU has no UART0"),
            Error::Unavailable => {
                write!(
                    f,
                    "avr-sim was built without libsimavr: run `cargo xtask setup`, then rebuild"
                )
            }
            Error::CycleLimit {
                limit,
                pc,
                pending_input,
                output_len,
            } => write!(
                f,
                "cycle limit {limit} reached (pc 0x{pc:05x}, {pending_input} input bytes unread, \
                 {output_len} output bytes): firmware hung or the limit is too low"
            ),
            Error::Crashed { pc, cycle } => write!(f, "firmware crashed at pc 0x{pc:05x}, cycle {cycle}"),
            Error::Exited { cycle, output_len } => {
                write!(
                    f,
                    "firmware stopped at cycle {cycle} after {output_len} output bytes, more were expected"
                )
            }
            Error::UnpairedMarker { id } => write!(f, "marker 0x{id:02x} does not close an open window"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// One write to the marker register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    /// The value written (`id`, or `id | 0x80` to close).
    pub id: u8,
    /// The cycle counter at the write.
    pub cycle: u64,
    /// SP at the write.
    pub sp: u16,
    /// Lowest SP since the last opening marker (inclusive).
    pub min_sp: u16,
}

/// A measured window: the span between `id` and `id | 0x80`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The window id (bit 7 clear).
    pub id: u8,
    /// Cycles between the two marker writes.
    pub cycles: u64,
    /// Stack bytes used below the SP at the opening marker.
    pub stack_bytes: u16,
}

/// Pairs marker writes into windows. Windows must not nest.
pub fn windows(markers: &[Marker]) -> Result<Vec<Window>, Error> {
    let mut out = Vec::new();
    let mut open: Option<&Marker> = None;
    for m in markers {
        if m.id & 0x80 == 0 {
            if open.is_some() {
                return Err(Error::UnpairedMarker { id: m.id });
            }
            open = Some(m);
        } else {
            match open.take() {
                Some(o) if o.id == m.id & 0x7F => out.push(Window {
                    id: o.id,
                    cycles: m.cycle - o.cycle,
                    stack_bytes: o.sp.saturating_sub(m.min_sp),
                }),
                _ => return Err(Error::UnpairedMarker { id: m.id }),
            }
        }
    }
    match open {
        Some(o) => Err(Error::UnpairedMarker { id: o.id }),
        None => Ok(out),
    }
}

/// Checks that `bytes` start like a 32-bit little-endian AVR ELF executable.
fn check_elf(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let bad = |reason| Error::BadElf {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() < 52 {
        return Err(bad("too short for an ELF header"));
    }
    if &bytes[..4] != b"\x7fELF" {
        return Err(bad("no ELF magic"));
    }
    if bytes[4] != 1 || bytes[5] != 1 {
        return Err(bad("not a 32-bit little-endian ELF"));
    }
    const EM_AVR: u16 = 83;
    if u16::from_le_bytes([bytes[18], bytes[19]]) != EM_AVR {
        return Err(bad("ELF machine is not AVR"));
    }
    Ok(())
}

/// A simulated MCU running one firmware image.
pub struct Sim {
    raw: *mut ShimT,
    mcu: String,
    frequency: u32,
}

impl fmt::Debug for Sim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sim")
            .field("mcu", &self.mcu)
            .field("frequency", &self.frequency)
            .field("cycle", &self.cycle())
            .finish()
    }
}

impl Sim {
    /// Loads `elf` into a fresh `mcu` (simavr name, e.g. `"atmega1284p"`) at 20 MHz,
    /// with markers on GPIOR0.
    pub fn load(elf: impl AsRef<Path>, mcu: &str) -> Result<Sim, Error> {
        Sim::load_with(elf, mcu, DEFAULT_FREQUENCY, GPIOR0_CLASSIC)
    }

    /// Like [`Sim::load`] with an explicit clock and marker register (data-space address).
    pub fn load_with(elf: impl AsRef<Path>, mcu: &str, frequency: u32, marker_addr: u16) -> Result<Sim, Error> {
        Sim::load_inner(elf.as_ref(), mcu, frequency, marker_addr, 0)
    }

    /// Like [`Sim::load_with`] on a data space that ends at `ramend` (its
    /// last address, e.g. `0xFFFF` for 64 KB) instead of the part's own
    /// RAMEND (0x40FF on the ATmega1284p): for images whose data (stack,
    /// statics, heap) need more than the part's SRAM, to measure them on
    /// the part's core anyway. Only the size of simavr's data array
    /// changes, set before the core is initialised: the instruction set,
    /// I/O registers and cycle counts are the part's, and since simavr
    /// charges a data access the same cycles at any address, cycle counts
    /// are those the real part would give for code that fit. The SP starts
    /// at `ramend` at reset, but avr-libc's start-up sets it to `__stack`,
    /// so link the image with `-Wl,--defsym=__stack=<ramend>` to put the
    /// stack at the new top ([`Sim::stack_depth`] and
    /// [`Sim::stack_depth_since_reset`] count from `ramend`).
    ///
    /// `Error::Load` if `ramend` is below the part's own RAMEND.
    pub fn load_with_ramend(
        elf: impl AsRef<Path>,
        mcu: &str,
        frequency: u32,
        marker_addr: u16,
        ramend: u16,
    ) -> Result<Sim, Error> {
        if ramend == 0 {
            return Err(Error::Load("RAMEND override below the part's own"));
        }
        Sim::load_inner(elf.as_ref(), mcu, frequency, marker_addr, ramend)
    }

    /// `ramend` 0: the part's own.
    fn load_inner(path: &Path, mcu: &str, frequency: u32, marker_addr: u16, ramend: u16) -> Result<Sim, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        check_elf(path, &bytes)?;
        let bad = |reason| Error::BadElf {
            path: path.to_path_buf(),
            reason,
        };
        let c_path = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| bad("path contains NUL"))?;
        let c_mcu = CString::new(mcu).map_err(|_| Error::UnknownMcu(mcu.to_string()))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: both strings are NUL-terminated and outlive the call; `raw` is an out-pointer.
        let rc = unsafe {
            shim_new(
                c_path.as_ptr(),
                c_mcu.as_ptr(),
                frequency,
                marker_addr,
                ramend,
                &mut raw,
            )
        };
        match rc {
            0 if !raw.is_null() => Ok(Sim {
                raw,
                mcu: mcu.to_string(),
                frequency,
            }),
            -1 => Err(Error::UnknownMcu(mcu.to_string())),
            -2 => Err(bad("simavr could not load it")),
            -4 => Err(Error::Load("out of memory")),
            -5 => Err(Error::NoUart),
            -6 => Err(Error::Unavailable),
            -7 => Err(Error::Load("RAMEND override below the part's own")),
            _ => Err(Error::Load("core initialisation failed")),
        }
    }

    /// The MCU name.
    pub fn mcu(&self) -> &str {
        &self.mcu
    }

    /// The simulated clock in Hz.
    pub fn frequency(&self) -> u32 {
        self.frequency
    }

    /// Cycles simulated so far.
    pub fn cycle(&self) -> u64 {
        // SAFETY: `raw` is valid for the life of `self`.
        unsafe { shim_cycle(self.raw) }
    }

    /// Current program counter (byte address).
    pub fn pc(&self) -> u32 {
        // SAFETY: as above.
        unsafe { shim_pc(self.raw) }
    }

    /// Current stack pointer.
    pub fn sp(&self) -> u16 {
        // SAFETY: as above.
        unsafe { shim_sp(self.raw) }
    }

    /// The deepest the stack has gone, in bytes below the top of data
    /// space (where the SP starts at reset): since the last opening marker,
    /// or since the start for a firmware that writes none (an application
    /// of one's own). SP updates are sampled after every instruction, the
    /// transient state between `out SPH` and `out SPL` skipped.
    pub fn stack_depth(&self) -> u16 {
        // SAFETY: `raw` is valid for the life of `self`.
        let (lowest, top) = unsafe { (shim_min_sp(self.raw), shim_ramend(self.raw)) };
        top.saturating_sub(lowest)
    }

    /// The deepest the stack has gone since reset, in bytes below the top
    /// of data space: like [`Sim::stack_depth`], but markers do not restart
    /// it (the whole run's need, windows and all).
    pub fn stack_depth_since_reset(&self) -> u16 {
        // SAFETY: `raw` is valid for the life of `self`.
        let (lowest, top) = unsafe { (shim_min_sp_all(self.raw), shim_ramend(self.raw)) };
        top.saturating_sub(lowest)
    }

    /// The last address of data space (the SP at reset): the part's
    /// RAMEND, or the override of [`Sim::load_with_ramend`].
    pub fn ramend(&self) -> u16 {
        // SAFETY: `raw` is valid for the life of `self`.
        unsafe { shim_ramend(self.raw) }
    }

    /// `len` bytes of data space (SRAM, e.g. a firmware's statics) from
    /// `addr`, as they are now; `None` if the range leaves data space.
    pub fn read_data(&self, addr: u32, len: usize) -> Option<Vec<u8>> {
        let mut out = vec![0u8; len];
        // SAFETY: `raw` is live; `out` has room for `len` bytes.
        let rc = unsafe { shim_read_data(self.raw, addr, out.as_mut_ptr(), len) };
        (rc == 0).then_some(out)
    }

    /// Sets the voltage on ADC input `channel` (0–7: the pins ADC0–ADC7 of
    /// a classic ATmega, whose references are a 5 V supply) to
    /// `millivolts`: what the firmware's next conversion reads. `false` if
    /// the MCU's model has no such input.
    pub fn set_adc(&mut self, channel: u8, millivolts: u32) -> bool {
        // SAFETY: `raw` is live.
        unsafe { shim_set_adc(self.raw, u32::from(channel), millivolts) == 0 }
    }

    /// Queues bytes for UART0; they are delivered as the firmware's receiver accepts them.
    pub fn send(&mut self, bytes: &[u8]) {
        // SAFETY: `bytes` is a valid slice; the shim copies it.
        let rc = unsafe { shim_push_input(self.raw, bytes.as_ptr(), bytes.len()) };
        assert_eq!(rc, 0, "out of memory queueing UART input");
    }

    /// Input bytes not yet delivered to the firmware.
    pub fn pending_input(&self) -> usize {
        // SAFETY: as above.
        unsafe { shim_pending_input(self.raw) }
    }

    /// Output bytes collected and not yet taken.
    pub fn output_len(&self) -> usize {
        // SAFETY: as above.
        unsafe { shim_output_len(self.raw) }
    }

    /// Takes all collected UART0 output.
    pub fn take_output(&mut self) -> Vec<u8> {
        self.take_output_n(self.output_len())
    }

    fn take_output_n(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        // SAFETY: `buf` has room for `n` bytes.
        let got = unsafe { shim_take_output(self.raw, buf.as_mut_ptr(), n) };
        buf.truncate(got);
        buf
    }

    /// Takes the marker writes recorded so far.
    pub fn take_markers(&mut self) -> Vec<Marker> {
        // SAFETY: indices are below the count; out-pointers are valid locals.
        unsafe {
            let n = shim_event_count(self.raw);
            let mut v = Vec::with_capacity(n);
            for i in 0..n {
                let mut m = Marker {
                    id: 0,
                    cycle: 0,
                    sp: 0,
                    min_sp: 0,
                };
                shim_event(self.raw, i, &mut m.id, &mut m.cycle, &mut m.sp, &mut m.min_sp);
                v.push(m);
            }
            shim_clear_events(self.raw);
            v
        }
    }

    fn run(&mut self, budget: u64, want_out: usize) -> Result<i32, Error> {
        let limit = self.cycle().saturating_add(budget);
        // SAFETY: `raw` is valid; the shim only touches its own state.
        let rc = unsafe { shim_run(self.raw, limit, want_out) };
        match rc {
            0 | 1 => Ok(rc),
            2 => Err(Error::Crashed {
                pc: self.pc(),
                cycle: self.cycle(),
            }),
            _ => Err(Error::CycleLimit {
                limit,
                pc: self.pc(),
                pending_input: self.pending_input(),
                output_len: self.output_len(),
            }),
        }
    }

    /// Runs until `n` output bytes are available and returns exactly those
    /// (later bytes stay queued). At most `budget` more cycles are simulated.
    pub fn run_until_output(&mut self, n: usize, budget: u64) -> Result<Vec<u8>, Error> {
        if n == 0 {
            return Ok(Vec::new());
        }
        match self.run(budget, n)? {
            0 => Ok(self.take_output_n(n)),
            _ => Err(Error::Exited {
                cycle: self.cycle(),
                output_len: self.output_len(),
            }),
        }
    }

    /// Runs `budget` more cycles and returns the output collected (possibly
    /// none): the step of a loop that also feeds input, like a UART bridge.
    /// An error once the firmware has stopped (its last output is taken by
    /// [`Sim::take_output`]).
    pub fn run_slice(&mut self, budget: u64) -> Result<Vec<u8>, Error> {
        match self.run(budget, usize::MAX) {
            Ok(0) | Err(Error::CycleLimit { .. }) => Ok(self.take_output()),
            Ok(_) => Err(Error::Exited {
                cycle: self.cycle(),
                output_len: self.output_len(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Turns the instruction profile on (counters zeroed) or off. While on,
    /// every instruction executed inside a marker window increments the
    /// counter of its flash word: two runs whose profiles differ took
    /// different paths, and the differing words locate the branch.
    pub fn set_profiling(&mut self, on: bool) {
        // SAFETY: `raw` is valid; the shim owns the counters.
        let rc = unsafe { shim_profile(self.raw, c_int::from(on)) };
        assert_eq!(rc, 0, "out of memory for the instruction profile");
    }

    /// Takes the profile (one counter per flash word, byte address = 2 × index) and zeroes it;
    /// empty when profiling is off.
    pub fn take_profile(&mut self) -> Vec<u32> {
        // SAFETY: `buf` has room for `len` counters.
        unsafe {
            let len = shim_profile_len(self.raw);
            let mut buf = vec![0u32; len];
            let n = shim_profile_take(self.raw, buf.as_mut_ptr(), len);
            buf.truncate(n);
            buf
        }
    }

    /// Runs until the firmware stops with `cli; sleep` (at most `budget` more cycles).
    pub fn run_to_exit(&mut self, budget: u64) -> Result<(), Error> {
        self.run(budget, 0).map(|_| ())
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `shim_new` and is freed exactly once.
        unsafe { shim_free(self.raw) }
    }
}

/// Cycles a reply may take to come (the slowest operation, a hybrid
/// sensor's start, takes a few tens of millions).
pub const REPLY_BUDGET: u64 = 500_000_000;

/// The simulated MCU as a transport of the harness protocol's one client:
/// requests go into UART0, replies are simulated until they are out (an
/// error past [`REPLY_BUDGET`] cycles).
impl avr_wire::client::Transport for Sim {
    fn send(&mut self, bytes: &[u8]) -> Result<(), avr_wire::client::Error> {
        Sim::send(self, bytes);
        Ok(())
    }

    fn receive(&mut self, n: usize) -> Result<Vec<u8>, avr_wire::client::Error> {
        self.run_until_output(n, REPLY_BUDGET)
            .map_err(|e| avr_wire::client::Error::Transport(Box::new(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_windows() {
        let m = |id, cycle, sp, min_sp| Marker { id, cycle, sp, min_sp };
        let w = windows(&[m(3, 100, 0x4000, 0x4000), m(0x83, 250, 0x4000, 0x3F00)]).unwrap();
        assert_eq!(
            w,
            vec![Window {
                id: 3,
                cycles: 150,
                stack_bytes: 0x100
            }]
        );
        assert!(windows(&[m(0x83, 1, 0, 0)]).is_err());
        assert!(windows(&[m(3, 1, 0, 0), m(0x84, 2, 0, 0)]).is_err());
        assert!(windows(&[m(3, 1, 0, 0)]).is_err());
    }

    #[test]
    fn rejects_bad_files() {
        let dir = std::env::temp_dir().join(format!("avr-sim-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.elf");
        std::fs::write(
            &junk,
            b"definitely not an ELF file, but long enough to have a header......",
        )
        .unwrap();
        assert!(matches!(Sim::load(&junk, "atmega1284p"), Err(Error::BadElf { .. })));
        assert!(matches!(
            Sim::load(dir.join("missing.elf"), "atmega1284p"),
            Err(Error::Io { .. })
        ));
        // A host ELF is an ELF, but not for AVR.
        let host = std::env::current_exe().unwrap();
        assert!(matches!(Sim::load(host, "atmega1284p"), Err(Error::BadElf { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
