#!/usr/bin/env python3
"""Generates fe25519_mul.S, multiplication, squaring, the product with a
small constant, addition and subtraction modulo 2^255 - 19 for AVR:

    void fe25519_mul_avr(uint8_t r[32], const uint8_t a[32], const uint8_t b[32]);
    void fe25519_sqr_avr(uint8_t r[32], const uint8_t a[32]);
    void fe25519_add_avr(uint8_t r[32], const uint8_t a[32], const uint8_t b[32]);
    void fe25519_sub_avr(uint8_t r[32], const uint8_t a[32], const uint8_t b[32]);
    void fe25519_mul_small_avr(uint8_t r[32], const uint8_t a[32], uint32_t c);

Operands are little-endian integers below 2^256 (field elements, not
necessarily fully reduced); r receives a value below 2^256 congruent to the
product. r must not overlap a or b (a and b may be the same).

Multiplication by operand caching: four rows, each holding 8 bytes of a in
registers (r3..r10) while a window of 8 bytes of b (r11..r18, b[j] in
register j mod 8) slides along b one load per column; each byte product is
`mul` + add/adc/adc into a 24-bit accumulator renamed per column (r19..r21).
Row i adds its 39 columns into t[8i..] of the 512-bit product t, a 64-byte
stack frame (the bytes earlier rows wrote are loaded and added; the row's
carry byte lands in fresh t[8i+39]). Squaring runs the same rows over the
off-diagonal products a_i a_j (i < j; row I pairs a[8I+u] with a[8I+j'],
u < j'), then t = 2t + sum a_i^2 2^(16i): 496 + 32 byte products instead of
1024. Both fold r = t_lo + 38 t_hi with a running carry c and add 38c
over all of r, and the carry of that (r is then below 38*40) adds 38 more to
r[0..2], exactly as the portable `fold_wide` does: the unrolled
multiplication's last row folds each high byte as it makes it, and the
unrolled squaring doubles, adds the diagonal and folds in one pass (the
compact file keeps the separate passes). The small-constant
product (c < 2^24) keeps a 32-bit running sum, three byte products a byte;
its 38·carry is below 2^30, so its second fold pass covers r[0..4].
Addition folds its carry c as 38c (twice: a second carry leaves r < 38);
subtraction takes 38 per borrow off (twice: a second borrow leaves r above
2^256 - 38, so byte 0 alone pays) - exactly the portable `Fe::add`/`Fe::sub`.
Straight-line code, no data-dependent branch or address: constant time.
Used by `crates/x25519-avr`, tested against its portable field in simavr.

Registers: the zero register is r2 in multiplication and squaring (r21 in
addition and subtraction); r is pushed below the frame and read back for the
fold; X walks t, Y walks a, Z walks b.
"""

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


ZERO = "r2"
A_ROW = [f"r{i}" for i in range(3, 11)]  # the row's 8 bytes of a
WINDOW = [f"r{i}" for i in range(11, 19)]  # b[j] lives in WINDOW[j % 8]
ACC = ["r19", "r20", "r21"]
SAVED = [f"r{i}" for i in range(2, 18)] + ["r28", "r29"]
FRAME = 64  # the 512-bit product t, on the stack


def frame_alloc():
    """Pushes r (r25:r24) and opens the 64-byte frame; X = t = SP + 1."""
    e("\tpush r24")
    e("\tpush r25")
    e("\tin r26, 0x3d")
    e("\tin r27, 0x3e")
    e(f"\tsubi r26, {FRAME}")
    e("\tsbci r27, 0")
    e("\tin r0, 0x3f")
    e("\tcli")
    e("\tout 0x3e, r27")
    e("\tout 0x3f, r0")
    e("\tout 0x3d, r26")
    e("\tadiw r26, 1\t\t; X = t")


