"""Emits fe25519_ladder_step for gen_fe25519.py: one Montgomery-ladder step
of X25519 (RFC 7748 section 5), the conditional swap included,

    void fe25519_ladder_step(uint8_t ws[433], uint8_t swap, uint8_t small);

on the workspace of `crates/x25519-avr` (`Workspace`, repr(C)): slots
S0..S3 = x2, z2, x3, z3 at 0, 32, 64, 96; temporaries T0..T3 at 128..255;
x1 at 256; the multiplications' scratch frame at 288 (128 bytes); x1's
|x1L - x1H| and its borrow mask at 416 (17 bytes, precomputed: the
unrolled file's z3 product skips that half of its set-up). The same
operations in the same slots as `ladder_step_portable`, hence its bytes:

    S0..S3 <- A, B, C, D     (swap, x2 + z2, x2 - z2, x3 + z3, x3 - z3)
    T0, T1, T2, T3 <- DA, CB, AA, BB
    S0, S1 <- DA + CB, DA - CB
    S2 <- S0^2 (x3);  S3 <- x1 S1^2 (z3)
    T0 <- E = AA - BB;  T1 <- AA + a24 E
    S0 <- AA BB (x2);  S1 <- E T1 (z2)

One call saves the callee-saved registers once and runs the internal
multiplication and squaring (`fe25519_mul_gen.py`) with Y on the scratch
frame, no frame of their own. The first pass swaps x2, x3 and z2, z3 under
the mask -swap in registers while it makes A, B, C, D in place, four bytes
of each at a time (their four carries kept in registers between the
groups); DA + CB and DA - CB are one pass too; AA + a24 E is one pass
(a24 = 121665 = 0x01DB41: two byte products and an addition a byte, plus
AA) with the small-constant product's fold. Each sum and difference then
folds its carry (38 per 2^256, twice) exactly as `Fe::add`/`Fe::sub`.
`small` (public: the base point's 9) makes z3 the small-constant product
x1[0..3] S1^2. No data-dependent branch or address.
"""

from fe25519_mul_gen import MUL_FRAME, next_byte, times38

S = [0, 32, 64, 96]
T = [128, 160, 192, 224]
X1 = 256
SCRATCH = 288
WS = SCRATCH + MUL_FRAME + 17  # 433: x1's |x1L - x1H| and mask last

SAVED = [f"r{i}" for i in range(2, 18)] + ["r28", "r29"]


def set_ptr(e, reg_lo, base_lo, delta):
    """reg = base + delta (register pairs by their low register)."""
    hi = f"r{int(reg_lo[1:]) + 1}"
    base_hi = f"r{int(base_lo[1:]) + 1}"
    if reg_lo != base_lo:
        e(f"\tmovw {reg_lo}, {base_lo}")
    if delta:
        e(f"\tsubi {reg_lo}, lo8({-delta})")
        e(f"\tsbci {hi}, hi8({-delta})")
    del base_hi


def fold(e, ptr, carry, sub, zero, c38):
    """The 32 bytes at `ptr` (Y or Z, by displacement) plus 38 * carry (0
    or 1; minus for `sub`), then once more for the carry (borrow) of that,
    which can only touch byte 0: `fold_wide` / `Fe::sub`'s second fold."""
    op, opc = ("sub", "sbc") if sub else ("add", "adc")
    e(f"\tmul {carry}, {c38}")
    for j in range(32):
        e(f"\tldd {carry}, {ptr}+{j}")
        e(f"\t{op if j == 0 else opc} {carry}, {'r0' if j == 0 else zero}")
        e(f"\tstd {ptr}+{j}, {carry}")
    e(f"\tclr {carry}")
    e(f"\tadc {carry}, {zero}\t; the second carry (borrow)")
    e(f"\tmul {carry}, {c38}")
    e(f"\tldd {carry}, {ptr}+0")
    e(f"\t{op} {carry}, r0")
    e(f"\tstd {ptr}+0, {carry}")


