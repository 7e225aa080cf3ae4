//! LLM routing: the cost pick, phased load, and prefill/decode pairs.
//!
//!
//! # Cost pick (LLM routing)
//! [`Cost`](crate::Cost) is the main path of KV-aware LLM routers (Dynamo's
//! default selector): per candidate `c_i = L_i − α·o_i`, with `L_i` the
//! counter as every mode reads it (booked plus reported, plus the health
//! penalty) and `o_i` the request's credit, the blocks of its prompt the
//! worker holds, carried by [`CacheHits`](crate::CacheHits). Dynamo's
//! `α·(blocks − o_i) + L_i` is the same plus a constant, so it ranks and
//! samples alike.
//!
//! *Arithmetic.* Costs are `1000·L_i − α_milli·o_i` in an `i64`:
//! `1000·L < 2^42`, and [`CreditWeight`](crate::CreditWeight) caps
//! `α_milli` at `10^6`, so `α_milli·o < 2^52`; every cost lies in
//! `(−2^52, 2^42)`, nothing wraps, and every difference of two costs is
//! below `2^53`, exact in an `f64`, which is where the softmax starts.
//!
//! *Ranking.* The key is `(unhealthy, cost)`: an unhealthy worker's counter
//! carries [`UNHEALTHY_LOAD`](crate::UNHEALTHY_LOAD), which a large enough
//! credit could outweigh, so health is compared first and a marked worker
//! wins only when no healthy candidate is left. The busy threshold drops a
//! candidate whose reported load is over it before anything is compared.
//! Capacity weights and slow start are not applied: the costs are in the
//! units the load is booked in (blocks), as Dynamo's are. Device-aware's
//! full-hit rule is not a case of this one: it books nothing for a full hit
//! and decides by CPU/accelerator totals, which no per-worker cost states.
//!
//! *The credit input.* A sparse build (`rebuild_sparse` from worker ids,
//! `rebuild_tokens` from [`WorkerToken`](crate::WorkerToken)s a cache index
//! stores) keeps a list of `(slot, incarnation, blocks)` and, per slot, a mark
//! `stamp << 32 | index` stamped with the build: a new build retires every
//! mark by bumping the stamp, so it costs time in the workers it names, not
//! in the pool, and a lookup by slot (device-aware's full hits, the
//! reference pass) is one mark and one entry. Each entry is checked against
//! the pick's set by incarnation, so a slot that changed hands counts for
//! nothing, and neither does a worker that left and came back. The
//! incarnation (`SetView::incs`) is new at every join, unlike the identity
//! generation masks, reports and affinity use: a removed worker inserted
//! again before its slot is reclaimed (a reservation still holds it) gets
//! its slot and generation back, so its reservations, reports and bindings
//! carry on, but its engine's cache is new, so credit recorded for its last
//! stay must not count (test `credit_is_per_incarnation`). `WorkerToken` and
//! the prefix index's holder records carry the incarnation, so the index
//! treats such a worker as a new holder too. A dense build (`rebuild`, or a
//! sparse one naming more than an eighth of the set) also keeps the
//! per-slot arrays the SIMD pass reads, with the incarnations of its set.
//!
//! *`T = 0`.* The reference is one scalar pass (least key, tie count, first
//! tie) and, when several tie, one draw and a second pass to the drawn tie;
//! the booking is a compare-and-swap on the load that tie was judged on, so
//! without releases the pick is exact as least-loaded's is. With sparse
//! credit (a prefix index names few workers) the pick walks the credited
//! entries first: an uncredited worker costs `1000·L ≥ 0`, so a least
//! credited cost below 0 is the answer with no scan at all (only credited
//! workers tie there). Otherwise the SIMD least-loaded scan (sublinear on
//! large pools) gives the least load `m`: a least credited cost below
//! `1000·m` is the answer, one above it leaves the scan's answer (its ties
//! are the scan's), and at equality the ties are the credited ones plus the
//! lanes at `m` (all uncredited: a credited one there would cost less),
//! counted by one SIMD pass and drawn among as one set. Busy thresholds,
//! marked health, capacity weights and stale masks go to the reference. The
//! sparse path draws differently from the reference, but from the same set
//! of least-cost workers (property test `sparse_matches_reference`).
//!
//! *Dense credit (`T = 0`).* When more are credited, one SIMD scan reads each
//! candidate's counter and credit side by side (`scan::least_credited`, the
//! least-loaded scan over another view of the lanes, as the weighted scan
//! is) and compares a `u32` key per lane:
//! `key = 1000·min(x, limit) + α_milli·K − α_milli·o` (wrapping), with `x`
//! the counter ORed with its exclusion, `K` at least every credit
//! (`CacheHits` records it as it is built) and
//! `limit = ⌊(2^32 − 1 − α_milli·K)/1000⌋`. With `o <= K` nothing wraps and
//! the key is the exact cost plus `α_milli·K` for every `x <= limit`; a
//! clamped lane (an excluded one among them) keys at least `1000·limit`, and
//! less than its true key, so a least key below `1000·limit` is exact and so
//! is the set of lanes tied at it. The vectors compute `α·K − α·o` as
//! `α·K + (2^32 − α)·o` (two lane-wise multiplies, two adds; no subtract or
//! 64-bit lane needed); the load the booking validates is recovered from the
//! key, `(key + α·o − α·K)/1000`. The scan declines, and the reference
//! answers, for credits built for another set than the pick's (they would
//! need a per-slot identity check), for `α_milli·K > 2^32 − 1001`, for a
//! least key at or over the bound, and in the cases the sparse path
//! declines for. Each backend (AVX2, AVX-512, NEON and the portable vector
//! code) makes the scalar reference's draws and answers
//! (`scan::tests::credited`), and the cost-level answer is the reference's
//! least cost (property test `dense_matches_reference`).
//!
//! *`T > 0`.* `P(i) = exp(−(c_i − c_min)/((c_max − c_min)·T)) / Σ_j …`
//! over the best health tier, uniform when all costs are equal. The
//! reference is three scalar passes: min, max and tier; the sum of the
//! weights; one 53-bit draw scaled by the sum and the running sum to it.
//! Nothing is stored between passes, so nothing is allocated; a sequential
//! pick samples the formula exactly up to `f64` rounding (chi-square test
//! `softmax_samples_the_formula`); under concurrent bookings the passes may
//! see different loads, which moves the draw within the same tier, and the
//! booking validates the chosen worker's load as at `T = 0`.
//!
//! With sparse credit (at most a quarter of the candidates) the same
//! distribution comes from one SIMD pass and the credited entries. Every
//! uncredited cost is `1000·L`, so one pass for the least and the largest
//! load (`scan::range`) and the credited costs give `c_min` and `c_max`,
//! provided an uncredited worker holds each end (the pass's count at that
//! load exceeds the credited ones there; counted only when a credited worker
//! sits at an end; else the reference answers). The draw is rejection
//! sampling under an exact envelope: with `W_c` the credited weights' sum,
//! `n` the candidates and `w(1000·m)` the largest weight an uncredited one
//! can have, a round draws `x` below `Q = W_c + n·w(1000·m)`; `x < W_c`
//! names a credited worker by the prefix sums of its weights, else one of
//! the `n` candidates is proposed uniformly, refused if credited (its weight
//! is in `W_c`), and kept with probability
//! `exp(−1000·(L − m)/((c_max − c_min)·T))`. A round returns credited
//! worker `i` with probability `w_i/Q` and uncredited worker `j` with
//! `(n·w(1000·m)/Q)·(1/n)·(w_j/w(1000·m)) = w_j/Q`, so the answer is `i`
//! with `w_i/Σ_j w_j`: the formula. The envelope must count all `n`
//! proposals: an earlier one counted only the `u` uncredited
//! (`W_c + u·w(1000·m)`), which drew every uncredited worker `u/n` times
//! too rarely. The test `softmax_samples_the_formula_on_every_fleet`
//! (`selectors/cost/tests/distribution.rs`) checks the whole distribution by
//! chi-square on fleets with one to six credited workers, dense and
//! sparse credit, masked and not, the mode's and the request's
//! temperature, `T ∈ {0.1, 0.5, 1, 5}`: 144 fits at p > 0.001 (50 failed
//! with the old envelope).
//! `exp` runs once per credited worker and once per proposal above the least
//! load, never per candidate; an uncredited proposal is kept with
//! probability at least `exp(−1/T)`, and after 32 missed rounds the
//! reference answers (two exact draws mixed are exact). No vector `exp`: the
//! weights that remain are per credited worker, and a vector one would
//! change results by backend. Credit on more than a quarter of the
//! candidates at `T > 0` is the reference.
//!
//! # Phased load
//! [`Reservation::release_part`](crate::Reservation::release_part) gives back
//! part of a booking's weight and keeps the rest (a request's prefill at its
//! first token, its decode at the end); [`add_charge`](crate::Reservation::add_charge)
//! adds to it. The weight the guard holds is the only record: a part is at
//! most what it still holds, so every unit leaves once (by a part or by the
//! drop) and no counter goes below what other bookings hold. A guard emptied
//! by parts becomes a pin, taken before its last unit goes: `reclaim` reads
//! the counter (Acquire) before the pins, and the decrement (SeqCst) follows
//! the pin, so a reclaim that sees the charge gone sees the pin. The reverse,
//! a pin charged again, charges and then unpins, which that order does not
//! cover; it holds a snapshot naming the slot meanwhile, which keeps
//! `reclaim` off it, and refuses a worker that has left. Plain drops do
//! nothing new: the code is in `storage/phased.rs`.
//!
//! # Prefill/decode pairs
//! [`Pairs`](crate::Pairs) joins two pools through one handle on each and
//! uses nothing but their public picks (`src/pair/`). A pair pick books the
//! decode side first, then decides, then books the prefill side; when the
//! second booking fails the first guard drops before the error returns, so a
//! pair is both bookings or neither, whatever races it (a removal between the
//! two is an ordinary removal under a live guard). A [`Plan::Local`](crate::Plan)
//! pair is one booking on the decode worker, charged the prefill's weight
//! too, whose [`hand_off`](crate::PairReservation::hand_off) gives that share
//! back as a phased part; a disaggregated pair drops its prefill guard there.
//!
//! The [`Decider`](crate::Decider) is llm-d's rule: disaggregate when the
//! decode choice's uncached tokens (`needed − held` from the decode
//! request's cache hits, or the prefill weight without them) exceed the
//! threshold. [`Pairs::preview`](crate::Pairs::preview) finds the decode
//! choice with a preview (no booking, no cursor move) and records that
//! worker's load. [`Pairs::admit`](crate::Pairs::admit) books that worker
//! when its load still reads the same, since an unchanged load is what says
//! the preview still holds for it; otherwise it picks again and decides
//! again (a caller's plan stays). The comparison and the booking are two
//! steps: a booking landing in between is tolerated, as in any pick.
//!
//! A pair's cost is its two bookings plus the moves of their guards into
//! the pair: each side books through a `reserve_with` inlined into the pair
//! (as a call it cost 18 instructions a side in register saves alone), and
//! the pair's own code is inlined into its caller. What is left over two
//! bookings of the same requests is about 130 instructions, 12 ns
//! (BENCHMARKS.md, "Prefill/decode pairs", and the callgrind benchmarks in
//! `iai/benches/pairs.rs`).
