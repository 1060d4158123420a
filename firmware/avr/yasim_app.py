"""Run the sensor application on an ATmega4808 in yasimavr, its USART0 on this
process's stdin and stdout (raw bytes both ways), until stdin closes.

    python3 firmware/avr/yasim_app.py FIRMWARE.elf [BSS_END RAMEND [WINDOWS]]

The host (`xtask/src/lab/mqtt/app_cost.rs`) plays the bridge and the broker on
the other end of the pipes. On exit one line goes to stderr:
`eeprom HEX cycles N windows E,S,O window-stack S,O stack S`: the first 8
EEPROM bytes (the handshake counter's reservation), the simulated cycles,
the on-chip counts of the timed windows, the stack of the last seal and
open windows and the session's stack peak. A crash or a hang exits with
status 1; its line ends with `stack S` as well.

The windows: yasimavr stamps no marker windows, so the application counts
its seal and open windows itself (TCB0 at the CPU clock,
`avr_harness::board::timed`) into the array at the address WINDOWS
(`APP_WINDOW_CYCLES`: count LE and TCB0's INTFLAGS, 3 bytes each): an
empty window, the last seal, the last open; `over` for a count that
wrapped. Without that address the word is `windows -`. A window that one
of the fast `SimLoop.run` steps cuts in two reads TCB0 a cycle or two
short (40,815 against 40,816 for the same instruction path, traced), so
the script runs one instruction at a time from each frame a timed window
follows (ESTABLISHED, an ACK with a command) to the board's next byte, and says
`windows split` if a timed window was still open at the end of a fast
step all the same.

The stack is measured by paint: yasimavr tracks no stack pointer, so
before the first instruction SRAM from BSS_END (the end of static data,
`__bss_end`) to RAMEND is filled with 0xA5, and at the end the lowest byte
that lost its paint gives the peak, counted from the top of SRAM (the
application's own frames included). S is `overflow` when not even the byte
at BSS_END kept its paint: the stack ran into static data. Without the two
addresses no stack is measured (S is `-`).

yasimavr 0.1 does not clock the RTC while the core sleeps, so the periodic
interrupt that ends each second of the application's power-down never comes
(the part's PIT runs in every sleep mode): while the core sleeps with the
PIT and its interrupt enabled, the script raises RTC_PIT itself once the
PIT's period (RTC.PITCTRLA's PERIOD, of RTC.CLKSEL's clock) has passed in
simulated cycles, counted from the first step it finds the core asleep.

With YASIM_APP_PACE=N the simulated clock runs no faster than N times the
wall clock (as `xtask sensor-sim` runs a board against a real bridge and
broker, whose answers take wall-clock time while the board's reply timeouts
count simulated time); without it, as fast as yasimavr goes.

yasimavr 0.1 has no model of the watchdog's registers (WDT.CTRLA, WDT.STATUS
at 0x100-0x101): reading one crashes the model. The run sets
IgnoreBadCpuIO, so those reads give 0 and the writes are dropped: the
application runs without a watchdog here. YASIM_APP_TRACE=1 logs every run
of bytes in and out on stderr, with its cycle.
"""
import os
import select
import sys
import time

from yasimavr.device_library import load_device
from yasimavr.lib import core as _corelib
from yasimavr.utils.uart import UART_IO

STOPPED = (_corelib.Device.State.Done, _corelib.Device.State.Crashed)
PAINT = 0xA5
EEPROM_START = 0x1400
# The marker register; the ids of the windows the application times
# (avr_wire::app::WINDOW_SEAL, WINDOW_OPEN, and the empty window of
# avr_harness::board::init); the link's frame start and the kinds of the
# frames those windows follow (ESTABLISHED: the first reading is sealed;
# an ACK that carries a command: it is opened, its answer sealed).
GPIOR0 = 0x1C
TIMED = (0x73, 0x74, 0x7F)
# The stack pointer (CPU.SPL, CPU.SPH).
SPL = 0x3D
SYNC = 0x7E
ESTABLISHED = 0x84
ACK = 0x86
# 1 ms of a 20 MHz MCU between two looks at the pipes.
STEP = 20_000
F_CPU = 20_000_000
# RTC.CLKSEL, RTC.PITCTRLA, RTC.PITINTCTRL; the RTC_PIT vector's index.
RTC_CLKSEL = 0x0147
RTC_PITCTRLA = 0x0150
RTC_PITINTCTRL = 0x0152
RTC_PIT_VECTOR = 4
# Simulated cycles awake without a byte from the board after which it counts
# as hung (50 s: the board asks again after 10 s without an answer; asleep,
# it may wait minutes).
IDLE_LIMIT = 1_000_000_000


