#!/usr/bin/env python3
"""Generates keccak_f1600.S, the AVR Keccak-f[1600] permutation.

The Keccak constants (rotation offsets, the pi permutation, round constants)
come from FIPS 202 §3.2; this script turns them into straight-line AVR code
so no table is typed by hand. With `--compact` it prints
keccak_f1600_compact.S instead, the looped sibling (`keccak_compact_gen.py`). Run it after editing; `cargo xtask ci` checks
that the committed .S is what this script prints.
"""

ROT = [[0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61], [28, 55, 25, 21, 56], [27, 20, 39, 8, 14]]


def rc_constants():
    """Round constants by the LFSR of FIPS 202 Algorithm 5 (rc) and 6."""
    def rc(t):
        if t % 255 == 0:
            return 1
        r = [1, 0, 0, 0, 0, 0, 0, 0]
        for _ in range(1, t % 255 + 1):
            r = [0] + r
            r[0] ^= r[8]
            r[4] ^= r[8]
            r[5] ^= r[8]
            r[6] ^= r[8]
            r = r[:8]
        return r[0]
    out = []
    for ir in range(24):
        c = 0
        for j in range(7):
            if rc(j + 7 * ir):
                c |= 1 << ((1 << j) - 1)
        out.append(c)
    return out


def pi(i):
    x, y = i % 5, i // 5
    return y + 5 * ((2 * x + 3 * y) % 5)


# Lane complementing (Bertoni et al., "Keccak implementation overview"
# §2.2): the state is kept with the lanes of COMPLEMENTED inverted, all
# through the rounds, so chi can use a ^ (b & c) or a ^ (b | c) in most
# places instead of a ^ (~b & c). theta, rho, pi and iota are linear, so
# the pattern just moves through them (`chi_inputs_complemented`); chi
# turns it back into COMPLEMENTED. This set (x, y) was found by an
# exhaustive search over all sets of up to six lanes: it leaves 6 of chi's
# 25 outputs a round needing a NOT (checked below), against 25 without the
# transform (5 once `shared_inversions` lets two uses share one); the
# permutation inverts the six lanes on entry and on exit.
COMPLEMENTED = {(1, 0), (2, 1), (3, 1), (4, 2), (2, 3), (2, 4)}


def chi_inputs_complemented():
    """Which lanes (x, y) enter chi inverted: COMPLEMENTED after theta (a
    column whose neighbours hold an odd and an even number of inverted
    lanes gets D inverted, so all its lanes flip), rho (rotation keeps an
    all-ones mask) and pi ((x, y) → (y, 2x + 3y))."""
    odd = [sum(1 for (x, _) in COMPLEMENTED if x == col) % 2 for col in range(5)]
    flip = [odd[(x - 1) % 5] ^ odd[(x + 1) % 5] for x in range(5)]
    after_theta = {(x, y) for x in range(5) for y in range(5) if ((x, y) in COMPLEMENTED) ^ flip[x]}
    return {(y, (2 * x + 3 * y) % 5) for (x, y) in after_theta}


def chi_form(x, y, inverted):
    """How chi's output (x, y) = a ^ (~b & c) (a, b, c: lanes x, x+1, x+2
    of row y) is computed from the stored, possibly inverted, a, b, c so
    that it is stored inverted iff (x, y) ∈ COMPLEMENTED: (first, invert
    first, op, second, invert after) for t = first; [com t]; op t, second;
    [com t]; t ^= a. With A, B, C the stored values and p the inversions,
    the stored output is A ^ f(B, C), f = p_a ^ p_out ^ (b̄ & c)."""
    pa, pb, pc = ((((x + i) % 5, y) in inverted) for i in range(3))
    g_is_not = pa != ((x, y) in COMPLEMENTED)  # f = ~g
    # g = (pb ? B : ~B) & (pc ? ~C : C)
    if pb and not pc:
        return ("b", False, "and", "c", g_is_not)  # B & C, or ~(B & C)
    if not pb and pc:
        return ("b", False, "or", "c", not g_is_not)  # ~(B | C), or B | C
    if not pb and not pc:  # ~B & C, or B | ~C
        return ("c", True, "or", "b", False) if g_is_not else ("b", True, "and", "c", False)
    # pb and pc: B & ~C, or ~B | C
    return ("b", True, "or", "c", False) if g_is_not else ("c", True, "and", "b", False)


