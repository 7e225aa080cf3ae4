#!/usr/bin/env bash
# Formatting, clippy (default and all features) and rustdoc, warnings are errors;
# then the package crates.io would get builds on its own (`cargo publish --dry-run`).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --workspace --all-targets --all-features -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features
# --allow-dirty: what is checked is the package's contents, not the work tree's state.
cargo publish --dry-run --allow-dirty
