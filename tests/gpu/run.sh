#!/usr/bin/env bash
# tests/gpu/run.sh - the checks that need a GPU, in at most 5 minutes. Run it from anywhere on a machine with an
# NVIDIA GPU; it works in the repository root.
#
#   ops         gpu_ops_cuda: every op on the CUDA backend against the CPU backend, f32, bf16 and f16, with the
#               tolerances stated in tests/gpu/ops.c (same bits for copies, casts, fill/scale/add and AdamW), in five
#               processes (a fatal kernel error loses only its group)
#   models      gpu_models_cuda: tests/test_models.c (GPT-2, LLaMA, Mistral, Qwen2 against PyTorch's values) with the
#               engine on the GPU, fp32 and bf16, with that file's GPU tolerances
#   train       gpu_train_cuda: bf16 training of a small GPT-2 on cuda and cpu: the loss falls, the first steps agree,
#               the same cuda run twice is bit for bit the same
#   zero        gpu_zero_cuda: ZeRO stages 0-3 and every offload setting (optimizer to host memory or NVMe, stage-3
#               weights to host memory or NVMe) at one rank: stage 0's bits, and the engine's memory peaks its plan;
#               then zt_train_cuda with 2 ranks sharing the GPU (collectives staged through pinned host memory) at
#               stages 0-3 (stages 2 and 3 with overlap_comm: the communication stream, stage-3 prefetch) and with
#               stage-3 weights on NVMe, six jobs at once: stage 0's losses and checkpoint, bit for bit
#   sanitizer   compute-sanitizer's memcheck and racecheck (zt's kernels) over 1-2 training steps of a tiny GPT-2 and
#               a tiny LLaMA (ZeRO-3, weights in host memory) through zt_train_cuda, the four at once: 0 errors each
#               (skipped with a note where there is no compute-sanitizer or it cannot use the GPU)
#   throughput  bench_gpu_cuda: GPT-2 124M tokens/s, MFU against cuBLAS's bf16 rate (and the datasheet's, on an
#               H100 or H200), a per-kernel table; then tests/gpu/torch_gpt2.py, the same model in PyTorch eager and
#               torch.compile, and the ratios
#
# It prints the GPU first, writes JSON lines to $OUT/gpu.jsonl (OUT unset: build/gpu/gpu.jsonl) as it goes, so a
# run cut short still reports, and ends with "N passed, N failed"; exit status 0 only when everything passed, 2 when
# there is no GPU. Logs, checkpoints and swap files go to ZT_GPU_DIR (default build/gpu), and with OUT set the logs
# come back packed as $OUT/gpu_logs.tgz. Each phase runs under its own timeout, within ZT_GPU_BUDGET seconds for the
# whole run (default 290); ZT_GPU_PHASES picks phases (default "ops models train zero throughput torch sanitizer",
# in that order: a rerun can take the ones a first run had no time for).
# The programs: build/gpu-bin/ from `./build.sh gpu` (built here for the GPU, carried to the machine), used when its
# stamp (tests/gpu/sources.sh) matches the sources; otherwise the build phase runs `./build.sh gpu` first. Libraries
# the loader cannot find (cuBLAS, NCCL) are looked for under /usr/local, /opt and /usr/lib before anything runs.
# ZT_GPU_BACKEND=cpu runs every phase with the CPU backend in the GPU's place (and a small throughput run), without
# nvidia-smi: a check of this script and its programs on a machine without a GPU (the sanitizer phase then runs its
# trainings without the sanitizer, and the zero phase's 2 ranks stage their collectives as ranks sharing a GPU do).
set -u
ulimit -c 0 # a CUDA process that aborts with gigabytes mapped must not spend the budget writing a core
cd "$(dirname "$0")/../.."
B=build/gpu-bin
DIR=${ZT_GPU_DIR:-build/gpu} # the phases' logs, checkpoints and swap files: they stay on the machine
RES=${OUT:-$DIR}             # what comes back: gpu.jsonl, and the logs packed
JSONL=$RES/gpu.jsonl
BACKEND=${ZT_GPU_BACKEND:-cuda}
SCALE=1 # the dry run's CPU reference and "GPU" share this machine's cores: three times the time
[[ $BACKEND == cuda ]] || SCALE=3
BUDGET=${ZT_GPU_BUDGET:-$((290 * SCALE))}
PHASES=" ${ZT_GPU_PHASES:-ops models train zero throughput torch sanitizer} "
PASSED=0
FAILED=0