class Paint:
    """SRAM from static data's end to RAMEND painted, and the lowest byte
    that lost its paint so far (kept across the repaints of `window`)."""

    def __init__(self, probe, start, ramend):
        self.probe, self.start, self.ramend = probe, start, ramend
        self.low = ramend + 1
        self.fill(ramend)

    def fill(self, upto):
        self.probe.write_data(self.start, bytes([PAINT]) * (upto + 1 - self.start))

    def lost(self, upto):
        """The lowest address in [start, upto] that lost its paint, or None."""
        ram = bytes(self.probe.read_data(self.start, upto + 1 - self.start))
        i = next((i for i, b in enumerate(ram) if b != PAINT), None)
        return None if i is None else self.start + i

    def note(self, upto=None):
        a = self.lost(self.ramend if upto is None else upto)
        if a is not None:
            self.low = min(self.low, a)
        return a

    def peak(self):
        """The peak so far in bytes from the top, or 'overflow'."""
        self.note()
        if self.low == self.start:
            return 'overflow'
        return str(self.ramend + 1 - self.low)


class PitWake:
    """Raises RTC_PIT when a sleeping core's PIT period has passed (see the
    module's docs: yasimavr does not clock the RTC in sleep)."""

    def __init__(self, dev, probe):
        self.dev, self.probe = dev, probe
        self.since = None

    def step(self, cycle):
        if self.dev.state() != _corelib.Device.State.Sleeping:
            self.since = None
            return
        ctrla = self.probe.read_data(RTC_PITCTRLA, 1)[0]
        period = (ctrla >> 3) & 0xF
        if not (ctrla & 1 and period and self.probe.read_data(RTC_PITINTCTRL, 1)[0] & 1):
            return
        if self.since is None:
            self.since = cycle
            return
        # CLKSEL 1: the 1.024 kHz oscillator (INT1K); else 32.768 kHz.
        hz = 1024 if self.probe.read_data(RTC_CLKSEL, 1)[0] & 3 == 1 else 32768
        # PERIOD p: 2^(p+1) RTC clock cycles (CYC4 … CYC32768).
        if cycle - self.since >= (2 ** (period + 1)) * F_CPU // hz:
            req = _corelib.ctlreq_data_t()
            req.index = RTC_PIT_VECTOR
            req.data = _corelib.vardata_t(1)
            self.dev.ctlreq(_corelib.IOCTL_INTR, _corelib.CTLREQ_INTR_RAISE, req)
            self.since = None


def stack_peak(paint):
    """The painted stack's peak, 'overflow', or '-' (no paint)."""
    return '-' if paint is None else paint.peak()


class WindowStack:
    """The stack of each timed window, counted from the top of SRAM like the
    session's peak: at a window's first instruction the free SRAM below
    the stack pointer is painted again (the session's lowest byte noted
    first), at its last the lowest byte that lost the paint gives its
    depth. Only in the instruction-at-a-time runs, which see both ends."""

    def __init__(self, probe, paint):
        self.probe, self.paint = probe, paint
        self.open = None
        self.depth = {}

    def after(self, g):
        """Called with GPIOR0 after each instruction."""
        if self.open is None and g in TIMED:
            sp = int.from_bytes(bytes(self.probe.read_data(SPL, 2)), 'little')
            self.paint.note()
            self.paint.fill(sp)
            self.open = (g, sp)
        elif self.open is not None and g == self.open[0] | 0x80:
            w, sp = self.open
            a = self.paint.note(sp)
            self.depth[w] = self.paint.ramend + 1 - (sp + 1 if a is None else a)
            self.open = None

    def said(self):
        return ','.join(str(self.depth.get(w, '-')) for w in TIMED[:2])


def single_steps(dev, probe, n, watch):
    """About `n` cycles one instruction at a time, as the simulation loop
    runs them (the cycle manager advanced by each instruction's cycles);
    `watch.after(GPIOR0)` after each, if there is a watch."""
    cm = dev.cycle_manager()
    due = cm.next_when()
    end = cm.cycle() + n
    while cm.cycle() < end and dev.state() not in STOPPED:
        c = dev.exec_cycle()
        cm.increment_cycle(c if c > 0 else 1)
        if cm.cycle() >= due:
            cm.process_timers()
            due = cm.next_when()
        if watch is not None:
            watch.after(probe.read_data(GPIOR0, 1)[0])


def before_timed(chunk):
    """Whether the bytes to the board start a frame a timed window follows
    (header: SYNC, kind, tag, length u16 LE)."""
    if len(chunk) < 5 or chunk[0] != SYNC:
        return False
    return chunk[1] == ESTABLISHED or (chunk[1] == ACK and (chunk[3] or chunk[4]))


