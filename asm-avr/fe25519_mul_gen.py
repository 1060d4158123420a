"""Emits the multiplication and squaring modulo p = 2^255 - 19 for
gen_fe25519.py: one level of Karatsuba over 16-byte halves, X = 2^128,

    a b = L + X V + X^2 H,   L = aL bL,  H = aH bH,  V = aL bH + aH bL,

folded with X^2 = 2^256 = 38 (mod p) as

    a b = R = L0 + 38 (H0 + V1) + X (L1 + V0 + 38 H1)   (mod p)

(L0, L1 the low and high 16 bytes of L, and so on; V1 = V >> 128, V's top
bit included), top first: q = floor((L[31] + V[15] + 38 H[31]) / 128), the
multiples of 2^255 that byte 31 of R holds before any carry reaches it,
leaves the top and comes back as 19 q at byte 0, so r = R - q p is below
170 * 2^248 with no second fold. `field::mul_portable` is the same
definition in Rust, the reference the assembly is tested against.

Multiplication: M = |aL - aH| |bL - bH| and V = L + H - s M, s the sign
of (aL - aH)(bL - bH), applied by a mask n (0xFF: M is subtracted, as
L + H + ~M + 1 - 2^256). The three 16x16-byte products are `fe25519_k16`:
Karatsuba again over 8-byte halves, each 8x8 product scanned with both
operands in registers (192 byte products instead of 256; see there). The
compact file's are `fe25519_mul128`: operand caching, two rows each
holding 8 bytes of a in registers (r3..r10) while a window of 8 bytes of b
(r11..r18, b[j] in register j mod 8) slides along b one load per column;
each byte product is `mul` + add/adc/adc into a 24-bit accumulator renamed
per column (r19..r21), and the second row adds the first row's bytes it
overlaps.

Squaring: L = aL^2, H = aH^2, M = (aL - aH)^2 and V = L + H - M (always
subtracted), each by `fe25519_sqr128`: the 16 bytes in registers
(r3..r18) and product scanning, column k summing its off-diagonal products
once in a fresh 24-bit accumulator, doubling it and adding it and the
column's square to the running sum (136 byte products instead of 256).

The fold (`fe25519_combine`, one subroutine both end in): V0 =
(L + H + (M ^ n) + (n & 1))[0..16] into 16
registers; q, u = the top estimate mod 128 and 19 q; the high half
L1 + V0 + 38 H1 replaces V0 in its registers (byte 31 is u plus the
carry); then the low half L0 + 38 (H0 + V1), V1's bytes made on the way
(W = H0 + L1 + H1 + (M1 ^ n) with the carries of V0's two chains), with
19 q as its first carry, is stored; its last carry and 38 (W's carry - (n
& 1)) join the high half, which is stored. Every count is fixed, no branch
or address depends on the data.

Internal routines (`fe25519_mul_int`, `fe25519_sqr_int`): r25:r24 = r,
r23:r22 = a (and r21:r20 = b), Y = a scratch frame of MUL_FRAME
(SQR_FRAME) bytes the caller owns: L, H, M at Y+0, +32, +64, then
|aL - aH|, |bL - bH| at +96, +112 (two bytes of the fold at +96, +97 once
they are dead). They clobber r0..r27, r30, r31 and the T flag and keep Y;
r1 is not cleared. The C-ABI routines of gen_fe25519.py wrap them;
`fe25519_mul_int_x1` (unrolled file) takes a's half difference
precomputed (the ladder's x1).

`looped` (the compact file): `fe25519_mul128`'s two rows are one loop
over one row body (the first row skips its merges under the T flag), the
fold keeps V0 and the high half in memory, in loops of two bytes, and the
absolute differences are one looped subroutine (`fe25519_absdiff`).
"""

MUL_FRAME = 128  # L, H, M, |aL - aH|, |bL - bH|
X1_DIFF = MUL_FRAME  # the ladder's precomputed |x1L - x1H| and mask, after the frame
SQR_FRAME = 98  # L, H, M, the fold's two bytes

A_ROW = [f"r{i}" for i in range(3, 11)]  # mul128: the row's 8 bytes of a
WINDOW = [f"r{i}" for i in range(11, 19)]  # b[j] lives in WINDOW[j % 8]
ACC = ["r19", "r20", "r21"]
ZERO = "r2"


def mac(e, x, y, acc, first=False, catch=True):
    """acc (3 registers) += x y; `first`: acc = x y instead (acc[0] even:
    movw); without `catch`, the top register takes no carry (the caller
    knows there is none)."""
    e(f"\tmul {x}, {y}")
    if first:
        e(f"\tmovw {acc[0]}, r0")
        e(f"\tclr {acc[2]}")
        return
    e(f"\tadd {acc[0]}, r0")
    e(f"\tadc {acc[1]}, r1")
    if catch:
        e(f"\tadc {acc[2]}, {ZERO}")


