#!/usr/bin/env bash
# The AVX-512 scan kernel, run on an emulated CPU (bochscpu) against a reference, so
# that it is tested on hosts without AVX-512 too. Builds src/scan/avx512.rs, the
# file the library ships, as a static ELF (ci/avx512/), then ci/avx512/check.py runs
# it on every length 0-600 and 1000-1048 at every alignment, with tails against an
# unmapped page: the plain scans and the weighted scores. Extra arguments go to
# check.py (e.g. --case LEN:PLACEMENT).
set -euo pipefail
cd "$(dirname "$0")/.."
work=target/avx512-emu
mkdir -p "$work"

missing=()
command -v cc >/dev/null || missing+=(gcc libc6-dev)
command -v ld >/dev/null || missing+=(binutils)
command -v python3 >/dev/null || missing+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

venv=$work/venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" show -q bochscpu-python >/dev/null 2>&1 ||
    "$venv/bin/pip" install -q --disable-pip-version-check "bochscpu-python==0.4.0"

# The wheel wants two glibc 2.38 symbols; an older glibc gets them from a shim.
preload=""
if ! "$venv/bin/python" -c 'import bochscpu' 2>/dev/null; then
    cc -shared -fPIC -O2 -o "$work/glibc_shim.so" ci/avx512/glibc_shim.c
    preload=$PWD/$work/glibc_shim.so
fi

cargo build --quiet --release --manifest-path ci/avx512/Cargo.toml --target-dir "$work"
ld -static -Ttext=0x10000000 --gc-sections -e scan_call -u scan_call \
    -o "$work/kernel.elf" "$work/release/libworkerpick_avx512_emu.a"

LD_PRELOAD=$preload "$venv/bin/python" ci/avx512/check.py "$work/kernel.elf" "$@"
