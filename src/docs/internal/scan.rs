//! The least-loaded scan: its kernels, the tie-break, and why the vector loads are sound.
//!
//!
//! # The least-loaded scan
//! One SIMD pass over the packed counters finds the minimum (a branch-free
//! loop at the machine's load rate). Then up to 8 uniform draws over all the
//! lanes each try one lane: the first at the minimum is the pick. A uniform
//! draw accepted on a tie is uniform among the ties, so in an idle or
//! balanced pool, where most lanes tie, a pick is the min pass, one draw and
//! one load. When the tries miss (few ties), a second pass counts the ties
//! per segment of 512 lanes, one draw picks a tie, and a last pass searches
//! only the segment that holds it. Up to 32 lanes are read once into
//! registers and tried once; a miss draws among the ties found in them. Up to
//! 8 lanes are read with scalar loads, which in a reserve-release loop take
//! the just-released count from the store buffer where a vector load would
//! wait. A pool whose workers fill the slots `0..n` (no holes left by
//! removals) scans the counters alone; a request's eligibility mask, or
//! holes, add an exclusion array ORed into each lane. The backend (AVX-512,
//! AVX2, scalar) is detected once at run time and checked against the CPU
//! once per pool, so a default `cargo build --release` gets the fast path and
//! a pick makes no feature test; on aarch64 it is NEON, part of the base
//! architecture. The vector backends run one algorithm, written once over a
//! small set of primitives each implements (full and partial loads, compare
//! to a bit set, lane-wise and horizontal minimum, tie counts); the scalar
//! one is the independent reference they must match draw for draw. See
//! [`scan`](crate::scan) for why the vector loads of atomics are sound.
//!
//! # The tie-break
//! Ties are broken uniformly at random in every scanning mode. Rejection
//! tries: each try draws a lane uniformly over all `n` lanes and keeps it
//! only if it is at the minimum, so conditioned on being kept it is uniform
//! over the `t` ties, whichever try keeps it. Counting: a draw over the `t`
//! ties counted, then the `k`-th tie in lane order, is uniform by
//! construction. [`Context::least_loaded_by`](crate::Context::least_loaded_by)
//! (the scalar path) and device-aware's groups share one rule (`Minimum` in
//! `selectors/least_loaded/minimum.rs`): count ties in one pass, and draw once only when there are
//! several. Lanes that move between passes can
//! shift the odds slightly, never the guarantee: the pick is a lane seen at
//! the minimum, and the compare-and-swap checks it still is. Power-of-two
//! takes the first of its two draws on a tie (the two draws are already
//! uniform and distinct).
//!
//! # The credited scan
//! (`scan/credit.rs`.)
//! What the credited scan compares: the cost mode's key per lane, one `u32`, whose
//! order is the order of the costs `1000·load − α_milli·credit` (see
//! `credit::tuning::cost`), shifted so that no key is negative.
//!
//! For a lane of effective value `x` (the counter ORed with its exclusion) and
//! credit `o`, under weight `α` (thousandths) and a bound `K` on every credit:
//!
//! ```text
//! key = 1000·min(x, limit) + α·K − α·o        (u32, wrapping)
//! ```
//!
//! With `o <= K` and `1000·limit + α·K <= u32::MAX`, nothing wraps: the key is
//! `1000·x − α·o + α·K`, the exact cost plus a constant, for every `x <= limit`. A
//! clamped lane (`x > limit`, an excluded one among them) keys at least
//! `1000·limit`, and less than its true key; so a least key below `1000·limit`
//! (`Credit::exact_below`) is exact, and so is the set of lanes holding it (a
//! clamped lane cannot tie with it). The caller checks that bound and otherwise
//! answers exactly with a path of its own, as the weighted scan's does.
//!
//! The vector backends compute the same key lane-wise with two wrapping multiplies
//! and two adds (`α·K − α·o` as `α·K + (2^32 − α)·o`, exact modulo `2^32`).
//!
//! # The weighted scan
//! (`scan/weighting.rs`.)
//! What the weighted least-loaded scan compares: a score per lane, one `u32`, whose
//! order is the order of the lanes' load per unit of capacity.
//!
//! A caller with capacities `c_i` and `L` their least common multiple gives lane `i`
//! the factor `scale[i] = L / c_i`: then `(load + add) * scale[i]` is
//! `L * (load + add) / c_i`, so equal ratios score equally and the order is exact,
//! with one multiply per lane. For every score to fit 32 bits the value is clamped
//! to one bound for all lanes, `limit`, with `(limit + add) * max(scale) <= u32::MAX`.
//! A clamped lane then scores `(limit + add) * scale[i]`, less than its true score
//! but at least `(limit + add) * min(scale)`: a least score below that bound was
//! computed without clamping, and so is exact; the caller handles the others (with
//! an exact path of its own).
//!
//! One bound for all lanes, not one per lane: a per-lane bound is a third array to
//! load beside the counters and the factors, and a third of the weighted scan's
//! loads (measured: see `BENCHMARKS.md`, "Heterogeneous fleets").
//!
//! # The NEON backend
//! (`scan/neon.rs`.)
//! NEON backend (aarch64): 4 lanes per vector. NEON is part of the base architecture
//! there, so it is chosen at compile time, with no run-time detection.
//!
//! The lane arithmetic is `wide`'s `u32x4`, which compiles to single NEON instructions
//! here (`umin`, `cmeq`, `orr`, `and`, `sub`). Two things come from `core::arch`
//! instead: the horizontal minimum and sum, which `wide` 1.7 computes lane by lane on
//! aarch64 where NEON has one instruction each (`uminv`, `addv`); and the counter
//! loads, which must be inline `asm!` (see "Soundness of the vector loads" in the
//! module docs) and so produce a `uint32x4_t`, which `wide` converts for free.
//!
//! NEON has no masked load: the last 1-3 lanes of a pass are read with scalar Relaxed
//! loads, and the missing lanes filled with `u32::MAX` (counters) or 0 (exclusions).
//!
//! # How a scan works
//!
//! The effective value of lane `i` is `counters[i].load(Relaxed) | excluded[i]`, where
//! `excluded[i]` is `0` for a candidate and `u32::MAX` for a lane to skip; a scan with
//! no exclusion array reads the counters alone. A least-loaded pick is the minimum,
//! one uniform draw among the lanes holding it, and a compare-and-swap from that
//! minimum on the chosen counter (see [`docs`](crate::docs) for the tie-break).
//!
//! The weighted scan (`least_weighted`) compares a score per lane instead:
//! `(min(x, limit) + add) * scale[i]` for the effective value
//! `x`, the load per unit of capacity as one `u32` (see `weighting.rs`). It is the
//! same scan over another view of the lanes, with the same tries and draws. So is the
//! credited scan (`least_credited`), the cost mode's dense pass: per lane
//! `1000·min(x, limit) + α·K − α·credit[i]`, exact below `1000·limit` (`credit.rs`).
//!
//! `scalar.rs` is the specification: the AVX2, AVX-512 and NEON backends must return
//! exactly what it returns for the same values and the same draws. The vector
//! backends share one algorithm (`simd.rs`), written once over a small set of
//! primitives that each backend implements (`vector.rs`: load a vector of lanes, load
//! the last partial one, compare to a bit set, lane-wise and horizontal minimum, tie
//! counts), in the manner of hashbrown's `Group` and memchr's `Vector`. On x86-64 the
//! backend is chosen at run time, so a default `cargo build --release` gets the vector
//! code without `-C target-cpu` flags; on aarch64 NEON is part of the base
//! architecture, so it is always there.
//!
//! # Soundness of the vector loads
//!
//! The counters are atomics that other threads update while a scan runs. A vector load
//! of them written in Rust (an intrinsic, or a cast of `&[AtomicU32]` to `&[u32]`) is a
//! non-atomic read racing with atomic writes: undefined behaviour in Rust's memory model,
//! however harmless the hardware makes it. The SIMD backends therefore load `counters`
//! from inline `asm!`, whose meaning is what the instruction does on the machine:
//!
//! - Every lane is an `AtomicU32`, hence 4-byte aligned. x86-64 guarantees that aligned
//!   accesses of up to 8 bytes are atomic; a wider vector access may be carried out as
//!   several accesses, and implementations split it at boundaries of 8 bytes or more
//!   (their load-path widths), never inside an aligned 4-byte element. So each lane is
//!   read by one atomic 4-byte access, and the asm block behaves like a sequence of
//!   `load(Relaxed)` calls on those lanes: something Rust code could do, so it adds no
//!   data race. Lanes may be observed at different moments; nothing needs more.
//! - The asm reads only lanes inside the borrowed slice: full loads are bounds-checked
//!   by the loops, and the partial load at the end (`vpmaskmovd`, masked `vmovdqu32`)
//!   does not access masked-off lanes at all (no read, no fault). It writes nothing and
//!   touches no stack or flags (`pure, readonly, nostack, preserves_flags`).
//! - On AArch64 the NEON backend loads the counters with `ld1 {v.4s}`, an element
//!   load: the Arm Architecture Reference Manual (single-copy atomicity, B2.2.1) makes
//!   each element access of an Advanced SIMD element or structure load that is aligned
//!   to the element size single-copy atomic. Every lane is a 4-byte aligned
//!   `AtomicU32`, so each is read by one atomic 4-byte access, the same argument as
//!   above. (`ldr q`/`ldp q` are not used: their guarantee is for 8-byte halves of an
//!   8-byte aligned access.) NEON has no masked load, so the last 1-3 lanes are read
//!   with scalar Relaxed loads; the asm reads only in-bounds lanes.
//! - `excluded` is plain shared-immutable memory, loaded with ordinary intrinsics.
//!
//! And correctness does not even rest on the first point: a scan of counters that other
//! threads change is a hint (`min`, `ties` and the index may each be one update stale),
//! and the caller charges a counter only through a compare-and-swap from the value it
//! saw, on the real atomic. A stale or misread value costs a retry, never a lost or
//! doubled count. Under `cfg(miri)` and `cfg(loom)`, and off x86-64 and aarch64 (with
//! NEON), only the scalar backend is compiled: Miri cannot run inline asm and loom's
//! atomics are not plain memory.
