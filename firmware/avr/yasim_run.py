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
import sys

from yasim_uart import Harness, requests as read_requests


def main(elf, requests):
    h = Harness(elf)
    for op, payload in read_requests(requests):
        status, body, cycles = h.call(op, payload, budget=2_000_000_000, step=200_000)
        if status is None:
            print(f'-- {body.hex()} {cycles} state={h.dev.state()}', flush=True)
            sys.exit(1)
        print(f'{status:02x} {body.hex()} {cycles}', flush=True)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
