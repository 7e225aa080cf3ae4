#!/usr/bin/env python3
"""Store-to-load forwarding hazards on the stack in functions of a binary.

A load that reads bytes written by more than one recent store, or by a store
narrower than itself (two u32 halves of a returned struct stored, then read
back as one u64), cannot take its data from the store buffer: it waits until
the stores reach the cache, a stall of ~10-20 cycles on current x86 cores,
and behind a locked instruction (the booking's compare-and-swap) longer.
Whether the compiler emits the pattern depends on inlining and register
allocation, so on the build (codegen units, LTO, the caller's crate), not on
the source alone: this looks for it in the code a build produced.

    stlf.py BINARY SYMBOL_REGEX...
    stlf.py --dump FILE SYMBOL_REGEX...   FILE: objdump -d -C output (tests)

Disassembles every function whose demangled name matches one of the regexes
(objdump -d -C), walks each one's instructions in address order and, for
each load from disp(%rsp) / disp(%rbp-free stack), looks back WINDOW
instructions (default 24) for stores to the stack that overlap it: any that
does not cover the whole load is a hazard. Prints one line per hazard and
exits 1 if there is any, 0 if none, 2 if no function matched.
"""
import os
import re
import subprocess
import sys

WINDOW = int(os.environ.get("WINDOW", "24"))
# ALL=1: through any base register, not only the stack pointer.
ALL = os.environ.get("ALL") == "1"

REG_WIDTH = {}
for r in "rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15".split():
    REG_WIDTH[r] = 8
for r in "eax ebx ecx edx esi edi ebp esp r8d r9d r10d r11d r12d r13d r14d r15d".split():
    REG_WIDTH[r] = 4
for r in "ax bx cx dx si di bp sp r8w r9w r10w r11w r12w r13w r14w r15w".split():
    REG_WIDTH[r] = 2
for r in "al bl cl dl sil dil bpl spl ah bh ch dh r8b r9b r10b r11b r12b r13b r14b r15b".split():
    REG_WIDTH[r] = 1
for i in range(32):
    REG_WIDTH[f"xmm{i}"] = 16
    REG_WIDTH[f"ymm{i}"] = 32
    REG_WIDTH[f"zmm{i}"] = 64
SUFFIX = {"b": 1, "w": 2, "l": 4, "q": 8}
MEM = re.compile(r"^(-?0x[0-9a-f]+|-?\d+)?\(%(r[a-z0-9]+)\)$")
# The 64-bit register each register name is part of.
FULL = {}
for _r in "ax bx cx dx si di bp sp".split():
    for _n in (f"r{_r}", f"e{_r}", _r, _r[0] + "l" if _r[1] == "x" else _r + "l"):
        FULL[_n] = f"r{_r}"
for _i in range(8, 16):
    for _n in (f"r{_i}", f"r{_i}d", f"r{_i}w", f"r{_i}b"):
        FULL[_n] = f"r{_i}"
LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*?)\s*(#.*)?$")
HEADER = re.compile(r"^([0-9a-f]+) <(.*)>:$")


def width(mnemonic, operand):
    """Bytes moved by a mov-like instruction whose other operand is `operand`."""
    if operand.startswith("%"):
        return REG_WIDTH.get(operand[1:])
    if mnemonic in ("movups", "movaps", "movdqu", "movdqa"):
        return 16
    if mnemonic in ("vmovups", "vmovaps", "vmovdqu", "vmovdqa"):
        return None
    if mnemonic in ("movss", "movd"):
        return 4
    if mnemonic in ("movsd", "movq"):
        return 8
    if mnemonic.startswith("mov") and mnemonic[-1] in SUFFIX and mnemonic not in ("movsbl", "movzbl", "movslq"):
        return SUFFIX[mnemonic[-1]]
    return None


def split_operands(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur:
        out.append(cur)
    return [o.strip() for o in out]


def disp(operand, aliases):
    """(base register, displacement) of a `disp(%base)` operand, else None;
    a register that holds a stack address (`lea d(%rsp),%reg`) counts as
    the stack pointer plus its offset."""
    m = MEM.match(operand)
    if not m or m.group(2) == "rip":
        return None
    base, d = m.group(2), int(m.group(1) or "0", 0)
    if base in aliases:
        return ("rsp", aliases[base] + d)
    return (base, d)


def check(mnemonic, operands, recent, aliases):
    """Why the load `mnemonic operands` cannot be forwarded from the stores
    in `recent`, or None."""
    src, dst = operands
    d_src = disp(src, aliases)
    if d_src is None or not dst.startswith("%"):
        return None
    w = width(mnemonic, dst)
    if mnemonic in ("movzbl", "movzbw", "movsbl", "movsbq", "movzbq"):
        w = 1
    elif mnemonic in ("movzwl", "movswl", "movzwq", "movswq"):
        w = 2
    elif mnemonic == "movslq":
        w = 4
    base, lo = d_src
    if not w or (base != "rsp" and not ALL):
        return None
    hi = lo + w
    # The youngest store to each byte of the load is the one forwarding it.
    youngest = {}
    for s in recent:
        if s[2][0] == base:
            for b in range(max(lo, s[2][1]), min(hi, s[2][1] + s[3])):
                youngest[b] = s
    if not youngest:
        return None
    feeders = {s[0]: s for s in youngest.values()}
    if len(feeders) == 1 and len(youngest) == w:
        return None
    stores = "; ".join(f"{s[1]}: {s[4]}" for _, s in sorted(feeders.items()))
    return f"reads {w} bytes written by: {stores}"


def main():
    if len(sys.argv) < 3 or sys.argv[1] == "--dump" and len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[4], file=sys.stderr)
        sys.exit(2)
    args = sys.argv[1:]
    if args[0] == "--dump":
        with open(args[1]) as f:
            dump = f.read()
        args = args[2:]
    else:
        dump = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", args[0]], check=True, capture_output=True, text=True).stdout
        args = args[1:]
    patterns = [re.compile(p) for p in args]
    functions, name, body = [], None, []
    for line in dump.splitlines():
        h = HEADER.match(line)
        if h:
            if name is not None:
                functions.append((name, body))
            name, body = h.group(2), []
            continue
        m = LINE.match(line)
        if m and name is not None:
            body.append((m.group(1), m.group(2), m.group(3)))
    if name is not None:
        functions.append((name, body))
    matched = hazards = 0
    for name, body in functions:
        if not any(p.search(name) for p in patterns):
            continue
        matched += 1
        recent = []  # (index, address, (base, displacement), width, text) of stores
        aliases = {}  # register -> its offset from %rsp, after `lea d(%rsp),%reg`
        for i, (addr, mnemonic, ops) in enumerate(body):
            operands = split_operands(ops)
            if mnemonic.startswith(("call", "ret", "jmp")):
                # Another function's stores, or another path's: start over.
                recent.clear()
                aliases.clear()
                continue
            if mnemonic.startswith(("push", "pop")):
                recent = [s for s in recent if s[2][0] != "rsp"]
                aliases.clear()
            recent = [s for s in recent if i - s[0] <= WINDOW]
            if mnemonic.startswith(("mov", "vmov")) and len(operands) == 2:
                hazard = check(mnemonic, operands, recent, aliases)
                if hazard:
                    hazards += 1
                    print(f"{name}: {addr}: {mnemonic} {ops} {hazard}")
            # A write to a register moves every address based on it (the
            # destination is the last operand).
            if operands and operands[-1].startswith("%"):
                written = FULL.get(operands[-1][1:])
                recent = [s for s in recent if s[2][0] != written]
                aliases.pop(written, None)
                if written == "rsp":
                    aliases.clear()
                    recent = [s for s in recent if s[2][0] != "rsp"]
                elif mnemonic == "lea" and len(operands) == 2:
                    m = MEM.match(operands[0])
                    if m and m.group(2) == "rsp" and operands[1].startswith("%r"):
                        aliases[written] = int(m.group(1) or "0", 0)
            if mnemonic.startswith(("mov", "vmov")) and len(operands) == 2:
                src, dst = operands
                d_dst = disp(dst, aliases)
                if d_dst is not None and (src.startswith("%") or src.startswith("$")):
                    w = width(mnemonic, src if src.startswith("%") else "$")
                    if w:
                        recent.append((i, addr, d_dst, w, f"{mnemonic} {ops}"))
    if matched == 0:
        print("stlf: no function matched " + " ".join(args), file=sys.stderr)
        sys.exit(2)
    print(f"stlf: {matched} functions, {hazards} store-forwarding hazards" + ("" if ALL else " on the stack"))
    sys.exit(1 if hazards else 0)


if __name__ == "__main__":
    main()
