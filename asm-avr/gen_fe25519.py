#!/usr/bin/env python3
"""Generates fe25519_mul.S, multiplication, squaring, the product with a
small constant, addition, subtraction and inversion modulo 2^255 - 19 for
AVR:

    void fe25519_mul_avr(uint8_t r[32], const uint8_t a[32], const uint8_t b[32]);
    void fe25519_sqr_avr(uint8_t r[32], const uint8_t a[32]);
    void fe25519_add_avr(uint8_t r[32], const uint8_t a[32], const uint8_t b[32]);
    void fe25519_sub_avr(uint8_t r[32], const uint8_t a[32], const uint8_t b[32]);
    void fe25519_mul_small_avr(uint8_t r[32], const uint8_t a[32], uint32_t c);
    void fe25519_invert_avr(uint8_t r[32], const uint8_t a[32]);

(the inversion is emitted by `fe25519_invert_gen.py`: Bernstein-Yang
divsteps, see there). Operands are little-endian integers below 2^256
(field elements, not necessarily fully reduced); r receives a value below
2^256 congruent to the product. r must not overlap a or b (a and b may be the same).

Multiplication and squaring (`fe25519_mul_gen.py`, see there): one level
of Karatsuba over 16-byte halves, three 16x16-byte products (operand
caching for the multiplication, 768 byte products instead of 1024;
squarings of the 16 bytes in registers for the squaring, 408 instead of
528), folded with 2^256 = 38 top first, so the fold is one pass: the
result is below 170 * 2^248, exactly the portable `field::mul_portable`.
`fe25519_mul_avr` and `fe25519_sqr_avr` save the callee-saved registers,
open the scratch frame (128 and 98 bytes) and call the internal routines
`fe25519_mul_int` and `fe25519_sqr_int`, which other routines can call
without either. The compact file loops the multiplication's two rows and
the fold (the squaring of 16 bytes stays unrolled); the tiny one is the
compact one squaring through its multiplication (no 16-byte squaring:
1.5 KB less flash, a ladder step 16 % more cycles).

The small-constant product (c < 2^24) keeps a 32-bit running sum, three
byte products a byte; its 38·carry is below 2^30, so its second fold pass
covers r[0..4]. Addition folds its carry c as 38c (twice: a second carry
leaves r < 38); subtraction takes 38 per borrow off (twice: a second borrow
leaves r above 2^256 - 38, so byte 0 alone pays) - exactly the portable
`Fe::add`/`Fe::sub`. No data-dependent branch or address: constant time.
Used by `crates/x25519-avr`, tested against its portable field in simavr.

Registers: the zero register is r21 in addition and subtraction; the
stack peak of the multiplication is 154 bytes (18 saved registers, the
128-byte frame, r, three return addresses), the squaring's 124. r is
written only after the last read of a and b.
"""

from fe25519_invert_gen import emit_invert
from fe25519_ladder_gen import emit_ladder_step
from fe25519_mul_gen import MUL_FRAME, SQR_FRAME, emit_abs_difference_looped, emit_combine, emit_k16, emit_mul128, emit_mul_int, emit_sqr128, emit_sqr_int, next_byte, times38

o = []
e = o.append


def prologue(name, saved):
    e(f"\t.global {name}")
    e(f"\t.type {name}, @function")
    e(f"{name}:")
    for r in saved:
        e(f"\tpush {r}")


def epilogue(name, saved):
    for r in reversed(saved):
        e(f"\tpop {r}")
    e("\tret")
    e(f"\t.size {name}, . - {name}")


SAVED = [f"r{i}" for i in range(2, 18)] + ["r28", "r29"]


def frame_alloc(size):
    """Pushes r (r25:r24) and opens a `size`-byte frame; X = t = SP + 1."""
    e("\tpush r24")
    e("\tpush r25")
    e("\tin r26, 0x3d")
    e("\tin r27, 0x3e")
    e(f"\tsubi r26, {size}")
    e("\tsbci r27, 0")
    e("\tin r0, 0x3f")
    e("\tcli")
    e("\tout 0x3e, r27")
    e("\tout 0x3f, r0")
    e("\tout 0x3d, r26")
    e("\tadiw r26, 1\t\t; X = t")


