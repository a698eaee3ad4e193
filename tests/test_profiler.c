#define _POSIX_C_SOURCE 200809L
/* tests/test_profiler.c - DeepSpeed's timers (wall_clock_breakdown) and flops profiler (flops_profiler): the
   lines and the profile they print, the MACs counted against the models' arithmetic, and the config's
   sections for what zt does not build. */
#include "test.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *GPT2 =
    "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_head\": 2, \"n_embd\": 16, \"n_positions\": 16, \"vocab_size\": 37}";
/* grouped-query attention (4 heads of 8, 2 for keys and values), a gated MLP of 48, tied embeddings */
static const char *LLAMA =
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
    " \"hidden_size\": 32, \"intermediate_size\": 48, \"max_position_embeddings\": 32, \"vocab_size\": 61,"
    " \"tie_word_embeddings\": true}";

static char logged[32768];
static void capture(zt_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    snprintf(logged + strlen(logged), sizeof logged - strlen(logged), "%s\n", msg);
}

static zt_result parse(const char *json, zt_options *o) {
    static zt_ds_config ds; /* o's strings point into it */
    *o = zt_options_default();
    logged[0] = 0;
    zt_set_log(capture, NULL);
    zt_result r = zt_ds_config_parse(&ds, o, json, strlen(json), "ds.json", 1, 16);
    zt_set_log(NULL, NULL);
    return r;
}

/* trains `steps` steps of `accum` micro-batches of 2 rows of 8 tokens, with standard output into a file:
   returns what was printed there (malloc'd) */
