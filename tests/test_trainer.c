/* tests/test_trainer.c - data files and their errors, epochs and ranks, packed documents, and
   checkpoints: save, resume the exact loss sequence, and refuse what is not a checkpoint. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* a fresh directory under /tmp for one test */
static void temp_dir(char *path, size_t size, const char *name) {
    snprintf(path, size, "/tmp/zt_test_%s_%d", name, (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) zt_fatal("cannot clear %s", path);
    mkdir(path, 0755);
}

static void write_bytes(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, n) != (ssize_t)n) zt_fatal("cannot write %s", path);
    close(fd);
}

/* an llm.c token file: 256 int32 header (magic, version, count), then the tokens */
static void write_llmc(const char *path, const uint32_t *tok, int64_t n, int version) {
    int es = version == 1 ? 2 : 4;
    uint8_t *buf = (uint8_t *)calloc(1, 1024 + (size_t)n * (size_t)es);
    int32_t head[3] = {version == 1 ? 20240520 : 20240801, version, (int32_t)n};
    memcpy(buf, head, sizeof head);
    for (int64_t i = 0; i < n; i++) {
        if (es == 2) {
            uint16_t v = (uint16_t)tok[i];
            memcpy(buf + 1024 + 2 * i, &v, 2);
        } else {
            memcpy(buf + 1024 + 4 * i, &tok[i], 4);
        }
    }
    write_bytes(path, buf, 1024 + (size_t)n * (size_t)es);
    free(buf);
}

static zt_data_desc data_desc(const char *path, int64_t T, int64_t rows) {
    zt_data_desc d;
    memset(&d, 0, sizeof d);
    d.path = path;
    d.vocab = 1000;
    d.seq_len = T;
    d.rows = rows;
    d.seed = 7;
    d.shuffle = 1;
    return d;
}

TEST(data_formats_read_the_same_tokens) {
    char dir[256], p1[300], p7[300], p16[300], p32[300], ptxt[300];
    temp_dir(dir, sizeof dir, "formats");
    uint32_t tok[101];
    for (int i = 0; i < 101; i++) tok[i] = (uint32_t)(i * 37 % 97);
    snprintf(p1, sizeof p1, "%s/a.bin", dir);
    snprintf(p7, sizeof p7, "%s/b.bin", dir);
    snprintf(p16, sizeof p16, "%s/c.u16", dir);
    snprintf(p32, sizeof p32, "%s/d.u32", dir);
    snprintf(ptxt, sizeof ptxt, "%s/e.txt", dir);
    write_llmc(p1, tok, 101, 1);
    write_llmc(p7, tok, 101, 7);
    uint16_t t16[101];
    char text[101];
    for (int i = 0; i < 101; i++) t16[i] = (uint16_t)tok[i], text[i] = (char)(tok[i] + 30);
    write_bytes(p16, t16, sizeof t16);
    write_bytes(p32, tok, sizeof tok);
    write_bytes(ptxt, text, sizeof text);
    const char *paths[5] = {p1, p7, p16, p32, ptxt};
    zt_data_format formats[5] = {ZT_DATA_AUTO, ZT_DATA_AUTO, ZT_DATA_U16, ZT_DATA_U32, ZT_DATA_AUTO};
    for (int f = 0; f < 5; f++) {
        zt_data_desc d = data_desc(paths[f], 10, 2);
        d.format = formats[f];
        d.shuffle = 0;
        zt_data *data = NULL;
        CHECK_MSG(zt_data_open(&data, &d) == ZT_OK, "%s: %s", paths[f], zt_last_error());
        CHECK_EQ_INT(zt_data_tokens(data), 101);
        CHECK_EQ_INT(zt_data_windows(data), 10); /* (101 - 1) / 10 windows of 11 tokens */
        int32_t x[20], y[20];
        CHECK_EQ_INT(zt_data_next(data, x, y, -100), 2);
        int shift = f == 4 ? 30 : 0;
        for (int i = 0; i < 20; i++) {
            CHECK_EQ_INT(x[i], (int32_t)tok[i] + shift);
            CHECK_EQ_INT(y[i], (int32_t)tok[i + 1] + shift);
        }
        zt_data_close(data);
    }
}

static void data_error(const char *path, zt_data_format fmt, const char *mask, const char *expect) {
    zt_data_desc d = data_desc(path, 10, 2);
    d.format = fmt;
    d.mask_path = mask;
    zt_data *data = NULL;
    zt_result r = zt_data_open(&data, &d);
    if (r == ZT_OK) {
        zt_test_fail(__FILE__, __LINE__, "%s opened", path);
        zt_data_close(data);
        return;
    }
    if (!strstr(zt_last_error(), expect))
        zt_test_fail(__FILE__, __LINE__, "\"%s\" does not say \"%s\"", zt_last_error(), expect);
}

