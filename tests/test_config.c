#define _POSIX_C_SOURCE 200809L
/* tests/test_config.c - DeepSpeed configs: DeepSpeed's own numbers (the .tsv files in tests/ref/deepspeed, made by
   running DeepSpeed 0.19.8), the example configs, flags against config values, and every error. */
#include "test.h"

/* warnings are collected here instead of printed, so tests can check them */
static char logged[8192];
static void capture(zt_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    size_t n = strlen(logged);
    snprintf(logged + n, sizeof logged - n, "%s\n", msg);
}

static zt_result parse(const char *json, zt_ds_config *c, zt_options *o, int world) {
    logged[0] = 0;
    zt_set_log(capture, NULL);
    zt_result r = zt_ds_config_parse(c, o, json, strlen(json), "ds.json", world, 64);
    zt_set_log(NULL, NULL);
    return r;
}

/* the next tab-separated field of a line */
static char *field(char **line) {
    char *f = *line, *tab = strchr(f, '\t');
    if (tab) *tab = 0, *line = tab + 1;
    else *line = f + strlen(f);
    f[strcspn(f, "\n")] = 0;
    return f;
}

static FILE *fixture(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/ref/deepspeed/%s", name);
    FILE *f = fopen(path, "r");
    if (!f) zt_fatal("cannot open %s (run the tests from the repository root)", path);
    return f;
}

TEST(config_batch_sizes_match_deepspeed) {
    FILE *f = fixture("batch.tsv");
    char buf[4096];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        char *line = buf;
        int world = atoi(field(&line));
        char *json = field(&line), *want = field(&line);
        zt_ds_config c;
        zt_options o = zt_options_default();
        zt_result r = parse(json, &c, &o, world);
        if (strncmp(want, "error: ", 7) == 0) {
            CHECK_MSG(r != ZT_OK, "%s at world size %d was accepted", json, world);
            CHECK_STR_CONTAINS(zt_last_error(), want + 7);
        } else {
            CHECK_MSG(r == ZT_OK, "%s: %s", json, zt_last_error());
            char got[64];
            snprintf(got, sizeof got, "%lld %lld %lld", (long long)c.train_batch_size, (long long)c.micro_batch,
                     (long long)c.grad_accum);
            CHECK_MSG(strcmp(got, want) == 0, "%s at world size %d: %s, DeepSpeed %s", json, world, got, want);
            CHECK_EQ_INT(o.micro_batch, c.micro_batch);
            CHECK_EQ_INT(o.grad_accum, c.grad_accum);
        }
        n++;
    }
    fclose(f);
    CHECK(n >= 15);
}

TEST(config_schedules_match_deepspeed) {
    FILE *f = fixture("schedules.tsv");
    char buf[8192];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        char *line = buf, *json = field(&line), *want = field(&line);
        zt_ds_config c;
        zt_options o = zt_options_default();
        zt_result r = parse(json, &c, &o, 1);
        if (strncmp(want, "error: ", 7) == 0) {
            CHECK_MSG(r != ZT_OK, "%s was accepted", json);
            CHECK_STR_CONTAINS(zt_last_error(), want + 7);
        } else {
            CHECK_MSG(r == ZT_OK, "%s: %s", json, zt_last_error());
            char *p = want;
            for (int k = 0; k < 50; k++) {
                double lr = strtod(p, &p);
                double got = zt_schedule_lr(&o, k);
                CHECK_MSG(fabs(got - lr) <= 1e-6 * fabs(lr) + 1e-12, "%s: step %d lr %.9g, DeepSpeed %.9g", json, k, got, lr);
            }
        }
        n++;
    }
    fclose(f);
    CHECK(n >= 12);
}

/* --lr_scheduler_type, --lr_scheduler_kwargs and --warmup_steps (steps, or a share below 1) against the
   factors of transformers' own get_scheduler and get_warmup_steps (tests/ref/make_hf_schedules.py) */
