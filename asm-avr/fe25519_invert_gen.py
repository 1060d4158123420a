"""Emits fe25519_invert_avr for gen_fe25519.py: inversion modulo
p = 2^255 - 19 by Bernstein-Yang divsteps ("Fast constant-time gcd
computation and modular inversion", TCHES 2019), in constant time:

    void fe25519_invert_avr(uint8_t r[32], const uint8_t a[32]);

r receives a value below 2^256 congruent to a^(-1) mod p (0 for a = 0 mod
p); r may be a.

The input is first reduced below p (so a multiple of p becomes exactly 0).
Then f = p, g = a, d = 0, e = 1, delta = 1 run BATCHES batches of STEPS
divsteps. Each batch runs its divsteps on the low bytes of f and g alone,
which decide them, collecting the transition matrix (u v; q r) (signed
bytes: |u| + |v| <= 2^STEPS = 64), and then applies it to the full numbers:

    f, g <- (u f + v g) / 2^6, (q f + r g) / 2^6            (exact)
    d, e <- (u d + v e + m_d p) / 2^6, (q d + r e + m_e p) / 2^6

with m = 27 * (low byte of the sum) mod 64 (27 = -p^(-1) mod 64), so that
the sums divide exactly; m p = m 2^255 - 19 m is two small additions. The
invariants f = d a, g = e a (mod p) hold throughout. 124 x 6 = 744 divsteps
exceed the floor((49 d + 57) / 17) = 738 that Theorem 11.2 of the paper
requires for f, g < 2^255 (d = 255, delta starting at 1), so g ends at 0 and f at +-1 (f = p for a = 0): a^(-1) = f d. Then
|d| < 125 p < 2^262, and r = f d + 256 p (positive, below 2^264) is folded
with 2^255 = 19 below 2^256.

f, g, d, e are 33-byte two's-complement numbers in a 132-byte stack frame,
interleaved (f_k, g_k at 2k; d_k, e_k at 66 + 2k) so one pointer reads a
pair while another writes the previous pair's results. Each matrix
application walks the 34 byte positions (the 34th is the sign extension):
four `mulsu` (signed matrix entry times unsigned byte) add into two 16-bit
accumulators (|sum| < 2^15: entries are below 64 in total, the carry
below 65, the corrections below 9,300), the low byte of each is multiplied
by 4 and ORed with the top 2 bits of the previous byte (the division by
2^6) and stored, and the accumulators shift right by a byte with sign
extension. No branch or address depends on the data; the frame is zeroed
before it is released.

The one-time passes (the input's reduction, the set-up, the output) are
loops in both files. `looped`: the 30 middle byte positions of each
application are a loop over one copy of their code, and the divsteps a
loop over one divstep: the same results in a quarter of the code (1.2 KB
instead of 4.8 KB) and 9 % more cycles.
"""

BATCHES = 124
STEPS = 6
FRAME = 132  # f/g interleaved (66 bytes), then d/e (66)
DE = 66

# Registers.
ZERO = "r2"
BATCH = "r3"
COUNT = "r4"
C4, C27, C19, C128 = "r6", "r7", "r8", "r9"
PREV = ("r10", "r11")  # the top 2 bits of the previous byte of each output
ACC = (("r12", "r13"), ("r14", "r15"))
U, V, Q, R = "r16", "r17", "r18", "r19"
LOW = ("r20", "r21")  # the bytes of the pair read at a position
T0, T1 = "r22", "r23"  # temporaries; m_d, m_e in the d/e application
DELTA = ("r24", "r25")


