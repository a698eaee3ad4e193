#!/usr/bin/env bash
# tests/gpu/sources.sh - one line naming the sources the GPU checks' programs are built from (a hash of zt.h,
# zt_cuda.cuh and every C source and header of tests/, bench/ and examples/): ./build.sh gpu writes it beside the
# programs, and tests/gpu/run.sh runs carried programs only when it still matches.
set -euo pipefail
cd "$(dirname "$0")/../.."
files=(zt.h zt_cuda.cuh tests/*.c tests/*.h tests/gpu/*.c bench/*.c bench/*.h examples/*.c)
printf '%s\n' "${files[@]}" | LC_ALL=C sort | while read -r f; do printf '%s\n' "$f"; cat "$f"; done | sha1sum | cut -c1-16