def chi_model(form, a, b, c):
    """A byte of chi_form's output for stored bytes a, b, c."""
    first, inv_first, op, second, inv_after = form
    v = {"b": b, "c": c}
    t = v[first] ^ (0xFF if inv_first else 0)
    t = t & v[second] if op == "and" else t | v[second]
    return (t ^ (0xFF if inv_after else 0)) ^ a


_INVERTED = chi_inputs_complemented()
for _y in range(5):
    for _x in range(5):
        _form = chi_form(_x, _y, _INVERTED)
        _p = [0xFF if (((_x + i) % 5, _y) in _INVERTED) else 0 for i in range(3)]
        _po = 0xFF if (_x, _y) in COMPLEMENTED else 0
        for _a, _b, _c in [(0x0F, 0x33, 0x55), (0xF0, 0xCC, 0xAA)]:
            assert chi_model(_form, _a ^ _p[0], _b ^ _p[1], _c ^ _p[2]) == (_a ^ (~_b & _c) ^ _po) & 0xFF
assert sum(_f[1] + _f[4] for _f in (chi_form(x, y, _INVERTED) for x in range(5) for y in range(5))) == 6

def shared_inversions(forms):
    """A row's chi forms with NOTs shared: where every remaining use of a
    lane (from some output k on, at least two uses) wants it inverted (as
    an inverted first operand, or as a with the output inverted after:
    ~f ^ a = f ^ ~a), the lane's register is inverted once, in place, before
    output k, and those uses drop their own NOT. Returns the new forms and,
    per output, the lanes to invert before it."""
    forms = [list(f) for f in forms]
    before = {k: [] for k in range(5)}
    for lane in range(5):
        uses = []  # (output, which flag of its form would go)
        for j in range(5):
            first, inv_first, _, _, inv_after = forms[j]
            if lane == j:
                uses.append((j, 4, inv_after))
            elif lane == (j + 1) % 5:
                uses.append((j, 1, inv_first) if first == "b" else (j, None, False))
            elif lane == (j + 2) % 5:
                uses.append((j, 1, inv_first) if first == "c" else (j, None, False))
        for k in range(5):
            rest = [u for u in uses if u[0] >= k]
            if len(rest) >= 2 and all(wants for _, _, wants in rest):
                before[k].append(lane)
                for j, flag, _ in rest:
                    forms[j][flag] = False
                break
    return forms, before


for _y in range(5):  # the shared forms compute the same outputs
    _forms, _before = shared_inversions([chi_form(x, _y, _INVERTED) for x in range(5)])
    for _vals in [(0x0F, 0x33, 0x55, 0x0F, 0x33), (0xF0, 0xCC, 0xAA, 0x3C, 0x96)]:
        _regs = list(_vals)
        for _x in range(5):
            for _lane in _before[_x]:
                _regs[_lane] ^= 0xFF
            _want = chi_model(chi_form(_x, _y, _INVERTED), _vals[_x], _vals[(_x + 1) % 5], _vals[(_x + 2) % 5])
            assert chi_model(_forms[_x], _regs[_x], _regs[(_x + 1) % 5], _regs[(_x + 2) % 5]) == _want

if __import__("sys").argv[1:] == ["--compact"]:
    # keccak_f1600_compact.S, the looped sibling (keccak_compact_gen.py).
    import keccak_compact_gen

    print(keccak_compact_gen.emit(ROT, rc_constants(), pi))
    raise SystemExit(0)

SET = [[f"r{2 + j}" for j in range(8)], [f"r{10 + j}" for j in range(8)]]
out = []
emit = out.append


FRAME = 80  # D[x][j] at Y+8x+j (0..39), C[x][j] at Y+40+8x+j (40..79)


def d_offset(x, j):
    """Offset from Y (= the frame) of byte j of D[x]."""
    return 8 * x + j


