"""Boot avr-harness firmware on a yasimavr ATmega4808 (or the part named by
$YASIM_MCU, e.g. atmega4809) and talk to it over USART0.

Shared by yasim_run.py (KAT and MQTT request files) and yasim_smoke.py.
"""
import os
import struct
import sys

from yasimavr.device_library import load_device
from yasimavr.lib import core as _corelib
from yasimavr.utils.uart import UART_IO

STOPPED = (_corelib.Device.State.Done, _corelib.Device.State.Crashed)


class Harness:
    """A loaded ATmega4808 whose firmware has enabled its USART0 receiver."""

    def __init__(self, elf):
        self.dev = load_device(os.environ.get('YASIM_MCU', 'atmega4808'))
        fw = _corelib.Firmware.read_elf(elf)
        if not fw:
            sys.exit('cannot read ' + elf)
        fw.frequency = 20_000_000
        self.loop = _corelib.SimLoop(self.dev)  # readies the device: create it before loading
        self.loop.set_fast_mode(True)
        self.dev.load_firmware(fw)
        self.uart = UART_IO(self.dev, 0)
        # Bytes sent before the firmware enabled the receiver would be lost.
        probe = _corelib.DeviceDebugProbe(self.dev)
        USART0_CTRLB, RXEN = 0x0806, 0x80
        while not probe.read_data(USART0_CTRLB, 1)[0] & RXEN:
            if self.loop.cycle() > 1_000_000:
                sys.exit('firmware never enabled USART0 RX')
            self.loop.run(1_000)

    def call(self, op, payload, budget, step):
        """Send one request frame; run `step` cycles at a time until the whole
        reply frame arrived, the MCU stopped, or `budget` cycles passed.

        Returns (status, body, cycles); status is None if the reply is missing
        or incomplete (body then holds the raw bytes received)."""
        self.uart.write(struct.pack('<BH', op, len(payload)) + payload)
        got = bytearray()
        start = self.loop.cycle()
        while self.loop.cycle() - start < budget:
            self.loop.run(step)
            got += self.uart.read(self.uart.available() or 0) or b''
            if len(got) >= 3 and len(got) >= 3 + struct.unpack('<H', got[1:3])[0]:
                break
            if self.dev.state() in STOPPED:
                break
        cycles = self.loop.cycle() - start
        if len(got) < 3 or len(got) != 3 + struct.unpack('<H', got[1:3])[0]:
            return None, bytes(got), cycles
        return got[0], bytes(got[3:]), cycles


def requests(path):
    """The requests of a request file: `(op, payload)` per non-empty line
    `OP_HEX [PAYLOAD_HEX]`."""
    for line in open(path):
        parts = line.split()
        if parts:
            yield int(parts[0], 16), bytes.fromhex(parts[1]) if len(parts) > 1 else b''