def row(e, products, first_col, last_col, existing_below, load, out_y, skip_if_t=False):
    """One row: columns first_col..last_col, column c summing the byte
    products `products(c)` in the rotating 24-bit accumulator; `load(c)`
    emits the window load of column c. Column c is t[out_y + c] under Y;
    the bytes below `existing_below` (in columns), written by an earlier row,
    are added two at a time (an even count) at the column's start through
    r22 and r0 (`skip_if_t`: skipped while the T flag is set, the looped
    first row's). The row's final carry byte goes to column last_col + 1."""
    acc = list(ACC)
    for r in acc:
        e(f"\tclr {r}")
    for c in range(first_col, last_col + 1):
        if c < existing_below and (c - first_col) % 2 == 0:
            if skip_if_t:
                e("\tbrts 3f\t\t; the first row: nothing to add")
            e(f"\tldd r22, Y+{out_y + c}")
            e(f"\tldd r0, Y+{out_y + c + 1}")
            e(f"\tadd {acc[0]}, r22")
            e(f"\tadc {acc[1]}, r0")
            e(f"\tadc {acc[2]}, {ZERO}")
            if skip_if_t:
                e("3:")
        load(c)
        for x, y in products(c):
            mac(e, x, y, acc)
        e(f"\tstd Y+{out_y + c}, {acc[0]}")
        e(f"\tclr {acc[0]}")
        acc = acc[1:] + acc[:1]
    e(f"\tstd Y+{out_y + last_col + 1}, {acc[0]}\t; the row's carry byte")


def mul_row(e, existing_below, out_y, skip_if_t=False):
    """One operand-caching row: the next 8 bytes of a (X+) times the 16
    bytes of b (r25:r24), into t at Y + out_y (`skip_if_t`: see `row`)."""
    for r in A_ROW:
        e(f"\tld {r}, X+")
    e("\tmovw r30, r24\t; Z = b")

    def products(c):
        return [(A_ROW[u], WINDOW[(c - u) % 8]) for u in range(max(0, c - 15), min(7, c) + 1)]

    def load(c):
        if c < 16:
            e(f"\tld {WINDOW[c % 8]}, Z+")

    row(e, products, 0, 22, existing_below, load, out_y, skip_if_t)


def emit_mul128(e, looped=False):
    """Local subroutine: Y[0..32] = a[0..16] * b[0..16]. In: X = a (left at
    a + 16), r25:r24 = b and Y = out (both kept), r2 = 0. Clobbers r0, r1,
    r3..r22 and Z; keeps r2 and r23. `looped`: one row body run twice, the
    T flag set on the first run (public: the row), whose merges of earlier
    bytes it skips."""
    e("\t.type fe25519_mul128, @function")
    e("fe25519_mul128:")
    if looped:
        e("\tset\t\t; T: the first row")
        e("1:")
        mul_row(e, 16, 0, skip_if_t=True)
        e("\tbrtc 2f")
        e("\tclt")
        e("\tadiw r28, 8")
        e("\trjmp 1b")
        e("2:")
        e("\tsbiw r28, 8")
    else:
        mul_row(e, 0, 0)
        mul_row(e, 16, 8)
    e("\tret")
    e("\t.size fe25519_mul128, . - fe25519_mul128")


def scan8(e, A, B, acc, store=None, fresh=None, n_eor=None):
    """8x8-byte product scanning in registers: A, B (8 registers each) ->
    16 bytes. acc: the 3 accumulator registers (acc[0] even, acc[1] next:
    movw at column 0). Column k's byte goes to store(k, register) (XORed
    with `n_eor` first, if given), the register then being the next top
    accumulator; or, without `store`, the byte stays in its register and the
    next top accumulator comes from `fresh`, where the operands go as they
    die (A[k - 7] and B[k - 7] after column k). Returns the 16 registers
    kept (without `store`)."""
    acc = list(acc)
    kept = []
    for k in range(15):
        for i, j in [(i, k - i) for i in range(8) if 0 <= k - i < 8]:
            mac(e, A[i], B[j], acc, first=k == 0, catch=k < 14)  # the last column cannot carry out
        for m, reg in ((k, acc[0]), (15, acc[1])) if k == 14 else ((k, acc[0]),):
            if store:
                if n_eor:
                    e(f"\teor {reg}, {n_eor}")
                store(m, reg)
            else:
                kept.append(reg)
        if k == 14:
            return kept
        if store:
            new = acc[0]
        else:
            if k >= 7:
                fresh += [A[k - 7], B[k - 7]]
            new = fresh.pop(0)
        e(f"\tclr {new}")
        acc = [acc[1], acc[2], new]


