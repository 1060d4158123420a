"""Run avr-harness requests on ATmega4808 firmware in yasimavr (simavr has no megaAVR-0 model).

    python3 firmware/avr/yasim_run.py FIRMWARE.elf REQUESTS.txt

REQUESTS.txt has one request per line, `OP_HEX PAYLOAD_HEX` (payload may be
empty). For each request one line is printed: `STATUS_HEX PAYLOAD_HEX CYCLES`
(CYCLES = simulated cycles from sending the request to the complete reply,
UART transfer included). yasimavr's instruction timings are the classic
AVRe+ ones, so cycles on the AVRxt core are approximations. Used by
`cargo xtask sim-test --mcu atmega4808 --kat 1`, which builds the requests
and checks the replies.
"""
import struct
import sys

from yasimavr.device_library import load_device
from yasimavr.lib import core as _corelib
from yasimavr.utils.uart import UART_IO


def main(elf, requests):
    dev = load_device('atmega4808')
    fw = _corelib.Firmware.read_elf(elf)
    if not fw:
        sys.exit('cannot read ' + elf)
    fw.frequency = 20_000_000
    loop = _corelib.SimLoop(dev)  # readies the device: create it before loading
    loop.set_fast_mode(True)
    dev.load_firmware(fw)
    uart = UART_IO(dev, 0)

    probe = _corelib.DeviceDebugProbe(dev)
    USART0_CTRLB, RXEN = 0x0806, 0x80
    while not probe.read_data(USART0_CTRLB, 1)[0] & RXEN:
        if loop.cycle() > 1_000_000:
            sys.exit('firmware never enabled USART0 RX')
        loop.run(1_000)

    def call(op, payload, budget=2_000_000_000):
        uart.write(struct.pack('<BH', op, len(payload)) + payload)
        got = bytearray()
        start = loop.cycle()
        while loop.cycle() - start < budget:
            loop.run(200_000)
            got += uart.read(uart.available() or 0) or b''
            if len(got) >= 3 and len(got) >= 3 + struct.unpack('<H', got[1:3])[0]:
                break
            if dev.state() in (_corelib.Device.State.Done, _corelib.Device.State.Crashed):
                break
        if len(got) < 3 or len(got) != 3 + struct.unpack('<H', got[1:3])[0]:
            return None, bytes(got), loop.cycle() - start
        return got[0], bytes(got[3:]), loop.cycle() - start

    for line in open(requests):
        parts = line.split()
        if not parts:
            continue
        op = int(parts[0], 16)
        payload = bytes.fromhex(parts[1]) if len(parts) > 1 else b''
        status, body, cycles = call(op, payload)
        if status is None:
            print(f'-- {body.hex()} {cycles} state={dev.state()}', flush=True)
            sys.exit(1)
        print(f'{status:02x} {body.hex()} {cycles}', flush=True)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