json() { # a JSON string holding $1
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\t'/ }
    printf '"%s"' "${s//$'\n'/ | }"
}
record() { echo "$1" >>"$JSONL"; }
# the number in field $2 of the first line of $1 matching the extended regular expression $3 ("" when none)
field() { grep -E -- "$3" "$1" 2>/dev/null | head -n 1 | sed -n "s/.*\"$2\": *\([-0-9.e+]*\).*/\1/p"; }

mkdir -p "$DIR" "$RES" || exit 1
: >"$JSONL"
# the logs come back with the results, without checkpoints and swap files
[[ $RES != "$DIR" ]] && trap 'tar czf "$RES/gpu_logs.tgz" -C "$DIR" --exclude="*.safetensors" --exclude="nvme*" \
                               --exclude="zt-swap-*" . 2>/dev/null' EXIT
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
    local name=$1 limit=$(($2 * SCALE)) fn=$3 left rc n0 p f t0=$SECONDS why last
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

PROGRAMS=(gpu_ops_cuda gpu_models_cuda gpu_train_cuda gpu_zero_cuda zt_train_cuda bench_gpu_cuda)
run_build() {
    local arch
    arch=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
    [[ $arch =~ ^[0-9]{2,3}$ ]] || arch=90 # the H100/H200 these checks are lent; every architecture costs minutes
    echo "building for sm_${CUDA_ARCHS:-$arch}: ./build.sh gpu" >&2
    CUDA_ARCHS=${CUDA_ARCHS:-$arch} timeout -k 5 "$1" ./build.sh gpu >&2
}
# the ops in five processes: a kernel that stops its process (a CUDA error is fatal) loses only its group's checks
run_ops() {
    local end=$((SECONDS + $1)) g rc=0 r
    for g in "copy cast fill scale add" "gemm sum_rows matmul embedding" "layernorm rmsnorm gelu silu swiglu rope" \
        attention "crossentropy output_loss adamw lion adagrad sumsq"; do
        ((end - SECONDS < 5)) && return 124
        r=0
        # shellcheck disable=SC2086 # the group's words are the op filter
        timeout -k 5 $((end - SECONDS)) $B/gpu_ops_cuda --backend "$BACKEND" $g || r=$?
        ((r > rc)) && rc=$r
    done
    return $rc
}
run_models() {
    ZT_TEST_BACKEND=$BACKEND ZT_TEST_VERBOSE=1 timeout -k 5 "$1" $B/gpu_models_cuda models_ 2>&1 | runner_json
    return "${PIPESTATUS[0]}"
}
run_train() { timeout -k 5 "$1" $B/gpu_train_cuda --backend "$BACKEND"; }

# a text file for zt_train's byte-level models (build.sh's program checks use the same)
text_file() {
    printf 'It was the best of times, it was the worst of times, it was the age of wisdom. %.0s' {1..40} >"$1"
}
# the "loss grad_norm" pairs of a zt_train run's metrics.jsonl, one step a line
metrics() { sed 's/.*"loss": \([^,]*\),.*"grad_norm": \([^,]*\),.*/\1 \2/' "$1/metrics.jsonl" 2>/dev/null; }

