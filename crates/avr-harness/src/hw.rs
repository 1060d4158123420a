//! The AVR hardware parts: UART, markers, stack painting, stopping the MCU.

use core::arch::asm;
use core::ptr::{read_volatile, write_volatile};

use crate::protocol::{Io, STACK_OVERFLOW};

/// Pattern left in unused SRAM by [`paint_stack`].
const PAINT: u8 = 0xA5;
/// Bytes below the painter's own SP that it leaves alone.
const PAINT_MARGIN: u16 = 8;

#[cfg(not(avr_mega0))]
mod regs {
    pub const SPL: *mut u8 = 0x5D as *mut u8;
    pub const SPH: *mut u8 = 0x5E as *mut u8;
    pub const UCSR0A: *mut u8 = 0xC0 as *mut u8;
    pub const UCSR0B: *mut u8 = 0xC1 as *mut u8;
    pub const UCSR0C: *mut u8 = 0xC2 as *mut u8;
    pub const UBRR0L: *mut u8 = 0xC4 as *mut u8;
    pub const UBRR0H: *mut u8 = 0xC5 as *mut u8;
    pub const UDR0: *mut u8 = 0xC6 as *mut u8;
    pub const SMCR: *mut u8 = 0x53 as *mut u8;
    pub const RXC: u8 = 1 << 7;
    pub const UDRE: u8 = 1 << 5;
    pub const TXC: u8 = 1 << 6;
}

#[cfg(avr_mega0)]
mod regs {
    pub const SPL: *mut u8 = 0x3D as *mut u8;
    pub const SPH: *mut u8 = 0x3E as *mut u8;
    pub const USART0_RXDATAL: *mut u8 = 0x0800 as *mut u8;
    pub const USART0_TXDATAL: *mut u8 = 0x0802 as *mut u8;
    pub const USART0_STATUS: *mut u8 = 0x0804 as *mut u8;
    pub const USART0_CTRLB: *mut u8 = 0x0806 as *mut u8;
    pub const USART0_CTRLC: *mut u8 = 0x0807 as *mut u8;
    pub const USART0_BAUDL: *mut u8 = 0x0808 as *mut u8;
    pub const USART0_BAUDH: *mut u8 = 0x0809 as *mut u8;
    pub const PORTA_DIRSET: *mut u8 = 0x0401 as *mut u8;
    pub const SLPCTRL_CTRLA: *mut u8 = 0x0050 as *mut u8;
    pub const RXCIF: u8 = 1 << 7;
    pub const TXCIF: u8 = 1 << 6;
    pub const DREIF: u8 = 1 << 5;
}

use regs::*;

/// UART0 (classic) / USART0 (megaAVR-0), 8N1, polled.
///
/// Classic: U2X with UBRR = 0, i.e. F_CPU/8 (2.5 Mbaud at 20 MHz).
/// megaAVR-0: BAUD = 64 (F_CPU/16·64/64 = F_CPU/16), TX on PA0.
#[derive(Debug)]
pub struct Uart(());

impl Uart {
    /// Enables the receiver and transmitter.
    pub fn init() -> Uart {
        // SAFETY: fixed peripheral registers of the selected MCU.
        unsafe {
            #[cfg(not(avr_mega0))]
            {
                write_volatile(UBRR0H, 0);
                write_volatile(UBRR0L, 0);
                write_volatile(UCSR0A, 1 << 1); // U2X0
                write_volatile(UCSR0C, 0x06); // 8N1
                write_volatile(UCSR0B, (1 << 4) | (1 << 3)); // RXEN0 | TXEN0
            }
            #[cfg(avr_mega0)]
            {
                write_volatile(PORTA_DIRSET, 1 << 0);
                write_volatile(USART0_BAUDL, 64);
                write_volatile(USART0_BAUDH, 0);
                write_volatile(USART0_CTRLC, 0x03); // async, 8N1
                write_volatile(USART0_CTRLB, (1 << 7) | (1 << 6)); // RXEN | TXEN
            }
        }
        Uart(())
    }
}

impl Io for Uart {
    /// Waits until the last byte has left the transmitter.
    fn flush(&mut self) {
        // SAFETY: fixed peripheral registers of the selected MCU.
        unsafe {
            #[cfg(not(avr_mega0))]
            while read_volatile(UCSR0A) & TXC == 0 {}
            #[cfg(avr_mega0)]
            while read_volatile(USART0_STATUS) & TXCIF == 0 {}
        }
    }

