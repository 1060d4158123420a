//! A pqm4-style test/speed/stack harness for AVR firmware, `no_std`.
//!
//! Every scheme's firmware links this crate and calls [`serve`] with its
//! table of [`Op`]s. The host (the `xtask`, through `avr-sim`) then speaks a
//! tiny framed protocol over UART0 ([`protocol`]):
//!
//! - request: `[op u8][len u16 le][payload]`
//! - reply:   `[status u8][len u16 le][payload]`
//!
//! Measured code runs inside a marker window ([`measure`]): the firmware
//! writes the window id to GPIOR0 before and `id | 0x80` after, so the
//! simulator can stamp cycle counts; free SRAM is painted first and scanned
//! afterwards, a second stack measure that also works on real hardware.
//! Two on-chip timers are read at the same points ([`protocol::OP_CYCLES`]),
//! the cycle count of a board, which has no simulator to stamp markers.
//!
//! On `target_arch = "avr"` the hardware parts are compiled for the classic
//! megaAVR layout (ATmega1284p: UART0, GPIOR0 at I/O 0x1E) or, when built
//! with `-C target-cpu=atmega4808` (and the other megaAVR-0 parts), for
//! USART0, GPIOR0 at 0x1C and SLPCTRL. On the host only the pure protocol
//! logic is compiled, so it can be unit-tested.

#![no_std]
#![cfg_attr(target_arch = "avr", feature(asm_experimental_arch))]
#![cfg_attr(all(target_arch = "avr", feature = "board"), feature(abi_avr_interrupt))]

#[cfg(test)]
extern crate std;

pub mod protocol;

#[cfg(all(target_arch = "avr", feature = "board"))]
pub mod board;
#[cfg(target_arch = "avr")]
mod hw;
#[cfg(target_arch = "avr")]
pub use hw::{eeprom_read, eeprom_write, exit, marker_begin, marker_end, paint_stack, read_sp, stack_used_since, Uart};

pub use protocol::{ops_count, ops_table, Io, Op, Status};

/// Runs `f` inside marker window `id` (1..=0x7F), with the stack painted
/// beforehand. Returns what `f` returns; the painted stack measure of the
/// window is kept for [`protocol::OP_STACK`].
#[cfg(target_arch = "avr")]
#[inline(never)]
pub fn measure<R>(id: u8, f: impl FnOnce() -> R) -> R {
    paint_stack();
    let sp = read_sp();
    hw::timed_begin(id);
    let r = f();
    let timers = hw::timed_end(id);
    // SAFETY: single-threaded firmware, no interrupts use these.
    unsafe {
        LAST_STACK = stack_used_since(sp);
        LAST_TIMERS = timers;
    }
    r
}

/// Host stand-in for [`measure`]: runs `f` (no markers, no stack measure).
#[cfg(not(target_arch = "avr"))]
pub fn measure<R>(_id: u8, f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "avr")]
static mut LAST_STACK: u16 = 0;

#[cfg(target_arch = "avr")]
static mut LAST_TIMERS: [u8; 5] = [0; 5];

/// The on-chip timers' reading of the last [`measure`] window
/// ([`protocol::timer_cycles`] turns it into cycles).
pub fn last_timers() -> [u8; 5] {
    #[cfg(target_arch = "avr")]
    // SAFETY: single-threaded firmware.
    unsafe {
        LAST_TIMERS
    }
    #[cfg(not(target_arch = "avr"))]
    [0; 5]
}

/// The painted-stack measure of the last [`measure`] window, in bytes.
pub fn last_stack() -> u16 {
    #[cfg(target_arch = "avr")]
    // SAFETY: single-threaded firmware.
    unsafe {
        LAST_STACK
    }
    #[cfg(not(target_arch = "avr"))]
    0
}

/// Serves requests forever: built-in operations (see [`protocol`]) and
/// `ops`. Returns only through [`protocol::OP_EXIT`], which stops the MCU.
pub fn serve<I: Io>(io: &mut I, ops: &[Op<I>]) -> ! {
    #[cfg(target_arch = "avr")]
    hw::cycle_timers_init();
    loop {
        if let protocol::Flow::Exit = protocol::serve_one(io, ops, last_stack, last_timers) {
            #[cfg(target_arch = "avr")]
            exit();
            #[cfg(not(target_arch = "avr"))]
            panic!("exit requested");
        }
    }
}
