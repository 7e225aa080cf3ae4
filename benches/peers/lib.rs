//! Empty: this package holds only the peer benchmarks (see `Cargo.toml`).