def point_z(offset):
    emit("\tmovw r30, r24")
    if offset:
        emit(f"\tsubi r30, lo8(-{offset})")
        emit(f"\tsbci r31, hi8(-{offset})")


def rotate(regs, bits):
    """Rotates the 64-bit value in regs left by bits (1..7) in place; returns the byte rotation it adds."""
    if bits == 0:
        return 0
    if bits <= 4:
        for _ in range(bits):
            emit(f"\tlsl {regs[0]}")
            for r in regs[1:]:
                emit(f"\trol {r}")
            emit(f"\tadc {regs[0]}, r1")
        return 0
    for _ in range(8 - bits):
        emit(f"\tbst {regs[0]}, 0")
        emit(f"\tlsr {regs[7]}")
        for r in reversed(regs[:7]):
            emit(f"\tror {r}")
        emit(f"\tbld {regs[7]}, 7")
    return 1


def complement_lanes():
    """Inverts the lanes of COMPLEMENTED in the state (r24:r25): a byte
    loop per run of adjacent lanes, not straight-line code (which would
    cost Kyber its published code size for 300 cycles a permutation)."""
    lanes = sorted(x + 5 * y for (x, y) in COMPLEMENTED)
    runs = []
    for lane in lanes:
        if runs and runs[-1][1] == lane:
            runs[-1][1] += 1
        else:
            runs.append([lane, lane + 1])
    for start, end in runs:
        point_z(8 * start)
        emit(f"\tldi r19, {8 * (end - start)}")
        emit("7:")
        emit("\tld r0, Z")
        emit("\tcom r0")
        emit("\tst Z+, r0")
        emit("\tdec r19")
        emit("\tbrne 7b")


def z_move_cycles(frm, to):
    """Cycles `move_z` takes from state offset `frm` to `to`."""
    if frm == to:
        return 0
    if to == 0:
        return 1  # movw
    return 2 if frm is not None and abs(to - frm) <= 63 else 3  # adiw/sbiw, or movw + subi + sbci


def move_z(frm, to):
    """Moves Z from state + frm (None: elsewhere) to state + to (r24:r25 = state)."""
    if frm == to:
        return
    if to == 0:
        emit("\tmovw r30, r24")
    elif frm is not None and abs(to - frm) <= 63:
        emit(f"\t{'adiw' if to > frm else 'sbiw'} r30, {abs(to - frm)}")
    else:
        point_z(to)


def z_offsets(lanes, start):
    """Where Z points (offsets from the state) while the lanes are accessed
    in this order, starting from `start`: a lane L is reached by ldd/std
    displacements 8L − z .. 8L − z + 7 ≤ 63, and among the offsets that
    allow, the ones with the fewest cycles of pointer moves (dynamic
    programming over the offsets 0..199), instead of pointing Z at every
    lane anew (3 cycles a lane)."""
    reach = [[z for z in range(200) if 0 <= 8 * lane - z <= 56] for lane in lanes]
    best = [{z: (z_move_cycles(start, z), None) for z in reach[0]}]
    for k in range(1, len(lanes)):
        best.append({
            z: min((c + z_move_cycles(p, z), p) for p, (c, _) in best[k - 1].items())
            for z in reach[k]
        })
    z = min(best[-1], key=lambda z: best[-1][z][0])
    path = [z]
    for k in range(len(lanes) - 1, 0, -1):
        z = best[k][z][1]
        path.append(z)
    return path[::-1]


def load_lane_xor_d(regs, lane, x, z):
    for j, r in enumerate(regs):
        emit(f"\tldd {r}, Z+{8 * lane - z + j}")
        emit(f"\tldd r0, Y+{d_offset(x, j)}")
        emit(f"\teor {r}, r0")


def store_lane(regs, byte_rot, lane, z):
    for j, r in enumerate(regs):
        emit(f"\tstd Z+{8 * lane - z + (j + byte_rot) % 8}, {r}")


