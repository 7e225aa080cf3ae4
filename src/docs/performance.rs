//! What a plain pick costs, where it went, and what keeps it from drifting.
//!
//! # Never slower than before
//! A pool that uses none of weights, health, reports, slow start or draining
//! must cost what the crate did before those existed: commit 97b26ce is the
//! pinned baseline. `ci/baseline-compare.sh` links that commit and the tree
//! into one program (the baseline's package renamed, so cargo links both) and
//! runs the plain-pool operations through a cached handle, reading the
//! worker: interleaved in time (median of per-round ratios), or with
//! `--counts` under callgrind, instructions (`Ir`) and locked instructions
//! (`Ge`) per operation of each side.
//!
//! # Where the nanoseconds went (97b26ce to 7b24bfd)
//! Measured with `--counts`, so exact and host-independent:
//! - Locked instructions per operation did not change: 0 per random select,
//!   1 per round-robin select (the cursor), 2 per random, power-of-two or
//!   least-loaded reserve + release (the booking and the release), 3 for
//!   round-robin. No `mfence` and no `xchg` on any of these paths (checked in
//!   the disassembly); the raise of a bound fences, but raises are rare.
//! - The release of every pool with room for 1 024 workers (the default
//!   pool among them) gained a `SeqCst` load of its block's bound and one of
//!   the floor, on two more cache lines, right after the locked decrement
//!   (which already orders them): the per-block bounds, kept since they were
//!   made the default's. That was the largest single cost, and arming
//!   (see [`bounds`](super::internal::bounds)) removes it
//!   where no summarised pick runs.
//! - The rest was the features' checks on every pick, each a load of its
//!   own word and a branch, several on lines of the pool no plain pick
//!   needed: the set's weights, the pool-wide count of unhealthy workers,
//!   the board's reported-load flag and slow start's due time (on every
//!   reservation), the bounds' presence and arming flag (on every release),
//!   and fields of the context that only the weighted and scanning paths
//!   read (the scan kernel, the lanes), loaded and spilled up front.
//!
//! # What won it back
//! Instructions per operation (`ci/baseline-compare.sh --counts`, 8 workers):
//!
//! | operation | 97b26ce | 7b24bfd | now | what did it |
//! |---|---:|---:|---:|---|
//! | random select | 41.1 | 59.1 | 45.1 | the feature word (below) |
//! | round-robin select | 35.1 | 54.1 | 41.1 | the word; the weighted path on a detached copy, its ticket source built there |
//! | random reserve + release | 76.1 | 111.1 | 81.1 | the word; the release tests one bit before the bounds |
//! | round-robin reserve + release | 71.1 | 104.1 | 74.1 | as both above |
//! | power-of-two reserve + release | 122.1 | 145.6 | 129.6 | the word; the kernel reached through the pool |
//! | least-loaded reserve + release | 235.1 | 266.1 | 239.1 | the word; the release's one bit; the scan's outcome in registers (below) |
//!
//! - **One feature word** (`storage/features.rs`): one bit per optional
//!   signal a pool uses now (a weighted snapshot, health marks, reported
//!   load, slow start, armed bounds), next to the counter array's pointer,
//!   which a reservation reads anyway. A pick reads it once; a plain pool's
//!   random and round-robin picks test it once for weights and health, its
//!   reservations once more for reports and slow start, its release once for
//!   the bounds. Each bit is set and cleared under the lock of what it names.
//! - **Out-of-line paths on a detached copy**: weighted random and
//!   round-robin run on a copy of the context made in their branch, so the
//!   plain path no longer loads (and spills) what only they read. The
//!   weighted paths pay for the copy: per operation at 1 024 workers
//!   (`iai/budgets.toml`, before and after), weighted random select 63 → 90
//!   instructions and reserve 107 → 128, weighted round-robin select 83 →
//!   127 and reserve 117 → 161, no locked instruction more. That is the
//!   trade the crate makes: a pool that uses a feature pays for it, one that
//!   does not pays nothing.
//! - **The scan kernel by reference**: a context holds `&Kernel`, so a pick
//!   that scans nothing loads nothing for it.
//!
//! Locked instructions are what the baseline had, operation by operation.
//! What remains above the baseline is the word's load and tests (about 3 to
//! 4 instructions a pick) and, for least-loaded and power-of-two, the health
//! answer's branch: the price of passing unhealthy workers over in every
//! mode. `ci/baseline.sh` holds every operation within 5 % + 8 instructions
//! of 97b26ce and to the same locked instructions; on 7b24bfd it fails 11
//! of the 12 operations.
//!
//! # What instruction counts do not see: store forwarding
//! A load that reads back, with one wide access, a value the code has just
//! written with narrower stores (or with several stores) cannot take it from
//! the store buffer; it waits until they reach the cache, about a dozen
//! cycles. Neither callgrind's counts nor the gate see it. `perf annotate`
//! (the software clock is enough) shows it as samples piled on such a load.
//! Three places paid it on every pick:
//!
//! - the few-lane scan kernel, out of line on purpose, returned `Least`
//!   through the stack and the caller read `min` and `index` with one 8-byte
//!   load: it returns them packed in two registers now (`Least::pack`);
//! - a mask's candidates came back from an out-of-line call in a
//!   `Result<_, Error>`, whose 4-byte fields split the candidates' length
//!   into 4-byte stores: the call returns an `Option` and the error is built
//!   at the caller; for the same reason `Candidates::Stale` counts in `usize`;
//! - a pair's guards were moved through memory with 16-byte loads across
//!   8-byte stores: `Pairs::reserve` is inlined and a local plan charges its
//!   booking in its place.
//!
//! Least-loaded reserve + release at 8 workers went from 36.4 to 24.5 ns, a
//! booking of a runtime request from 42.1 to 24.3 ns and a pair from 100.8 to
//! 57.3 ns, with about as many instructions as before (`BENCHMARKS.md`,
//! "Prefill/decode pairs"). The rule for hot paths: an out-of-line call
//! returns at most two scalars, and an error type does not share a value's
//! memory on its way back from one.
//!
//! # One source, two speeds: the caller's build
//! The same operation can stall in one build and not in another, with the
//! same instructions and locked instructions: the hot path is generic, so it
//! is compiled in the caller's crate, and whether a value crosses the stack
//! in pieces there depends on that crate's inlining and register allocation
//! (its codegen units, LTO, what else its loop does), not on this crate's
//! source alone. Issue 46 saw 97b26ce and the tree trade places, ~3x, between
//! `ci/baseline-compare` and an outside package built with one codegen unit
//! and thin LTO. `ci/outside.sh` builds that outside package
//! (`benches/outside`: by path, default features) in both settings.
//!
//! What it found on the 2-core Intel Xeon the project runs on (`ci/outside.sh
//! --time`, `perf annotate`, the disassembly; the AMD host was not
//! available, and its 3x is not reproduced here):
//! - 97b26ce, in `ci/baseline-compare` and in the user's build alike,
//!   stores a booking's slot and weight with two 4-byte stores and reads the
//!   pair back with one 8-byte load right behind the booking's
//!   compare-and-swap: a store-forwarding stall in every reserve loop (four,
//!   one per selector), where `perf annotate` puts a fifth of the samples.
//!   With the same instruction and locked-instruction counts as the tree,
//!   its random reserve takes ~27 ns to the tree's ~16 (`BENCHMARKS.md`).
//! - The tree keeps the booking in registers in both builds, and the whole
//!   pick path (the handle's methods, `booking`, the storage's charge and
//!   release, the reservation's `Drop`) is inlined into the caller's loop in
//!   both: no call on the steady-state path, and the same times in both
//!   builds to within the host's noise (`BENCHMARKS.md`, "A user's build").
//!   The in-tree criterion build's reserve loops are clean too (the four
//!   hazards `stlf.py` finds in `benches/single.rs`'s binary are the
//!   `weighted-scan` benchmark's `Weighting`, whose `limit` and `add` are
//!   stored as two `u32`s and copied as one `u64` into the kernel's
//!   argument).
//! - A reservation kept in memory by the caller (`if let Ok(r) =
//!   h.reserve(s) { hand(&r) }`) in a 16-codegen-unit build still stalls:
//!   the `Result<Reservation, Error>` stays on the stack because its error
//!   path passes its address to the out-of-line drop of `Error`, and moving
//!   the reservation out of it reads 16 + 8 bytes over 8 + 8 and 4 + 4-byte
//!   stores. The user's build (one unit, thin LTO) has none. Not fixed:
//!   `Error`'s variants that own a `String` are public, so the `Result` is
//!   48 bytes whatever the reservation is.
//!
//! The rule, for every path a pick or a release takes: it is generic or
//! `#[inline]`/`#[inline(always)]`, so it compiles into the caller's loop in
//! every build; the booking crosses it in registers, never stored in parts
//! and read back whole;
//! and what a build did is checked in that build's code, since the counts do
//! not see it. `ci/baseline.sh` runs `ci/outside.sh --check`: in the user's
//! build, no pick-path function may have a body of its own (nm), the
//! reserve loops may have no stack store-to-load forwarding hazard
//! (`ci/outside/stlf.py`, which also runs on `ci/baseline-compare`'s tree
//! side and must find the one in its fixture, 97b26ce's), and each operation
//! must execute the in-tree build's instructions within 5 % + 8 and the same
//! locked instructions. Both code checks fail on 97b26ce: `stlf.py` on
//! its reserve loops in either build, `nm` on `ci/baseline-compare`'s, where
//! its reservation's `Drop` has a body of its own.
//!
//! # Why the gate counts locked instructions
//! `Ir` does not weigh a lock or a fence: one more `fetch_add` per reserve is
//! about one instruction in a hundred, and on hosts where an uncontended
//! locked instruction costs ~5 ns, as much time as a whole random pick. The
//! callgrind gate therefore runs with `--collect-bus=yes` and holds each
//! benchmark's global bus events (`EventKind::Ge`, callgrind's count of
//! executed locked instructions) under a budget of its own, 1 % above the
//! measured count: less than one more per operation, so one more per
//! operation fails it even where the instruction budget would let it pass.
//! Counts are exact run to run, so this holds on a shared 2-core machine
//! where timing does not: a timed comparison against the baseline there moved
//! by tens of percent between runs, more than the 5 % it would have to
//! judge. What `Ge` does not count: fences (`mfence`, and the `lock or` on
//! the stack that LLVM emits for an idempotent read-modify-write are both
//! left out by valgrind), and loads (a dependent miss weighs nothing in
//! `Ir` either). Those need the disassembly or a timed run.
