//! The sensor application's peripherals: the ADC reading, the LED, the
//! watchdog, sleep with a timer wake-up, a coarse clock for deadlines, and
//! UART reception without blocking.
//!
//! | | ATmega1284p | ATmega4808 |
//! |---|---|---|
//! | reading | ADC0 (pin PA0), AVCC reference, 10 bits | the internal temperature sensor, 1.1 V reference, 10 bits |
//! | LED | PB0 | PA7 |
//! | sleep | power-down, woken by the watchdog's interrupt (16 ms to 8 s steps) | power-down, woken by the RTC's periodic interrupt (1 s steps, internal 1.024 kHz) |
//! | watchdog | reset after 8 s without a `wdr` (interrupt-and-reset mode while asleep) | reset after 8 s without a `wdr` |
//! | deadlines | Timer/Counter3 at F_CPU/1024 | TCA0 at F_CPU/1024 |
//!
//! The CPU runs at 20 MHz (`F_CPU`); the deadlines count that clock.

use core::arch::asm;
use core::ptr::{read_volatile, write_volatile};

/// The CPU clock.
pub const F_CPU: u32 = avr_mcu::CLOCK_HZ;
/// Ticks of the coarse clock per second.
pub const TICKS_PER_S: u32 = F_CPU / 1024;

#[inline(always)]
fn rd(addr: u16) -> u8 {
    // SAFETY: `addr` is a peripheral register of the selected MCU (callers
    // below name it).
    unsafe { read_volatile(addr as usize as *const u8) }
}

#[inline(always)]
fn wr(addr: u16, v: u8) {
    // SAFETY: as in rd.
    unsafe { write_volatile(addr as usize as *mut u8, v) }
}

/// Restarts the watchdog's count.
#[inline(always)]
pub fn kick() {
    // SAFETY: `wdr` touches nothing but the watchdog.
    unsafe { asm!("wdr", options(nomem, nostack, preserves_flags)) };
}

#[cfg(not(avr_mega0))]
mod hw {
    use super::{rd, wr};
    use core::arch::asm;

    const MCUSR: u16 = 0x54;
    const SMCR: u16 = 0x53;
    const DDRB: u16 = 0x24;
    const PORTB: u16 = 0x25;
    const ADCL: u16 = 0x78;
    const ADCH: u16 = 0x79;
    const ADCSRA: u16 = 0x7A;
    const ADMUX: u16 = 0x7C;
    const PRR0: u16 = 0x64;
    const TCCR3A: u16 = 0x90;
    const TCCR3B: u16 = 0x91;
    const TCNT3L: u16 = 0x94;
    const TCNT3H: u16 = 0x95;
    const UCSR0A: u16 = 0xC0;
    const UDR0: u16 = 0xC6;
    const RXC: u8 = 1 << 7;

    const WDIE: u8 = 1 << 6;
    const WDCE: u8 = 1 << 4;
    const WDE: u8 = 1 << 3;
    /// WDP3..0 = 1001: 8 s.
    const WDP_8S: u8 = (1 << 5) | 1;
    const PRADC: u8 = 1 << 0;

    /// WDP3..0 of period 16 ms · 2^k (k ≤ 9).
    const fn wdp(k: u8) -> u8 {
        ((k & 8) << 2) | (k & 7)
    }

    /// Writes WDTCSR (0x60) through the timed change sequence, interrupts off.
    /// The timeout counts from the `wdr` after the new value: a counter
    /// restarted only before the change may run out at the old period
    /// (simavr reschedules its timer at a `wdr`, not at the write).
    fn watchdog(v: u8) {
        // SAFETY: the datasheet's sequence: WDCE|WDE, then the new value
        // within four cycles; SREG restored after.
        unsafe {
            asm!(
                "in {sreg}, 0x3F",
                "cli",
                "wdr",
                "sts 0x60, {ce}",
                "sts 0x60, {v}",
                "wdr",
                "out 0x3F, {sreg}",
                sreg = out(reg) _,
                ce = in(reg) WDCE | WDE,
                v = in(reg) v,
                options(nostack)
            );
        }
    }

    /// The watchdog armed, the LED pin an output, the coarse clock running,
    /// the ADC powered off.
    pub fn init() {
        // A watchdog reset leaves WDRF set, which keeps WDE on: clear it,
        // then set the awake mode (reset after 8 s).
        wr(MCUSR, rd(MCUSR) & !(1 << 3));
        watchdog(WDE | WDP_8S);
        wr(DDRB, rd(DDRB) | 1);
        wr(TCCR3A, 0);
        wr(TCCR3B, 0x05); // clk/1024
        wr(PRR0, rd(PRR0) | PRADC);
    }

