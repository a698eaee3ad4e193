/* tests/gpu/train.c - build/gpu_train_cuda: bf16 training on the CUDA backend against the CPU backend, on
   bench/train.c's "small" GPT-2 shape (4 layers, 4 heads, width 256, context 256, vocabulary 50257), batch 4 x 256,
   AdamW at a constant lr 1e-3, clipping at 1. Three runs of STEPS steps on the same batches from the same weights (the
   CPU engine's initial ones, copied into the others with zt_param_get / zt_param_set): the CPU, then the backend under
   test twice. The tokens follow a skewed distribution over 512 ids, so the loss falls fast from ln(50257) = 10.8.
   JSON lines on stdout:
       {"phase":"train","backend":"cuda","run":1,"step":1,"loss":..,"grad_norm":..,"ms":..}     each step of each run
       {"phase":"train","check":"loss falls",..,"pass":..}    the cuda run's last loss at least 1 below its first
       {"phase":"train","check":"cuda vs cpu",..}             steps 1-3: loss and gradient norm, relative
       {"phase":"train","check":"deterministic",..}           the two cuda runs: every loss and gradient norm, and two
                                                             parameters after the last step, bit for bit
   Tolerances of cuda against cpu, relative: step 1's loss 5e-3 and gradient norm 2e-2 (the same weights and batch,
   so only bf16 rounding at other points: tests/test_models.c's bf16 tolerances), steps 2 and 3 1e-2 and 4e-2 (an
   Adam step moves each weight by up to lr whatever the gradient's size, so bf16 differences of tiny gradients become
   differences of the weights).
   build/gpu_train_cuda [--backend NAME]: NAME is the backend under test (default cuda). Exit status 0 when all
   passed, 1 when a check failed, 2 when a run could not start. */
#include "../../zt.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 8
#define B 4
#define T 256

static const char *SMALL = /* without dropout, as bench/gpu.c (the fixtures check dropout on the GPU) */
    "{\"model_type\": \"gpt2\", \"n_layer\": 4, \"n_head\": 4, \"n_embd\": 256, \"n_positions\": 256,"
    " \"vocab_size\": 50257, \"embd_pdrop\": 0, \"resid_pdrop\": 0, \"attn_pdrop\": 0}";
/* the parameters compared bit for bit between the two runs of the backend under test */
static const char *const COMPARED[2] = {"transformer.wte.weight", "transformer.h.3.mlp.c_proj.weight"};

typedef struct run {
    const char *backend;
    float loss[STEPS], norm[STEPS];
    float *param[2];
    int64_t param_n[2];
} run;

/* every parameter of an engine in host memory */
typedef struct snapshot { int n; char *name[256]; float *data[256]; int64_t numel[256]; } snapshot;

static int passed, failed;

static void verdict(int pass) {
    printf(",\"pass\":%s}\n", pass ? "true" : "false");
    fflush(stdout);
    if (pass) passed++;
    else failed++;
}

static double rel(double got, double ref) {
    double d = fabs(got - ref) / fmax(fabs(ref), 1e-30);
    return isnan(d) ? INFINITY : d;
}

static zt_engine *start(const char *backend, const zt_model_config *c) {
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = c;
    zt_options o = zt_options_default();
    o.backend = backend;
    o.micro_batch = B;
    o.seq_len = T;
    o.precision = ZT_PRECISION_BF16;
    o.max_steps = STEPS;
    o.lr = 1e-3f;
    o.schedule = ZT_SCHED_CONSTANT;
    o.warmup_steps = 0;
    o.max_grad_norm = 1.0f;
    zt_engine *e = NULL;
    if (zt_init_options(&e, &spec, &o) != ZT_OK) {
        fprintf(stderr, "gpu_train: cannot start a %s engine: %s\n", backend, zt_last_error());
        return NULL;
    }
    return e;
}

static int64_t numel(zt_shape s) {
    int64_t n = 1;
    for (int d = 0; d < s.ndim; d++) n *= s.d[d];
    return n;
}

static int snapshot_take(snapshot *s, zt_engine *e) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < zt_param_count(e) && s->n < 256; i++) {
        zt_shape sh;
        const char *name = zt_param_name(e, i, &sh);
        if (!name) continue;
        s->name[s->n] = strdup(name); /* the engine's own string goes with it */
        s->numel[s->n] = numel(sh);
        s->data[s->n] = (float *)malloc(sizeof(float) * (size_t)s->numel[s->n]);
        if (zt_param_get(e, name, s->data[s->n], s->numel[s->n], 0) != ZT_OK) return 0;
        s->n++;
    }
    return 1;
}

static int snapshot_put(const snapshot *s, zt_engine *e) {
    for (int i = 0; i < s->n; i++)
        if (zt_param_set(e, s->name[i], s->data[i], s->numel[i]) != ZT_OK) {
            fprintf(stderr, "gpu_train: zt_param_set %s: %s\n", s->name[i], zt_last_error());
            return 0;
        }
    return 1;
}

