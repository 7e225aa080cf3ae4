#!/usr/bin/env bash
# The Python package: installed by pip through maturin's PEP 517 backend (the
# README's one command) into a virtual environment, then its pytest suite;
# the type stubs checked against the compiled module (mypy's stubtest);
# the binding's own formatting and clippy, warnings as errors. It is its own
# cargo workspace (PyO3 needs an interpreter at build time), so lint.sh does
# not cover it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/py-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.16,<2" pytest mypy
# One target directory for pip's build and clippy's, kept between runs.
export CARGO_TARGET_DIR="$PWD/target/python" PYO3_PYTHON="$PWD/$venv/bin/python"
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./python
# From outside the source tree, so that the installed package is what is imported.
(cd target && "$OLDPWD/$venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests")
# The stubs against the compiled module: every name, signature and default.
(cd target && "$OLDPWD/$venv/bin/python" -m mypy.stubtest workerpick)
cargo fmt --manifest-path python/Cargo.toml --check
cargo clippy --manifest-path python/Cargo.toml --all-targets -- -D warnings
