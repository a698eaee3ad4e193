#!/usr/bin/env bash
# build.sh - build, test and run zt. Run it from anywhere; it works in the repository root.
#
#   ./build.sh          build every program into build/ (and build/NAME_cuda where nvcc exists)
#   ./build.sh test     build, then run the compile matrix, the test runner, the stream tests under
#                       ThreadSanitizer, tests/noalloc.c, the header example, the programs, and (with nvcc)
#                       tests/gpu/run.sh with the CPU backend in the GPU's place; the last line is
#                       "N passed, N failed"
#   ./build.sh asan     the test runner built with AddressSanitizer and UBSan, in build/asan/
#   ./build.sh run      build zt_train and train a small byte-level model on built-in text
#   ./build.sh bench    build and run the benchmarks in bench/
#   ./build.sh fuzz     fuzz the config, safetensors, Hugging Face weights, tokenizer (and its regular expressions), data, checkpoint, chat-template and JSON Lines readers with libFuzzer (FUZZ_RUNS runs each, default 1000000)
#   ./build.sh gpu      only the programs tests/gpu/run.sh runs, for one GPU (CUDA_ARCHS, default 90: H100/H200),
#                       without NCCL (one GPU never uses it; ZT_GPU_NCCL=1 links it), into build/gpu-bin/ with
#                       the stamp of their sources (tests/gpu/sources.sh): small enough to carry to a GPU machine
#
# Environment: CC (default gcc), CFLAGS (replaces the default flags), NVCC, NVCCFLAGS, CUDA_ARCHS
# (the GPUs the _cuda programs are built for; default "80 86 89 90").
# A target is rebuilt when a source, zt.h, this script or its flags are newer than it.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")"
SELF=build.sh

CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O3 -march=native -ffp-contract=off -Wall -Wextra -Werror -std=c11 -pthread}
LDLIBS="-lm -pthread"
ASAN_CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
ASAN_CFLAGS+=" -ffp-contract=off -Wall -Wextra -Werror -std=c11 -pthread"
TSAN_CFLAGS="-O1 -g -fsanitize=thread -ffp-contract=off -Wall -Wextra -Werror -std=c11 -pthread"
# the tests ThreadSanitizer runs in `test`: streams and events, and the communication stream of overlap_comm
# (a missing event between two streams is a data race it reports)
TSAN_TESTS=(events_order long_queues zero_overlap offload_every offload_partial)
NVCC=${NVCC:-$(command -v nvcc || true)}
[[ -z $NVCC && -x /usr/local/cuda/bin/nvcc ]] && NVCC=/usr/local/cuda/bin/nvcc
# GPUs the _cuda programs run on: A100 (80), RTX 30 (86), RTX 40 / L4 / L40 (89), H100 / H200 (90), and
# compute_80 PTX that newer GPUs compile at load time. CUDA_ARCHS="90" builds for one.
if [[ ${1:-} == gpu ]]; then CUDA_ARCHS=${CUDA_ARCHS:-90}; else CUDA_ARCHS=${CUDA_ARCHS:-80 86 89 90}; fi
GENCODE=""
for a in $CUDA_ARCHS; do GENCODE+=" -gencode arch=compute_$a,code=sm_$a"; done
GENCODE+=" -gencode arch=compute_${CUDA_ARCHS%% *},code=compute_${CUDA_ARCHS%% *}"
NVCC_WARN="-Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings"
# Host code as CFLAGS has it: no contraction, and vector FMAs (AVX2, in every x86-64 server since 2013) so the CPU
# backend inside the _cuda programs, the reference the GPU checks compare against, does not fall back to fmaf in
# software (50x slower)
NVCC_HOST="-Xcompiler -ffp-contract=off"
[[ $(uname -m) == x86_64 ]] && NVCC_HOST+=",-mavx2,-mfma"
NVCCFLAGS=${NVCCFLAGS:--O3 -std=c++17 $GENCODE $NVCC_WARN $NVCC_HOST}
NVCC_LDLIBS="-lcublasLt -lcublas -lnccl -lm -lpthread"
if [[ ${1:-} == gpu && -z ${ZT_GPU_NCCL:-} ]]; then
    NVCCFLAGS+=" -DZT_NO_NCCL"
    NVCC_LDLIBS=${NVCC_LDLIBS/ -lnccl/}
fi
B=build
STANDALONE_TESTS=(tests/noalloc.c) # test programs of their own: each one counted test, exit 0 = pass
TEST_TOOLS=(tests/events_dump.c) # programs the checks use: build/events_dump reads TensorBoard event files
GPU_PROGRAMS=(tests/gpu/ops.c tests/gpu/train.c tests/gpu/zero.c bench/gpu.c) # need a GPU: only built as build/NAME_cuda (tests/gpu/)
HEADERS=(zt.h)
[[ -f zt_cuda.cuh ]] && HEADERS+=(zt_cuda.cuh)

usage() {
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$SELF"
    exit 2
}

# ---- building ----------------------------------------------------------------------------------
# Every function here returns non-zero on the first failure, also where a caller tests it with `if`
# (which switches off set -e inside it).

# stale TARGET DEPS...: true when TARGET is missing or older than one of DEPS or this script
stale() {
    local target=$1 dep
    shift
    [[ -e $target ]] || return 0
    for dep in "$@" "$SELF"; do
        [[ $dep -nt $target ]] && return 0
    done
    return 1
}

# stamp FILE TEXT: FILE holds TEXT; it is rewritten (and so becomes newer) only when TEXT changes,
# so a change of flags rebuilds whatever lists FILE as a dependency
stamp() {
    [[ -f $1 && "$(<"$1")" == "$2" ]] || printf '%s\n' "$2" >"$1"
}

# run a command, echoing it first
run() {
    echo "  $*"
    "$@"
}

check_deps() {
    if ! command -v "$CC" >/dev/null; then
        echo "build.sh: no C compiler '$CC' (install gcc, or set CC)" >&2
        exit 1
    fi
    [[ -f /usr/include/jsmn.h && -f /usr/include/stb/stb_ds.h ]] && return 0
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        apt-get update && apt-get install -y libjsmn-dev libstb-dev
    else
        echo "build.sh: zt needs jsmn and stb_ds (/usr/include/jsmn.h, /usr/include/stb/stb_ds.h):" >&2
        echo "  sudo apt-get install libjsmn-dev libstb-dev" >&2
        exit 1
    fi
}

# build_impl DIR FLAGS: DIR/zt.o, the implementation compiled once for this configuration
build_impl() {
    local dir=$1 flags=$2
    mkdir -p "$dir"
    stamp "$dir/flags" "$CC $flags"
    if stale "$dir/zt.o" tests/zt_impl.c "${HEADERS[@]}" "$dir/flags"; then
        run $CC $flags -c tests/zt_impl.c -o "$dir/zt.o" || return
    fi
}