def emit_invert(e, asm, looped=False):
    """`asm`: gen_fe25519's `prologue`, `epilogue`, `frame_alloc`,
    `close_frame` and its list of saved registers (r2..r17, r28, r29)."""
    prologue, epilogue, frame_alloc, close_frame, saved = asm
    name = "fe25519_invert_avr"
    prologue(name, saved)
    e("\tmovw r30, r22\t; Z = a")
    frame_alloc(FRAME)
    e("\tmovw r28, r26\t; Y = the frame")
    e(f"\tclr {ZERO}")
    reduce_input(e)
    initialise(e)
    e(f"\tldi {T0}, {BATCHES}")
    e(f"\tmov {BATCH}, {T0}")
    e(f"{name}_batch:")
    e(f"\tldd {LOW[0]}, Y+0\t; the low bytes of f and g")
    e(f"\tldd {LOW[1]}, Y+1")
    e(f"\tldi {U}, 1")
    e(f"\tclr {V}")
    e(f"\tclr {Q}")
    e(f"\tldi {R}, 1")
    if looped:
        e(f"\tldi {T0}, {STEPS}")
        e(f"\tmov {COUNT}, {T0}")
        e(f"{name}_step:")
        divstep(e)
        e(f"\tdec {COUNT}")
        e(f"\tbrne {name}_step")
    else:
        for _ in range(STEPS):
            divstep(e)
    apply(e, 0, False, looped, f"{name}_fg")
    apply(e, DE, True, looped, f"{name}_de")
    e(f"\tdec {BATCH}")
    e(f"\tbreq {name}_done")
    e(f"\t{'rjmp' if looped else 'jmp'} {name}_batch\t; (the unrolled batch is beyond rjmp's reach)")
    e(f"{name}_done:")
    finish(e)
    e("\tmovw r26, r28")
    e(f"\tldi {T0}, {FRAME}")
    e(f"{name}_wipe:")
    e(f"\tst X+, {ZERO}")
    e(f"\tdec {T0}")
    e(f"\tbrne {name}_wipe")
    close_frame(FRAME)
    epilogue(name, saved)


def counted(e, count, body, scratch):
    """`body` `count` times, as a loop on COUNT (set through `scratch`, an
    upper register); the carry flag survives from one turn to the next."""
    e(f"\tldi {scratch}, {count}")
    e(f"\tmov {COUNT}, {scratch}")
    e("1:")
    body()
    e(f"\tdec {COUNT}")
    e("\tbrne 1b")


def reduce_input(e):
    """g <- a mod p, at the odd bytes of the frame: x = (a mod 2^255) + 19
    (bit 255 of a), then y = x + 19 (at the even bytes), and x <- y - 2^255
    if bit 255 of y is set (x >= p), else x. Z = a on entry; the passes
    step over the other half of the pairs with a dummy store or load."""
    e(f"\tldd {T0}, Z+31")
    e(f"\tlsl {T0}\t\t; C = bit 255 of a")
    e(f"\tsbc {T1}, {T1}")
    e(f"\tandi {T1}, 19")
    e("\tmovw r26, r28")
    e("\tadiw r26, 1\t\t; X = x_0")

    def x_byte(first=False, last=False):
        e(f"\tld {T0}, Z+")
        if last:
            e(f"\tandi {T0}, 0x7F")
        e(f"\t{'add' if first else 'adc'} {T0}, {T1 if first else ZERO}")
        e(f"\tst X+, {T0}\t; x")
        if not last:
            e(f"\tst X+, {T0}\t; (y's byte, written next)")

    x_byte(first=True)
    counted(e, 30, x_byte, LOW[1])
    x_byte(last=True)
    e("\tmovw r30, r28")
    e("\tadiw r30, 1\t\t; Z = x_0")
    e("\tmovw r26, r28\t; X = y_0")
    e(f"\tldi {T1}, 19")

    def y_byte(first=False):
        e(f"\tld {T0}, Z+")
        e(f"\tld {LOW[0]}, Z+\t; (x's next byte: skipped)")
        e(f"\t{'add' if first else 'adc'} {T0}, {T1 if first else ZERO}")
        e(f"\tst X+, {T0}\t; y = x + 19")
        e(f"\tld {LOW[0]}, X+\t; (skips x)")

    y_byte(first=True)
    counted(e, 31, y_byte, LOW[1])
    e(f"\tlsl {T0}\t\t; C = bit 255 of y")
    e(f"\tsbc {T1}, {T1}\t\t; all ones if x >= p")
    e(f"\tlsr {T0}")
    e(f"\tstd Y+62, {T0}\t; y - 2^255 where it is taken")
    e("\tmovw r30, r28\t; Z = (y_0, x_0)")
    e("\tmovw r26, r28")
    e("\tadiw r26, 1\t\t; X = x_0")

    def select():
        e(f"\tld {T0}, Z+")
        e(f"\tld {LOW[0]}, Z+")
        e(f"\teor {T0}, {LOW[0]}")
        e(f"\tand {T0}, {T1}")
        e(f"\teor {T0}, {LOW[0]}\t; the selection")
        e(f"\tst X+, {T0}\t; g")
        e(f"\tld {LOW[0]}, X+\t; (skips y)")

    counted(e, 32, select, LOW[1])