def emit_k16(e):
    """Local subroutine fe25519_k16: Y[0..32] = a[0..16] * b[0..16] by one
    level of Karatsuba over 8-byte halves (Y' = 2^64), each 8x8 product
    scanned with both operands in registers (`scan8`): 192 byte products
    instead of 256. In: X = a, Z = b, Y = out, r2 = 0. Keeps Y, r2, r23;
    clobbers the other registers.

    M = |aL - aH| |bL - bH| first, stored XOR n16 (0xFF when the signs
    agree: M is subtracted) at Y[0..16]; then H = aH bH to Y[16..32]; then
    L = aL bL, kept in registers (the dying operands' registers take the
    later columns). The result, with S = L1 + H0 (8 bytes):
    out[0..8] = L0, out[8..16] = Q1 = S + L0 + (M0 ^ n) + (n & 1),
    out[16..24] = Q2 = S + H1 + (M1 ^ n) + the carries so far,
    out[24..32] = H1 + the last carries - (n & 1) (mod 2^64: the product is
    below 2^256). Each loaded byte is read before its place is written."""
    e("\t.type fe25519_k16, @function")
    e("fe25519_k16:")
    A = [f"r{i}" for i in range(3, 11)]
    B = [f"r{i}" for i in range(11, 19)]
    acc = ["r20", "r21", "r22"]
    t = "r19"
    # M: |aL - aH| into A (X walks a), |bL - bH| into B (Z by displacement).
    for r in A:
        e(f"\tld {r}, X+")
    for i, r in enumerate(A):
        e(f"\tld {t}, X+")
        e(f"\t{'sub' if i == 0 else 'sbc'} {r}, {t}")
    e("\tsbc r24, r24\t\t; 0xFF on a borrow")
    for i, r in enumerate(B):
        e(f"\tldd {r}, Z+{i}")
        e(f"\tldd {t}, Z+{8 + i}")
        e(f"\t{'sub' if i == 0 else 'sbc'} {r}, {t}")
    e("\tsbc r25, r25")
    conditional_negate(e, A, "r24")
    conditional_negate(e, B, "r25")
    e("\teor r24, r25")
    e("\tcom r24\t\t; n16 = 0xFF: the signs agree, M is subtracted")
    scan8(e, A, B, acc, store=lambda k, reg: e(f"\tstd Y+{k}, {reg}"), n_eor="r24")
    e("\tpush r24\t\t; n16")
    # H = aH bH -> Y[16..32].
    e("\tsbiw r26, 8")
    for r in A:
        e(f"\tld {r}, X+")
    for i, r in enumerate(B):
        e(f"\tldd {r}, Z+{8 + i}")
    scan8(e, A, B, acc, store=lambda k, reg: e(f"\tstd Y+{16 + k}, {reg}"))
    # L = aL bL, into registers (X and Z are free once loaded).
    e("\tsbiw r26, 16")
    for r in A:
        e(f"\tld {r}, X+")
    for i, r in enumerate(B):
        e(f"\tldd {r}, Z+{i}")
    free = ["r19", "r24", "r25", "r26", "r27", "r30", "r31"]
    L = scan8(e, A, B, acc, fresh=free)
    L0, S = L[:8], L[8:]
    free += [A[7], B[7], "r0", "r1"]
    n, tmp, c1, k1 = (free.pop(0) for _ in range(4))
    e(f"\tpop {n}\t\t; n16")
    for i in range(8):  # S = L1 + H0, in L1's registers
        e(f"\tldd {tmp}, Y+{16 + i}")
        e(f"\t{'add' if i == 0 else 'adc'} {S[i]}, {tmp}")
    e(f"\tclr {c1}")
    e(f"\trol {c1}\t\t; c1, S's carry")
    e(f"\tmov {tmp}, {n}")
    e(f"\tlsl {tmp}\t\t; C = n & 1")
    for i in range(8):  # L0 + (M0 ^ n) + (n & 1) in L0's registers; out[0..8] = L0
        e(f"\tldd {tmp}, Y+{i}")
        e(f"\tstd Y+{i}, {L0[i]}")
        e(f"\tadc {L0[i]}, {tmp}")
    e(f"\tclr {k1}")
    e(f"\trol {k1}")
    for i in range(8):  # Q1 = that + S
        e(f"\t{'add' if i == 0 else 'adc'} {L0[i]}, {S[i]}")
    e(f"\tadc {k1}, {ZERO}\t; k1, Q1's carries (0..2)")
    free.append(tmp)
    M1 = [free.pop(0) for _ in range(8)]
    for i in range(8):
        e(f"\tldd {M1[i]}, Y+{8 + i}")
    for i in range(8):
        e(f"\tstd Y+{8 + i}, {L0[i]}\t; Q1")
    for i in range(8):  # Q2 = M1 ^ n + S + H1 + c1 + k1, in M1's registers
        e(f"\t{'add' if i == 0 else 'adc'} {M1[i]}, {S[i]}")
    u1, u2, u3, ext = S[:4]
    e(f"\tclr {u1}")
    e(f"\trol {u1}")
    H1 = L0
    for i in range(8):
        e(f"\tldd {H1[i]}, Y+{24 + i}")
    for i in range(8):
        e(f"\t{'add' if i == 0 else 'adc'} {M1[i]}, {H1[i]}")
    e(f"\tclr {u2}")
    e(f"\trol {u2}")
    e(f"\tadd {k1}, {c1}")
    e(f"\tadd {M1[0]}, {k1}")
    for i in range(1, 8):
        e(f"\tadc {M1[i]}, {ZERO}")
    e(f"\tclr {u3}")
    e(f"\trol {u3}")
    for i in range(8):
        e(f"\tstd Y+{16 + i}, {M1[i]}\t; Q2")
    # out[24..32] = H1 + c1 + u1 + u2 + u3 - (n & 1), the small sum sign-extended.
    for c in (u1, u2, u3, n):
        e(f"\tadd {c1}, {c}")
    e(f"\tmov {ext}, {c1}")
    e(f"\tlsl {ext}")
    e(f"\tsbc {ext}, {ext}\t\t; its sign")
    e(f"\tadd {H1[0]}, {c1}")
    for i in range(1, 8):
        e(f"\tadc {H1[i]}, {ext}")
    for i in range(8):
        e(f"\tstd Y+{24 + i}, {H1[i]}\t; Q3")
    e("\tret")
    e("\t.size fe25519_k16, . - fe25519_k16")


