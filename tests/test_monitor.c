#define _POSIX_C_SOURCE 200809L
/* tests/test_monitor.c - TensorBoard event files (zt_events: the scalars and texts torch's SummaryWriter writes,
   tests/ref/make_tfevents.py) and DeepSpeed's monitor sections (tensorboard, csv_monitor, wandb, comet). */
#include "test.h"
#include "events.h"
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static void fresh_dir(char *path, size_t size, const char *name) {
    snprintf(path, size, "/tmp/zt_test_%s_%d", name, (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) zt_fatal("cannot clear %s", path);
}

/* the one events.out.tfevents.* file in dir, into path; 0 when there is not exactly one */
static int event_file(const char *dir, char *path, size_t size) {
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *de; d && (de = readdir(d)) != NULL;)
        if (strncmp(de->d_name, "events.out.tfevents.", 20) == 0) found++, snprintf(path, size, "%s/%s", dir, de->d_name);
    if (d) closedir(d);
    return found == 1;
}

/* records: start and length of each record of a file's bytes */
static int records(const unsigned char *b, size_t n, size_t *at, size_t *len, int cap) {
    int k = 0;
    for (size_t p = 0; p + 12 <= n && k < cap; k++) {
        uint64_t l = 0;
        for (int i = 7; i >= 0; i--) l = l << 8 | b[p + (size_t)i];
        at[k] = p, len[k] = 16 + (size_t)l;
        p += 16 + (size_t)l;
    }
    return k;
}