def initialise(e):
    """f = p (even bytes), the top bytes of f and g, d = 0, e = 1,
    delta = 1, the constants."""
    e("\tmovw r26, r28")
    e(f"\tldi {T0}, 0xED")
    e(f"\tst X+, {T0}")
    e(f"\tld {T0}, X+\t; (g)")
    e(f"\tldi {T1}, 0xFF")

    def ones():
        e(f"\tst X+, {T1}")
        e(f"\tld {T0}, X+\t; (g)")

    counted(e, 30, ones, LOW[1])
    e(f"\tldi {T0}, 0x7F")
    e(f"\tst X+, {T0}\t; f = p")
    e(f"\tld {T0}, X+")
    e(f"\tst X+, {ZERO}\t; f_32")
    e(f"\tst X+, {ZERO}\t; g_32")
    e(f"\tldi {T0}, 1")
    e(f"\tst X+, {ZERO}\t; d_0")
    e(f"\tst X+, {T0}\t; e_0 = 1")

    def zero():
        e(f"\tst X+, {ZERO}")

    counted(e, 2 * 32, zero, LOW[1])
    e(f"\tldi {DELTA[0]}, 1")
    e(f"\tclr {DELTA[1]}")
    for reg, value in ((C4, 4), (C27, 27), (C19, 19), (C128, 128)):
        e(f"\tldi {T0}, {value}")
        e(f"\tmov {reg}, {T0}")


def divstep(e):
    """One divstep on (delta, f_lo, g_lo) and the matrix: if delta > 0 and
    g odd, (delta, f, g, u, v, q, r) <- (-delta, g, -f, q, r, -u, -v); then
    if g is odd, g += f and (q, r) += (u, v); g /= 2, (u, v) *= 2,
    delta += 1. Masks only (s in r1, the oddness in T1)."""
    f, g = LOW
    e(f"\tclr {T0}")
    e(f"\tclr {T1}")
    e(f"\tsub {T0}, {DELTA[0]}")
    e(f"\tsbc {T1}, {DELTA[1]}\t; -delta")
    e(f"\tlsl {T1}")
    e("\tsbc r1, r1\t\t; all ones if delta > 0")
    e(f"\tmov {T1}, {g}")
    e(f"\tandi {T1}, 1")
    e(f"\tneg {T1}")
    e(f"\tand r1, {T1}\t\t; s: swap")
    for x, y in ((f, g), (U, Q), (V, R)):
        e(f"\tmov {T0}, {x}")
        e(f"\teor {T0}, {y}")
        e(f"\tand {T0}, r1")
        e(f"\teor {x}, {T0}")
        e(f"\teor {y}, {T0}")
    for x in (g, Q, R):
        e(f"\teor {x}, r1")
        e(f"\tsub {x}, r1\t\t; negated under s")
    e(f"\teor {DELTA[0]}, r1")
    e(f"\teor {DELTA[1]}, r1")
    e(f"\tsub {DELTA[0]}, r1")
    e(f"\tsbc {DELTA[1]}, r1")
    e(f"\tmov {T1}, {g}")
    e(f"\tandi {T1}, 1")
    e(f"\tneg {T1}\t\t; all ones if g is odd")
    for x, y in ((g, f), (Q, U), (R, V)):
        e(f"\tmov {T0}, {y}")
        e(f"\tand {T0}, {T1}")
        e(f"\tadd {x}, {T0}")
    e(f"\tlsr {g}")
    e(f"\tlsl {U}")
    e(f"\tlsl {V}")
    e(f"\tadiw {DELTA[0]}, 1")


def apply(e, offset, reduce_mod_p, looped, label):
    """(x, y) <- ((u x + v y) / 2^6, (q x + r y) / 2^6) for the interleaved
    pair at frame + offset (f, g or d, e), plus m p in each sum for d, e."""
    e("\tmovw r30, r28")
    if offset:
        e("\tadiw r30, 63")
        e(f"\tadiw r30, {offset - 63}")
    e("\tmovw r26, r30\t; Z reads the pair, X writes the results a position behind")
    for lo, hi in ACC:
        e(f"\tclr {lo}")
        e(f"\tclr {hi}")
    position(e, 0, reduce_mod_p)
    if looped:
        e(f"\tldi {LOW[0]}, 30\t; (m_d, m_e stay in T0, T1)")
        e(f"\tmov {COUNT}, {LOW[0]}")
        e(f"{label}:")
        position(e, 1, reduce_mod_p)
        e(f"\tdec {COUNT}")
        e(f"\tbreq {label}_end")
        e(f"\trjmp {label}")
        e(f"{label}_end:")
    else:
        for k in range(1, 31):
            position(e, k, reduce_mod_p)
    for k in range(31, 34):
        position(e, k, reduce_mod_p)