SQ_A = [f"r{i}" for i in range(3, 19)]  # sqr128: the 16 bytes
SQ_O = ["r20", "r21", "r22"]  # a column's off-diagonal sum (r20 even: movw)
SQ_R = ["r24", "r25", "r19"]  # the running sum (r24 even: movw at column 0)


def emit_sqr128(e):
    """Local subroutine: X[0..32] = a^2 for 16 bytes a, X advanced by 32.
    `fe25519_sqr128` loads a from Z+ (Z advanced by 16); `fe25519_sqr128_regs`
    finds it in r3..r18. Product scanning with a in registers: column k
    sums its off-diagonal products a_i a_j (i < j) in a fresh accumulator,
    doubles it (or adds a lone product twice) and adds it and a_(k/2)^2 to
    the running sum, whose low byte is stored. Clobbers r0..r25, r2 = 0 on
    return; keeps Y."""
    e("\t.type fe25519_sqr128, @function")
    e("fe25519_sqr128:")
    for r in SQ_A:
        e(f"\tld {r}, Z+")
    e("fe25519_sqr128_regs:")
    e(f"\tclr {ZERO}")
    R = list(SQ_R)
    O = SQ_O
    n = 16
    for k in range(2 * n - 1):
        pairs = [(i, k - i) for i in range(max(0, k - n + 1), n) if i < k - i]
        if k == 0:
            e(f"\tmul {SQ_A[0]}, {SQ_A[0]}")
            e(f"\tmovw {R[0]}, r0")
            e(f"\tclr {R[2]}")
        else:
            if len(pairs) == 1:
                i, j = pairs[0]
                e(f"\tmul {SQ_A[i]}, {SQ_A[j]}\t; column {k}: its lone product, twice")
                for _ in range(2):
                    e(f"\tadd {R[0]}, r0")
                    e(f"\tadc {R[1]}, r1")
                    e(f"\tadc {R[2]}, {ZERO}")
            elif pairs:
                for t, (i, j) in enumerate(pairs):
                    mac(e, SQ_A[i], SQ_A[j], O, first=t == 0)
                e(f"\tlsl {O[0]}")
                e(f"\trol {O[1]}")
                e(f"\trol {O[2]}")
                e(f"\tadd {R[0]}, {O[0]}")
                e(f"\tadc {R[1]}, {O[1]}")
                e(f"\tadc {R[2]}, {O[2]}")
            if k % 2 == 0:
                j = k // 2
                e(f"\tmul {SQ_A[j]}, {SQ_A[j]}")
                e(f"\tadd {R[0]}, r0")
                e(f"\tadc {R[1]}, r1")
                e(f"\tadc {R[2]}, {ZERO}")
        e(f"\tst X+, {R[0]}")
        R = R[1:] + R[:1]
        if k < 2 * n - 2:
            e(f"\tclr {R[2]}")
    e(f"\tst X+, {R[0]}")
    e("\tret")
    e("\t.size fe25519_sqr128, . - fe25519_sqr128")


