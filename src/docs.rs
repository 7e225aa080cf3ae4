//! Design notes, rendered with the API docs. Nothing to call here.

/// How the data structure answers DESIGN §2 and §3.
///
/// # Counter storage
/// In-flight counts are one packed array of `AtomicU32`, cache-line aligned
/// and reserved for the pool's worker limit when the pool is built (zeroed
/// memory; on Linux untouched pages cost nothing). It never moves and is freed
/// only with the pool. A [`Reservation`](crate::Reservation) borrows the pool,
/// so its counter outlives it by construction: adding workers cannot lose a
/// decrement, and booking or releasing touches no reference count.
///
/// # Snapshots
/// The worker set is an immutable snapshot (member slots in set order, an
/// exclusion lane per slot for the scan, per-slot identity generations,
/// attributes and keys) published through `arc-swap`. A
/// [`Handle`](crate::Handle) keeps an `arc_swap::Cache` of it and revalidates
/// it with one pointer comparison per pick, so a worker removed before a pick
/// starts is never chosen by it.
///
/// # Slot reuse (the stale-pick hazard)
/// A removed worker's slot is handed to another worker only when (1) no live
/// snapshot names it — each published snapshot carries a liveness flag that its
/// `Drop` clears with Release and the writer reads with Acquire — and then
/// (2) its counter and its pin count read zero (Acquire, pairing with the
/// Release of every release). A pick that loaded an old snapshot keeps that
/// snapshot alive, so its compare-and-swap can only land on the worker it
/// names. Re-adding the same key while its load is alive revives the same slot
/// and identity, so the retained load shows.
///
/// # Booking
/// Power-of-two and least-loaded answer with the load they compared; the
/// booking is a compare-and-swap from that value, and on failure the selector
/// is asked again, at most 32 times, after which the last choice is booked
/// without validating its load (counted in [`PoolStats`](crate::PoolStats)).
/// No booking takes a load past `u32::MAX`: it fails with
/// [`Error::LoadOverflow`](crate::Error::LoadOverflow) and books nothing,
/// since a count that wrapped to zero under live reservations would let the
/// writer reuse their slot.
/// With no releases loads only grow, so a successful swap from the scanned
/// minimum books a true global minimum: `T` threads reserving `k` times over
/// `W` idle workers end at exactly `kT/W` each. A release that lands between
/// the scan and the swap can make a pick one release stale.
/// A reservation keeps the address of its worker's key in the slot storage,
/// found while the pick still holds its snapshot and before the swap (whose
/// fence would otherwise hold those dependent loads back), so reading the
/// worker back is one load.
///
/// # The least-loaded scan
/// One SIMD pass over the packed counters finds the minimum (a branch-free
/// loop at the machine's load rate). Then up to 8 uniform draws over all the
/// lanes each try one lane: the first at the minimum is the pick. A uniform
/// draw accepted on a tie is uniform among the ties, so in an idle or
/// balanced pool, where most lanes tie, a pick is the min pass, one draw and
/// one load. When the tries miss (few ties), a second pass counts the ties
/// per segment of 512 lanes, one draw picks a tie, and a last pass searches
/// only the segment that holds it. Up to 32 lanes are read once into
/// registers and tried once; a miss draws among the ties found in them. Up to
/// 8 lanes are read with scalar loads, which in a reserve-release loop take
/// the just-released count from the store buffer where a vector load would
/// wait. A pool whose workers fill the slots `0..n` (no holes left by
/// removals) scans the counters alone; a request's eligibility mask, or
/// holes, add an exclusion array ORed into each lane. The backend (AVX2,
/// AVX-512 for masked scans, scalar) is detected once at run time, so a
/// default `cargo build --release` gets the fast path. See
/// [`scan`](crate::scan) for why the vector loads of atomics are sound.
///
/// # Selectors
/// Modes are plug-ins behind the object-safe [`Selector`](crate::Selector)
/// trait; the pool's entry points are generic over `S: Selector + ?Sized`, so
/// a built-in called directly is monomorphised and a `&dyn Selector` costs one
/// indirect call. A [`Slot`](crate::Slot) carries the lifetime of its pick, so
/// a selector can only answer with a candidate of the pick at hand.
///
/// # Repository layout
/// The library is the root package; `cargo test` and `cargo build` at the
/// root build only it. The load simulator (`sim/`, `cargo run --release -p
/// workerpick-sim`), the criterion benchmarks and the `BENCHMARKS.md`
/// generator (`benches/`, package `workerpick-benches`) and the
/// instruction-count gate (`iai/`) are workspace members built when named.
/// The peer libraries the benchmarks compare against (`benches/peers/`) and
/// the fuzz targets (`fuzz/`) are crates of their own, outside the workspace,
/// so their dependencies never enter the library's build.
pub mod design {}

/// What this crate does not do, and the edges of what it does.
///
/// - The total in-flight weight booked on one worker is at most `u32::MAX`;
///   a booking past it fails with [`Error::LoadOverflow`](crate::Error::LoadOverflow).
/// - A pool holds at most its worker limit of slots (live workers plus
///   removed ones still draining); the counters for the limit are reserved up
///   front (4 bytes a slot).
/// - A `Handle` that is never used again keeps its cached snapshot alive; the
///   slots of workers removed since then are not reused until it is dropped or
///   picks again (the pool takes fresh slots meanwhile).
/// - Reservations borrow the pool. To move them into `'static` tasks, keep the
///   pool in a `static` (`OnceLock`) or leak it once at start-up.
/// - Least-loaded with concurrent releases may be one release stale; without
///   releases it is exact. Its tie-break is uniform over the lanes as they
///   were read; lanes that move during a scan shift the odds slightly (a pick
///   is always a lane seen at the minimum, validated by the compare-and-swap).
/// - Least-loaded's speed depends on how many workers tie: an idle or
///   balanced pool takes the fast path (the min pass and one random try);
///   with only a few workers at the minimum it also counts and searches the
///   ties (about 2.5 times the work at 1024 workers, see BENCHMARKS.md).
/// - The AVX-512 kernel (masked scans on AVX-512 CPUs) is tested only where
///   the test machine has AVX-512: the development machine of this release
///   did not, so it ran the AVX2 and scalar kernels only. `WORKERPICK_SCAN=avx2`
///   (or [`Pool::with_scan_backend`](crate::Pool::with_scan_backend)) opts out.
/// - Packages considered and left out: `wide` picks instructions at compile
///   time only, and on the default x86-64 target its unsigned 32-bit min is
///   per-lane scalar (slower than a plain loop), so the scan uses `std::arch`
///   with run-time detection instead; `portable-atomic` is not needed because
///   every atomic here is a native 32- or 64-bit one.
pub mod limitations {}