emit("""/* Keccak-f[1600] for AVR (classic AVRe/AVRe+ and AVRxt cores).
 * GENERATED by asm-avr/gen_keccak.py from the FIPS 202 constants: do not edit.
 *
 * void keccak_f1600_avr(uint64_t state[25]);   state in r24:r25 (avr-gcc ABI)
 *
 * An 80-byte stack frame holds theta's column parities C and its D words.
 * C is computed from the state once; after that chi, which runs a byte
 * column (all five rows) at a time, xors every output byte into C as it
 * stores it, and iota into C[0] too: theta never reads the state again.
 * theta's D words come from a chain that loads each C once (kept plain for
 * one D, rotated for another). rho and pi run in place along pi's single
 * 24-cycle with two 8-byte register sets, applying D as each lane is
 * loaded, with Z moved only where the ldd/std displacements (0..63) cannot
 * reach the next lane; lane 0, which rho and pi leave alone, gets D[0] as
 * chi loads it. iota xors the non-zero
 * bytes (0, 1, 3, 7) of the round constant from flash. Six lanes are kept
 * inverted through the rounds (lane complementing: chi then needs 5 NOTs a
 * round instead of 25) and inverted back on exit. Every path is
 * straight-line or counts a public loop: the cycle count does not depend on
 * the state.
 * Clobbers r0, r18-r27, r30, r31; preserves r2-r17, r28, r29; r1 = 0 on return.
 */
\t.section .progmem.data, "a", @progbits
keccak_rc_bytes:""")
for c in rc_constants():
    bs = [(c >> (8 * j)) & 0xFF for j in (0, 1, 3, 7)]
    assert all(((c >> (8 * j)) & 0xFF) == 0 for j in (2, 4, 5, 6))
    emit("\t.byte " + ", ".join(f"0x{b:02x}" for b in bs))
emit("""
\t.text
\t.global keccak_f1600_avr
\t.type keccak_f1600_avr, @function
keccak_f1600_avr:""")
saved = [f"r{i}" for i in range(2, 18)] + ["r28", "r29"]
for r in saved:
    emit(f"\tpush {r}")
emit("\t; the frame: SP -= 80 with interrupts held off; Y = frame")
emit("\tin r28, 0x3d")
emit("\tin r29, 0x3e")
emit(f"\tsubi r28, lo8({FRAME})")
emit(f"\tsbci r29, hi8({FRAME})")
emit("\tin r0, 0x3f")
emit("\tcli")
emit("\tout 0x3e, r29")
emit("\tout 0x3f, r0")
emit("\tout 0x3d, r28")
emit("\tadiw r28, 1")
emit("\t; invert the lanes of COMPLEMENTED (lane complementing)")
complement_lanes()
emit("\t; C[x] = xor of column x, for x = 0..4 (once; chi keeps it after that)")
emit("\tmovw r30, r24\t\t; Z = lane (x, 0)")
emit("\tmovw r26, r28")
emit("\tadiw r26, 40\t\t; X = C[x]")
emit("\tldi r19, 5")
emit("5:")
for j, r in enumerate(SET[0]):
    emit(f"\tldd {r}, Z+{j}")
    emit(f"\tldd r0, Z+{40 + j}")
    emit(f"\teor {r}, r0")
emit("\tmovw r20, r30")
emit("\tsubi r30, lo8(-80)")
emit("\tsbci r31, hi8(-80)\t; rows 2 and 3")
for j, r in enumerate(SET[0]):
    emit(f"\tldd r0, Z+{j}")
    emit(f"\teor {r}, r0")
    emit(f"\tldd r0, Z+{40 + j}")
    emit(f"\teor {r}, r0")
emit("\tsubi r30, lo8(-80)")
emit("\tsbci r31, hi8(-80)\t; row 4")
for j, r in enumerate(SET[0]):
    emit(f"\tldd r0, Z+{j}")
    emit(f"\teor {r}, r0")
    emit(f"\tst X+, {r}")