def next_byte(e, acc, looped, counter, loop_label="1b"):
    """After a running sum's low byte is stored: looped, the sum moves down a
    byte (mov) and the loop counts down; unrolled, the registers are renamed.
    Returns the accumulator's registers for the next byte."""
    if looped:
        for lo, hi in zip(acc, acc[1:]):
            e(f"\tmov {lo}, {hi}")
        e(f"\tclr {acc[-1]}")
        e(f"\tdec {counter}")
        e(f"\tbrne {loop_label}")
        return acc
    e(f"\tclr {acc[0]}")
    return acc[1:] + acc[:1]


def times38(e, carry, out, c38, zero):
    """out[0..4] = 38 * carry for a carry below 2^24 in the bytes carry[0..3]
    (out[0] and out[2] even, for movw; `zero` holds 0)."""
    e(f"\tmul {carry[0]}, {c38}")
    e(f"\tmovw {out[0]}, r0")
    e(f"\tmul {carry[2]}, {c38}")
    e(f"\tmovw {out[2]}, r0")
    e(f"\tmul {carry[1]}, {c38}")
    e(f"\tadd {out[1]}, r0")
    e(f"\tadc {out[2]}, r1")
    e(f"\tadc {out[3]}, {zero}\t; 38 * the carry")


def conditional_negate(e, regs, mask):
    """regs (a little-endian number) <- (regs ^ mask) - mask: negated when
    mask = 0xFF, kept when 0 (|d| from d and its borrow mask)."""
    for r in regs:
        e(f"\teor {r}, {mask}")
    for i, r in enumerate(regs):
        e(f"\t{'sub' if i == 0 else 'sbc'} {r}, {mask}\t\t; (d ^ mask) - mask = |d|")


def abs_difference(e, base, mask):
    """|low - high| of the 16-byte halves at `base` (Y or Z, not moved),
    stored to X+ (computed in r3..r18, r22 a temporary); `mask` = 0xFF if
    low < high, else 0."""
    regs = [f"r{i}" for i in range(3, 19)]
    for i, r in enumerate(regs):
        e(f"\tldd {r}, {base}+{i}")
        e(f"\tldd r22, {base}+{16 + i}")
        e(f"\t{'sub' if i == 0 else 'sbc'} {r}, r22")
    e(f"\tsbc {mask}, {mask}\t\t; 0xFF on a borrow")
    conditional_negate(e, regs, mask)
    for r in regs:
        e(f"\tst X+, {r}")


V = [f"r{i}" for i in range(3, 19)]  # V0, then the high half of r


def emit_combine(e, looped=False):
    """Local subroutine fe25519_combine, the fold (see the module's
    docstring). In: Y = the frame (L, H, M at +0, +32, +64), r23 = n,
    r25:r24 = r. Registers: r2 zero, r19 the low half's carry, r20/r21 the
    W sum and its carry (renamed per byte), r22 = 38, r24 a temporary, r25
    the high half's carry (q's 19 q high byte in the low half's first
    byte), X = r, Z walks M. `looped`: V0 and the high half are kept in r's
    high 16 bytes instead of registers."""
    e("\t.type fe25519_combine, @function")
    e("fe25519_combine:")
    e(f"\tclr {ZERO}")
    e("\tmovw r26, r24\t; X = r")
    e("\tmovw r30, r28")
    e("\tsubi r30, lo8(-64)")
    e("\tsbci r31, hi8(-64)\t; Z = M")
    if looped:
        combine_looped(e)
    else:
        combine_unrolled(e)
    e("\tret")
    e("\t.size fe25519_combine, . - fe25519_combine")


def combine_unrolled(e):
    """`emit_combine` with V0 and the high half in registers."""
    # V0 = L + H + (M ^ n) + (n & 1), bytes 0..15, in two chains.
    for j in range(16):
        e(f"\tldd {V[j]}, Y+{j}")
        e(f"\tldd r24, Y+{32 + j}")
        e(f"\t{'add' if j == 0 else 'adc'} {V[j]}, r24")
    e("\tclr r20")
    e(f"\tadc r20, {ZERO}\t; the carry of L + H")
    e("\tmov r24, r23")
    e("\tlsl r24\t\t; C = n & 1")
    for j in range(16):
        e("\tld r24, Z+")
        e("\teor r24, r23")
        e(f"\tadc {V[j]}, r24")
    e(f"\tadc r20, {ZERO}\t; and of (M ^ n): V1's carry in")
    top_estimate(e, V[15])
    # The high half L1 + V0 + 38 H1, into V0's registers.
    for j in range(15):
        e(f"\tldd r24, Y+{48 + j}")
        e("\tmul r24, r22")
        e(f"\tldd r24, Y+{16 + j}")
        e("\tadd r0, r24")
        e(f"\tadc r1, {ZERO}")
        e(f"\tadd r0, {V[j]}")
        e(f"\tadc r1, {ZERO}")
        if j:
            e("\tadd r0, r25")
            e(f"\tadc r1, {ZERO}")
        e(f"\tmov {V[j]}, r0")
        e("\tmov r25, r1")
    e("\tldd r24, Z+17\t; u")
    e("\tadd r24, r25")
    e(f"\tmov {V[15]}, r24\t; byte 31: u + the carry, below 256")
    e("\tldd r25, Z+16\t; 19 q's high byte")
    lo, hi = low_half(e, lambda j: j)
    late_carry(e, lo)
    e(f"\tadd {V[0]}, r0")
    for j in range(1, 16):
        e(f"\tadc {V[j]}, {ZERO}")
    for j in range(16):
        e(f"\tst X+, {V[j]}")