def folds(e, items, looped):
    """The folds of a pass's sums and differences: `items` = (pointer (Y or
    Z), carry register, is a difference), in memory order, each 32 bytes
    after the previous on the same pointer (which is left on the last)."""
    if looped:
        # The carries out of the way of the fold routines' registers.
        moved = ["r20", "r21", "r22", "r23"]
        for (_, carry, _), m in zip(items, moved):
            e(f"\tmov {m}, {carry}")
    else:
        e("\tclr r27")
        e("\tldi r24, 38")
    for n, (ptr, carry, is_sub) in enumerate(items):
        if n and items[n - 1][0] == ptr:
            e(f"\tadiw {'r28' if ptr == 'Y' else 'r30'}, 32")
        if looped:
            e(f"\tmovw r26, {'r28' if ptr == 'Y' else 'r30'}")
            e(f"\tmov r18, {moved[n]}")
            e(f"\trcall fe25519_fold_{'sub' if is_sub else 'add'}")
        else:
            fold(e, ptr, carry, is_sub, "r27", "r24")


def emit_fold_routines(e):
    """fe25519_fold_add / fe25519_fold_sub (the compact file's folds): the
    32 bytes at X plus (minus) 38 * r18 (0 or 1), then once more for the
    carry (borrow) of that, at byte 0. Clobber r0, r1, r18, r19, r24; X is
    left on the bytes."""
    for name, op, opc in (("fe25519_fold_add", "add", "adc"), ("fe25519_fold_sub", "sub", "sbc")):
        e(f"\t.type {name}, @function")
        e(f"{name}:")
        e("\tldi r19, 38")
        e("\tmul r18, r19")
        e("\tclr r18")
        e("\tld r19, X")
        e(f"\t{op} r19, r0")
        e("\tst X+, r19")
        e("\tld r19, X")
        e(f"\t{opc} r19, r18")
        e("\tst X+, r19")
        e("\tldi r24, 10")
        e("1:")
        for _ in range(3):
            e("\tld r19, X")
            e(f"\t{opc} r19, r18")
            e("\tst X+, r19")
        e("\tdec r24")
        e("\tbrne 1b")
        e("\tadc r18, r18\t; the second carry (borrow)")
        e("\tldi r19, 38")
        e("\tmul r18, r19")
        e("\tsbiw r26, 32")
        e("\tld r19, X")
        e(f"\t{op} r19, r0")
        e("\tst X, r19")
        e("\tret")
        e(f"\t.size {name}, . - {name}")


def sum_and_difference(e, x, y, cp, carries, first, sum_at, difference_at):
    """Four bytes of x + y (into cp, a copy of x: cp[0], cp[2] even) and of
    x - y (into x), each chain's carry kept in its register of `carries`
    between groups (`first`: no carry in yet); stored at `sum_at(i)` and
    `difference_at(i)`."""
    e(f"\tmovw {cp[0]}, {x[0]}")
    e(f"\tmovw {cp[2]}, {x[2]}")
    for dst, is_sub, carry, at in ((cp, False, carries[0], sum_at), (x, True, carries[1], difference_at)):
        if not first:
            e(f"\tlsr {carry}\t\t; C = the carry so far")
        op, opc = ("sub", "sbc") if is_sub else ("add", "adc")
        for i in range(4):
            e(f"\t{op if (i == 0 and first) else opc} {dst[i]}, {y[i]}")
        e(f"\trol {carry}")
        for i in range(4):
            e(f"\tstd {at(i)}, {dst[i]}")


