"""Smoke test of the ATmega4808 firmware in yasimavr (simavr has no megaAVR-0 model).

    python3 firmware/avr/yasim_smoke.py target/avr-atmega4808/images/rings/firmware.elf

Sends PING, ECHO and one Kyber forward NTT over USART0 with the avr-harness
protocol, then EXIT, and checks that the MCU stops (cli; sleep with SEN).
yasimavr's instruction timings are the classic AVRe+ ones: cycle counts for
the AVRxt core are approximations, so none are reported here.
"""
import struct
import sys

from yasimavr.lib import core as _corelib
from yasim_uart import Harness


def main(elf):
    h = Harness(elf)
    dev, loop, uart = h.dev, h.loop, h.uart

    def call(op, payload=b''):
        status, body, _ = h.call(op, payload, budget=50_000_000, step=20_000)
        if status is None:
            sys.exit(f'op {op:#x}: no complete reply (state {dev.state()}, '
                     f'{len(body)} bytes: {body[:8].hex()}…)')
        if status != 0:
            sys.exit(f'op {op:#x}: status {status:#x}')
        return body

    ping = call(0x00)
    assert ping[0] == 1 and len(ping) == 26, ping.hex()
    assert call(0x03, b'hello') == b'hello'
    # Kyber.forward of x (a[1] = 1): op id 0x10 + 2*8 + 0.
    a = [0] * 256
    a[1] = 1
    out = struct.unpack('<256h', call(0x20, struct.pack('<256h', *a)))
    # x mod (x^2 - γ_i) = x in every degree-2 block.
    assert out == (0, 1) * 128, out[:8]
    # EXIT: the firmware replies, then stops with cli; sleep (SLPCTRL.SEN set).
    # yasimavr ends the run as soon as the core sleeps, which can swallow the
    # reply still in the USART; the stop itself is what is checked here.
    uart.write(struct.pack('<BH', 0x7F, 0))
    for _ in range(100):
        if dev.state() == _corelib.Device.State.Done:
            break
        loop.run(10_000)
    if dev.state() != _corelib.Device.State.Done:
        sys.exit(f'firmware did not stop after EXIT: state {dev.state()}')
    print(f'atmega4808 smoke test ok: {len(ping) - 1} ops, state {dev.state()}, '
          f'Kyber.forward(x)[:4] = {out[:4]}')


if __name__ == '__main__':
    main(sys.argv[1])