def top_estimate(e, v15):
    """r22 = 38; T = L[31] + V[15] + 38 H[31] (below 2^14); u = T mod 128 to
    Z+17, q = T >> 7, 19 q's low byte to r19, its high byte to Z+16. Z =
    M + 16 on entry."""
    e("\tldi r22, 38")
    e("\tldd r24, Y+63")
    e("\tmul r24, r22\t; 38 H[31]")
    e("\tldd r24, Y+31")
    e("\tadd r0, r24")
    e(f"\tadc r1, {ZERO}")
    e(f"\tadd r0, {v15}")
    e(f"\tadc r1, {ZERO}\t; T = L[31] + V[15] + 38 H[31]")
    e("\tmov r24, r0")
    e("\tandi r24, 0x7F")
    e("\tstd Z+17, r24\t; u = T mod 128")
    e("\tlsl r0")
    e("\trol r1\t\t; q = T >> 7")
    e("\tldi r24, 19")
    e("\tmul r1, r24")
    e("\tmov r19, r0\t; 19 q: the low half's first carry")
    e("\tstd Z+16, r1")


def low_half(e, l0_offset):
    """The low half L0 + 38 W, W = H0 + L1 + H1 + (M1 ^ n) + V1's carry in
    (r20), stored to X+; Z walks M1. Returns the registers (lo, hi): lo holds
    W's final carry. `l0_offset(j)` is L0[j]'s displacement under Y."""
    lo, hi = "r20", "r21"
    for j in range(16):
        e(f"\tclr {hi}")
        for off in (32 + j, 16 + j, 48 + j):  # H0, L1, H1
            e(f"\tldd r24, Y+{off}")
            e(f"\tadd {lo}, r24")
            e(f"\tadc {hi}, {ZERO}")
        e("\tld r24, Z+")
        e("\teor r24, r23\t; M1 ^ n")
        e(f"\tadd {lo}, r24")
        e(f"\tadc {hi}, {ZERO}")
        e(f"\tmul {lo}, r22")
        e(f"\tldd r24, Y+{l0_offset(j)}")
        e("\tadd r0, r24")
        e(f"\tadc r1, {ZERO}")
        e("\tadd r0, r19")
        e(f"\tadc r1, {'r25' if j == 0 else ZERO}")
        e("\tst X+, r0")
        e("\tmov r19, r1")
        lo, hi = hi, lo
    return lo, hi


def late_carry(e, lo):
    """r0 = the low half's last carry + 38 (W's carry - (n & 1)) (below
    160): what reaches byte 16."""
    e(f"\tadd {lo}, r23\t; n = 0xFF: M's 2^256 taken back")
    e(f"\tmul {lo}, r22")
    e("\tadd r0, r19")