def swap_addsub4(e, looped=False):
    """S0..S3 <- A, B, C, D after the swap, in place: Y = S0 (S0, S1 by
    displacement), Z = S2 (S2, S3); mask in r24 (0 or 0xFF). Leaves Y = S1,
    Z = S3. `looped`: one group's code run eight times (Y, Z moving)."""
    x2, z2, x3, z3 = ([f"r{i}" for i in range(b, b + 4)] for b in (4, 8, 12, 16))
    cp = ["r20", "r21", "r22", "r23"]
    ca, cb, cc, cd = "r2", "r3", "r25", "r26"
    for c in (ca, cb, cc, cd):
        e(f"\tclr {c}")
    if looped:
        e("\tldi r27, 8")
        e("1:")
    for k in range(1 if looped else 8):
        j0 = 4 * k
        k = 1 if looped else k  # looped: every group adds with the carry so far (0 at first)
        e(f"\t; bytes {j0}..{j0 + 3}")
        for i in range(4):
            e(f"\tldd {x2[i]}, Y+{S[0] + j0 + i}")
            e(f"\tldd {z2[i]}, Y+{S[1] + j0 + i}")
            e(f"\tldd {x3[i]}, Z+{j0 + i}")
            e(f"\tldd {z3[i]}, Z+{32 + j0 + i}")
        for p, q in ((x2, x3), (z2, z3)):
            for i in range(4):
                e(f"\tmov r0, {p[i]}")
                e(f"\teor r0, {q[i]}")
                e("\tand r0, r24")
                e(f"\teor {p[i]}, r0")
                e(f"\teor {q[i]}, r0")

        sum_and_difference(e, x2, z2, cp, (ca, cb), k == 0, lambda i: f"Y+{S[0] + j0 + i}", lambda i: f"Y+{S[1] + j0 + i}")
        sum_and_difference(e, x3, z3, cp, (cc, cd), k == 0, lambda i: f"Z+{j0 + i}", lambda i: f"Z+{32 + j0 + i}")
    if looped:
        e("\tadiw r28, 4")
        e("\tadiw r30, 4")
        e("\tdec r27")
        e("\tbreq 2f")
        e("\trjmp 1b")
        e("2:")
        e("\tsbiw r28, 32")
        e("\tsbiw r30, 32")
    folds(e, [("Y", ca, False), ("Y", cb, True), ("Z", cc, False), ("Z", cd, True)], looped)


def addsub2(e, looped=False):
    """S0, S1 <- T0 + T1, T0 - T1: Y = T0 (T0, T1 by displacement), Z = S0
    (S0, S1). Leaves Y = T0, Z = S1."""
    a, b = [f"r{i}" for i in range(4, 8)], [f"r{i}" for i in range(8, 12)]
    cp = ["r20", "r21", "r22", "r23"]
    cs, cd = "r2", "r3"
    e(f"\tclr {cs}")
    e(f"\tclr {cd}")
    if looped:
        e("\tldi r27, 8")
        e("1:")
    for k in range(1 if looped else 8):
        j0 = 4 * k
        k = 1 if looped else k
        for i in range(4):
            e(f"\tldd {a[i]}, Y+{j0 + i}")
            e(f"\tldd {b[i]}, Y+{32 + j0 + i}")
        sum_and_difference(e, a, b, cp, (cs, cd), k == 0, lambda i: f"Z+{j0 + i}", lambda i: f"Z+{32 + j0 + i}")
    if looped:
        e("\tadiw r28, 4")
        e("\tadiw r30, 4")
        e("\tdec r27")
        e("\tbrne 1b")
        e("\tsbiw r28, 32")
        e("\tsbiw r30, 32")
    folds(e, [("Z", cs, False), ("Z", cd, True)], looped)


def sub1(e, looped=False):
    """T0 <- T2 - T3: Y = T2 (T2, T3 by displacement), Z = T0. Leaves Y,
    Z."""
    e("\tclr r3")
    if looped:
        e("\tldi r27, 32")
        e("\tclc")
        e("1:")
        e("\tldd r5, Y+32")
        e("\tld r4, Y+")
        e("\tsbc r4, r5")
        e("\tst Z+, r4\t; E")
        e("\tdec r27")
        e("\tbrne 1b")
        e("\trol r3")
        e("\tsbiw r28, 32")
        e("\tsbiw r30, 32")
    else:
        for j in range(32):
            e(f"\tldd r4, Y+{j}")
            e(f"\tldd r5, Y+{32 + j}")
            e(f"\t{'sub' if j == 0 else 'sbc'} r4, r5")
            e(f"\tstd Z+{j}, r4\t; E")
        e("\trol r3")
    folds(e, [("Z", "r3", True)], looped)


