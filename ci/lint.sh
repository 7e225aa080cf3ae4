#!/usr/bin/env bash
# Formatting and clippy, warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
