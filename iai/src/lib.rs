//! Instruction-count gates for `workerpick`; the benchmark is `benches/gate.rs`
//! and its budgets are `budgets.toml`. Run it with `ci/iai.sh`.
