# Sourced by ci/iai.sh and ci/iai-update.sh: puts the gungraun runner that
# matches the pinned library on PATH and builds with the flags the budgets
# were measured with.

# One source of truth for the version: the pin in iai/Cargo.toml.
gungraun_version=$(sed -n 's/^gungraun = "=\([0-9.]*\)".*/\1/p' iai/Cargo.toml)
if [ -z "$gungraun_version" ]; then
    echo "iai: no exact gungraun pin (gungraun = \"=X.Y.Z\") in iai/Cargo.toml" >&2
    exit 1
fi
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
if [ "$(gungraun-runner --version 2>/dev/null)" != "gungraun-runner $gungraun_version" ]; then
    # --debug: ~50 s instead of ~1:40, and the runner's speed does not matter.
    echo "+ cargo install gungraun-runner --version $gungraun_version --locked --debug"
    cargo install gungraun-runner --version "$gungraun_version" --locked --debug
fi
echo "iai: $(gungraun-runner --version), $(valgrind --version), $(rustc --version)"

# Counts depend on codegen: build exactly as the budgets were measured, with
# no extra flags. Never -C target-cpu=native: valgrind 3.19 dies on AVX-512.
for var in RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_PROFILE_BENCH_DEBUG; do
    if [ -n "${!var:-}" ]; then
        echo "iai: ignoring $var=${!var}"
        unset "$var"
    fi
done
