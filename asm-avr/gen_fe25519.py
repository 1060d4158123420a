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

Multiplication: one level of subtractive Karatsuba (`emit_mul_karatsuba`):
three 16-byte products (aL bL, aH bH, |aL - aH| |bL - bH|; 768 byte
products instead of 1024), each by operand caching: two rows, each holding
8 bytes of a in registers (r3..r10) while a window of 8 bytes of b
(r11..r18, b[j] in register j mod 8) slides along b one load per column;
each byte product is `mul` + add/adc/adc into a 24-bit accumulator renamed
per column (r19..r21), and the second row adds the first row's bytes it
overlaps (loaded from t). The three products sit in a 128-byte stack frame
and are recombined by masks, the sign of the middle term included, while
the top half is folded. The compact file's multiplication is four such rows
of 8 bytes of a over all of b into a 64-byte frame.

Squaring runs such rows over the off-diagonal products a_i a_j (i < j; row
I pairs a[8I+u] with a[8I+j'], u < j'), then t = 2t + sum a_i^2 2^(16i):
496 + 32 byte products instead of 1024. Both fold r = t_lo + 38 t_hi with a
running carry c and add 38c over all of r, and the carry of that (r is then
below 38*40) adds 38 more to r[0..2], exactly as the portable `fold_wide`
does: the unrolled multiplication folds each high byte as it makes it, and
the unrolled squaring doubles, adds the diagonal and folds in one pass (the
compact file keeps the separate passes). The small-constant
product (c < 2^24) keeps a 32-bit running sum, three byte products a byte;
its 38·carry is below 2^30, so its second fold pass covers r[0..4].
Addition folds its carry c as 38c (twice: a second carry leaves r < 38);
subtraction takes 38 per borrow off (twice: a second borrow leaves r above
2^256 - 38, so byte 0 alone pays) - exactly the portable `Fe::add`/`Fe::sub`.
Straight-line code, no data-dependent branch or address: constant time.
Used by `crates/x25519-avr`, tested against its portable field in simavr.

Registers: the zero register is r2 in multiplication and squaring (r21 in
addition and subtraction); r is pushed just before the frame is opened (it
sits at t + frame size, above t) and read back for the fold. Looped
multiplication and squaring: X walks t, Y walks a, Z walks b.
`fe25519_mul128`: X walks a, Z walks b, its product is under Y. The
Karatsuba multiplication reads a and b under Y and Z by offset, writes the
differences through X, then combines with Y = t and Z walking M, and X
walking r; its stack peak is 152 bytes (18 saved registers, r, the 128-byte
frame, two return addresses), the squaring's 86. r is written only after
the last read of a and b.
"""

from fe25519_invert_gen import emit_invert

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


def frame_alloc(size=FRAME):
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


def row(products, first_col, last_col, existing_below, load, out_y=None):
    """One row of the product: columns first_col..last_col, column c summing
    the byte products `products(c)` (pairs of registers) in the rotating
    24-bit accumulator. `load(c)` emits the window load of column c. Each
    column's low byte is added to the byte of t under X when that byte was
    written by an earlier row (position < existing_below) and stored; the
    row's final carry byte is stored after the last column (column
    last_col + 1). With `out_y` (an offset), column c is t[out_y + c] under
    Y instead (X is not used) and the earlier row's bytes are added two at a
    time (an even count), at the column's start, through r22 and r0."""
    acc = list(ACC)
    for r in acc:
        e(f"\tclr {r}")

    def store(c, reg):
        e(f"\tst X+, {reg}" if out_y is None else f"\tstd Y+{out_y + c}, {reg}")

    for c in range(first_col, last_col + 1):
        if out_y is not None and c < existing_below and (c - first_col) % 2 == 0:
            e(f"\tldd r22, Y+{out_y + c}")
            e(f"\tldd r0, Y+{out_y + c + 1}")
            e(f"\tadd {acc[0]}, r22")
            e(f"\tadc {acc[1]}, r0")
            e(f"\tadc {acc[2]}, {ZERO}")
        load(c)
        for x, y in products(c):
            e(f"\tmul {x}, {y}")
            e(f"\tadd {acc[0]}, r0")
            e(f"\tadc {acc[1]}, r1")
            e(f"\tadc {acc[2]}, {ZERO}")
        if out_y is None and c < existing_below:
            e("\tld r22, X")
            e(f"\tadd {acc[0]}, r22")
            e(f"\tadc {acc[1]}, {ZERO}")
            e(f"\tadc {acc[2]}, {ZERO}")
        store(c, acc[0])
        e(f"\tclr {acc[0]}")
        acc = acc[1:] + acc[:1]
    store(last_col + 1, f"{acc[0]}\t; the row's carry byte")


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
        e(f"\tldd r22, Y+{32 + i}\t; t_hi")
        fold_byte("r22", f"Y+{i}", "r17", "r16", tmp="r22", carry_in=i > 0)
    final_fold()
    close_frame()


