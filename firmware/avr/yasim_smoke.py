"""Smoke test of the ATmega4808 firmware in yasimavr (simavr has no megaAVR-0 model).

    python3 firmware/avr/yasim_smoke.py target/avr-atmega4808/avr-none/release/firmware.elf

Sends PING, ECHO and one Kyber forward NTT over USART0 with the avr-harness
protocol, then EXIT, and checks that the MCU stops (cli; sleep with SEN).
yasimavr's instruction timings are the classic AVRe+ ones: cycle counts for
the AVRxt core are approximations, so none are reported here.
"""
import struct
import sys

from yasimavr.device_library import load_device
from yasimavr.lib import core as _corelib
from yasimavr.utils.uart import UART_IO


def main(elf):
    dev = load_device('atmega4808')
    fw = _corelib.Firmware.read_elf(elf)
    if not fw:
        sys.exit('cannot read ' + elf)
    fw.frequency = 20_000_000
    loop = _corelib.SimLoop(dev)  # readies the device: create it before loading
    loop.set_fast_mode(True)
    dev.load_firmware(fw)
    uart = UART_IO(dev, 0)

    def call(op, payload=b'', budget=50_000_000):
        uart.write(struct.pack('<BH', op, len(payload)) + payload)
        got = bytearray()
        start = loop.cycle()
        while loop.cycle() - start < budget:
            loop.run(20_000)
            got += uart.read(uart.available() or 0) or b''
            if len(got) >= 3 and len(got) >= 3 + struct.unpack('<H', got[1:3])[0]:
                break
            if dev.state() in (_corelib.Device.State.Done, _corelib.Device.State.Crashed):
                break
        if len(got) < 3:
            sys.exit(f'op {op:#x}: no reply (state {dev.state()})')
        status, n = struct.unpack('<BH', got[:3])
        if status != 0 or len(got) != 3 + n:
            sys.exit(f'op {op:#x}: bad reply {bytes(got[:8]).hex()}… ({len(got)} bytes)')
        return bytes(got[3:])

    # Bytes sent before the firmware enabled the receiver would be lost.
    probe = _corelib.DeviceDebugProbe(dev)
    USART0_CTRLB, RXEN = 0x0806, 0x80
    while not probe.read_data(USART0_CTRLB, 1)[0] & RXEN:
        if loop.cycle() > 1_000_000:
            sys.exit('firmware never enabled USART0 RX')
        loop.run(1_000)
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
