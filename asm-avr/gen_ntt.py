#!/usr/bin/env python3
"""Generates ntt_forward.S (`gen_ntt.py`, tables in SRAM) and
ntt_forward_flash.S (`gen_ntt.py flash`, tables in flash): NTTs for AVR in the paper's three arithmetic
variants, one set of routines per ring: NTT-friendly Montgomery (R = 2^16;
q = k·2^8 + 1: the multiplication by q⁻¹ and by q become multiplications by
the small k), plain Montgomery (`_mont` suffix: general 16-bit q⁻¹ and q,
seven byte products per reduction instead of two) and, for q = 769 only
(where its output fits 16 bits), K-RED2X (`_kred2x` suffix: p = C0 + C1·2^8
+ C2·2^16 ↦ k²·C0 − k·C1 + C2 ≡ k²·p, two byte products). Each gives the
same results bit for bit as modarith's portable `Ntt` with
`NttFriendlyMontgomery`, `Montgomery` or `KRed2x`; the two Montgomery
variants read the same twiddle tables, K-RED2X its own (scaled by k⁻²).

    void ntt_fwd_q<q>_n<n>(int16_t a[n], const int16_t zetas[]);

`zetas` is modarith's table for NttFriendlyMontgomery (ζ[k]·2^16 mod q,
centred): the twiddles are never typed here, they come from the Rust const
fn. Inputs |a_i| < q; outputs are the canonical centred residues, exactly as
modarith's portable `Ntt::forward` (the reference it is tested against).

Montgomery product of b and z (|z| ≤ (q-1)/2; |b·z| < q·2^15, which
red_bound checks at every use):
  p = b·z (32-bit); t = p·q⁻¹ mod 2^16 with q⁻¹ = 1 − k·2^8, i.e.
  t_lo = p0, t_hi = p1 − low8(p0·k); result = p_hi16 − (t·q)_hi16, where
  t·q = (t·k)·2^8 + t (the low 16 bits of p and t·q agree by construction).
  t is unsigned where that is cheaper (per routine, `cheaper`; per layer of
  the transforms, `layer_plan` and `inverse_plan`: five cycles a reduction,
  for a result in (p/2^16 − q, p/2^16] instead of around p/2^16).
Partial centring (`partial`, wherever the planners find range control
cheapest; the hard limit is centre()'s domain): the same quotient estimate,
without the compare, into [−q, q).
Final centring: a' = a + (q−1)/2 + c·q ∈ [0, 2^16) (c = span(q)); t = ((a' ≫ 8)·⌊2^16/q⌋) ≫ 8
underestimates a'/q by less than one, so a' − t·q ∈ [0, 2q); one masked
subtraction and the −(q−1)/2 shift give the centred residue (the ranges are
checked exhaustively by this script before it writes anything).
"""

import functools
import sys

RINGS = [(3329, 256, 7), (769, 512, 7), (3329, 512, 7), (7681, 256, 8)]


