/* bench/zero.c - ZeRO's memory and its price. One JSON line each:
   - per-rank bytes for stages 0-3 at N = 1, 2, 4, 8, 64 ranks for GPT-2 124M and a LLaMA-7B shape (bf16,
     micro-batch 1 x 1024), from the planner (nothing is allocated), beside the ZeRO paper's model states
     for 16-bit training and DeepSpeed's estimator (estimate_zero2/3_model_states_mem_needs: 4P + 16P/N
     at stage 2, 18P/N plus the largest layer at stage 3, which this line leaves out);
   - step time of stages 0-3 at 2 and 4 ranks (processes) on a small shape, as ratios to stage 0 in the
     same run: what slicing costs in collectives; stages 2 and 3 also with overlap_comm, as a ratio to the
     same stage without (on the CPU backend the communication stream is a thread of its own). */
#define _POSIX_C_SOURCE 200809L
#include "../zt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static const char *GPT2_124M =
    "{\"model_type\": \"gpt2\", \"n_layer\": 12, \"n_head\": 12, \"n_embd\": 768, \"n_positions\": 1024,"
    " \"vocab_size\": 50257}";
static const char *LLAMA_7B =
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"num_key_value_heads\": 32,"
    " \"hidden_size\": 4096, \"intermediate_size\": 11008, \"max_position_embeddings\": 4096, \"vocab_size\": 32000,"
    " \"tie_word_embeddings\": false}";
static const char *SMALL =
    "{\"model_type\": \"gpt2\", \"n_layer\": 4, \"n_head\": 4, \"n_embd\": 128, \"n_positions\": 128,"
    " \"vocab_size\": 256}";

static zt_model_config config_of(const char *json) {
    zt_model_config c;
    if (zt_model_config_parse(&c, json, strlen(json), "bench config") != ZT_OK) zt_fatal("%s", zt_last_error());
    return c;
}

static void plans(const char *name, const char *json) {
    zt_model_config mc = config_of(json);
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &mc;
    int worlds[] = {1, 2, 4, 8, 64};
    for (int wi = 0; wi < 5; wi++)
        for (int stage = 0; stage < 4; stage++) {
            zt_options o = zt_options_default();
            o.precision = ZT_PRECISION_BF16;
            o.micro_batch = 1;
            o.seq_len = 1024;
            o.zero_stage = stage;
            zt_memory_plan p;
            if (zt_plan_memory(&p, &spec, &o, worlds[wi]) != ZT_OK) zt_fatal("%s", zt_last_error());
            double P = (double)p.params, N = worlds[wi], GiB = 1073741824.0;
            double paper = stage == 0 ? 16 * P : stage == 1 ? 4 * P + 12 * P / N : stage == 2 ? 2 * P + 14 * P / N : 16 * P / N;
            double ds = stage == 2 ? 4 * P + 16 * P / N : stage == 3 ? 18 * P / N : 0;
            double states = (double)(p.bytes[ZT_MEM_PARAMS] + p.bytes[ZT_MEM_GRADS] + p.bytes[ZT_MEM_MASTER] +
                                     p.bytes[ZT_MEM_OPTIM]);
            printf("{\"bench\": \"zero_plan\", \"model\": \"%s\", \"params\": %lld, \"ranks\": %d, \"stage\": %d, "
                   "\"model_states_gib\": %.3f, \"paper_gib\": %.3f, \"states_over_paper\": %.3f, ", name,
                   (long long)p.params, worlds[wi], stage, states / GiB, paper / GiB, states / paper);
            if (ds > 0) printf("\"deepspeed_estimate_gib\": %.3f, ", ds / GiB);
            printf("\"buckets_gib\": %.3f, \"activations_gib\": %.3f, \"total_gib\": %.3f}\n",
                   p.bytes[ZT_MEM_BUCKETS] / GiB, p.bytes[ZT_MEM_ACTIVATIONS] / GiB, p.device / GiB);
            fflush(stdout);
        }
}

enum { STEPS = 6, B = 4, T = 128 };

/* one rank of a timed run: rank 0 writes the mean step time of the last STEPS - 1 steps */
static int time_rank(int fd, int rank, int world, int stage, int overlap, int out) {
    zt_comm *c = NULL;
    if (zt_comm_shm_attach(&c, fd, rank, world) != ZT_OK) return 2;
    zt_model_config mc = config_of(SMALL);
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &mc;
    zt_options o = zt_options_default();
    o.precision = ZT_PRECISION_BF16;
    o.micro_batch = B;
    o.seq_len = T;
    o.threads = 1; /* ranks share the cores */
    o.zero_stage = stage;
    o.overlap_comm = overlap;
    o.persistence_threshold = 0;
    o.comm = c;
    zt_engine *e = NULL;
    if (zt_init_options(&e, &spec, &o) != ZT_OK) return 3;
    int32_t tok[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 31 + rank * 7) % 256;
    uint64_t t0 = 0;
    for (int s = 0; s < STEPS; s++) {
        if (s == 1) t0 = zt_time_ns();
        zt_forward_backward(e, tok, NULL, NULL, B);
        zt_step(e);
    }
    double ms = (double)(zt_time_ns() - t0) / 1e6 / (STEPS - 1);
    if (rank == 0 && write(out, &ms, sizeof ms) != (ssize_t)sizeof ms) return 4;
    zt_shutdown(e);
    zt_comm_destroy(c);
    return 0;
}

static double timed(int world, int stage, int overlap) {
    int fd = -1, p[2];
    if (zt_comm_shm_create(world, 4 << 20, &fd) != ZT_OK || pipe(p) != 0) zt_fatal("cannot set up the ranks");
    pid_t pids[8];
    for (int r = 0; r < world; r++)
        if ((pids[r] = fork()) == 0) _exit(time_rank(fd, r, world, stage, overlap, p[1]));
    for (int r = 0; r < world; r++) {
        int status = 0;
        waitpid(pids[r], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) zt_fatal("rank %d of a timed run failed (%d)", r, status);
    }
    double ms = 0;
    if (read(p[0], &ms, sizeof ms) != (ssize_t)sizeof ms) zt_fatal("no timing came back");
    close(p[0]), close(p[1]), close(fd);
    return ms;
}

int main(void) {
    plans("gpt2-124M", GPT2_124M);
    plans("llama-7B", LLAMA_7B);
    for (int world = 2; world <= 4; world += 2) {
        double base = 0;
        for (int stage = 0; stage < 4; stage++) {
            double ms[2] = {1e300, 1e300}; /* without and with overlap_comm (stages 2 and 3) */
            for (int overlap = 0; overlap <= (stage >= 2); overlap++)
                for (int rep = 0; rep < 2; rep++) { /* best of two: the ranks share two cores with the rest */
                    double t = timed(world, stage, overlap);
                    ms[overlap] = t < ms[overlap] ? t : ms[overlap];
                }
            if (stage == 0) base = ms[0];
            printf("{\"bench\": \"zero_step\", \"model\": \"gpt2-small-4x128\", \"ranks\": %d, \"stage\": %d, "
                   "\"step_ms\": %.2f, \"over_stage0\": %.3f}\n", world, stage, ms[0], ms[0] / base);
            if (stage >= 2)
                printf("{\"bench\": \"zero_step\", \"model\": \"gpt2-small-4x128\", \"ranks\": %d, \"stage\": %d, "
                       "\"overlap_comm\": true, \"step_ms\": %.2f, \"over_stage0\": %.3f, \"over_no_overlap\": %.3f}\n",
                       world, stage, ms[1], ms[1] / base, ms[1] / ms[0]);
            fflush(stdout);
        }
    }
    return 0;
}