# build_program OUT DIR FLAGS SOURCES...: SOURCES linked against DIR/zt.o (the headers next to the
# first source count as its dependencies too: bench/peak.h)
build_program() {
    local out=$1 dir=$2 flags=$3
    shift 3
    local local_headers=("$(dirname "$1")"/*.h)
    if stale "$out" "$@" "${local_headers[@]}" "${HEADERS[@]}" "$dir/zt.o"; then
        run $CC $flags -o "$out" "$@" "$dir/zt.o" $LDLIBS || return
    fi
}

# build_tests DIR FLAGS: DIR/zt_tests, the runner with every tests/test_*.c
build_tests() {
    if stale "$1/zt_tests" tests/main.c tests/test_*.c tests/*.h "${HEADERS[@]}" "$1/zt.o"; then
        run $CC $2 -o "$1/zt_tests" tests/main.c tests/test_*.c "$1/zt.o" $LDLIBS || return
    fi
}

# build/example_main: zt.h's usage example (the lines between //>>example and //<<example)
build_example() {
    local body=$B/gen/example_body.inc
    mkdir -p $B/gen
    awk '/\/\/<<example/ { on = 0 } on { print } /\/\/>>example/ { on = 1 }' zt.h >"$body.new"
    if cmp -s "$body.new" "$body"; then rm "$body.new"; else mv "$body.new" "$body"; fi
    if [[ ! -s $body ]]; then
        echo "build.sh: zt.h has no lines between //>>example and //<<example" >&2
        return 1
    fi
    if stale $B/example_main tests/example_main.c "$body" zt.h $B/zt.o; then
        run $CC $CFLAGS -I$B/gen -o $B/example_main tests/example_main.c $B/zt.o $LDLIBS || return
    fi
}

# the program built from a source: examples/train.c -> build/zt_train (the programs zt ships), but
# examples/minimal.c -> build/minimal; bench/ops.c -> build/bench_ops; tests/noalloc.c -> build/noalloc;
# tests/gpu/ops.c -> build/gpu_ops
program() {
    local name
    name=$(basename "$1" .c)
    case $1 in
        tests/gpu/*) name=gpu_$name ;;
        examples/minimal.c | tests/*) ;;
        examples/*) name=zt_$name ;;
        bench/*) name=bench_$name ;;
    esac
    echo "$B/$name"
}

# gpu_program SRC: SRC is one of GPU_PROGRAMS
gpu_program() {
    [[ " ${GPU_PROGRAMS[*]} " == *" $1 "* ]]
}

build_cpu() {
    local src
    build_impl $B "$CFLAGS" || return
    build_tests $B "$CFLAGS" || return
    build_example || return
    for src in examples/*.c bench/*.c "${STANDALONE_TESTS[@]}" "${TEST_TOOLS[@]}"; do
        [[ -f $src ]] && ! gpu_program "$src" || continue
        build_program "$(program "$src")" $B "$CFLAGS" "$src" || return
    done
}

# build_cuda_program OUT SOURCES...: SOURCES compiled by nvcc and linked against build/cuda/zt.o (the headers next
# to each source count as dependencies too)
build_cuda_program() {
    local out=$1 src obj objs=() headers=()
    shift
    for src in "$@"; do headers+=("$(dirname "$src")"/*.h); done
    stale "$out" "$@" "${headers[@]}" "${HEADERS[@]}" $B/cuda/zt.o || return 0
    for src in "$@"; do
        obj=$B/cuda/${out##*/}.o
        [[ $# == 1 ]] || obj=$B/cuda/${out##*/}_$(basename "$src" .c).o
        run "$NVCC" $NVCCFLAGS -x cu -c "$src" -o "$obj" || return
        objs+=("$obj")
    done
    run "$NVCC" -o "$out" "${objs[@]}" $B/cuda/zt.o $NVCC_LDLIBS || return
}

# every examples/*.c once more as build/NAME_cuda, and the GPU checks and benchmark (tests/gpu/run.sh runs them):
# program and implementation compiled by nvcc
build_cuda() {
    local src
    [[ -n $NVCC ]] || return 0
    mkdir -p $B/cuda
    stamp $B/cuda/flags "$NVCC $NVCCFLAGS"
    if stale $B/cuda/zt.o tests/zt_impl.c "${HEADERS[@]}" $B/cuda/flags; then
        run "$NVCC" $NVCCFLAGS -x cu -c tests/zt_impl.c -o $B/cuda/zt.o || return
    fi
    for src in examples/*.c "${GPU_PROGRAMS[@]}"; do
        build_cuda_program "$(program "$src")_cuda" "$src" || return
    done
    # tests/test_models.c's checks against PyTorch, on the GPU (tests/gpu/models.c picks the backend)
    build_cuda_program $B/gpu_models_cuda tests/gpu/models.c tests/main.c tests/test_models.c || return
}

# ---- testing -----------------------------------------------------------------------------------

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok   $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $1"; }

# compile_check NAME COMPILER ARGS...: one counted test. The object is kept, so a check whose
# sources did not change is not compiled again.
compile_check() {
    local name=$1 obj=$B/compile/$1.o log=$B/compile/$1.log
    shift
    mkdir -p $B/compile
    if ! stale "$obj" tests/compile/* "${HEADERS[@]}"; then
        pass "compile $name (unchanged)"
    elif "$@" -c -o "$obj" >"$log" 2>&1; then
        pass "compile $name"
    else
        rm -f "$obj"
        fail "compile $name: $*"
        head -n 40 "$log" | sed 's/^/    /'
    fi
}

# the implementation compiled as C11, C++17 and CUDA, and with ZT_STATIC, warnings as errors
compile_matrix() {
    local warn="-Wall -Wextra -Werror"
    compile_check gcc_c11 gcc -std=c11 -O2 $warn tests/compile/compile_c.c
    compile_check clang_c11 clang -std=c11 -O2 $warn tests/compile/compile_c.c
    compile_check gxx_cxx17 g++ -x c++ -std=c++17 -O2 $warn tests/compile/compile_cpp.cpp
    compile_check gcc_c11_static gcc -std=c11 -O2 $warn tests/compile/compile_static.c
    compile_check gxx_cxx17_static g++ -x c++ -std=c++17 -O2 $warn tests/compile/compile_static.c
    if [[ -n $NVCC ]]; then
        compile_check nvcc_cxx17 "$NVCC" -x cu -std=c++17 -arch=sm_80 $NVCC_WARN tests/compile/compile_cuda.cu
    else
        echo "skip compile nvcc_cxx17 (no nvcc)"
    fi
}

# run_runner BINARY: runs the test runner and adds its counts. It runs verbose, so that when it
# crashes (a sanitizer stops at the first error) the tests done before still count; its "ok" lines
# are shown only when ZT_TEST_VERBOSE is set, and its own last line never.
run_runner() {
    local bin=$1 rc=0 summary
    ZT_TEST_VERBOSE=1 "$bin" 2>&1 | tee "$bin.log" |
        awk -v verbose="${ZT_TEST_VERBOSE:-}" '/^[0-9]+ passed, [0-9]+ failed$/ { next }
                                               /^ok   / && verbose == "" { next }
                                               { print; fflush() }' || rc=$?
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$bin.log" | tail -n 1 || true)
    if [[ -n $summary ]]; then
        echo "runner: $summary"
        PASSED=$((PASSED + $(cut -d' ' -f1 <<<"$summary")))
        FAILED=$((FAILED + $(cut -d' ' -f3 <<<"$summary")))
        [[ $rc == 0 || $summary != *" 0 failed" ]] || fail "$bin exited with status $rc"
    else
        PASSED=$((PASSED + $(grep -c '^ok   ' "$bin.log" || true)))
        FAILED=$((FAILED + $(grep -c '^FAIL ' "$bin.log" || true)))
        fail "$bin stopped with status $rc in the test after the last one listed in $bin.log"
    fi
}

# standalone_checks: every STANDALONE_TESTS program, one counted test each
standalone_checks() {
    local src bin
    for src in "${STANDALONE_TESTS[@]}"; do
        [[ -f $src ]] || continue
        bin=$(program "$src")
        if "$bin" >"$bin.log" 2>&1; then
            pass "$src"
        else
            fail "$src (exit status $?):"
            tail -n 20 "$bin.log" | sed 's/^/    /'
        fi
    done
}

example_check() {
    local out
    if out=$($B/example_main 2>&1) && grep -q 'y\[0\] = 1\.50' <<<"$out"; then
        pass "zt.h header example"
    else
        fail "zt.h header example: the output does not contain 'y[0] = 1.50':"
        sed 's/^/    /' <<<"$out"
    fi
}

# expect_output NAME PATTERN COMMAND...: one counted test; COMMAND's output (stdout and stderr) must
# match the extended regular expression PATTERN
expect_output() {
    local name=$1 pattern=$2 out
    shift 2
    out=$("$@" 2>&1) || true
    if grep -Eq -- "$pattern" <<<"$out"; then
        pass "$name"
    else
        fail "$name: the output of '$*' does not match '$pattern':"
        tail -n 20 <<<"$out" | sed 's/^/    /'
    fi
}

# tsan_check: the stream tests under ThreadSanitizer, one counted test
tsan_check() {
    local log=$B/tsan/zt_tests.log
    if ! { build_impl $B/tsan "$TSAN_CFLAGS" && build_tests $B/tsan "$TSAN_CFLAGS"; } >/dev/null; then
        fail "ThreadSanitizer build"
        return
    fi
    TSAN_OPTIONS="halt_on_error=1 exitcode=66" $B/tsan/zt_tests "${TSAN_TESTS[@]}" >"$log" 2>&1
    if grep -Eq '^[1-9][0-9]* passed, 0 failed$' "$log" && ! grep -q ThreadSanitizer "$log"; then
        pass "ThreadSanitizer: ${TSAN_TESTS[*]}"
    else
        fail "ThreadSanitizer: ${TSAN_TESTS[*]} ($log):"
        grep -A 12 -m 1 'ThreadSanitizer\|^FAIL' "$log" | sed 's/^/    /'
    fi
}

# guard_check: the test runner, and zt_train at ZeRO-3 with offload, saving, resuming and sampling, with the CPU
# backend's device memory closed to the host outside stream commands (ZT_TEST_GUARD_DEVICE): a host access to a
# ZT_DEVICE tensor, which works on the CPU and crashes on a GPU, stops them with its stack
guard_check() {
    local log=$B/guard.log dir=$B/check/guard text=$1
    rm -rf $dir
    if ZT_TEST_GUARD_DEVICE=1 $B/zt_tests >"$log" 2>&1 && grep -Eq '^[1-9][0-9]* passed, 0 failed$' "$log"; then
        pass "the test runner with the device memory closed to the host (ZT_TEST_GUARD_DEVICE)"
    else
        fail "the test runner with the device memory closed to the host ($log):"
        grep -A 8 -m 1 'touched\|^FAIL' "$log" | sed 's/^/    /'
    fi
    local f=(--model examples/models/byte-small --data "$text" --data_format text --seq_len 32 --logging_steps 0
             --threads 1 --per_device_train_batch_size 2 --num_processes 2 --bf16 --config $dir/zero3_offload.json)
    mkdir -p $dir
    echo '{"zero_optimization": {"stage": 3, "overlap_comm": true, "stage3_param_persistence_threshold": 0,
           "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}}' >$dir/zero3_offload.json
    log=$B/guard_train.log # the runner's log stays for a failure above
    if ZT_TEST_GUARD_DEVICE=1 $B/zt_train "${f[@]}" --max_steps 2 --output_dir $dir/a >"$log" 2>&1 &&
        ZT_TEST_GUARD_DEVICE=1 $B/zt_train "${f[@]}" --max_steps 3 --resume $dir/a --output_dir $dir/a \
            --sample 8 --prompt "It " >>"$log" 2>&1; then
        pass "zt_train (2 ranks, ZeRO-3, offload, resume, sampling) with the device memory closed to the host"
    else
        fail "zt_train with the device memory closed to the host ($log):"
        grep -A 8 -m 1 'touched\|rror' "$log" | sed 's/^/    /'
    fi
}

# fuzz_replay: every fuzz target (tests/fuzz/fuzz_*.c) built without libFuzzer (tests/fuzz/replay.c runs each
# input once) under ASan and UBSan, and run over the seeds ./build.sh fuzz starts from: the targets keep building,
# and an input that once crashed a reader, kept among the seeds, stays a test
fuzz_replay() {
    local target bin log=$B/fuzz_replay.log seeds f
    mkdir -p $B/fuzz_replay
    : >"$log"
    for target in config safetensors tokenizer regex files chat hf tokenize_file; do
        bin=$B/fuzz_replay/fuzz_$target
        if stale $bin tests/fuzz/fuzz_$target.c tests/fuzz/replay.c "${HEADERS[@]}" &&
            ! gcc -O0 -g -std=c11 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                -o $bin tests/fuzz/fuzz_$target.c tests/fuzz/replay.c -lm -pthread >>"$log" 2>&1; then
            fail "tests/fuzz/fuzz_$target.c does not build ($log)"
            continue
        fi
        local inputs=()
        seeds=$B/fuzz_replay/seeds_$target
        case $target in
            config) inputs=(tests/fuzz/corpus_config/*) ;;
            safetensors) inputs=(tests/ref/hf/*/model*.safetensors) ;;
            tokenizer) inputs=(tests/ref/tokenizers/*/tokenizer.json) ;;
            chat) inputs=(tests/ref/chat/templates/*.jinja tests/fuzz/corpus_chat/*) ;;
            files | hf | regex | tokenize_file) rm -rf $seeds && mkdir -p $seeds && ZT_FUZZ_SEEDS=$seeds $bin >>"$log" 2>&1 && inputs=($seeds/*) ;;
        esac
        if [[ ${#inputs[@]} -gt 0 ]] && $bin "${inputs[@]}" >>"$log" 2>&1; then
            pass "fuzz_$target replays its ${#inputs[@]} seeds under ASan and UBSan"
        else
            fail "fuzz_$target on its seeds ($log):"
            tail -n 5 "$log" | sed 's/^/    /'
        fi
    done
}

# gpu_dry_run: where nvcc is, the GPU checks' programs (./build.sh gpu, as a GPU session carries them) and
# tests/gpu/run.sh with the CPU backend in the GPU's place: the script a GPU session runs, checked end to end
gpu_dry_run() {
    local log=$B/gpu_dry_run.log
    if [[ -z $NVCC ]]; then
        echo "     (no nvcc: the dry run of tests/gpu/run.sh is left out)"
        return
    fi
    if ! ./$SELF gpu >"$log" 2>&1; then
        fail "./build.sh gpu ($log):"
        tail -n 5 "$log" | sed 's/^/    /'
    elif env -u OUT ZT_GPU_BACKEND=cpu tests/gpu/run.sh >>"$log" 2>&1 && tail -n 1 "$log" | grep -Eq ' passed, 0 failed$'; then
        pass "tests/gpu/run.sh with the CPU backend in the GPU's place: $(tail -n 1 "$log")"
    else
        fail "tests/gpu/run.sh with the CPU backend in the GPU's place ($log):"
        grep -E '^FAIL' "$log" | head -n 5 | sed 's/^/    /'
    fi
}

# the programs: zt_train's flags and errors, and examples/minimal.c giving zt_train's losses bit for bit
program_checks() {
    local dir=$B/check text flags m t
    mkdir -p $dir
    text=$dir/text.txt
    printf 'It was the best of times, it was the worst of times, it was the age of wisdom. %.0s' {1..40} >"$text"
    expect_output "zt_train --help lists the flags with defaults" 'per_device_train_batch_size.*default 8' \
        $B/zt_train --help
    expect_output "zt_train names an unknown flag" 'unknown flag --learning_rat ' \
        $B/zt_train --model examples/models/byte-small --learning_rat 1
    expect_output "zt_train names a missing data file" 'cannot open /nonexistent/data.bin' \
        $B/zt_train --model examples/models/byte-small --data /nonexistent/data.bin
    expect_output "zt_train refuses a resume directory without latest" 'has no `latest` file' \
        $B/zt_train --model examples/models/byte-small --data "$text" --resume $dir
    expect_output "zt_train --eval prints the loss" '^loss [0-9]+\.[0-9]{6}$' \
        $B/zt_train --model examples/models/byte-small --data "$text" --eval --seq_len 64
    head -c $(($(wc -c <"$text") / 2)) /dev/zero >$dir/half.mask # the first half no target: another loss
    head -c $(($(wc -c <"$text") - $(wc -c <"$text") / 2)) /dev/zero | tr '\0' '\1' >>$dir/half.mask
    local whole masked
    whole=$($B/zt_train --model examples/models/byte-small --data "$text" --eval --seq_len 64 2>&1 | tail -n 1)
    masked=$($B/zt_train --model examples/models/byte-small --data "$text" --eval --seq_len 64 --mask $dir/half.mask 2>&1 |
             tail -n 1)
    if [[ $whole =~ ^loss\ [0-9.]+$ && $masked =~ ^loss\ [0-9.]+$ && $whole != "$masked" ]]; then
        pass "zt_train --eval counts only --mask's targets ($whole, $masked with half the text masked)"
    else
        fail "zt_train --eval with --mask: '$whole' and '$masked'"
    fi
    rm -rf $dir/eval_export
    expect_output "zt_train --eval --export writes the model it evaluated" "^exported $dir/eval_export/model.safetensors" \
        $B/zt_train --model examples/models/byte-small --data "$text" --eval --seq_len 64 --export $dir/eval_export
    expect_output "zt_train takes the DeepSpeed launcher's --deepspeed --deepspeed_config FILE" '"stage": 3' \
        $B/zt_train --model examples/models/byte-small --deepspeed --deepspeed_config examples/configs/zero3.json --print_config
    expect_output "zt_train without --data says there is nothing to do" 'nothing to do: give --data' \
        $B/zt_train --model examples/models/byte-small
    expect_output "zt_train names a launcher setting that is no number" 'num_processes takes an integer from 1 to 1048576, not "2x"' \
        $B/zt_train --model examples/models/byte-small --data "$text" --num_processes 2x
    expect_output "zt_train refuses a number flag out of its range before training" '--num_train_epochs is -1; it takes 0 to' \
        $B/zt_train --model examples/models/byte-small --data "$text" --num_train_epochs -1
    expect_output "a launcher's RANK outside its WORLD_SIZE is named, before any rendezvous" 'RANK takes an integer from 0 to 1, not "2"' \
        env RANK=2 WORLD_SIZE=2 $B/zt_train --model examples/models/byte-small --data "$text"
    expect_output "a WORLD_SIZE that is no number is named" 'WORLD_SIZE takes an integer from 1 to 256, not "abc"' \
        env RANK=0 WORLD_SIZE=abc $B/zt_train --model examples/models/byte-small --data "$text"
    expect_output "--num_processes against a batch script's SLURM_NTASKS is refused, naming both" \
        '--num_processes 2 and SLURM_NTASKS=4 disagree' \
        env SLURM_PROCID=0 SLURM_NTASKS=4 $B/zt_train --model examples/models/byte-small --data "$text" --num_processes 2
    expect_output "more ranks than the collectives take are refused before any starts" 'at most 256 ranks' \
        $B/zt_train --model examples/models/byte-small --data "$text" --num_processes 514 --num_machines 2 --machine_rank 1
    epoch_check "$text"
    epoch_boundaries_check
    strategy_check "$text"
    best_model_check "$text"
    plateau_check "$text"
    script_flags_check "$text"
    tensorboard_check "$text"
    train_metrics_check "$text"
    eval_batches_check
    sample_eos_check
    final_save_check "$text"
    local sl=(--model examples/models/byte-small --data "$text" --seq_len 32 --per_device_train_batch_size 2
              --logging_steps 0 --save_steps 2 --save_total_limit 2 --output_dir $dir/limit)
    rm -rf $dir/limit
    if $B/zt_train "${sl[@]}" --max_steps 6 >/dev/null 2>&1 &&
        $B/zt_train "${sl[@]}" --max_steps 10 --resume $dir/limit >/dev/null 2>&1 &&
        [[ "$(cd $dir/limit && echo global_step*)" == "global_step10 global_step8" ]] &&
        [[ "$(cat $dir/limit/latest)" == global_step10 ]]; then
        pass "--save_total_limit keeps the newest checkpoints, across a resume"
    else
        fail "--save_total_limit: $(ls $dir/limit 2>&1 | tr '\n' ' ')"
    fi
    flags=(--max_steps 6 --per_device_train_batch_size 2 --seq_len 32 --gradient_accumulation_steps 2
           --learning_rate 1e-3 --warmup_steps 2 --bf16)
    rm -rf $dir/out
    if m=$($B/minimal examples/models/byte-small "$text" "${flags[@]}" 2>&1 | grep '^step') &&
        $B/zt_train --model examples/models/byte-small --data "$text" "${flags[@]}" --output_dir $dir/out \
            --logging_steps 0 >/dev/null 2>&1 &&
        t=$(sed 's/{"step": \([0-9]*\), "loss": \([^,]*\),.*/step \1 loss \2/' $dir/out/metrics.jsonl) &&
        [[ -n $m && $m == "$t" ]]; then
        pass "examples/minimal.c prints zt_train's losses, bit for bit"
    else
        fail "examples/minimal.c and zt_train disagree:"
        paste <(echo "$m") <(echo "$t") | sed 's/^/    /'
    fi
    # a new run into that --output_dir would write over its checkpoints: refused, unless --overwrite_output_dir
    expect_output "zt_train refuses an --output_dir an earlier run left, naming --resume and --overwrite_output_dir" \
        'holds an earlier run .*--resume .* continues it, --overwrite_output_dir' \
        $B/zt_train --model examples/models/byte-small --data "$text" "${flags[@]}" --output_dir $dir/out
    launcher_checks "$text"
}

# the Trainer's train metrics at the end, as run_clm.py prints and saves them: total_flos is transformers'
# floating_point_ops summed (6 x tokens x the 793344 parameters outside byte-small's embeddings, as
# num_parameters(exclude_embeddings=True) counts them), carried in trainer_state.json across --resume
train_metrics_check() {
    local text=$1 dir=$B/check/train_metrics out first
    local run=($B/zt_train --model examples/models/byte-small --data "$text" --seq_len 32 --per_device_train_batch_size 4
               --threads 1 --logging_steps 0 --save_steps 2 --output_dir $dir)
    rm -rf $dir
    out=$("${run[@]}" --max_steps 3 2>&1) || true
    first=$(cat $dir/train_results.json 2>/dev/null)
    if grep -q '^  total_flos               = *1GF$' <<<"$out" && grep -q '^\*\*\*\*\* train metrics \*\*\*\*\*$' <<<"$out" &&
        grep -q '^    "total_flos": 1827864576.0,$' <<<"$first" && grep -q '^    "train_steps_per_second": ' <<<"$first" &&
        grep -q '^  "total_flos": 1218576384.0,$' $dir/global_step2/trainer_state.json &&
        "${run[@]}" --max_steps 5 --resume $dir >/dev/null 2>&1 &&
        grep -q '^    "total_flos": 3046440960.0,$' $dir/train_results.json; then
        pass "zt_train's train metrics: total_flos as the Trainer sums it (6 x tokens x non-embedding parameters), across --resume"
    else
        fail "zt_train's train metrics ($dir): $out $first $(cat $dir/train_results.json 2>&1)"
    fi
    # --do_eval, as run_clm.py's: an evaluation after training, its metrics with exp(eval_loss) as the perplexity
    # in eval_results.json, and all_results.json the train and eval metrics together
    rm -rf $dir
    out=$("${run[@]}" --max_steps 2 --val_data "$text" --do_train --do_eval 2>&1) || true
    local loss ppl
    loss=$(sed -n 's/^    "eval_loss": \(.*\),$/\1/p' $dir/eval_results.json 2>/dev/null)
    ppl=$(sed -n 's/^    "perplexity": \(.*\)$/\1/p' $dir/eval_results.json 2>/dev/null)
    if grep -q '^\*\*\*\*\* eval metrics \*\*\*\*\*$' <<<"$out" && grep -q '^  perplexity              = ' <<<"$out" &&
        [[ -n $loss && -n $ppl ]] && awk -v l="$loss" -v p="$ppl" 'BEGIN { exit !(l > 1 && p > 0 && (exp(l) - p) / p < 1e-12 && (p - exp(l)) / p < 1e-12) }' &&
        grep -q '^    "eval_samples": [0-9]*,$' $dir/all_results.json && grep -q '^    "train_loss": ' $dir/all_results.json &&
        grep -q "^step 2 | val_loss $(printf '%.6f' "$loss")$" <<<"$out"; then
        pass "zt_train --do_eval evaluates after training as run_clm.py does (eval loss $loss, perplexity $ppl)"
    else
        fail "zt_train --do_eval: $out $(cat $dir/eval_results.json $dir/all_results.json 2>&1)"
    fi
}

# the last step's checkpoint is this run's, also where an earlier run left one of that step (--overwrite_output_dir,
# or --resume from an earlier checkpoint of a run that went further)
final_save_check() {
    local text=$1 dir=$B/check/final_save a b
    local run=($B/zt_train --model examples/models/byte-small --data "$text" --seq_len 32 --per_device_train_batch_size 2
               --threads 1 --logging_steps 0 --output_dir $dir)
    rm -rf $dir
    "${run[@]}" --max_steps 4 --save_steps 2 >/dev/null 2>&1 || true
    a=$(cksum <$dir/global_step4/zt_rank_00000.safetensors 2>&1)
    "${run[@]}" --max_steps 4 --resume $dir/global_step2 --learning_rate 1e-2 >/dev/null 2>&1 || true
    b=$(cksum <$dir/global_step4/zt_rank_00000.safetensors 2>&1)
    "${run[@]}" --max_steps 4 --overwrite_output_dir --seed 7 >/dev/null 2>&1 || true
    if [[ -n $a && -n $b && $a != "$b" && $b != "$(cksum <$dir/global_step4/zt_rank_00000.safetensors 2>&1)" ]] &&
        [[ $(cat $dir/latest 2>/dev/null) == global_step4 ]]; then
        pass "the last step's checkpoint replaces one an earlier run left (--resume from an earlier step, --overwrite_output_dir)"
    else
        fail "the last step's checkpoint was not this run's ($dir: $a / $b)"
    fi
}

# the Trainer's strategies: --save_strategy epoch and --eval_strategy epoch where each pass over the data ends (a
# checkpoint at the end too), --logging_strategy no prints no step lines, --save_strategy no writes no checkpoint;
# an evaluation without --val_data is refused
strategy_check() {
    local text=$1 dir=$B/check/strategy out windows first evals
    local run=($B/zt_train --model examples/models/byte-small --data "$text" --seq_len 32 --per_device_train_batch_size 4
               --threads 1)
    rm -rf $dir
    out=$("${run[@]}" --val_data "$text" --max_steps 60 --save_strategy epoch --eval_strategy epoch \
        --logging_strategy no --output_dir $dir/epoch 2>&1) || true
    windows=$(sed -n 's/.* tokens in \([0-9]*\) windows of 32 .*/\1/p' <<<"$out")
    first=$(((windows + 3) / 4)) # 4 rows a step: the pass ends at the step that reads its last window
    evals=$(sed -n 's/^step \([0-9]*\) | val_loss .*/\1/p' <<<"$out" | tr '\n' ' ')
    # (and at step 60, mid-pass, where the run ends it as the Trainer's loop does)
    if [[ -n $windows && $((2 * first)) -lt 60 && $evals == "$first $((2 * first)) 60 " ]] &&
        [[ $(checkpoints $dir/epoch) == "$first $((2 * first)) 60 " ]] &&
        ! grep -q '^step [0-9]*/60 |' <<<"$out"; then
        pass "--save_strategy epoch and --eval_strategy epoch act where each pass ends, and the run; --logging_strategy no"
    else
        fail "--save_strategy/--eval_strategy epoch (passes of $windows windows): evaluations at '$evals', $(ls $dir/epoch 2>&1 | tr '\n' ' ')"
    fi
    local saved=()
    "${run[@]}" --max_steps 3 --save_strategy no --logging_steps 0 --output_dir $dir/no >/dev/null 2>&1 &&
        saved=($dir/no/global_step* $dir/no/lates[t]) || saved=(failed)
    if [[ -f $dir/no/metrics.jsonl && ${#saved[@]} -eq 0 ]]; then
        pass "--save_strategy no writes no checkpoint"
    else
        fail "--save_strategy no: $(ls $dir/no 2>&1 | tr '\n' ' ')"
    fi
    expect_output "--eval_strategy without --val_data is refused" 'eval_strategy steps evaluates on --val_data, and none' \
        "${run[@]}" --eval_strategy steps
    # below 1, the Trainer's share of the run's steps, rounded up: of 15, 0.2 logs every 3, 0.1 evaluates every 2
    # (and at the end), 0.5 saves every 8 (and at the end)
    out=$("${run[@]}" --val_data "$text" --max_steps 15 --logging_steps 0.2 --eval_steps 0.1 --save_steps 0.5 \
        --output_dir $dir/share 2>&1) || true
    local logged
    logged=$(sed -n 's/^step \([0-9]*\)\/15 |.*/\1/p' <<<"$out" | tr '\n' ' ')
    evals=$(sed -n 's/^step \([0-9]*\) | val_loss .*/\1/p' <<<"$out" | tr '\n' ' ')
    if [[ $logged == "1 3 6 9 12 15 " && $evals == "2 4 6 8 10 12 14 15 " && $(checkpoints $dir/share) == "8 15 " ]] &&
        grep -q '"eval_steps": 2,' $dir/share/trainer_state.json && grep -q '"save_steps": 8,' $dir/share/trainer_state.json; then
        pass "--logging_steps, --eval_steps and --save_steps below 1 are shares of the run's steps, as the Trainer's"
    else
        fail "--*_steps as shares of 15 steps: logged at '$logged', evaluated at '$evals', saved $(ls $dir/share 2>&1 | tr '\n' ' ')"
    fi
    expect_output "a step share beside a step count under --load_best_model_at_end is refused" \
        'a share of the steps and a number of steps cannot promise' \
        "${run[@]}" --val_data "$text" --load_best_model_at_end --eval_steps 0.1 --save_steps 4 --output_dir $dir/mixed
    # under a DeepSpeed config the Trainer logs the next step's rate (DeepSpeed's step() moved the schedule before it
    # reads it): WarmupLR, linear over 5 steps to 1e-3, runs steps 1-3 at 0, 0, 2e-4 and logs 0, 2e-4, 4e-4
    mkdir -p $dir && printf '{"optimizer": {"type": "AdamW", "params": {"lr": 0.001}}, "scheduler": {"type": "WarmupLR", "params": %s}}\n' \
        '{"warmup_num_steps": 5, "warmup_type": "linear"}' >$dir/warmup_lr.json
    out=$("${run[@]}" --max_steps 3 --logging_steps 1 --deepspeed $dir/warmup_lr.json --output_dir $dir/ds_lr 2>&1) || true
    logged=$(sed -n 's/^step [0-9]*\/3 | loss [^|]* | lr \([^ ]*\) .*/\1/p' <<<"$out" | tr '\n' ' ')
    if [[ $logged == "0.00e+00 2.00e-04 4.00e-04 " ]]; then
        pass "under a DeepSpeed config zt_train logs the next step's learning rate, as the Trainer does there"
    else
        fail "the learning rate logged under a DeepSpeed WarmupLR: '$logged', the Trainer logs '0.00e+00 2.00e-04 4.00e-04 '"
    fi
    expect_output "two step shares that do not save at every evaluation are refused, with the steps they come to" \
        '0.2 and 0.1 of 15 steps are 3 and 2' \
        "${run[@]}" --val_data "$text" --max_steps 15 --load_best_model_at_end --eval_steps 0.1 --save_steps 0.2 \
        --output_dir $dir/mixed
}

# the evaluations' best steps in a run's metrics.jsonl (strictly lower eval_loss than all before), and the
# multiples of $2 among them
best_steps() {
    awk -v every="${2:-1}" -F'[:,}]' '/"eval_loss"/ { if (n == 0 || $4 + 0 < best) { best = $4 + 0; n++; if ($2 % every == 0) printf "%d ", $2 } }' \
        "$1/metrics.jsonl"
}

# the steps of a save directory's checkpoints, in order
checkpoints() { (cd "$1" && for c in global_step*; do echo "${c#global_step}"; done) | sort -n | tr '\n' ' '; }

# the Trainer's best model, on a validation text the training text overfits away from: --save_strategy best
# saves exactly where the eval loss improved; a run killed and resumed saves the same checkpoints (the best so
# far rides in trainer_state.json); --load_best_model_at_end loads the best checkpoint before --export, and
# --save_total_limit 1 keeps it beside the newest
best_model_check() {
    local text=$1 dir=$B/check/best out expect got k
    local run=($B/zt_train --model examples/models/byte-small --data "$text" --val_data $dir/val.txt --seq_len 32
               --per_device_train_batch_size 4 --threads 1 --logging_steps 0 --learning_rate 3e-3 --max_steps 40
               --eval_steps 4)
    rm -rf $dir && mkdir -p $dir && head -c 3000 README.md >$dir/val.txt
    "${run[@]}" --save_strategy best --metric_for_best_model loss --output_dir $dir/whole >/dev/null 2>&1 || true
    (ZT_TRAIN_TEST_KILL=0:20 "${run[@]}" --save_strategy best --metric_for_best_model eval_loss \
        --output_dir $dir/killed || true) >/dev/null 2>&1 # SIGKILL at step 20
    "${run[@]}" --save_strategy best --metric_for_best_model eval_loss --output_dir $dir/killed \
        --resume $dir/killed >/dev/null 2>&1 || true
    expect=$(best_steps $dir/whole) || true
    got=$(checkpoints $dir/whole) || true
    local resumed
    resumed=$(checkpoints $dir/killed) || true
    if [[ -n $expect && $expect == "$got" && $resumed == "$got" &&
          $(grep -c eval_loss $dir/whole/metrics.jsonl) == 10 && $(wc -w <<<"$expect") -lt 10 ]]; then
        pass "--save_strategy best saves where the eval loss improved (steps ${expect% }), and again so killed at 20 and resumed"
    else
        fail "--save_strategy best: improvements at '$expect'; checkpoints '$got', killed and resumed '$resumed'"
    fi
    out=$("${run[@]}" --save_steps 8 --save_total_limit 1 --load_best_model_at_end --output_dir $dir/load \
          --export $dir/hf --export_dtype f32 2>&1) || true
    k=$(best_steps $dir/load 8 | awk '{ print $NF }') || true
    got=$(checkpoints $dir/load) || true
    local best_loss exported
    best_loss=$(sed -n "s/^step $k | val_loss //p" <<<"$out")
    exported=$($B/zt_train --model $dir/hf --data $dir/val.txt --eval --seq_len 32 --per_device_train_batch_size 4 \
               --threads 1 2>&1 | sed -n 's/^loss //p') || true
    if [[ -n $k && $k != 40 && $got == "$k 40 " ]] &&
        grep -q "^loading the best checkpoint, $dir/load/global_step$k (eval_loss $best_loss)" <<<"$out" &&
        [[ -n $best_loss && $exported == "$best_loss" ]]; then
        pass "--load_best_model_at_end exports step $k's weights (their eval loss $exported again); --save_total_limit 1 keeps it and the newest"
    else
        fail "--load_best_model_at_end: best saved step '$k', checkpoints '$got', its loss '$best_loss', the export's '$exported'"
    fi
    # resumed into another --output_dir: the best checkpoint is the recorded one, where it is, as the Trainer keeps it
    out=$("${run[@]}" --save_steps 8 --max_steps 44 --load_best_model_at_end --output_dir $dir/elsewhere \
          --resume $dir/load 2>&1) || true
    if grep -q "^loading the best checkpoint, $dir/load/global_step$k (eval_loss $best_loss)" <<<"$out" &&
        grep -q "was trained with other settings: max_steps 40 -> 44; this run's apply from step 41 on$" <<<"$out"; then
        pass "resumed into another --output_dir, --load_best_model_at_end loads the recorded best, $dir/load/global_step$k (and the new --max_steps is said)"
    else
        fail "resumed into another --output_dir, the best checkpoint $dir/load/global_step$k was not loaded:"
        tail -n 5 <<<"$out" | sed 's/^/    /'
    fi
    # a malformed trainer_state.json in the newest checkpoint: named, key by key, and nothing trains
    local state=$dir/whole/$(cat $dir/whole/latest 2>/dev/null)/trainer_state.json bad=() said
    local -A broken=(['{"best_metric": NaN}']='"best_metric" should be a finite number or null'
                     ['{"best_metric" : 1.5, "best_global_step": 2.5}']='"best_global_step" should be a step or null'
                     ['{"best_metric": 1, "best_global_step": 4, "best_model_checkpoint": "x/global_step4junk"}']='"best_model_checkpoint" should be a checkpoint.s path'
                     ['{"best_metric": 1.0, "log_hist']='a trainer state should be a JSON object, from . to .; this one is cut short')
    for k in "${!broken[@]}"; do
        echo "$k" >"$state" 2>/dev/null || true
        said=$("${run[@]}" --save_strategy best --metric_for_best_model loss --output_dir $dir/whole --resume $dir/whole 2>&1) &&
            bad+=("accepted $k")
        grep -Eq "trainer_state.json: ${broken[$k]}" <<<"$said" || bad+=("$k: $said")
    done
    if [[ ${#bad[@]} -eq 0 ]]; then
        pass "a malformed trainer_state.json is named on --resume (4 kinds, one cut short)"
    else
        fail "a malformed trainer_state.json: ${bad[*]}"
    fi
    expect_output "--metric_for_best_model names the one metric zt computes" 'is loss \(or eval_loss\).*not "accuracy"' \
        "${run[@]}" --metric_for_best_model accuracy --save_strategy best
    expect_output "--load_best_model_at_end needs a checkpoint at every best evaluation" \
        'round multiple of --eval_steps, found 6 and 4' "${run[@]}" --load_best_model_at_end --save_steps 6
}

# --lr_scheduler_type reduce_lr_on_plateau in zt_train: the learning rate halves exactly where torch's rule over
# the logged evaluations says (the second in a row without a gain, patience 1), and a run killed at step 25 and
# resumed from step 20 logs the same steps bit for bit (the schedule's state rides in zt_state.json)
plateau_check() {
    local text=$1 dir=$B/check/plateau
    local run=($B/zt_train --model examples/models/byte-small --data "$text" --val_data $dir/val.txt --seq_len 32
               --per_device_train_batch_size 4 --threads 1 --logging_steps 0 --learning_rate 3e-3 --max_steps 40
               --eval_steps 2 --save_steps 10 --lr_scheduler_type reduce_lr_on_plateau
               --lr_scheduler_kwargs '{"patience": 1, "factor": 0.5}')
    rm -rf $dir && mkdir -p $dir && head -c 3000 README.md >$dir/val.txt # a text the training text overfits away from
    "${run[@]}" --output_dir $dir/whole >/dev/null 2>&1 || true
    (ZT_TRAIN_TEST_KILL=0:25 "${run[@]}" --output_dir $dir/killed || true) >/dev/null 2>&1 # SIGKILL at step 25
    "${run[@]}" --output_dir $dir/killed --resume $dir/killed/global_step20 >/dev/null 2>&1 || true
    # torch's rule (patience 1, threshold 1e-4 relative) over the logged eval losses: the steps whose learning rate
    # should differ from the step before, and the steps where it did
    local want got
    read -r want got < <(awk -F'[:,}]' 'BEGIN { best = 1e300 }
        /"eval_loss"/ { v = $4 + 0; if (v < best * (1 - 1e-4)) { best = v; bad = 0 } else bad++
                        if (bad > 1) { want = want "," ($2 + 1); bad = 0 } }
        /"learning_rate"/ { lr = $6 + 0; if (seen && lr != last) got = got "," ($2 + 0); last = lr; seen = 1 }
        END { print (want ? want : "-"), (got ? got : "-") }' $dir/whole/metrics.jsonl 2>/dev/null) || true
    if [[ -n $want && $want == "$got" && $want == ,*,* ]] &&
        cmp -s <(untimed $dir/whole | tail -n 30) <(untimed $dir/killed | tail -n 30); then
        pass "--lr_scheduler_type reduce_lr_on_plateau halves the learning rate where torch's rule says (steps ${want#,}), the same bits killed and resumed"
    else
        fail "reduce_lr_on_plateau: the learning rate changed at steps '$got', torch's rule says '$want'; or the resumed run differs"
    fi
    expect_output "reduce_lr_on_plateau without evaluations is refused" 'reduce_lr_on_plateau follows the evaluations' \
        $B/zt_train --model examples/models/byte-small --data "$text" --lr_scheduler_type reduce_lr_on_plateau
}

# --sample ends at the model's end of sequence as generate() does: tests/ref/hf/llama with generation_config.json's
# eos_token_id 25, greedy from "5 17 33 9 40", gives transformers' tokens through the first 25 (checked with its
# generate(max_new_tokens=25)); without it, all 25 new tokens; and a top_k past an int is refused before anything
sample_eos_check() {
    local dir=$B/check/eos got all
    rm -rf $dir && mkdir -p $dir && cp tests/ref/hf/llama/{config.json,model.safetensors} $dir/ &&
        printf '{"eos_token_id": [25]}\n' >$dir/generation_config.json
    got=$($B/zt_train --model $dir --sample 25 --prompt "5 17 33 9 40" --temperature 0 --seq_len 32 2>/dev/null | tail -n 1)
    all=$($B/zt_train --model tests/ref/hf/llama --sample 25 --prompt "5 17 33 9 40" --temperature 0 --seq_len 32 \
          2>/dev/null | tail -n 1 | wc -w)
    if [[ $got == "5 17 33 9 40 8 38 52 41 38 25 " && $all == 30 ]]; then
        pass "--sample stops at generation_config.json's eos_token_id, with transformers' greedy tokens"
    else
        fail "--sample with an eos_token_id: '$got' (transformers: '5 17 33 9 40 8 38 52 41 38 25'); without it $all tokens"
    fi
    expect_output "a --top_k past an int is refused before anything starts" '--top_k is 4294967297; it takes 0 to 2147483647' \
        $B/zt_train --model tests/ref/hf/llama --sample 8 --prompt "5 17" --top_k 4294967297
    # generation_config.json's do_sample false (transformers' default) samples greedily where no flag says otherwise
    printf '{"do_sample": false}\n' >$dir/generation_config.json
    got=$($B/zt_train --model $dir --sample 12 --prompt "5 17" --seq_len 32 2>/dev/null | tail -n 1)
    all=$($B/zt_train --model tests/ref/hf/llama --sample 12 --prompt "5 17" --seq_len 32 --temperature 0 2>/dev/null | tail -n 1)
    if [[ -n $got && $got == "$all" ]]; then
        pass "generation_config.json's do_sample false samples greedily, as generate() does"
    else
        fail "generation_config.json's do_sample false: '$got', greedy '$all'"
    fi
}

# a masked evaluation set as the Trainer's evaluate() averages it: each --per_device_eval_batch_size batch's mean
# over its tokens, weighted by its rows (tests/ref/make_eval_fixture.py), at 1 and 2 ranks
eval_batches_check() {
    local bs got want worst=0 ok=1 two
    local run=($B/zt_train --model tests/ref/hf/llama --data tests/ref/eval/val.bin --mask tests/ref/eval/val.bin.mask
               --eval --seq_len 16 --per_device_train_batch_size 4 --threads 1)
    for bs in 1 3 8; do
        got=$("${run[@]}" --per_device_eval_batch_size $bs 2>/dev/null | sed -n 's/^loss //p') || true
        want=$(sed -n "s/^  \"$bs\": \([0-9.]*\),*$/\1/p" tests/ref/eval/expected.json)
        worst=$(awk -v a="$got" -v b="$want" -v w="$worst" 'BEGIN { d = a - b; if (d < 0) d = -d; print (a == "" || b == "") ? 1 : (d > w ? d : w) }')
    done
    two=$("${run[@]}" --per_device_eval_batch_size 3 --per_device_train_batch_size 2 --num_processes 2 2>/dev/null |
          sed -n 's/^loss //p') || true
    awk -v w="$worst" 'BEGIN { exit !(w <= 2e-6) }' || ok=0
    if [[ $ok == 1 && -n $two && $(awk -v a="$two" -v b="$(sed -n 's/^  "3": \([0-9.]*\),*$/\1/p' tests/ref/eval/expected.json)" \
            'BEGIN { d = a - b; print (d < 0 ? -d : d) <= 2e-6 }') == 1 ]]; then
        pass "a masked evaluation averages by the Trainer's eval batches (1, 3, 8 rows; 2 ranks): within $worst of its eval_loss"
    else
        fail "a masked evaluation against the Trainer's eval_loss (tests/ref/eval): worst difference $worst, 2 ranks '$two'"
    fi
    # a batch larger than the set is the set, in one pass of its rows (not a pass per micro-batch of the batch)
    if [[ $("${run[@]}" --per_device_eval_batch_size 37 2>/dev/null) == "$(timeout 60 "${run[@]}" \
            --per_device_eval_batch_size 100000000 2>/dev/null)" ]]; then
        pass "an eval batch larger than the evaluation set is the set"
    else
        fail "an eval batch of 1e8 rows differs from one of the set's 37 rows (or took over a minute)"
    fi
}

# zt_train --num_train_epochs 2 without --max_steps: as many steps as two passes over the data take (each pass's last
# batch shorter, as the Trainer's), and the Trainer's cosine schedule (--warmup_steps 0.1, a share) over exactly them: from 0 up, and down to near 0
epoch_check() {
    local text=$1 dir=$B/check/epochs out windows steps lr first last
    rm -rf $dir
    out=$($B/zt_train --model examples/models/byte-small --data "$text" --seq_len 32 --per_device_train_batch_size 4 \
        --num_train_epochs 2 --lr_scheduler_type cosine --warmup_steps 0.1 --learning_rate 1e-3 --logging_steps 0 \
        --threads 1 --output_dir $dir 2>&1) || true
    windows=$(sed -n 's/^2 epochs of \([0-9]*\) windows: [0-9]* micro-batches of 4 rows, [0-9]* steps a pass: [0-9]* steps$/\1/p' <<<"$out")
    steps=$(sed -n 's/^2 epochs of [0-9]* windows: [0-9]* micro-batches of 4 rows, [0-9]* steps a pass: \([0-9]*\) steps$/\1/p' <<<"$out")
    lr=$(sed -n 's/.*"learning_rate": \([^,]*\),.*/\1/p' $dir/metrics.jsonl 2>/dev/null | sed -n '1p;$p' | tr '\n' ' ')
    read -r first last <<<"$lr"
    if [[ -n $windows && $steps == $((2 * ((windows + 3) / 4))) && $(wc -l <$dir/metrics.jsonl) == "$steps" ]] &&
        awk -v a="$first" -v b="$last" 'BEGIN { exit !(a == 0 && b > 0 && b < 1e-5) }'; then
        pass "zt_train --num_train_epochs 2: $steps steps for $windows windows, the cosine schedule over them (lr $first to $last)"
    else
        fail "zt_train --num_train_epochs 2: steps '${steps:-?}' for windows '${windows:-?}', lr '$lr':"
        tail -n 5 <<<"$out" | sed 's/^/    /'
    fi
}

# passes as the Trainer's: 10 windows in batches of 4 (the last of a pass 2) with accumulation 2 are 2 steps a pass,
# the second of each taking the pass's last micro-batch alone, so --eval_strategy epoch evaluates and saves at steps
# 2 and 4 (epochs 1.0 and 2.0); a run cut at --max_steps 2 of a pass of 3 steps ends that pass there (epoch 0.6667)
epoch_boundaries_check() {
    local dir=$B/check/epoch_bounds out evals saved
    rm -rf $dir && mkdir -p $dir
    head -c 81 README.md >$dir/train.txt # 80 byte-level targets: 10 windows of 8
    head -c 200 CHANGELOG.md >$dir/val.txt
    local run=($B/zt_train --model examples/models/byte-small --data $dir/train.txt --data_format text --seq_len 8
               --per_device_train_batch_size 4 --threads 1 --logging_steps 0 --val_data $dir/val.txt --eval_strategy epoch
               --save_strategy epoch)
    out=$("${run[@]}" --gradient_accumulation_steps 2 --num_train_epochs 2 --output_dir $dir/a 2>&1) || true
    evals=$(sed -n 's/^{"step": \([0-9]*\), "eval_loss": [^,]*, "epoch": \([0-9.]*\)}$/\1@\2/p' $dir/a/metrics.jsonl 2>/dev/null | tr '\n' ' ')
    saved=$(cd $dir/a 2>/dev/null && ls -d global_step* | tr '\n' ' ')
    if [[ $out == *"2 epochs of 10 windows: 3 micro-batches of 4 rows, 2 steps a pass: 4 steps"* &&
          $evals == "2@1.0000 4@2.0000 " && $saved == "global_step2 global_step4 " ]]; then
        pass "zt_train's passes are the Trainer's: 2 steps a pass with a short last batch, evaluated and saved at each end"
    else
        fail "zt_train's passes: evaluations '$evals', checkpoints '$saved':"
        grep epochs <<<"$out" | sed 's/^/    /'
    fi
    # trainer_state.json: the Trainer's log_history (a log a step, the evaluations), carried on by --resume, and the
    # end's train metrics in OUTPUT_DIR/trainer_state.json (run_clm's save_state)
    "${run[@]}" --max_steps 2 --logging_steps 1 --eval_strategy steps --eval_steps 2 --save_strategy steps --save_steps 2 \
        --output_dir $dir/c >/dev/null 2>&1 || true
    "${run[@]}" --max_steps 4 --logging_steps 1 --eval_strategy steps --eval_steps 2 --save_strategy steps --save_steps 2 \
        --output_dir $dir/c --resume $dir/c >/dev/null 2>&1 || true
    local logs evals_logged last
    logs=$(grep -c '"loss": .*"step": [1-4]}' $dir/c/global_step4/trainer_state.json 2>/dev/null)
    evals_logged=$(grep -c '"eval_loss"' $dir/c/global_step4/trainer_state.json 2>/dev/null)
    last=$(grep -c '"train_runtime"' $dir/c/trainer_state.json 2>/dev/null)
    if [[ $logs == 4 && $evals_logged == 2 && $last == 1 ]]; then
        pass "trainer_state.json holds the Trainer's log_history (4 logs and 2 evaluations across a --resume; the end's metrics)"
    else
        fail "trainer_state.json's log_history: ${logs:-?} logs, ${evals_logged:-?} evaluations, train metrics ${last:-?}"
    fi
    # --ignore_data_skip from a checkpoint at a pass's end starts the next pass: the straight run's steps 3 and 4
    local base=($B/zt_train --model examples/models/byte-small --data $dir/train.txt --data_format text --seq_len 8
                --per_device_train_batch_size 4 --threads 1 --logging_steps 0 --gradient_accumulation_steps 2)
    "${base[@]}" --num_train_epochs 2 --save_steps 1 --output_dir $dir/d >/dev/null 2>&1 || true
    mkdir -p $dir/e && cp -r $dir/d/global_step2 $dir/e/ 2>/dev/null
    "${base[@]}" --num_train_epochs 2 --save_steps 1 --output_dir $dir/e --resume $dir/e/global_step2 --ignore_data_skip \
        >/dev/null 2>&1 || true
    if [[ -s $dir/e/metrics.jsonl ]] && diff <(sed -n 3,4p $dir/d/metrics.jsonl | cut -d, -f1-2,5) \
        <(cut -d, -f1-2,5 $dir/e/metrics.jsonl) >/dev/null; then
        pass "zt_train --ignore_data_skip from a pass's end goes on with the next pass, as the straight run"
    else
        fail "zt_train --ignore_data_skip from a pass's end: not the straight run's steps 3 and 4"
    fi
    expect_output "zt_train --max_steps -1 trains by epochs, the Trainer's 3 unless given" \
        '^3 epochs of 10 windows: 3 micro-batches of 4 rows, 2 steps a pass: 6 steps$' \
        "${base[@]}" --max_steps -1 --print_config
    "${run[@]}" --max_steps 2 --output_dir $dir/b >/dev/null 2>&1 || true
    evals=$(sed -n 's/^{"step": \([0-9]*\), "eval_loss": [^,]*, "epoch": \([0-9.]*\)}$/\1@\2/p' $dir/b/metrics.jsonl 2>/dev/null | tr '\n' ' ')
    if [[ $evals == "2@0.6667 " && -d $dir/b/global_step2 ]]; then
        pass "zt_train cut at --max_steps mid-pass ends the pass there, as the Trainer's loop (evaluated at epoch 0.6667)"
    else
        fail "zt_train cut at --max_steps mid-pass: evaluations '$evals'"
    fi
}

# --report_to tensorboard: the Trainer's scalars in OUTPUT_DIR/runs/DATE_HOST/events.out.tfevents.*, read back by
# build/events_dump (every record's CRC checked): train/loss where the Trainer logs (--logging_steps 3 with
# --logging_first_step: steps 1, 3 and 6, not the last, 7) is the mean of metrics.jsonl's losses since the step logged
# before, eval/loss the evaluation's (and its runtime and rates), the end's summary (total_flos: 6 x 7 steps x 2 x 32
# tokens x 793344 parameters) and the start's texts (args, model_config) are there;
# TENSORBOARD_LOGGING_DIR moves the file; a reporter not built is named in a warning
tensorboard_check() {
    local text=$1 dir=$B/check/tensorboard file got want out
    local run=($B/zt_train --model examples/models/byte-small --data "$text" --val_data "$text" --seq_len 32
               --per_device_train_batch_size 2 --max_steps 7 --logging_steps 3 --eval_strategy steps --eval_steps 7
               --threads 1)
    rm -rf $dir
    "${run[@]}" --report_to tensorboard --logging_first_step --output_dir $dir >/dev/null 2>&1 || true
    file=$(echo $dir/runs/*/events.out.tfevents.*)
    got=$($B/events_dump "$file" 2>&1) || got="events_dump failed: $got"
    want=$(awk -F'[:,]' '/"loss"/ { sum += $4; n++; if ($2 == 1 || $2 % 3 == 0) { printf "%d train/loss %.9g\n", $2, sum / n; sum = n = 0 } }
                         /"eval_loss"/ { printf "%d eval/loss %.9g\n", $2, $4 }' $dir/metrics.jsonl 2>/dev/null)
    out=$(TENSORBOARD_LOGGING_DIR=$dir/env "${run[@]}" --max_steps 1 --report_to wandb,tensorboard --output_dir $dir/b 2>&1) || true
    if [[ -n $want ]] && awk 'NR == FNR { w[$1 " " $2] = $3; next }
                         ($1 " " $2) in w { if (($3 - w[$1 " " $2]) ^ 2 > 1e-12 * $3 ^ 2) bad = 1; seen++ }
                         END { exit bad || seen != 4 }' <(echo "$want") <(echo "$got") &&
        grep -q '^7 train/train_loss ' <<<"$got" && grep -q '^6 train/learning_rate ' <<<"$got" &&
        grep -q '^7 train/total_flos 2.132508[0-9]*e+09$' <<<"$got" && grep -q '^7 eval/runtime ' <<<"$got" &&
        grep -q '^7 eval/samples_per_second ' <<<"$got" && grep -q '^7 eval/steps_per_second ' <<<"$got" &&
        grep -q '^0 args/text_summary text {' <<<"$got" && grep -q '^0 model_config/text_summary text {' <<<"$got" &&
        ! grep -q '^7 train/loss ' <<<"$got" &&
        [[ -f $(echo $dir/env/events.out.tfevents.*) ]] && grep -q 'report_to wandb: not built' <<<"$out"; then
        pass "zt_train --report_to tensorboard: the Trainer's scalars (train/loss the mean since the last log, eval/loss), read back"
    else
        fail "zt_train --report_to tensorboard ($file):"
        paste <(echo "$want") <(echo "$got") | head -n 12 | sed 's/^/    /'
    fi
}

# a command line in the Transformers scripts' form (--model_name_or_path, --bf16 True, --optim, --do_train, ...)
# trains the bits of zt_train's own form
script_flags_check() {
    local text=$1 dir=$B/check/script_flags
    local f=(--data "$text" --seq_len 32 --per_device_train_batch_size 2 --max_steps 4 --logging_steps 0 --threads 1)
    rm -rf $dir && mkdir -p $dir
    if $B/zt_train --model examples/models/byte-small "${f[@]}" --bf16 --gradient_checkpointing --output_dir $dir/plain \
            >/dev/null 2>&1 &&
        $B/zt_train --model_name_or_path examples/models/byte-small "${f[@]}" --bf16 True --gradient_checkpointing True \
            --optim adamw_torch --tf32 False --do_train --overwrite_output_dir --report_to none --output_dir $dir/script \
            --per_device_eval_batch_size 16 --dataloader_num_workers 4 --dataloader_pin_memory True --logging_dir runs \
            --run_name zt --logging_first_step True --save_safetensors True --remove_unused_columns False \
            --group_by_length --ddp_find_unused_parameters False --ddp_backend nccl --torch_compile True \
            --gradient_checkpointing_kwargs '{"use_reentrant": false}' --full_determinism --disable_tqdm True \
            --include_tokens_per_second --skip_memory_metrics False --eval_accumulation_steps 4 --prediction_loss_only \
            --data_seed 42 --log_level warning >/dev/null 2>&1 &&
        cmp -s <(untimed $dir/plain) <(untimed $dir/script) &&
        [[ -s $dir/plain/metrics.jsonl ]]; then
        pass "zt_train takes the Transformers scripts' flags (--model_name_or_path, --bf16 True, --optim, --do_train, --dataloader_num_workers and 20 more): the same bits"
    else
        fail "zt_train with the Transformers scripts' flags trains otherwise than with its own (or refused them)"
    fi
    # --data_seed shuffles --data its own way (and is --seed unless given); --eval_on_start evaluates at step 0;
    # --log_level error keeps warnings back; the flags that would change the run are refused by name
    $B/zt_train --model examples/models/byte-small "${f[@]}" --bf16 --gradient_checkpointing --data_seed 5 \
        --output_dir $dir/seed5 >/dev/null 2>&1 || true
    if [[ -s $dir/seed5/metrics.jsonl ]] && ! cmp -s <(losses $dir/plain) <(losses $dir/seed5) &&
        $B/zt_train --model examples/models/byte-small "${f[@]}" --bf16 --gradient_checkpointing --data_seed 42 \
            --output_dir $dir/seed42 >/dev/null 2>&1 && cmp -s <(losses $dir/plain) <(losses $dir/seed42); then
        pass "--data_seed reorders --data (and is --seed unless given)"
    else
        fail "--data_seed: the losses with --data_seed 5 should differ from the default's and with 42 equal them"
    fi
    expect_output "--eval_on_start evaluates before the first step" '^step 0 \| val_loss [0-9.]+$' \
        $B/zt_train --model examples/models/byte-small "${f[@]}" --val_data "$text" --eval_on_start --output_dir $dir/start
    local warned quiet
    warned=$($B/zt_train --model examples/models/byte-small --tf32 True --print_config 2>&1 >/dev/null) || true
    quiet=$($B/zt_train --model examples/models/byte-small --tf32 True --print_config --log_level error 2>&1 >/dev/null) || true
    if [[ $warned == *"warning: --tf32"* && $quiet != *"--tf32"* ]]; then
        pass "--log_level error keeps the library's warnings back"
    else
        fail "--log_level: with passive '$warned', with error '$quiet'"
    fi
    if $B/zt_train --model examples/models/byte-small "${f[@]}" --backend cuda --use_cpu --output_dir $dir/cpu \
            >/dev/null 2>&1 && ! $B/zt_train --model examples/models/byte-small "${f[@]}" --backend cuda \
            --output_dir $dir/cuda >/dev/null 2>&1; then
        pass "--use_cpu trains on the CPU backend where --backend cuda alone is refused by this build"
    else
        fail "--use_cpu: --backend cuda --use_cpu should train and --backend cuda alone be refused by the C build"
    fi
    # --train_sampling_strategy sequential reads --data in order (whatever --data_seed); --ignore_data_skip resumes
    # the model but reads the checkpoint's pass from its start; --eval_delay holds the evaluations back (and the
    # last step evaluates); --activation_checkpointing keeps fewer activations
    local g=(--model examples/models/byte-small --data "$text" --seq_len 32 --per_device_train_batch_size 2 --threads 1
             --logging_steps 0)
    $B/zt_train "${g[@]}" --max_steps 4 --output_dir $dir/seq5 --train_sampling_strategy sequential --data_seed 5 \
        >/dev/null 2>&1 || true
    $B/zt_train "${g[@]}" --max_steps 4 --output_dir $dir/seq7 --train_sampling_strategy sequential --data_seed 7 \
        >/dev/null 2>&1 || true
    $B/zt_train "${g[@]}" --max_steps 4 --output_dir $dir/rand --data_seed 5 >/dev/null 2>&1 || true
    if [[ -s $dir/seq5/metrics.jsonl ]] && cmp -s <(losses $dir/seq5) <(losses $dir/seq7) &&
        ! cmp -s <(losses $dir/seq5) <(losses $dir/rand); then
        pass "--train_sampling_strategy sequential reads --data in order, whatever --data_seed"
    else
        fail "--train_sampling_strategy sequential: its losses should not depend on --data_seed, and differ from random's"
    fi
    # 49 steps a pass: resumed at step 52 (in the second pass), step 53 reads that pass from its start
    rm -rf $dir/skip && $B/zt_train "${g[@]}" --max_steps 52 --output_dir $dir/skip >/dev/null 2>&1 || true
    $B/zt_train "${g[@]}" --max_steps 53 --output_dir $dir/skip --resume $dir/skip --ignore_data_skip >/dev/null 2>&1 || true
    local resumed_at first
    resumed_at=$(sed -n '53s/.*"epoch": \([^,]*\),.*/\1/p' $dir/skip/metrics.jsonl 2>/dev/null) || true
    first=$(sed -n '1s/.*"epoch": \([^,]*\),.*/\1/p' $dir/skip/metrics.jsonl 2>/dev/null) || true
    if [[ -n $first && $resumed_at == "1${first#0}" ]]; then
        pass "--ignore_data_skip reads the checkpoint's pass from its start (step 53 at epoch $resumed_at, step 1 at $first)"
    else
        fail "--ignore_data_skip: after a resume at step 52 (second pass) step 53 read --data at epoch '$resumed_at'; step 1 at '$first'"
    fi
    local evals
    evals=$($B/zt_train "${g[@]}" --max_steps 7 --val_data "$text" --eval_steps 2 --eval_delay 3 --output_dir $dir/delay \
            2>&1 | sed -n 's/^step \([0-9]*\) | val_loss .*/\1/p' | tr '\n' ' ') || true
    if [[ $evals == "4 6 7 " ]]; then
        pass "--eval_delay 3 holds the evaluations back, and the last step evaluates too (steps 4, 6 and 7 of every 2)"
    else
        fail "--eval_delay 3 with --eval_steps 2 for 7 steps: evaluations at '$evals', expected 4, 6 and 7"
    fi
    local plain_act ckpt_act
    plain_act=$($B/zt_train "${g[@]}" --max_steps 1 --output_dir $dir/act0 2>&1 | sed -n 's/.*| activations \([0-9.]*\).*/\1/p')
    ckpt_act=$($B/zt_train "${g[@]}" --max_steps 1 --output_dir $dir/act1 --activation_checkpointing 2>&1 |
               sed -n 's/.*| activations \([0-9.]*\).*/\1/p')
    if [[ -n $plain_act && -n $ckpt_act ]] && awk -v a="$ckpt_act" -v b="$plain_act" 'BEGIN { exit !(a < b) }'; then
        pass "--activation_checkpointing keeps fewer activations ($ckpt_act MiB, $plain_act without)"
    else
        fail "--activation_checkpointing: activations '$ckpt_act' MiB, '$plain_act' without"
    fi
    expect_output "--bf16_full_eval in fp32 training is refused" 'bf16_full_eval: zt evaluates in the training precision' \
        $B/zt_train --model examples/models/byte-small "${f[@]}" --bf16_full_eval
    expect_output "--fsdp is refused by name" 'fsdp: zt shards with ZeRO' \
        $B/zt_train --model examples/models/byte-small "${f[@]}" --fsdp "full_shard auto_wrap"
    expect_output "--save_only_model is refused by name" 'save_only_model: zt.s checkpoints hold the optimizer.s state' \
        $B/zt_train --model examples/models/byte-small "${f[@]}" --save_only_model
    expect_output "--label_smoothing_factor outside [0, 1] is refused" 'label_smoothing_factor 1.5: the share of the uniform' \
        $B/zt_train --model examples/models/byte-small "${f[@]}" --label_smoothing_factor 1.5
}

# zt_train --num_processes: two ranks train as one process at twice the batch; a killed rank is named
launcher_checks() {
    local text=$1 dir=$B/check worst out
    flags=(--model examples/models/byte-small --data "$text" --max_steps 5 --seq_len 32 --learning_rate 1e-3
           --warmup_steps 2 --logging_steps 0 --threads 1)
    rm -rf $dir/one $dir/two
    if $B/zt_train "${flags[@]}" --per_device_train_batch_size 4 --output_dir $dir/one >/dev/null 2>&1 &&
        $B/zt_train "${flags[@]}" --per_device_train_batch_size 2 --num_processes 2 --output_dir $dir/two \
            >/dev/null 2>&1 &&
        worst=$(paste -d' ' <(sed 's/.*"loss": \([^,]*\),.*/\1/' $dir/one/metrics.jsonl) \
                            <(sed 's/.*"loss": \([^,]*\),.*/\1/' $dir/two/metrics.jsonl) |
                awk '{ d = $1 - $2; if (d < 0) d = -d; d /= $1; if (d > w) w = d } END { print w + 0 }') &&
        [[ $(wc -l <$dir/two/metrics.jsonl) == 5 ]] && awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }'; then
        pass "zt_train --num_processes 2 trains as one process at twice the batch (worst relative loss difference $worst)"
    else
        fail "zt_train --num_processes 2 and one process at twice the batch disagree (worst ${worst:-?})"
    fi
    local evals=() n split # an evaluation the ranks split adds its sums as one process would: the same bits
    for n in 1 2 3; do
        rm -rf $dir/val$n
        out=$(ZT_TRAIN_TEST_EVAL_ROWS=1 $B/zt_train "${flags[@]}" --per_device_train_batch_size 2 --max_steps 1 \
            --val_data "$text" --eval_on_start --eval_strategy no --num_processes $n \
            --config examples/configs/zero3.json --output_dir $dir/val$n 2>&1) || true
        evals+=("$(grep -h '"step": 0, "eval_loss"' $dir/val$n/metrics.jsonl 2>/dev/null || true)")
        [[ $n == 3 ]] && split=$(sed -n 's/^rank \([0-9]\) evaluated \([0-9]*\) rows$/\1:\2/p' <<<"$out" | sort | tr '\n' ' ')
    done
    # 98 rows of 32 tokens in the Trainer's eval batches of 8: 13, a batch each in turn: 5 to rank 0 (its last of 2
    # rows), 4 to ranks 1 and 2
    if [[ -n ${evals[0]} && ${evals[0]} == "${evals[1]}" && ${evals[0]} == "${evals[2]}" &&
          $split == "0:34 1:32 2:32 " ]]; then
        pass "1, 2 and 3 ranks at ZeRO-3 split --val_data (rows $split) and log one process's eval_loss, to the bit"
    else
        fail "an evaluation split across ranks (rows '$split') differs from one process's: ${evals[*]}"
    fi
    rendezvous_checks "$text"
    zero_checks "$text"
    offload_checks "$text"
    hf_checks "$text"
    accelerate_checks "$text"
    jit_checkpoint_check "$text"
    local rc=0 t0=$SECONDS
    rm -rf $dir/hang $dir/kill # a new run each time (a used --output_dir is refused)
    out=$(ZT_TRAIN_TEST_KILL=0:3 ZT_TRAIN_TEST_HANG=1:3 ZT_KILL_GRACE=1 timeout 60 $B/zt_train "${flags[@]}" \
        --per_device_train_batch_size 2 --num_processes 2 --output_dir $dir/hang 2>&1) || rc=$?
    if [[ $rc == 1 && $((SECONDS - t0)) -lt 15 ]] &&
        grep -q 'rank 1 (pid [0-9]*) did not stop within ZT_KILL_GRACE seconds of SIGTERM; killed' <<<"$out"; then
        pass "a rank deaf to SIGTERM after another failed is killed after ZT_KILL_GRACE (1 s; job over in $((SECONDS - t0)) s)"
    else
        fail "a rank deaf to SIGTERM was not killed after ZT_KILL_GRACE (exit $rc):"
        tail -n 5 <<<"$out" | sed 's/^/    /'
    fi
    # a rank deaf to SIGTERM keeps the launcher waiting until a second SIGTERM, which kills it (exit 143)
    rm -rf $dir/deaf
    ZT_TRAIN_TEST_HANG=1:2 $B/zt_train "${flags[@]}" --per_device_train_batch_size 2 --num_processes 2 --max_steps 50 \
        --output_dir $dir/deaf >$dir/deaf.log 2>&1 &
    local launcher=$! i
    for ((i = 0; i < 600; i++)); do [[ -s $dir/deaf/metrics.jsonl ]] && break; sleep 0.1; done
    sleep 1
    kill -TERM $launcher 2>/dev/null
    sleep 1
    kill -TERM $launcher 2>/dev/null
    rc=0
    for ((i = 0; i < 100; i++)); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
    kill -KILL $launcher 2>/dev/null && rc=hung
    wait $launcher || rc=${rc/0/$?}
    if [[ $rc == 143 ]] && grep -q 'rank 1 (pid [0-9]*) did not stop before a second SIGTERM; killed' $dir/deaf.log; then
        pass "a second SIGTERM to the launcher kills a rank deaf to the first (exit 143)"
    else
        fail "a rank deaf to SIGTERM kept the launcher waiting after a second one (exit $rc; $dir/deaf.log)"
    fi
    rc=0
    out=$(ZT_TRAIN_TEST_KILL=1:3 timeout 60 $B/zt_train "${flags[@]}" --per_device_train_batch_size 2 --num_processes 3 \
        --output_dir $dir/kill 2>&1) || rc=$?
    if [[ $rc != 0 ]] && grep -q 'rank 1 (pid [0-9]*) was killed by signal 9' <<<"$out"; then
        pass "a rank killed during training stops the job, named by the launcher"
    else
        fail "a killed rank did not stop the job with its number:"
        tail -n 10 <<<"$out" | sed 's/^/    /'
    fi
}

# $1: launcher or rank, $2: an output dir, then a command: run it with --output_dir $2 in the background, send
# SIGTERM to it (or to the last rank it started) once it has logged 3 steps, and print its exit status (its
# output in $2.log)
terminated_at_step3() {
    local to=$1 out=$2 i rc=0
    shift 2
    "$@" --output_dir "$out" >"$out.log" 2>&1 &
    local pid=$!
    for ((i = 0; i < 600; i++)); do
        [[ -f $out/metrics.jsonl && $(wc -l <"$out/metrics.jsonl") -ge 3 ]] && break
        sleep 0.1
    done
    if [[ $to == rank ]]; then
        kill -TERM "$(pgrep -P $pid | tail -n 1)" 2>/dev/null || true
    else
        kill -TERM $pid 2>/dev/null || true
    fi
    wait $pid || rc=$?
    echo $rc
}

# --enable_jit_checkpoint at 2 ranks: a SIGTERM to the launcher reaches both, which save the step they are in
# (after its evaluation: the plateau schedule's state is saved with it) and exit 143, and --resume goes on bit for
# bit; a SIGTERM to one rank alone stops both as well; without the flag the ranks stop at once and nothing is saved
jit_checkpoint_check() {
    local text=$1 dir=$B/check/jit rc k
    local f=(--model examples/models/byte-small --data "$text" --seq_len 32 --per_device_train_batch_size 2
             --logging_steps 0 --threads 1 --learning_rate 1e-3 --num_processes 2 --val_data "$text" --eval_steps 1
             --lr_scheduler_type reduce_lr_on_plateau --lr_scheduler_kwargs '{"patience": 0, "factor": 0.7}')
    rm -rf $dir && mkdir -p $dir
    rc=$(terminated_at_step3 launcher $dir/jit $B/zt_train "${f[@]}" --max_steps 2000 --save_strategy no \
        --enable_jit_checkpoint)
    k=$(sed -n 's/^global_step\([0-9]*\)$/\1/p' $dir/jit/latest 2>/dev/null) || true
    if [[ $rc == 143 && -n $k ]] && grep -q "^SIGTERM: saved $dir/jit/global_step$k;" $dir/jit.log &&
        $B/zt_train "${f[@]}" --max_steps $((k + 2)) --resume $dir/jit --output_dir $dir/jit >/dev/null 2>&1 &&
        $B/zt_train "${f[@]}" --max_steps $((k + 2)) --output_dir $dir/whole >/dev/null 2>&1 &&
        cmp -s $dir/jit/global_step$((k + 2))/zt_rank_00000.safetensors \
            $dir/whole/global_step$((k + 2))/zt_rank_00000.safetensors &&
        cmp -s <(untimed $dir/jit) <(untimed $dir/whole); then # step k's evaluation too
        pass "--enable_jit_checkpoint: SIGTERM to the launcher saves step $k on both ranks (exit 143), after its evaluation; --resume continues bit for bit"
    else
        fail "--enable_jit_checkpoint: after SIGTERM exit $rc, checkpoint '${k:-none}', or the resumed run differs:"
        tail -n 5 $dir/jit.log | sed 's/^/    /'
    fi
    rc=$(terminated_at_step3 rank $dir/one $B/zt_train "${f[@]}" --max_steps 2000 --save_strategy no --enable_jit_checkpoint)
    k=$(sed -n 's/^global_step\([0-9]*\)$/\1/p' $dir/one/latest 2>/dev/null) || true
    if [[ $rc == 143 && -n $k ]] && ! grep -q 'ending the other ranks' $dir/one.log; then
        pass "--enable_jit_checkpoint: SIGTERM to one rank alone saves step $k on both (the launcher exits 143)"
    else
        fail "--enable_jit_checkpoint: after SIGTERM to one rank exit $rc, checkpoint '${k:-none}':"
        tail -n 5 $dir/one.log | sed 's/^/    /'
    fi
    # with --save_strategy no a checkpoint is only --enable_jit_checkpoint's: none without it
    rc=$(terminated_at_step3 launcher $dir/plain $B/zt_train "${f[@]}" --max_steps 2000 --save_strategy no)
    if [[ $rc == 143 && $(wc -l <$dir/plain/metrics.jsonl) -lt 2000 ]] && ! compgen -G "$dir/plain/global_step*" >/dev/null &&
        grep -q '^zt: SIGTERM passed on to the ranks' $dir/plain.log && ! pgrep -f "output_dir $dir/plain" >/dev/null; then
        pass "without --enable_jit_checkpoint, SIGTERM to the launcher stops its ranks at once (exit 143), saving nothing"
    else
        fail "SIGTERM to the launcher without --enable_jit_checkpoint: exit $rc, or a checkpoint, or a rank left:"
        tail -n 5 $dir/plain.log | sed 's/^/    /'
    fi
}

# ZeRO through zt_train: 4 ranks at stage 3 (examples/configs/zero3.json) save the same checkpoint as
# stage 0, bit for bit; with accumulation, stage 3 saves stage 2's; --plan answers for 1024 ranks and
# --plan --fit finds a setting
zero_checks() {
    local text=$1 dir=$B/check/zero st
    local f=(--model examples/models/byte-small --data "$text" --max_steps 3 --seq_len 32 --logging_steps 0
             --threads 1 --bf16 --per_device_train_batch_size 2 --max_grad_norm 0.5)
    rm -rf $dir && mkdir -p $dir
    for st in 0 2; do # zero3.json with another stage
        sed "s/\"stage\": 3/\"stage\": $st/" examples/configs/zero3.json >$dir/stage$st.json
    done
    local ok=1
    $B/zt_train "${f[@]}" --num_processes 4 --config examples/configs/zero3.json --save_steps 2 --output_dir $dir/s3 \
        >/dev/null 2>&1 &&
        $B/zt_train "${f[@]}" --num_processes 4 --config $dir/stage0.json --output_dir $dir/s0 >/dev/null 2>&1 &&
        cmp -s $dir/s0/global_step3/zt_rank_00000.safetensors $dir/s3/global_step3/zt_rank_00000.safetensors || ok=0
    if [[ $ok == 1 ]]; then
        pass "zt_train --num_processes 4 at ZeRO stage 3 saves stage 0's weights and Adam state, bit for bit"
    else
        fail "zt_train --num_processes 4: ZeRO stage 3 and stage 0 differ (or did not run)"
    fi
    ok=1 # the stage-3 checkpoint of step 2 resumed at stage 0: the same step 3
    mkdir -p $dir/r0 && cp -r $dir/s3/global_step2 $dir/r0/ && echo global_step2 >$dir/r0/latest &&
        $B/zt_train "${f[@]}" --num_processes 4 --config $dir/stage0.json --resume $dir/r0 --output_dir $dir/r0 \
            >/dev/null 2>&1 &&
        cmp -s $dir/s3/global_step3/zt_rank_00000.safetensors $dir/r0/global_step3/zt_rank_00000.safetensors || ok=0
    if [[ $ok == 1 ]]; then
        pass "a ZeRO-3 checkpoint resumed at stage 0 continues bit for bit (checkpoints are whole, for any stage)"
    else
        fail "a ZeRO-3 checkpoint resumed at stage 0 did not continue the same run"
    fi
    ok=1
    $B/zt_train "${f[@]}" --num_processes 2 --gradient_accumulation_steps 2 --config examples/configs/zero3.json \
        --output_dir $dir/a3 >/dev/null 2>&1 &&
        $B/zt_train "${f[@]}" --num_processes 2 --gradient_accumulation_steps 2 --config $dir/stage2.json \
            --output_dir $dir/a2 >/dev/null 2>&1 &&
        cmp -s $dir/a2/global_step3/zt_rank_00000.safetensors $dir/a3/global_step3/zt_rank_00000.safetensors || ok=0
    if [[ $ok == 1 ]]; then
        pass "with gradient accumulation, ZeRO stage 3 saves stage 2's state, bit for bit"
    else
        fail "with gradient accumulation, ZeRO stages 2 and 3 differ (or did not run)"
    fi
    local out
    out=$($B/zt_train --model examples/models/byte-small --config examples/configs/zero3.json --bf16 --plan \
        --num_processes 1024 2>&1) || true
    if grep -q '1024 ranks, ZeRO stage 3' <<<"$out" && grep -q '^  total ' <<<"$out"; then
        pass "zt_train --plan answers for 1024 ranks without starting them"
    else
        fail "zt_train --plan --num_processes 1024 did not answer:"
        tail -n 5 <<<"$out" | sed 's/^/    /'
    fi
    out=$($B/zt_train --model examples/models/byte-small --bf16 --plan --num_processes 4 --fit 12MiB 2>&1) || true
    if grep -q '^rejected: ZeRO stage 0' <<<"$out" && grep -q '^fits: ZeRO stage' <<<"$out"; then
        pass "zt_train --plan --fit names the cheapest setting that fits and the plans it rejected"
    else
        fail "zt_train --plan --fit did not answer:"
        tail -n 5 <<<"$out" | sed 's/^/    /'
    fi
}

# the seed's two offload configs at 2 ranks, with --device_memory between the plans with and without
# offload: they train, and save what the run without offload saves, bit for bit
offload_checks() {
    local text=$1 dir=$B/check/offload name cfg plain mem
    local f=(--model examples/models/byte-small --data "$text" --max_steps 3 --seq_len 64 --logging_steps 0
             --threads 1 --per_device_train_batch_size 2 --num_processes 2 --nvme_path $dir/nvme)
    rm -rf $dir && mkdir -p $dir/nvme
    for name in seed_zero2_cpu seed_zero3_nvme; do
        cfg=examples/configs/$name.json plain=$dir/$name.plain.json
        sed 's/"device": "[a-z]*"/"device": "none"/' $cfg >$plain
        # each rank's device total from --plan, with and without offload
        total() { $B/zt_train "${f[@]}" --config "$1" --plan 2>/dev/null | awk '$1 == "total" { print $2 }'; }
        mem=$(awk -v a="$(total $cfg)" -v b="$(total $plain)" 'BEGIN { if (a > 0 && a < b) printf "%.0f", (a + b) / 2 * 1048576 }')
        if [[ -n $mem ]] &&
            ! $B/zt_train "${f[@]}" --config $plain --device_memory $mem --output_dir $dir/$name.refused >/dev/null 2>&1 &&
            $B/zt_train "${f[@]}" --config $cfg --device_memory $mem --output_dir $dir/$name >/dev/null 2>&1 &&
            $B/zt_train "${f[@]}" --config $plain --output_dir $dir/$name.plain >/dev/null 2>&1 &&
            cmp -s $dir/$name/global_step3/zt_rank_00000.safetensors $dir/$name.plain/global_step3/zt_rank_00000.safetensors &&
            [[ -z $(ls $dir/nvme) ]]; then
            pass "$name.json trains 2 ranks in $((mem / 1024)) KiB of device memory each, which refuses it without offload; bit for bit the run without"
        else
            fail "$name.json did not train within the device memory that refuses it without offload, as the run without"
        fi
    done
}

# Hugging Face directories written by transformers: zt_train --eval prints transformers' loss; a JSONL
# instruction set tokenized with the model's own tokenizer.json fine-tunes at ZeRO-3 on 2 ranks and exports
# a directory zt loads again; a checkpoint of 4 ranks at stage 3 resumes on 2 and on 1
hf_checks() {
    local text=$1 dir=$B/check/hf m got want ok=1
    rm -rf $dir && mkdir -p $dir
    for m in gpt2 gpt2_old llama llama31_rope mistral mistral_shards qwen2 qwen3 phi3 gemma gemma2 gemma3_text mixtral qwen3_moe qwen2_moe smollm3 olmo2 olmo3 olmoe granite glm glm4 seed_oss internlm3 ernie4_5 exaone4 cohere cohere2 cohere_qk_norm stablelm stablelm_qk_norm starcoder2 phi gpt_neox gpt_neox_buffers glm4_moe glm4_moe_lite minimax_m2 ernie4_5_moe deepseek_v3 deepseek_v2 dots1 hunyuan_v1_dense hunyuan_v1_moe ministral gpt_oss gpt_oss_mxfp4 deepseek_v3_fp8 qwen3_fp8; do
        got=$($B/zt_train --model tests/ref/hf/$m --data tests/ref/hf/$m/tokens.bin --eval --seq_len 16 \
              --per_device_train_batch_size 4 2>/dev/null | awk '$1 == "loss" { print $2 }')
        want=$(sed 's/.*"loss": *\([0-9.e+-]*\).*/\1/' tests/ref/hf/$m/expected.json)
        awk -v g="${got:-0}" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 2e-6 * w) }' || { ok=0; echo "    $m: $got, transformers $want"; }
    done
    if [[ $ok == 1 ]]; then
        pass "zt_train --eval on directories transformers wrote (GPT-2 new and old, LLaMA, LLaMA-3.1 rope scaling, Mistral whole and sharded, Qwen2, Qwen3, Phi-3, Gemma, Gemma 2, Gemma 3, Mixtral, Qwen3-MoE, Qwen2-MoE, SmolLM3, OLMo 2, OLMo 3, OLMoE, Granite, GLM, GLM-4, Seed-OSS, InternLM3, ERNIE 4.5, EXAONE 4, Cohere with and without its q and k norms, Cohere 2, StableLM with and without its q and k norms, Starcoder2, Phi, GPT-NeoX with and without old buffers, GLM-4.5, MiniMax-M2, ERNIE 4.5 MoE, DeepSeek-V3, DeepSeek-V2, GLM-4.7-Flash, dots.llm1, Hunyuan dense and MoE, Ministral, gpt-oss with its experts plain and in MXFP4, DeepSeek-V3 and Qwen3 in fine-grained FP8) prints transformers' loss"
    else
        fail "zt_train --eval on transformers' directories disagrees with transformers"
    fi
    local f=(--model tests/ref/hf/qwen2_tok --data $dir/sft.bin --mask $dir/sft.bin.mask --seq_len 32 --logging_steps 0
             --per_device_train_batch_size 2 --threads 1 --bf16)
    if $B/zt_tokenize --tokenizer tests/ref/hf/qwen2_tok --input tests/ref/instructions.jsonl --output $dir/sft.bin \
            --eot "<|endoftext|>" >/dev/null &&
        $B/zt_train "${f[@]}" --config examples/configs/zero3.json --num_processes 2 --max_steps 3 --output_dir $dir/run \
            --export $dir/export >/dev/null 2>&1 &&
        [[ -f $dir/export/tokenizer.json ]] &&
        $B/zt_train --model $dir/export --data $dir/sft.bin --eval --seq_len 32 2>/dev/null | grep -q '^loss '; then
        pass "an instruction set tokenized with the model's tokenizer.json fine-tunes at ZeRO-3 on 2 ranks and exports a Hugging Face directory"
    else
        fail "tokenize, fine-tune at ZeRO-3 and export did not go through"
    fi
    # the mask zt_tokenize wrote, left out, and a text file read as bytes for a model with a tokenizer: each said
    expect_output "zt_train names a mask file beside --data that --mask left out" \
        'sft.bin.mask is beside --data, and --mask was not given: every token is learned' \
        $B/zt_train --model tests/ref/hf/qwen2_tok --data $dir/sft.bin --seq_len 32 --max_steps 1 --output_dir $dir/nomask
    head -c 4000 README.md >$dir/corpus.txt
    expect_output "zt_train names a text file read as bytes for a model with a tokenizer" \
        'corpus.txt is read as bytes \(ids 0-255\), and this model has a tokenizer: zt_tokenize' \
        $B/zt_train --model tests/ref/hf/qwen2_tok --data $dir/corpus.txt --seq_len 32 --max_steps 1 --output_dir $dir/bytes
    # conversations ("messages" lines) through a chat template: only the assistant's turns are learned
    local learned
    if $B/zt_tokenize --tokenizer tests/ref/hf/qwen2_tok --chat_template tests/ref/chat/templates/qwen2.jinja \
            --input tests/ref/conversations.jsonl --output $dir/chats.bin >/dev/null &&
        $B/zt_tokenize --tokenizer tests/ref/hf/qwen2_tok --decode $dir/chats.bin | grep -q '^<|im_start|>assistant$' &&
        learned=$(tr -cd '\001' <$dir/chats.bin.mask | wc -c) && (( learned > 20 && 2 * learned < $(wc -c <$dir/chats.bin.mask) )) &&
        $B/zt_train "${f[@]/sft.bin/chats.bin}" --max_steps 2 --output_dir $dir/chats >/dev/null 2>&1; then
        pass "conversations go through the chat template (zt_tokenize --chat_template) and train with only the assistant's turns learned"
    else
        fail "conversations through a chat template did not tokenize or train"
    fi
    # --decode reads the tokens the file holds: a header that promises more is named, not read past
    head -c 1030 $dir/chats.bin >$dir/cut.bin
    expect_output "zt_tokenize --decode of a cut token file names what its header promised" \
        'its header says [0-9]* tokens of [24] bytes, and the file holds 6 bytes' \
        $B/zt_tokenize --tokenizer tests/ref/hf/qwen2_tok --decode $dir/cut.bin
    expect_output "zt_tokenize names a --sample_by it does not know" \
        'zt_tokenize: --sample_by takes line, paragraph or document, not "sentence"' \
        $B/zt_tokenize --tokenizer tests/ref/hf/qwen2_tok --input $dir/corpus.txt --output $dir/x.bin --sample_by sentence
    # a model directory with its own chat template (chat_template.jinja, eos_token in tokenizer_config.json):
    # tokenized with it, fine-tuned, exported with it, and asked for a reply through it
    local cm=$dir/chatmodel
    mkdir -p $cm && cp tests/ref/hf/qwen2_tok/{config.json,model.safetensors,tokenizer.json} $cm/ &&
        cp tests/ref/chat/templates/qwen2.jinja $cm/chat_template.jinja &&
        printf '{"eos_token": "<|im_end|>", "model_max_length": 32768}\n' >$cm/tokenizer_config.json
    if $B/zt_tokenize --tokenizer $cm --input tests/ref/conversations.jsonl --output $dir/chats2.bin >/dev/null &&
        cmp -s $dir/chats.bin $dir/chats2.bin && cmp -s $dir/chats.bin.mask $dir/chats2.bin.mask &&
        $B/zt_train "${f[@]/sft.bin/chats2.bin}" --model $cm --max_steps 2 --output_dir $dir/chats2 --export $dir/chatexport \
            >/dev/null 2>&1 &&
        cmp -s $cm/chat_template.jinja $dir/chatexport/chat_template.jinja &&
        $B/zt_train --model $dir/chatexport --sample 8 --chat '你好, "zt"?' --seed 3 2>/dev/null | grep -q '^reply:$'; then
        pass "a model's own chat template tokenizes its conversations, travels with its export, and frames zt_train --chat"
    else
        fail "a model directory's chat template did not tokenize, export or answer through zt_train --chat"
    fi
    # a pretraining set ({"text": ...} lines) on 2 threads into llm.c shards: the tokens of one file on one thread,
    # no mask file, and zt_train reads the shards by a glob
    local i shards
    for i in $(seq 1 400); do printf '{"text": "Document %d: it was the best of times, \u7b2c%d\u5929, it was the worst."}\n' $i $i; done >$dir/docs.jsonl
    if $B/zt_tokenize --tokenizer tests/ref/hf/qwen2_tok --input $dir/docs.jsonl --output $dir/docs.bin --mask none \
            --eot "<|endoftext|>" --num_proc 1 >/dev/null &&
        $B/zt_tokenize --tokenizer tests/ref/hf/qwen2_tok --input $dir/docs.jsonl --output $dir/pt.bin --mask none \
            --eot "<|endoftext|>" --num_proc 2 --shard_size 2000 >/dev/null &&
        shards=$(ls $dir/pt_*.bin | wc -l) && (( shards >= 3 )) && ! ls $dir/pt_*.mask $dir/docs.bin.mask $dir/*.partial >/dev/null 2>&1 &&
        cmp -s <(tail -c +1025 $dir/docs.bin) <(for i in $dir/pt_*.bin; do tail -c +1025 $i; done) &&
        $B/zt_train --model tests/ref/hf/qwen2_tok --data "$dir/pt_*.bin" --seq_len 32 --per_device_train_batch_size 2 \
            --threads 1 --max_steps 2 --logging_steps 0 --output_dir $dir/pt >/dev/null 2>&1; then
        pass "a pretraining set of JSON Lines documents tokenizes on 2 threads into $shards llm.c shards, the tokens of one thread's one file, and trains from them by a glob"
    else
        fail "JSON Lines documents did not tokenize into shards the same as into one file, or did not train from them"
    fi
    # resharding: 4 ranks x 2 rows at stage 3, resumed at step 2 as 2 x 4 and 1 x 8 (the same 8 rows a step)
    local g=(--model examples/models/byte-small --data "$text" --seq_len 32 --logging_steps 0 --threads 1 --max_steps 4
             --learning_rate 1e-3)
    local worst=0 w n
    $B/zt_train "${g[@]}" --per_device_train_batch_size 2 --num_processes 4 --config examples/configs/zero3.json \
        --save_steps 2 --output_dir $dir/four >/dev/null 2>&1 || ok=0
    for n in 2 1; do
        mkdir -p $dir/r$n && cp -r $dir/four/global_step2 $dir/r$n/ && echo global_step2 >$dir/r$n/latest
        $B/zt_train "${g[@]}" --per_device_train_batch_size $((8 / n)) --num_processes $n --resume $dir/r$n \
            --output_dir $dir/r$n >/dev/null 2>&1 || ok=0
        w=$(paste -d' ' <(losses $dir/four | tail -n 2) <(losses $dir/r$n | tail -n 2) |
            awk '{ d = $1 - $2; if (d < 0) d = -d; d /= $1; if (d > m) m = d } END { print m + 0 }')
        worst=$(awk -v a="$worst" -v b="$w" 'BEGIN { print (a > b ? a : b) }')
    done
    if [[ $ok == 1 ]] && awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }'; then
        pass "a checkpoint of 4 ranks at ZeRO-3 resumes on 2 and on 1 and continues the losses (worst relative difference $worst)"
    else
        fail "a checkpoint of 4 ranks did not continue on 2 and 1 (worst relative difference $worst)"
    fi
}

# --config_file: Accelerate's YAML (as `accelerate config` writes it) launches and configures the run that
# the equivalent flags and DeepSpeed JSON give, bit for bit
accelerate_checks() {
    local text=$1 dir=$B/check/accelerate
    rm -rf $dir && mkdir -p $dir
    cat >$dir/default_config.yaml <<'YAML'
compute_environment: LOCAL_MACHINE
debug: false
deepspeed_config:
  gradient_accumulation_steps: 2
  gradient_clipping: 1.0
  offload_optimizer_device: cpu
  offload_param_device: none
  zero3_init_flag: false
  zero_stage: 2
distributed_type: DEEPSPEED
downcast_bf16: 'no'
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
tpu_env: []
use_cpu: false
YAML
    echo '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}, "gradient_accumulation_steps": 2,
           "gradient_clipping": 1.0, "train_micro_batch_size_per_gpu": "auto"}' >$dir/ds.json
    local f=(--model examples/models/byte-small --data "$text" --max_steps 3 --seq_len 32 --logging_steps 0 --threads 1
             --per_device_train_batch_size 2)
    if $B/zt_train "${f[@]}" --config_file $dir/default_config.yaml --output_dir $dir/yaml >/dev/null 2>&1 &&
        $B/zt_train "${f[@]}" --num_processes 2 --bf16 --config $dir/ds.json --output_dir $dir/flags >/dev/null 2>&1 &&
        cmp -s $dir/yaml/global_step3/zt_rank_00000.safetensors $dir/flags/global_step3/zt_rank_00000.safetensors &&
        [[ $(grep -c . $dir/yaml/metrics.jsonl) == 3 ]]; then
        pass "zt_train --config_file takes Accelerate's YAML (2 ranks, bf16, ZeRO-2 with CPU offload): the run of the same flags"
    else
        fail "zt_train --config_file did not give the run of the equivalent flags"
    fi
}

# the losses of a run's metrics.jsonl; and the file without its timings (the same bits, apart from the clock)
untimed() { sed 's/"ms": [^,]*, "tokens_per_s": [^,]*, //' "$1/metrics.jsonl"; }
losses() { sed 's/.*"loss": \([^,]*\),.*/\1/' "$1/metrics.jsonl"; }

# launchers that meet at the TCP rendezvous: two "machines" on 127.0.0.1 (their ranks meet over TCP),
# ranks started the way torchrun starts them (on one node and on two), a stray job refused by its token,
# and a busy port
rendezvous_checks() {
    local text=$1 dir=$B/check port=$((29600 + RANDOM % 300)) out rc
    local f=(--model examples/models/byte-small --data "$text" --max_steps 3 --seq_len 32 --logging_steps 0
             --threads 1 --per_device_train_batch_size 2)
    rm -rf $dir/four $dir/m0 $dir/m1 $dir/r0 $dir/r1 $dir/two2
    $B/zt_train "${f[@]}" --num_processes 4 --output_dir $dir/four >/dev/null 2>&1 || true
    $B/zt_train "${f[@]}" --num_processes 4 --num_machines 2 --machine_rank 0 --main_process_port $port \
        --output_dir $dir/m0 >/dev/null 2>&1 &
    local m0=$!
    $B/zt_train "${f[@]}" --num_processes 4 --num_machines 2 --machine_rank 1 --main_process_port $port \
        --output_dir $dir/m1 >/dev/null 2>&1 && wait $m0 && [[ -s $dir/m0/metrics.jsonl ]] &&
        [[ "$(losses $dir/m0)" == "$(losses $dir/four)" ]] && pass "two launchers with --num_machines 2 form one job, the same bits as one launcher" ||
        fail "two launchers with --num_machines 2 did not train as one job of 4 ranks"
    port=$((port + 1))
    $B/zt_train "${f[@]}" --num_processes 2 --output_dir $dir/two2 >/dev/null 2>&1 || true
    local pids=()
    for r in 0 1; do
        RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
            $B/zt_train "${f[@]}" --output_dir $dir/r$r >/dev/null 2>&1 &
        pids+=($!)
    done
    if wait "${pids[0]}" && wait "${pids[1]}" && [[ "$(losses $dir/r0)" == "$(losses $dir/two2)" ]]; then
        pass "ranks started as torchrun starts them join through the rendezvous"
    else
        fail "ranks started with RANK and WORLD_SIZE did not train as zt_train --num_processes 2"
    fi
    port=$((port + 1))
    rm -rf $dir/r0 $dir/r1
    pids=()
    for r in 0 1; do # two "nodes" of one rank each: they meet over TCP at rank 0
        RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=localhost MASTER_PORT=$port \
            $B/zt_train "${f[@]}" --output_dir $dir/r$r >/dev/null 2>&1 &
        pids+=($!)
    done
    if wait "${pids[0]}" && wait "${pids[1]}" && [[ "$(losses $dir/r0)" == "$(losses $dir/two2)" ]]; then
        pass "ranks torchrun starts on two nodes (LOCAL_WORLD_SIZE 1) meet over TCP, the same bits"
    else
        fail "ranks started with LOCAL_WORLD_SIZE 1 did not train as zt_train --num_processes 2"
    fi
    local style
    for style in mpirun srun deepspeed; do
        port=$((port + 1))
        rm -rf $dir/e0 $dir/e1
        pids=()
        for r in 0 1; do
            case $style in
                mpirun) env OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 MASTER_PORT=$port \
                            $B/zt_train "${f[@]}" --output_dir $dir/e$r >/dev/null 2>&1 & ;;
                srun) env SLURM_PROCID=$r SLURM_NTASKS=2 MASTER_PORT=$port \
                          $B/zt_train "${f[@]}" --output_dir $dir/e$r >/dev/null 2>&1 & ;;
                deepspeed) env RANK=$r WORLD_SIZE=2 MASTER_PORT=$port \
                               $B/zt_train --local_rank=$r "${f[@]}" --output_dir $dir/e$r >/dev/null 2>&1 & ;;
            esac
            pids+=($!)
        done
        if wait "${pids[0]}" && wait "${pids[1]}" && [[ "$(losses $dir/e0)" == "$(losses $dir/two2)" ]]; then
            pass "ranks started as $style starts them join through the rendezvous"
        else
            fail "ranks started as $style starts them did not train as zt_train --num_processes 2"
        fi
    done
    port=$((port + 1))
    rc=0
    out=$(ZT_RDZV_TIMEOUT=2 $B/zt_train "${f[@]}" --num_processes 4 --num_machines 2 --machine_rank 1 \
        --main_process_port $port --output_dir $dir/u1 2>&1) || rc=$?
    [[ $rc != 0 ]] && grep -q "cannot reach the main process at 127.0.0.1:$port for 2 s" <<<"$out" &&
        pass "an unreachable main process is named" || fail "an unreachable main process: $out"
    port=$((port + 1))
    ZT_RDZV_TIMEOUT=4 $B/zt_train "${f[@]}" --num_processes 4 --num_machines 2 --machine_rank 0 \
        --main_process_port $port --output_dir $dir/s0 >/dev/null 2>&1 &
    local first=$!
    sleep 0.5
    rc=0
    out=$($B/zt_train "${f[@]}" --num_processes 4 --num_machines 2 --machine_rank 0 --main_process_port $port \
        --output_dir $dir/s1 2>&1) || rc=$?
    # its rank 0 finds the port taken, or (on a loaded machine, first) its rank 1 reaches the first job's rank 0
    [[ $rc != 0 ]] && grep -Eq "rendezvous port 127.0.0.1:$port is busy|a second job with the same settings on this port" <<<"$out" &&
        pass "a second job on a busy rendezvous port is told so" || fail "a busy rendezvous port: $out"
    rc=0
    out=$($B/zt_train --model tests/ref/gpt2 "${f[@]:2}" --num_processes 4 --num_machines 2 --machine_rank 1 \
        --main_process_port $port --output_dir $dir/s2 2>&1) || rc=$?
    wait $first || true
    [[ $rc != 0 ]] && grep -q "the job token differs" <<<"$out" &&
        pass "a machine started with another model is refused by the job token" || fail "a stray machine: $out"
}

summary() {
    echo "$PASSED passed, $FAILED failed"
    [[ $FAILED == 0 ]]
}

# ---- commands ----------------------------------------------------------------------------------

cmd_build() {
    build_cpu
    build_cuda
}

cmd_test() {
    local built=1
    build_cpu || built=0
    compile_matrix
    if [[ $built == 1 ]]; then
        run_runner $B/zt_tests
        tsan_check
        standalone_checks
        example_check
        program_checks
        guard_check $B/check/text.txt
        fuzz_replay
        gpu_dry_run
    else
        fail "build (see the compiler output above)"
    fi
    summary
}

cmd_asan() {
    if build_impl $B/asan "$ASAN_CFLAGS" && build_tests $B/asan "$ASAN_CFLAGS"; then
        run_runner $B/asan/zt_tests
    else
        fail "asan build (see the compiler output above)"
    fi
    summary
}

# the GPU checks' programs alone, built apart (build/gpu-obj/) and copied with their sources' stamp into build/gpu-bin/
cmd_gpu() {
    local p bin=build/gpu-bin
    if [[ -z $NVCC ]]; then
        echo "build.sh gpu: no nvcc (on the PATH or at /usr/local/cuda/bin)" >&2
        exit 1
    fi
    B=build/gpu-obj
    build_cuda
    mkdir -p $bin
    for p in gpu_ops_cuda gpu_models_cuda gpu_train_cuda gpu_zero_cuda zt_train_cuda bench_gpu_cuda; do
        cp -p $B/$p $bin/
    done
    tests/gpu/sources.sh >$bin/SOURCES
    echo "$bin: $(du -sh $bin | cut -f1) for sm_${CUDA_ARCHS// /, sm_}, sources $(<$bin/SOURCES)"
}

# a small byte-level GPT-2 (4 layers, width 128, context 128) trained on the licence texts every
# Debian system has, then a sample: about two minutes on two cores
cmd_run() {
    build_impl $B "$CFLAGS"
    build_program $B/zt_train $B "$CFLAGS" examples/train.c
    $B/zt_train --model examples/models/byte-small --data "/usr/share/common-licenses/*" --data_format text \
        --max_steps 600 --per_device_train_batch_size 8 --learning_rate 2e-3 --warmup_steps 30 \
        --logging_steps 50 --output_dir $B/run --overwrite_output_dir --sample 300 --prompt "The "
}

cmd_bench() {
    local src
    build_impl $B "$CFLAGS"
    for src in bench/*.c; do
        gpu_program "$src" || build_program "$(program "$src")" $B "$CFLAGS" "$src"
    done
    for src in bench/*.c; do
        gpu_program "$src" || "$(program "$src")"
    done
}

# the file readers under libFuzzer with ASan and UBSan: the JSON configs (seeds in tests/fuzz/corpus_config),
# safetensors headers (seeds: the files in tests/ref/hf), tokenizer.json files with their encoder (seeds:
# tests/ref/tokenizers), the Split pre-tokenizers' regular expressions (seeds: the patterns and texts of
# tests/ref/tokenizers/splits.txt, written by the target), data files and checkpoints (seeds the target
# writes), chat templates with a conversation (seeds: tests/ref/chat/templates and tests/fuzz/corpus_chat),
# Hugging Face weights loaded into the engines of their configs (seeds: files of tests/ref/hf the target
# writes), and zt_tokenize_file's JSON Lines on 1 and 2 threads (seeds: tests/ref's and lines the target
# writes), FUZZ_RUNS runs each
cmd_fuzz() {
    local target bin corpus
    if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }' |
        clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
        if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
            apt-get install -y clang libclang-rt-dev || apt-get install -y clang libclang-rt-14-dev
        else
            echo "build.sh fuzz needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev" >&2
            exit 1
        fi
    fi
    for target in config safetensors tokenizer regex files chat hf tokenize_file; do
        bin=$B/fuzz/fuzz_$target corpus=$B/fuzz/corpus_$target
        mkdir -p $B/fuzz $corpus
        if stale $bin tests/fuzz/fuzz_$target.c "${HEADERS[@]}"; then
            run clang -O1 -g -std=c11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
                -o $bin tests/fuzz/fuzz_$target.c -lm -pthread
        fi
        if [[ $target == config ]]; then
            cp tests/fuzz/corpus_config/* $corpus/
        elif [[ $target == safetensors ]]; then
            local f
            for f in tests/ref/hf/*/model*.safetensors; do cp "$f" "$corpus/$(basename "$(dirname "$f")")_$(basename "$f")"; done
        elif [[ $target == tokenizer ]]; then
            for f in tests/ref/tokenizers/*/tokenizer.json; do cp "$f" "$corpus/$(basename "$(dirname "$f")").json"; done
        elif [[ $target == chat ]]; then
            cp tests/ref/chat/templates/*.jinja tests/fuzz/corpus_chat/* $corpus/
        else
            ZT_FUZZ_SEEDS=$corpus $bin || return
        fi
        echo "fuzz_$target:"
        $bin -runs="${FUZZ_RUNS:-1000000}" -max_len=$([[ $target == hf ]] && echo 262144 || echo 131072) -timeout=10 \
            $corpus 2>&1 | tail -n 3
    done
}

[[ $# -le 1 ]] || usage
case ${1:-build} in
    build | test | asan | run | bench | fuzz | gpu) ;;
    *) usage ;;
esac
check_deps
"cmd_${1:-build}"