# zero: build/gpu_zero_cuda (one rank, every stage and offload setting; alone on the GPU, since it compares the
# device memory in use with the plan), then zt_train with 2 ranks on the one GPU: stages 0-3
# (examples/configs/zero3.json with another stage), and seed_zero3_nvme.json (stage-3 weights on NVMe) against the
# same config without offload, the six jobs at once (each with a swap directory of its own); each against its
# reference's losses, gradient norms and checkpoint (rank 0's file holds the whole state at every stage), bit for bit
run_zero() {
    local end=$((SECONDS + $1)) dir=$DIR/zero rc=0 st name ref line ok losses
    local names=(stage0 stage1 stage2 stage3 seed_zero3_plain seed_zero3_nvme)
    rm -rf "$dir" && mkdir -p "$dir/nvme" || return 2
    timeout -k 5 $((end - SECONDS)) $B/gpu_zero_cuda --backend "$BACKEND" --nvme "$dir/nvme" || rc=$?
    [[ $rc == 1 ]] && rc=0 # its failures are its JSON lines
    text_file "$dir/text.txt"
    local f=(--backend "$BACKEND" --model examples/models/byte-small --data "$dir/text.txt" --max_steps 3 --seq_len 64
             --per_device_train_batch_size 2 --num_processes 2 --bf16 --learning_rate 1e-3 --max_grad_norm 0.5
             --logging_steps 0 --threads 2)
    for st in 0 1 2 3; do sed "s/\"stage\": 3/\"stage\": $st/" examples/configs/zero3.json >"$dir/stage$st.json"; done
    sed 's/"device": "[a-z]*"/"device": "none"/' examples/configs/seed_zero3_nvme.json >"$dir/seed_zero3_plain.json"
    cp examples/configs/seed_zero3_nvme.json "$dir/"
    # the CPU in the GPU's place stages its collectives through a small buffer, as ranks sharing a GPU do
    [[ $BACKEND == cpu ]] && export ZT_TEST_COMM_STAGE=3000
    if ((end - SECONDS < 5)); then
        unset ZT_TEST_COMM_STAGE
        return 124
    fi
    for name in "${names[@]}"; do
        mkdir -p "$dir/nvme_$name"
        (
            st=0
            timeout -k 5 $((end - SECONDS)) $B/zt_train_cuda "${f[@]}" --nvme_path "$dir/nvme_$name" \
                --config "$dir/$name.json" --output_dir "$dir/$name" >"$dir/$name.log" 2>&1 || st=$?
            echo $st >"$dir/$name.status"
        ) &
    done
    wait
    for name in "${names[@]}"; do
        case $name in
            stage0 | seed_zero3_plain) ref="" ;;
            seed_zero3_nvme) ref=seed_zero3_plain ;;
            *) ref=stage0 ;;
        esac
        ok=1
        [[ $(cat "$dir/$name.status" 2>/dev/null) == 0 && $(metrics "$dir/$name" | wc -l) == 3 &&
            -f $dir/$name/global_step3/zt_rank_00000.safetensors ]] || ok=0
        [[ $(cat "$dir/$name.status" 2>/dev/null) == 124 ]] && rc=124
        losses=$(metrics "$dir/$name" | awk '{ printf "%s%s", (NR > 1 ? "," : ""), $1 }')
        line="{\"phase\":\"zero\",\"ranks\":2,\"config\":\"$name.json\",\"losses\":[$losses]"
        if [[ $ok == 0 ]]; then
            line+=",\"error\":$(json "$(tail -n 3 "$dir/$name.log")")"
        elif [[ -n $ref ]]; then
            local same_metrics=false same_ckpt=false
            [[ "$(metrics "$dir/$name")" == "$(metrics "$dir/$ref")" ]] && same_metrics=true
            cmp -s "$dir/$name/global_step3/zt_rank_00000.safetensors" \
                "$dir/$ref/global_step3/zt_rank_00000.safetensors" && same_ckpt=true
            line+=",\"check\":\"$ref.json's losses, gradient norms and checkpoint, bit for bit\""
            line+=",\"metrics_same\":$same_metrics,\"checkpoint_same\":$same_ckpt"
            [[ $same_metrics == true && $same_ckpt == true ]] || ok=0
        fi
        [[ $ok == 1 ]] && line+=',"pass":true}' || line+=',"pass":false}'
        echo "$line"
    done
    unset ZT_TEST_COMM_STAGE
    [[ -z $(find "$dir"/nvme* -mindepth 1 -print -quit 2>/dev/null) ]] ||
        echo "{\"phase\":\"zero\",\"error\":\"an NVMe swap directory was left with files\",\"pass\":false}"
    return $rc
}

