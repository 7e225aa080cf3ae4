"""Runs the library's AVX-512 scan kernel on an emulated CPU against a reference.

The kernel (src/scan/avx512.rs, linked by ci/avx512.sh into a static ELF with one
entry point, `scan_call`) runs in bochscpu, the Bochs x86 CPU emulator, which
implements AVX-512 whether or not the host does. Each length 0-600 and 1000-1048
runs at 17 placements: 16 that give each array every start alignment modulo 64
bytes, one of them ending it at an unmapped page (a read past its last lane
faults), and one that starts both arrays right after an unmapped page. The mapped
bytes around an array hold 0, the lowest value a lane can have, so reading them
changes the answer. Cases that exclude nothing also run with no exclusion array
(the counters-only scan). The reference is what src/scan/scalar.rs computes (the minimum
of counters[i] | excluded[i], how many lanes hold it, the k-th lane holding a
value; and for the weighted scan the minimum of the scores
(min(x, limit) + add) * scale[i], wrapping, and its ties, with the factors in a
third region placed like the others), written plainly here; the unit tests hold
scalar.rs to the same oracle.

Usage: check.py KERNEL_ELF [--case LEN:PLACEMENT] [--seed S]
Exit status 0 when every call matches, 1 otherwise (with a reproducer per case).
"""

import argparse
import array
import ctypes
import os
import random
import struct
import sys
import time

import bochscpu
import bochscpu.cpu
import bochscpu.memory

PAGE = 4096
MAX = 0xFFFF_FFFF

# Guest layout, identity-mapped (virtual = physical). The pages before and after
# each data region are never mapped.
HLT_STUB = 0x2000_0000
STACK = 0x3000_0000
STACK_PAGES = 4
REGION_PAGES = 3
COUNTERS = 0x4000_1000
EXCLUDED = 0x5000_1000
SCALES = 0x6000_1000
PML4 = 0x0010_0000
# The return address, with the entry point's 7th and 8th arguments above it (System
# V passes them on the stack); at the entry rsp + 8 is 16-byte aligned.
RETURN_SLOT = STACK + STACK_PAGES * PAGE - 24

LENGTHS = list(range(0, 601)) + list(range(1000, 1049))
# Placements 0-15 end the arrays 0-15 lanes before their region's end (each array
# its own distance, so their alignments vary independently); 16 starts both at the
# first lane of their region.
PLACEMENTS = 17
HEAD = 16

OP_MIN_TIES = 0
OP_NTH_TIE = 1
OP_WEIGHTED = 2
ERR = 1 << 63

# Exception vectors, for messages.
VECTORS = {6: "#UD invalid opcode", 13: "#GP general protection", 14: "#PF page fault"}
# XCR0 with x87, SSE, AVX and the three AVX-512 state components enabled.
XCR0_AVX512 = 0xE7
XCR0_AVX_ONLY = 0x07


