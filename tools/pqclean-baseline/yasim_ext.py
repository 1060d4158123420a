"""Runs a PQClean harness image on yasimavr's ATmega4808 model with its data
space given to SRAM (0x1500-0xFFFF, 60,160 B) and 128 KB of flash: the same
AVRxt core and instruction timings as the part, with room for code and
memory that PQClean's clean ML-KEM needs and the real part (6 KB SRAM,
48 KB flash) does not have. The image keeps its constants in SRAM (its
.rodata is linked into .data), so the model needs no flash mapped into the
data space.

    .venv/bin/python tools/pqclean-baseline/yasim_ext.py IMAGE.elf MARKER_ADDR

MARKER_ADDR: data address of the harness's marker byte (hex). Every write to
it is stamped with the cycle counter (a break watchpoint). Prints
`state NAME`, `cycles N`, one `mark VALUE CYCLE` per write, and `out HEX`
(what USART0 sent), a line each.
"""
import sys

from yasimavr.device_library import DeviceDescriptor, load_device_from_config
from yasimavr.lib import core as C
from yasimavr.utils.uart import UART_IO

BUDGET = 3_000_000_000


def extended_4808():
    desc = DeviceDescriptor.create_from_model('atmega4808')
    segs, spaces = desc.mem.data_segments, desc.mem.spaces
    segs['ram'] = segs['ram']._replace(start=0x1500, end=0xFFFF)
    # No flash in the data space (the whole of it above the EEPROM is SRAM).
    segs['flash'] = segs['flash']._replace(start=0x10000, end=0x10000)
    spaces['ram'] = spaces['ram']._replace(size=0x10000 - 0x1500)
    spaces['flash'] = spaces['flash']._replace(size=128 * 1024)
    return desc


def main(elf, marker):
    dev = load_device_from_config(extended_4808())
    fw = C.Firmware.read_elf(elf)
    if not fw:
        sys.exit('cannot read ' + elf)
    fw.frequency = 20_000_000
    loop = C.SimLoop(dev)
    loop.set_fast_mode(True)
    dev.load_firmware(fw)
    uart = UART_IO(dev, 0)
    probe = C.DeviceDebugProbe(dev)
    flags = C.DeviceDebugProbe.WatchpointFlags
    probe.insert_watchpoint(marker, 1, flags.Write | flags.Break)
    marks, out = [], bytearray()
    while loop.cycle() < BUDGET:
        loop.run(0)
        out += uart.read(uart.available() or 0) or b''
        state = dev.state()
        if state == C.Device.State.Break:
            marks.append([probe.read_data(marker, 1)[0], loop.cycle()])
            probe.set_device_state(C.Device.State.Running)
        elif state in (C.Device.State.Done, C.Device.State.Crashed):
            break
    print(f'state {state.name}')
    print(f'cycles {loop.cycle()}')
    for value, cycle in marks:
        print(f'mark {value} {cycle}')
    print(f'out {out.hex()}')


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2], 16))