def row(products, first_col, last_col, existing_below, load, store=None):
    """One row of the product: columns first_col..last_col, column c summing
    the byte products `products(c)` (pairs of registers) in the rotating
    24-bit accumulator. `load(c)` emits the window load of column c. Each
    column's low byte is added to the byte of t under X when that byte was
    written by an earlier row (position < existing_below) and stored; the
    row's final carry byte is stored after the last column (column
    last_col + 1). `store(c, reg)`, if given, replaces the store of the
    columns it returns True for; X has then already been advanced past an
    earlier row's byte (`ld r22, X+`)."""
    acc = list(ACC)
    for r in acc:
        e(f"\tclr {r}")

    def custom(c):
        return store is not None and store(c, None)

    for c in range(first_col, last_col + 1):
        load(c)
        for x, y in products(c):
            e(f"\tmul {x}, {y}")
            e(f"\tadd {acc[0]}, r0")
            e(f"\tadc {acc[1]}, r1")
            e(f"\tadc {acc[2]}, {ZERO}")
        if c < existing_below:
            e("\tld r22, X+" if custom(c) else "\tld r22, X")
            e(f"\tadd {acc[0]}, r22")
            e(f"\tadc {acc[1]}, {ZERO}")
            e(f"\tadc {acc[2]}, {ZERO}")
        if custom(c):
            store(c, acc[0])
        else:
            e(f"\tst X+, {acc[0]}")
        e(f"\tclr {acc[0]}")
        acc = acc[1:] + acc[:1]
    if custom(last_col + 1):
        store(last_col + 1, acc[0])
    else:
        e(f"\tst X+, {acc[0]}\t; the row's carry byte")


def fold_and_close():
    """r = t_lo + 38·t_hi (X = t + 64 on entry), then the two carry folds of
    `fold_wide`; closes the frame and pops r."""
    e("\tmovw r28, r26")
    e(f"\tsbiw r28, {FRAME - 1}")
    e("\tsbiw r28, 1\t\t; Y = t")
    e("\tld r25, X+")
    e("\tld r24, X\t\t; r, pushed before the frame")
    e("\tmovw r26, r24\t\t; X = r")
    e("\tldi r16, 38")
    e("\tclr r17\t\t; fold carry")
    for i in range(32):
        e(f"\tldd r22, Y+{32 + i}")
        e("\tmul r22, r16\t\t; 38 * t_hi")
        e(f"\tldd r22, Y+{i}")
        e("\tadd r0, r22")
        e(f"\tadc r1, {ZERO}")
        if i:
            e("\tadd r0, r17")
            e(f"\tadc r1, {ZERO}")
        e("\tst X+, r0")
        e("\tmov r17, r1")
    final_fold()
    close_frame()


def close_frame():
    """Y = t on entry: the frame and r's two bytes are popped; r1 = 0."""
    e(f"\tadiw r28, {FRAME - 1}")
    e("\tadiw r28, 2\t\t; SP back above r's two bytes")
    e("\tin r0, 0x3f")
    e("\tcli")
    e("\tout 0x3e, r29")
    e("\tout 0x3f, r0")
    e("\tout 0x3d, r28")
    e("\tclr r1")


def final_fold(source="X"):
    """r + 2^256 * r17 = r + 38 * r17; then once more for that carry. With
    `source` "Y", the first pass reads r's bytes from t under Y (which it
    advances by 32 and puts back) instead of from r itself."""
    ld = "ld r22, X" if source == "X" else "ld r22, Y+"
    e("\tmovw r26, r24")
    e("\tmul r17, r16")
    e(f"\t{ld}")
    e("\tadd r22, r0")
    e("\tst X+, r22")
    e(f"\t{ld}")
    e("\tadc r22, r1")
    e("\tst X+, r22")
    for _ in range(2, 32):
        e(f"\t{ld}")
        e(f"\tadc r22, {ZERO}")
        e("\tst X+, r22")
    e("\tclr r17")
    e(f"\tadc r17, {ZERO}\t; the last carry (0 or 1)")
    if source == "Y":
        e("\tsbiw r28, 32\t\t; Y = t (after the carry is taken: sbiw sets C)")
    e("\tmul r17, r16")
    e("\tmovw r26, r24")
    e("\tld r22, X")
    e("\tadd r22, r0")
    e("\tst X+, r22")
    e("\tld r22, X")
    e("\tadc r22, r1")
    e("\tst X, r22")