    /// The LED (PB0) on or off.
    pub fn led(on: bool) {
        let v = rd(PORTB);
        wr(PORTB, if on { v | 1 } else { v & !1 });
    }

    /// One conversion of ADC0 against AVCC; the ADC is powered only meanwhile.
    pub fn read_adc() -> u16 {
        wr(PRR0, rd(PRR0) & !PRADC);
        wr(ADMUX, 0x40); // AVCC reference, ADC0
                         // Enable, start, F_CPU/128 (156 kHz: within the 50–200 kHz of full resolution).
        wr(ADCSRA, (1 << 7) | (1 << 6) | 7);
        while rd(ADCSRA) & (1 << 6) != 0 {}
        let low = rd(ADCL);
        let high = rd(ADCH);
        wr(ADCSRA, 0);
        wr(PRR0, rd(PRR0) | PRADC);
        u16::from_le_bytes([low, high])
    }

    /// The window's cycles are simavr's marker stamps here: nothing is
    /// counted on chip.
    #[inline(always)]
    pub fn timed<R>(_slot: usize, id: u8, f: impl FnOnce() -> R) -> R {
        crate::marker_begin(id);
        let r = f();
        crate::marker_end(id);
        r
    }

    /// The coarse clock: Timer/Counter3 at F_CPU/1024.
    pub fn ticks() -> u16 {
        let low = rd(TCNT3L);
        u16::from_le_bytes([low, rd(TCNT3H)])
    }

    /// A received byte, if one is waiting.
    pub fn try_read() -> Option<u8> {
        if rd(UCSR0A) & RXC != 0 {
            Some(rd(UDR0))
        } else {
            None
        }
    }

    /// Power-down for about `s` seconds, woken by the watchdog's interrupt
    /// (each step re-arms it: a step that does not come back resets).
    pub fn sleep_s(s: u32) {
        let mut left_ms = s.saturating_mul(1000);
        while left_ms >= 16 {
            // The longest step that fits: 16 ms · 2^k, k ≤ 9 (8 s).
            let mut k = 0u8;
            while k < 9 && (16u32 << (k + 1)) <= left_ms {
                k += 1;
            }
            watchdog(WDIE | WDE | wdp(k));
            wr(SMCR, (0b010 << 1) | 1); // power-down, sleep enabled
                                        // SAFETY: the watchdog's interrupt (an empty handler) wakes the
                                        // core; interrupts go off again after.
            unsafe { asm!("sei", "sleep", "cli", options(nostack)) };
            wr(SMCR, 0);
            left_ms -= 16 << k;
        }
        watchdog(WDE | WDP_8S);
    }

    /// The watchdog's interrupt: waking up is all it does.
    #[export_name = "__vector_8"]
    pub unsafe extern "avr-interrupt" fn watchdog_interrupt() {}
}

#[cfg(avr_mega0)]
mod hw {
    use super::{rd, wr};
    use core::arch::asm;

    /// The key of the configuration change protection (CCP, I/O 0x34).
    const IOREG: u8 = 0xD8;
    const CLKCTRL_MCLKCTRLB: u16 = 0x0061;
    const SLPCTRL_CTRLA: u16 = 0x0050;
    const WDT_CTRLA: u16 = 0x0100;
    const WDT_STATUS: u16 = 0x0101;
    const VREF_CTRLA: u16 = 0x00A0;
    const RTC_STATUS: u16 = 0x0141;
    const RTC_CLKSEL: u16 = 0x0147;
    const RTC_PITCTRLA: u16 = 0x0150;
    const RTC_PITSTATUS: u16 = 0x0151;
    const RTC_PITINTCTRL: u16 = 0x0152;
    const RTC_PITINTFLAGS: u16 = 0x0153;
    const PORTA_DIRSET: u16 = 0x0401;
    const PORTA_OUTSET: u16 = 0x0405;
    const PORTA_OUTCLR: u16 = 0x0406;
    const ADC0_CTRLA: u16 = 0x0600;
    const ADC0_CTRLC: u16 = 0x0602;
    const ADC0_CTRLD: u16 = 0x0603;
    const ADC0_SAMPCTRL: u16 = 0x0605;
    const ADC0_MUXPOS: u16 = 0x0606;
    const ADC0_COMMAND: u16 = 0x0608;
    const ADC0_INTFLAGS: u16 = 0x060B;
    const ADC0_RESL: u16 = 0x0610;
    const ADC0_RESH: u16 = 0x0611;
    const TCA0_CNTL: u16 = 0x0A20;
    const TCA0_CNTH: u16 = 0x0A21;
    /// The marker id of the empty window (yasim_app.py knows it).
    const EMPTY_WINDOW: u8 = 0x7F;
    const TCB0_CTRLA: u16 = 0x0A80;
    const TCB0_CTRLB: u16 = 0x0A81;
    const TCB0_CCMPL: u16 = 0x0A8C;
    const TCB0_CCMPH: u16 = 0x0A8D;
    const USART0_RXDATAL: u16 = 0x0800;
    const USART0_STATUS: u16 = 0x0804;
    const RXCIF: u8 = 1 << 7;
    const LED: u8 = 1 << 7;