# compute-sanitizer: on the PATH, in the CUDA toolkit, or beside nvcc
sanitizer_path() {
    local p nvcc
    nvcc=$(command -v nvcc || true)
    for p in "$(command -v compute-sanitizer || true)" /usr/local/cuda/bin/compute-sanitizer \
        "${nvcc:+$(dirname "$nvcc")/compute-sanitizer}"; do
        [[ -n $p && -x $p ]] && echo "$p" && return
    done
}

# sanitizer: 1-2 training steps of a tiny GPT-2 (ZeRO 0) and a tiny LLaMA (ZeRO 3, weights in host memory) under
# memcheck (every kernel, cuBLAS's too: a bad leading dimension shows there) and racecheck (zt's kernels only: cuBLAS's
# are not ours, and slow to check); each passes with 0 errors and every step trained
run_sanitizer() {
    local end=$((SECONDS + $1)) dir=$DIR/sanitizer san spec tool model steps
    filter=() # sanitize_one's too
    rm -rf "$dir" && mkdir -p "$dir/gpt2" "$dir/llama" || return 2
    text_file "$dir/text.txt"
    echo '{"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 64, "n_positions": 64, "vocab_size": 256}' \
        >"$dir/gpt2/config.json"
    echo '{"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "hidden_size": 64, "intermediate_size": 160, "max_position_embeddings": 64, "vocab_size": 256,
           "tie_word_embeddings": false}' >"$dir/llama/config.json"
    echo '{"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"},
           "stage3_param_persistence_threshold": 0}}' >"$dir/zero3_param_cpu.json"
    san=$(sanitizer_path)
    if [[ $BACKEND == cuda && -z $san ]]; then
        echo '{"phase":"sanitizer","skipped":"no compute-sanitizer (on the PATH, in /usr/local/cuda/bin, beside nvcc)"}'
        return 0
    fi
    if [[ -n $san ]]; then
        "$san" --help 2>&1 | grep -q -- '--kernel-name' && filter=(--kernel-name kns=zt__cu)
    fi
    # the four at once, each writing its line; lazy module loading, so the sanitizer instruments the kernels a
    # run uses instead of every kernel of cuBLASLt (zt loads eagerly only to count the libraries' memory)
    for spec in "memcheck gpt2 2" "memcheck llama 2" "racecheck gpt2 1" "racecheck llama 1"; do
        read -r tool model steps <<<"$spec"
        sanitize_one "$end" "$dir" "$san" "$tool" "$model" "$steps" >"$dir/${tool}_$model.line" &
    done
    wait
    for spec in "memcheck gpt2" "memcheck llama" "racecheck gpt2" "racecheck llama"; do
        read -r tool model <<<"$spec"
        cat "$dir/${tool}_$model.line"
    done
    return 0
}

