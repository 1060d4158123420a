#![doc = include_str!("../README.md")]
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
pub use hw::{
    eeprom_read, eeprom_write, exit, marker_begin, marker_end, paint_stack, read_program_memory, read_sp,
    stack_used_since, Uart,
};

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
