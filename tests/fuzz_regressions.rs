//! Regression tests for bugs the fuzz targets (`fuzz/`) found, one per bug.

use workerpick::{Eligibility, Error, LeastLoaded, Pool, Random, Request, RoundRobin};

/// `fuzz/artifacts/ops/crash-71cfa3b7…`: a mask from `Eligibility::new()`
/// ("admits nothing until rebuilt") was refused as built for another pool.
#[test]
fn an_unbuilt_mask_admits_nothing() {
    let unbuilt = Eligibility::new();
    let req = Request::new().eligible(&unbuilt);

    let empty: Pool<u8> = Pool::new();
    assert_eq!(empty.select_with(&RoundRobin::new(), &req), Err(Error::NoWorkers));

    let pool = Pool::from_workers([1u8, 2, 3]).unwrap();
    assert_eq!(
        pool.select_with(&Random::new(), &req),
        Err(Error::NoEligibleWorker)
    );
    assert_eq!(
        pool.preview_with(&RoundRobin::new(), &req),
        Err(Error::NoEligibleWorker)
    );
    assert!(matches!(
        pool.reserve_with(&LeastLoaded::new(), &req),
        Err(Error::NoEligibleWorker)
    ));
    assert_eq!(
        pool.handle().select_with(&Random::new(), &req),
        Err(Error::NoEligibleWorker)
    );

    // Once built it admits what it was built with.
    let mut mask = Eligibility::new();
    mask.rebuild(&pool, |&w| w == 2);
    assert_eq!(
        pool.select_with(&Random::new(), &Request::new().eligible(&mask)),
        Ok(2)
    );
}