def mul_row(existing_below, last=False):
    """One row of the multiplication: the next 8 bytes of a (Y) times b
    (r25:r24), added into t under X where t's bytes below `existing_below`
    (in columns) were written before. The `last` row (X = t + 24) folds as
    it goes: each final byte t[32+i] it makes becomes r_i = t[i] +
    38·t[32+i] + carry at once, kept in t[i] (Y = t); the fold carry is left
    in r17, 38 in r16."""
    for r in A_ROW:
        e(f"\tld {r}, Y+")
    e("\tmovw r30, r24\t; Z = b")
    store = None
    if last:
        fold_carry, c38 = "r24", "r25"  # free once Z holds b
        e("\tmovw r28, r26")
        e("\tsbiw r28, 24\t\t; Y = t")
        e(f"\tclr {fold_carry}")
        e(f"\tldi {c38}, 38")

        def store(c, reg):
            position = 24 + c
            if position < 32:
                return False
            if reg is None:
                return True
            i = position - 32
            e(f"\tmul {reg}, {c38}\t\t; r_{i} = t[{i}] + 38·t[{position}] + carry")
            e(f"\tldd r22, Y+{i}")
            e("\tadd r0, r22")
            e(f"\tadc r1, {ZERO}")
            e(f"\tadd r0, {fold_carry}")
            e(f"\tadc r1, {ZERO}")
            e(f"\tstd Y+{i}, r0")
            e(f"\tmov {fold_carry}, r1")
            return True

    def products(c):
        return [(A_ROW[u], WINDOW[(c - u) % 8]) for u in range(max(0, c - 31), min(7, c) + 1)]

    def load(c):
        if c < 32:
            e(f"\tld {WINDOW[c % 8]}, Z+")

    row(products, 0, 38, existing_below, load, store)
    if last:
        e("\tmov r17, r24\t\t; the fold carry")
        e("\tldi r16, 38")


def emit_mul_unrolled():
    """Four rows of eight bytes of a (operand caching), unrolled; the last
    row folds as it goes (`mul_row(last=True)`)."""
    prologue("fe25519_mul_avr", SAVED)
    e("\tmovw r28, r22\t; Y = a")
    frame_alloc()
    e("\tmovw r24, r20\t; b (r is on the stack now)")
    e(f"\tclr {ZERO}")
    for i in range(4):
        e(f"\t; row {i}: a[{8 * i}..{8 * i + 8}] * b")
        if i:
            e("\tsbiw r26, 32\t\t; X = t + 8i")
        mul_row(32 if i else 0, last=i == 3)
    # r_0..r_31 wait in t[0..32]: out to r with the fold's carry (Y = t).
    e("\tadiw r28, 32")
    e("\tldd r24, Y+33\t\t; r, pushed before the frame")
    e("\tldd r25, Y+32")
    e("\tsbiw r28, 32")
    final_fold(source="Y")
    close_frame()
    epilogue("fe25519_mul_avr", SAVED)


def emit_mul_looped():
    """The same rows as a loop over one row body (a quarter of the code):
    t is zeroed first so every row adds into it, and the squaring calls this
    with b = a. For images whose flash is short (the ATmega4808)."""
    prologue("fe25519_mul_avr", SAVED)
    e("\tmovw r28, r22\t; Y = a")
    frame_alloc()
    e("\tmovw r24, r20\t; b (r is on the stack now)")
    e(f"\tclr {ZERO}")
    e(f"\tldi r23, {FRAME}")
    e("1:")
    e(f"\tst X+, {ZERO}\t\t; t = 0")
    e("\tdec r23")
    e("\tbrne 1b")
    e(f"\tsbiw r26, {FRAME - 1}")
    e("\tsbiw r26, 1\t\t; X = t")
    e("\tldi r23, 4\t\t; rows")
    e("2:")
    mul_row(32)
    e("\tsbiw r26, 32\t\t; X = t + 8(i + 1)")
    e("\tdec r23")
    e("\tbreq 3f")
    e("\trjmp 2b")
    e("3:")
    e("\tadiw r26, 32\t\t; X = t + 64")
    fold_and_close()
    epilogue("fe25519_mul_avr", SAVED)