    /// A register behind the configuration change protection.
    fn protected(addr: u16, v: u8) {
        // SAFETY: CCP's I/O key, then the write within four instructions.
        unsafe {
            asm!(
                "out 0x34, {key}",
                "st Z, {v}",
                key = in(reg) IOREG,
                v = in(reg) v,
                in("Z") addr,
                options(nostack)
            );
        }
    }

    /// The main clock undivided (20 MHz), the watchdog armed, the LED pin an
    /// output, the coarse clock running.
    pub fn init() {
        // The full 20 MHz (the reset default divides it by 6).
        protected(CLKCTRL_MCLKCTRLB, 0);
        // Reset after 8 s (PERIOD 8KCLK of the 1.024 kHz oscillator).
        while rd(WDT_STATUS) & 1 != 0 {}
        protected(WDT_CTRLA, 0x0B);
        wr(PORTA_DIRSET, LED);
        // TCA0 at clk/1024, free-running.
        wr(0x0A26, 0xFF);
        wr(0x0A27, 0xFF);
        wr(0x0A01, 0);
        wr(0x0A00, (7 << 1) | 1);
        // TCB0 at the CPU clock, periodic with TOP 0xFFFF (16-bit registers:
        // low byte first): the stopwatch of `timed`. It stops in power-down.
        wr(TCB0_CCMPL, 0xFF);
        wr(TCB0_CCMPH, 0xFF);
        wr(TCB0_CTRLB, 0);
        wr(TCB0_CTRLA, 1);
        super::timed(super::SLOT_EMPTY, EMPTY_WINDOW, || ());
        // The RTC's periodic interrupt from the internal 1.024 kHz oscillator.
        while rd(RTC_STATUS) != 0 {}
        wr(RTC_CLKSEL, 0x01);
    }

    /// The LED (PA7) on or off.
    pub fn led(on: bool) {
        wr(if on { PORTA_OUTSET } else { PORTA_OUTCLR }, LED);
    }

    /// One conversion of the internal temperature sensor against 1.1 V.
    pub fn read_adc() -> u16 {
        // The temperature sensor: 1.1 V reference, sample capacitance for
        // references above 1 V, 32 µs start-up delay and a long sample.
        wr(VREF_CTRLA, 0x10);
        wr(ADC0_CTRLC, (1 << 6) | 0x04); // SAMPCAP, INTREF, CLK/32
        wr(ADC0_CTRLD, 0x40); // INITDLY 32 CLK_ADC
        wr(ADC0_SAMPCTRL, 31);
        wr(ADC0_MUXPOS, 0x1E); // TEMPSENSE
        wr(ADC0_CTRLA, 1); // enable, 10 bits
        wr(ADC0_COMMAND, 1);
        while rd(ADC0_INTFLAGS) & 1 == 0 {}
        let low = rd(ADC0_RESL);
        let high = rd(ADC0_RESH);
        wr(ADC0_CTRLA, 0);
        u16::from_le_bytes([low, high])
    }

    /// Runs `f` in marker window `id`, counted by TCB0 into
    /// `APP_WINDOW_CYCLES[slot]`: its work plus the constant of
    /// [`super::SLOT_EMPTY`] (the two calls below, out of line to keep
    /// each window to a few bytes of flash: the images that fit the 4808
    /// have a few hundred to spare).
    #[inline(always)]
    pub fn timed<R>(slot: usize, id: u8, f: impl FnOnce() -> R) -> R {
        window_start(id);
        let r = f();
        // SAFETY: a pointer into our own static, no reference made (the
        // slots are the `SLOT_*` constants; another index would panic).
        window_stop(unsafe { core::ptr::addr_of_mut!(super::APP_WINDOW_CYCLES[slot]) }, id);
        r
    }

    /// Zeroes TCB0 and opens marker window `id`.
    #[inline(never)]
    fn window_start(id: u8) {
        // SAFETY: TCB0 and GPIOR0, which nothing else uses; no `nomem`, so
        // memory accesses are not moved across the sequence.
        unsafe {
            asm!(
                "sts 0x0A8A, {zero}", // TCB0.CNTL
                "sts 0x0A8B, {zero}", // TCB0.CNTH: the count starts here
                "sts 0x0A86, {one}",  // TCB0.INTFLAGS: clear CAPT
                "out 0x1C, {id}",     // GPIOR0: the window opens
                zero = in(reg) 0u8,
                one = in(reg) 1u8,
                id = in(reg) id,
                options(nostack, preserves_flags)
            );
        }
    }