def mul_a24_add(e, looped=False):
    """T1 <- T2 + a24 T0, a24 = 0x01DB41: Y = T0 (T0, T1 by displacement),
    Z = T2. A 32-bit running sum (r20..r23, renamed per byte; moved down a
    byte when looped); per byte of E: E * 0x41 at the byte, E * 0xDB one up,
    E itself two up, and AA's byte; then the small-constant product's fold
    of 38 * the carry (below 2^18, so 38 times it is below 2^24 and the
    second pass covers bytes 0..3). Leaves Y, Z."""
    acc = ["r20", "r21", "r22", "r23"]
    zero, c41, cdb = "r2", "r16", "r17"
    e(f"\tclr {zero}")
    e(f"\tldi {c41}, 0x41")
    e(f"\tldi {cdb}, 0xDB")
    for r in acc:
        e(f"\tclr {r}")
    if looped:
        e("\tldi r27, 32")
        e("1:")
    for j in range(1 if looped else 32):
        e(f"\tldd r4, Y+{j}\t; E")
        e(f"\tmul r4, {c41}")
        e(f"\tadd {acc[0]}, r0")
        e(f"\tadc {acc[1]}, r1")
        e(f"\tadc {acc[2]}, {zero}")
        e(f"\tadc {acc[3]}, {zero}")
        e(f"\tmul r4, {cdb}")
        e(f"\tadd {acc[1]}, r0")
        e(f"\tadc {acc[2]}, r1")
        e(f"\tadc {acc[3]}, {zero}")
        e(f"\tadd {acc[2]}, r4")
        e(f"\tadc {acc[3]}, {zero}")
        e(f"\tldd r4, Z+{j}\t; AA")
        e(f"\tadd {acc[0]}, r4")
        e(f"\tadc {acc[1]}, {zero}")
        e(f"\tadc {acc[2]}, {zero}")
        e(f"\tadc {acc[3]}, {zero}")
        e(f"\tstd Y+{32 + j}, {acc[0]}")
        if looped:
            e("\tadiw r28, 1")
            e("\tadiw r30, 1")
        acc = next_byte(e, acc, looped, "r27")
        if looped:
            e("\tsbiw r28, 32")
            e("\tsbiw r30, 32")
    # 38 * carry (carry = acc[0..3], below 2^18) into r4..r7, added over T1.
    e("\tldi r24, 38")
    times38(e, acc, ["r4", "r5", "r6", "r7"], "r24", zero)
    if looped:
        # (X set first: adiw would clear the carry.)
        e("\tmovw r26, r28")
        e("\tadiw r26, 32")
        for j in range(4):
            e("\tld r8, X")
            e(f"\t{'add' if j == 0 else 'adc'} r8, r{4 + j}")
            e("\tst X+, r8")
        e("\tldi r25, 28")
        e("2:")
        e("\tld r8, X")
        e(f"\tadc r8, {zero}")
        e("\tst X+, r8")
        e("\tdec r25")
        e("\tbrne 2b")
    else:
        for j in range(32):
            e(f"\tldd r8, Y+{32 + j}")
            e(f"\t{'add' if j == 0 else 'adc'} r8, {'r' + str(4 + j) if j < 4 else zero}")
            e(f"\tstd Y+{32 + j}, r8")
    e("\tclr r4")
    e(f"\tadc r4, {zero}\t; the last carry (0 or 1)")
    e("\tmul r4, r24")
    for j in range(4):
        e(f"\tldd r8, Y+{32 + j}")
        e(f"\t{'add r8, r0' if j == 0 else ('adc r8, r1' if j == 1 else 'adc r8, ' + zero)}")
        e(f"\tstd Y+{32 + j}, r8")