emit("\tmovw r30, r20")
emit("\tadiw r30, 8\t\t; next column")
emit("\tdec r19")
emit("\tbreq 6f")
emit("\trjmp 5b")
emit("6:")
emit("\tclr r18\t\t; round index")
emit("1:\t\t\t\t; round loop")
emit("\t; theta: D[x] = C[x-1] ^ rol(C[x+1], 1) into the frame (Z = C), along")
emit("\t; the chain C1, C3, C0, C2, C4: each C is loaded once, kept plain for")
emit("\t; the next D and rotated for this one; rol(C1) waits in D[0]'s slot")
emit("\tmovw r30, r28")
emit("\tadiw r30, 40")
# Three register sets: the loaded C (rotated in place), its plain copy, and
# the previous C's plain copy. The third set is not made of aligned pairs
# everywhere (r19, r0), so copies into it use mov where movw cannot.
THETA_SETS = [SET[0], SET[1], ["r20", "r21", "r22", "r23", "r26", "r27", "r19", "r0"]]


def copy_set(dst, src):
    j = 0
    while j < 8:
        d, s_ = int(dst[j][1:]), int(src[j][1:])
        if j < 7 and d % 2 == 0 and s_ % 2 == 0 and int(dst[j + 1][1:]) == d + 1 and int(src[j + 1][1:]) == s_ + 1:
            emit(f"\tmovw {dst[j]}, {src[j]}")
            j += 2
        else:
            emit(f"\tmov {dst[j]}, {src[j]}")
            j += 1


chain = [1, 3, 0, 2, 4]  # c[i - 1] ^ rol(c[i]) = D[c[i] - 1]
assert all((chain[i - 1] - chain[i]) % 5 == 3 for i in range(5))  # c[i-1] = C[x-1]
loaded, plain, previous = THETA_SETS[0], THETA_SETS[1], None
for i, cx in enumerate(chain):
    for j, r in enumerate(loaded):
        emit(f"\tldd {r}, Z+{8 * cx + j}")
    copy_set(plain, loaded)
    rotate(loaded, 1)
    x = (cx - 1) % 5  # the D this rotation is for
    if previous is None:
        for j, r in enumerate(loaded):
            emit(f"\tstd Y+{d_offset(x, j)}, {r}\t; rol(C[1]) for D[0]")
    else:
        for j, r in enumerate(loaded):
            emit(f"\teor {r}, {previous[j]}")
            emit(f"\tstd Y+{d_offset(x, j)}, {r}")
    previous, plain = plain, (previous if previous is not None else THETA_SETS[2])
for j, r in enumerate(previous):  # D[0] = C[4] ^ rol(C[1])
    emit(f"\tldd {loaded[0]}, Y+{d_offset(0, j)}")
    emit(f"\teor {r}, {loaded[0]}")
    emit(f"\tstd Y+{d_offset(0, j)}, {r}")
emit("\t; theta, rho and pi on lanes 1..24, following pi's cycle (lane 0, which")
emit("\t; rho and pi leave alone, gets D[0] in chi, as chi loads it)")
cycle = [1]
while pi(cycle[-1]) != 1:
    cycle.append(pi(cycle[-1]))
assert len(cycle) == 24