class Emulator:
    """One emulated CPU with the kernel loaded and the data regions mapped."""

    def __init__(self, elf_path):
        elf = open(elf_path, "rb").read()
        if elf[:4] != b"\x7fELF":
            raise SystemExit(f"{elf_path}: not an ELF file")
        self.entry, phoff = struct.unpack_from("<QQ", elf, 24)
        phentsize, phnum = struct.unpack_from("<HH", elf, 54)
        segments = []
        for i in range(phnum):
            kind, _, offset, vaddr, _, filesz, memsz, _ = struct.unpack_from(
                "<IIQQQQQQ", elf, phoff + i * phentsize
            )
            if kind == 1:  # PT_LOAD
                segments.append((vaddr, elf[offset : offset + filesz], memsz))

        self.session = bochscpu.Session()
        self.session.missing_page_handler = self._missing_page
        self.host = {}
        self.tables = bochscpu.memory.PageMapLevel4Table()
        for vaddr, _, memsz in segments:
            for page in range(vaddr & ~(PAGE - 1), vaddr + memsz, PAGE):
                self._map(page)
        self._map(HLT_STUB)
        for i in range(STACK_PAGES):
            self._map(STACK + i * PAGE, writable=True)
        for base in (COUNTERS, EXCLUDED, SCALES):
            for i in range(REGION_PAGES):
                self._map(base + i * PAGE)
        for hva, gpa in self.tables.commit(PML4):
            bochscpu.memory.page_insert(gpa, hva)
        for vaddr, data, _ in segments:
            self._write(vaddr, data)
        self._write(HLT_STUB, b"\xf4")  # hlt: the kernel returns here

        self.outcome = None
        self.hook = bochscpu.Hook()
        self.hook.hlt = self._on_hlt
        self.hook.exception = self._on_exception

    def _map(self, page, writable=False):
        hva = bochscpu.memory.allocate_host_page()
        bochscpu.memory.page_insert(page, hva)
        self.tables.insert(page, page, 1 if writable else 0)
        self.host[page] = hva

    def _write(self, vaddr, data):
        while data:
            page = vaddr & ~(PAGE - 1)
            take = min(len(data), page + PAGE - vaddr)
            ctypes.memmove(self.host[page] + vaddr - page, data[:take], take)
            vaddr += take
            data = data[take:]

    @staticmethod
    def _missing_page(gpa):
        raise RuntimeError(f"guest touched unbacked physical page {gpa:#x}")

    def _on_hlt(self, session, _cpu):
        self.outcome = ("returned",)
        session.stop()

    def _on_exception(self, session, _cpu, vector, error):
        self.outcome = ("exception", vector, error)
        session.stop()

    def place(self, values, excluded, scales, placement):
        """Writes the arrays into their regions; returns their guest addresses."""
        n = len(values)
        addresses = []
        region = REGION_PAGES * PAGE // 4
        for base, lanes, gap in (
            (COUNTERS, values, placement),
            (EXCLUDED, excluded, (placement * 7 + 3) % 16),
            (SCALES, scales, (placement * 5 + 9) % 16),
        ):
            start = 0 if placement == HEAD else region - gap - n
            data = array.array("I", [0] * start + list(lanes) + [0] * (region - start - n))
            self._write(base, data.tobytes())
            addresses.append(base + 4 * start)
        return addresses

    def call(self, op, counters, excluded, n, value=0, k=0, scales=0, add=0, xcr0=XCR0_AVX512):
        """Runs `scan_call`; returns rax, or raises Fault."""
        state = bochscpu.State()
        bochscpu.cpu.set_long_mode(state)
        state.cr0 |= 1 << 1  # MP; EM and TS stay clear, so SIMD runs
        state.cr4 |= (1 << 9) | (1 << 10) | (1 << 18)  # OSFXSR, OSXMMEXCPT, OSXSAVE
        state.xcr0 = xcr0
        state.cr3 = PML4
        state.rflags = 0x2
        code = bochscpu.Segment()
        code.present, code.selector, code.base, code.limit, code.attr = True, 0x08, 0, MAX, 0x209B
        data = bochscpu.Segment()
        data.present, data.selector, data.base, data.limit, data.attr = True, 0x10, 0, MAX, 0xC093
        state.cs = code
        state.ds = state.ss = state.es = state.fs = state.gs = data
        state.rip = self.entry
        state.rsp = RETURN_SLOT
        state.rdi, state.rsi, state.rdx, state.rcx, state.r8, state.r9 = (
            op,
            counters,
            excluded,
            n,
            value,
            k,
        )
        self._write(RETURN_SLOT, struct.pack("<QQQ", HLT_STUB, scales, add))
        self.outcome = None
        cpu = self.session.cpu
        cpu.state = state
        self.session.run([self.hook])
        if self.outcome != ("returned",) or cpu.rip != HLT_STUB + 1:
            raise Fault(self.outcome, cpu.rip, cpu.cr2)
        return cpu.rax


class Fault(Exception):
    def __init__(self, outcome, rip, cr2):
        if outcome and outcome[0] == "exception":
            name = VECTORS.get(outcome[1], f"vector {outcome[1]}")
            text = f"{name} (error code {outcome[2]}) at rip {rip:#x}"
            if outcome[1] == 14:
                text += f", address {cr2:#x}{where(cr2)}"
        else:
            text = f"stopped without returning ({outcome}) at rip {rip:#x}"
        super().__init__(text)
        self.vector = outcome[1] if outcome and outcome[0] == "exception" else None