@functools.lru_cache(maxsize=None)
def span(q):
    """centre() accepts |x| < span(q)·q: the largest c for which the offset
    x + (q−1)/2 + c·q stays in [0, 2^16), |x| fits 16 bits and the
    exhaustive check below passes (42 for q = 769, 9 for 3329, 4 for 7681)."""
    c = min((65535 - (q - 1) // 2) // (2 * q), 32768 // q)
    while not centring_holds(q, c):
        c -= 1
    return c


def centring_holds(q, c, shift=None):
    """centre() with span c is exact on every |x| < c·q (exhaustive): its
    quotient estimate of a' = x + shift + c·q (shift (q−1)/2; partial()
    uses 0) stays a byte product and leaves a' − t·q ∈ [0, 2q)."""
    k, m = (q - 1) >> 8, 65536 // q
    shift = (q - 1) // 2 if shift is None else shift
    for a in range(max(-c * q + 1, -32768), min(c * q, 32768)):
        ap = a + shift + c * q
        if not 0 <= ap < 65536:
            return False
        t = ((ap >> 8) * m) >> 8
        if t * k > 255 or not 0 <= ap - t * q < 2 * q:
            return False
    return True


def check_centring(q):
    assert span(q) >= 2, q


def centre(q, less=0, recip_reg="r5"):
    """r17:r16 − less (|x| < span(q)·q for x = r17:r16 − less) → r23:r22,
    the centred residue; `less` costs nothing (it joins the offset). ⌊2^16/q⌋
    is read from `recip_reg` (r5), or with None loaded into r20 (one cycle).
    Clobbers r0, r1, r16, r17, r20."""
    k, h, m = (q - 1) >> 8, (q - 1) // 2, 65536 // q
    c = span(q)
    scale = ["\tmul r17, r5"] if recip_reg == "r5" else [f"\tldi r20, {m}", "\tmul r17, r20"]
    assert recip_reg in ("r5", None)
    return [f"\tsubi r16, lo8(-{h + c * q - less})", f"\tsbci r17, hi8(-{h + c * q - less})"] + scale + [
            "\tmov r20, r1\t\t; t", "\tmul r20, r21",
            "\tsub r17, r0", "\tsub r16, r20", "\tsbc r17, r2\t\t; a' − t·q ∈ [0, 2q)",
            "\tmovw r22, r16", f"\tsubi r22, lo8({q})", f"\tsbci r23, hi8({q})",
            "\tsbc r16, r16\t\t; all ones if a' − t·q < q", "\tmov r17, r16",
            f"\tandi r16, lo8({q})", f"\tandi r17, hi8({q})", "\tadd r22, r16", "\tadc r23, r17",
            f"\tsubi r22, lo8({h})", f"\tsbci r23, hi8({h})"]


def product():
    """r13:r12:r11:r10 = r17:r16 · r19:r18 (signed), zero in r2. Clobbers r0, r1."""
    return ["\tmuls r17, r19", "\tmovw r12, r0", "\tmul r16, r18", "\tmovw r10, r0",
            "\tmulsu r17, r18", "\tsbc r13, r2", "\tadd r11, r0", "\tadc r12, r1", "\tadc r13, r2",
            "\tmulsu r19, r16", "\tsbc r13, r2", "\tadd r11, r0", "\tadc r12, r1", "\tadc r13, r2"]


def product_acc():
    """r13:r12:r11:r10 += r17:r16 · r19:r18 (signed), zero in r2. Clobbers r0, r1, r20."""
    return ["\tmuls r17, r19", "\tadd r12, r0", "\tadc r13, r1",
            "\tmul r16, r18", "\tadd r10, r0", "\tadc r11, r1", "\tadc r12, r2", "\tadc r13, r2",
            "\tmulsu r17, r18", "\tsbc r20, r20\t\t; sign extension (C = bit 15)",
            "\tadd r11, r0", "\tadc r12, r1", "\tadc r13, r20",
            "\tmulsu r19, r16", "\tsbc r20, r20", "\tadd r11, r0", "\tadc r12, r1", "\tadc r13, r20"]


def mont(q):
    """r13:r12 = mont(r17:r16 · r19:r18) for k in r21, zero in r2. Clobbers r0, r1, r10-r15, r20, r22."""
    return product() + reduce(q)


# The variant being generated: "friendly", "plain" or "kred2x".
VARIANT = "friendly"
# How the NTT-friendly reduction takes t (`cheaper` picks per routine; the
# transforms pick per layer, `layer_plan` and `inverse_plan`):
# - "unsigned": t ∈ [0, 2^16), 12 cycles, result in (p/2^16 − q, p/2^16];
# - "signed": t ∈ [−2^15, 2^15), 17 cycles, result around p/2^16.
T_MODE = "unsigned"
T_COST = {"unsigned": 12, "signed": 17}


def cheaper(make):
    """The routine `make()` generates with the NTT-friendly reduction's t
    taken each way (T_MODE), whichever executes fewer cycles (base
    multiplication and base inversion; the transforms plan per layer):
    unsigned saves five cycles a reduction on signed, but its wider output
    range can make a step centre its values (about 21 cycles a value).
    Every reduction and centring in these routines sits in a block run the
    same number of times, so counting them in the code compares the
    executed counts (a partial centring, `partial`, costs 12). A variant whose ranges
    fail the routine's checks, or that the routine cannot host, is not a
    candidate."""
    global T_MODE
    if VARIANT != "friendly":
        return make()
    best = None
    for mode in T_COST:
        T_MODE = mode
        try:
            code = make()
        except AssertionError:
            continue
        text = "\n".join(code)
        cost = 21 * text.count("a' − t·q ∈ [0, 2q)") + 12 * text.count("y ∈ [0, 2q)") + \
            T_COST[mode] * text.count("mont(b·z)")
        if best is None or cost < best[0]:
            best = (cost, code)
    T_MODE = "unsigned"
    assert best is not None
    return best[1]


def suffix():
    return {"friendly": "", "plain": "_mont", "kred2x": "_kred2x"}[VARIANT]


# Where the routines read their tables (twiddles, γ, the inverse's last
# factors): "sram" (`ld`, ntt_forward.S) or "flash" (`lpm` through Z,
# ntt_forward_flash.S); the same symbols in both files, so a build links one
# (modarith's build.rs picks it). Flash costs one cycle a byte more, plus a
# pointer swap where Z is busy; it saves the tables' SRAM.
TABLES = "sram"


def table_read(regs, ptr, keep_z=None, comment=""):
    """Reads consecutive table bytes into `regs` through `ptr` (X or Z),
    post-incremented. In flash, X's reads go through Z; `keep_z` names a
    free register pair that holds Z meanwhile when Z is in use."""
    op = "ld" if TABLES == "sram" else "lpm"
    via = ptr if TABLES == "sram" else "Z"
    reads = [f"\t{op} {r}, {via}+" for r in regs]
    if comment:
        reads[-1] += f"\t\t; {comment}"
    if TABLES == "sram" or ptr == "Z":
        return reads
    code = ["\tmovw r30, r26"] + reads + ["\tmovw r26, r30"]
    return [f"\tmovw {keep_z}, r30"] + code + [f"\tmovw r30, {keep_z}"] if keep_z else code


def reduce(q):
    """r13:r12 = r13:r12:r11:r10 · 2^-16 mod q (|input| < q·2^15), k in r21, zero in r2
    (K-RED2X: ≡ k²·input, |input| < 2^29).
    Clobbers r0, r1, r14, r15, r20 (signed friendly: also r22; plain: also r16, r17, r22;
    K-RED2X: r0, r1, r22 only)."""
    if VARIANT == "plain":
        return reduce_plain(q)
    if VARIANT == "kred2x":
        return reduce_kred2x(q)
    if T_MODE == "signed":
        return ["\tmul r10, r21\t\t; B = t_lo·k", "\tmov r20, r11", "\tsub r20, r0\t\t; t_hi",
                "\tmovw r14, r0", "\tmulsu r20, r21\t\t; A = t_hi·k",
                "\tadd r15, r0\t\t; c1 = B1 + A0", "\tadc r1, r2\t\t; c2 = A1 + carry",
                "\tmov r22, r20", "\tlsl r22", "\tsbc r22, r22\t\t; sign of t",
                "\tadd r14, r20\t\t; carry out of byte 1 of t·q", "\tadc r15, r22", "\tadc r1, r22",
                "\tsub r12, r15", "\tsbc r13, r1\t\t; mont(b·z)"]
    # t taken unsigned (t ∈ [0, 2^16)): no sign extension, five cycles fewer
    # than a signed t, but the result lies in (p/2^16 − q, p/2^16] rather
    # than around p/2^16 (red_bound accounts for it).
    return ["\tmul r10, r21\t\t; B = t_lo·k", "\tmov r20, r11", "\tsub r20, r0\t\t; t_hi",
            "\tmovw r14, r0", "\tmul r20, r21\t\t; A = t_hi·k",
            "\tadd r14, r20\t\t; byte 1 of t·q: t_hi + B0, its carry", "\tadc r15, r0\t\t; B1 + A0",
            "\tadc r1, r2\t\t; A1", "\tsub r12, r15", "\tsbc r13, r1\t\t; mont(b·z)"]


def reduce_plain(q):
    """Plain Montgomery: t = lo16(p)·q⁻¹ mod 2^16 (three byte products), then
    the high half of t·q = t_lo·q + t_hi·q·2^8 (four), whose low half equals
    p's by construction; the result is p_hi16 − (t·q)_hi16."""
    qi = pow(q, -1, 1 << 16)
    return [f"\tldi r22, lo8({qi})", "\tmul r10, r22\t\t; p0·qi0", "\tmovw r16, r0\t\t; t_lo, partial t_hi",
            f"\tldi r22, hi8({qi})", "\tmul r10, r22", "\tadd r17, r0",
            f"\tldi r22, lo8({qi})", "\tmul r11, r22", "\tadd r17, r0\t\t; t = r17:r16",
            f"\tldi r22, lo8({q})", "\tmul r16, r22\t\t; t_lo·q_lo (low byte = p0)", "\tmov r14, r1",
            f"\tldi r22, hi8({q})", "\tmul r16, r22\t\t; t_lo·q_hi", "\tadd r14, r0", "\tmov r15, r1",
            "\tadc r15, r2", "\tclr r20",
            f"\tldi r22, lo8({q})", "\tmulsu r17, r22\t\t; t_hi·q_lo (signed)", "\tsbc r22, r22\t\t; its sign",
            "\tadd r14, r0", "\tadc r15, r1", "\tadc r20, r22",
            f"\tldi r22, hi8({q})", "\tmulsu r17, r22\t\t; t_hi·q_hi (signed)", "\tadd r15, r0", "\tadc r20, r1",
            "\tsub r12, r15", "\tsbc r13, r20\t\t; mont(p)"]


def reduce_kred2x(q):
    """K-RED2X: C2 = p ≫ 16 is already in r13:r12; add k²·C0, subtract k·C1
    (C0 = p0, C1 = p1 unsigned): two byte products."""
    k = (q - 1) >> 8
    assert q == (k << 8) + 1 and k * k < 256
    return [f"\tldi r22, {k * k}", "\tmul r10, r22\t\t; k²·C0", "\tadd r12, r0", "\tadc r13, r1",
            f"\tldi r22, {k}", "\tmul r11, r22\t\t; k·C1", "\tsub r12, r0", "\tsbc r13, r1\t\t; k²·C0 − k·C1 + C2"]


def check_kred2x_reduction(q):
    """The byte arithmetic of reduce_kred2x equals modarith's kred2x, and its
    output bound is what red_bound assumes, on sampled inputs."""
    k = (q - 1) >> 8
    lim = 1 << 29
    for p in list(range(-lim, -lim + 3000)) + list(range(-3000, 3000)) + list(range(lim - 3000, lim)) + \
            [(x * 104729) % (2 * lim) - lim for x in range(20000)]:
        c0, c1, c2 = p & 0xFF, (p >> 8) & 0xFF, p >> 16
        r = ((c2 + k * k * c0 - k * c1) + 0x8000) % 0x10000 - 0x8000  # 16-bit wrap, as in registers
        assert r == k * k * c0 - k * c1 + c2 and (r - k * k * p) % q == 0
        assert abs(r) < abs(p) // 65536 + 1 + (k * k + k) * 255 + 1


def check_friendly_reduction(q):
    """The byte arithmetic of the NTT-friendly reduce() (unsigned t) is the
    exact Montgomery reduction, inside red_bound, on sampled inputs; with t
    signed (the representative of the same t_lo, t_hi bytes in
    [−2^15, 2^15)), the exact reduction lies inside red_bound too."""
    global T_MODE
    k = (q - 1) >> 8
    for p in list(range(-(q << 15) + 1, -(q << 15) + 3000)) + list(range(-3000, 3000)) + \
            list(range((q << 15) - 3000, q << 15)) + [(x * 7919) % (2 * (q << 15)) - (q << 15) for x in range(20000)]:
        p0, p1 = p & 0xFF, (p >> 8) & 0xFF
        b = p0 * k  # B
        t_hi = (p1 - b) & 0xFF
        a = t_hi * k  # A, unsigned
        c1 = (t_hi + (b & 0xFF)) >> 8
        high = (b >> 8) + a + c1
        t = p0 | t_hi << 8
        assert (p - t * q) % (1 << 16) == 0 and high == (t * q) >> 16 and high < 1 << 16
        r = (p >> 16) - high
        assert r == (p - t * q) >> 16 and abs(r) < red_bound(q, abs(p) + 1, 1), (q, p)
        ts = t - (1 << 16) if t >= 1 << 15 else t
        assert (p - ts * q) % (1 << 16) == 0
        T_MODE = "signed"
        assert abs((p - ts * q) >> 16) < red_bound(q, abs(p) + 1, 1), (q, p)
        T_MODE = "unsigned"


def check_plain_reduction(q):
    """The byte arithmetic of reduce_plain equals montgomery() on sampled inputs."""
    qi = pow(q, -1, 1 << 16)
    for p in list(range(-(q << 15) + 1, -(q << 15) + 3000)) + list(range(-3000, 3000)) + \
            list(range((q << 15) - 3000, q << 15)) + [(x * 7919) % (q << 15) for x in range(20000)]:
        lo = p & 0xFFFF
        t = (lo * qi) & 0xFFFF
        t = t - (1 << 16) if t >= 1 << 15 else t
        assert (p - t * q) % (1 << 16) == 0
        ts, tl = t >> 8, t & 0xFF  # signed high byte, unsigned low byte
        u = tl * q
        v = ts * q
        high = (u + (v << 8)) >> 16
        assert high == (t * q) >> 16
        r = (p >> 16) - high
        assert r == (p - t * q) >> 16 and abs(r) < q


def red_bound(q, b, z=None):
    """Exclusive bound on |reduce(b'·z')| for |b'| < b and |z'| ≤ z
    (default (q−1)/2, a centred twiddle). Montgomery: (p − t·q)/2^16 with
    |t| ≤ 2^15 is below (|p| + 2^15·q)/2^16. K-RED2X: C2 + k²·C0 − k·C1 with
    |C2| ≤ ⌈|p|/2^16⌉ and 0 ≤ C0, C1 ≤ 255."""
    z = (q - 1) // 2 if z is None else z
    p = b * z
    if VARIANT == "kred2x":
        k = (q - 1) >> 8
        return p // 65536 + 2 + (k * k + k) * 255 if p < 1 << 29 else OUT_OF_RANGE
    if p >= q << 15:
        return OUT_OF_RANGE
    if VARIANT == "friendly" and T_MODE == "unsigned":  # t < 2^16: (p − t·q)/2^16 ∈ (p/2^16 − q, p/2^16]
        return (p + (q << 16)) // 65536 + 1
    return (p + (q << 15)) // 65536 + 1


# red_bound's answer for a product outside the reduction's input range.
OUT_OF_RANGE = 1 << 30


def partial(q):
    """r17:r16 (|x| < span(q)·q) → r17:r16 ≡ x in [−q, q): centre()'s
    quotient estimate without its final compare and shift (12 cycles instead
    of 21): range control between layers, where exactness is not needed.
    Clobbers r0, r1, r20."""
    c = span(q)
    assert centring_holds(q, c, 0)  # y ∈ [0, 2q), so y − q ∈ [−q, q)
    return [f"\tsubi r16, lo8(-{c * q})", f"\tsbci r17, hi8(-{c * q})", "\tmul r17, r5", "\tmov r20, r1\t\t; t",
            "\tmul r20, r21", "\tsub r17, r0", "\tsub r16, r20", "\tsbc r17, r2\t\t; y ∈ [0, 2q)",
            f"\tsubi r16, lo8({q})", f"\tsbci r17, hi8({q})\t; y − q ∈ [−q, q)"]


# Layers with at most this many butterflies a group run straight-line groups:
# no inner loop, and the group's overhead (17 cycles) shrinks to 9.
STRAIGHT_LINE_LEN = 4


def layer_plan(q, n, layers):
    """Per layer of the forward transform: the reduction's t mode (T_MODE;
    NTT-friendly only) and what follows the butterflies: nothing,
    `partial` (back into [−q, q)) or, after the last layer, `centre`. The
    cheapest plan (reductions and centrings, in cycles a butterfly) whose
    ranges stay inside centre()'s domain; when the last two layers are
    merged (`merge_last_two`), nothing may follow the first. A dynamic
    programme over (layer, bound), as `inverse_plan`."""
    limit = min(32768, span(q) * q)  # centre()'s domain, and 16 bits
    modes = list(T_COST) if VARIANT == "friendly" else [T_MODE]

    @functools.lru_cache(maxsize=None)
    def best(layer, bound):
        """(cycles, plan) for layers layer.. entered with |a_i| < bound."""
        options = []
        for mode in modes:
            set_t_mode(mode)
            out = bound + red_bound(q, bound)
            if out > limit:
                continue
            cost = T_COST.get(mode, 0)
            if layer == layers - 1:
                options.append((cost + 42, [(mode, "centre")]))
                continue
            for post in (None, "partial"):
                if post and merge_last_two(n, layers) and layer == layers - 2:
                    continue
                rest = best(layer + 1, q + 1 if post else out)
                if rest:
                    options.append((cost + (24 if post else 0) + rest[0], [(mode, post)] + rest[1]))
        set_t_mode("unsigned")
        return min(options, key=lambda c: c[0]) if options else None

    found = best(0, q)
    assert found is not None, q
    return found[1]


def set_t_mode(mode):
    global T_MODE
    T_MODE = mode


def merge_last_two(n, layers):
    """The last two layers run as one pass over blocks of four coefficients
    when the last has one butterfly a group (q = 7681: degree-1 bases): each
    value is loaded and stored once for both layers, and the group loop runs
    half as often."""
    return n >> (layers - 1) == 2


def routine(q, n, layers):
    """Cooley–Tukey forward NTT, one layer per pass (the last two merged, see
    `merge_last_two`), each layer's reduction and range control chosen by
    `layer_plan`. Y walks the butterflies' first halves, Z their second
    halves, X the twiddles."""
    k, h, m = (q - 1) >> 8, (q - 1) // 2, 65536 // q
    check_centring(q)
    name = f"ntt_fwd_q{q}_n{n}{suffix()}"
    plan = layer_plan(q, n, layers)
    o = [f"\t.section .text.{name}, \"ax\", @progbits", f"\t.global {name}", f"\t.type {name}, @function", f"{name}:"]
    saved = [f"r{i}" for i in range(2, 18)] + ["r28", "r29"]
    o += [f"\tpush {r}" for r in saved]
    o += ["\tclr r2\t\t\t; zero", f"\tldi r21, {k}\t\t; k", f"\tldi r16, {m}", "\tmov r5, r16\t\t; floor(2^16/q)",
          "\tmovw r26, r22\t\t; X = zetas", "\tadiw r26, 2\t\t; zetas[0] is unused"]
    length = n // 2
    bound = q  # exclusive bound on |a_i| entering the layer, checked again here
    limit = min(32768, span(q) * q)

    def post(kind, src, store):
        """The butterfly output in src, brought into range by `kind`, stored
        (both range controls take their input in r17:r16)."""
        move = [] if src == "r16" or kind is None else [f"\tmovw r16, {src}"]
        if kind is None:
            return store(src, f"r{int(src[1:]) + 1}")
        if kind == "partial":
            return move + partial(q) + store("r16", "r17")
        return move + centre(q) + store("r22", "r23")

    def std(d):
        return lambda lo, hi: [f"\tstd Y+{d}, {lo}", f"\tstd Y+{d + 1}, {hi}"]

    def st_inc(ptr):
        return lambda lo, hi: [f"\tst {ptr}+, {lo}", f"\tst {ptr}+, {hi}"]

    def ld(reg, at):
        return f"\tldd {reg}, {at}" if "+" in at else f"\tld {reg}, {at}"

    for layer in range(layers):
        groups = n // (2 * length)
        lab = f"{name}_l{layer}"
        mode, after = plan[layer]
        set_t_mode(mode)
        out = bound + red_bound(q, bound)
        assert out <= limit
        bound = h + 1 if after == "centre" else q + 1 if after == "partial" else out
        if merge_last_two(n, layers) and layer == layers - 1:
            continue  # emitted with the layer before
        o += [f"\t; layer {layer}: {groups} groups of {length} butterflies", f"{lab}_in:", "\tmovw r28, r24\t\t; Y = a",
              f"\tldi r16, {groups & 0xFF}", "\tmov r3, r16"]
        if merge_last_two(n, layers) and layer == layers - 2:
            assert after is None  # layer_plan keeps the merged pair's middle free
            # Blocks a_0..a_3: (a_0, a_2) and (a_1, a_3) by z1 (this layer,
            # X), then (a_0, a_1) by z2 and (a_2, a_3) by z3 (the last layer,
            # Z, two entries a block further on).
            o += ["\tmovw r30, r26", f"\tsubi r30, lo8(-{2 * groups})", f"\tsbci r31, hi8(-{2 * groups})\t; Z = z2",
                  f"{lab}_g:"] + table_read(("r18", "r19"), "X", keep_z="r14", comment="z1")
            last_mode, last_after = plan[layer + 1]
            o += ["\tldd r16, Y+4", "\tldd r17, Y+5\t\t; a2"] + mont(q) + [
                "\tldd r8, Y+0", "\tldd r9, Y+1\t\t; a0", "\tmovw r6, r8", "\tsub r6, r12",
                "\tsbc r7, r13\t\t; a2' = a0 − t", "\tadd r8, r12", "\tadc r9, r13\t\t; a0' = a0 + t",
                "\tldd r16, Y+6", "\tldd r17, Y+7\t\t; a3"] + mont(q) + [
                "\tldd r24, Y+2", "\tldd r25, Y+3\t\t; a1", "\tmovw r16, r24", "\tadd r16, r12",
                "\tadc r17, r13\t\t; a1' = a1 + t", "\tsub r24, r12", "\tsbc r25, r13\t\t; a3' = a1 − t"]
            set_t_mode(last_mode)
            o += table_read(("r18", "r19"), "Z", comment="z2") + mont(q) + [
                "\tmovw r16, r8", "\tsub r16, r12", "\tsbc r17, r13\t\t; a0' − t"] + post(last_after, "r16", std(2))
            o += ["\tadd r8, r12", "\tadc r9, r13\t\t; a0' + t"] + post(last_after, "r8", std(0))
            o += ["\tmovw r16, r24"] + table_read(("r18", "r19"), "Z", comment="z3") + mont(q) + [
                "\tmovw r16, r6", "\tsub r16, r12", "\tsbc r17, r13\t\t; a2' − t"] + post(last_after, "r16", std(6))
            o += ["\tadd r6, r12", "\tadc r7, r13\t\t; a2' + t"] + post(last_after, "r6", std(4))
            o += ["\tadiw r28, 8\t\t; next block (r24:r25, a, is not needed again)",
                  "\tdec r3", f"\tbreq {lab}_d", f"\trjmp {lab}_g", f"{lab}_d:"]
            continue
        o += [f"{lab}_g:"] + table_read(("r18", "r19"), "X", comment="z")  # Z is set below
        straight = length <= STRAIGHT_LINE_LEN
        if not straight:
            o += ["\tmovw r30, r28", f"\tsubi r30, lo8(-{2 * length})", f"\tsbci r31, hi8(-{2 * length})\t; Z = Y + len",
                  f"\tldi r16, {length & 0xFF}", "\tmov r4, r16", f"{lab}_b:"]
        for j in range(length if straight else 1):
            # Straight-line: both halves at displacements from Y; looped:
            # a at Y, b at Z, both stepped by the stores.
            if straight:
                b_ld, a_ld = (f"Y+{2 * (length + j)}", f"Y+{2 * (length + j) + 1}"), (f"Y+{2 * j}", f"Y+{2 * j + 1}")
                b_st, a_st = std(2 * (length + j)), std(2 * j)
            else:
                b_ld, a_ld = ("Z", "Z+1"), ("Y", "Y+1")
                b_st, a_st = st_inc("Z"), st_inc("Y")
            diff = "r6" if after is None else "r16"  # straight into post's input
            o += [ld("r16", b_ld[0]), ld("r17", b_ld[1]) + "\t\t; b"] + mont(q) + [
                ld("r8", a_ld[0]), ld("r9", a_ld[1]) + "\t\t; a",
                f"\tmovw {diff}, r8", f"\tsub {diff}, r12", f"\tsbc r{int(diff[1:]) + 1}, r13\t\t; a − t",
                "\tadd r8, r12", "\tadc r9, r13\t\t; a + t"]
            o += post(after, diff, b_st) + post(after, "r8", a_st)
        if straight:
            o += [f"\tadiw r28, {4 * length}\t\t; next group"]
        else:
            if after is None:
                o += ["\tdec r4", f"\tbrne {lab}_b"]
            else:
                o += ["\tdec r4", f"\tbreq {lab}_e", f"\trjmp {lab}_b", f"{lab}_e:"]  # too long for brne
            o += ["\tmovw r28, r30\t\t; next group"]
        o += ["\tdec r3", f"\tbreq {lab}_d", f"\trjmp {lab}_g", f"{lab}_d:"]
        length //= 2
    set_t_mode("unsigned")
    o += [f"\tpop {r}" for r in reversed(saved)]
    o += ["\tclr r1", "\tret", f"\t.size {name}, .-{name}", ""]
    if n == 512:
        o += small_entry(q, n, name, plan, saved)
    return o


# The small-input forward transform's inputs: |a_i| ≤ SMALL_INPUT (CTRU-Light's
# key generation f = 2f′ + 1 ∈ [−1, 3], r and g ∈ [−1, 1]; 4 leaves a margin).
SMALL_INPUT = 4


def small_entry(q, n, name, plan, saved):
    """ntt_fwd_small_q<q>_n<n>: the same transform for inputs |a_i| ≤
    SMALL_INPUT. Layer 0's products b·ζ are then exact in 16 bits, so it
    needs no reduction: ζ (the table holds it scaled) is recovered once as
    reduce(table·1), centred, and each product is two byte products of b's
    low byte (b fits a signed byte). The routine then joins the main one at
    layer 1, whose plan assumed a wider layer-0 output than this gives.

        void ntt_fwd_small_q<q>_n<n>(int16_t a[n], const int16_t zetas[]);
    """
    h = (q - 1) // 2
    assert plan[0][1] is None
    # Layers 1.. of the main plan, entered with this layer 0's bound.
    bound, limit = SMALL_INPUT + SMALL_INPUT * h + 1, min(32768, span(q) * q)
    for mode, after in plan[1:]:
        set_t_mode(mode)
        bound += red_bound(q, bound)
        assert bound <= limit
        bound = h + 1 if after == "centre" else q + 1 if after == "partial" else bound
    set_t_mode("unsigned")
    small = name.replace("ntt_fwd_", "ntt_fwd_small_")
    o = [f"\t.section .text.{small}, \"ax\", @progbits", f"\t.global {small}", f"\t.type {small}, @function", f"{small}:"]
    o += [f"\tpush {r}" for r in saved]
    o += ["\tclr r2\t\t\t; zero", f"\tldi r21, {(q - 1) >> 8}\t\t; k", f"\tldi r16, {65536 // q}",
          "\tmov r5, r16\t\t; floor(2^16/q)", "\tmovw r26, r22\t\t; X = zetas", "\tadiw r26, 2\t\t; zetas[0] is unused"]
    o += table_read(("r18", "r19"), "X", comment="zetas[1], scaled") + ["\tldi r16, 1", "\tclr r17"]
    o += mont(q) + ["\tmovw r16, r12"] + centre(q) + ["\t; r23:r22 = ζ, centred"]
    o += ["\tmovw r28, r24\t\t; Y = a", "\tmovw r30, r24", f"\tsubi r30, lo8(-{n})", f"\tsbci r31, hi8(-{n})\t; Z = Y + n/2",
          f"\tldi r16, {(n // 2) & 0xFF}", "\tmov r4, r16\t\t; n/2 butterflies (0 counts 256)",
          f"{small}_b:", "\tld r16, Z\t\t; b's low byte (|b| ≤ 4)", "\tmulsu r16, r22\t\t; b·ζ_lo",
          "\tmovw r12, r0", "\tmuls r16, r23\t\t; b·ζ_hi", "\tadd r13, r0\t\t; t = b·ζ, exact",
          "\tld r8, Y", "\tldd r9, Y+1\t\t; a", "\tmovw r6, r8", "\tsub r6, r12", "\tsbc r7, r13\t\t; a − t",
          "\tadd r8, r12", "\tadc r9, r13\t\t; a + t", "\tst Z+, r6", "\tst Z+, r7", "\tst Y+, r8", "\tst Y+, r9",
          "\tdec r4", f"\tbrne {small}_b", f"\tjmp {name}_l1_in\t; layers 1.. as the main routine",
          f"\t.size {small}, .-{small}", ""]
    return o


def inverse_plan(q, layers):
    """Per layer of the inverse transform: the reduction's t mode and what
    brings the sums back in range (nothing, `partial` or centre()), the
    cheapest in cycles a butterfly whose ranges hold: no difference
    overflows 16 bits, sums are only brought back from inside centre()'s
    domain, and the last layer's products (sum·F, difference·ζ⁻¹·F) can be
    reduced and centred. A dynamic programme over (layer, bound)."""
    h = (q - 1) // 2
    modes = list(T_COST) if VARIANT == "friendly" else [T_MODE]
    post_cost = {None: 0, "partial": 12, "centre": 21}

    @functools.lru_cache(maxsize=None)
    def best(layer, bound):
        """(cycles, plan) for layers layer.. entered with |a_i| < bound."""
        if 2 * bound - 1 > 32768:  # a difference would overflow
            return None
        sums = 2 * bound - 1
        last = layer == layers - 1
        options = []
        for mode in modes:
            set_t_mode(mode)
            diffs = max(q, red_bound(q, sums))
            if diffs >= OUT_OF_RANGE:
                continue
            if last:
                if red_bound(q, sums) <= span(q) * q:
                    options.append((2 * T_COST.get(mode, 0) + 42, [(mode, None)]))
                continue
            for post in post_cost:
                if post and sums > span(q) * q:
                    continue
                after = h + 1 if post == "centre" else q + 1 if post == "partial" else sums
                rest = best(layer + 1, max(after, diffs))
                if rest:
                    options.append((T_COST.get(mode, 0) + post_cost[post] + rest[0], [(mode, post)] + rest[1]))
        set_t_mode("unsigned")
        return min(options, key=lambda c: c[0]) if options else None

    found = best(0, q)
    assert found is not None, q
    return found[1]


def inverse_straight_line_len(n):
    """The inverse's layers with at most this many butterflies a group run
    straight-line groups, as the forward's (STRAIGHT_LINE_LEN): for n = 512
    (CTRU-Light, far below its published code size); none for n = 256,
    whose routine counts against Kyber's published code size: the
    forward's straight-line groups (+340 B) fit in Kyber's row, the
    inverse's too would not."""
    return STRAIGHT_LINE_LEN if n == 512 else 0


def inverse_routine(q, n, layers):
    """Gentleman–Sande inverse NTT; the sums go back in range where
    `inverse_plan` finds it cheapest (it must before a difference could
    overflow 16 bits or sums leave centre()'s domain, and may earlier where
    the wider unsigned reduction then pays); the final 2^-7 scaling is
    folded into the last layer: sum·F and difference·ζ⁻¹·F, both by mont."""
    k, m = (q - 1) >> 8, 65536 // q
    h = (q - 1) // 2
    plan = inverse_plan(q, layers)
    name = f"ntt_inv_q{q}_n{n}{suffix()}"
    o = [f"\t.section .text.{name}, \"ax\", @progbits", f"\t.global {name}", f"\t.type {name}, @function", f"{name}:"]
    saved = [f"r{i}" for i in range(2, 18)] + ["r28", "r29"]
    o += [f"\tpush {r}" for r in saved]
    o += ["\tmovw r30, r20\t\t; Z = [F, ζ⁻¹F]", "\tclr r2\t\t\t; zero", f"\tldi r21, {k}\t\t; k",
          f"\tldi r16, {m}", "\tmov r5, r16\t\t; floor(2^16/q)"]
    o += table_read(("r6", "r7", "r8", "r9"), "Z")
    o += ["\tpush r6", "\tpush r7", "\tpush r8",
          "\tpush r9\t\t; kept on the stack for the last layer", "\tmovw r26, r22\t\t; X = zetas_inv"]
    length = n >> layers
    bound = q  # exclusive bound on |a_i| entering the layer
    for layer in range(layers):
        groups = n // (2 * length)
        last = layer == layers - 1
        mode, post = plan[layer]
        set_t_mode(mode)
        assert 2 * bound - 1 <= 32768, "a difference would overflow"
        sums = 2 * bound - 1
        # The differences leave through the reduction (below q for Montgomery).
        diffs = max(q, red_bound(q, 2 * bound - 1))
        assert diffs < OUT_OF_RANGE and (post is None or sums <= span(q) * q)
        assert not last or red_bound(q, sums) <= span(q) * q
        lab = f"{name}_l{layer}"
        o += [f"\t; layer {layer}: {groups} groups of {length}" + (f"; sums: {post}" if post else ""),
              "\tmovw r28, r24\t\t; Y = a"]
        if layer == 0:
            o += [f"\tsubi r26, lo8(-{2 * groups})", f"\tsbci r27, hi8(-{2 * groups})\t; X = &zetas_inv[N/(2len)]"]
        else:  # back from the end of the previous layer's range [2G, 4G) to [G, 2G)
            o += [f"\tsubi r26, lo8({6 * groups})", f"\tsbci r27, hi8({6 * groups})\t; X = &zetas_inv[N/(2len)]"]
        o += [f"\tldi r16, {groups & 0xFF}", "\tmov r3, r16", f"{lab}_g:"]
        o += table_read(("r18", "r19"), "X", comment="ζ⁻¹")  # Z is set below
        if not last and length <= inverse_straight_line_len(n):
            # Straight-line groups: x and y at displacements from Y.
            for j in range(length):
                xd, yd = 2 * j, 2 * (length + j)
                o += [f"\tldd r8, Y+{xd}", f"\tldd r9, Y+{xd + 1}\t\t; x", f"\tldd r6, Y+{yd}",
                      f"\tldd r7, Y+{yd + 1}\t\t; y", "\tmovw r16, r8", "\tsub r16, r6", "\tsbc r17, r7\t\t; x − y",
                      "\tadd r8, r6", "\tadc r9, r7\t\t; x + y"]
                o += mont(q) + [f"\tstd Y+{yd}, r12", f"\tstd Y+{yd + 1}, r13"]
                if post:
                    o += ["\tmovw r16, r8"] + (centre(q) if post == "centre" else partial(q))
                    src = "r22" if post == "centre" else "r16"
                else:
                    src = "r8"
                o += [f"\tstd Y+{xd}, {src}", f"\tstd Y+{xd + 1}, r{int(src[1:]) + 1}"]
            o += [f"\tadiw r28, {4 * length}\t\t; next group", "\tdec r3", f"\tbreq {lab}_d", f"\trjmp {lab}_g",
                  f"{lab}_d:"]
            bound = max(h + 1 if post == "centre" else q + 1 if post == "partial" else sums, diffs)
            length *= 2
            continue
        o += ["\tmovw r30, r28", f"\tsubi r30, lo8(-{2 * length})", f"\tsbci r31, hi8(-{2 * length})\t; Z = Y + len",
              f"\tldi r16, {length & 0xFF}", "\tmov r4, r16", f"{lab}_b:",
              "\tld r8, Y", "\tldd r9, Y+1\t\t; x", "\tld r6, Z", "\tldd r7, Z+1\t\t; y",
              "\tmovw r16, r8", "\tsub r16, r6", "\tsbc r17, r7\t\t; x − y",
              "\tadd r8, r6", "\tadc r9, r7\t\t; x + y"]
        if not last:
            o += mont(q) + ["\tst Z+, r12", "\tst Z+, r13"]
            if post == "centre":
                o += ["\tmovw r16, r8"] + centre(q) + ["\tst Y+, r22", "\tst Y+, r23"]
                o += ["\tdec r4", f"\tbreq {lab}_e", f"\trjmp {lab}_b", f"{lab}_e:"]
            elif post == "partial":
                o += ["\tmovw r16, r8"] + partial(q) + ["\tst Y+, r16", "\tst Y+, r17"]
                o += ["\tdec r4", f"\tbreq {lab}_e", f"\trjmp {lab}_b", f"{lab}_e:"]
            else:
                o += ["\tst Y+, r8", "\tst Y+, r9", "\tdec r4", f"\tbrne {lab}_b"]
        else:
            # difference · ζ⁻¹F, then sum · F; both centred.
            o += ["\tin r28, 0x3d", "\tin r29, 0x3e", "\tldd r18, Y+2", "\tldd r19, Y+1\t\t; ζ⁻¹F"]
            o += mont(q) + ["\tmovw r16, r12"] + centre(q) + ["\tst Z+, r22", "\tst Z+, r23"]
            o += ["\tldd r18, Y+4", "\tldd r19, Y+3\t\t; F", "\tmovw r16, r8"] + mont(q)
            o += ["\tmovw r16, r12"] + centre(q)
            o += ["\tmovw r28, r30", f"\tsubi r28, lo8({2 * length + 2})", f"\tsbci r29, hi8({2 * length + 2})",
                  "\tst Y+, r22", "\tst Y+, r23", "\tdec r4", f"\tbreq {lab}_e", f"\trjmp {lab}_b", f"{lab}_e:"]
        o += ["\tmovw r28, r30\t\t; next group", "\tdec r3", f"\tbreq {lab}_d", f"\trjmp {lab}_g", f"{lab}_d:"]
        bound = max(h + 1 if post == "centre" else q + 1 if post == "partial" else sums, diffs)
        length *= 2
    set_t_mode("unsigned")
    o += ["\tpop r9", "\tpop r8", "\tpop r7", "\tpop r6"]
    o += [f"\tpop {r}" for r in reversed(saved)]
    o += ["\tclr r1", "\tret", f"\t.size {name}, .-{name}", ""]
    return o


def barrett_parameters(q, total):
    """Shift s, reciprocal m = round(2^(16+s)/q) and bias c of `barrett` for
    |T| < total, and the exclusive bound on |r| it returns. x = T ≫ s must
    fit 16 signed bits and m 16 unsigned bits. With the three dropped
    partial-product fractions (each below one), the computed quotient u lies
    in (T/q − 2^s/q − 1/4 − 3, T/q + 1/4]: r = T − (u + c)·q then lies in
    (−(1/4 + c)·q, (2^s/q + 13/4 − c)·q); c centres that interval. Checked
    on sampled inputs against the byte arithmetic (`barrett_model`)."""
    shift = max(0, (total - 1).bit_length() - 15)
    assert (1 << shift) < q and total <= 1 << (15 + shift)
    recip = ((1 << (16 + shift)) + q // 2) // q
    assert recip < 1 << 16
    lower, upper = -q / 4, ((1 << shift) / q + 3.25) * q  # r before the bias
    bias = round((lower + upper) / 2 / q)
    r_bound = int(max(-(lower - bias * q), upper - bias * q)) + 2
    assert r_bound <= 32767
    for t in list(range(-total + 1, -total + 2000)) + list(range(-2000, 2000)) + \
            list(range(total - 2000, total)) + [(x * 48271) % (2 * total - 1) - total + 1 for x in range(20000)]:
        r = barrett_model(t, shift, recip, bias, q)
        assert (t - r) % q == 0 and abs(r) < r_bound, (q, t, r)
    return shift, recip, bias, r_bound


def barrett_model(t, shift, recip, bias, q):
    """`barrett`'s byte arithmetic in Python (16-bit wrap-around included)."""
    x = t >> shift
    xh, xl = x >> 8, x & 0xFF  # signed high byte, unsigned low byte
    mh, ml = recip >> 8, recip & 0xFF
    u = xh * mh + ((xl * mh) >> 8) + ((xh * ml) >> 8)
    k = (q - 1) >> 8
    low = ((u & 0xFF) | ((((u >> 8) + (u & 0xFF) * k) & 0xFF) << 8)) & 0xFFFF  # low 16 bits of u·q
    r = ((t & 0xFFFF) - low - bias * q) & 0xFFFF
    return r - (1 << 16) if r >= 1 << 15 else r


def barrett(shift, recip, q):
    """r23:r22 = r + c·q ≡ T (mod q), |r| below barrett_parameters' bound (the
    caller's centre() subtracts the bias c·q: `less`), for T in
    r13:r12:r11:r10 (signed); k in r21, zero in r2. Only T's low 16 bits and
    x = T ≫ s are needed: r is small, so T − (u + c)·q is computed mod 2^16,
    and the low 16 bits of u·q (q = k·2^8 + 1) are u + (low8(u_lo·k) ≪ 8).
    Clobbers r0, r1, r10-r17, r20, r22, r23."""
    o = ["\tmovw r22, r10\t\t; T mod 2^16"]
    if shift >= 8:
        for _ in range(shift - 8):
            o += ["\tasr r13", "\tror r12", "\tror r11"]
    else:
        for _ in range(8 - shift):
            o += ["\tlsl r10", "\trol r11", "\trol r12"]
    o += ["\tmov r16, r11", "\tmov r17, r12\t\t; x = T ≫ s (mulsu takes r16-r23 only)",
          f"\tldi r20, hi8({recip})", "\tmulsu r17, r20\t\t; x_hi·m_hi", "\tmovw r14, r0",
          "\tmul r16, r20", "\tadd r14, r1", "\tadc r15, r2\t\t; + (x_lo·m_hi) ≫ 8",
          f"\tldi r20, lo8({recip})", "\tmulsu r17, r20", "\tsbc r20, r20\t\t; its sign",
          "\tadd r14, r1", "\tadc r15, r20\t\t; u = + (x_hi·m_lo) ≫ 8",
          "\tmul r14, r21", "\tadd r15, r0\t\t; low 16 bits of u·q",
          "\tsub r22, r14", "\tsbc r23, r15"]
    return o + ["\t; r + c·q ≡ T (mod q) in r23:r22: centre() subtracts c·q"]


def base_mul_routine(q, n, d):
    """Blockwise product mod x^d − γ_i (γ_{2j} = ζ[64+j], γ_{2j+1} = −γ_{2j}):
    c_t = Σ_{u≤t} a_u b_{t−u} + γ·Σ_{u>t} a_u b_{t+d−u}, canonical and centred;
    with `acc` ≠ 0, c_t is added to out_t (|out_t| < q) first. The high sum is
    reduced (≡ high·S) and multiplied by the table's γ·S⁻¹, so the total T
    is an exact 32-bit integer ≡ c_t; a Barrett reduction (`barrett`) then
    brings it below a few q without the reduction factor S, so no product by
    the `s2` argument (S⁻²) is needed: s2 is ignored, and stays in the
    signature the base inversion shares. Degree 2 accumulates iff
    acc ≠ 0; degrees 1 and 4 ignore acc (`ntt_basemul_acc_…` accumulates,
    `ntt_basemul_…` does not). `out` may alias `a` or `b` (not both: degree 4
    cannot square in place): see the layout below for how each degree keeps
    the operands it still needs.

        void ntt_basemul_q<q>_n<n>(const int16_t *a, const int16_t *b, int16_t *out,
                                  const int16_t *gammas, int16_t s2, uint8_t acc);
        ntt_basemul_acc_q<q>_n<n>: the same arguments (d = 1, 4)
    """
    k = (q - 1) >> 8
    # The ranges: the high sum reduced, times γ, plus the low sum (T), into
    # the Barrett reduction; plus out (|out| < q) into centre().
    h = (q - 1) // 2
    high = red_bound(q, (d - 1) * (q - 1) ** 2 + 1, 1)
    assert high < OUT_OF_RANGE
    # |T| below: γ·H plus t + 1 low products (t < d − 1), or d low products.
    total = max((high - 1) * h + (d - 1) * (q - 1) ** 2, d * (q - 1) ** 2) + 1
    shift, recip, bias, r_bound = barrett_parameters(q, total)
    assert r_bound + q - 1 <= span(q) * q  # plus out, into centre()
    name = f"ntt_basemul_q{q}_n{n}{suffix()}"
    blocks = n // d
    # Every degree stores each output as soon as it is made:
    # - d = 1: the block's two operands are in registers by then;
    # - d = 2: a_0 and b_0 (the only operands an early c_0 could overwrite
    #   when out aliases a or b) are kept in r8:r9 and r24:r25;
    # - d = 4: a_0..a_2 are kept in r4:r5, r8:r9, r24:r25 (each is used four
    #   times, so this also saves three cycles a use), and when out aliases b
    #   the routine swaps a and b at entry (the product commutes, bit for
    #   bit), so out can only alias the kept operand; ⌊2^16/q⌋ is then loaded
    #   by centre() itself, r5 being taken.
    # The γ pointer waits on the stack (d ≥ 2). Degrees 1 and 4 have two
    # routines, `ntt_basemul_…` (which ignores `acc`) and `ntt_basemul_acc_…`
    # (which assumes it), each in its own section, so an image without
    # accumulation (CTRU-Light) links one; degree 2 (Kyber, Saber: code size
    # counts there) has one routine that masks out_t with 0 or 0xFF.
    cached = {0: "r4", 1: "r8", 2: "r24"} if d == 4 else {}
    recip_reg = None if d == 4 else "r5"
    saved = [f"r{i}" for i in range(2, 18)] + ["r28", "r29"]

    def load(u, v, kept):
        """Operands a_u into r17:r16 and b_v into r19:r18, from their
        registers where the layout keeps them (loaded there on first use)."""
        code = []
        for ptr, i, lo, cache in (("Y", u, "r16", cached.get(u)), ("Z", v, "r18", None)):
            hi = f"r{int(lo[1:]) + 1}"
            if d == 2 and i == 0:
                cache = "r8" if ptr == "Y" else "r24"
            if d == 1:  # the block's only operands: step the pointers past them
                code += [f"\tld {lo}, {ptr}+", f"\tld {hi}, {ptr}+"]
            elif cache:
                if (ptr, i) not in kept:
                    kept.add((ptr, i))
                    code += [f"\tldd {cache}, {ptr}+{2 * i}", f"\tldd r{int(cache[1:]) + 1}, {ptr}+{2 * i + 1}"]
                code += [f"\tmovw {lo}, {cache}"]
            else:
                code += [f"\tldd {lo}, {ptr}+{2 * i}", f"\tldd {hi}, {ptr}+{2 * i + 1}"]
        return code

    o = []
    for acc in ([None] if d == 2 else [False, True]):  # None: the mask in r4
        fname = name.replace("basemul", "basemul_acc") if acc else name
        o += [f"\t.section .text.{fname}, \"ax\", @progbits", f"\t.global {fname}",
              f"\t.type {fname}, @function", f"{fname}:"]
        o += [f"\tpush {r}" for r in saved]
        o += ["\tmovw r28, r24\t\t; Y = a", "\tmovw r30, r22\t\t; Z = b", "\tmovw r26, r20\t\t; X = out"]
        if d == 4:
            o += ["\tcp r20, r22", "\tcpc r21, r23", f"\tbrne {fname}_kept",
                  "\tmovw r28, r22\t\t; out = b: swap a and b, so out aliases the kept operands only",
                  "\tmovw r30, r24", f"{fname}_kept:"]
        if d == 2:
            o += ["\tclr r4", "\tcp r4, r14", "\tsbc r4, r4\t\t; out_t's mask: 0xFF iff acc ≠ 0"]
        if d > 1:
            o += ["\tpush r18", "\tpush r19\t\t; the γ pointer, on the stack"]
        o += ["\tclr r2", f"\tldi r21, {k}"]
        if recip_reg:
            o += [f"\tldi r16, {65536 // q}", f"\tmov {recip_reg}, r16"]
        o += [f"\tldi r16, {blocks & 0xFF}", "\tmov r3, r16"]
        lab = f"{fname}_blk"
        o += [f"{lab}:"]
        if d > 1:  # degree 1 has no high sum, so no γ
            o += ["\tsbrc r3, 0\t\t; counter even: fetch the next γ; odd: negate it", f"\trjmp {lab}_neg",
                  "\tmovw r14, r30", "\tpop r31", "\tpop r30"] + table_read(("r6", "r7"), "Z") + ["\tpush r30",
                  "\tpush r31", "\tmovw r30, r14", f"\trjmp {lab}_go",
                  f"{lab}_neg:", "\tneg r7", "\tneg r6", "\tsbc r7, r2\t\t; γ = −γ", f"{lab}_go:"]
        kept = set()
        for t in range(d):
            high = [(u, t + d - u) for u in range(t + 1, d)]
            low = [(u, t - u) for u in range(t + 1)]
            o.append(f"\t; c{t}")
            started = False
            if high:
                for i, (u, v) in enumerate(high):
                    o += load(u, v, kept) + (product() if i == 0 else product_acc())
                o += reduce(q) + ["\tmovw r16, r12", "\tmovw r18, r6"] + product()
                started = True
            for u, v in low:
                o += load(u, v, kept) + (product_acc() if started else product())
                started = True
            o += barrett(shift, recip, q)
            if acc is None:
                o += ["\tld r16, X+", "\tld r17, X+", "\tand r16, r4", "\tand r17, r4",
                      "\tadd r16, r22", "\tadc r17, r23\t\t; r + c·q (+ out_t)"]
            elif acc:
                o += ["\tld r16, X+", "\tld r17, X+", "\tadd r16, r22", "\tadc r17, r23\t\t; r + c·q + out_t"]
            else:
                o += ["\tmovw r16, r22"]
            o += centre(q, bias * q, recip_reg)
            o += (["\tsbiw r26, 2"] if acc is not False else []) + ["\tst X+, r22", "\tst X+, r23"]
        if d > 1:
            o += [f"\tadiw r28, {2 * d}", f"\tadiw r30, {2 * d}"]
        o += ["\tdec r3", f"\tbreq {lab}_end", f"\trjmp {lab}", f"{lab}_end:"]
        if d > 1:
            o += ["\tpop r0", "\tpop r0\t\t; drop the γ pointer"]
        o += [f"\tpop {r}" for r in reversed(saved)]
        o += ["\tclr r1", "\tret", f"\t.size {fname}, .-{fname}", ""]
    return o


def base_inv_routine(q, n):
    """Blockwise inverse mod x^4 − γ by the norm map (CTRU-Light definition
    §6), in the Montgomery domain: a straight-line program over 16-bit
    temporaries kept in a stack frame; the Fermat exponent q − 2 is public,
    so its square-and-multiply chain is unrolled. Returns the number of
    blocks whose norm is 0 (those blocks become 0), counted without a branch.

        uint8_t ntt_baseinv_q<q>_n<n>(int16_t *a, const int16_t *gammas, int16_t s2);
    """
    k = (q - 1) >> 8
    name = f"ntt_baseinv_q{q}_n{n}{suffix()}"
    ops = []  # (kind, dst, sources): "mul" dst = mont(x·y); "lin" dst = Σ c·v; "zero" counts N = 0; "out" i

    def mul(dst, x, y):
        ops.append(("mul", dst, [x, y]))

    def lin(dst, terms):
        """dst = Σ c·v for c ∈ {±1, ±2}: |dst| stays below 4q."""
        ops.append(("lin", dst, terms))

    for i in range(4):
        mul(f"x{i}", f"a{i}", "r2")  # into the Montgomery domain
    mul("t1", "x0", "x0"); mul("t2", "x2", "x2"); mul("t3", "g", "t2"); mul("t4", "x1", "x3"); mul("t5", "g", "t4")
    lin("A0", [(1, "t1"), (1, "t3"), (-2, "t5")])
    mul("t6", "x0", "x2"); mul("t7", "x1", "x1"); mul("t8", "x3", "x3"); mul("t9", "g", "t8")
    lin("A1", [(2, "t6"), (-1, "t7"), (-1, "t9")])
    mul("n1", "A0", "A0"); mul("n2", "A1", "A1"); mul("n3", "g", "n2")
    lin("N", [(1, "n1"), (-1, "n3")])
    ops.append(("zero", None, ["N"]))
    bits = bin(q - 2)[3:]  # the public exponent, after its leading 1
    lin("pw", [(1, "N")])
    for b in bits:
        mul("pw", "pw", "pw")
        if b == "1":
            mul("pw", "pw", "N")
    mul("B0", "A0", "pw"); mul("B1n", "A1", "pw")
    lin("B1", [(-1, "B1n")])
    mul("u1", "x0", "B0"); mul("u2", "x2", "B1"); mul("u3", "g", "u2"); lin("e0", [(1, "u1"), (1, "u3")])
    mul("u4", "x0", "B1"); mul("u5", "x2", "B0"); lin("e1", [(1, "u4"), (1, "u5")])
    mul("u6", "x1", "B0"); mul("u7", "x3", "B1"); mul("u8", "g", "u7"); lin("o0", [(-1, "u6"), (-1, "u8")])
    mul("u9", "x1", "B1"); mul("u10", "x3", "B0"); lin("o1", [(-1, "u9"), (-1, "u10")])
    for i, v in enumerate(["e0", "o0", "e1", "o1"]):  # [e0, −o0, e1, −o1]
        ops.append(("out", i, [v]))

    def sources(op):
        return [v for _, v in op[2]] if op[0] == "lin" else list(op[2])

    # Exclusive bounds on every value, checked against the reduction's input
    # range, 16 bits and centre()'s domain (the variants' outputs differ).
    h = (q - 1) // 2
    bounds = {"g": h + 1, "r2": h + 1, "one": 2} | {f"a{i}": q for i in range(4)}
    for kind, dst, src in ops:
        if kind == "mul":
            x, y = src
            bounds[dst] = red_bound(q, bounds[x], bounds[y] - 1)
            assert bounds[dst] < OUT_OF_RANGE and bounds[dst] <= 32768, (VARIANT, dst)
        elif kind == "lin":
            bounds[dst] = sum(abs(c) * (bounds[v] - 1) for c, v in src) + 1
            assert bounds[dst] <= 32768, (VARIANT, dst)
        elif kind == "zero":
            assert bounds[src[0]] <= span(q) * q
        else:
            assert red_bound(q, bounds[src[0]], 1) <= span(q) * q

    fixed = {"g", "r2", "one"} | {f"a{i}" for i in range(4)}
    last_use = {}
    for n_op, op in enumerate(ops):
        for v in sources(op):
            last_use[v] = n_op
    slots, free, top = {}, [], 0

    def slot(v):
        return slots[v]

    def load(v, lo, hi):
        if v.startswith("a") and v in fixed:
            i = int(v[1:])
            return [f"\tldd {lo}, Z+{2 * i}", f"\tldd {hi}, Z+{2 * i + 1}"]
        if v == "g":
            return [f"\tmovw {lo}, r6"]
        if v == "r2":
            return [f"\tmovw {lo}, r8"]
        if v == "one":
            return [f"\tldi {lo}, 1", f"\tldi {hi}, 0"]
        return [f"\tldd {lo}, Y+{slot(v)}", f"\tldd {hi}, Y+{slot(v) + 1}"]

    prog = []
    for n_op, op in enumerate(ops):
        kind, dst, _ = op
        code = []
        if kind == "mul":
            x, y = op[2]
            code = load(x, "r16", "r17") + load(y, "r18", "r19") + mont(q)
            result = ("r12", "r13")
        elif kind == "lin":
            first = True
            for c, v in op[2]:
                code += load(v, "r18", "r19")
                for _ in range(abs(c)):
                    if first and c > 0:
                        code += ["\tmovw r16, r18"]
                    elif first:
                        code += ["\tclr r16", "\tclr r17", "\tsub r16, r18", "\tsbc r17, r19"]
                    elif c > 0:
                        code += ["\tadd r16, r18", "\tadc r17, r19"]
                    else:
                        code += ["\tsub r16, r18", "\tsbc r17, r19"]
                    first = False
            result = ("r16", "r17")
        elif kind == "zero":  # centre N (a canonical 0 is 0) and count it, no branch
            code = load("N", "r16", "r17") + centre(q) + ["\tor r22, r23", "\tcpi r22, 1", "\tadc r4, r2"]
        else:  # out of the Montgomery domain, centred, into the block
            i = dst
            code = load(op[2][0], "r16", "r17") + load("one", "r18", "r19") + mont(q) + ["\tmovw r16, r12"]
            code += centre(q) + [f"\tstd Z+{2 * i}, r22", f"\tstd Z+{2 * i + 1}, r23"]
        # free the slots of values dead after this op, then give dst a slot
        for v in dict.fromkeys(sources(op)):  # ordered: the output is deterministic
            if v in slots and last_use.get(v) == n_op and v != dst:
                free.append(slots.pop(v))
        if kind in ("mul", "lin"):
            if dst not in slots:
                if free:
                    slots[dst] = free.pop()
                else:
                    slots[dst] = 1 + 2 * top
                    top += 1
            code += [f"\tstd Y+{slots[dst]}, {result[0]}", f"\tstd Y+{slots[dst] + 1}, {result[1]}"]
        prog.extend(code)
    assert 2 * top + 1 <= 63, "frame beyond ldd's reach"
    frame = 2 * top
    saved = [f"r{i}" for i in range(2, 18)] + ["r28", "r29"]
    o = [f"\t.section .text.{name}, \"ax\", @progbits", f"\t.global {name}", f"\t.type {name}, @function", f"{name}:"]
    o += [f"\tpush {r}" for r in saved]
    o += ["\tin r28, 0x3d", "\tin r29, 0x3e", f"\tsubi r28, lo8({frame})", f"\tsbci r29, hi8({frame})",
          "\tin r0, 0x3f", "\tcli", "\tout 0x3e, r29", "\tout 0x3f, r0", "\tout 0x3d, r28\t\t; frame at Y+1",
          "\tmovw r30, r24\t\t; Z = a", "\tmovw r26, r22\t\t; X = γ table", "\tmovw r8, r20\t\t; 2^32 mod q",
          "\tclr r2", "\tclr r4\t\t\t; zero-norm count", f"\tldi r21, {k}", f"\tldi r16, {65536 // q}",
          "\tmov r5, r16", f"\tldi r16, {(n // 4) & 0xFF}", "\tmov r3, r16"]
    lab = f"{name}_blk"
    o += [f"{lab}:", "\tsbrc r3, 0\t\t; counter even: fetch the next γ; odd: negate it", f"\trjmp {lab}_neg",
          *table_read(("r6", "r7"), "X", keep_z="r18"), f"\trjmp {lab}_go",  # r18:r19: loaded before use
          f"{lab}_neg:", "\tneg r7", "\tneg r6", "\tsbc r7, r2\t\t; γ = −γ", f"{lab}_go:"]
    o += prog
    o += ["\tadiw r30, 8", "\tdec r3", f"\tbreq {lab}_end", f"\tjmp {lab}", f"{lab}_end:",
          f"\tsubi r28, lo8(-{frame})", f"\tsbci r29, hi8(-{frame})",
          "\tin r0, 0x3f", "\tcli", "\tout 0x3e, r29", "\tout 0x3f, r0", "\tout 0x3d, r28",
          "\tmov r24, r4"]
    o += [f"\tpop {r}" for r in reversed(saved)]
    o += ["\tclr r25", "\tclr r1", "\tret", f"\t.size {name}, .-{name}", ""]
    return o


TABLES = sys.argv[1] if len(sys.argv) > 1 else "sram"
assert TABLES in ("sram", "flash"), "usage: gen_ntt.py [sram|flash]"
out = ["/* NTTs for AVR, NTT-friendly and plain (_mont) Montgomery arithmetic.",
       " * GENERATED by asm-avr/gen_ntt.py" + (" flash" if TABLES == "flash" else "") +
       ": do not edit. See the generator for the method.",
       " * Tables (twiddles, γ, the inverse's last factors) read from " +
       ("flash (lpm; the caller passes flash addresses)." if TABLES == "flash" else "SRAM (ld)."),
       " * Clobbers r0, r18-r27, r30, r31; preserves r2-r17, r28, r29; r1 = 0 on return.",
       " * Constant time: every loop count is public, and so are the pointers the",
       " * degree-4 base multiplication compares (out = b swaps its operands).",
       " * Each routine has its own section, so the linker drops the unused ones.",
       " */", "\t.text"]
for VARIANT in ["friendly", "plain", "kred2x"]:
    for q, n, layers in RINGS:
        if VARIANT == "friendly":
            check_friendly_reduction(q)
        if VARIANT == "plain":
            check_plain_reduction(q)
        if VARIANT == "kred2x":
            if q != 769:
                continue  # K-RED2X's output fits 16 bits only for k = 3
            check_kred2x_reduction(q)
        out += routine(q, n, layers)  # chooses each layer's t mode itself
        out += inverse_routine(q, n, layers)  # chooses each layer's t mode itself
        out += cheaper(lambda: base_mul_routine(q, n, n >> layers))
    out += cheaper(lambda: base_inv_routine(769, 512))
print("\n".join(out))