/* STEPS steps of engine e, which it shuts down; 0 on failure */
static int train(run *r, int index, zt_engine *e, const int32_t *tokens) {
    for (int k = 0; k < STEPS; k++) {
        uint64_t t0 = zt_time_ns();
        zt_forward_backward(e, tokens + (int64_t)k * B * T, NULL, NULL, B);
        zt_step_info info = zt_step(e);
        r->loss[k] = info.loss;
        r->norm[k] = info.grad_norm;
        printf("{\"phase\":\"train\",\"backend\":\"%s\",\"run\":%d,\"step\":%d,\"loss\":%.7g,\"grad_norm\":%.7g,"
               "\"ms\":%.1f}\n", r->backend, index, k + 1, (double)info.loss, (double)info.grad_norm,
               (double)(zt_time_ns() - t0) / 1e6);
        fflush(stdout);
    }
    int ok = 1;
    for (int p = 0; p < 2 && ok; p++) {
        r->param_n[p] = -1;
        for (int i = 0; i < zt_param_count(e); i++) {
            zt_shape s;
            const char *name = zt_param_name(e, i, &s);
            if (name && strcmp(name, COMPARED[p]) == 0) r->param_n[p] = numel(s);
        }
        r->param[p] = (float *)malloc(sizeof(float) * (size_t)(r->param_n[p] > 0 ? r->param_n[p] : 1));
        ok = r->param_n[p] > 0 && zt_param_get(e, COMPARED[p], r->param[p], r->param_n[p], 0) == ZT_OK;
        if (!ok) fprintf(stderr, "gpu_train: reading %s of the %s run: %s\n", COMPARED[p], r->backend, zt_last_error());
    }
    zt_shutdown(e);
    return ok;
}

int main(int argc, char **argv) {
    const char *name = argc > 2 && strcmp(argv[1], "--backend") == 0 ? argv[2] : "cuda";
    zt_model_config c;
    if (zt_model_config_parse(&c, SMALL, strlen(SMALL), "small") != ZT_OK) {
        fprintf(stderr, "gpu_train: %s\n", zt_last_error());
        return 2;
    }
    /* a skewed draw from 512 ids scattered over the vocabulary */
    int32_t ids[512], *tokens = (int32_t *)malloc(sizeof(int32_t) * STEPS * B * T);
    uint64_t x = 12345;
    for (int i = 0; i < 512; i++) ids[i] = (int32_t)((i * 7919 + 11) % c.vocab);
    for (int64_t i = 0; i < STEPS * B * T; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(x >> 11) * 0x1.0p-53;
        tokens[i] = ids[(int)(512 * u * u * u)];
    }

    /* the engine under test first: a machine without the backend stops here */
    run r[3];
    memset(r, 0, sizeof r);
    r[0].backend = "cpu", r[1].backend = r[2].backend = name;
    zt_engine *e[3] = {NULL, NULL, NULL};
    snapshot init;
    if (!(e[1] = start(name, &c)) || !(e[0] = start("cpu", &c))) return 2;
    if (!snapshot_take(&init, e[0]) || !snapshot_put(&init, e[1])) return 2;
    if (!train(&r[0], 0, e[0], tokens) || !train(&r[1], 1, e[1], tokens)) return 2;
    if (!(e[2] = start(name, &c)) || !snapshot_put(&init, e[2]) || !train(&r[2], 2, e[2], tokens)) return 2;

    const run *g = &r[1];
    printf("{\"phase\":\"train\",\"check\":\"loss falls\",\"backend\":\"%s\",\"first\":%.7g,\"last\":%.7g", name,
           (double)g->loss[0], (double)g->loss[STEPS - 1]);
    verdict(g->loss[STEPS - 1] < g->loss[0] - 1.0f);

    static const double tol_loss[3] = {5e-3, 1e-2, 1e-2}, tol_norm[3] = {2e-2, 4e-2, 4e-2};
    for (int k = 0; k < 3; k++) {
        double el = rel(g->loss[k], r[0].loss[k]), en = rel(g->norm[k], r[0].norm[k]);
        printf("{\"phase\":\"train\",\"check\":\"%s vs cpu\",\"step\":%d,\"loss\":[%.7g,%.7g],\"loss_err\":%.2e,"
               "\"loss_tol\":%.0e,\"grad_norm\":[%.7g,%.7g],\"norm_err\":%.2e,\"norm_tol\":%.0e",
               name, k + 1, (double)g->loss[k], (double)r[0].loss[k], fmin(el, 1e300), tol_loss[k], (double)g->norm[k],
               (double)r[0].norm[k], fmin(en, 1e300), tol_norm[k]);
        verdict(el <= tol_loss[k] && en <= tol_norm[k]);
    }

    int same_steps = memcmp(r[1].loss, r[2].loss, sizeof r[1].loss) == 0 &&
                     memcmp(r[1].norm, r[2].norm, sizeof r[1].norm) == 0;
    int64_t differ[2] = {0, 0};
    for (int p = 0; p < 2; p++)
        for (int64_t i = 0; i < r[1].param_n[p]; i++)
            differ[p] += memcmp(&r[1].param[p][i], &r[2].param[p][i], sizeof(float)) != 0;
    printf("{\"phase\":\"train\",\"check\":\"deterministic\",\"backend\":\"%s\",\"steps_identical\":%s,"
           "\"differing\":{\"%s\":%lld,\"%s\":%lld}", name, same_steps ? "true" : "false", COMPARED[0],
           (long long)differ[0], COMPARED[1], (long long)differ[1]);
    verdict(same_steps && differ[0] == 0 && differ[1] == 0);

    fprintf(stderr, "gpu_train: %s against cpu\n%d passed, %d failed\n", name, passed, failed);
    return failed ? 1 : 0;
}