TEST(config_schedules_match_transformers) {
    FILE *f = fopen("tests/ref/hf_schedules.txt", "r");
    CHECK_MSG(f != NULL, "cannot open tests/ref/hf_schedules.txt (run the tests from the repository root)");
    if (!f) return;
    static char buf[1 << 16];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        if (buf[0] == '#') continue;
        char *line = buf, *name = field(&line), *warmup = field(&line), *total = field(&line), *lr = field(&line);
        char *kwargs = field(&line), *p = field(&line);
        char *argv[] = {(char *)"p", (char *)"--lr_scheduler_type", name, (char *)"--warmup_steps", warmup,
                        (char *)"--max_steps", total, (char *)"--learning_rate", lr, (char *)"--lr_scheduler_kwargs", kwargs};
        zt_options o = zt_options_default();
        zt_result r = zt_options_parse_args(&o, strcmp(kwargs, "-") ? 11 : 9, argv);
        CHECK_MSG(r == ZT_OK, "%s %s: %s", name, kwargs, zt_last_error());
        CHECK_MSG(strcmp(zt_schedule_name(o.schedule), name) == 0, "%s read as %s", name, zt_schedule_name(o.schedule));
        for (int64_t k = 0; k < o.max_steps + 3; k++) {
            char *end = NULL;
            double want = (double)o.lr * strtod(p, &end), got = zt_schedule_lr(&o, k);
            CHECK_MSG(end != p, "%s: the fixture ends at step %lld", name, (long long)k);
            p = end;
            CHECK_MSG(fabs(got - want) <= 2e-7 * fabs(want) + 1e-15, "%s, warmup %s, %s: step %lld lr %.9g, transformers %.9g",
                      name, warmup, kwargs, (long long)k, got, want);
        }
        n++;
    }
    fclose(f);
    CHECK(n >= 20);
    /* the Trainer's errors, and transformers 4's --warmup_ratio */
    static const struct { const char *flags[4]; const char *error; } bad[] = {
        {{"--lr_scheduler_type", "cosine", "--lr_scheduler_kwargs", "{\"min_lr\": 1e-5}"},
         "the cosine schedule does not take \"min_lr\" (it takes: num_cycles)"},
        {{"--lr_scheduler_type", "linear", "--lr_scheduler_kwargs", "{\"power\": 2}"}, "it takes none"},
        {{"--lr_scheduler_kwargs", "{\"num_cycles\": \"two\"}", "--lr_scheduler_type", "cosine"},
         "num_cycles must be a number, found \"two\""},
        {{"--lr_scheduler_type", "cosine", "--lr_scheduler_kwargs", "{\"num_cycles\": 1,}"}, "malformed JSON"},
        {{"--lr_scheduler_type", "warmup_stable_decay", "--lr_scheduler_kwargs", "{\"decay_type\": \"square\"}"},
         "decay_type is \"linear\", \"cosine\" or \"1-sqrt\", not \"square\""},
        {{"--lr_scheduler_type", "warmup_stable_decay", "--lr_scheduler_kwargs", "{\"num_decay_steps\": 2.5}"},
         "num_decay_steps must be a whole number of steps"},
        {{"--lr_scheduler_type", "reduce_lr_on_plateau", "--lr_scheduler_kwargs", "{\"factor\": 1.5}"},
         "factor should be < 1.0"},
        {{"--lr_scheduler_type", "reduce_lr_on_plateau", "--lr_scheduler_kwargs", "{\"mode\": \"avg\"}"},
         "mode is \"min\" or \"max\", not \"avg\""},
        {{"--lr_scheduler_type", "reduce_lr_on_plateau", "--lr_scheduler_kwargs", "{\"warmup\": 2}"},
         "the reduce_lr_on_plateau schedule does not take \"warmup\""},
        {{"--lr_scheduler_type", "greedy", "--lr_scheduler_kwargs", "{\"window_size\": 1000}"}, "window_size is 1 to 256"},
        {{"--lr_scheduler_type", "greedy", "--lr_scheduler_kwargs", "{\"patience\": 1.5}"},
         "patience must be a whole number of evaluations"},
        {{"--lr_scheduler_type", "greedy", "--lr_scheduler_kwargs", "{\"smooth\": 1}"}, "smooth is true or false, not 1"},
        {{"--lr_scheduler_type", "cosine_annealing"}, "\"cosine_annealing\" is not one of transformers' schedules"},
        {{"--warmup_steps", "-1"}, "flag --warmup_steps expects a number of steps, or a share below 1, found \"-1\""},
        {{"--warmup_ratio", "1.5"}, "flag --warmup_ratio expects a share between 0 and 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[5] = {(char *)"p"};
        int argc = 1;
        for (int k = 0; k < 4 && bad[i].flags[k]; k++) argv[argc++] = (char *)bad[i].flags[k];
        zt_options o = zt_options_default();
        CHECK_MSG(zt_options_parse_args(&o, argc, argv) != ZT_OK, "accepted: %s %s", argv[1], argc > 2 ? argv[2] : "");
        CHECK_STR_CONTAINS(zt_last_error(), bad[i].error);
    }
    char *ratio[] = {(char *)"p", (char *)"--warmup_ratio", (char *)"0.03", (char *)"--max_steps", (char *)"1000"};
    zt_options o = zt_options_default();
    CHECK(zt_options_parse_args(&o, 5, ratio) == ZT_OK);
    CHECK_NEAR(zt_schedule_lr(&o, 15), 0.5 * o.lr, 1e-12); /* 30 warmup steps */
    /* what only zt_init checks: arguments a schedule needs, and a DeepSpeed scheduler replacing the flags' */
    char *need[] = {(char *)"p", (char *)"--lr_scheduler_type", (char *)"cosine_with_min_lr"};
    o = zt_options_default();
    CHECK(zt_options_parse_args(&o, 3, need) == ZT_OK);
    zt_ds_config c;
    zt_engine *e = NULL;
    CHECK(parse("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_num_steps\": 5}}}", &c, &o, 1) == ZT_OK);
    CHECK_STR_CONTAINS(logged, "the config's scheduler WarmupLR replaces --lr_scheduler_type cosine_with_min_lr");
    CHECK(o.schedule == ZT_SCHED_WARMUP_LR);
    /* "auto" as the Transformers integration fills it: the warmup steps of the share, the learning rate */
    char *share[] = {(char *)"p", (char *)"--warmup_steps", (char *)"0.1", (char *)"--max_steps", (char *)"200",
                     (char *)"--learning_rate", (char *)"3e-4"};
    const char *decay = "{\"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"warmup_num_steps\": \"auto\", "
                        "\"warmup_max_lr\": \"auto\", \"total_num_steps\": \"auto\"}}}";
    o = zt_options_default();
    CHECK(zt_options_parse_args(&o, 7, share) == ZT_OK);
    CHECK(parse(decay, &c, &o, 1) == ZT_OK);
    CHECK_EQ_INT(o.warmup_steps, 20);
    CHECK_NEAR(o.warmup_max_lr, 3e-4, 1e-10);
    o = zt_options_default();
    CHECK(parse("{\"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"total_num_steps\": 10}}}", &c, &o, 1) == ZT_OK);
    CHECK_NEAR(o.warmup_max_lr, 0.001, 1e-10); /* absent: DeepSpeed's default */
    o = zt_options_default();
    CHECK(zt_options_parse_args(&o, 3, need) == ZT_OK);
    zt_model_config mc;
    const char *model = "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_head\": 2, \"n_embd\": 16, \"n_positions\": 16, \"vocab_size\": 32}";
    CHECK(zt_model_config_parse(&mc, model, strlen(model), "model") == ZT_OK);
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &mc;
    o.micro_batch = 1;
    CHECK(zt_init_options(&e, &spec, &o) != ZT_OK);
    CHECK_STR_CONTAINS(zt_last_error(), "cosine_with_min_lr needs min_lr or min_lr_rate in --lr_scheduler_kwargs");
}

/* reduce_lr_on_plateau and greedy: the learning rate after each evaluation's metric, bit for bit what torch's
   ReduceLROnPlateau and transformers' GreedyLR give (tests/ref/make_plateau_fixtures.py) */
TEST(config_plateau_schedules_match_torch) {
    FILE *f = fopen("tests/ref/plateau.txt", "r");
    CHECK_MSG(f != NULL, "cannot open tests/ref/plateau.txt (run the tests from the repository root)");
    if (!f) return;
    static char buf[1 << 16];
    int n = 0, moved = 0;
    while (fgets(buf, sizeof buf, f)) {
        if (buf[0] == '#') continue;
        char *line = buf, *name = field(&line), *lr = field(&line), *kwargs = field(&line), *m = field(&line);
        char *want = field(&line), *bests = field(&line);
        char *argv[] = {(char *)"p", (char *)"--lr_scheduler_type", name, (char *)"--learning_rate", lr,
                        (char *)"--lr_scheduler_kwargs", kwargs};
        zt_options o = zt_options_default();
        zt_result r = zt_options_parse_args(&o, 7, argv);
        CHECK_MSG(r == ZT_OK, "%s %s: %s", name, kwargs, zt_last_error());
        if (r != ZT_OK) continue;
        CHECK(zt_schedule_lr(&o, 5) == (float)strtod(lr, NULL)); /* the step does not move them */
        zt_plateau p = zt_plateau_init(&o);
        for (int k = 0;; k++) {
            char *end = NULL, *end2 = NULL, *end3 = NULL;
            double metric = strtod(m, &end), lr_after = strtod(want, &end2), best = strtod(bests, &end3);
            if (end == m || end2 == want || end3 == bests) {
                CHECK_MSG(end == m && end2 == want && end3 == bests, "%s %s: as many metrics as learning rates", name, kwargs);
                break;
            }
            m = end, want = end2, bests = end3;
            double before = p.lr;
            zt_plateau_step(&p, &o, metric);
            moved += p.lr != before;
            CHECK_MSG(p.lr == lr_after, "%s %s: evaluation %d (metric %.17g): lr %.17g, torch %.17g", name, kwargs, k + 1,
                      metric, p.lr, lr_after);
            CHECK_MSG(p.best == best, "%s %s: evaluation %d: best %.17g, torch %.17g", name, kwargs, k + 1, p.best, best);
            if (p.lr != lr_after || p.best != best) break;
        }
        n++;
    }
    fclose(f);
    CHECK(n >= 9 && moved > 40);
}