static char *train_printing(const char *model, const char *json, int steps, int accum) {
    zt_model_config c;
    if (zt_model_config_parse(&c, model, strlen(model), "model") != ZT_OK) zt_fatal("%s", zt_last_error());
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &c;
    zt_options o;
    if (parse(json, &o) != ZT_OK) zt_fatal("%s", zt_last_error());
    o.seq_len = 8;
    o.threads = 1;
    o.max_steps = steps;
    zt_engine *e = NULL;
    if (zt_init_options(&e, &spec, &o) != ZT_OK) zt_fatal("%s", zt_last_error());
    char path[128];
    snprintf(path, sizeof path, "/tmp/zt_test_stdout_%d", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), saved = dup(1);
    if (fd < 0 || saved < 0) zt_fatal("cannot capture standard output");
    fflush(stdout);
    dup2(fd, 1);
    int32_t x[16];
    for (int i = 0; i < 16; i++) x[i] = (i * 7 + 3) % 37;
    logged[0] = 0;
    zt_set_log(capture, NULL); /* the memory reports */
    for (int s = 0; s < steps; s++) {
        for (int m = 0; m < accum; m++) zt_forward_backward(e, x, NULL, NULL, 2);
        zt_step(e);
    }
    zt_set_log(NULL, NULL);
    fflush(stdout);
    dup2(saved, 1);
    close(saved), close(fd);
    zt_shutdown(e);
    char *text = test_slurp(path, NULL);
    unlink(path);
    return text;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* The MACs of a GPT-2 layer are 12 C^2 per row (q, k, v, the projection, the MLP's 4C both ways) and 2 T C per
   row for attention over every key (DeepSpeed's count); the head's N C V (the padded vocabulary, 128: what the
   product computes), not its gradient's products. 2 micro-batches of 2 x 8 tokens: N = 32. */
TEST(flops_profiler_counts_the_forward_passes_macs) {
    char dir[128], json[512], path[300];
    snprintf(dir, sizeof dir, "/tmp/zt_test_profile_%d", (int)getpid());
    snprintf(json, sizeof json, "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 2, "
             "\"flops_profiler\": {\"enabled\": true, \"profile_step\": 1, \"output_file\": \"%s/deep/profile.txt\"}}", dir);
    char *out = train_printing(GPT2, json, 3, 2);
    CHECK(out != NULL);
    /* the global timers print every step (the profiler turns them on, as in DeepSpeed); the micro-steps' do not */
    CHECK_EQ_INT(count_of(out, "[Rank 0] time (ms) | fwd: "), 3);
    CHECK_EQ_INT(count_of(out, "fwd_microstep"), 0);
    CHECK(strstr(out, "Flops Profiler") == NULL); /* into output_file, its directory made */
    snprintf(path, sizeof path, "%s/deep/profile.txt", dir);
    char *p = test_slurp(path, NULL);
    CHECK_MSG(p != NULL, "no %s", path);
    if (!p) return;
    CHECK_EQ_INT(count_of(p, "-------------------------- DeepSpeed Flops Profiler --------------------------"), 1);
    CHECK_STR_CONTAINS(p, "Profile Summary at step 2:\n"); /* profile_step 1: DeepSpeed's second step */
    CHECK_STR_CONTAINS(p, "world size:                                                             1       \n");
    CHECK_STR_CONTAINS(p, "batch size per GPU:                                                     2       \n");
    CHECK_STR_CONTAINS(p, "fwd MACs per GPU:                                                       172.03 KMACs\n");
    CHECK_STR_CONTAINS(p, "bwd FLOPS per GPU = 2 * fwd flops per GPU / bwd latency: ");
    CHECK_STR_CONTAINS(p, "samples/second: ");
    CHECK_STR_CONTAINS(p, "    MACs        - {'gpt2': '172.03 KMACs'}\n");
    CHECK_STR_CONTAINS(p, "    params      - {'gpt2.layer': '3.28 K'}\n");
    CHECK_STR_CONTAINS(p, "    MACs        - {'gpt2.layer': '106.5 KMACs'}\n");
    CHECK_STR_CONTAINS(p, "  (0): gpt2.embedding(848 = ");
    CHECK_STR_CONTAINS(p, "0 MACs = 0% MACs");
    CHECK_STR_CONTAINS(p, "  (1): gpt2.layer(3.28 K = ");
    CHECK_STR_CONTAINS(p, "106.5 KMACs = 61.9% MACs");
    CHECK_STR_CONTAINS(p, "  (2): gpt2.head(32 = ");
    CHECK_STR_CONTAINS(p, "65.54 KMACs = 38.1% MACs");
    /* the flops: twice the MACs, and the activations', norms' and adds' few more */
    double flops = 0;
    const char *f = strstr(p, "fwd flops per GPU: ");
    CHECK(f && sscanf(f + 19, " %lf K", &flops) == 1 && flops > 2 * 172.03 && flops < 2 * 172.03 * 1.2);
    free(p);
    free(out);
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    CHECK(system(rm) == 0);
}

/* LLaMA with grouped-query attention: per row q and o C^2 each, k and v C x 16, the MLP 3 C x 48; attention 2 T x 32
   (every query head over every key); the tied head 32 x 128 (the padded vocabulary). N = 16: 131.07 K MACs a layer,
   65.54 K the head, 327.68 K in all. top_modules 2, module_depth 1: depth 0 only. */
TEST(flops_profiler_counts_grouped_query_attention) {
    char *out = train_printing(LLAMA, "{\"train_micro_batch_size_per_gpu\": 2, \"flops_profiler\": {\"enabled\": true, "
                               "\"profile_step\": 0, \"module_depth\": 1, \"top_modules\": 2, \"detailed\": false}}", 2, 1);
    CHECK(out != NULL);
    if (!out) return;
    CHECK_STR_CONTAINS(out, "Profile Summary at step 1:\n");
    CHECK_STR_CONTAINS(out, "fwd MACs per GPU:                                                       327.68 KMACs\n");
    CHECK_STR_CONTAINS(out, "Top 2 modules in terms of params, MACs or fwd latency at different model depths:\ndepth 0:\n");
    CHECK(strstr(out, "depth 1:") == NULL && strstr(out, "Detailed Profile") == NULL);
    /* the profile comes before its step's timer line */
    const char *profile = strstr(out, "DeepSpeed Flops Profiler"), *second = strstr(out, "| fwd: ");
    CHECK(profile && second && (second = strstr(second + 1, "| fwd: ")) != NULL && profile < second);
    free(out);
    out = train_printing(LLAMA, "{\"train_micro_batch_size_per_gpu\": 2, \"flops_profiler\": {\"enabled\": true, "
                         "\"profile_step\": 0, \"top_modules\": 2, \"recompute_fwd_factor\": 0.5}}", 1, 1);
    CHECK(out != NULL);
    if (!out) return;
    /* the layers' sum first, then the head's (the embedding has no MACs) */
    CHECK_STR_CONTAINS(out, "    MACs        - {'llama.layer': '262.14 KMACs', 'llama.head': '65.54 KMACs'}\n");
    CHECK_STR_CONTAINS(out, "  (1): llama.layer(");
    CHECK_STR_CONTAINS(out, "131.07 KMACs = 40% MACs");
    CHECK_STR_CONTAINS(out, "bwd FLOPS per GPU = 2.5 * fwd flops per GPU / bwd latency: ");
    CHECK_STR_CONTAINS(out, "FLOPS per GPU = 3.5 * fwd flops per GPU / iter latency: ");
    free(out);
    /* OLMo 2 projects q, k and v from (B,T,C) activations: the same MACs as LLaMA's 2-D rows */
    static const char *const OLMO2 =
        "{\"model_type\": \"olmo2\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
        " \"hidden_size\": 32, \"intermediate_size\": 48, \"max_position_embeddings\": 32, \"vocab_size\": 61,"
        " \"tie_word_embeddings\": true}";
    out = train_printing(OLMO2, "{\"train_micro_batch_size_per_gpu\": 2, \"flops_profiler\": {\"enabled\": true, "
                         "\"profile_step\": 0}}", 1, 1);
    CHECK(out != NULL);
    CHECK_STR_CONTAINS(out, "fwd MACs per GPU:                                                       327.68 KMACs\n");
    free(out);
    /* a negative profile_step never comes, as in DeepSpeed: the step lines alone */
    out = train_printing(LLAMA, "{\"train_micro_batch_size_per_gpu\": 2, \"flops_profiler\": {\"enabled\": true, "
                         "\"profile_step\": -1}}", 2, 1);
    CHECK(out != NULL && strstr(out, "Flops Profiler") == NULL && count_of(out, "| fwd: ") == 2);
    free(out);
}

/* wall_clock_breakdown: DeepSpeed's lines as the Trainer and Accelerate get them (its step() called once a step): the
   micro-step timers, not reset between the micro-batches, then the global ones, both the step's sums */
TEST(wall_clock_breakdown_prints_deepspeeds_timers) {
    char dir[128], json[512];
    snprintf(dir, sizeof dir, "/tmp/zt_test_timers_%d", (int)getpid());
    snprintf(json, sizeof json, "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 3, "
             "\"wall_clock_breakdown\": true, \"csv_monitor\": {\"enabled\": true, \"output_path\": \"%s\"}}", dir);
    char *out = train_printing(GPT2, json, 2, 3);
    CHECK(out != NULL);
    if (!out) return;
    CHECK_EQ_INT(count_of(out, "[Rank 0] time (ms) | fwd_microstep: "), 2);
    CHECK_EQ_INT(count_of(out, "[Rank 0] time (ms) | fwd: "), 2);
    CHECK(strstr(out, "Flops Profiler") == NULL);
    const char *line = out;
    double step_fwd[2] = {0, 0};
    for (int s = 0; s < 2 && line; s++) {
        double m[5], g[5];
        CHECK(sscanf(line, "[Rank 0] time (ms) | fwd_microstep: %lf | bwd_microstep: %lf | bwd_inner_microstep: %lf | "
                     "bwd_allreduce_microstep: %lf | step_microstep: %lf", &m[0], &m[1], &m[2], &m[3], &m[4]) == 5);
        line = strchr(line, '\n');
        CHECK(line && sscanf(line + 1, "[Rank 0] time (ms) | fwd: %lf | bwd: %lf | bwd_inner: %lf | bwd_allreduce: %lf | "
                             "step: %lf", &g[0], &g[1], &g[2], &g[3], &g[4]) == 5);
        for (int k = 0; k < 5; k++) CHECK(m[k] == g[k]);
        /* one rank reduces nothing: its bwd_allreduce is the wait for the streams alone */
        CHECK(g[0] > 0 && g[1] > 0 && g[3] >= 0 && g[3] <= g[2] && g[4] > 0 && fabs(g[1] - g[2] - g[3]) <= 0.011);
        step_fwd[s] = g[0];
        line = line ? strchr(line + 1, '\n') : NULL;
        if (line) line++;
    }
    free(out);
    /* the monitor writes the step's times too, as DeepSpeed's _write_monitor (6 samples a step) */
    char path[300];
    snprintf(path, sizeof path, "%s/DeepSpeedJobName/Train_Samples_elapsed_time_ms_forward.csv", dir);
    char *csv = test_slurp(path, NULL);
    double f1 = 0, f2 = 0;
    CHECK_MSG(csv && sscanf(csv, "step,elapsed_time_ms_forward\r\n6,%lf\r\n12,%lf\r\n", &f1, &f2) == 2, "%s", csv ? csv : path);
    CHECK_NEAR(f1, step_fwd[0], 0.006);
    CHECK_NEAR(f2, step_fwd[1], 0.006);
    static const char *const others[] = {"backward", "backward_inner", "backward_allreduce", "step"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/DeepSpeedJobName/Train_Samples_elapsed_time_ms_%s.csv", dir, others[k]);
        struct stat st;
        CHECK_MSG(stat(path, &st) == 0, "no %s", path);
    }
    free(csv);
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    CHECK(system(rm) == 0);
}

TEST(profiler_and_unbuilt_sections_in_the_config) {
    zt_options o;
    CHECK(parse("{\"flops_profiler\": {\"enabled\": true, \"profile_step\": 3, \"module_depth\": 2, \"top_modules\": 4, "
                "\"detailed\": false, \"output_file\": null, \"recompute_fwd_factor\": 1}, \"wall_clock_breakdown\": true}",
                &o) == ZT_OK);
    CHECK(o.flops_profiler && o.profile_step == 3 && o.profile_depth == 2 && o.profile_top == 4 && !o.profile_detailed);
    CHECK(o.recompute_fwd_factor == 1.0 && o.profile_output == NULL && o.wall_clock_breakdown);
    CHECK(strstr(logged, "wall_clock_breakdown") == NULL); /* acted on now */
    /* DeepSpeed reads the section without checking its keys: an unknown one is a warning */
    CHECK(parse("{\"flops_profiler\": {\"enabled\": true, \"profile_stpe\": 3}}", &o) == ZT_OK);
    CHECK_STR_CONTAINS(logged, "unknown key flops_profiler.profile_stpe");
    CHECK_STR_CONTAINS(logged, "did you mean \"profile_step\"?");
    CHECK(parse("{\"flops_profiler\": {\"profile_step\": 2.5}}", &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "flops_profiler.profile_step");
    CHECK(parse("{\"flops_profiler\": {\"recompute_fwd_factor\": -1}}", &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "flops_profiler.recompute_fwd_factor");
    CHECK(parse("{\"flops_profiler\": {\"output_file\": 5}}", &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "flops_profiler.output_file");
    CHECK(parse("{\"flops_profiler\": {\"enabled\": \"yes\"}}", &o) == ZT_ERROR_INVALID);
    CHECK(parse("{\"flops_profiler\": [1]}", &o) == ZT_ERROR_INVALID);
    /* sequence and tensor parallelism would change what a rank computes: refused, saying so */
    CHECK(parse("{\"sequence_parallel_size\": 4}", &o) == ZT_ERROR_UNSUPPORTED);
    CHECK_STR_CONTAINS(zt_last_error(), "ds.json: sequence_parallel_size is 4: zt does not build sequence parallelism");
    CHECK(parse("{\"sequence_parallel_size\": 1, \"tensor_parallel\": {\"autotp_size\": 0}}", &o) == ZT_OK);
    CHECK(parse("{\"tensor_parallel\": {\"autotp_size\": 2}}", &o) == ZT_ERROR_UNSUPPORTED);
    CHECK_STR_CONTAINS(zt_last_error(), "tensor_parallel.autotp_size is 2: zt does not build tensor parallelism");
    CHECK(parse("{\"tensor_parallel\": 2}", &o) == ZT_ERROR_INVALID);
    /* the services and engines zt does not build: named, training goes on */
    CHECK(parse("{\"comms_logger\": {\"enabled\": true, \"verbose\": false}, \"compile\": {\"deepcompile\": true}, "
                "\"autotuning\": {\"enabled\": false}}", &o) == ZT_OK);
    CHECK_STR_CONTAINS(logged, "comms_logger.enabled");
    CHECK_STR_CONTAINS(logged, "compile.deepcompile");
    CHECK(strstr(logged, "autotuning") == NULL);
    CHECK(parse("{\"data_efficiency\": {\"enabled\": 3}}", &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "data_efficiency.enabled");
    /* without the sections, what the caller set stays */
    zt_ds_config keep;
    zt_options mine = zt_options_default();
    mine.flops_profiler = mine.wall_clock_breakdown = mine.memory_breakdown = 1, mine.profile_step = 5;
    CHECK(zt_ds_config_parse(&keep, &mine, "{}", 2, "ds.json", 1, 16) == ZT_OK);
    CHECK(mine.flops_profiler && mine.wall_clock_breakdown && mine.memory_breakdown && mine.profile_step == 5);
    /* --print_config shows the profiler's settings */
    CHECK(parse("{\"flops_profiler\": {\"enabled\": true, \"output_file\": \"a\\\"b\"}}", &o) == ZT_OK);
    zt_ds_config ds;
    const char *json = "{\"flops_profiler\": {\"enabled\": true, \"output_file\": \"a\\\"b\"}}";
    CHECK(zt_ds_config_parse(&ds, &o, json, strlen(json), "ds.json", 1, 16) == ZT_OK);
    char text[8192] = "";
    FILE *f = fmemopen(text, sizeof text - 1, "w");
    zt_ds_config_print(&ds, &o, f);
    fclose(f);
    CHECK_STR_CONTAINS(text, "\"flops_profiler\": {\"enabled\": true, \"recompute_fwd_factor\": 0, \"profile_step\": 1, "
                             "\"module_depth\": -1, \"top_modules\": 1, \"detailed\": true, \"output_file\": \"a\\\"b\"},");
}

/* memory_breakdown: DeepSpeed's see_memory_usage points, as zt_memory_report lines */
TEST(memory_breakdown_reports_at_deepspeeds_points) {
    char *out = train_printing(GPT2, "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 2, "
                               "\"memory_breakdown\": true}", 2, 2);
    CHECK(out != NULL && out[0] == 0); /* no timers */
    static const char *const points[] = {"forward", "backward"};
    for (int k = 0; k < 2; k++) {
        char label[64];
        snprintf(label, sizeof label, "memory Engine before %s | rank 0 | device ", points[k]);
        CHECK_EQ_INT(count_of(logged, label), 4);
        snprintf(label, sizeof label, "memory Engine after %s | rank 0 | device ", points[k]);
        CHECK_EQ_INT(count_of(logged, label), 4);
    }
    CHECK_EQ_INT(count_of(logged, "memory Engine before step | rank 0 | device "), 2);
    CHECK_EQ_INT(count_of(logged, "memory Engine after step | rank 0 | device "), 2);
    CHECK_STR_CONTAINS(logged, "| activations ");
    free(out);
}