def combine_looped(e):
    """`emit_combine` in loops of two bytes, V0 and the high half in
    r[16..32] instead of registers."""
    # V0 = L + H + (M ^ n) + (n & 1) into r[16..32], in one chain of three
    # terms: the running sum in r20 (byte) and r21 (its carry).
    e("\tadiw r26, 16\t; X = r + 16")
    e("\tmov r20, r23")
    e("\tandi r20, 1\t; n & 1")
    e("\tldi r19, 8")
    e("1:")
    for j in range(2):
        e("\tclr r21")
        for src in (f"Y+{j}", f"Y+{32 + j}", "Z+"):
            e(f"\t{'ld' if src == 'Z+' else 'ldd'} r24, {src}")
            if src == "Z+":
                e("\teor r24, r23")
            e("\tadd r20, r24")
            e(f"\tadc r21, {ZERO}")
        e("\tst X+, r20")
        e("\tmov r20, r21")
    e("\tadiw r28, 2")
    e("\tdec r19")
    e("\tbrne 1b")
    e("\tsbiw r28, 16\t; Y = the frame again")
    e("\tld r3, -X\t; V[15]")
    top_estimate(e, "r3")
    # The high half L1 + V0 + 38 H1 into r[16..31], byte 31 = u + carry.
    e("\tsbiw r26, 15\t; X = r + 16")
    e("\tclr r25")

    def high_byte(j):
        e(f"\tldd r24, Y+{48 + j}")
        e("\tmul r24, r22")
        e(f"\tldd r24, Y+{16 + j}")
        e("\tadd r0, r24")
        e(f"\tadc r1, {ZERO}")
        e("\tld r24, X")
        e("\tadd r0, r24")
        e(f"\tadc r1, {ZERO}")
        e("\tadd r0, r25")
        e(f"\tadc r1, {ZERO}")
        e("\tst X+, r0")
        e("\tmov r25, r1")

    e("\tldi r21, 7")
    e("2:")
    high_byte(0)
    high_byte(1)
    e("\tadiw r28, 2")
    e("\tdec r21")
    e("\tbrne 2b")
    high_byte(0)
    e("\tsbiw r28, 14")
    e("\tldd r24, Z+17\t; u")
    e("\tadd r24, r25")
    e("\tst X, r24\t; byte 31: u + the carry, below 256")
    e("\tldd r25, Z+16\t; 19 q's high byte")
    # The low half to r[0..16].
    e("\tsbiw r26, 31\t; X = r")
    e("\tldi r18, 8")
    e("\tclr r21")
    e("3:")
    for j in range(2):
        for off in (32 + j, 16 + j, 48 + j):
            e(f"\tldd r24, Y+{off}")
            e("\tadd r20, r24")
            e(f"\tadc r21, {ZERO}")
        e("\tld r24, Z+")
        e("\teor r24, r23\t; M1 ^ n")
        e("\tadd r20, r24")
        e(f"\tadc r21, {ZERO}")
        e("\tmul r20, r22")
        e(f"\tldd r24, Y+{j}")
        e("\tadd r0, r24")
        e(f"\tadc r1, {ZERO}")
        e("\tadd r0, r19")
        e("\tadc r1, r25\t; 19 q's high byte, then 0")
        e("\tclr r25")
        e("\tst X+, r0")
        e("\tmov r19, r1")
        e("\tmov r20, r21")
        e("\tclr r21")
    e("\tadiw r28, 2")
    e("\tdec r18")
    e("\tbrne 3b")
    e("\tsbiw r28, 16")
    late_carry(e, "r20")
    # r[16..32] += r0, carried through.
    e("\tld r24, X")
    e("\tadd r24, r0")
    e("\tst X+, r24")
    e("\tldi r18, 5")
    e("4:")
    for _ in range(3):
        e("\tld r24, X")
        e(f"\tadc r24, {ZERO}")
        e("\tst X+, r24")
    e("\tdec r18")
    e("\tbrne 4b")


def emit_mul_int(e, looped=False):
    """fe25519_mul_int (see the module's docstring); unrolled, also
    fe25519_mul_int_x1, the same product with |aL - aH| and its mask
    precomputed at Y + X1_DIFF (16 bytes, then the mask): the ladder's x1,
    fixed for the whole ladder. The T flag tells the two apart until the
    third product (public)."""
    e("\t.type fe25519_mul_int, @function")
    if not looped:
        e("fe25519_mul_int_x1:")
        e("\tset\t\t; T: |aL - aH| is precomputed")
        e(f"\tclr {ZERO}")
        e("\tpush r24")
        e("\tpush r25\t; r")
        e("\tmovw r24, r22\t; a")
        e("\tmovw r30, r28")
        e(f"\tsubi r30, lo8({-(X1_DIFF + 16)})")
        e(f"\tsbci r31, hi8({-(X1_DIFF + 16)})")
        e("\tld r23, Z\t\t; its mask")
        e("\trjmp 1f")
    e("fe25519_mul_int:")
    if not looped:
        e("\tclt")
    e(f"\tclr {ZERO}")
    e("\tpush r24")
    e("\tpush r25\t; r")
    e("\tmovw r24, r22\t; a")
    e("\tmovw r26, r28")
    e("\tsubi r26, lo8(-96)")
    e("\tsbci r27, hi8(-96)\t; X = |aL - aH|")
    e("\tmovw r30, r24")
    if looped:
        e("\trcall fe25519_absdiff")
        e("\tmov r23, r19")
    else:
        abs_difference(e, "Z", "r23")
        e("1:")
        e("\tmovw r26, r28")
        e("\tsubi r26, lo8(-112)")
        e("\tsbci r27, hi8(-112)\t; X = |bL - bH|")
    e("\tmovw r30, r20")
    if looped:
        e("\trcall fe25519_absdiff")
    else:
        abs_difference(e, "Z", "r19")
    e("\teor r23, r19")
    e("\tcom r23\t\t; n = 0xFF: the signs agree, M is subtracted")
    if looped:
        e("\tmovw r26, r24\t; X = a")
        e("\tmovw r24, r20\t; b")
        e("\trcall fe25519_mul128\t; L = aL bL -> Y+0")
        e("\tadiw r24, 16")
        e("\tadiw r28, 32")
        e("\trcall fe25519_mul128\t; H = aH bH -> Y+32")
        e("\tmovw r26, r28")
        e("\tadiw r26, 63")
        e("\tadiw r26, 1\t\t; X = |aL - aH|")
        e("\tmovw r24, r26")
        e("\tadiw r24, 16\t\t; |bL - bH|")
        e("\tadiw r28, 32")
        e("\trcall fe25519_mul128\t; M -> Y+64")
    else:
        for r in ("r24", "r25", "r20", "r21"):
            e(f"\tpush {r}\t\t; a, b")
        e("\tmovw r26, r24\t; X = a")
        e("\tmovw r30, r20\t; Z = b")
        e("\trcall fe25519_k16\t; L = aL bL -> Y+0")
        for r in ("r31", "r30", "r27", "r26"):
            e(f"\tpop {r}")
        e("\tadiw r26, 16")
        e("\tadiw r30, 16")
        e("\tadiw r28, 32")
        e("\trcall fe25519_k16\t; H = aH bH -> Y+32")
        e("\tadiw r28, 32")
        e("\tmovw r26, r28")
        e("\tadiw r26, 32\t\t; X = |aL - aH| (Y = the frame + 64)")
        e("\tbrtc 2f")
        e(f"\tadiw r26, {X1_DIFF - 96}\t; the precomputed one")
        e("2:")
        e("\tmovw r30, r28")
        e("\tadiw r30, 48\t\t; Z = |bL - bH|")
        e("\trcall fe25519_k16\t; M -> Y+64")
    e("\tsbiw r28, 32")
    e("\tsbiw r28, 32")
    e("\tpop r25")
    e("\tpop r24")
    e("\trjmp fe25519_combine\t; (its ret returns)")
    e("\t.size fe25519_mul_int, . - fe25519_mul_int")


