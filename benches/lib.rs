//! Empty: this package holds only the benchmarks (see `Cargo.toml`).