    #[inline]
    fn read_byte(&mut self) -> u8 {
        // SAFETY: as above.
        unsafe {
            #[cfg(not(avr_mega0))]
            {
                while read_volatile(UCSR0A) & RXC == 0 {}
                read_volatile(UDR0)
            }
            #[cfg(avr_mega0)]
            {
                while read_volatile(USART0_STATUS) & RXCIF == 0 {}
                read_volatile(USART0_RXDATAL)
            }
        }
    }

    #[inline]
    fn write_byte(&mut self, b: u8) {
        // SAFETY: as above. Writing TXC/TXCIF as 1 clears it, so flush() sees this byte.
        unsafe {
            #[cfg(not(avr_mega0))]
            {
                while read_volatile(UCSR0A) & UDRE == 0 {}
                write_volatile(UCSR0A, read_volatile(UCSR0A) | TXC);
                write_volatile(UDR0, b);
            }
            #[cfg(avr_mega0)]
            {
                while read_volatile(USART0_STATUS) & DREIF == 0 {}
                write_volatile(USART0_STATUS, TXCIF);
                write_volatile(USART0_TXDATAL, b);
            }
        }
    }
}

/// Opens marker window `id` (GPIOR0 = id). Also a compiler barrier.
#[inline(always)]
pub fn marker_begin(id: u8) {
    // SAFETY: writes GPIOR0 only; no `nomem`, so memory accesses are not moved across it.
    unsafe {
        #[cfg(not(avr_mega0))]
        asm!("out 0x1E, {0}", in(reg) id, options(nostack, preserves_flags));
        #[cfg(avr_mega0)]
        asm!("out 0x1C, {0}", in(reg) id, options(nostack, preserves_flags));
    }
}

/// Closes marker window `id` (GPIOR0 = id | 0x80). Also a compiler barrier.
#[inline(always)]
pub fn marker_end(id: u8) {
    marker_begin(id | 0x80);
}

/// The stack pointer.
#[inline(always)]
pub fn read_sp() -> u16 {
    // SAFETY: reads the SP registers.
    unsafe { u16::from_le_bytes([read_volatile(SPL), read_volatile(SPH)]) }
}

extern "C" {
    /// First byte after .data/.bss/.noinit (defined by the linker script).
    static __heap_start: u8;
}

fn heap_start() -> *mut u8 {
    core::ptr::addr_of!(__heap_start) as *mut u8
}

/// Fills SRAM from the end of static data up to just below the current SP with a pattern.
#[inline(never)]
pub fn paint_stack() {
    let top = read_sp().wrapping_sub(PAINT_MARGIN) as usize;
    let mut p = heap_start();
    while (p as usize) < top {
        // SAFETY: [heap start, SP − margin) is free SRAM (no heap is used).
        unsafe {
            write_volatile(p, PAINT);
            p = p.add(1);
        }
    }
}

/// Stack bytes used since [`paint_stack`] by code running below `sp` (the SP
/// before the call): AVR pushes post-decrement, so a window that pushed down
/// to address `p` used the bytes `p ..= sp`. [`STACK_OVERFLOW`] when the
/// stack reached the end of static data (the measure saturated).
#[inline(never)]
pub fn stack_used_since(sp: u16) -> u16 {
    let mut p = heap_start();
    // SAFETY: scans free SRAM below `sp`.
    unsafe {
        while (p as usize) < sp as usize && read_volatile(p) == PAINT {
            p = p.add(1);
        }
    }
    if p == heap_start() {
        // Not even the first free byte kept its paint: the stack ran into
        // .bss/.data (or reached it exactly): the true need is unknown.
        return STACK_OVERFLOW;
    }
    let low = p as usize as u16;
    if low >= sp {
        0
    } else {
        sp - low + 1
    }
}

/// Stops the MCU for good: `cli; sleep` with sleep enabled (the simulator ends the run).
pub fn exit() -> ! {
    // SAFETY: sleep-control register of the selected MCU; interrupts stay off.
    unsafe {
        #[cfg(not(avr_mega0))]
        write_volatile(SMCR, 1); // SE, idle mode
        #[cfg(avr_mega0)]
        write_volatile(SLPCTRL_CTRLA, 1); // SEN, idle mode
        loop {
            asm!("cli", "sleep", options(nostack));
        }
    }
}
