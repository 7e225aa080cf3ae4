#!/usr/bin/env bash
# Static instruction counts of the least-loaded scan's inner loops on aarch64, scalar
# and NEON, per lane: what can be said about the NEON kernel without ARM hardware
# (emulated times say nothing about speed). Prints the table the "NEON on aarch64"
# section of BENCHMARKS.md quotes. Not a gate. Needs what ci/aarch64.sh installs
# (run that first), plus python3.
#
# It builds a small probe (under target/cross) that calls the scan through the public
# API from functions the optimiser cannot specialise, in release mode, disassembles
# it with aarch64-linux-gnu-objdump and counts the instructions of each loop: a
# backward branch and everything from its target to it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
probe=target/cross/insns-probe
mkdir -p "$probe/src"
cat > "$probe/Cargo.toml" <<EOF
[package]
name = "insns-probe"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
workerpick = { path = "$root" }

[workspace]
EOF
cat > "$probe/src/main.rs" <<'EOF'
use std::hint::black_box;
use std::sync::atomic::AtomicU32;
use workerpick::scan::{self, Backend, MinTies};

/// The four scan entry points on one backend, each in a function the
/// optimiser cannot inline or specialise, named `<module>::<entry>_{all,excl}`.
macro_rules! probes {
    ($module:ident, $backend:expr) => {
        pub mod $module {
            use super::*;
            #[inline(never)]
            pub fn min_ties_all(c: &[AtomicU32]) -> MinTies {
                scan::min_ties_all($backend, c)
            }
            #[inline(never)]
            pub fn min_ties_excl(c: &[AtomicU32], e: &[u32]) -> MinTies {
                scan::min_ties($backend, c, e)
            }
            #[inline(never)]
            pub fn nth_tie_all(c: &[AtomicU32], m: u32, k: u32) -> Result<usize, u32> {
                scan::nth_tie_all($backend, c, m, k)
            }
            #[inline(never)]
            pub fn nth_tie_excl(c: &[AtomicU32], e: &[u32], m: u32, k: u32) -> Result<usize, u32> {
                scan::nth_tie($backend, c, e, m, k)
            }
            pub fn run(c: &[AtomicU32], e: &[u32], m: u32, k: u32) {
                println!("{:?}", min_ties_all(c));
                println!("{:?}", min_ties_excl(c, e));
                println!("{:?}", nth_tie_all(c, m, k));
                println!("{:?}", nth_tie_excl(c, e, m, k));
            }
        }
    };
}
probes!(scalar, Backend::Scalar);
probes!(neon, Backend::Neon);

fn main() {
    let c: Vec<AtomicU32> = (0..1024u32).map(|i| AtomicU32::new(i % 7)).collect();
    let e = vec![0u32; 1024];
    let (c, e) = (black_box(&c[..]), black_box(&e[..]));
    let (m, k) = (black_box(0), black_box(100));
    scalar::run(c, e, m, k);
    neon::run(c, e, m, k);
}
EOF

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
cargo +nightly -Zbuild-std build --release --quiet --manifest-path "$probe/Cargo.toml" \
    --target aarch64-unknown-linux-gnu --target-dir target/cross
aarch64-linux-gnu-objdump -d --no-show-raw-insn -C \
    target/cross/aarch64-unknown-linux-gnu/release/insns-probe > "$probe/probe.dis"

python3 - "$probe/probe.dis" "$(git rev-parse --short HEAD)" <<'EOF'
import re, sys

funcs, name = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
    if m:
        name = m.group(1)
        funcs[name] = []
        continue
    m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
    if m and name:
        funcs[name].append((int(m.group(1), 16), m.group(2), m.group(3)))

def loops(fn):
    """Every loop of the function: (instructions, ops), a backward branch and all from its target."""
    ins = funcs[next(f for f in funcs if f.endswith(fn))]
    out = []
    for addr, op, args in ins:
        t = re.match(r"([0-9a-f]+) <", args)
        if op.startswith("b") and t and int(t.group(1), 16) < addr:
            body = [(o, a) for x, o, a in ins if int(t.group(1), 16) <= x <= addr]
            out.append(body)
    return out

def is_x4(body):
    """A loop that reads 16 counter lanes with one instruction."""
    return any(o == "ld1" and "-v3.4s}" in a for o, a in body)

def reads_excluded(body):
    # The exclusion array is plain memory: ordinary q-register loads beside the ld1.
    return any(o in ("ldr", "ldp", "ldur") and a.startswith("q") for o, a in body)

def lanes(body):
    """Counter lanes one trip of a loop reads: 16 per four-register ld1, 4 per one-register."""
    return sum(16 if "-v3.4s}" in a else 4 for o, a in body if o == "ld1" and ".4s" in a)

def neon(fn, excluded):
    """Instructions per lane of the NEON function's main loops, one per pass, summed.

    A main loop reads counters with four-register ld1s (it may be unrolled to several);
    the same loop compiled twice (size-dependent paths) counts once."""
    mains = {tuple(o for o, _ in b): b for b in loops(fn) if is_x4(b)}
    return sum(len(b) / lanes(b) for b in mains.values() if reads_excluded(b) == excluded)

def scalar(fn):
    """Instructions per lane of the scalar function's shortest loop (a lane off the minimum)."""
    return min(len(b) for b in loops(fn))

rows = []
for label, sfn, nfn in [
    ("minimum + tie count (`min_ties`)", "scalar::min_ties", "neon::min_ties"),
    ("k-th tie search (`nth_tie`), per lane passed", "scalar::nth_tie", "neon::nth_tie"),
]:
    cells = []
    for excluded, suffix in [(False, "_all"), (True, "_excl")]:
        s = scalar(sfn + suffix)
        n = neon(nfn + suffix, excluded)
        cells.append(f"{s} | {n:.2f} | {s / n:.1f}")
    rows.append(f"| {label} | " + " | ".join(cells) + " |")

print(f"Static count, commit {sys.argv[2]}: instructions in the inner loops of a release build"
      " for aarch64-unknown-linux-gnu (`bash ci/aarch64-insns.sh`).\n")
print("| pass | scalar, all lanes | NEON, all lanes | ratio | scalar, with exclusions | NEON, with exclusions | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
print("\n".join(rows))
EOF
