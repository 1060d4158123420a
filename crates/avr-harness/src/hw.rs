//! The AVR hardware parts: UART, markers, cycle timers, stack painting,
//! EEPROM, stopping the MCU.

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
    pub const EECR: *mut u8 = 0x3F as *mut u8;
    pub const EEDR: *mut u8 = 0x40 as *mut u8;
    pub const EEARL: *mut u8 = 0x41 as *mut u8;
    pub const EEARH: *mut u8 = 0x42 as *mut u8;
    pub const EERE: u8 = 1 << 0;
    pub const EEPE: u8 = 1 << 1;
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
    pub const NVMCTRL_STATUS: *mut u8 = 0x1002 as *mut u8;
    pub const EEBUSY: u8 = 1 << 1;
    /// The EEPROM (256 B on the ATmega4808) in the data space.
    pub const EEPROM_START: u16 = 0x1400;
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

/// Starts the two timers of the on-chip cycle count (see
/// [`crate::protocol::timer_cycles`]): a fine 16-bit timer at the CPU clock
/// and a coarse 16-bit one at 1/1024 of it, no interrupts.
///
/// - ATmega1284p: Timer/Counter1 (fine) and Timer/Counter3 (coarse);
/// - megaAVR-0: TCB0 in periodic mode with TOP 0xFFFF (fine) and TCA0
///   (coarse).
pub fn cycle_timers_init() {
    // SAFETY: timer registers of the selected MCU, which nothing else uses.
    unsafe {
        #[cfg(not(avr_mega0))]
        {
            write_volatile(0x80 as *mut u8, 0); // TCCR1A: normal mode
            write_volatile(0x81 as *mut u8, 0x01); // TCCR1B: clk/1
            write_volatile(0x90 as *mut u8, 0); // TCCR3A: normal mode
            write_volatile(0x91 as *mut u8, 0x05); // TCCR3B: clk/1024
        }
        #[cfg(avr_mega0)]
        {
            // 16-bit registers of megaAVR-0: low byte first.
            write_volatile(0x0A26 as *mut u8, 0xFF); // TCA0.PER = 0xFFFF
            write_volatile(0x0A27 as *mut u8, 0xFF);
            write_volatile(0x0A01 as *mut u8, 0); // TCA0.CTRLB: normal mode
            write_volatile(0x0A00 as *mut u8, (7 << 1) | 1); // TCA0.CTRLA: clk/1024, enabled
            write_volatile(0x0A8C as *mut u8, 0xFF); // TCB0.CCMP = 0xFFFF (TOP)
            write_volatile(0x0A8D as *mut u8, 0xFF);
            write_volatile(0x0A81 as *mut u8, 0); // TCB0.CTRLB: periodic interrupt mode
            write_volatile(0x0A80 as *mut u8, 1); // TCB0.CTRLA: clk/1, enabled
        }
    }
}

/// Zeroes both timers (and the coarse one's overflow flag), then opens
/// marker window `id`, in one instruction sequence: the timer count and the
/// marker window start a fixed number of cycles apart.
#[inline(always)]
pub fn timed_begin(id: u8) {
    // SAFETY: timer registers and GPIOR0 of the selected MCU; no `nomem`, so
    // memory accesses are not moved across it.
    unsafe {
        #[cfg(not(avr_mega0))]
        asm!(
            "sts 0x95, {zero}", // TCNT3H (classic 16-bit writes: high byte first)
            "sts 0x94, {zero}", // TCNT3L
            "out 0x18, {one}",  // TIFR3: clear TOV3
            "sts 0x85, {zero}", // TCNT1H
            "sts 0x84, {zero}", // TCNT1L: the fine count starts here
            "out 0x1E, {id}",   // GPIOR0: the window opens
            zero = in(reg) 0u8,
            one = in(reg) 1u8,
            id = in(reg) id,
            options(nostack, preserves_flags)
        );
        #[cfg(avr_mega0)]
        asm!(
            "sts 0x0A20, {zero}", // TCA0.CNTL (megaAVR-0: low byte first)
            "sts 0x0A21, {zero}", // TCA0.CNTH
            "sts 0x0A0B, {one}",  // TCA0.INTFLAGS: clear OVF
            "sts 0x0A8A, {zero}", // TCB0.CNTL
            "sts 0x0A8B, {zero}", // TCB0.CNTH: the fine count starts here
            "out 0x1C, {id}",     // GPIOR0: the window opens
            zero = in(reg) 0u8,
            one = in(reg) 1u8,
            id = in(reg) id,
            options(nostack, preserves_flags)
        );
    }
}

