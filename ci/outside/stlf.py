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
STACK = re.compile(r"^(-?0x[0-9a-f]+|-?\d+)?\(%rsp\)$")
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


def disp(operand):
    m = STACK.match(operand)
    if not m:
        return None
    return int(m.group(1) or "0", 0)


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[4], file=sys.stderr)
        sys.exit(2)
    binary, patterns = sys.argv[1], [re.compile(p) for p in sys.argv[2:]]
    dump = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", binary], check=True, capture_output=True, text=True).stdout
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
        recent = []  # (index, address, offset, width, text) of stack stores
        for i, (addr, mnemonic, ops) in enumerate(body):
            operands = split_operands(ops)
            if mnemonic.startswith("call") or mnemonic.startswith("ret"):
                recent.clear()
                continue
            # Anything that moves %rsp shifts every offset: start over.
            if len(operands) == 2 and operands[1] == "%rsp" or mnemonic.startswith("push") or mnemonic.startswith("pop"):
                recent.clear()
                continue
            recent = [s for s in recent if i - s[0] <= WINDOW]
            if not mnemonic.startswith(("mov", "vmov")) or len(operands) != 2:
                continue
            src, dst = operands
            d_src, d_dst = disp(src), disp(dst)
            if d_dst is not None and (src.startswith("%") or src.startswith("$")):
                w = width(mnemonic, src if src.startswith("%") else "$")
                if w:
                    recent.append((i, addr, d_dst, w, f"{mnemonic} {ops}"))
            elif d_src is not None and dst.startswith("%"):
                w = width(mnemonic, dst)
                if mnemonic in ("movzbl", "movzbw", "movsbl", "movsbq", "movzbq"):
                    w = 1
                elif mnemonic in ("movzwl", "movswl", "movzwq", "movswq"):
                    w = 2
                elif mnemonic == "movslq":
                    w = 4
                if not w:
                    continue
                lo, hi = d_src, d_src + w
                overlapping = [s for s in recent if s[2] < hi and lo < s[2] + s[3]]
                if not overlapping:
                    continue
                # The youngest store to each byte is the one forwarding it.
                youngest = {}
                for s in overlapping:
                    for b in range(max(lo, s[2]), min(hi, s[2] + s[3])):
                        youngest[b] = s
                feeders = {s[0] for s in youngest.values()}
                covered = len(feeders) == 1 and len(youngest) == w
                if not covered:
                    hazards += 1
                    stores = "; ".join(f"{s[1]}: {s[4]}" for s in sorted({s for s in youngest.values()}))
                    print(f"{name}: {addr}: {mnemonic} {ops} reads {w} bytes written by: {stores}")
    if matched == 0:
        print("stlf: no function matched " + " ".join(sys.argv[2:]), file=sys.stderr)
        sys.exit(2)
    print(f"stlf: {matched} functions, {hazards} store-forwarding hazards on the stack")
    sys.exit(1 if hazards else 0)


if __name__ == "__main__":
    main()