def window_counts(probe, windows):
    """The timed windows' counts ('E,S,O'; 'over' for one that wrapped), or '-'."""
    if windows is None:
        return '-'
    raw = bytes(probe.read_data(windows, 9))
    return ','.join('over' if raw[i + 2] & 1 else str(int.from_bytes(raw[i:i + 2], 'little'))
                    for i in (0, 3, 6))


def main(elf, paint, windows):
    # yasimavr logs on the process's stdout, which carries the UART here:
    # the log goes to stderr, the UART bytes to a copy of the old stdout.
    data = os.fdopen(os.dup(1), 'wb', buffering=0)
    os.dup2(2, 1)
    dev = load_device(os.environ.get('YASIM_MCU', 'atmega4808'))
    fw = _corelib.Firmware.read_elf(elf)
    if not fw:
        sys.exit('cannot read ' + elf)
    fw.frequency = F_CPU
    # A 5 V supply: the ADC's references need one.
    fw.vcc = 5.0
    loop = _corelib.SimLoop(dev)
    loop.set_fast_mode(True)
    dev.load_firmware(fw)
    dev.set_option(_corelib.Device.Option.IgnoreBadCpuIO, True)
    # The temperature the internal sensor reads (°C).
    req = _corelib.ctlreq_data_t()
    req.data = _corelib.vardata_t(25.0)
    dev.ctlreq(_corelib.IOCTL_ADC('0'), _corelib.CTLREQ_ADC_SET_TEMP, req)
    uart = UART_IO(dev, 0)
    probe = _corelib.DeviceDebugProbe(dev)
    if paint is not None:
        paint = Paint(probe, *paint)
    watch = WindowStack(probe, paint) if paint is not None and windows is not None else None
    pit = PitWake(dev, probe)
    pace = float(os.environ.get('YASIM_APP_PACE', '0'))
    started = time.monotonic()
    stdin = sys.stdin.buffer.fileno()
    os.set_blocking(stdin, False)
    out = data
    last_output = 0
    # One instruction at a time from a frame that a timed window follows
    # to the board's next byte; the number of timed windows found open at
    # the end of a fast step.
    exact = False
    split = 0
    while True:
        ready, _, _ = select.select([stdin], [], [], 0)
        if ready:
            chunk = os.read(stdin, 4096)
            if not chunk:
                break
            uart.write(chunk)
            if windows is not None and before_timed(chunk):
                exact = True
            if os.environ.get('YASIM_APP_TRACE'):
                print(f'in  {loop.cycle()} {chunk[:8].hex()} ({len(chunk)} B)', file=sys.stderr, flush=True)
        if exact:
            single_steps(dev, probe, STEP, watch)
        else:
            loop.run(STEP)
            if windows is not None and probe.read_data(GPIOR0, 1)[0] in TIMED:
                split += 1
        pit.step(loop.cycle())
        if pace:
            ahead = loop.cycle() / F_CPU / pace - (time.monotonic() - started)
            if ahead > 0.002:
                time.sleep(min(ahead, 0.05))
        n = uart.available()
        if n:
            got = bytes(uart.read(n))
            out.write(got)
            if probe.read_data(GPIOR0, 1)[0] not in TIMED:
                exact = False
            last_output = loop.cycle()
            if os.environ.get('YASIM_APP_TRACE'):
                print(f'out {loop.cycle()} {got[:8].hex()} ({len(got)} B)', file=sys.stderr, flush=True)
        elif dev.state() == _corelib.Device.State.Sleeping:
            # Asleep until its next wake-up (a reading interval, a back-off
            # of up to minutes): not hung.
            last_output = loop.cycle()
        elif loop.cycle() - last_output > IDLE_LIMIT:
            print(f'hung: no byte for {IDLE_LIMIT} cycles (the last at cycle {last_output}), pc {probe.read_pc():#x}, cycles {loop.cycle()}, stack {stack_peak(paint)}',
                  file=sys.stderr, flush=True)
            sys.exit(1)
        if dev.state() in STOPPED:
            print(f'stopped: state={dev.state()} cycles {loop.cycle()} stack {stack_peak(paint)}',
                  file=sys.stderr, flush=True)
            sys.exit(1)
    eeprom = bytes(probe.read_data(EEPROM_START, 8))
    counts = window_counts(probe, windows) if not split else 'split'
    depths = watch.said() if watch is not None else '-'
    print(f'eeprom {eeprom.hex()} cycles {loop.cycle()} windows {counts} window-stack {depths} '
          f'stack {stack_peak(paint)}', file=sys.stderr, flush=True)


if __name__ == '__main__':
    main(sys.argv[1],
         (int(sys.argv[2], 0), int(sys.argv[3], 0)) if len(sys.argv) > 3 else None,
         int(sys.argv[4], 0) if len(sys.argv) > 4 else None)