def emit_sqr_unrolled():
    # Squaring: the off-diagonal sum T = sum_{i<j} a_i a_j 2^(8(i+j)) by rows
    # (row I: a[8I+u] * a[8I+j'] for u < j', column c = u + j', at t[16I + c]),
    # then t = 2T + sum a_i^2 2^(16i): 496 + 32 byte products instead of 1024.
    prologue("fe25519_sqr_avr", SAVED)
    e("\tmovw r28, r22\t; Y = a")
    frame_alloc()
    e("\tmovw r24, r22\t; a, for the diagonal (r is on the stack now)")
    e(f"\tclr {ZERO}")
    for big in range(4):
        span = 31 - 8 * big  # the largest j' of the row
        e(f"\t; row {big}: a[{8 * big}..{8 * big + 8}] * a[j], j > i")
        if big:
            e(f"\tsbiw r26, {31 - 8 * big}\t\t; X = t + {16 * big + 1}")
        for r in A_ROW:
            e(f"\tld {r}, Y+")
        e("\tmovw r30, r28")
        e(f"\tsbiw r30, 7\t\t; Z = a + {8 * big + 1}")

        def products(c, span=span):
            return [(A_ROW[u], WINDOW[(c - u) % 8]) for u in range(0, 8) if u < c - u <= span]

        def load(c, span=span):
            if 1 <= c <= span:
                e(f"\tld {WINDOW[c % 8]}, Z+")

        first = 0 if big == 0 else 1
        existing = 0 if big == 0 else 8 * big + 31 - 16 * big + 1  # positions < 8I + 32
        row(products, first, span + 7, existing, load)
    # X = t + 64 after row 3 (its carry byte is t[63]).
    double_diagonal_fold()
    epilogue("fe25519_sqr_avr", SAVED)