def close_frame(size=FRAME):
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


def final_fold():
    """r + 2^256 * r17 = r + 38 * r17 (r at r25:r24, 38 in r16); then once
    more for that carry."""
    e("\tmovw r26, r24")
    e("\tmul r17, r16")
    e("\tld r22, X")
    e("\tadd r22, r0")
    e("\tst X+, r22")
    e("\tld r22, X")
    e("\tadc r22, r1")
    e("\tst X+, r22")
    for _ in range(2, 32):
        e("\tld r22, X")
        e(f"\tadc r22, {ZERO}")
        e("\tst X+, r22")
    e("\tclr r17")
    e(f"\tadc r17, {ZERO}\t; the last carry (0 or 1)")
    e("\tmul r17, r16")
    e("\tmovw r26, r24")
    e("\tld r22, X")
    e("\tadd r22, r0")
    e("\tst X+, r22")
    e("\tld r22, X")
    e("\tadc r22, r1")
    e("\tst X, r22")


def mul_row(existing_below, b_len=32, a_ptr="Y", out_y=None):
    """One operand-caching row: the next 8 bytes of a (under `a_ptr`) times
    the `b_len` bytes of b (r25:r24), added into t where t's bytes below
    `existing_below` (in columns) were written before; t under X, or at
    Y + `out_y` (see `row`)."""
    for r in A_ROW:
        e(f"\tld {r}, {a_ptr}+")
    e("\tmovw r30, r24\t; Z = b")

    def products(c):
        return [(A_ROW[u], WINDOW[(c - u) % 8]) for u in range(max(0, c - b_len + 1), min(7, c) + 1)]

    def load(c):
        if c < b_len:
            e(f"\tld {WINDOW[c % 8]}, Z+")

    row(products, 0, b_len + 6, existing_below, load, out_y)


KARATSUBA_FRAME = 128  # t (64 bytes), M (32), |aL - aH| (16), |bL - bH| (16)


def emit_mul128():
    """Local subroutine: out[0..32] = a[0..16] * b[0..16] by two operand-
    caching rows of eight bytes of a. In: X = a (left at a + 16), r25:r24 =
    b and Y = out (both kept). Clobbers r0, r1, r3..r22 and Z; keeps r2
    (zero) and r23."""
    e("\t.type fe25519_mul128, @function")
    e("fe25519_mul128:")
    mul_row(0, b_len=16, a_ptr="X", out_y=0)
    mul_row(16, b_len=16, a_ptr="X", out_y=8)
    e("\tret")
    e("\t.size fe25519_mul128, . - fe25519_mul128")


