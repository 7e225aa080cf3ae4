//! Two routers hold a 4:1 policy together when their summaries carry the
//! fair-share counters (the target: within 10 %), and do not with
//! the loads alone (dynamo #15187's drift); one router is the reference.

use workerpick_sim::shares::{Scenario, Setup, run_all, table};

#[test]
fn two_routers_hold_the_ratio_only_with_the_counters() {
    let s = Scenario::default();
    let runs = run_all(&s);
    let table = table(&s, &runs);
    println!("{table}");
    for r in &runs {
        let ratio = r.ratio();
        match r.setup {
            Setup::OneRouter | Setup::Counters { .. } => {
                assert!((3.6..=4.4).contains(&ratio), "{:?}: {ratio:.2}\n{table}", r.setup)
            }
            Setup::LoadsOnly { .. } => assert!(ratio < 2.0, "{:?}: {ratio:.2}\n{table}", r.setup),
        }
        assert!(r.served.iter().sum::<u64>() > 0, "{table}");
    }
}
