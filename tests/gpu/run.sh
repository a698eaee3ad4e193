#!/usr/bin/env bash
# tests/gpu/run.sh - the checks that need a GPU, in at most 5 minutes. Run it from anywhere on a machine with an
# NVIDIA GPU; it works in the repository root.
#
#   ops         build/gpu_ops_cuda: every op on the CUDA backend against the CPU backend, f32, bf16 and f16, with the
#               tolerances stated in tests/gpu/ops.c (same bits for copies, casts, fill/scale/add and AdamW)
#   models      build/gpu_models_cuda: tests/test_models.c (GPT-2, LLaMA, Mistral, Qwen2 against PyTorch's values)
#               with the engine on the GPU, fp32 and bf16, with that file's GPU tolerances
#   train       build/gpu_train_cuda: bf16 training of a small GPT-2 on cuda and cpu: the loss falls, the first
#               steps agree, the same cuda run twice is bit for bit the same
#   throughput  build/bench_gpu_cuda: GPT-2 124M tokens/s, MFU against cuBLAS's bf16 rate, a per-kernel table; then
#               tests/gpu/torch_gpt2.py, the same model in PyTorch eager and torch.compile, and the ratios
#
# It prints the GPU first, writes JSON lines to $OUT/gpu.jsonl (OUT unset: build/gpu/gpu.jsonl) as it goes, so a
# run cut short still reports, and ends with "N passed, N failed"; exit status 0 only when everything passed, 2 when
# there is no GPU. Each phase runs under its own timeout, within ZT_GPU_BUDGET seconds for the whole run (default
# 290). The programs are built with ./build.sh unless build/ already holds them (a build carried to the machine).
# ZT_GPU_BACKEND=cpu runs every phase with the CPU backend in the GPU's place (and a small throughput run), without
# nvidia-smi: a check of this script and its programs on a machine without a GPU.
set -u
cd "$(dirname "$0")/../.."
B=build
DIR=${OUT:-$B/gpu}
JSONL=$DIR/gpu.jsonl
BUDGET=${ZT_GPU_BUDGET:-290}
BACKEND=${ZT_GPU_BACKEND:-cuda}
PASSED=0
FAILED=0

json() { # a JSON string holding $1
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\t'/ }
    printf '"%s"' "${s//$'\n'/ | }"
}
record() { echo "$1" >>"$JSONL"; }
# the number in field $2 of the first line of $1 holding $3 ("" when none)
field() { grep -F -- "$3" "$1" 2>/dev/null | head -n 1 | sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p"; }

mkdir -p "$DIR" || exit 1
: >"$JSONL"
if [[ $BACKEND != cuda ]]; then
    gpu="none: a dry run on the $BACKEND backend (ZT_GPU_BACKEND)"
elif ! gpu=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1) ||
    [[ -z $gpu ]]; then
    echo "no GPU (nvidia-smi failed)"
    record "{\"phase\":\"gpu\",\"error\":\"no GPU (nvidia-smi failed)\",\"detail\":$(json "$gpu")}"
    exit 2
fi
echo "GPU: $gpu"
record "{\"phase\":\"gpu\",\"nvidia_smi\":$(json "$gpu")}"

# show: a phase's JSON lines on the terminal: failures marked, passes counted only (ZT_GPU_VERBOSE shows them)
show() {
    awk -v verbose="${ZT_GPU_VERBOSE:-}" '/"pass":false/ { print "FAIL " $0; fflush(); next }
                                          /"pass":true/ { if (verbose != "") { print "ok   " $0; fflush() } next }
                                          { print "     " $0; fflush() }'
}