TEST(bad_data_gets_one_clear_error) {
    char dir[256], p[300], q[300], m[300];
    temp_dir(dir, sizeof dir, "baddata");
    uint32_t tok[50];
    for (int i = 0; i < 50; i++) tok[i] = (uint32_t)i;
    snprintf(p, sizeof p, "%s/short.bin", dir);
    write_llmc(p, tok, 50, 1);
    truncate(p, 1024 + 60); /* the header says 50 tokens, 30 are there */
    data_error(p, ZT_DATA_AUTO, NULL, "the header says 50 tokens (1124 bytes with the header), the file has 1084 bytes");
    snprintf(q, sizeof q, "%s/odd.u16", dir);
    write_bytes(q, tok, 41);
    data_error(q, ZT_DATA_U16, NULL, "41 bytes is not a whole number of 2-byte tokens");
    data_error(q, ZT_DATA_AUTO, NULL, "too short for an llm.c token file");
    snprintf(q, sizeof q, "%s/magic.bin", dir);
    uint8_t junk[2000] = {1, 2, 3};
    write_bytes(q, junk, sizeof junk);
    data_error(q, ZT_DATA_AUTO, NULL, "magic 197121, version 0 is not an llm.c token file");
    tok[17] = 5000;
    snprintf(q, sizeof q, "%s/vocab.bin", dir);
    write_llmc(q, tok, 50, 7);
    data_error(q, ZT_DATA_AUTO, NULL, "token 5000 at position 17 is outside the model's vocabulary of 1000");
    tok[17] = 17;
    write_llmc(q, tok, 50, 7);
    snprintf(m, sizeof m, "%s/vocab.mask", dir);
    write_bytes(m, junk, 49);
    data_error(q, ZT_DATA_AUTO, m, "has 49 mask bytes for the 50 tokens");
    data_error("/nonexistent/train.bin", ZT_DATA_AUTO, NULL, "cannot open /nonexistent/train.bin");
    snprintf(q, sizeof q, "%s/none_*.bin", dir);
    data_error(q, ZT_DATA_AUTO, NULL, "no file matches");
    snprintf(q, sizeof q, "%s/tiny.bin", dir);
    write_llmc(q, tok, 5, 1);
    data_error(q, ZT_DATA_AUTO, NULL, "holds 5 tokens: not one window of 11 (10 inputs and the target after them)");
}

/* a comma list of any length (200 paths, past 4 KiB, once cut there in silence), and a file named with a glob's
   brackets, read as it is named where no file matches the pattern */