def where(address):
    for name, base in (("counters", COUNTERS), ("excluded", EXCLUDED), ("scales", SCALES)):
        end = base + REGION_PAGES * PAGE
        if end <= address < end + PAGE:
            return f" ({address - end} bytes past the end of the {name} region)"
        if base - PAGE <= address < base:
            return f" ({base - address} bytes before the start of the {name} region)"
    return ""


def make_case(n, placement, seed):
    """The counters and exclusion array of case (n, placement), from its own RNG."""
    rng = random.Random(f"{seed}:{n}:{placement}")
    family = rng.randrange(6)
    if family == 0:
        values = [rng.randrange(3) for _ in range(n)]
    elif family == 1:
        values = [rng.randrange(64) for _ in range(n)]
    elif family == 2:
        # Around the sign bit and the top, where a signed compare would go wrong.
        special = [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, MAX - 1, MAX]
        values = [rng.choice(special) for _ in range(n)]
    elif family == 3:
        values = [rng.getrandbits(32) for _ in range(n)]
    elif family == 4:
        values = [rng.choice([0, 5, MAX])] * n
    else:
        # One minimum, anywhere (the minimum may be 0, like the bytes around).
        values = [9 + rng.randrange(4) for _ in range(n)]
        if n:
            values[rng.randrange(n)] = rng.choice([0, 1])
    mask = rng.randrange(5)
    if mask == 0:
        excluded = [0] * n
    elif mask == 4:
        # The kernel ORs in any value, not just 0 or u32::MAX.
        excluded = [rng.choice([0, 0, 1, 0x8000_0000, rng.getrandbits(32)]) for _ in range(n)]
    else:
        excluded = [MAX if rng.randrange(4) < mask else 0 for _ in range(n)]
    return values, excluded, rng