TEST(config_loss_scale_matches_deepspeed) {
    FILE *f = fixture("loss_scale.tsv");
    char buf[8192];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        char *line = buf, *path = field(&line), *fp16 = field(&line), *overflow = field(&line);
        char *scales = field(&line), *skipped = field(&line);
        int raised = atoi(field(&line));
        char json[1024];
        snprintf(json, sizeof json, "{\"fp16\": %s, \"zero_optimization\": {\"stage\": %d}}", fp16,
                 strcmp(path, "zero") == 0 ? 1 : 0);
        zt_ds_config c;
        zt_options o = zt_options_default();
        CHECK_MSG(parse(json, &c, &o, 1) == ZT_OK, "%s: %s", json, zt_last_error());
        zt_loss_scaler s = zt_loss_scaler_init(&o);
        char *p = scales;
        for (int k = 0; overflow[k]; k++) {
            if (k == raised) {
                CHECK_MSG(zt_loss_scaler_update(&s, &o, 1) != ZT_OK, "%s: step %d should stop the run", json, k);
                CHECK_STR_CONTAINS(zt_last_error(), "Current loss scale already at minimum - cannot decrease scale anymore.");
                break;
            }
            if (!skipped[k]) break;
            double want = strtod(p, &p);
            CHECK_MSG(s.scale == want, "%s %s: step %d scale %g, DeepSpeed %g", path, json, k, s.scale, want);
            CHECK(zt_loss_scaler_update(&s, &o, overflow[k] == '1') == ZT_OK);
        }
        n++;
    }
    fclose(f);
    CHECK(n >= 9);
}

/* which steps with a non-finite gradient norm DeepSpeed 0.19.8 skips, by precision and stage: its ZeRO optimizers
   (stage_1_and_2.py's step: unless bf16 without check_grad_overflow; stage3.py's: always), BF16_Optimizer (bf16 at
   stage 1 with fp32 accumulation, no CPU offload: always), FP16_Optimizer at stage 0 (fp16 and bf16); fp32 at stage
   0 has no wrapper and applies the step */
