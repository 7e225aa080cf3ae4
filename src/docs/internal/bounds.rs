//! Per-block lower bounds: least-loaded in sublinear time on large pools (`bounds/`).
//!
//!
//! # Summarised least-loaded (large pools)
//! A flat scan reads every counter, so its cost grows with the fleet. A pool
//! whose slot limit is `SUMMARISED_SLOTS` (1 024) or more (the default limit
//! among them; `bounds/loads.rs`) also keeps, per block of `2^s` lanes
//! (`s = log2(slots) / 2`, clamped to 64..=1024 lanes: about `sqrt(slots)`,
//! 256 for the default limit), a *bound* `B[b]`; an unmasked least-loaded
//! pick over `SUMMARISED_LANES` (1 024) lanes or more reads the bounds
//! instead (`bounds/least.rs`). Smaller sets, masked picks and a pick that
//! cannot settle (below) scan flat. A pool built with a smaller limit keeps
//! no bounds: its release tests one pool constant, and so does its
//! least-loaded pick. The bounds are *armed* by the first pick that reads
//! them (`LoadBounds::for_pick`, a `SeqCst` store before any raise); until then
//! every bound is still 0 and a release loads one flag (`SeqCst`, after its
//! decrement) and stops. So a default pool that only ever takes random,
//! round-robin or power-of-two picks, or stays under 1 024 workers, pays one
//! load and a branch per release, on a line the release reads anyway
//! (see [`performance`](crate::docs::performance)). Why the flag is enough: a raise
//! whose second look missed a decrement precedes that release's load of the
//! flag in the `SeqCst` order, and the raiser armed before it raised, so the
//! release sees the flag set and lowers as below; the loom model
//! `summary_arming` fails when a pick raises without arming. Once armed, a
//! release pays one load of the block's bound and one of the floor, and a
//! predicted branch each.
//!
//! **Invariant.** Outside the window of an operation that is lowering a
//! counter (between its decrement and its bound update) or raising a bound
//! (between its compare-and-swap and its second look, below), `B[b]` is at
//! most every counter of block `b`. Lanes of the block that no snapshot scans
//! count too: unallocated ones are parked at `u32::MAX` by the writer, and so
//! are free slots, whose counters nothing else touches until reuse.
//!
//! **Why it holds.** Bookings only raise counters. A release decrements
//! (`SeqCst`), loads `B[b]` (`SeqCst`) and lowers it with `fetch_min` only
//! when the new count is below: a load and a predicted branch, so its cost is
//! one load of a line that is written only when a bound moves. The writer
//! does the same when a free or new slot's counter goes to 0 before a
//! snapshot names it. A pick raises a bound only (1) by compare-and-swap from
//! the value `lo` it read, (2) to the least counter it then read in the
//! block, and (3) after an acquire fence between the two reads. Then:
//! - a release whose lowering landed before the pick read `lo` is seen by the
//!   pick's block scan: if `lo` was that lowering's write, the acquire fence
//!   orders its decrement before the scan; otherwise the bound moved after
//!   it, which only a raise based on the decrement or another lowering can do;
//! - a release whose lowering lands between the read and the swap makes the
//!   swap fail (the bound is no longer `lo`); a plain store would overwrite
//!   it, which the loom model `summary_race` shows (`--cfg
//!   workerpick_plain_raise`);
//! - a release whose decrement the scan missed but whose load of `B[b]` came
//!   before the swap does not lower (it saw `lo` at or below its count). So
//!   after the swap the pick fences (`SeqCst`) and reads the block again,
//!   lowering `B[b]` with `fetch_min` to what it finds: by the C++20 rules
//!   for `SeqCst` fences, either that read sees the decrement or the
//!   release's `SeqCst` load saw the raise (and lowered it). This is the
//!   window of the invariant: a bound may stand above a counter from the swap
//!   to the second look. (Loom models `SeqCst` loads as acquire loads, so
//!   under loom the release fences before its load, the form loom checks.)
//! - the same value written twice (a bound raised from `lo`, then lowered
//!   back to `lo` by a release before the raiser's swap) lets the swap succeed
//!   on a scan that missed that release; the second look repairs it, so it is
//!   another instance of the same window.
//!
//! **The floor.** One more value, `F` (`LoadBounds::floor`, on a cache line of
//! its own), with the number of blocks it covers: outside the same kind of
//! windows, `F` is at most every counter of the blocks `0..covered`. It
//! follows the bounds' rules one level up. Every lowering of a bound is
//! followed, in the same thread, by a `SeqCst` load of `F` and a lowering
//! of its value when the new count is below (a release pays that load too:
//! about 4 instructions more in the callgrind gate); a raise's repair of a
//! bound lowers `F` the same way. A pick raises `F` by compare-and-swap
//! from the value it read, to the least bound of its blocks, covering those
//! blocks; then it fences (`SeqCst`) and reads the bounds again, lowering
//! `F` to what it finds. A lowering of a bound that the pick's first read
//! missed either precedes that fence (the second look sees it) or is
//! followed by a load of `F` that sees the raise (and lowers it). Without the
//! compare-and-swap, or without the second look, the loom model
//! `summary_race` fails. The covered count keeps a pick of an older snapshot,
//! which reads fewer blocks, from vouching for a block it never read: a
//! worker added there since may be lower. A pick trusts `F` only when it
//! covers all its blocks, and the loom model `summary_floor_growth` fails
//! when it trusts it regardless. (The lowering of `F` by a bound's repair is
//! argued here, not modelled: it needs a release, a raise of that bound and
//! a raise of `F` racing, three threads beyond what the models explore.)
//!
//! **The pick.** `lo`, the least bound, is at most every candidate's
//! effective value (counter `|` exclusion); a lane holding `lo` is therefore
//! at the global minimum, and every lane at the global minimum lies in a
//! block whose bound is `lo`. The pick first tries one uniform lane at the
//! floor `F` (which is at most `lo`, and equal once settled), before it
//! reads any bound: in an idle or balanced pool that is the whole pick (one
//! load of `F`, one of a lane), where reading the bounds of 10^6 workers
//! (about 2 000 of them, 8 KB, evicted between picks by the pick's own
//! random loads) cost more than the rest of the pick. If the try misses, the
//! pick reads the bounds for `lo` and raises `F` to it if it was lower. A
//! uniform try over all `n` lanes (up to 8 when
//! more than 8 blocks are at `lo`) takes a lane holding `lo`:
//! uniform among the ties. If it misses, one pass over the bounds notes the
//! blocks at `lo` (up to 8); when they are more, or an eighth of the blocks
//! or more (ties may be dense), up to 7 more tries are made (past 8 blocks
//! they are then found one by one); the ties at `lo` are counted in each, one pass a
//! block (every lane is at least its block's bound, so the count alone says
//! whether the block holds the minimum); one tie is drawn among them all and
//! found in its block, which the counts name, so one more pass over one
//! block: uniform by construction. With up to 8 blocks at `lo` the counts, the
//! draw and the search are one call into the backend (`Kernel::draw_in_blocks`):
//! a call per block and per search cost more time than the passes over a
//! block of 64 lanes themselves, though the one call runs ~10% more
//! instructions (BENCHMARKS.md, *Large pools*, has the times). Everything
//! after the first try is out of line, so the idle pick keeps a small frame. Blocks at `lo` with no tie whose least
//! counter is higher get raised on the way; if no tie was found, the pick starts over (3 times) if
//! it raised any, else a block owes its bound to a lane the pick may not
//! return (a draining worker's) and the pick scans flat. The answer is booked
//! by the same validated compare-and-swap, so under reservation-only
//! concurrency (no release, bounds only rise) every booking lands on a lane at
//! the global minimum, and `T` threads × `k` reservations over `W` idle
//! workers end at `kT/W` each. A pick costs two loads (the floor and a lane)
//! when the pool is balanced and the floor settled, else one pass over
//! `n / 2^s` bounds and a try, plus `c · 2^s` lanes when the try
//! misses (`c` blocks at the least bound; more tries are made only when `c`
//! is above 8 or an eighth of the blocks); the worst case, ties thinly
//! spread over many blocks, is the flat scan.
//!
//! **Switch point.** Measured with least-loaded reserve + read + release on a
//! pool with bounds (limit 2^17, blocks of 256), summarised against flat, in
//! ns (x86-64, AVX-512, 2 shared cores; idle / 4 ties): 512 lanes 41-51 /
//! 100-150 against 55-59 / 91-109; 1024 lanes 38-48 / 100-147 against 56-77
//! / 105-148; 2048 lanes 47-50 / 126-133 against 105-107 / 218-223. At 1024
//! the summarised pick wins idle and ties with 4 ties, so `SUMMARISED_LANES`
//! is 1024. Larger (criterion, `least-loaded-large`, with the floor): 10^4
//! workers 32 / 68 against 130 / 591; 10^5 53 / 66 against 3 189 / 6 165;
//! 10^6 196 / 217 against 40 360 / 86 666. Before the floor, an idle pick at
//! 10^6 spent most of its time reading the ~2 000 bounds (211 against 148 ns
//! with them skipped, in one session). What the bounds and the floor cost a
//! release (random reserve + release beside the same pool built
//! `with_flat_scan()`) is within the noise of those memory-bound picks: one
//! run measured 1.2-1.3 ns at 10^4 and 10^5, the next −1.2 and −6.2 ns, and
//! +58 ns at 10^6, where a spot run had the opposite sign (112 against 154
//! ns; BENCHMARKS.md, *Large pools*).
//!
//! # Bounds on weighted scores
//! (`bounds/scores.rs`.)
//! Per-block lower bounds on the weighted least-loaded scores, for the
//! weighted summarised pick (`bounds::least_scored`): the counters' bounds
//! (`bounds::loads`) say nothing of `(load + 1) · L / c`, whose order is
//! not the counters' order.
//!
//! A score depends on the capacities, which change while requests fly (a
//! capacity set at run time, slow start's ramp), and every capacity change may
//! change `L`, and so every lane's factor. So each bound is tagged with the
//! *version* of the factors it was computed under, and so is each slot's
//! factor, as releases read it:
//!
//! - the writer installs a snapshot's factors under a new version before it
//!   publishes the snapshot (`Scores::install`): one tagged factor per lane;
//! - a pick of version `v` trusts a bound tagged `v` and reads any other as 0
//!   (nothing known); it raises a bound by compare-and-swap from the tagged
//!   value it read, so a raise computed under one version never lands on a
//!   bound another version has written since;
//! - a release whose slot's factor is tagged as the bound of its block lowers
//!   the bound to the slot's new score; one whose factor has another tag
//!   lowers the bound to 0. Lowering is always safe: 0 bounds everything.
//! - above the bounds, one tagged floor follows the same rules one level up
//!   (as the counters' floor does): every lowering of a bound is followed by
//!   one of the floor; picks raise it by compare-and-swap, then look at the
//!   bounds again.
//!
//! Bounds are of `min(score, u32::MAX)` for the exact score
//! `(load + 1) · factor` (a request of weight 1, the default: heavier requests
//! scan flat). The scan's scores clamp the load (`weighting`), which only
//! lowers them, so a block's least clamped score is a valid bound too.
//! Versions are 32 bits and never 0; one would be reused after 2³² changes of
//! the factors, while a pick of the first still runs.
//!
//! The invariant, and why the raise's second look keeps it, are in
//! [`docs::internal::bounds`](crate::docs::internal::bounds).
//!
//! # The weighted summarised pick
//! (`bounds/least_scored.rs`.)
//! The weighted summarised least-loaded pick: the weighted scan's answer for a
//! request of weight 1, reading per-block lower bounds on the lanes' scores
//! (`bounds::scores`) and only the blocks at the least of them, instead of
//! every lane's score.
//!
//! The argument is that of `bounds::least`, over scores: every lane's score is
//! at least its block's bound, so at least the least bound `lo`; a lane
//! scoring `lo` is therefore at the global minimum, and every lane at the
//! global minimum lies in a block whose bound is `lo`. Bounds tagged with
//! another version of the factors than the pick's count as 0 (nothing known).
//!
//! The pick first tries one lane at the floor of the bounds (at most every
//! bound; `bounds::scores`), before it reads any bound: in an idle or
//! balanced pool that is the pick. Otherwise it reads the bounds (raising the
//! floor if it was below them), then tries lanes drawn uniformly for one
//! scoring `lo` (each accepted try is uniform among the ties; an idle or
//! balanced pool ends there). It draws among the candidates whose factor is
//! at most `lo`, not over all lanes: a lane's score is at least its factor,
//! so the others cannot tie, and in an idle pool only the largest capacity's
//! lanes are left (a quarter of them over capacities 4:2:1:1), every one at
//! `lo`. If every try misses, it counts the ties at
//! `lo` in the blocks whose bound is `lo` (or is unknown) and raises the bound
//! of each that holds none and whose least score is higher, then draws one tie
//! and finds it; if none was found but a bound was raised, `lo` was stale and
//! it starts over. Otherwise it answers `None` and the caller scans flat: the
//! least is above the scores the bounds may hold exactly, more blocks are at
//! `lo` than it counts, or a block owes its bound to a lane the pick may not
//! return (a draining worker).
//!
//! # The summarised pick
//! (`bounds/least.rs`.)
//! The summarised least-loaded pick: the flat scan's answer, reading the
//! per-block lower bounds (`bounds::loads`) and only the blocks at the
//! least of them, instead of every counter.
//!
//! The pick's lanes `0..n` are cut into blocks; the last may reach past `n`
//! (lanes the snapshot does not scan: never a candidate, but their counters
//! count towards the block's bound, see `docs::internal::bounds`). Let `lo` be the least
//! bound. Every lane's effective value (counter `|` exclusion) is at least its
//! block's bound, so at least `lo`; a lane holding `lo` is therefore at the
//! global minimum, and every lane at the global minimum then lies in a block
//! whose bound is `lo`.
//!
//! The pick first tries a lane drawn uniformly over all `n` at the floor (a
//! bound on every counter of the blocks it covers, at most `lo`): a try that
//! finds it is uniform among the ties, and an idle or balanced pool ends
//! there, without reading the bounds. Otherwise it reads the bounds, raises
//! the floor to `lo` if it was below, and tries again at `lo`, up to
//! `SAMPLES` times in all if more than 8 blocks are at `lo`. If the tries miss, it counts
//! the ties at `lo` in the blocks whose bound is `lo`, draws one, and finds
//! it. A block at `lo` whose least counter is higher gets its bound raised on
//! the way; if no tie was found but a bound was raised, `lo` was stale and the
//! pick starts over (a few times). If no tie is found and no bound could be
//! raised, a block at `lo` owes its bound to a lane the pick may not return (a
//! draining worker, or one outside the candidates): the caller scans flat.
//!
//! # Bounds on loads
//! (`bounds/loads.rs`.)
//! Per-block lower bounds on the in-flight counters, for the summarised
//! least-loaded pick (`bounds::least`).
//!
//! The counters are cut into blocks of `1 << shift` lanes; cell `b` holds a
//! value that is never above the least counter of block `b` (the invariant,
//! with its proof, is in [`docs::internal::bounds`](crate::docs::internal::bounds)). Releases lower
//! a cell (`LoadBounds::lowered`); bookings never touch it; a pick that finds a
//! block's least counter above its cell raises the cell by compare-and-swap
//! from the value it read (`LoadBounds::raise`). Above the cells one more
//! value, the floor, is never above the least counter of the blocks it
//! covers (nor, once settled, above their least cell): kept by the same rules (every
//! lowering of a cell is followed by one of the floor; picks raise it by
//! compare-and-swap, `LoadBounds::raise_floor`), it lets an idle or balanced
//! pool's pick try a lane without reading the cells. Only pools with room for
//! `SUMMARISED_SLOTS` slots or more keep a bounds; the others pay nothing
//! on release but a branch on the pool's constant.
//!
//! # Masked picks
//! A mask narrows the candidates, but the bounds stay over every lane, so
//! they bound the admitted lanes too: a lane the mask admits that holds the
//! least bound `lo` is at the admitted minimum. A masked pick therefore runs
//! the same floor try and tries at `lo`, each uniform among the admitted
//! ties (a try that lands on an excluded or higher lane is rejected), with
//! three times the tries of an unmasked one since admitted ties may be
//! sparser. It does not count ties over many blocks: where the mask leaves
//! out the lanes at `lo`, that count would read them all and find none, so
//! after its tries it hands the pick to the flat scan, which is exact. With
//! a mask unrelated to load (half the workers of an idle or balanced pool)
//! the tries land: `masked/16384` in BENCHMARKS.md. A mask that admits only
//! workers above the least load of every block (`loaded-half-above`) scans
//! flat, as before the bounds.