def make_weighting(n, rng):
    """Factors, bound and request weight for the weighted calls of a case: as the
    library builds them from capacities (top = u32::MAX // max(scale), bound top - add),
    or any values, whose products wrap (every backend must wrap alike)."""
    family = rng.randrange(4)
    if family == 0:
        scales = [[1, 2, 4, 4][i % 4] for i in range(n)]
    elif family == 1:
        scales = [rng.choice([1, 2, 3, 5, 8, 60]) for _ in range(n)]
    elif family == 2:
        scales = [rng.choice([720, 1]) for _ in range(n)]
    else:
        scales = [rng.choice([0, 1, 2, rng.getrandbits(32), MAX]) for _ in range(n)]
    add = rng.choice([0, 1, 1, 2, rng.randrange(100), 0x8000_0000, MAX])
    if family == 3:
        limit = rng.choice([0, 7, rng.getrandbits(32), MAX])
    else:
        limit = max(MAX // max(scales, default=1) - add, 0)
    return scales, limit, add


def weighted_expected(values, excluded, scales, limit, add):
    scores = [
        ((min(v | e, limit) + add) & MAX) * s & MAX for v, e, s in zip(values, excluded, scales)
    ]
    low = min(scores, default=MAX)
    return low << 32 | scores.count(low)


def expected_calls(values, excluded, rng):
    """(op, value, k, want) for one case: min_ties, and nth_tie for several k, of the
    minimum and of another value that occurs."""
    effective = [v | e for v, e in zip(values, excluded)]
    low = min(effective, default=MAX)
    at = [i for i, x in enumerate(effective) if x == low]
    calls = [(OP_MIN_TIES, 0, 0, low << 32 | len(at))]

    def nth(target, positions, ks):
        for k in sorted(set(ks)):
            want = positions[k] if k < len(positions) else ERR | len(positions)
            calls.append((OP_NTH_TIE, target, k, want))

    ties = len(at)
    nth(low, at, [0, ties // 2, max(ties - 1, 0), rng.randrange(ties + 1), ties, ties + 1, MAX])
    other = effective[rng.randrange(len(effective))] if effective else 7
    other_at = [i for i, x in enumerate(effective) if x == other]
    count = len(other_at)
    nth(other, other_at, [0, max(count - 1, 0), count])
    return calls


def show(result):
    if result & ERR:
        return f"Err({result & MAX})"
    return str(result)


def run_case(emulator, n, placement, seed):
    """Runs one case: the calls made, and the first failure (None if none) with the
    case's arrays."""
    values, excluded, rng = make_case(n, placement, seed)
    scales, limit, add = make_weighting(n, rng)
    counters_at, excluded_at, scales_at = emulator.place(values, excluded, scales, placement)
    calls = expected_calls(values, excluded, rng)
    calls.append((OP_WEIGHTED, limit, 0, weighted_expected(values, excluded, scales, limit, add)))
    # With nothing excluded, each call runs twice: also with no exclusion array (a
    # null pointer: the kernel's counters-only scan).
    if not any(excluded):
        calls = [(op, value, k, want, at) for (op, value, k, want) in calls for at in (excluded_at, 0)]
    else:
        calls = [(op, value, k, want, excluded_at) for (op, value, k, want) in calls]
    for made, (op, value, k, want, excluded_ptr) in enumerate(calls, 1):
        name = {
            OP_MIN_TIES: "min_ties",
            OP_NTH_TIE: f"nth_tie(value={value:#x}, k={k})",
            OP_WEIGHTED: f"weighted min_ties(limit={value:#x}, add={add:#x})",
        }[op]
        if not excluded_ptr:
            name += " without exclusion array"
        try:
            got = emulator.call(op, counters_at, excluded_ptr, n, value, k, scales_at, add)
        except Fault as fault:
            return made, f"{name}: {fault}", (values, excluded, scales)
        if got != want:
            if op != OP_NTH_TIE:
                got_s = f"min {got >> 32:#x}, ties {got & MAX}"
                want_s = f"min {want >> 32:#x}, ties {want & MAX}"
            else:
                got_s, want_s = show(got), show(want)
            return made, f"{name}: kernel gave {got_s}, reference {want_s}", (values, excluded, scales)
    return len(calls), None, None


def negative_control(emulator, seed):
    """The kernel must fault on its first AVX-512 instruction when the emulated OS has
    not enabled the AVX-512 state: proof that the code under test is AVX-512 code
    and that the emulator really executes it."""
    values, excluded, _ = make_case(40, 0, seed)
    counters_at, excluded_at, _ = emulator.place(values, excluded, [1] * 40, 0)
    try:
        emulator.call(OP_MIN_TIES, counters_at, excluded_at, 40, xcr0=XCR0_AVX_ONLY)
    except Fault as fault:
        if fault.vector == 6:
            return None
        return f"without AVX-512 state enabled the kernel raised {fault}, not #UD"
    return "without AVX-512 state enabled the kernel ran to the end: it is not AVX-512 code"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("elf")
    parser.add_argument("--case", help="LEN:PLACEMENT, to run one case only")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()

    start = time.monotonic()
    emulator = Emulator(args.elf)
    problem = negative_control(emulator, args.seed)
    if problem:
        print(f"avx512 emulation: FAILED negative control: {problem}")
        return 1
    if args.case:
        n, placement = (int(x) for x in args.case.split(":"))
        cases = [(n, placement)]
    else:
        cases = [(n, p) for n in LENGTHS for p in range(PLACEMENTS)]

    total_calls = 0
    failures = 0
    for n, placement in cases:
        made, failure, arrays = run_case(emulator, n, placement, args.seed)
        total_calls += made
        if failure is None:
            continue
        failures += 1
        print(f"MISMATCH len {n}, placement {placement}, seed {args.seed}: {failure}")
        print(f"  rerun: bash ci/avx512.sh --case {n}:{placement} --seed {args.seed}")
        if failures == 1:
            values, excluded, scales = arrays
            print(f"  counters {values}")
            print(f"  excluded {excluded}")
            print(f"  scales {scales}")
        if failures >= 10:
            print("  (stopping after 10 failing cases)")
            break
    elapsed = time.monotonic() - start
    verdict = "FAILED" if failures else "ok"
    print(
        f"avx512 emulation: {verdict}: {len(cases)} cases, {total_calls} kernel calls, "
        f"{failures} failing cases, {elapsed:.1f} s (negative control: #UD without AVX-512 state)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    # The module crashes while the interpreter tears it down; exit before that, so
    # that the status is the checks' verdict.
    os._exit(status)
