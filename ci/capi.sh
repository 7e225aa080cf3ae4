#!/usr/bin/env bash
# The C ABI: its own cargo workspace (capi/), linted with warnings as errors;
# the committed header checked against cbindgen's output where cbindgen is
# installed (`cargo install cbindgen --locked`; building it takes minutes, so
# CI without it checks the header by compiling the C test against it); then
# the C test program built with cc, once plain and once under
# AddressSanitizer (whose leak checker also proves every handle is freed);
# the cgo example in go/ where Go is installed.
set -euo pipefail
cd "$(dirname "$0")/../capi"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test --quiet
if command -v cbindgen >/dev/null; then
    cbindgen --quiet --config cbindgen.toml --crate workerpick-capi --output target/workerpick.h
    diff -u include/workerpick.h target/workerpick.h || {
        echo "include/workerpick.h is stale: regenerate it with cbindgen (see this script)" >&2
        exit 1
    }
else
    echo "cbindgen not installed: header checked by compiling against it only"
fi
cargo build --release
lib=target/release/libworkerpick_c.a
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic -Iinclude)
cc "${cflags[@]}" -O2 tests/capi_test.c "$lib" -lpthread -ldl -lm -o target/capi_test
./target/capi_test
cc "${cflags[@]}" -O1 -g -fsanitize=address -fno-omit-frame-pointer tests/capi_test.c "$lib" \
    -lpthread -ldl -lm -o target/capi_test_asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 ./target/capi_test_asan
# The cgo example, where Go is installed (Debian: apt-get install golang-go).
if command -v go >/dev/null; then
    (cd go && test -z "$(gofmt -l .)" && go vet . && go run .)
else
    echo "go not installed: the cgo example is skipped"
fi
# The header is valid C++ too.
c++ -x c++ -std=c++17 -Wall -Werror -Iinclude -fsyntax-only - <<<'#include "workerpick.h"'