# sanitize_one END DIR SANITIZER TOOL MODEL STEPS: one training under the tool, its JSON line on stdout
sanitize_one() {
    local end=$1 dir=$2 san=$3 tool=$4 model=$5 steps=$6 log rc errors summary t0 line
    log=$dir/${tool}_$model.log
    line="{\"phase\":\"sanitizer\",\"tool\":\"$tool\",\"model\":\"tiny $model\",\"steps\":$steps"
    if ((end - SECONDS < 5)); then
        echo "$line,\"error\":\"not run: the phase's time is spent\",\"pass\":false}"
        return
    fi
    local cmd=("$B/zt_train_cuda" --backend "$BACKEND" --model "$dir/$model" --data "$dir/text.txt" --max_steps "$steps"
               --seq_len 64 --per_device_train_batch_size 2 --bf16 --learning_rate 1e-3 --logging_steps 1 --threads 2
               --output_dir "$dir/out_${tool}_$model")
    [[ $model == llama ]] && cmd+=(--config "$dir/zero3_param_cpu.json")
    [[ $tool == memcheck ]] && cmd+=(--sample 4 --prompt "It ")
    t0=$SECONDS
    rc=0
    if [[ $BACKEND != cuda ]]; then # the dry run: the training alone
        timeout -k 5 $((end - SECONDS)) "${cmd[@]}" >"$log" 2>&1 || rc=$?
    elif [[ $tool == racecheck ]]; then
        CUDA_MODULE_LOADING=LAZY timeout -k 5 $((end - SECONDS)) "$san" --tool racecheck "${filter[@]}" --error-exitcode 3 \
            "${cmd[@]}" >"$log" 2>&1 || rc=$?
    else
        CUDA_MODULE_LOADING=LAZY timeout -k 5 $((end - SECONDS)) "$san" --tool memcheck --error-exitcode 3 "${cmd[@]}" \
            >"$log" 2>&1 || rc=$?
    fi
    line+=",\"seconds\":$((SECONDS - t0)),\"exit_status\":$rc"
    [[ $tool == racecheck && $BACKEND == cuda ]] && line+=",\"kernels\":\"${filter[*]:-every kernel}\""
    if [[ $BACKEND == cuda ]] && grep -qi 'device not supported' "$log"; then
        echo "$line,\"skipped\":$(json "compute-sanitizer cannot use this GPU, so no run is checked: $(grep -i -m 1 'device not supported' "$log")")}"
        return
    fi
    summary=$(grep -E 'SUMMARY: ' "$log" | tail -n 1 | sed 's/^=* *//')
    errors=$(grep -oE '[0-9]+ errors?' <<<"$summary" | head -n 1 | cut -d' ' -f1)
    if [[ $BACKEND == cuda ]]; then
        line+=",\"errors\":${errors:-null},\"summary\":$(json "${summary:-none}")"
    else
        line+=",\"errors\":null,\"summary\":\"none: a dry run without the sanitizer\""
        errors=0
    fi
    if [[ $rc == 0 && $errors == 0 && $(grep -c "^step [0-9]*/$steps " "$log") == "$steps" ]]; then
        echo "$line,\"pass\":true}"
    else
        echo "$line,\"log\":$(json "$(grep -E '^=+ (Invalid|Error|ERROR|Race|Warning)|error' "$log" | head -n 5)"),\"pass\":false}"
    fi
}
run_bench() {
    local smoke=()
    [[ $BACKEND == cuda ]] || smoke=(--smoke)
    timeout -k 5 "$1" $B/bench_gpu_cuda --backend "$BACKEND" --batch "${ZT_GPU_BATCH:-32}" "${smoke[@]}"
}
run_torch() {
    timeout -k 5 "$1" python3 tests/gpu/torch_gpt2.py --batch "${ZT_GPU_BATCH:-32}" \
        --seconds 5
}

# the programs: carried ones when built from these sources, else built here (the build counts against the budget)
sources=$(tests/gpu/sources.sh)
missing=0
for p in "${PROGRAMS[@]}"; do [[ -x $B/$p ]] || missing=1; done
if ((missing == 0)) && [[ "$(cat $B/SOURCES 2>/dev/null)" == "$sources" ]]; then
    record "{\"phase\":\"build\",\"note\":\"$B holds the programs, built from these sources ($sources)\"}"
else
    [[ -f $B/SOURCES ]] && echo "$B was built from other sources ($(<$B/SOURCES), these are $sources): building again"
    phase build 240 run_build
    for p in "${PROGRAMS[@]}"; do
        if [[ ! -x $B/$p ]]; then
            record "{\"phase\":\"build\",\"error\":\"no $B/$p after the build: see build.log\",\"pass\":false}"
            echo "FAIL the build left no $B/$p (see $DIR/build.log)"
            echo "$PASSED passed, $((FAILED + 1)) failed"
            exit 1
        fi
    done
fi