def abs_difference(base, mask):
    """|low - high| of the 16-byte halves at `base` (Y or Z, not moved),
    stored to X+ (computed in r3..r18); `mask` = 0xFF if low < high, else 0."""
    regs = [f"r{i}" for i in range(3, 19)]
    for i, r in enumerate(regs):
        e(f"\tldd {r}, {base}+{i}")
        e(f"\tldd r22, {base}+{16 + i}")
        e(f"\t{'sub' if i == 0 else 'sbc'} {r}, r22")
    e(f"\tsbc {mask}, {mask}\t\t; 0xFF on a borrow")
    for r in regs:
        e(f"\teor {r}, {mask}")
    for i, r in enumerate(regs):
        e(f"\t{'sub' if i == 0 else 'sbc'} {r}, {mask}\t\t; (d ^ mask) - mask = |d|")
    for r in regs:
        e(f"\tst X+, {r}")


def fold_byte(high, low_source, fc, c38, tmp="r21", carry_in=True):
    """r_i = low + 38·high + fc to X+; fc = the carry (below 40). Without
    `carry_in` (the first byte), fc is not added."""
    e(f"\tmul {high}, {c38}")
    e(f"\tldd {tmp}, {low_source}")
    e(f"\tadd r0, {tmp}")
    e(f"\tadc r1, {ZERO}")
    if carry_in:
        e(f"\tadd r0, {fc}")
        e(f"\tadc r1, {ZERO}")
    e("\tst X+, r0")
    e(f"\tmov {fc}, r1")


