"""Run the sensor application on an ATmega4808 in yasimavr, its USART0 on this
process's stdin and stdout (raw bytes both ways), until stdin closes.

    python3 firmware/avr/yasim_app.py FIRMWARE.elf

The host (`tools/avr-lab/src/app_cost.rs`) plays the bridge and the broker on
the other end of the pipes. On exit one line goes to stderr:
`eeprom HEX cycles N`: the first 8 EEPROM bytes (the handshake counter's
reservation) and the simulated cycles. A crash exits with status 1.
"""
import os
import select
import sys

from yasimavr.device_library import load_device
from yasimavr.lib import core as _corelib
from yasimavr.utils.uart import UART_IO

STOPPED = (_corelib.Device.State.Done, _corelib.Device.State.Crashed)
EEPROM_START = 0x1400
# 1 ms of a 20 MHz MCU between two looks at the pipes.
STEP = 20_000


def main(elf):
    dev = load_device('atmega4808')
    fw = _corelib.Firmware.read_elf(elf)
    if not fw:
        sys.exit('cannot read ' + elf)
    fw.frequency = 20_000_000
    loop = _corelib.SimLoop(dev)
    loop.set_fast_mode(True)
    dev.load_firmware(fw)
    uart = UART_IO(dev, 0)
    probe = _corelib.DeviceDebugProbe(dev)
    stdin = sys.stdin.buffer.fileno()
    os.set_blocking(stdin, False)
    out = sys.stdout.buffer
    while True:
        ready, _, _ = select.select([stdin], [], [], 0)
        if ready:
            data = os.read(stdin, 4096)
            if not data:
                break
            uart.write(data)
        loop.run(STEP)
        n = uart.available()
        if n:
            out.write(uart.read(n))
            out.flush()
        if dev.state() in STOPPED:
            print(f'stopped: state={dev.state()} cycles {loop.cycle()}', file=sys.stderr, flush=True)
            sys.exit(1)
    eeprom = bytes(probe.read_data(EEPROM_START, 8))
    print(f'eeprom {eeprom.hex()} cycles {loop.cycle()}', file=sys.stderr, flush=True)


if __name__ == '__main__':
    main(sys.argv[1])