TEST(config_nonfinite_steps_skip_as_deepspeed) {
    static const struct { const char *json; int skip; } cases[] = {
        {"{}", 0},
        {"{\"zero_optimization\": {\"stage\": 1}}", 1},
        {"{\"zero_optimization\": {\"stage\": 3}}", 1},
        {"{\"bf16\": {\"enabled\": true}}", 1},
        {"{\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 2}}", 1},
        {"{\"bf16\": {\"enabled\": true, \"check_grad_overflow\": false}, \"zero_optimization\": {\"stage\": 2}}", 0},
        {"{\"bf16\": {\"enabled\": true, \"check_grad_overflow\": false}, \"zero_optimization\": {\"stage\": 3}}", 1},
        {"{\"bf16\": {\"enabled\": true, \"check_grad_overflow\": false}, \"zero_optimization\": {\"stage\": 1}, "
         "\"data_types\": {\"grad_accum_dtype\": \"fp32\"}}", 1},
        {"{\"bf16\": {\"enabled\": true, \"check_grad_overflow\": false}, \"zero_optimization\": {\"stage\": 1, "
         "\"offload_optimizer\": {\"device\": \"cpu\"}}, \"data_types\": {\"grad_accum_dtype\": \"fp32\"}}", 0},
        {"{\"fp16\": {\"enabled\": true}}", 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        zt_ds_config c;
        zt_options o = zt_options_default();
        CHECK_MSG(parse(cases[k].json, &c, &o, 1) == ZT_OK, "%s: %s", cases[k].json, zt_last_error());
        CHECK_MSG(o.skip_nonfinite == cases[k].skip, "%s: skip_nonfinite %d, DeepSpeed %d", cases[k].json,
                  o.skip_nonfinite, cases[k].skip);
    }
}

static zt_result read_example(const char *name, zt_ds_config *c, zt_options *o) {
    char path[256];
    snprintf(path, sizeof path, "examples/configs/%s", name);
    logged[0] = 0;
    zt_set_log(capture, NULL);
    zt_result r = zt_ds_config_read(c, o, path, 1, 768);
    zt_set_log(NULL, NULL);
    return r;
}

TEST(config_examples_resolve) {
    zt_ds_config c;
    zt_options o = zt_options_default();
    char *argv[] = {(char *)"p", (char *)"--fp16", (char *)"--learning_rate", (char *)"3e-4",
                    (char *)"--per_device_train_batch_size", (char *)"4", (char *)"--warmup_steps", (char *)"50"};
    CHECK(zt_options_parse_args(&o, 8, argv) == ZT_OK);
    CHECK_MSG(read_example("zero2_offload_cpu.json", &c, &o) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(c.zero_stage, 2);
    CHECK(c.offload_optimizer.device == ZT_OFFLOAD_CPU && c.offload_optimizer.pin_memory);
    CHECK_EQ_INT(c.reduce_bucket_size, 200000000);
    CHECK_EQ_INT(c.allgather_bucket_size, 200000000);
    CHECK(c.overlap_comm && c.contiguous_gradients && c.fp16);
    CHECK(o.precision == ZT_PRECISION_FP16 && o.schedule == ZT_SCHED_WARMUP_LR);
    CHECK_NEAR(o.lr, 3e-4, 1e-10);
    CHECK_NEAR(o.warmup_max_lr, 3e-4, 1e-10); /* "auto" from --learning_rate */
    CHECK_EQ_INT(o.warmup_steps, 50);
    CHECK_EQ_INT(c.micro_batch, 4);
    CHECK_EQ_INT(c.train_batch_size, 4);
    CHECK_NEAR(c.gradient_clipping, 1.0, 0);
    CHECK(strstr(logged, "does not act on") == NULL); /* ZeRO and its offload are done */
    CHECK(o.offload_optimizer == ZT_OFFLOAD_CPU && o.offload_param == ZT_OFFLOAD_NONE);
    CHECK_EQ_INT(o.zero_stage, 2);
    CHECK_EQ_INT(o.allgather_bucket_size, 200000000);

    /* ZeRO-3's partial offload: the share reaches the engine; without an offload device it is said to do nothing */
    o = zt_options_default();
    CHECK_MSG(parse("{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.3}}}",
                    &c, &o, 1) == ZT_OK, "%s", zt_last_error());
    CHECK_NEAR(o.offload_ratio, 0.3, 0);
    CHECK(strstr(logged, "ratio") == NULL);
    o = zt_options_default();
    CHECK(parse("{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"ratio\": 0.3}}}", &c, &o, 1) == ZT_OK);
    CHECK_STR_CONTAINS(logged, "offload_optimizer.ratio (offload_optimizer.device is none)");

    o = zt_options_default();
    o.nvme_path = NULL;
    CHECK_MSG(read_example("zero3_nvme.json", &c, &o) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(c.zero_stage, 3);
    CHECK(c.offload_param.device == ZT_OFFLOAD_NVME && strcmp(c.offload_param.nvme_path, "/local_nvme") == 0);
    CHECK_EQ_INT(c.offload_param.buffer_size, 100000000);
    CHECK_EQ_INT(c.offload_param.max_in_cpu, 1000000000);
    CHECK_EQ_INT(c.reduce_bucket_size, 768 * 768);              /* "auto": hidden^2 */
    CHECK_EQ_INT(c.prefetch_bucket_size, (int64_t)(0.9 * 768 * 768)); /* 0.9 hidden^2 */
    CHECK_EQ_INT(c.param_persistence_threshold, 7680);          /* 10 hidden */
    CHECK(c.gather_16bit_weights_on_model_save && c.overlap_comm);
    CHECK_EQ_INT(c.aio_block_size, 262144);
    CHECK_EQ_INT(c.aio_queue_depth, 32);
    CHECK_STR_CONTAINS(logged, "aio.thread_count");

    o = zt_options_default();
    char *bf[] = {(char *)"p", (char *)"--bf16"};
    CHECK(zt_options_parse_args(&o, 2, bf) == ZT_OK);
    CHECK(read_example("bf16.json", &c, &o) == ZT_OK);
    CHECK(c.bf16 && o.precision == ZT_PRECISION_BF16 && o.skip_nonfinite); /* stage 2: check_grad_overflow */

    o = zt_options_default();
    CHECK_MSG(read_example("fp16.json", &c, &o) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(c.zero_stage, 1); /* "zero_optimization": true */
    CHECK(o.precision == ZT_PRECISION_FP16 && o.adam_w_mode); /* "Adam" is AdamW unless adam_w_mode is false */
    CHECK_NEAR(o.lr, 0.00015, 1e-10); /* stored as f32 */
    CHECK_EQ_INT(c.train_batch_size, 8);
    CHECK_EQ_INT(o.micro_batch, 8);

    o = zt_options_default();
    CHECK(read_example("seed_zero2_cpu.json", &c, &o) == ZT_OK);
    CHECK_STR_CONTAINS(logged, "reduce_bucket_size at top level");
    CHECK_STR_CONTAINS(logged, "belongs under zero_optimization");
    CHECK(strcmp(c.communication_data_type, "fp16") == 0);

    o = zt_options_default();
    unsetenv("ZT_NVME_PATH");
    CHECK(read_example("seed_zero3_nvme.json", &c, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "zero_optimization.offload_param.nvme_path is not set");
    o = zt_options_default();
    o.nvme_path = "/tmp";
    CHECK(read_example("seed_zero3_nvme.json", &c, &o) == ZT_OK);
    CHECK(strcmp(c.offload_param.nvme_path, "/tmp") == 0);
}

static void config_error(const char *json, const char *expect) {
    zt_ds_config c;
    zt_options o = zt_options_default();
    zt_result r = parse(json, &c, &o, 1);
    if (r == ZT_OK) {
        zt_test_fail(__FILE__, __LINE__, "accepted: %s", json);
        return;
    }
    if (!strstr(zt_last_error(), expect))
        zt_test_fail(__FILE__, __LINE__, "for %s: \"%s\" does not say \"%s\"", json, zt_last_error(), expect);
}

TEST(config_errors_name_the_json_path) {
    config_error("{\"zero_optimization\": {\"stage\": 4}}", "zero_optimization.stage must be 0, 1, 2 or 3, found 4");
    config_error("{\"zero_optimization\": {\"reduce_bucket_size\": -5}}", "zero_optimization.reduce_bucket_size must be an integer >= 1, found -5");
    config_error("{\"zero_optimization\": {\"reduce_bucket_size\": 5.5}}", "an integer (it has a fractional part), found 5.5");
    config_error("{\"zero_optimization\": {\"offload_param\": {\"device\": \"gpu\"}}}",
                 "zero_optimization.offload_param.device must be one of \"none\", \"cpu\", \"nvme\", found \"gpu\" (line 1, column 52)");
    config_error("{\"zero_optimization\": {\"stage\": 2, \"reduce_bucket_sise\": 1}}",
                 "unknown key zero_optimization.reduce_bucket_sise (line 1, column 36): DeepSpeed rejects unknown keys here; did you mean \"reduce_bucket_size\"?");
    config_error("{\"zero_optimization\": {\"offload_optimizer\": {\"devise\": \"cpu\"}}}", "did you mean \"device\"?");
    config_error("{\"fp16\": {\"enabled\": \"yes\"}}", "fp16.enabled must be true or false, found \"yes\"");
    config_error("{\"fp16\": {\"enabled\": true}, \"bf16\": {\"enabled\": true}}", "bfloat16 and fp16 modes cannot be simultaneously enabled");
    config_error("{\"fp16\": {\"enabled\": true, \"loss_scale_window\": 0}}", "fp16.loss_scale_window must be > 0");
    config_error("{\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"/x\"}}}",
                 "NVMe optimizer offload needs stage 3");
    config_error("{\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.5}}}",
                 "Partial offloading only supported for ZeRO Stage 3.");
    config_error("{\"zero_optimization\": {\"stage\": 3, \"prefetch_bucket_size\": 1, \"stage3_prefetch_bucket_size\": 2}}",
                 "are the same setting; give one");
    config_error("{\"zero_optimization\": {\"cpu_offload\": true, \"offload_optimizer\": {\"device\": \"cpu\"}}}",
                 "Cannot provide deprecated parameter 'cpu_offload' and replacing parameter 'offload_optimizer' together");
    config_error("{\"zero_optimization\": {\"mics_shard_size\": 8}}", "'zero_optimization.mics_shard_size' is no longer supported");
    config_error("{\"amp\": {\"enabled\": true}}", "\"amp\" was removed from DeepSpeed");
    config_error("{\"optimizer\": {\"type\": \"Lamb\", \"params\": {\"lr\": 1}}}", "optimizer.type \"Lamb\" is not implemented in zt");
    config_error("{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"lr\": 1, \"max_grad_norm\": 1}}}",
                 "'max_grad_norm' is not supported as an optimizer parameter");
    config_error("{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"betas\": [0.9]}}}", "optimizer.params.betas must be two numbers");
    config_error("{\"scheduler\": {\"type\": \"WarmupLR\"}}", "scheduler.params is missing");
    config_error("{\"scheduler\": {\"type\": \"OneCycle\", \"params\": {}}}", "scheduler.type \"OneCycle\" is not implemented in zt");
    config_error("{\"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"warmup_num_steps\": 10}}}", "total_num_steps is required by WarmupDecayLR");
    config_error("{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_num_step\": 10}}}", "did you mean \"warmup_num_steps\"?");
    config_error("{\"checkpoint\": {\"tag_validation\": \"Maybe\"}}", "invalid tag_validation value of MAYBE");
    config_error("{\"communication_data_type\": \"fp8\"}", "communication_data_type must be one of \"fp32\", \"fp16\", \"bf16\", found \"fp8\"");
    config_error("{\"train_batch_size\": 8, \"train_batch_size\": 16}", "duplicate key \"train_batch_size\"");
    config_error("{\"train_batch_size\": 8,}", "a comma before the closing bracket");
    config_error("{\"train_batch_size\": tru}", "not a number, true, false or null");
    config_error("{\"zero_optimization\": [1]}", "zero_optimization must be an object, found an array");
}

/* DeepSpeed's Lion and Adagrad: their params (DeepSpeed passes them to the optimizer as keywords: any other is
   refused), "auto" filled from the flags as the Trainer fills it, Adagrad's eps its own when absent; the Trainer's
   --optim names and --optim_args; and the settings zt does not build refused by name */
TEST(config_lion_and_adagrad) {
    zt_ds_config c;
    zt_options o = zt_options_default();
    CHECK_MSG(parse("{\"optimizer\": {\"type\": \"Lion\", \"params\": {\"lr\": 3e-4, \"betas\": [0.95, 0.98], "
                    "\"weight_decay\": 0.1}}}", &c, &o, 1) == ZT_OK, "%s", zt_last_error());
    CHECK(o.optimizer == ZT_OPTIM_LION && o.beta1 == 0.95f && o.beta2 == 0.98f && o.weight_decay == 0.1f && o.lr == 3e-4f);
    o = zt_options_default();
    char *betas[] = {(char *)"p", (char *)"--adam_beta2", (char *)"0.99"};
    CHECK(zt_options_parse_args(&o, 3, betas) == ZT_OK);
    CHECK(parse("{\"optimizer\": {\"type\": \"lion\", \"params\": {\"betas\": \"auto\"}}}", &c, &o, 1) == ZT_OK);
    CHECK(o.optimizer == ZT_OPTIM_LION && o.beta1 == 0.9f && o.beta2 == 0.99f);
    o = zt_options_default();
    CHECK_MSG(parse("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"lr\": 0.01, \"lr_decay\": 0.001}}}", &c, &o,
                    1) == ZT_OK, "%s", zt_last_error());
    CHECK(o.optimizer == ZT_OPTIM_ADAGRAD && o.adagrad_eps == 1e-10f && o.adagrad_lr_decay == 0.001f && o.eps == 1e-8f);
    o = zt_options_default();
    CHECK(parse("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"eps\": \"auto\"}}}", &c, &o, 1) == ZT_OK);
    CHECK(o.adagrad_eps == 1e-8f); /* "auto": --adam_epsilon, as the Trainer fills it */
    o = zt_options_default();
    CHECK(parse("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"eps\": 1e-6}}}", &c, &o, 1) == ZT_OK);
    CHECK(o.adagrad_eps == 1e-6f && o.eps == 1e-8f);
    o = zt_options_default(); /* a config's section: --optim_args is not read (the Trainer reads it only without one) */
    char *oa[] = {(char *)"p", (char *)"--optim", (char *)"adagrad", (char *)"--optim_args", (char *)"eps=1e-3"};
    CHECK(zt_options_parse_args(&o, 5, oa) == ZT_OK && o.adagrad_eps == 1e-3f);
    CHECK(parse("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"lr\": 0.1}}}", &c, &o, 1) == ZT_OK);
    CHECK(o.adagrad_eps == 1e-10f);
    config_error("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"lr_decay\": \"auto\"}}}",
                 "optimizer.params.lr_decay is \"auto\", which no flag fills");
    config_error("{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": \"auto\", \"amsgrad\": \"auto\"}}}",
                 "optimizer.params.amsgrad is \"auto\", which no flag fills");
    config_error("{\"optimizer\": {\"type\": \"Lion\", \"params\": {\"eps\": 1e-8}}}",
                 "unknown key optimizer.params.eps (line 1, column 43): DeepSpeed rejects unknown keys here");
    config_error("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"betas\": [0.9, 0.99]}}}", "unknown key optimizer.params.betas");
    config_error("{\"optimizer\": {\"type\": \"Adagrad\", \"params\": {\"initial_accumulator_value\": 0.1}}}",
                 "optimizer.params.initial_accumulator_value 0.1 is not implemented in zt");
    config_error("{\"optimizer\": {\"type\": \"Lion\", \"params\": {\"fp32_optimizer_states\": false}}}",
                 "fp32_optimizer_states false is not implemented in zt");
    config_error("{\"optimizer\": {\"type\": \"Muon\", \"params\": {}}}",
                 "optimizer.type \"Muon\" is not implemented in zt (Adam, AdamW, Lion and Adagrad are)");
    /* the Trainer's names */
    static const struct { const char *flag; zt_optimizer kind; } names[] = {
        {"adamw_torch", ZT_OPTIM_ADAMW}, {"lion_32bit", ZT_OPTIM_LION}, {"paged_lion_32bit", ZT_OPTIM_LION},
        {"adagrad", ZT_OPTIM_ADAGRAD}};
    for (int i = 0; i < 4; i++) {
        o = zt_options_default();
        char *argv[] = {(char *)"p", (char *)"--optim", (char *)names[i].flag};
        CHECK_MSG(zt_options_parse_args(&o, 3, argv) == ZT_OK && o.optimizer == names[i].kind, "--optim %s", names[i].flag);
    }
    o = zt_options_default();
    char *lion8[] = {(char *)"p", (char *)"--optim", (char *)"lion_8bit"};
    CHECK(zt_options_parse_args(&o, 3, lion8) == ZT_ERROR_UNSUPPORTED);
    CHECK_STR_CONTAINS(zt_last_error(), "--optim lion_8bit is not built");
    /* --optim_args: Adagrad's lr_decay and eps, in either order of the flags; AdamW takes nothing from it (a warning) */
    o = zt_options_default();
    char *args[] = {(char *)"p", (char *)"--optim_args", (char *)"lr_decay=0.01, eps=1e-8", (char *)"--optim", (char *)"adagrad"};
    CHECK_MSG(zt_options_parse_args(&o, 5, args) == ZT_OK, "%s", zt_last_error());
    CHECK(o.optimizer == ZT_OPTIM_ADAGRAD && o.adagrad_lr_decay == 0.01f && o.adagrad_eps == 1e-8f);
    o = zt_options_default();
    logged[0] = 0;
    char *ignored[] = {(char *)"p", (char *)"--optim_args", (char *)"momentum=0.9"};
    zt_set_log(capture, NULL);
    zt_result ri = zt_options_parse_args(&o, 3, ignored);
    zt_set_log(NULL, NULL);
    CHECK(ri == ZT_OK);
    CHECK_STR_CONTAINS(logged, "--optim_args: momentum=0.9 changes nothing, as under the Trainer");
    o = zt_options_default();
    char *bad[] = {(char *)"p", (char *)"--optim", (char *)"adagrad", (char *)"--optim_args", (char *)"lr_decay"};
    CHECK(zt_options_parse_args(&o, 5, bad) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "--optim_args takes key=value pairs between commas, found \"lr_decay\"");
    char *nan_arg[] = {(char *)"p", (char *)"--optim", (char *)"adagrad", (char *)"--optim_args", (char *)"eps=x"};
    CHECK(zt_options_parse_args(&o, 5, nan_arg) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "--optim_args: eps takes a number of 0 or more, found \"x\"");
}

/* a flag the user passed fills "auto" and absent keys, and contradicting an explicit value is an error
   that lists every contradiction, as the Transformers integration does */
TEST(config_flags_fill_and_contradict) {
    zt_ds_config c;
    zt_options o = zt_options_default();
    char *argv[] = {(char *)"p", (char *)"--max_grad_norm", (char *)"0.5", (char *)"--per_device_train_batch_size",
                    (char *)"2", (char *)"--learning_rate", (char *)"1e-3"};
    CHECK(zt_options_parse_args(&o, 7, argv) == ZT_OK);
    const char *json = "{\"gradient_clipping\": 2.0, \"train_micro_batch_size_per_gpu\": 2,"
                       " \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 5e-4, \"eps\": \"auto\"}}}";
    CHECK(parse(json, &c, &o, 1) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "- gradient_clipping=2 vs --max_grad_norm=0.5");
    CHECK_STR_CONTAINS(zt_last_error(), "- optimizer.params.lr=0.0005 vs --learning_rate=0.001");
    CHECK_STR_CONTAINS(zt_last_error(), "set these DeepSpeed config values to 'auto'");
    /* flags not passed: the config's values win */
    o = zt_options_default();
    CHECK(parse(json, &c, &o, 1) == ZT_OK);
    CHECK_NEAR(o.max_grad_norm, 2.0, 0);
    CHECK_NEAR(o.lr, 5e-4, 1e-10);
    CHECK_NEAR(o.eps, 1e-8, 1e-15);
    CHECK_EQ_INT(o.micro_batch, 2);
    /* an unknown top-level key is a warning, not an error */
    o = zt_options_default();
    CHECK(parse("{\"gradient_clippin\": 1.0}", &c, &o, 1) == ZT_OK);
    CHECK_STR_CONTAINS(logged, "unknown top-level key gradient_clippin");
}

/* the engine reads a config: zt_init with a path */
/* keys absent from the config are DeepSpeed's defaults, not the flags (the Trainer fills only "auto"): the
   optimizer class's keywords (FusedAdam's lr 1e-3, eps 1e-8, weight_decay 0; torch's AdamW's 0.01 under torch_adam;
   Lion's betas (0.9, 0.999); torch's Adagrad's lr 1e-2) and gradient_clipping's 1.0, a flag given that so does not
   reach the run named in a warning; an optimizer section decays every parameter (DeepSpeed's one group) */
TEST(config_absent_keys_are_deepspeeds_defaults) {
    char *argv[] = {(char *)"p", (char *)"--max_grad_norm", (char *)"0.5", (char *)"--learning_rate", (char *)"3e-4",
                    (char *)"--weight_decay", (char *)"0.1", (char *)"--adam_beta2", (char *)"0.95"};
    static const struct { const char *json; double lr, wd, eps, b2, clip; } cases[] = {
        {"{\"optimizer\": {\"type\": \"AdamW\"}}", 1e-3, 0, 1e-8, 0.999, 1.0},
        {"{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"torch_adam\": true}}}", 1e-3, 0.01, 1e-8, 0.999, 1.0},
        {"{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"torch_adam\": true, \"adam_w_mode\": false}}}", 1e-3, 0, 1e-8, 0.999, 1.0},
        {"{\"optimizer\": {\"type\": \"Lion\", \"params\": {}}}", 1e-3, 0, -1, 0.999, 1.0},
        {"{\"optimizer\": {\"type\": \"Adagrad\"}}", 1e-2, 0, 1e-10, -1, 1.0},
        {"{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": \"auto\", \"weight_decay\": \"auto\", "
         "\"betas\": \"auto\"}}, \"gradient_clipping\": \"auto\"}", 3e-4, 0.1, 1e-8, 0.95, 0.5},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        zt_ds_config c;
        zt_options o = zt_options_default();
        CHECK(zt_options_parse_args(&o, 9, argv) == ZT_OK);
        CHECK_MSG(parse(cases[k].json, &c, &o, 1) == ZT_OK, "%s: %s", cases[k].json, zt_last_error());
        CHECK_MSG(fabs(o.lr - cases[k].lr) < 1e-9 && fabs(o.weight_decay - cases[k].wd) < 1e-8 &&
                  fabs(o.max_grad_norm - cases[k].clip) < 1e-8, "%s: lr %g weight_decay %g clip %g", cases[k].json,
                  (double)o.lr, (double)o.weight_decay, (double)o.max_grad_norm);
        if (cases[k].eps > 0)
            CHECK_MSG(fabs((o.optimizer == ZT_OPTIM_ADAGRAD ? o.adagrad_eps : o.eps) - cases[k].eps) < 1e-15, "%s", cases[k].json);
        if (cases[k].b2 > 0) CHECK_MSG(fabs(o.beta2 - cases[k].b2) < 1e-7, "%s: beta2 %g", cases[k].json, (double)o.beta2);
        CHECK(o.decay_all);
        if (k == 0) {
            CHECK_STR_CONTAINS(logged, "optimizer.params.lr is absent, so DeepSpeed's default 0.001 applies, not --learning_rate 0.0003");
            CHECK_STR_CONTAINS(logged, "gradient_clipping is absent, so DeepSpeed's default 1 applies, not --max_grad_norm 0.5");
            CHECK_STR_CONTAINS(logged, "optimizer.params.betas is absent");
        }
        if (k == 5) CHECK(!strstr(logged, "absent"));
    }
    zt_ds_config c;
    zt_options o = zt_options_default();
    CHECK(parse("{\"gradient_clipping\": \"auto\"}", &c, &o, 1) == ZT_OK);
    CHECK(!o.decay_all); /* the Trainer's optimizer, its groups */
}

/* a one-layer GPT-2 of 32 tokens, as a spec (mc holds its config) */
static zt_model_spec tiny_gpt2(zt_model_config *mc) {
    const char *json = "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_head\": 2, \"n_embd\": 16, \"n_positions\": 16, \"vocab_size\": 32}";
    if (zt_model_config_parse(mc, json, strlen(json), "m") != ZT_OK) zt_fatal("%s", zt_last_error());
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = mc;
    return spec;
}

/* one step's bias (set to 0.5 first) under weight decay: DeepSpeed's optimizer section decays it (one group of
   every parameter), the Trainer's optimizer (no section, --weight_decay) does not */
static void bias_after_step(const char *json, float weight_decay, float *bias) {
    zt_model_config mc;
    zt_model_spec spec = tiny_gpt2(&mc);
    zt_options o = zt_options_default();
    o.seq_len = 8, o.threads = 1, o.max_steps = 4, o.micro_batch = 2, o.lr = 0.01f, o.weight_decay = weight_decay;
    zt_ds_config c;
    CHECK_MSG(parse(json, &c, &o, 1) == ZT_OK, "%s", zt_last_error());
    zt_engine *e = NULL;
    CHECK_MSG(zt_init_options(&e, &spec, &o) == ZT_OK, "%s", zt_last_error());
    int32_t x[16];
    for (int i = 0; i < 16; i++) x[i] = (i * 7) % 32;
    for (int i = 0; i < 48; i++) bias[i] = 0.5f;
    CHECK(zt_param_set(e, "transformer.h.0.attn.c_attn.bias", bias, 48) == ZT_OK);
    zt_forward_backward(e, x, NULL, NULL, 2);
    zt_step(e);
    CHECK(zt_param_get(e, "transformer.h.0.attn.c_attn.bias", bias, 48, 0) == ZT_OK);
    zt_shutdown(e);
}

TEST(config_optimizer_section_decays_every_parameter) {
    float none[48], half[48];
    bias_after_step("{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 0.01, \"weight_decay\": 0}}}", 0, none);
    bias_after_step("{\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 0.01, \"weight_decay\": 0.5}}}", 0, half);
    for (int i = 0; i < 48; i++) /* AdamW's decoupled decay: lr x weight_decay x 0.5 less */
        CHECK_MSG(fabsf(half[i] - (none[i] - 0.0025f)) < 1e-6f, "bias[%d] %g, undecayed %g", i, (double)half[i], (double)none[i]);
    bias_after_step("{}", 0, none);
    bias_after_step("{}", 0.5f, half);
    CHECK(memcmp(none, half, sizeof none) == 0);
}

TEST(config_drives_zt_init) {
    zt_model_config mc;
    zt_model_spec spec = tiny_gpt2(&mc);
    char *argv[] = {(char *)"p", (char *)"--seq_len", (char *)"8", (char *)"--threads", (char *)"1"};
    zt_engine *e = NULL;
    zt_set_log(capture, NULL);
    zt_result r = zt_init(&e, &spec, "examples/configs/fp16.json", 5, argv);
    zt_set_log(NULL, NULL);
    CHECK_MSG(r == ZT_OK, "%s", zt_last_error());
    const zt_options *o = zt_engine_options(e);
    CHECK(o->precision == ZT_PRECISION_FP16 && o->micro_batch == 8 && o->zero_stage == 1);
    zt_shutdown(e);
    CHECK(zt_init(&e, &spec, "/nonexistent/ds.json", 5, argv) == ZT_ERROR_IO);
    CHECK_STR_CONTAINS(zt_last_error(), "/nonexistent/ds.json");
}

/* a batch value the config derives, against the flag given: the Trainer stops on it, and so does zt (a
   --gradient_accumulation_steps 4 beside a config of micro-batches alone was dropped for 1) */
TEST(config_derived_batch_values_match_the_flags) {
    zt_ds_config ds;
    zt_options o = zt_options_default();
    const char *argv[] = {"x", "--gradient_accumulation_steps", "4"};
    CHECK(zt_options_parse_args(&o, 3, (char **)argv) == ZT_OK);
    const char *json = "{\"train_micro_batch_size_per_gpu\": 2}";
    CHECK(zt_ds_config_parse(&ds, &o, json, strlen(json), "ds.json", 1, 64) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "gradient_accumulation_steps (from the others; absent: 1)=1 vs "
                                        "--gradient_accumulation_steps=4");
    o = zt_options_default();
    CHECK(zt_options_parse_args(&o, 3, (char **)argv) == ZT_OK);
    json = "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": \"auto\"}";
    CHECK(zt_ds_config_parse(&ds, &o, json, strlen(json), "ds.json", 1, 64) == ZT_OK && o.grad_accum == 4);
}

/* DeepSpeed's deprecated and checked ZeRO keys, gradient_allreduce_op and each schedule's arguments, as it reads them */
TEST(config_deprecated_zero_keys_and_allreduce_op) {
    static const struct { const char *json, *want; } bad[] = {
        {"{\"zero_optimization\": {\"stage\": 3, \"stage3_gather_16bit_weights_on_model_save\": true, "
         "\"stage3_gather_fp16_weights_on_model_save\": true}}", "Cannot provide deprecated parameter "
         "'stage3_gather_fp16_weights_on_model_save' and replacing parameter 'stage3_gather_16bit_weights_on_model_save'"},
        {"{\"zero_optimization\": {\"stage\": 3, \"cpu_offload_param\": true, \"offload_param\": {\"device\": \"cpu\"}}}",
         "'cpu_offload_param' and replacing parameter 'offload_param' together"},
        {"{\"zero_optimization\": {\"stage\": 3, \"compute_grad_norm\": false}}", "compute_grad_norm=false is supported only"},
        {"{\"zero_optimization\": {\"stage\": 2, \"compute_grad_norm\": \"x\"}}", "zero_optimization.compute_grad_norm"},
        {"{\"gradient_allreduce_op\": \"max\"}", "Invalid gradient_allreduce_op. Supported operations: ['mean', 'sum']. Got: 'max'"},
        {"{\"gradient_allreduce_op\": \"sum\", \"zero_optimization\": {\"stage\": 3}}", "'sum' is not supported with ZeRO stage 3"},
        {"{\"gradient_allreduce_op\": \"SUM\"}", "gradient_allreduce_op \"sum\" is not built in zt"},
        /* a schedule's arguments are its own: DeepSpeed calls the class with them (another is a TypeError) */
        {"{\"scheduler\": {\"type\": \"WarmupCosineLR\", \"params\": {\"total_num_steps\": 10, \"warmup_max_lr\": 0.1}}}",
         "scheduler.params.warmup_max_lr: WarmupCosineLR.__init__() got an unexpected keyword argument"},
        {"{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"total_num_steps\": 10}}}",
         "(it takes warmup_min_lr, warmup_max_lr, warmup_num_steps, warmup_type, last_batch_iteration)"},
    };
    zt_ds_config ds;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zt_options o = zt_options_default();
        CHECK_MSG(zt_ds_config_parse(&ds, &o, bad[i].json, strlen(bad[i].json), "ds.json", 1, 64) != ZT_OK, "accepted: %s",
                  bad[i].json);
        CHECK_STR_CONTAINS(zt_last_error(), bad[i].want);
    }
    zt_options o = zt_options_default();
    const char *json = "{\"zero_optimization\": {\"stage\": 3, \"cpu_offload_param\": true}, \"gradient_allreduce_op\": \"Mean\"}";
    zt_set_log(capture, NULL);
    CHECK(zt_ds_config_parse(&ds, &o, json, strlen(json), "ds.json", 1, 64) == ZT_OK);
    zt_set_log(NULL, NULL);
    CHECK(ds.offload_param.device == ZT_OFFLOAD_CPU && o.offload_param == ZT_OFFLOAD_CPU);
    /* "auto" where the Transformers integration fills nothing: DeepSpeed's models drop it, leaving the default */
    o = zt_options_default();
    json = "{\"fp16\": {\"enabled\": true, \"loss_scale\": \"auto\"}, \"zero_optimization\": {\"stage\": 3, "
           "\"sub_group_size\": \"auto\", \"offload_optimizer\": {\"device\": \"cpu\", \"buffer_count\": \"auto\"}}}";
    zt_set_log(capture, NULL);
    CHECK_MSG(zt_ds_config_parse(&ds, &o, json, strlen(json), "ds.json", 1, 64) == ZT_OK, "%s", zt_last_error());
    zt_set_log(NULL, NULL);
    CHECK(o.static_loss_scale == 0.0f && ds.sub_group_size == 1000000000 && ds.offload_optimizer.buffer_count == 4);
}

/* Accelerate's YAML: what `accelerate config` writes, and one clear error for what it never writes */
static zt_result acc(const char *yaml, zt_accelerate_config *c) {
    logged[0] = 0;
    zt_set_log(capture, NULL);
    zt_result r = zt_accelerate_config_parse(c, yaml, strlen(yaml), "default_config.yaml");
    zt_set_log(NULL, NULL);
    return r;
}

TEST(config_accelerate_yaml) {
    zt_accelerate_config c;
    const char *yaml = "compute_environment: LOCAL_MACHINE\n"
                       "deepspeed_config:\n"
                       "  deepspeed_config_file: ds.json  # the file\n"
                       "  zero3_init_flag: true\n"
                       "distributed_type: DEEPSPEED\n"
                       "machine_rank: 1\n"
                       "main_process_ip: \"10.0.0.1\"\n"
                       "main_process_port: 29501\n"
                       "mixed_precision: fp16\n"
                       "num_machines: 2\n"
                       "num_processes: 16\n"
                       "gpu_ids: all\n"
                       "tpu_env: []\n";
    CHECK_MSG(acc(yaml, &c) == ZT_OK, "%s", zt_last_error());
    CHECK(c.num_processes == 16 && c.num_machines == 2 && c.machine_rank == 1 && c.main_process_port == 29501);
    CHECK(strcmp(c.main_process_ip, "10.0.0.1") == 0 && strcmp(c.mixed_precision, "fp16") == 0);
    CHECK(strcmp(c.deepspeed_config_file, "ds.json") == 0 && c.zero3_init_flag == 1);
    CHECK(logged[0] == 0); /* Accelerate's own keys are no surprise */
    char json[1024];
    CHECK_EQ_INT(zt_accelerate_deepspeed_json(&c, json, sizeof json), 0); /* the file is the config */
    CHECK(acc("deepspeed_config:\n  zero_stage: 3\n  offload_param_device: nvme\n  offload_param_nvme_path: /nvme\n"
              "  gradient_accumulation_steps: 4\nmixed_precision: bf16\n", &c) == ZT_OK);
    size_t n = zt_accelerate_deepspeed_json(&c, json, sizeof json);
    CHECK(n > 0 && n < sizeof json);
    zt_ds_config ds;
    zt_options o = zt_options_default();
    zt_set_log(capture, NULL);
    zt_result r = zt_ds_config_parse(&ds, &o, json, n, "yaml", 2, 64);
    zt_set_log(NULL, NULL);
    CHECK_MSG(r == ZT_OK, "%s: %s", json, zt_last_error());
    CHECK(ds.zero_stage == 3 && ds.offload_param.device == ZT_OFFLOAD_NVME && o.grad_accum == 4);
    CHECK(strcmp(ds.offload_param.nvme_path, "/nvme") == 0);
    CHECK(acc("num_processes: 2\nfuture_key: 1\n", &c) == ZT_OK);
    CHECK_STR_CONTAINS(logged, "future_key is not one of the Accelerate keys zt reads");
    /* DEEPSPEED without settings: DeepSpeedPlugin's defaults, stage 2 and the flags' accumulation and clipping */
    CHECK(acc("distributed_type: DEEPSPEED\nnum_processes: 2\n", &c) == ZT_OK);
    n = zt_accelerate_deepspeed_json(&c, json, sizeof json);
    o = zt_options_default();
    o.grad_accum = 3, o.max_grad_norm = 0.5f;
    CHECK(n > 0 && zt_ds_config_parse(&ds, &o, json, n, "yaml", 2, 64) == ZT_OK);
    CHECK(ds.zero_stage == 2 && o.grad_accum == 3 && o.max_grad_norm == 0.5f);
    /* a JSON file beside inline settings it would make Accelerate ignore: refused, as Accelerate does */
    CHECK(acc("deepspeed_config:\n  deepspeed_config_file: ds.json\n  zero_stage: 3\n  gradient_accumulation_steps: 4\n",
              &c) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "with deepspeed_config_file, deepspeed_config's zero_stage, "
                                        "gradient_accumulation_steps would be ignored");
    static const struct { const char *yaml, *want; } bad[] = {
        {"num_processes: two\n", "default_config.yaml:1: num_processes must be a non-negative integer, found \"two\""},
        {"deepspeed_config:\n\tzero_stage: 2\n", "default_config.yaml:2: a tab in the indentation"},
        {"gpu_ids:\n- 0\n", "default_config.yaml:2: a list item"},
        {"mixed_precision: fp32\n", "mixed_precision is no, fp16 or bf16, not \"fp32\""},
        {"mixed_precision: fp8\n", "fp8 is not built"},
        {"deepspeed_config:\n  offload_optimizer_device: gpu\n", "an offload device is none, cpu or nvme"},
        {"  zero_stage: 2\n", "an indented key outside a mapping"},
        {"just words\n", "expected \"key: value\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_MSG(acc(bad[i].yaml, &c) != ZT_OK, "accepted: %s", bad[i].yaml);
        CHECK_STR_CONTAINS(zt_last_error(), bad[i].want);
    }
}