TEST(data_lists_are_read_whole) {
    char dir[256], p[300], lit[300];
    temp_dir(dir, sizeof dir, "lists");
    uint32_t tok[101];
    for (int i = 0; i < 101; i++) tok[i] = (uint32_t)(i * 7 % 97);
    snprintf(p, sizeof p, "%s/a_file_with_a_longer_name.bin", dir);
    write_llmc(p, tok, 101, 1);
    size_t cap = 200 * (strlen(p) + 1) + 1, n = 0;
    char *list = (char *)malloc(cap);
    for (int k = 0; k < 200; k++) n += (size_t)snprintf(list + n, cap - n, "%s%s", k ? "," : "", p);
    CHECK(n > 4096);
    zt_data_desc d = data_desc(list, 10, 2);
    zt_data *data = NULL;
    CHECK_MSG(zt_data_open(&data, &d) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(zt_data_tokens(data), 200 * 101);
    zt_data_close(data);
    free(list);
    snprintf(lit, sizeof lit, "%s/d[1].bin", dir);
    write_llmc(lit, tok, 101, 1);
    d = data_desc(lit, 10, 2);
    CHECK_MSG(zt_data_open(&data, &d) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(zt_data_tokens(data), 101);
    zt_data_close(data);
}

/* one epoch visits every window once, whatever the order; ranks together read what one rank reads */
TEST(data_epochs_have_no_repeats_and_ranks_split_them) {
    char dir[256], p[300];
    temp_dir(dir, sizeof dir, "epochs");
    enum { N = 1001, T = 10 };
    uint32_t tok[N];
    for (int i = 0; i < N; i++) tok[i] = (uint32_t)(i % 997);
    snprintf(p, sizeof p, "%s/a.bin", dir);
    write_llmc(p, tok, N, 7);
    zt_data_desc d = data_desc(p, T, 3);
    zt_data *one = NULL;
    CHECK(zt_data_open(&one, &d) == ZT_OK);
    int64_t W = zt_data_windows(one);
    CHECK_EQ_INT(W, 100);
    int seen[100] = {0};
    int32_t x[3 * T], y[3 * T], first[100];
    int64_t got = 0, n;
    while (got < W && (n = zt_data_next(one, x, y, -100)) > 0) {
        for (int64_t r = 0; r < n; r++) {
            int w = x[r * T] / T; /* the window starting at token w*T holds w*T first */
            CHECK(w >= 0 && w < 100);
            seen[w]++;
            first[got + r] = x[r * T];
        }
        got += n;
    }
    CHECK_EQ_INT(got, W);
    for (int w = 0; w < 100; w++) CHECK_EQ_INT(seen[w], 1);
    int in_order = 1;
    for (int i = 1; i < 100; i++) in_order &= first[i] > first[i - 1];
    CHECK(!in_order); /* shuffled */
    /* two ranks of 3 rows: rank 0 and rank 1 interleave into the sequence of one rank of 6 rows */
    zt_data_desc d6 = data_desc(p, T, 6), d0 = data_desc(p, T, 3), d1 = data_desc(p, T, 3);
    d0.world = d1.world = 2;
    d1.rank = 1;
    zt_data *six = NULL, *r0 = NULL, *r1 = NULL;
    CHECK(zt_data_open(&six, &d6) == ZT_OK && zt_data_open(&r0, &d0) == ZT_OK && zt_data_open(&r1, &d1) == ZT_OK);
    int32_t x6[6 * T], y6[6 * T], xa[3 * T], xb[3 * T];
    for (int step = 0; step < 5; step++) {
        zt_data_next(six, x6, y6, -100);
        zt_data_next(r0, xa, y, -100);
        zt_data_next(r1, xb, y, -100);
        CHECK(memcmp(x6, xa, sizeof xa) == 0 && memcmp(x6 + 3 * T, xb, sizeof xb) == 0);
    }
    zt_data_close(one);
    zt_data_close(six);
    zt_data_close(r0);
    zt_data_close(r1);
}

TEST(data_masks_hide_targets) {
    char dir[256], p[300], m[300];
    temp_dir(dir, sizeof dir, "masks");
    uint32_t tok[41];
    uint8_t mask[41];
    for (int i = 0; i < 41; i++) tok[i] = (uint32_t)i, mask[i] = (uint8_t)(i % 4 != 0);
    snprintf(p, sizeof p, "%s/a.bin", dir);
    snprintf(m, sizeof m, "%s/a.mask", dir);
    write_llmc(p, tok, 41, 1);
    write_bytes(m, mask, sizeof mask);
    zt_data_desc d = data_desc(p, 10, 1);
    d.mask_path = m;
    d.shuffle = 0;
    zt_data *data = NULL;
    CHECK(zt_data_open(&data, &d) == ZT_OK);
    int32_t x[10], y[10];
    zt_data_next(data, x, y, -100);
    for (int t = 0; t < 10; t++) CHECK_EQ_INT(y[t], (t + 1) % 4 ? t + 1 : -100);
    zt_data_close(data);
}

static const char *TINY =
    "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
    " \"hidden_size\": 32, \"intermediate_size\": 48, \"max_position_embeddings\": 64, \"vocab_size\": 61}";

static zt_engine *tiny_engine_with(const zt_options *o) {
    zt_model_config c;
    if (zt_model_config_parse(&c, TINY, strlen(TINY), "tiny") != ZT_OK) zt_fatal("%s", zt_last_error());
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config = &c;
    zt_engine *e = NULL;
    if (zt_init_options(&e, &spec, o) != ZT_OK) zt_fatal("%s", zt_last_error());
    return e;
}

static zt_optimizer tiny_optimizer; /* AdamW; a test may set another, and puts it back */

static zt_engine *tiny_engine(int64_t B, int64_t T, int32_t eot, zt_precision prec) {
    zt_options o = zt_options_default();
    o.optimizer = tiny_optimizer;
    o.micro_batch = B;
    o.seq_len = T;
    o.threads = 2;
    o.lr = 2e-3f;
    o.eot_token = eot;
    o.precision = prec;
    o.grad_accum = 2;
    o.max_steps = 12;
    o.warmup_steps = 3;
    o.weight_decay = 0.1f;
    return tiny_engine_with(&o);
}

/* Two documents packed in one row behind an end-of-text token train as the same documents in two
   rows: positions restart, attention stops at the boundary, the boundary predicts nothing. */
TEST(packed_documents_train_as_separate_ones) {
    enum { EOT = 60, LA = 9, LB = 12, T = LA + 1 + LB };
    int32_t a[LA], b[LB];
    for (int i = 0; i < LA; i++) a[i] = (i * 7 + 3) % 59;
    for (int i = 0; i < LB; i++) b[i] = (i * 11 + 5) % 59;
    int32_t packed[T];
    memcpy(packed, a, sizeof a);
    packed[LA] = EOT;
    memcpy(packed + LA + 1, b, sizeof b);
    /* separately: row 0 = a, EOT, filler; row 1 = b, filler; fillers predict nothing */
    int32_t rows[2 * T];
    uint8_t mask[2 * T];
    for (int i = 0; i < 2 * T; i++) rows[i] = 1, mask[i] = 0;
    memcpy(rows, a, sizeof a);
    rows[LA] = EOT;
    memcpy(rows + T, b, sizeof b);
    for (int i = 0; i < LA; i++) mask[i] = 1;
    for (int i = 0; i < LB - 1; i++) mask[T + i] = 1;
    zt_engine *one = tiny_engine(1, T, EOT, ZT_PRECISION_FP32), *two = tiny_engine(2, T, EOT, ZT_PRECISION_FP32);
    float l1 = zt_forward_backward(one, packed, NULL, NULL, 1), l2 = zt_forward_backward(two, rows, NULL, mask, 2);
    CHECK_NEAR(l1, l2, 1e-5 * l1);
    double worst = 0, scale = 0;
    for (int i = 0; i < zt_param_count(one); i++) {
        zt_shape s;
        const char *name = zt_param_name(one, i, &s);
        if (!name) continue;
        int64_t k = 1;
        for (int d = 0; d < s.ndim; d++) k *= s.d[d];
        float *g1 = (float *)malloc((size_t)k * 4), *g2 = (float *)malloc((size_t)k * 4);
        zt_param_get(one, name, g1, k, 1);
        zt_param_get(two, name, g2, k, 1);
        for (int64_t j = 0; j < k; j++) {
            worst = fmax(worst, fabs((double)g1[j] - g2[j]));
            scale = fmax(scale, fabs((double)g1[j]));
        }
        free(g1);
        free(g2);
    }
    zt_shutdown(one);
    zt_shutdown(two);
    CHECK_MSG(worst <= 1e-5 * scale, "gradients differ by %g (largest %g)", worst, scale);
}

/* save at step 6 of 12, resume in a new engine: the remaining losses are the same bits */
static void resume_is_exact(zt_precision prec) {
    char dir[256], p[300], ck[300];
    temp_dir(dir, sizeof dir, prec == ZT_PRECISION_BF16 ? "resume_bf16" : "resume");
    enum { N = 3000, T = 16, B = 2 };
    uint32_t tok[N];
    for (int i = 0; i < N; i++) tok[i] = (uint32_t)((i * 31 + i / 7) % 61);
    snprintf(p, sizeof p, "%s/train.bin", dir);
    snprintf(ck, sizeof ck, "%s/ckpt", dir);
    write_llmc(p, tok, N, 1);
    zt_data_desc d = data_desc(p, T, B);
    d.vocab = 61;
    float straight[12], resumed[12];
    int32_t x[B * T], y[B * T];
    for (int run = 0; run < 3; run++) {
        zt_engine *e = tiny_engine(B, T, -1, prec);
        zt_data *data = NULL;
        CHECK(zt_data_open(&data, &d) == ZT_OK);
        int first = 0, last = 12;
        if (run == 1) last = 6;
        if (run == 2) {
            CHECK_MSG(zt_load(e, ck, data) == ZT_OK, "%s", zt_last_error());
            first = (int)zt_engine_step(e);
            CHECK_EQ_INT(first, 6);
        }
        for (int s = first; s < last; s++) {
            for (int m = 0; m < 2; m++) {
                int64_t n = zt_data_next(data, x, y, -100);
                zt_forward_backward(e, x, y, NULL, n);
            }
            zt_step_info info = zt_step(e);
            (run == 0 ? straight : resumed)[s] = info.loss;
        }
        if (run == 1) CHECK_MSG(zt_save(e, ck, data) == ZT_OK, "%s", zt_last_error());
        zt_data_close(data);
        zt_shutdown(e);
    }
    for (int s = 6; s < 12; s++) CHECK_MSG(memcmp(&straight[s], &resumed[s], 4) == 0, "step %d: %.9g then %.9g", s + 1,
                                           straight[s], resumed[s]);
    /* the layout DeepSpeed users know */
    char f[400];
    snprintf(f, sizeof f, "%s/latest", ck);
    FILE *lf = fopen(f, "r");
    char tag[64] = "";
    CHECK(lf && fgets(tag, sizeof tag, lf));
    fclose(lf);
    CHECK(strcmp(tag, "global_step6") == 0);
    snprintf(f, sizeof f, "%s/global_step6/zt_rank_00000.safetensors", ck);
    CHECK(access(f, R_OK) == 0);
}

TEST(resume_continues_the_exact_loss_sequence) { resume_is_exact(ZT_PRECISION_FP32); }
TEST(resume_continues_the_exact_loss_sequence_bf16) { resume_is_exact(ZT_PRECISION_BF16); }
TEST(resume_continues_the_exact_loss_sequence_lion_adagrad) {
    for (int kind = ZT_OPTIM_LION; kind <= ZT_OPTIM_ADAGRAD && !zt_test_failed(); kind++) {
        tiny_optimizer = (zt_optimizer)kind;
        resume_is_exact(ZT_PRECISION_BF16);
    }
    tiny_optimizer = ZT_OPTIM_ADAMW;
}

/* 200 tokens of the tiny model's vocabulary in DIR/data.bin, opened as rows of T (NULL: the error is set) */
static zt_data *little_data(const char *dir, int64_t T) {
    char f[400];
    uint32_t tok200[200];
    for (int i = 0; i < 200; i++) tok200[i] = (uint32_t)(i * 7 % 61);
    snprintf(f, sizeof f, "%s/data.bin", dir);
    write_llmc(f, tok200, 200, 7);
    zt_data_desc d = data_desc(f, T, 1);
    d.vocab = 61;
    zt_data *data = NULL;
    return zt_data_open(&data, &d) == ZT_OK ? data : NULL;
}

/* a token file cut short under the running job (SIGBUS on its mapped pages): the process ends naming it, exit 1 */
TEST(data_file_cut_under_the_job_is_named) {
    char dir[256], f[400], err[400];
    temp_dir(dir, sizeof dir, "data_cut");
    snprintf(f, sizeof f, "%s/data.bin", dir), snprintf(err, sizeof err, "%s/err.txt", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        zt_data *data = little_data(dir, 8);
        int32_t tok[8], tgt[8];
        if (!data || truncate(f, 0) != 0) _exit(3);
        for (int k = 0; k < 100; k++) zt_data_next(data, tok, tgt, -100);
        _exit(0); /* not reached */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    size_t n = 0;
    char *said = test_slurp(err, &n);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
    CHECK_STR_CONTAINS(said, "data.bin: it was cut short under the running job (rewritten or truncated in place");
    free(said);
    remove(err), remove(f), rmdir(dir);
}

/* a checkpoint of one optimizer holds its state (Lion's exp_avg, not AdamW's two moments): a run of another that
   reads on is refused, naming both; an evaluation or an export takes its weights */
TEST(checkpoint_of_another_optimizer) {
    char dir[256], f[400];
    temp_dir(dir, sizeof dir, "ckpt_optimizer");
    tiny_optimizer = ZT_OPTIM_LION;
    zt_engine *e = tiny_engine(1, 8, -1, ZT_PRECISION_FP32);
    tiny_optimizer = ZT_OPTIM_ADAMW;
    int32_t tok[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    zt_forward_backward(e, tok, NULL, NULL, 1);
    zt_forward_backward(e, tok, NULL, NULL, 1);
    zt_step(e);
    CHECK(zt_save(e, dir, NULL) == ZT_OK);
    float saved[61 * 32], loaded[61 * 32];
    CHECK(zt_param_get(e, "model.embed_tokens.weight", saved, 61 * 32, 0) == ZT_OK);
    zt_shutdown(e);
    snprintf(f, sizeof f, "%s/global_step1/zt_state.json", dir);
    FILE *sf = fopen(f, "r");
    static char state[4096];
    size_t n = sf ? fread(state, 1, sizeof state - 1, sf) : 0;
    if (sf) fclose(sf);
    state[n] = 0;
    CHECK_STR_CONTAINS(state, "\"optimizer\": \"Lion\"");
    e = tiny_engine(1, 8, -1, ZT_PRECISION_FP32);
    zt_data *data = little_data(dir, 8);
    CHECK_MSG(data != NULL, "%s", zt_last_error());
    CHECK(zt_load(e, dir, data) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "was saved by a run with the Lion optimizer and holds its state; this run "
                       "trains with AdamW: resume with Lion");
    CHECK_MSG(zt_load(e, dir, NULL) == ZT_OK, "%s", zt_last_error());
    CHECK(zt_param_get(e, "model.embed_tokens.weight", loaded, 61 * 32, 0) == ZT_OK);
    CHECK(memcmp(saved, loaded, sizeof saved) == 0);
    zt_data_close(data);
    /* this engine's AdamW starts afresh: one that trained first (its moments not zero) and a new one take the same
       step from those weights, to the bit */
    zt_engine *fresh = tiny_engine(1, 8, -1, ZT_PRECISION_FP32);
    for (int k = 0; k < 3; k++) {
        zt_forward_backward(e, tok, NULL, NULL, 1);
        zt_forward_backward(e, tok, NULL, NULL, 1);
        zt_step(e);
    }
    CHECK(zt_load(e, dir, NULL) == ZT_OK && zt_load(fresh, dir, NULL) == ZT_OK);
    zt_engine *both[2] = {e, fresh};
    float after[2][61 * 32];
    for (int k = 0; k < 2; k++) {
        zt_forward_backward(both[k], tok, NULL, NULL, 1);
        zt_forward_backward(both[k], tok, NULL, NULL, 1);
        zt_step(both[k]);
        CHECK(zt_param_get(both[k], "model.embed_tokens.weight", after[k], 61 * 32, 0) == ZT_OK);
    }
    CHECK_MSG(memcmp(after[0], after[1], sizeof after[0]) == 0, "an engine that trained before keeps its optimizer state "
              "after loading another optimizer's weights");
    zt_shutdown(fresh);
    zt_shutdown(e);
}

/* zt_save_with: the caller's files are inside the checkpoint when `latest` names it; a bad name is refused and leaves
   the checkpoints there as they were; zt_remove_checkpoint takes the whole directory */
TEST(checkpoint_save_with_files_of_the_callers) {
    char dir[256], f[400];
    temp_dir(dir, sizeof dir, "ckpt_with");
    zt_engine *e = tiny_engine(1, 8, -1, ZT_PRECISION_FP32);
    int32_t tok[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    zt_forward_backward(e, tok, NULL, NULL, 1);
    zt_step(e);
    zt_save_file files[2] = {{"trainer_state.json", "{\"global_step\": 1}\n", 19}, {"notes.txt", "", 0}};
    CHECK_MSG(zt_save_with(e, dir, NULL, files, 2) == ZT_OK, "%s", zt_last_error());
    snprintf(f, sizeof f, "%s/global_step1/trainer_state.json", dir);
    size_t n = 0;
    char *got = test_slurp(f, &n);
    CHECK(got && n == 19 && memcmp(got, files[0].bytes, 19) == 0);
    free(got);
    static const char *const bad[4] = {"../x", "", "zt_state.json", "."};
    for (int k = 0; k < 4; k++) {
        zt_save_file one = {bad[k], "x", 1};
        CHECK(zt_save_with(e, dir, NULL, &one, 1) == ZT_ERROR_INVALID);
        CHECK_STR_CONTAINS(zt_last_error(), "is not a name for a file of the checkpoint");
        snprintf(f, sizeof f, "%s/global_step1.tmp", dir);
        CHECK(access(f, F_OK) != 0);
        snprintf(f, sizeof f, "%s/global_step1/trainer_state.json", dir); /* the good one, untouched */
        CHECK(access(f, F_OK) == 0);
    }
    CHECK(zt_remove_checkpoint(dir, 1) == ZT_OK);
    snprintf(f, sizeof f, "%s/global_step1", dir);
    CHECK(access(f, F_OK) != 0);
    zt_shutdown(e);
}

TEST(checkpoint_errors_are_clear_and_harmless) {
    char dir[256], f[400];
    temp_dir(dir, sizeof dir, "ckpt_errors");
    zt_engine *e = tiny_engine(1, 8, -1, ZT_PRECISION_FP32);
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_IO);
    CHECK_STR_CONTAINS(zt_last_error(), "has no `latest` file and is not a checkpoint");
    CHECK(zt_save(e, dir, NULL) == ZT_OK);
    /* a save killed half-way leaves a .tmp directory: loading still finds the good one */
    snprintf(f, sizeof f, "%s/global_step1.tmp", dir);
    mkdir(f, 0755);
    CHECK(zt_load(e, dir, NULL) == ZT_OK);
    /* a damaged tensor file is refused by name, and nothing saved is touched */
    snprintf(f, sizeof f, "%s/global_step0/zt_rank_00000.safetensors", dir);
    truncate(f, 100);
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "zt_rank_00000.safetensors");
    snprintf(f, sizeof f, "%s/latest", dir);
    write_bytes(f, "../etc", 6);
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "should name a checkpoint");
    zt_shutdown(e);
}

static void replace_in_file(const char *path, const char *from, const char *to) {
    FILE *f = fopen(path, "rb");
    static char buf[1 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    char *at = NULL;
    for (size_t i = 0; i + strlen(from) <= n; i++) /* the file may hold NULs: search by hand, last match */
        if (memcmp(buf + i, from, strlen(from)) == 0) at = buf + i;
    if (!at || strlen(from) != strlen(to)) zt_fatal("cannot edit %s", path);
    memcpy(at, to, strlen(to));
    write_bytes(path, buf, n);
}

/* a checkpoint that fails to load leaves the engine as it was, and lies in its state are refused */
TEST(checkpoint_damage_is_refused_before_anything_changes) {
    char dir[256], f[400];
    temp_dir(dir, sizeof dir, "ckpt_damage");
    zt_engine *e = tiny_engine(1, 8, -1, ZT_PRECISION_FP32);
    CHECK(zt_save(e, dir, NULL) == ZT_OK);
    float before[61 * 32], after[61 * 32];
    CHECK(zt_param_get(e, "model.embed_tokens.weight", before, 61 * 32, 0) == ZT_OK);
    /* the last tensor's dtype is wrong: nothing may be copied, not even the tensors before it */
    snprintf(f, sizeof f, "%s/global_step0/zt_rank_00000.safetensors", dir);
    replace_in_file(f, "\"F32\"", "\"F16\"");
    int32_t tok[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    zt_forward_backward(e, tok, NULL, NULL, 1);
    zt_step(e); /* the weights now differ from the checkpoint's */
    CHECK(zt_param_get(e, "model.embed_tokens.weight", before, 61 * 32, 0) == ZT_OK);
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "should be F32");
    CHECK(zt_param_get(e, "model.embed_tokens.weight", after, 61 * 32, 0) == ZT_OK);
    CHECK(memcmp(before, after, sizeof before) == 0);
    CHECK_EQ_INT(zt_engine_step(e), 1);
    /* counters out of range */
    CHECK(zt_save(e, dir, NULL) == ZT_OK);
    snprintf(f, sizeof f, "%s/global_step1/zt_state.json", dir);
    replace_in_file(f, "\"adam_step\": 1", "\"adam_step\": 9");
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "out of range");
    zt_shutdown(e);
    /* another sequence length: a run that reads on is refused (the data cursor would mean other windows); the
       weights load for an evaluation, a sample or an export */
    replace_in_file(f, "\"adam_step\": 9", "\"adam_step\": 1");
    e = tiny_engine(1, 16, -1, ZT_PRECISION_FP32);
    zt_data *data = little_data(dir, 16);
    CHECK_MSG(data != NULL, "%s", zt_last_error());
    CHECK(zt_load(e, dir, data) == ZT_ERROR_INVALID);
    CHECK_STR_CONTAINS(zt_last_error(), "was saved with --seq_len 8");
    CHECK_MSG(zt_load(e, dir, NULL) == ZT_OK, "%s", zt_last_error());
    CHECK_EQ_INT(zt_engine_step(e), 1);
    zt_data_close(data);
    /* a tensor of another shape (the same elements) is another model's */
    snprintf(f, sizeof f, "%s/global_step1/zt_rank_00000.safetensors", dir);
    replace_in_file(f, "\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[61,32]",
                    "\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[32,61]");
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "tensor \"model.embed_tokens.weight\" has another shape than this model's [61, 32]");
    zt_shutdown(e);
}

/* checkpoints and exports hold parameters by name: two blocks declaring one name are refused at init, not at the
   first load (which could not tell them apart) */
static void same_name_declare(zt_block_def *def, const void *config) {
    (void)config;
    zt_block_param(def, "mlp.weight", zt_shape2(4, 4), 0, ZT_INIT_NORMAL, 0.02f);
}
static void nameless_declare(zt_block_def *def, const void *config) {
    (void)config;
    zt_block_param(def, NULL, zt_shape2(4, 4), 0, ZT_INIT_NORMAL, 0.02f);
}

static void unused_forward(zt_block_ctx *ctx, zt_tensor out, zt_tensor inp) { (void)ctx, (void)out, (void)inp; }
static void unused_backward(zt_block_ctx *ctx, zt_tensor dinp, zt_tensor dout, zt_tensor inp) {
    (void)ctx, (void)dinp, (void)dout, (void)inp;
}

TEST(parameters_need_names_of_their_own) {
    zt_block_type same = {0}, nameless = {0};
    same.name = "same", same.declare = same_name_declare;
    nameless.name = "nameless", nameless.declare = nameless_declare;
    same.forward = nameless.forward = unused_forward; /* init never runs them: it stops first */
    same.backward = nameless.backward = unused_backward;
    const zt_block_type *blocks[3] = {&same, &same, &same};
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.blocks = blocks, spec.n_blocks = 3, spec.hidden = 4, spec.vocab = 4, spec.max_seq = 4;
    zt_options o = zt_options_default();
    o.seq_len = 4, o.threads = 1;
    zt_engine *e = NULL;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_ERROR_INVALID && e == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "blocks 0 and 1 both declare a parameter named \"mlp.weight\"");
    blocks[1] = &nameless;
    CHECK(zt_init_options(&e, &spec, &o) == ZT_ERROR_INVALID && e == NULL);
    CHECK_STR_CONTAINS(zt_last_error(), "block 1 declares a parameter of 16 elements without a name");
}