# libraries the loader cannot find (cuBLAS, NCCL, the C++ runtime): looked for where CUDA and Python packages keep them
missing_libs() { ldd "${PROGRAMS[@]/#/$B/}" 2>/dev/null | awk '/not found/ { print $1 }' | sort -u; }
libs=$(missing_libs)
if [[ -n $libs ]]; then
    dirs=""
    for lib in $libs; do
        found=$(find /usr/local /opt /usr/lib /usr/lib64 -xdev -name "$lib" -print -quit 2>/dev/null)
        [[ -n $found ]] && dirs+="$(dirname "$found"):"
    done
    export LD_LIBRARY_PATH=$dirs${LD_LIBRARY_PATH:-}
    record "{\"phase\":\"libraries\",\"missing\":$(json "$libs"),\"LD_LIBRARY_PATH\":$(json "$LD_LIBRARY_PATH")}"
    libs=$(missing_libs)
    if [[ -n $libs ]]; then
        record "{\"phase\":\"libraries\",\"error\":$(json "not found anywhere: $libs"),\"pass\":false}"
        echo "FAIL the programs need libraries this machine does not have: $libs"
        echo "$PASSED passed, $((FAILED + 1)) failed"
        exit 1
    fi
fi

want() { [[ $PHASES == *" $1 "* ]]; }
want ops && phase ops 60 run_ops
want models && phase models 30 run_models
want train && phase train 40 run_train
want zero && phase zero 60 run_zero
want throughput && phase throughput 50 run_bench
want torch && phase torch 100 run_torch
want sanitizer && phase sanitizer 60 run_sanitizer

zt=$(field "$JSONL" tokens_per_s '"bench": ?"gpu_train"')
per_token=$(field "$JSONL" flops_per_token '"bench": ?"gpu_train"')
eager=$(field "$JSONL" tokens_per_s '"mode": ?"eager"')
compiled=$(field "$JSONL" tokens_per_s '"mode": ?"compile"')
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }' || echo null; }
# MFU against the datasheet's dense bf16 rate as well (the anchor is what cuBLAS reaches here): H100 and H200 SXM
datasheet=""
[[ $gpu == *H100*SXM* || $gpu == *H200* || $gpu == "NVIDIA H100 80GB HBM3"* ]] && datasheet=989.4
mfu_sheet=null
[[ -n $zt && -n $per_token && -n $datasheet ]] &&
    mfu_sheet=$(awk -v t="$zt" -v f="$per_token" -v d="$datasheet" 'BEGIN { printf "%.3f", t * f / (d * 1e12) }')
line="{\"phase\":\"throughput\",\"zt_tokens_per_s\":${zt:-null},\"torch_eager_tokens_per_s\":${eager:-null}"
line+=",\"torch_compile_tokens_per_s\":${compiled:-null},\"zt_over_torch_eager\":$(ratio "$zt" "$eager")"
line+=",\"zt_over_torch_compile\":$(ratio "$zt" "$compiled"),\"datasheet_bf16_tflops\":${datasheet:-null}"
line+=",\"mfu_datasheet\":$mfu_sheet}"
record "$line"
echo "throughput: zt ${zt:-?} tokens/s; zt / torch eager $(ratio "$zt" "$eager"), zt / torch.compile" \
    "$(ratio "$zt" "$compiled"); MFU against the datasheet's ${datasheet:-?} TFLOP/s: $mfu_sheet"
# products cuBLASLt had no algorithm for ran on zt's SIMT kernel: correct, but slow enough to explain a low MFU
slow=$(grep -rhoE "cuBLASLt has no algorithm for the [^:]*" "$DIR" 2>/dev/null | sed 's/cuBLASLt has no algorithm for the //' |
    sort | uniq -c | sort -rn | head -n 8)
record "{\"phase\":\"gemm_fallback\",\"products\":$(json "$slow")}"
[[ -n $slow ]] && echo "products cuBLASLt had no algorithm for (the SIMT kernel ran them):" && echo "$slow"
echo "results: $JSONL"
echo "$PASSED passed, $FAILED failed"
[[ $FAILED == 0 && $PASSED -gt 0 ]]