def close_frame(size):
    """Y = t on entry: the `size`-byte frame and r's two bytes are popped;
    r1 = 0."""
    steps = [63] * ((size + 1) // 63) + [(size + 1) % 63]
    for step in steps[:-1]:
        e(f"\tadiw r28, {step}")
    e(f"\tadiw r28, {steps[-1]}\t\t; SP back above r's two bytes")
    e("\tin r0, 0x3f")
    e("\tcli")
    e("\tout 0x3e, r29")
    e("\tout 0x3f, r0")
    e("\tout 0x3d, r28")
    e("\tclr r1")


def emit_wrapper(name, internal, size):
    """A C-ABI routine around an internal one: saves the callee-saved
    registers, opens its `size`-byte scratch frame under Y, calls it."""
    prologue(name, SAVED)
    e("\tin r28, 0x3d")
    e("\tin r29, 0x3e")
    e(f"\tsubi r28, {size}")
    e("\tsbci r29, 0")
    e("\tin r0, 0x3f")
    e("\tcli")
    e("\tout 0x3e, r29")
    e("\tout 0x3f, r0")
    e("\tout 0x3d, r28")
    e("\tadiw r28, 1\t\t; Y = the frame")
    e(f"\trcall {internal}")
    steps = [63] * ((size - 1) // 63) + [(size - 1) % 63]
    for step in steps:
        if step:
            e(f"\tadiw r28, {step}")
    e("\tin r0, 0x3f")
    e("\tcli")
    e("\tout 0x3e, r29")
    e("\tout 0x3f, r0")
    e("\tout 0x3d, r28\t; SP = the frame's last byte: closed")
    e("\tclr r1")
    epilogue(name, SAVED)


def emit_add_sub(looped=False):
    """Addition and subtraction: r may alias a or b (each byte is read before
    it is written). `looped`: four bytes a turn (the carry survives `dec`,
    `ld` and `st`), the same results in a fifth of the code."""
    for name, op, opc in [("fe25519_add_avr", "add", "adc"), ("fe25519_sub_avr", "sub", "sbc")]:
        saved = ["r28", "r29"]
        prologue(name, saved)
        e("\tmovw r26, r24\t; X = r")
        e("\tmovw r28, r22\t; Y = a")
        e("\tmovw r30, r20\t; Z = b")
        e("\tclr r21\t\t; zero")
        if looped:
            thirty_eight = "r19"
            e(f"\tldi {thirty_eight}, 38")
            e("\tldi r18, 8")
            e("\tclc")
            e("1:")
            for _ in range(4):
                e("\tld r22, Y+")
                e("\tld r23, Z+")
                e(f"\t{opc} r22, r23")
                e("\tst X+, r22")
            e("\tdec r18")
            e("\tbrne 1b")
        else:
            thirty_eight = "r23"
            for i in range(32):
                e(f"\tldd r22, Y+{i}")
                e(f"\tldd r23, Z+{i}")
                e(f"\t{op if i == 0 else opc} r22, r23")
                e("\tst X+, r22")
        e("\tclr r20")
        e("\tadc r20, r21\t; carry / borrow (0 or 1)")
        if not looped:
            e(f"\tldi {thirty_eight}, 38")
        e(f"\tmul r20, {thirty_eight}")
        e("\tmovw r26, r24")
        e("\tld r22, X")
        e(f"\t{op} r22, r0")
        e("\tst X+, r22")
        for _ in range(3 if looped else 31):
            e("\tld r22, X")
            e(f"\t{opc} r22, r21")
            e("\tst X+, r22")
        if looped:
            e("\tldi r18, 7")
            e("2:")
            for _ in range(4):
                e("\tld r22, X")
                e(f"\t{opc} r22, r21")
                e("\tst X+, r22")
            e("\tdec r18")
            e("\tbrne 2b")
        e("\tclr r20")
        e("\tadc r20, r21\t; a second carry / borrow")
        e(f"\tmul r20, {thirty_eight}")
        e("\tmovw r26, r24")
        e("\tld r22, X")
        e(f"\t{op} r22, r0")
        e("\tst X, r22")
        e("\tclr r1")
        epilogue(name, saved)


def emit_mul_small(looped=False):
    """Multiplication by a small constant c < 2^24 (the ladder's a24 = 121665,
    the base point's u = 9): three byte products per byte of a in a 32-bit
    running sum, then `fold_wide` with 38·carry < 2^30, whose second pass
    needs bytes 0..3 (the full multiplication's needs two). `looped`: a loop
    over the bytes of a (the running sum moved down a byte a turn) and over
    the carry pass, the same results in a tenth of the code.

      void fe25519_mul_small_avr(uint8_t r[32], const uint8_t a[32], uint32_t c);
    """
    saved = ["r14", "r15", "r16", "r17"]
    prologue("fe25519_mul_small_avr", saved)
    e("\tmovw r26, r24\t; X = r")
    e("\tmovw r30, r22\t; Z = a")
    e("\tclr r21\t\t; zero (c < 2^24)")
    acc = ["r22", "r23", "r16", "r17"]
    for r in acc:
        e(f"\tclr {r}")
    if looped:
        e("\tldi r24, 32")
        e("\tmov r14, r24")
        e("\tmovw r24, r26\t; r again (X moves)")
        e("1:")
    for i in range(1 if looped else 32):
        e("\tld r15, Z+")
        e("\tmul r15, r18")
        e(f"\tadd {acc[0]}, r0")
        e(f"\tadc {acc[1]}, r1")
        e(f"\tadc {acc[2]}, r21")
        e(f"\tadc {acc[3]}, r21")
        e("\tmul r15, r19")
        e(f"\tadd {acc[1]}, r0")
        e(f"\tadc {acc[2]}, r1")
        e(f"\tadc {acc[3]}, r21")
        e("\tmul r15, r20")
        e(f"\tadd {acc[2]}, r0")
        e(f"\tadc {acc[3]}, r1")
        e(f"\tst X+, {acc[0]}")
        acc = next_byte(e, acc, looped, "r14")
    # 38·carry (carry = acc[0..3] < 2^24) into r18..r21, added over r.
    e("\tldi r18, 38")
    e("\tmov r14, r18")
    e("\tclr r15")
    times38(e, acc, ["r18", "r19", "r20", "r21"], "r14", "r15")
    e("\tmovw r26, r24")
    for i in range(4 if looped else 32):
        e("\tld r0, X")
        if i < 4:
            e(f"\t{'add' if i == 0 else 'adc'} r0, r{18 + i}")
        else:
            e("\tadc r0, r15")
        e("\tst X+, r0")
    if looped:
        e("\tldi r22, 28")
        e("2:")
        e("\tld r0, X")
        e("\tadc r0, r15")
        e("\tst X+, r0")
        e("\tdec r22")
        e("\tbrne 2b")
    e("\tclr r18")
    e("\tadc r18, r15\t\t; the last carry (0 or 1)")
    e("\tmul r18, r14")
    e("\tmovw r26, r24")
    for i in range(4):
        e("\tld r18, X")
        e(f"\t{'add r18, r0' if i == 0 else ('adc r18, r1' if i == 1 else 'adc r18, r15')}")
        e("\tst X+, r18")
    e("\tclr r1")
    epilogue("fe25519_mul_small_avr", saved)


def main(argv):
    """`gen_fe25519.py` prints fe25519_mul.S (unrolled, fastest);
    `gen_fe25519.py --compact` prints fe25519_compact.S (the multiplication
    looped over its rows, the inversion looped: ~5 KB instead of ~19 KB);
    `gen_fe25519.py --tiny` prints fe25519_tiny.S, the compact file
    squaring through its multiplication (no 16-byte squaring: ~3.5 KB, a
    ladder step 16 % more cycles)."""
    assert argv[1:] in ([], ["--compact"], ["--tiny"]), "usage: gen_fe25519.py [--compact | --tiny]"
    tiny = argv[1:] == ["--tiny"]
    compact = tiny or argv[1:] == ["--compact"]
    name = "fe25519_tiny.S" if tiny else "fe25519_compact.S" if compact else "fe25519_mul.S"
    e(f"/* {name}: generated by asm-avr/gen_fe25519.py{' ' + argv[1] if argv[1:] else ''}: do not edit. */")
    e("\t.text")
    emit_wrapper("fe25519_mul_avr", "fe25519_mul_int", MUL_FRAME)
    # The tiny file squares through the multiplication (b = a): no 16-byte
    # squaring routine (1.5 KB), a square costs a product.
    emit_wrapper("fe25519_sqr_avr", "fe25519_sqr_int", MUL_FRAME if tiny else SQR_FRAME)
    emit_mul_int(e, looped=compact)
    if tiny:
        e("\t.type fe25519_sqr_int, @function")
        e("fe25519_sqr_int:")
        e("\tmovw r20, r22\t; b = a")
        e("\trjmp fe25519_mul_int\t; (its ret returns)")
        e("\t.size fe25519_sqr_int, . - fe25519_sqr_int")
    else:
        emit_sqr_int(e, looped=compact)
    emit_combine(e, looped=compact)
    if compact:
        emit_mul128(e, looped=True)
        emit_abs_difference_looped(e)
    else:
        emit_k16(e)
    if not tiny:
        emit_sqr128(e)
    emit_add_sub(looped=compact)
    emit_mul_small(looped=compact)
    emit_invert(e, (prologue, epilogue, frame_alloc, close_frame, SAVED), looped=compact)
    emit_ladder_step(e, (prologue, epilogue), looped=compact)
    print("\n".join(o))


if __name__ == "__main__":
    import sys

    main(sys.argv)