# phase NAME LIMIT FN: runs FN with its time limit (LIMIT seconds, or what the budget has left); FN's stdout is
# JSON lines, appended to gpu.jsonl as they come, and its stderr goes to $DIR/NAME.log. The "pass" fields count;
# a program that stops otherwise (a crash, a timeout: any exit status but 0 and 1, or 1 without a failed line) is
# one more failure, with the log's last line; one that ends well without checks of its own counts as one pass.
phase() {
    local name=$1 limit=$2 fn=$3 left rc n0 p f t0=$SECONDS why last
    left=$((BUDGET - SECONDS))
    ((left < limit)) && limit=$left
    if ((limit < 10)); then
        record "{\"phase\":\"$name\",\"error\":\"not run: ${left}s of the ${BUDGET}s budget left\",\"pass\":false}"
        echo "FAIL $name: not run, ${left}s of the budget left"
        FAILED=$((FAILED + 1))
        return
    fi
    echo "== $name (at most ${limit}s)"
    n0=$(wc -l <"$JSONL")
    "$fn" "$limit" 2>"$DIR/$name.log" | tee -a "$JSONL" | show
    rc=${PIPESTATUS[0]}
    p=$(tail -n +$((n0 + 1)) "$JSONL" | grep -c '"pass":true')
    f=$(tail -n +$((n0 + 1)) "$JSONL" | grep -c '"pass":false')
    if [[ $rc != 0 && ($rc != 1 || $f == 0) ]]; then
        why="exit status $rc"
        [[ $rc == 124 || $rc == 137 ]] && why="timed out after ${limit}s"
        last=$(tail -n 1 "$DIR/$name.log")
        why+=${last:+": $last"}
        record "{\"phase\":\"$name\",\"error\":$(json "$why"),\"pass\":false}"
        echo "FAIL $name: $why"
        f=$((f + 1))
    elif [[ $rc == 0 && $p == 0 && $f == 0 ]] && ! tail -n +$((n0 + 1)) "$JSONL" | grep -q '"skipped"'; then
        p=1
    fi
    PASSED=$((PASSED + p))
    FAILED=$((FAILED + f))
    echo "$name: $p passed, $f failed in $((SECONDS - t0))s"
}

# the test runner's lines (ok/FAIL, failure messages, ZT_TEST_VERBOSE's measured errors) as JSON lines
runner_json() {
    awk 'function esc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s); return s }
         /^[0-9]+ passed, [0-9]+ failed$/ { next }
         /^(ok  |FAIL) / { printf "{\"phase\":\"models\",\"test\":\"%s\",\"detail\":\"%s\",\"pass\":%s}\n", $2,
                                  esc(detail), $1 == "ok" ? "true" : "false"; fflush(); detail = ""; next }
         { sub(/^ +/, ""); detail = detail (detail == "" ? "" : " | ") $0 }
         END { if (detail != "") printf "{\"phase\":\"models\",\"error\":\"%s\",\"pass\":false}\n", esc(detail) }'
}

PROGRAMS=(gpu_ops_cuda gpu_models_cuda gpu_train_cuda bench_gpu_cuda)
run_build() {
    local arch
    arch=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
    echo "building for sm_${CUDA_ARCHS:-$arch}: ./build.sh" >&2
    CUDA_ARCHS=${CUDA_ARCHS:-$arch} timeout -k 5 "$1" ./build.sh >&2
}
run_ops() { timeout -k 5 "$1" $B/gpu_ops_cuda --backend "$BACKEND"; }
run_models() {
    ZT_TEST_BACKEND=$BACKEND ZT_TEST_VERBOSE=1 timeout -k 5 "$1" $B/gpu_models_cuda models_ 2>&1 | runner_json
    return "${PIPESTATUS[0]}"
}
run_train() { timeout -k 5 "$1" $B/gpu_train_cuda --backend "$BACKEND"; }
run_bench() {
    local smoke=()
    [[ $BACKEND == cuda ]] || smoke=(--smoke)
    timeout -k 5 "$1" $B/bench_gpu_cuda --backend "$BACKEND" --batch "${ZT_GPU_BATCH:-32}" "${smoke[@]}"
}
run_torch() {
    timeout -k 5 "$1" python3 tests/gpu/torch_gpt2.py --batch "${ZT_GPU_BATCH:-32}" \
        --seconds 5
}

missing=0
for p in "${PROGRAMS[@]}"; do [[ -x $B/$p ]] || missing=1; done
if ((missing)); then
    phase build 240 run_build
else
    record '{"phase":"build","note":"the programs were already built"}'
fi
phase ops 100 run_ops
phase models 45 run_models
phase train 50 run_train
phase throughput 60 run_bench
phase torch 110 run_torch

zt=$(field "$JSONL" tokens_per_s '"bench":"gpu_train"')
eager=$(field "$JSONL" tokens_per_s '"mode":"eager"')
compiled=$(field "$JSONL" tokens_per_s '"mode":"compile"')
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }' || echo null; }
line="{\"phase\":\"throughput\",\"zt_tokens_per_s\":${zt:-null},\"torch_eager_tokens_per_s\":${eager:-null}"
line+=",\"torch_compile_tokens_per_s\":${compiled:-null},\"zt_over_torch_eager\":$(ratio "$zt" "$eager")"
line+=",\"zt_over_torch_compile\":$(ratio "$zt" "$compiled")}"
record "$line"
echo "throughput: zt ${zt:-?} tokens/s; zt / torch eager $(ratio "$zt" "$eager"), zt / torch.compile" \
    "$(ratio "$zt" "$compiled")"
echo "results: $JSONL"
echo "$PASSED passed, $FAILED failed"
[[ $FAILED == 0 && $PASSED -gt 0 ]]