def position(e, k, reduce_mod_p):
    """Byte position k of one matrix application (k = 33: the sign
    extension of the bytes read at 32)."""
    x, y = LOW
    if k < 33:
        e(f"\tld {x}, Z+")
        e(f"\tld {y}, Z+")
    else:
        for reg in LOW:
            e(f"\tlsl {reg}")
            e(f"\tsbc {reg}, {reg}\t; sign extension")
    for (lo, hi), (a, b) in zip(ACC, ((U, V), (Q, R))):
        for entry, byte in ((a, x), (b, y)):
            e(f"\tmulsu {entry}, {byte}")
            e(f"\tadd {lo}, r0")
            e(f"\tadc {hi}, r1")
    if reduce_mod_p and k == 0:
        for (lo, hi), m in zip(ACC, (T0, T1)):
            e(f"\tmul {lo}, {C27}")
            e(f"\tmov {m}, r0")
            e(f"\tandi {m}, 63\t\t; m: the sum + m p divides by 64")
            e(f"\tmul {m}, {C19}")
            e(f"\tsub {lo}, r0")
            e(f"\tsbc {hi}, r1\t\t; - 19 m")
    if reduce_mod_p and k == 31:
        for (lo, hi), m in zip(ACC, (T0, T1)):
            e(f"\tmul {m}, {C128}")
            e(f"\tadd {lo}, r0")
            e(f"\tadc {hi}, r1\t\t; + m 2^255")
    for (lo, hi), prev in zip(ACC, PREV):
        e(f"\tmul {lo}, {C4}")
        if k:
            e(f"\tor r0, {prev}")
            e("\tst X+, r0\t\t; result byte k - 1")
        e(f"\tmov {prev}, r1")
        if k < 33:
            e(f"\tmov {lo}, {hi}")
            e(f"\tlsl {hi}")
            e(f"\tsbc {hi}, {hi}\t; the sum shifts down a byte")


def finish(e):
    """r = f d + 256 p (f = +-1: its top byte is the mask), folded:
    (r mod 2^255) + 19 (r >> 255), below 2^256, to the output."""
    e("\tmovw r30, r28")
    e("\tadiw r30, 63")
    e("\tadiw r30, 1")
    e(f"\tld {T1}, Z\t\t; f_32: all ones if f = -1")
    e("\tmovw r30, r28")
    e("\tadiw r30, 63")
    e(f"\tadiw r30, {DE - 63}\t; Z = d")
    e("\tmovw r26, r28\t; X = the frame's start: r, 33 bytes")
    e(f"\tldi {U}, 0xED")
    e(f"\tldi {V}, 0xFF")
    e(f"\tldi {Q}, 0x7F")
    e(f"\tmov {T0}, {T1}")
    e(f"\tlsr {T0}\t\t; C = 1 if f = -1: -d = ~d + 1")

    def v_byte(constant):
        e(f"\tld {T0}, Z+")
        e(f"\tld {LOW[0]}, Z+\t; (e)")
        e(f"\teor {T0}, {T1}")
        e(f"\tadc {T0}, {constant}\t; + 256 p")
        e(f"\tst X+, {T0}")

    v_byte(ZERO)
    v_byte(U)
    counted(e, 30, lambda: v_byte(V), R)
    v_byte(Q)
    # r (pushed before the frame) is at frame + 132.
    e("\tmovw r30, r28")
    e("\tadiw r30, 63")
    e("\tadiw r30, 37")
    e("\tldd r27, Z+32")
    e("\tldd r26, Z+33\t\t; X = the output")
    e(f"\tldd {T0}, Y+32")
    e(f"\tldi {T1}, 38")
    e(f"\tmul {T0}, {T1}\t\t; 19 (r >> 255) = 38 r_32 + 19 (bit 255)")
    e(f"\tldd {T0}, Y+31")
    e(f"\tlsl {T0}")
    e(f"\tsbc {T1}, {T1}")
    e(f"\tandi {T1}, 19")
    e(f"\tadd r0, {T1}")
    e(f"\tadc r1, {ZERO}")
    e("\tmovw r30, r28\t; Z = r's bytes")

    def out_byte(addend, last=False):
        e(f"\tld {T0}, Z+")
        if last:
            e(f"\tandi {T0}, 0x7F")
        e(f"\t{'add' if addend == 'r0' else 'adc'} {T0}, {addend}")
        e(f"\tst X+, {T0}")

    out_byte("r0")
    out_byte("r1")
    counted(e, 29, lambda: out_byte(ZERO), R)
    out_byte(ZERO, last=True)
    e("\tclr r1")