def call(e, routine, r, a, b=None):
    """An internal multiplication or squaring, Y on the scratch frame:
    r25:r24 = ws + r, r23:r22 = ws + a (r21:r20 = ws + b)."""
    set_ptr(e, "r24", "r28", r - SCRATCH)
    set_ptr(e, "r22", "r28", a - SCRATCH)
    if b is not None:
        set_ptr(e, "r20", "r28", b - SCRATCH)
    e(f"\tcall {routine}\t; (rcall does not reach in every layout)")


def emit_ladder_step(e, asm, looped=False):
    """`asm`: gen_fe25519's `prologue` and `epilogue`. `looped` (the compact
    file): the passes are loops and the folds two shared routines."""
    prologue, epilogue = asm
    name = "fe25519_ladder_step"
    prologue(name, SAVED)
    e("\tpush r20\t\t; small (public)")
    e("\tmovw r28, r24\t; Y = ws")
    e("\tmov r24, r22")
    e("\tneg r24\t\t; the swap mask")
    set_ptr(e, "r30", "r28", S[2])
    swap_addsub4(e, looped)
    # Y = ws + 32 after the folds; the scratch frame from here on.
    e(f"\tsubi r28, lo8({-(SCRATCH - 32)})")
    e(f"\tsbci r29, hi8({-(SCRATCH - 32)})\t; Y = the scratch frame")
    call(e, "fe25519_mul_int", T[0], S[3], S[0])  # DA
    call(e, "fe25519_mul_int", T[1], S[2], S[1])  # CB
    call(e, "fe25519_sqr_int", T[2], S[0])  # AA
    call(e, "fe25519_sqr_int", T[3], S[1])  # BB
    set_ptr(e, "r30", "r28", S[0] - SCRATCH)
    e(f"\tsubi r28, lo8({SCRATCH - T[0]})")
    e(f"\tsbci r29, hi8({SCRATCH - T[0]})\t; Y = T0")
    addsub2(e, looped)
    e(f"\tsubi r28, lo8({-(SCRATCH - T[0])})")
    e(f"\tsbci r29, hi8({-(SCRATCH - T[0])})\t; Y = the scratch frame")
    call(e, "fe25519_sqr_int", S[2], S[0])  # x3
    call(e, "fe25519_sqr_int", S[3], S[1])
    e("\tpop r20")
    e("\tpush r20")
    e("\ttst r20")
    e("\tbrne 1f")
    call(e, "fe25519_mul_int" if looped else "fe25519_mul_int_x1", S[3], X1, S[3])  # z3 = x1 (DA - CB)^2
    e("\trjmp 2f")
    e("1:")
    set_ptr(e, "r24", "r28", S[3] - SCRATCH)
    set_ptr(e, "r22", "r28", S[3] - SCRATCH)
    set_ptr(e, "r30", "r28", X1 - SCRATCH)
    e("\tld r18, Z+")
    e("\tld r19, Z+")
    e("\tld r20, Z")
    e("\tclr r21")
    e("\tcall fe25519_mul_small_avr\t; z3 = 9 (DA - CB)^2 (the base point)")
    e("2:")
    set_ptr(e, "r30", "r28", T[0] - SCRATCH)
    e(f"\tsubi r28, lo8({SCRATCH - T[2]})")
    e(f"\tsbci r29, hi8({SCRATCH - T[2]})\t; Y = T2")
    sub1(e, looped)
    e(f"\tsubi r28, lo8({T[2] - T[0]})")
    e(f"\tsbci r29, hi8({T[2] - T[0]})\t; Y = T0")
    set_ptr(e, "r30", "r28", T[2] - T[0])
    mul_a24_add(e, looped)
    e(f"\tsubi r28, lo8({-(SCRATCH - T[0])})")
    e(f"\tsbci r29, hi8({-(SCRATCH - T[0])})\t; Y = the scratch frame")
    call(e, "fe25519_mul_int", S[0], T[2], T[3])  # x2 = AA BB
    call(e, "fe25519_mul_int", S[1], T[0], T[1])  # z2 = E (AA + a24 E)
    e("\tpop r20")
    e("\tclr r1")
    epilogue(name, SAVED)
    if looped:
        emit_fold_routines(e)