/* reduce_lr_on_plateau in the engine: zt_step runs at the rate zt_schedule_observe moved, and the state rides in
   the checkpoint (a loaded engine moves on as the saved one does); a damaged state is refused by key */
TEST(plateau_schedule_follows_observations_across_a_checkpoint) {
    char dir[256], f[400];
    temp_dir(dir, sizeof dir, "ckpt_plateau");
    zt_options o = zt_options_default();
    char *argv[] = {(char *)"p", (char *)"--lr_scheduler_type", (char *)"reduce_lr_on_plateau", (char *)"--learning_rate",
                    (char *)"1e-3", (char *)"--lr_scheduler_kwargs", (char *)"{\"patience\": 1, \"factor\": 0.5}"};
    CHECK(zt_options_parse_args(&o, 7, argv) == ZT_OK);
    o.micro_batch = 1, o.seq_len = 8, o.threads = 2, o.max_steps = 20;
    zt_engine *e = tiny_engine_with(&o), *e2 = tiny_engine_with(&o);
    int32_t tok[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const double metrics[6] = {3.0, 2.0, 2.5, 2.4, 2.0, 2.1}; /* two without a gain after 2.0: halve, twice */
    const double want[6] = {1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 2.5e-4};
    for (int k = 0; k < 6; k++) {
        zt_schedule_observe(e, metrics[k]);
        zt_forward_backward(e, tok, NULL, NULL, 1);
        zt_step_info s = zt_step(e);
        CHECK_MSG(s.lr == (float)want[k], "after metric %d: lr %g, torch %g", k, (double)s.lr, want[k]);
        if (k == 3) CHECK(zt_save(e, dir, NULL) == ZT_OK);
    }
    CHECK(zt_load(e2, dir, NULL) == ZT_OK); /* from step 4: best 2.0, just halved to 5e-4 */
    zt_schedule_observe(e2, metrics[4]);
    zt_forward_backward(e2, tok, NULL, NULL, 1);
    CHECK_MSG(zt_step(e2).lr == 5e-4f, "the loaded state should go on as the saved one");
    zt_schedule_observe(e2, metrics[5]);
    zt_forward_backward(e2, tok, NULL, NULL, 1);
    CHECK_MSG(zt_step(e2).lr == 2.5e-4f, "the loaded state should halve where the saved one did");
    snprintf(f, sizeof f, "%s/global_step4/zt_state.json", dir);
    replace_in_file(f, "\"bad\": 0", "\"bad\":-1");
    CHECK(zt_load(e2, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "lr_plateau.bad is -1");
    replace_in_file(f, "\"bad\":-1", "\"bxd\": 1");
    CHECK(zt_load(e2, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "lr_plateau.bad is missing");
    zt_shutdown(e);
    zt_shutdown(e2);
}

TEST(model_sizes_beyond_the_kernels_are_refused) {
    const char *json = "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 1, \"hidden_size\": 8,"
                       " \"intermediate_size\": 270000, \"max_position_embeddings\": 8, \"vocab_size\": 8}";
    zt_model_config c;
    CHECK(zt_model_config_parse(&c, json, strlen(json), "big.json") == ZT_ERROR_UNSUPPORTED);
    CHECK_STR_CONTAINS(zt_last_error(), "\"intermediate_size\" is 270000; zt takes at most 200000");
    json = "{\"model_type\": \"gpt2\", \"n_layer\": 4294967296, \"n_head\": 1, \"n_embd\": 8, \"n_positions\": 8, \"vocab_size\": 8}";
    CHECK(zt_model_config_parse(&c, json, strlen(json), "big.json") == ZT_ERROR_UNSUPPORTED);
    CHECK_STR_CONTAINS(zt_last_error(), "\"n_layer\" is 4294967296");
}

/* what a killed save left is cleared by the next save of that step: a global_stepN.old beside global_stepN (it
   blocked the rename before); `latest` naming "." or "..", empty, or naming what is not there, each said so; a
   directory where zt_state.json should be */
TEST(checkpoint_save_clears_what_a_killed_save_left) {
    char dir[256], f[400];
    temp_dir(dir, sizeof dir, "ckpt_killed");
    zt_engine *e = tiny_engine(1, 8, -1, ZT_PRECISION_FP32);
    CHECK(zt_save(e, dir, NULL) == ZT_OK);
    snprintf(f, sizeof f, "%s/global_step0.old", dir);
    mkdir(f, 0755);
    snprintf(f, sizeof f, "%s/global_step0.old/zt_state.json", dir);
    write_bytes(f, "{}", 2);
    CHECK_MSG(zt_save(e, dir, NULL) == ZT_OK, "%s", zt_last_error());
    snprintf(f, sizeof f, "%s/global_step0.old", dir);
    CHECK(access(f, F_OK) != 0);
    CHECK(zt_load(e, dir, NULL) == ZT_OK);
    snprintf(f, sizeof f, "%s/latest", dir);
    write_bytes(f, "..\n", 3);
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "should name a checkpoint (global_stepN), found \"..\"");
    write_bytes(f, "", 0);
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "latest is empty; it should name a checkpoint");
    write_bytes(f, " global_step9 \n", 15);
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_FORMAT);
    CHECK_STR_CONTAINS(zt_last_error(), "latest names global_step9, which is not there");
    write_bytes(f, "\tglobal_step0\r\n", 15);
    CHECK_MSG(zt_load(e, dir, NULL) == ZT_OK, "%s", zt_last_error());
    snprintf(f, sizeof f, "%s/global_step0/zt_state.json", dir); /* a directory where a file should be */
    unlink(f);
    mkdir(f, 0755);
    CHECK(zt_load(e, dir, NULL) == ZT_ERROR_IO);
    CHECK_STR_CONTAINS(zt_last_error(), "zt_state.json is a directory; a file was expected");
    zt_shutdown(e);
}

/* an export of a model made in memory (no config.json to copy) says that transformers needs one */
static char export_log[1024];
static void export_capture(zt_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    snprintf(export_log + strlen(export_log), sizeof export_log - strlen(export_log), "%s\n", msg);
}

TEST(export_without_config_json_says_so) {
    char dir[256], f[400];
    temp_dir(dir, sizeof dir, "export_memory");
    zt_engine *e = tiny_engine(1, 8, -1, ZT_PRECISION_FP32);
    export_log[0] = 0;
    zt_set_log(export_capture, NULL);
    zt_result r = zt_export_hf(e, dir, ZT_F32);
    zt_set_log(NULL, NULL);
    zt_shutdown(e);
    CHECK_MSG(r == ZT_OK, "%s", zt_last_error());
    CHECK_STR_CONTAINS(export_log, "model.safetensors written without a config.json");
    snprintf(f, sizeof f, "%s/config.json", dir);
    CHECK(access(f, F_OK) != 0);
}