    /// Closes marker window `id` and stores TCB0's count (LE) and its
    /// INTFLAGS (CAPT: TOP reached, the window was 65,535 cycles or more)
    /// at `cell`.
    #[inline(never)]
    fn window_stop(cell: *mut [u8; 3], id: u8) {
        // SAFETY: reads TCB0, writes GPIOR0 and the 3 bytes at `cell`.
        unsafe {
            asm!(
                "out 0x1C, {id}",   // GPIOR0: the window closes
                "lds {t}, 0x0A8A",  // TCB0.CNTL (latches CNTH)
                "st Z+, {t}",
                "lds {t}, 0x0A8B",
                "st Z+, {t}",
                "lds {t}, 0x0A86",  // TCB0.INTFLAGS
                "st Z, {t}",
                id = in(reg) id | 0x80,
                t = out(reg) _,
                inout("Z") cell => _,
                options(nostack, preserves_flags)
            );
        }
    }

    pub fn ticks() -> u16 {
        let low = rd(TCA0_CNTL);
        u16::from_le_bytes([low, rd(TCA0_CNTH)])
    }

    /// A received byte, if one is waiting.
    pub fn try_read() -> Option<u8> {
        if rd(USART0_STATUS) & RXCIF != 0 {
            Some(rd(USART0_RXDATAL))
        } else {
            None
        }
    }

    /// Power-down for `s` seconds, woken each second by the RTC's periodic
    /// interrupt; the watchdog keeps counting (8 s), so each wake-up kicks it.
    pub fn sleep_s(s: u32) {
        while rd(RTC_PITSTATUS) & 1 != 0 {}
        wr(RTC_PITINTCTRL, 1);
        wr(RTC_PITCTRLA, (0x9 << 3) | 1); // PERIOD = CYC1024 (0x9; 0xA is CYC2048): 1 s of INT1K, enabled
        for _ in 0..s {
            wr(SLPCTRL_CTRLA, (0x2 << 1) | 1); // power-down, sleep enabled
                                               // SAFETY: the RTC's periodic interrupt wakes the core.
            unsafe { asm!("sei", "sleep", "cli", options(nostack)) };
            super::kick();
        }
        wr(SLPCTRL_CTRLA, 0);
        while rd(RTC_PITSTATUS) & 1 != 0 {}
        wr(RTC_PITCTRLA, 0);
        wr(RTC_PITINTCTRL, 0);
    }

    /// RTC_PIT: clears the flag; waking up is the rest.
    #[export_name = "__vector_4"]
    pub unsafe extern "avr-interrupt" fn rtc_pit() {
        wr(RTC_PITINTFLAGS, 1);
    }
}

pub use hw::{init, led, read_adc, sleep_s, timed, try_read};

/// `timed`'s slot of an empty window (measured by `init`): the constant
/// the counts of the other slots include.
pub const SLOT_EMPTY: usize = 0;
/// `timed`'s slot of a reading sealed.
pub const SLOT_SEAL: usize = 1;
/// `timed`'s slot of a command opened.
pub const SLOT_OPEN: usize = 2;

/// The megaAVR 0-series' on-chip counts of the application's windows, by
/// slot, each TCB0's count (u16 LE) and its INTFLAGS (bit 0 set: the
/// count wrapped): yasimavr, its simulator here, stamps no marker windows,
/// so `firmware/avr/yasim_app.py` reads this (by its symbol) after a run.
/// On the classic parts simavr stamps the marker windows and this does not
/// exist.
#[cfg(avr_mega0)]
#[no_mangle]
pub static mut APP_WINDOW_CYCLES: [[u8; 3]; 3] = [[0; 3]; 3];

/// A time limit on the coarse clock (which wraps every 3.3 s: poll it more
/// often than that).
pub struct Deadline {
    last: u16,
    left: u32,
}

impl Deadline {
    /// `s` seconds from now.
    pub fn in_s(s: u32) -> Deadline {
        Deadline {
            last: hw::ticks(),
            left: s.saturating_mul(TICKS_PER_S),
        }
    }

    /// Whether it has passed (kicks the watchdog: waiting is progress).
    pub fn passed(&mut self) -> bool {
        kick();
        let now = hw::ticks();
        let step = u32::from(now.wrapping_sub(self.last));
        self.last = now;
        self.left = self.left.saturating_sub(step);
        self.left == 0
    }
}