def double_diagonal_fold():
    """r = (2T + sum a_i^2 2^(16i)) folded by 2^256 = 38, in one pass: word j
    of the low half (t[2j], t[2j+1]) and of the high half (t[32+2j], ...)
    are doubled, get a_j^2 and a_(16+j)^2, and fold into r[2j], r[2j+1] at
    once, so t is read once and never written back. Four carry chains: the
    two doublings (the high one starts with bit 255 of T, known before),
    the two diagonal additions (the high one starts at 0: the low one's
    final carry is worth 2^256 = 38 and joins the fold's last carry; the
    high half cannot carry out, 2T + D = a^2 < 2^512), and the fold's.
    Same value as the separate passes (the result below 2^256 is the same
    residue; tested against the portable field bit for bit)."""
    lo0, lo1, hi0, hi1, sq = "r18", "r19", "r20", "r21", "r22"
    d_lo, q_lo, d_hi, q_hi, fc, c38 = "r3", "r4", "r5", "r6", "r17", "r16"
    e("\tmovw r28, r26")
    e(f"\tsbiw r28, {FRAME - 1}")
    e("\tsbiw r28, 1\t\t; Y = t")
    e("\tmovw r30, r24\t; Z = a")
    e("\tadiw r26, 1")
    e("\tld r24, X\t\t; r, pushed before the frame")
    e("\tld r25, -X")
    e("\tmovw r26, r24\t\t; X = r")
    e(f"\tldi {c38}, 38")
    for r in (d_lo, q_lo, q_hi, fc):
        e(f"\tclr {r}")
    e(f"\tldd {d_hi}, Y+31")
    e(f"\trol {d_hi}\t\t; C = bit 255 of T, the high half's first doubled-in bit")
    e(f"\tclr {d_hi}")
    e(f"\trol {d_hi}")
    for j in range(16):
        for (w0, w1, d, q, off, a_off) in ((lo0, lo1, d_lo, q_lo, 2 * j, j), (hi0, hi1, d_hi, q_hi, 32 + 2 * j, 16 + j)):
            e(f"\tldd {w0}, Y+{off}")
            e(f"\tldd {w1}, Y+{off + 1}")
            e(f"\tlsr {d}")
            e(f"\trol {w0}")
            e(f"\trol {w1}")
            e(f"\trol {d}\t\t; the bit shifted out ({d} was 0)")
            e(f"\tldd {sq}, Z+{a_off}")
            e(f"\tmul {sq}, {sq}")
            e(f"\tadd r0, {q}")
            e(f"\tadc r1, {ZERO}")
            e(f"\tadd {w0}, r0")
            e(f"\tadc {w1}, r1")
            e(f"\tclr {q}")
            e(f"\tadc {q}, {ZERO}")
        for lo, hi in ((lo0, hi0), (lo1, hi1)):
            e(f"\tmul {hi}, {c38}\t\t; 38 * high byte")
            e(f"\tadd r0, {lo}")
            e(f"\tadc r1, {ZERO}")
            e(f"\tadd r0, {fc}")
            e(f"\tadc r1, {ZERO}")
            e("\tst X+, r0")
            e(f"\tmov {fc}, r1")
    e(f"\tadd {fc}, {q_lo}\t\t; the low diagonal chain's carry: 2^256 = 38 more")
    final_fold()
    close_frame()


def emit_sqr_via_mul():
    """Squaring as the looped multiplication with b = a."""
    e("\t.global fe25519_sqr_avr")
    e("\t.type fe25519_sqr_avr, @function")
    e("fe25519_sqr_avr:")
    e("\tmovw r20, r22\t; b = a")
    e("\trjmp fe25519_mul_avr")
    e("\t.size fe25519_sqr_avr, . - fe25519_sqr_avr")


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
        if looped:
            e(f"\tmov {acc[0]}, {acc[1]}")
            e(f"\tmov {acc[1]}, {acc[2]}")
            e(f"\tmov {acc[2]}, {acc[3]}")
            e(f"\tclr {acc[3]}")
            e("\tdec r14")
            e("\tbrne 1b")
        else:
            e(f"\tclr {acc[0]}")
            acc = acc[1:] + acc[:1]
    # 38·carry (carry = acc[0..3] < 2^24) into r18..r21, added over r.
    e("\tldi r18, 38")
    e("\tmov r14, r18")
    e(f"\tmul {acc[0]}, r14")
    e("\tmovw r18, r0")
    e(f"\tmul {acc[2]}, r14")
    e("\tmovw r20, r0")
    e(f"\tmul {acc[1]}, r14")
    e("\tadd r19, r0")
    e("\tadc r20, r1")
    e("\tclr r15")
    e("\tadc r21, r15\t\t; r21:r18 = 38·carry")
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
    looped over its rows, squaring through it: ~6 KB instead of ~20 KB)."""
    compact = argv[1:] == ["--compact"]
    assert argv[1:] in ([], ["--compact"]), "usage: gen_fe25519.py [--compact]"
    name = "fe25519_compact.S" if compact else "fe25519_mul.S"
    e(f"/* {name}: generated by asm-avr/gen_fe25519.py{' --compact' if compact else ''}: do not edit. */")
    e("\t.text")
    if compact:
        emit_mul_looped()
        emit_sqr_via_mul()
        emit_add_sub(looped=True)
    else:
        emit_mul_unrolled()
        emit_sqr_unrolled()
        emit_add_sub()
    emit_mul_small(looped=compact)
    print("\n".join(o))


if __name__ == "__main__":
    import sys

    main(sys.argv)