/// Closes marker window `id`, then reads both timers in one instruction
/// sequence: `fine (u16 LE) ‖ coarse (u16 LE) ‖ coarse overflowed (0/1)`,
/// the input of [`crate::protocol::timer_cycles`].
#[inline(always)]
pub fn timed_end(id: u8) -> [u8; 5] {
    let (f0, f1, c0, c1, ov): (u8, u8, u8, u8, u8);
    // SAFETY: as in timed_begin; reads only.
    unsafe {
        #[cfg(not(avr_mega0))]
        asm!(
            "out 0x1E, {id}",  // GPIOR0: the window closes
            "lds {f0}, 0x84",  // TCNT1L (latches TCNT1H)
            "lds {f1}, 0x85",
            "lds {c0}, 0x94",  // TCNT3L
            "lds {c1}, 0x95",
            "in {ov}, 0x18",   // TIFR3
            id = in(reg) id | 0x80,
            f0 = out(reg) f0,
            f1 = out(reg) f1,
            c0 = out(reg) c0,
            c1 = out(reg) c1,
            ov = out(reg) ov,
            options(nostack, preserves_flags)
        );
        #[cfg(avr_mega0)]
        asm!(
            "out 0x1C, {id}",    // GPIOR0: the window closes
            "lds {f0}, 0x0A8A",  // TCB0.CNTL (latches CNTH)
            "lds {f1}, 0x0A8B",
            "lds {c0}, 0x0A20",  // TCA0.CNTL
            "lds {c1}, 0x0A21",
            "lds {ov}, 0x0A0B",  // TCA0.INTFLAGS
            id = in(reg) id | 0x80,
            f0 = out(reg) f0,
            f1 = out(reg) f1,
            c0 = out(reg) c0,
            c1 = out(reg) c1,
            ov = out(reg) ov,
            options(nostack, preserves_flags)
        );
    }
    [f0, f1, c0, c1, ov & 1]
}

/// Copies program memory (flash) from the byte address `addr` on into
/// `out`: `elpm` with RAMPZ on the parts with more than 64 KB of flash
/// (RAMPZ is 0 again afterwards), `lpm` on the others. For constants a
/// classic AVR keeps out of SRAM (`.progmem.data`); the megaAVR 0-series
/// maps its flash into the data space and needs none of this.
pub fn read_program_memory(addr: u32, out: &mut [u8]) {
    for (i, o) in out.iter_mut().enumerate() {
        let at = addr + i as u32;
        let byte: u8;
        // SAFETY: reads flash only; RAMPZ is restored to 0.
        unsafe {
            #[cfg(avr_elpm)]
            asm!(
                "out 0x3B, {hh}", // RAMPZ
                "elpm {byte}, Z",
                "out 0x3B, {zero}",
                hh = in(reg) (at >> 16) as u8,
                zero = in(reg) 0u8,
                byte = out(reg) byte,
                in("Z") at as u16,
                options(nostack, readonly, preserves_flags)
            );
            #[cfg(not(avr_elpm))]
            asm!(
                "lpm {byte}, Z",
                byte = out(reg) byte,
                in("Z") at as u16,
                options(nostack, readonly, preserves_flags)
            );
        }
        *o = byte;
    }
}

/// Reads byte `addr` of the EEPROM.
pub fn eeprom_read(addr: u16) -> u8 {
    // SAFETY: EEPROM registers (classic) or the mapped EEPROM and NVMCTRL
    // (megaAVR-0) of the selected MCU; nothing else uses them.
    unsafe {
        #[cfg(not(avr_mega0))]
        {
            while read_volatile(EECR) & EEPE != 0 {}
            write_volatile(EEARH, (addr >> 8) as u8);
            write_volatile(EEARL, addr as u8);
            write_volatile(EECR, EERE);
            read_volatile(EEDR)
        }
        #[cfg(avr_mega0)]
        {
            while read_volatile(NVMCTRL_STATUS) & EEBUSY != 0 {}
            read_volatile((EEPROM_START + (addr & 0xFF)) as usize as *const u8)
        }
    }
}

/// Writes `value` to byte `addr` of the EEPROM and waits until it is
/// written (≈ 3.4 ms on the chip).
///
/// Tested in simavr on the ATmega1284p (`cargo xtask e2e`) and, the
/// megaAVR-0 sequence (page buffer, then ERWP under CCP), in yasimavr on the
/// ATmega4808 by the sensor application (`cargo xtask bench --mcu atmega4808
/// --filter kem-mqtt-app`; yasimavr built without its flash access check,
/// which refuses the page-buffer store).
pub fn eeprom_write(addr: u16, value: u8) {
    // SAFETY: as in eeprom_read; the timed sequences run with interrupts off
    // (the firmware never enables them).
    unsafe {
        #[cfg(not(avr_mega0))]
        {
            while read_volatile(EECR) & EEPE != 0 {}
            write_volatile(EEARH, (addr >> 8) as u8);
            write_volatile(EEARL, addr as u8);
            write_volatile(EEDR, value);
            // EEMPE, then EEPE within four cycles: erase and write.
            asm!("sbi 0x1F, 2", "sbi 0x1F, 1", options(nostack, preserves_flags));
            while read_volatile(EECR) & EEPE != 0 {}
        }
        #[cfg(avr_mega0)]
        {
            while read_volatile(NVMCTRL_STATUS) & EEBUSY != 0 {}
            // Into the page buffer, then the protected erase-and-write-page
            // command (CCP's SPM key, then NVMCTRL.CTRLA within four instructions).
            write_volatile((EEPROM_START + (addr & 0xFF)) as usize as *mut u8, value);
            asm!(
                "out 0x34, {key}",
                "sts 0x1000, {erwp}",
                key = in(reg) 0x9Du8,
                erwp = in(reg) 0x03u8,
                options(nostack, preserves_flags)
            );
            while read_volatile(NVMCTRL_STATUS) & EEBUSY != 0 {}
        }
    }
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