def emit_mul_karatsuba():
    """One level of subtractive Karatsuba over 16-byte halves, then the
    fold. With L = aL bL, H = aH bH and M = |aL - aH| |bL - bH| (three
    calls of `fe25519_mul128`: 768 byte products instead of 1024),

        a b = L + 2^128 (L + H - s M) + 2^256 H,   s = sign((aL - aH)(bL - bH)).

    With L = L0 + 2^128 L1, H = H0 + 2^128 H1 and S = L1 + H0 (made once,
    kept in r3..r18; its carry c1 waits in the dead H0 bytes), the
    product's 16-byte quarters are L0, S + L0 - s M0, S + H1 - s M1 + c1,
    and H1 + c1 + the sign extension of -s M. -s M is added as (M ^ n) +
    (n & 1), n = 0xFF when s = +1 (else 0), and n again as each byte of the
    top quarter; every sum runs modulo 2^512, where the product is exact.
    Each byte of the top half is folded (r_i = t[i] + 38 t[32 + i] + carry)
    as it is made, then the two carry folds of `fold_wide`. The sign only
    selects by masks: no branch, no data-dependent address."""
    prologue("fe25519_mul_avr", SAVED)
    e("\tmovw r28, r22\t; Y = a")
    e("\tmovw r30, r20\t; Z = b")
    frame_alloc(KARATSUBA_FRAME)
    e(f"\tclr {ZERO}")
    e("\tadiw r26, 63")
    e("\tadiw r26, 33\t\t; X = t + 96: |aL - aH|, then |bL - bH|")
    sign, sign_b = "r23", "r24"
    abs_difference("Y", sign)
    abs_difference("Z", sign_b)
    e(f"\teor {sign}, {sign_b}\t\t; 0xFF if (aL - aH)(bL - bH) < 0")
    e("\tmovw r24, r30\t; b")
    e("\tmovw r26, r28\t; X = a")
    e("\tin r28, 0x3d")
    e("\tin r29, 0x3e")
    e("\tadiw r28, 1\t\t; Y = t")
    e("\trcall fe25519_mul128\t; L = aL bL -> t[0..32]")
    e("\tadiw r24, 16")
    e("\tadiw r28, 32")
    e("\trcall fe25519_mul128\t; H = aH bH -> t[32..64]")
    e("\tmovw r26, r28")
    e("\tadiw r26, 63")
    e("\tadiw r26, 1\t\t; X = |aL - aH|")
    e("\tmovw r24, r26")
    e("\tadiw r24, 16\t\t; |bL - bH|")
    e("\tadiw r28, 32")
    e("\trcall fe25519_mul128\t; M -> t[64..96]")
    e("\tmovw r30, r28\t; Z = M")
    e("\tsbiw r28, 63")
    e("\tsbiw r28, 1\t\t; Y = t")
    n = sign
    e(f"\tcom {n}\t\t; n = 0xFF: M is subtracted")
    S = [f"r{i}" for i in range(3, 19)]
    lo, hi, tmp, m = "r19", "r20", "r21", "r22"
    for j in range(16):
        e(f"\tldd {S[j]}, Y+{16 + j}")
        e(f"\tldd {tmp}, Y+{32 + j}")
        e(f"\t{'add' if j == 0 else 'adc'} {S[j]}, {tmp}\t\t; S = L1 + H0")
    e(f"\tclr {tmp}")
    e(f"\tadc {tmp}, {ZERO}")
    e(f"\tstd Y+32, {tmp}\t\t; c1")
    e(f"\tmov {lo}, {n}")
    e(f"\tandi {lo}, 1\t\t; the + 1 of -M = ~M + 1")

    def add_column(terms):
        """lo + the terms -> lo, its carry -> hi; then the two swap roles."""
        nonlocal lo, hi
        e(f"\tclr {hi}")
        for v in terms:
            e(f"\tadd {lo}, {v}")
            e(f"\tadc {hi}, {ZERO}")

    for j in range(16):  # quarter 1: t[16 + j] = S_j + L0_j + (M_j ^ n) + carry
        e(f"\tld {m}, Z+")
        e(f"\teor {m}, {n}")
        e(f"\tldd {tmp}, Y+{j}")
        add_column((S[j], tmp, m))
        e(f"\tstd Y+{16 + j}, {lo}")
        lo, hi = hi, lo
    # Z = t + 80: r, pushed before the frame, is at t + 128 = Z + 48.
    e("\tldd r27, Z+48")
    e("\tldd r26, Z+49\t\t; X = r")
    e(f"\tldd {tmp}, Y+32")
    e(f"\tadd {lo}, {tmp}\t\t; c1 at byte 32")
    fc, c38 = "r24", "r25"
    e(f"\tclr {fc}")
    e(f"\tldi {c38}, 38")
    for j in range(16):  # quarter 2 (S_j + H1_j + (M_(16+j) ^ n) + carry), folded
        e(f"\tld {m}, Z+")
        e(f"\teor {m}, {n}")
        e(f"\tldd {tmp}, Y+{48 + j}")
        add_column((S[j], tmp, m))
        fold_byte(lo, f"Y+{j}", fc, c38)
        lo, hi = hi, lo
    fc, c38 = "r17", "r16"  # S is dead: the registers `final_fold` wants
    e(f"\tmov {fc}, r24")
    e(f"\tldi {c38}, 38")
    e(f"\tldd {tmp}, Y+32")
    e(f"\tadd {lo}, {tmp}\t\t; c1 at byte 48")
    for j in range(16):  # quarter 3 (H1_j + n + carry), folded; its carry out is 2^512
        e(f"\tldd {tmp}, Y+{48 + j}")
        add_column((tmp, n))
        fold_byte(lo, f"Y+{16 + j}", fc, c38)
        lo, hi = hi, lo
    e("\tmovw r24, r26")
    e("\tsbiw r24, 32\t\t; r")
    final_fold()
    close_frame(KARATSUBA_FRAME)
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
    looped over its rows, squaring through it, the inversion looped: ~5 KB
    instead of ~19 KB)."""
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
        emit_mul_karatsuba()
        emit_mul128()
        emit_sqr_unrolled()
        emit_add_sub()
    emit_mul_small(looped=compact)
    emit_invert(e, (prologue, epilogue, frame_alloc, close_frame, SAVED), looped=compact)
    print("\n".join(o))


if __name__ == "__main__":
    import sys

    main(sys.argv)