def rot_of(lane):
    return ROT[lane % 5][lane // 5]


# Lane k of the cycle is loaded, and lane k − 1's value stored in its place,
# with Z at zs[k]; the last value goes to lane cycle[0] (zs[24]). Z points
# into the frame here (None: not into the state).
zs = z_offsets(cycle + [cycle[0]], None)
cur = 0
move_z(None, zs[0])
load_lane_xor_d(SET[cur], cycle[0], cycle[0] % 5, zs[0])
pending = (rot_of(cycle[0]) >> 3) + rotate(SET[cur], rot_of(cycle[0]) & 7)
for k, lane in enumerate(cycle[1:], start=1):
    nxt = 1 - cur
    emit(f"\t; lane {lane}")
    move_z(zs[k - 1], zs[k])
    load_lane_xor_d(SET[nxt], lane, lane % 5, zs[k])
    store_lane(SET[cur], pending, lane, zs[k])
    pending = (rot_of(lane) >> 3) + rotate(SET[nxt], rot_of(lane) & 7)
    cur = nxt
move_z(zs[23], zs[24])
store_lane(SET[cur], pending, cycle[0], zs[24])
emit("\t; chi, a byte column (five rows) at a time; C[x][j] = xor of the")
emit("\t; column's outputs, kept in r2..r6 and stored at Y+40+8x+j")
emit("\tmovw r30, r24\t\t; Z = byte j of row 0")
emit("\tmovw r26, r28\t\t; X walks D[0] (Y walks C)")
emit("\tadiw r28, 40")
emit("\tldi r19, 8")
emit("\tmov r7, r19")
emit("2:")
a = ["r19", "r20", "r21", "r22", "r23"]
c = ["r2", "r3", "r4", "r5", "r6"]
for y in range(5):
    for x in range(5):
        emit(f"\tldd {a[x]}, Z+{8 * x}")
        if (x, y) == (0, 0):
            emit("\tld r0, X+\t\t; theta on lane 0")
            emit(f"\teor {a[x]}, r0")
    forms, before = shared_inversions([chi_form(x, y, _INVERTED) for x in range(5)])
    for x in range(5):
        for inverted in before[x]:
            emit(f"\tcom {a[inverted]}\t\t; for all its remaining uses")
        first, inv_first, op, second, inv_after = forms[x]
        lane = {"b": a[(x + 1) % 5], "c": a[(x + 2) % 5]}
        # a[0] and a[1] are last read by the row's last output, which can
        # therefore work in its first operand's register: no copy.
        t = "r0" if x < 4 else lane[first]
        if x < 4:
            emit(f"\tmov r0, {lane[first]}")
        if inv_first:
            emit(f"\tcom {t}")
        emit(f"\t{op} {t}, {lane[second]}")
        if inv_after:
            emit(f"\tcom {t}")
        emit(f"\teor {t}, {a[x]}")
        emit(f"\tstd Z+{8 * x}, {t}")
        if y == 0:
            emit(f"\tmov {c[x]}, {t}")
        else:
            emit(f"\teor {c[x]}, {t}")
    if y < 4:
        emit("\tadiw r30, 40\t\t; next row")
for x in range(5):
    emit(f"\tstd Y+{8 * x}, {c[x]}")
emit("\tsubi r30, lo8(159)")
emit("\tsbci r31, hi8(159)\t; byte j + 1 of row 0")
emit("\tadiw r28, 1")
emit("\tdec r7")
emit("\tbreq 4f")
emit("\trjmp 2b\t\t; the column body is beyond brne's reach")
emit("4:")
emit("\tsbiw r28, 48\t\t; Y = the frame again")
emit("\t; iota: bytes 0, 1, 3, 7 of the round constant, into lane 0 and C[0]")
emit("\tldi r30, lo8(keccak_rc_bytes)")
emit("\tldi r31, hi8(keccak_rc_bytes)")
emit("\tmov r0, r18")
emit("\tlsl r0")
emit("\tlsl r0")
emit("\tadd r30, r0")
emit("\tadc r31, r1")
rc = ["r20", "r21", "r22", "r23"]
for r in rc:
    emit(f"\tlpm {r}, Z+")
emit("\tmovw r30, r24")
for j, r in zip((0, 1, 3, 7), rc):
    emit(f"\tldd r19, Z+{j}")
    emit(f"\teor r19, {r}")
    emit(f"\tstd Z+{j}, r19")
    emit(f"\tldd r19, Y+{40 + j}")
    emit(f"\teor r19, {r}")
    emit(f"\tstd Y+{40 + j}, r19")
emit("\tinc r18")
emit("\tcpi r18, 24")
emit("\tbreq 3f")
emit("\tjmp 1b\t\t; the round body is beyond rjmp's reach")
emit("3:")
emit("\t; invert the lanes of COMPLEMENTED back")
complement_lanes()
emit("\t; drop the frame: SP += 80 with interrupts held off")
emit(f"\tsubi r28, lo8(-{FRAME - 1})")
emit(f"\tsbci r29, hi8(-{FRAME - 1})")
emit("\tin r0, 0x3f")
emit("\tcli")
emit("\tout 0x3e, r29")
emit("\tout 0x3f, r0")
emit("\tout 0x3d, r28")
for r in reversed(saved):
    emit(f"\tpop {r}")
emit("\tclr r1")
emit("\tret")
emit("\t.size keccak_f1600_avr, .-keccak_f1600_avr")
print("\n".join(out))