TEST(events_file_has_torchs_records) {
    char dir[256], path[4400];
    fresh_dir(dir, sizeof dir, "events");
    size_t ref_n = 0, our_n = 0;
    char *ref = test_slurp("tests/ref/tfevents.bin", &ref_n);
    CHECK_MSG(ref != NULL, "cannot open tests/ref/tfevents.bin (run the tests from the repository root)");
    zt_events w;
    CHECK_MSG(zt_events_open(&w, dir, 1767225600.25) == ZT_OK, "%s", zt_last_error());
    char long_tag[201];
    memset(long_tag, 't', 200), long_tag[200] = 0;
    /* tests/ref/make_tfevents.py's scalars */
    CHECK(zt_events_scalar(&w, "train/loss", 2.5, 1) == ZT_OK);
    CHECK(zt_events_scalar(&w, "train/learning_rate", 3e-4, 1) == ZT_OK);
    CHECK(zt_events_scalar(&w, "zero", 0.0, 0) == ZT_OK);
    CHECK(zt_events_scalar(&w, "negative_step", -1.75, -3) == ZT_OK);
    CHECK(zt_events_scalar(&w, "big_step", 1e30, 5000000000LL) == ZT_OK);
    CHECK(zt_events_scalar(&w, long_tag, 1.0 / 3.0, 7) == ZT_OK);
    CHECK(zt_events_scalar(&w, "eval/\xe6\x8d\x9f\xe5\xa4\xb1", -0.0, 12) == ZT_OK);
    char long_text[301];
    memset(long_text, 'x', 300), long_text[300] = 0;
    CHECK(zt_events_text(&w, "args", "{\"learning_rate\": 0.001, \"note\": \"\xe6\x97\xa5\xe6\x9c\xac\"}", 0) == ZT_OK);
    CHECK(zt_events_text(&w, "notes", long_text, 5) == ZT_OK);
    zt_events_close(&w);
    zt_events_close(&w); /* twice is fine */
    CHECK(event_file(dir, path, sizeof path));
    CHECK_STR_CONTAINS(w.path, "/events.out.tfevents.1767225600.");
    char *ours = test_slurp(path, &our_n);
    CHECK(ours != NULL);
    size_t ra[16], rl[16], oa[16], ol[16];
    int nr = records((unsigned char *)ref, ref_n, ra, rl, 16), no = records((unsigned char *)ours, our_n, oa, ol, 16);
    CHECK_EQ_INT(nr, 10);
    CHECK_EQ_INT(no, 10);
    /* the first names the format and the writer (torch's module, zt): its wall time and file_version alike */
    CHECK(memcmp(ref + ra[0] + 12, ours + oa[0] + 12, 24) == 0);
    CHECK(memcmp(ours + oa[0] + 12 + 24, "\x52\x04\x0a\x02zt", 6) == 0);
    for (int k = 1; k < 10; k++)
        CHECK_MSG(rl[k] == ol[k] && memcmp(ref + ra[k], ours + oa[k], rl[k]) == 0, "record %d differs from torch's", k);
    test_event ev[16];
    char why[256];
    CHECK_MSG(test_read_events(path, ev, 16, why, sizeof why) == 10, "%s", why);
    CHECK(strcmp(ev[9].tag, "notes/text_summary") == 0 && ev[9].step == 5 && !ev[9].has_value);
    CHECK(ev[9].has_text && strcmp(ev[9].text, long_text) == 0);
    CHECK(strcmp(ev[0].version, "brain.Event:2") == 0);
    CHECK(strcmp(ev[6].tag, long_tag) == 0 && ev[6].step == 7 && ev[6].value == 1.0f / 3.0f);
    /* a tag that cannot be written, and a writer not open, are errors; a directory where a file is, too */
    CHECK(zt_events_scalar(&w, "late", 1.0, 1) == ZT_ERROR_INVALID);
    CHECK(zt_events_open(&w, dir, 0.0) == ZT_OK);
    CHECK(zt_events_scalar(&w, "", 1.0, 1) == ZT_ERROR_INVALID);
    CHECK(zt_events_text(&w, "", "text", 1) == ZT_ERROR_INVALID);
    zt_events_close(&w);
    snprintf(path, sizeof path, "%s/sub", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fclose(f);
    snprintf(path, sizeof path, "%s/sub/runs", dir);
    CHECK(zt_events_open(&w, path, 0.0) == ZT_ERROR_IO);
    CHECK_STR_CONTAINS(zt_last_error(), "/sub: a file of that name is there");
    free(ref);
    free(ours);
}

static const char *MODEL =
    "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_head\": 2, \"n_embd\": 16, \"n_positions\": 16, \"vocab_size\": 37}";

static char logged[4096];
static void capture(zt_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    snprintf(logged + strlen(logged), sizeof logged - strlen(logged), "%s\n", msg);
}

/* an engine from a DeepSpeed config's text (world 1) */
static zt_result engine_from(const char *json, zt_engine **e, zt_options *o) {
    zt_model_config c;
    if (zt_model_config_parse(&c, MODEL, strlen(MODEL), "model") != ZT_OK) zt_fatal("%s", zt_last_error());
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &c;
    *o = zt_options_default();
    o->seq_len = 8;
    o->threads = 1;
    o->max_steps = 10;
    zt_ds_config ds;
    logged[0] = 0;
    zt_set_log(capture, NULL);
    zt_result r = zt_ds_config_parse(&ds, o, json, strlen(json), "ds.json", 1, 16);
    if (r == ZT_OK) r = zt_init_options(e, &spec, o);
    zt_set_log(NULL, NULL);
    return r;
}

TEST(deepspeed_monitor_writes_tensorboard_and_csv) {
    char dir[256], json[2048], path[4400];
    fresh_dir(dir, sizeof dir, "monitor");
    /* the tensorboard under output_path/job_name; the csv_monitor's output_path ends with a slash */
    snprintf(json, sizeof json,
             "{\"train_micro_batch_size_per_gpu\": 2, \"gradient_accumulation_steps\": 2, \"fp16\": {\"enabled\": true, "
             "\"initial_scale_power\": 8}, \"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_min_lr\": 0, "
             "\"warmup_max_lr\": 0.001, \"warmup_num_steps\": 4, \"warmup_type\": \"linear\"}}, "
             "\"tensorboard\": {\"enabled\": true, \"output_path\": \"%s/tb\", \"job_name\": \"run1\"}, "
             "\"csv_monitor\": {\"enabled\": true, \"output_path\": \"%s/csv/\"}, "
             "\"wandb\": {\"enabled\": false, \"project\": \"p\"}}", dir, dir);
    zt_engine *e = NULL;
    zt_options o;
    CHECK_MSG(engine_from(json, &e, &o) == ZT_OK, "%s", zt_last_error());
    int32_t x[16];
    for (int i = 0; i < 16; i++) x[i] = (i * 7) % 37;
    float loss[3];
    for (int s = 0; s < 3; s++) {
        zt_forward_backward(e, x, NULL, NULL, 2);
        zt_forward_backward(e, x, NULL, NULL, 2);
        zt_step_info info = zt_step(e);
        CHECK(!info.skipped);
        loss[s] = info.loss;
    }
    zt_shutdown(e);
    /* DeepSpeed's csvMonitor: a file per tag, headed by its last part, rows at the samples so far (4 a step),
       the learning rate the next step takes: WarmupLR at iteration 0, 1, 2 (steps 1, 2, 3 ran at -1, 0, 1) */
    snprintf(path, sizeof path, "%s/csv/DeepSpeedJobName/Train_Samples_lr.csv", dir);
    char *lr = test_slurp(path, NULL);
    CHECK_MSG(lr != NULL, "no %s", path);
    CHECK_MSG(strcmp(lr, "step,lr\r\n4,0.0\r\n8,0.00025\r\n12,0.0005\r\n") == 0, "%s", lr);
    snprintf(path, sizeof path, "%s/csv/DeepSpeedJobName/Train_Samples_loss_scale.csv", dir);
    char *scale = test_slurp(path, NULL);
    CHECK(scale != NULL && strcmp(scale, "step,loss_scale\r\n4,256.0\r\n8,256.0\r\n12,256.0\r\n") == 0);
    snprintf(path, sizeof path, "%s/csv/DeepSpeedJobName/Train_Samples_train_loss.csv", dir);
    char *tl = test_slurp(path, NULL), *line = tl ? strchr(tl, '\n') : NULL;
    CHECK(tl != NULL && strncmp(tl, "step,train_loss\r\n", 17) == 0);
    for (int s = 0; s < 3; s++) { /* the shortest text that reads back as the step's float */
        long long at;
        char text[64];
        CHECK(line && sscanf(line + 1, "%lld,%63[^\r]", &at, text) == 2);
        CHECK_EQ_INT(at, 4 * (s + 1));
        CHECK(strtof(text, NULL) == loss[s] && strlen(text) <= 11);
        line = strchr(line + 1, '\n');
    }
    /* the event file: the same scalars, in DeepSpeed's order */
    char tb[300];
    snprintf(tb, sizeof tb, "%s/tb/run1", dir);
    CHECK(event_file(tb, path, sizeof path));
    test_event ev[16];
    char why[256];
    CHECK_MSG(test_read_events(path, ev, 16, why, sizeof why) == 10, "%s", why);
    static const char *tags[3] = {"Train/Samples/lr", "Train/Samples/loss_scale", "Train/Samples/train_loss"};
    static const float lrs[3] = {0.0f, 0.00025f, 0.0005f};
    for (int s = 0; s < 3; s++)
        for (int k = 0; k < 3; k++) {
            const test_event *v = &ev[1 + 3 * s + k];
            CHECK(strcmp(v->tag, tags[k]) == 0 && v->step == 4 * (s + 1) && v->wall_time > 1.7e9);
            CHECK(v->value == (k == 0 ? lrs[s] : k == 1 ? 256.0f : loss[s]));
        }
    free(lr), free(scale), free(tl);
}

TEST(deepspeed_monitor_errors_name_the_key) {
    zt_engine *e = NULL;
    zt_options o;
    CHECK(engine_from("{\"tensorboard\": {\"enabled\": true, \"outptu_path\": \"x\"}}", &e, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "unknown key tensorboard.outptu_path");
    CHECK_STR_CONTAINS(zt_last_error(), "did you mean \"output_path\"?");
    CHECK(engine_from("{\"csv_monitor\": {\"enabled\": true, \"output_path\": 5}}", &e, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "csv_monitor.output_path");
    CHECK_STR_CONTAINS(zt_last_error(), "a string");
    CHECK(engine_from("{\"tensorboard\": {\"enabled\": \"yes\"}}", &e, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "tensorboard.enabled");
    CHECK(engine_from("{\"comet\": [1]}", &e, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "comet");
    CHECK(engine_from("{\"wandb\": {\"enabled\": false, \"project\": 5}}", &e, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "wandb.project");
    CHECK(engine_from("{\"comet\": {\"samples_log_interval\": 1.5}}", &e, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "comet.samples_log_interval");
    CHECK(engine_from("{\"csv_monitor\": {\"enabled\": true, \"output_path\": \"\", \"job_name\": \"\"}}", &e, &o) ==
          ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "csv_monitor.output_path and job_name are both empty");
    static char long_path[1400];
    snprintf(long_path, sizeof long_path, "{\"tensorboard\": {\"output_path\": \"%01100d\"}}", 0);
    CHECK(engine_from(long_path, &e, &o) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "tensorboard.output_path is 1100 bytes long; zt takes up to 1023");
    /* "auto" is as if absent, as DeepSpeed drops it: the defaults (off; DeepSpeedJobName) */
    CHECK(engine_from("{\"tensorboard\": \"auto\", \"csv_monitor\": {\"enabled\": \"auto\", \"output_path\": \"auto\"}, "
                      "\"comet\": {\"project\": null, \"online\": null}}", &e, &o) == ZT_OK);
    CHECK(o.tensorboard_dir == NULL && o.csv_monitor_dir == NULL);
    zt_shutdown(e);
    zt_ds_config ds;
    zt_options oo = zt_options_default();
    const char *on = "{\"tensorboard\": {\"enabled\": true, \"output_path\": \"auto\", \"job_name\": \"/abs/run\"}, "
                     "\"csv_monitor\": {\"enabled\": true, \"output_path\": \"logs\", \"job_name\": \"auto\"}}";
    zt_set_log(capture, NULL);
    zt_result parsed = zt_ds_config_parse(&ds, &oo, on, strlen(on), "ds.json", 1, 16);
    zt_set_log(NULL, NULL);
    CHECK(parsed == ZT_OK);
    CHECK(oo.tensorboard_dir && strcmp(oo.tensorboard_dir, "/abs/run") == 0);
    CHECK(oo.csv_monitor_dir && strcmp(oo.csv_monitor_dir, "logs/DeepSpeedJobName") == 0);
    /* W&B and Comet are services zt does not reach: said once, training goes on */
    CHECK_MSG(engine_from("{\"wandb\": {\"enabled\": true, \"project\": \"p\"}}", &e, &o) == ZT_OK, "%s", zt_last_error());
    CHECK_STR_CONTAINS(logged, "reads but does not act on yet: wandb");
    zt_shutdown(e);
    /* a directory that cannot be made stops zt_init, before any step */
    char json[512];
    snprintf(json, sizeof json, "{\"tensorboard\": {\"enabled\": true, \"output_path\": \"/proc/zt_cannot\"}}");
    CHECK(engine_from(json, &e, &o) == ZT_ERROR_IO && e == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "the tensorboard monitor (output_path/job_name): cannot create the directory /proc/zt_cannot");
    /* disabled, nothing is written */
    char dir[256];
    fresh_dir(dir, sizeof dir, "monitor_off");
    snprintf(json, sizeof json, "{\"tensorboard\": {\"enabled\": false, \"output_path\": \"%s\"}}", dir);
    CHECK(engine_from(json, &e, &o) == ZT_OK);
    zt_shutdown(e);
    struct stat st;
    CHECK(stat(dir, &st) != 0);
}

/* an fp16 step skipped for overflow reports the learning rate it would have used (the Trainer logs the scheduler's),
   and the schedule does not move: the next step uses it */
TEST(skipped_step_reports_its_learning_rate) {
    zt_engine *e = NULL;
    zt_options o;
    CHECK_MSG(engine_from("{\"train_micro_batch_size_per_gpu\": 2, \"fp16\": {\"enabled\": true, \"initial_scale_power\": "
                          "32, \"hysteresis\": 1}}", &e, &o) == ZT_OK, "%s", zt_last_error());
    int32_t x[16];
    for (int i = 0; i < 16; i++) x[i] = (i * 5) % 37;
    zt_forward_backward(e, x, NULL, NULL, 2);
    zt_step_info s = zt_step(e);
    CHECK(s.skipped);
    CHECK(s.lr > 0.0f && s.lr == zt_schedule_lr(zt_engine_options(e), 0) && s.next_lr == s.lr);
    int skipped = 1;
    for (int k = 0; k < 40 && skipped; k++) { /* the scale halves until a step is taken */
        zt_forward_backward(e, x, NULL, NULL, 2);
        zt_step_info t = zt_step(e);
        CHECK(t.lr == s.lr);
        skipped = t.skipped;
        /* the schedule moves with the step taken: next_lr is the next step's (DeepSpeed's get_last_lr()) */
        CHECK(t.next_lr == (skipped ? s.lr : zt_schedule_lr(zt_engine_options(e), 1)) && (skipped || t.next_lr < t.lr));
    }
    CHECK(!skipped);
    zt_shutdown(e);
}

/* a step whose gradient is NaN (a NaN weight for one step): skipped where DeepSpeed skips it (here bf16 at stage 0
   and fp32 at stage 1: zt_options.skip_nonfinite), its norm reported as inf, the weights untouched and the next step
   taken; fp32 without a config applies it, as torch's AdamW does, and the weights turn NaN */
static void nan_step(const char *json, zt_step_info *bad, zt_step_info *next, int64_t *nonfinite) {
    *nonfinite = -1;
    zt_engine *e = NULL;
    zt_options o;
    CHECK_MSG(engine_from(json, &e, &o) == ZT_OK, "%s: %s", json, zt_last_error());
    int32_t x[16];
    for (int i = 0; i < 16; i++) x[i] = (i * 5) % 37;
    float ln[16], nan_ln[16], w[16 * 48];
    CHECK(zt_param_get(e, "transformer.ln_f.weight", ln, 16, 0) == ZT_OK);
    memcpy(nan_ln, ln, sizeof ln);
    nan_ln[0] = NAN;
    CHECK(zt_param_set(e, "transformer.ln_f.weight", nan_ln, 16) == ZT_OK);
    zt_forward_backward(e, x, NULL, NULL, 2);
    *bad = zt_step(e);
    CHECK(zt_param_set(e, "transformer.ln_f.weight", ln, 16) == ZT_OK);
    zt_forward_backward(e, x, NULL, NULL, 2);
    *next = zt_step(e);
    CHECK(zt_param_get(e, "transformer.h.0.attn.c_attn.weight", w, 16 * 48, 0) == ZT_OK);
    *nonfinite = 0;
    for (int i = 0; i < 16 * 48; i++) *nonfinite += !isfinite(w[i]);
    zt_shutdown(e);
}

TEST(nonfinite_steps_skip_where_deepspeed_skips) {
    static const char *const skipping[] = {"{\"train_micro_batch_size_per_gpu\": 2, \"bf16\": {\"enabled\": true}}",
                                           "{\"train_micro_batch_size_per_gpu\": 2, \"zero_optimization\": {\"stage\": 1}}"};
    zt_step_info bad, next;
    int64_t nonfinite;
    for (int k = 0; k < 2; k++) {
        nan_step(skipping[k], &bad, &next, &nonfinite);
        CHECK_MSG(nonfinite == 0, "%s: %lld weights not finite", skipping[k], (long long)nonfinite);
        CHECK_MSG(bad.skipped && isinf(bad.grad_norm) && !next.skipped && isfinite(next.loss), "%s", skipping[k]);
    }
    nan_step("{\"train_micro_batch_size_per_gpu\": 2}", &bad, &next, &nonfinite);
    CHECK(nonfinite > 0);
    CHECK(!bad.skipped);
}

/* DeepSpeed grows the fp16 loss scale before it unscales the gradients: on the step where the scale doubles (here
   the third, after loss_scale_window 2 good ones) they reach the optimizer halved, and stage 0 reports the norm so measured (half),
   stage 1 the norm at the step's own scale */
TEST(fp16_scale_growth_step_unscales_as_deepspeed) {
    float ref[16 * 48], got[16 * 48];
    float norms[2][2];
    for (int stage = 0; stage < 2; stage++)
        for (int window = 0; window < 2; window++) {
            char json[512];
            snprintf(json, sizeof json, "{\"train_micro_batch_size_per_gpu\": 2, \"zero_optimization\": {\"stage\": %d}, "
                     "\"fp16\": {\"enabled\": true, \"initial_scale_power\": 8, \"loss_scale_window\": %d}, "
                     "\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": 0.01}}}", stage,
                     window ? 2 : 1000);
            zt_engine *e = NULL;
            zt_options o;
            CHECK_MSG(engine_from(json, &e, &o) == ZT_OK, "%s", zt_last_error());
            int32_t x[16];
            for (int i = 0; i < 16; i++) x[i] = (i * 5) % 37;
            zt_step_info s[3];
            for (int k = 0; k < 3; k++) zt_forward_backward(e, x, NULL, NULL, 2), s[k] = zt_step(e);
            CHECK(!s[0].skipped && !s[1].skipped && !s[2].skipped && s[2].loss_scale == 256.0f);
            norms[stage][window] = s[2].grad_norm;
            CHECK(zt_param_get(e, "transformer.h.0.attn.c_attn.weight", window ? got : ref, 16 * 48, 0) == ZT_OK);
            zt_forward_backward(e, x, NULL, NULL, 2);
            CHECK(zt_step(e).loss_scale == (window ? 512.0f : 256.0f)); /* it grew at the third */
            zt_shutdown(e);
            if (window) CHECK(memcmp(ref, got, sizeof ref) != 0); /* the third step's gradients differ */
        }
    CHECK(norms[0][1] == norms[0][0] / 2 && norms[1][1] == norms[1][0]);
}

/* zt_float_repr: Python's repr of a float, as json.dump writes it (the values checked against Python 3) */
TEST(float_repr_is_pythons) {
    static const struct { double v; const char *py; } cases[] = {
        {3655729152.0, "3655729152.0"}, {0.009277155005798222, "0.009277155005798222"}, {116.1234, "116.1234"},
        {1e16, "1e+16"}, {1.5e-05, "1.5e-05"}, {0.0001, "0.0001"}, {123.0, "123.0"}, {2.5e+22, "2.5e+22"}, {0.1, "0.1"},
        {NAN, "NaN"}, {-INFINITY, "-Infinity"}};
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(strcmp(zt_float_repr(cases[i].v, out, sizeof out), cases[i].py) == 0, "%s, Python %s", out, cases[i].py);
}
