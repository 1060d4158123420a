"""Instruction trace of measured avr-harness ops on ATmega4808 firmware in yasimavr.

    python3 firmware/avr/yasim_trace.py FIRMWARE.elf REQUESTS.txt TRACE.json

REQUESTS.txt as for yasim_run.py (`OP_HEX PAYLOAD_HEX` a line). The
firmware runs one instruction at a time (`Device.exec_cycle`, the cycle
manager advanced by each instruction's cycles, as the simulation loop does);
every instruction executed inside a marker window (GPIOR0 holds the
window's id, before `id | 0x80` closes it) is counted at its address,
with the cycles yasimavr charged it. For each request one line is printed,
`STATUS_HEX PAYLOAD_HEX`, and TRACE.json gets one entry, `pcs`:
`[address, executions, cycles]` of every instruction in the window. The
host prices the window for the AVRxt core from it (`xtask/src/lab/run/avrxt.rs`).
"""
import json
import struct
import sys

from yasim_uart import Harness, STOPPED, requests as read_requests
from yasimavr.lib import core as _corelib

GPIOR0 = 0x1C
# Reply polling and the runaway bound, in instructions.
POLL = 4096
BUDGET = 1_000_000_000


def trace_call(h, probe, op, payload):
    h.uart.write(struct.pack('<BH', op, len(payload)) + payload)
    got = bytearray()
    counts, cycles = {}, {}
    read_pc, read_data = probe.read_pc, probe.read_data
    dev = h.dev
    cm = dev.cycle_manager()
    exec_cycle, increment, process, next_when, now = (
        dev.exec_cycle, cm.increment_cycle, cm.process_timers, cm.next_when, cm.cycle)
    due = next_when()
    for n in range(BUDGET):
        pc = read_pc()
        g = read_data(GPIOR0, 1)[0]
        c = exec_cycle()
        increment(c if c > 0 else 1)
        if now() >= due:
            process()
            due = next_when()
        if g and not g & 0x80:
            counts[pc] = counts.get(pc, 0) + 1
            cycles[pc] = cycles.get(pc, 0) + c
        if n % POLL == 0:
            got += h.uart.read(h.uart.available() or 0) or b''
            if len(got) >= 3 and len(got) >= 3 + struct.unpack('<H', got[1:3])[0]:
                break
            if dev.state() in STOPPED:
                break
    if len(got) < 3 or len(got) != 3 + struct.unpack('<H', got[1:3])[0]:
        return None, bytes(got), counts, cycles
    return got[0], bytes(got[3:]), counts, cycles


def main(elf, requests, out):
    h = Harness(elf)
    probe = _corelib.DeviceDebugProbe(h.dev)
    traces = []
    for op, payload in read_requests(requests):
        status, body, counts, cycles = trace_call(h, probe, op, payload)
        traces.append({'op': op, 'pcs': sorted([pc, n, cycles[pc]] for pc, n in counts.items())})
        with open(out, 'w') as f:
            json.dump(traces, f)
        if status is None:
            print(f'-- {body.hex()} state={h.dev.state()}', flush=True)
            sys.exit(1)
        print(f'{status:02x} {body.hex()}', flush=True)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2], sys.argv[3])
