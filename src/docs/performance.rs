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
//!   (see [`bounds`](super::bounds)) removes it
//!   where no summarised pick runs.
//! - The rest is the features' checks on every pick: the weights of the set,
//!   the pool-wide count of unhealthy workers, whether the set is dense (a
//!   draining worker), reported load and slow start (a load and a predicted
//!   branch each, on lines of the pool or the snapshot already in cache).
//!   What is left per operation is in `ci/baseline-compare.sh --counts`.
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