def emit_abs_difference_looped(e):
    """Local subroutine fe25519_absdiff (the compact file): `abs_difference`
    of Z's halves to X+ in loops of four bytes (Z, X advanced by 16; the
    mask to r19; r3, r4, r22 clobbered; r2 = 0): the difference to X, then
    X - 16 negated under the mask."""
    mask = "r19"
    e("\t.type fe25519_absdiff, @function")
    e("fe25519_absdiff:")
    e("\tldi r22, 4")
    e("\tclc")
    e("1:")
    for _ in range(4):
        e("\tldd r3, Z+16")
        e("\tld r4, Z+")
        e("\tsbc r4, r3")
        e("\tst X+, r4")
    e("\tdec r22")
    e("\tbrne 1b")
    e(f"\tsbc {mask}, {mask}\t\t; 0xFF on a borrow")
    e("\tsbiw r26, 16")
    e("\tmov r3, " + mask)
    e("\tlsl r3\t\t; C = mask & 1")
    e("\tldi r22, 4")
    e("2:")
    for _ in range(4):
        e("\tld r4, X")
        e(f"\teor r4, {mask}")
        e(f"\tadc r4, {ZERO}\t; (d ^ mask) + (mask & 1)")
        e("\tst X+, r4")
    e("\tdec r22")
    e("\tbrne 2b")
    e("\tret")
    e("\t.size fe25519_absdiff, . - fe25519_absdiff")


def emit_sqr_int(e, looped=False):
    """fe25519_sqr_int (see the module's docstring)."""
    e("\t.type fe25519_sqr_int, @function")
    e("fe25519_sqr_int:")
    e("\tpush r24")
    e("\tpush r25\t; r")
    e("\tmovw r30, r22\t; Z = a")
    e("\tmovw r26, r28\t; X = the frame")
    e("\trcall fe25519_sqr128\t; L = aL^2 -> Y+0")
    e("\trcall fe25519_sqr128\t; H = aH^2 -> Y+32")
    e("\tsbiw r30, 32")
    if looped:
        # |aL - aH| into the M slot (X = Y + 64), then into r3..r18.
        e("\tpush r26")
        e("\tpush r27")
        e("\trcall fe25519_absdiff")
        e("\tpop r27")
        e("\tpop r26")
        e("\tmovw r30, r26")
        for r in SQ_A:
            e(f"\tld {r}, Z+")
    else:
        # |aL - aH| into r3..r18.
        for r in SQ_A:
            e(f"\tld {r}, Z+")
        for i, r in enumerate(SQ_A):
            e("\tld r20, Z+")
            e(f"\t{'sub' if i == 0 else 'sbc'} {r}, r20")
        e("\tsbc r20, r20\t\t; 0xFF on a borrow")
        conditional_negate(e, SQ_A, "r20")
    e("\trcall fe25519_sqr128_regs\t; M = (aL - aH)^2 -> Y+64")
    e("\tpop r25")
    e("\tpop r24")
    e("\tldi r23, 0xFF\t; M is subtracted")
    e("\trjmp fe25519_combine\t; (its ret returns)")
    e("\t.size fe25519_sqr_int, . - fe25519_sqr_int")
