/* examples/train.c - zt_train: trains, evaluates or samples a model from the command line.
   A thin program over the zt API: the flags that configure the engine are TrainingArguments names
   (zt_options_parse_args); this file adds data, checkpoints, logging and sampling.

       zt_train --model examples/models/byte-small --data "/usr/share/common-licenses/GPL*" \
                --data_format text --max_steps 600 --output_dir out
       zt_train --model DIR --data val.bin --eval
       zt_train --model DIR --resume out --sample 200 --prompt "The "
       zt_train --model DIR --resume out --sample 200 --chat "What is ZeRO?"   (a reply, through the chat template)

   Output: one line per logged step, metrics.jsonl and loss.svg in --output_dir (and with --report_to tensorboard
   an event file for TensorBoard). During training, I/O
   goes through write() on buffers set aside here, and nothing is allocated (a test checks it). */
#define _POSIX_C_SOURCE 200809L /* open flags and write() under -std=c11 */
#include "../zt.h"
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

typedef struct args {
    const char *model, *config, *config_file, *data, *val_data, *mask, *val_mask, *output_dir, *resume, *prompt, *chat,
        *export_dir, *export_dtype;
    zt_data_format format;
    int32_t eot;
    int64_t save_steps, save_total_limit, eval_steps, logging_steps, sample, top_k;
    double share[3]; /* --save_steps, --eval_steps, --logging_steps below 1: the Trainer's share of the run's steps */
    double num_train_epochs, temperature, top_p;
    int eval, do_eval, print_config, plan, script_switch; /* script_switch: --do_train and the like, taken and unused */
    int sampling_given; /* --temperature, --top_k or --top_p was given: generation_config.json's do not stand */
    int logging_first_step, overwrite;
    const char *report_to, *logging_dir;
    const char *fit;
    const char *save_strategy, *eval_strategy, *logging_strategy; /* the Trainer's "no", "steps", "epoch" ("best") */
    const char *metric_for_best_model;
    int greater_is_better, load_best_model_at_end; /* greater_is_better -1: unset, decided by the metric's name */
    /* more TrainingArguments: acted on, taken because zt already behaves so, or refused where they would differ */
    int64_t data_seed, eval_batch;
    int eval_on_start, use_cpu, save_safetensors, save_only_model, save_on_each_node, push_to_hub, auto_batch;
    int ignore_data_skip, activation_ckpt, avg_tokens, jit_ckpt, drop_last, bf16_eval, fp16_eval, full_eval;
    double eval_delay;
    const char *debug, *sampling, *act_kwargs, *fsdp, *fsdp_config, *accel_config, *par_config;
    const char *log_level, *script_value; /* script_value: values taken and unused, as script_switch */
} args;

typedef struct flag { const char *name, *help, *def; int kind; size_t off; } flag;
enum { F_STR, F_INT, F_NUM, F_BOOL, F_FORMAT, F_STEPS };
#define FLAG(n, k, field, def, help) {n, help, def, k, offsetof(args, field)}
static const flag FLAGS[] = {
    FLAG("model", F_STR, model, "", "a Hugging Face config.json or its directory"),
    FLAG("model_name_or_path", F_STR, model, "", "the same as --model (the Transformers scripts' name; a local directory)"),
    FLAG("config", F_STR, config, "", "a DeepSpeed JSON config (DeepSpeed " ZT_DEEPSPEED_VERSION "'s meaning)"),
    FLAG("deepspeed", F_STR, config, "", "the same as --config (the Trainer's name; bare, as the deepspeed launcher's switch, it does nothing)"),
    FLAG("deepspeed_config", F_STR, config, "", "the same as --config (DeepSpeed's name)"),
    FLAG("config_file", F_STR, config_file, "", "an Accelerate config (accelerate config's YAML): ranks, precision, DeepSpeed"),
    FLAG("print_config", F_BOOL, print_config, "false", "print the effective configuration as JSON and stop"),
    FLAG("plan", F_BOOL, plan, "false", "print each rank's memory for --num_processes ranks and stop (nothing is allocated)"),
    FLAG("fit", F_STR, fit, "", "with --plan: the cheapest settings that fit this much device memory per rank (e.g. 80GiB)"),
    FLAG("data", F_STR, data, "", "token files: a file, a glob or a comma-separated list"),
    FLAG("val_data", F_STR, val_data, "", "validation token files"),
    FLAG("data_format", F_FORMAT, format, "auto", "auto (llm.c header; text for *.txt), u16, u32 or text"),
    FLAG("data_dtype", F_FORMAT, format, "auto", "the same as --data_format: u16 or u32 for headerless files"),
    FLAG("mask", F_STR, mask, "", "mask files, one byte per token (0: not a target); --eval reads them too"),
    FLAG("val_mask", F_STR, val_mask, "", "mask files for --val_data, as --mask for --data"),
    FLAG("eot", F_INT, eot, "-1", "end-of-text token: packed documents restart after it"),
    FLAG("num_train_epochs", F_NUM, num_train_epochs, "0", "stop after this many passes, 2.5 too (0: --max_steps decides)"),
    FLAG("output_dir", F_STR, output_dir, "out", "checkpoints, metrics.jsonl and loss.svg"),
    FLAG("save_steps", F_STEPS, save_steps, "0", "save a checkpoint every N steps (below 1: that share of the run's steps, rounded up; 0: at the end only)"),
    FLAG("save_strategy", F_STR, save_strategy, "steps", "steps: every --save_steps and at the end; epoch: after each pass over --data and at the end; best: when --metric_for_best_model improves; no: no checkpoints"),
    FLAG("save_total_limit", F_INT, save_total_limit, "0", "keep only the newest N checkpoints, and the best (0: all)"),
    FLAG("metric_for_best_model", F_STR, metric_for_best_model, "", "loss (or eval_loss): the evaluation that names the best checkpoint (set by --load_best_model_at_end)"),
    FLAG("greater_is_better", F_BOOL, greater_is_better, "", "a higher metric is better (unset: false, as the metric's name ends in loss)"),
    FLAG("load_best_model_at_end", F_BOOL, load_best_model_at_end, "false", "at the end, load the best checkpoint before --export and --sample (save and eval strategies must match)"),
    FLAG("resume", F_STR, resume, "", "continue from a checkpoint directory (its `latest`) or a checkpoint"),
    FLAG("resume_from_checkpoint", F_STR, resume, "", "the same as --resume (the Trainer's name)"),
    FLAG("export", F_STR, export_dir, "", "write a Hugging Face model directory here at the end (config.json, model.safetensors)"),
    FLAG("export_dtype", F_STR, export_dtype, "", "f32, bf16 or f16 for --export (default: the training precision)"),
    FLAG("eval_steps", F_STEPS, eval_steps, "0", "evaluate on --val_data every N steps (below 1: that share of the run's steps, rounded up)"),
    FLAG("eval_strategy", F_STR, eval_strategy, "", "steps: every --eval_steps (or --logging_steps); epoch: after each pass; no (unset: steps if --eval_steps is given)"),
    FLAG("evaluation_strategy", F_STR, eval_strategy, "", "the same as --eval_strategy (its name before transformers 4.46)"),
    FLAG("logging_steps", F_STEPS, logging_steps, "10", "print a step line every N steps (below 1: that share of the run's steps, rounded up; 0: none; the Trainer refuses 0)"),
    FLAG("logging_strategy", F_STR, logging_strategy, "steps", "steps: every --logging_steps; epoch: after each pass; no: no step lines (metrics.jsonl has every step)"),
    FLAG("eval", F_BOOL, eval, "false", "no training: the mean next-token loss over --data"),
    FLAG("sample", F_INT, sample, "0", "generate N tokens after --prompt and print them"),
    FLAG("prompt", F_STR, prompt, "", "the prompt for --sample (bytes for byte-level models)"),
    FLAG("chat", F_STR, chat, "", "a user message for --sample, through the model's chat template; the reply ends at its eos_token"),
    FLAG("temperature", F_NUM, temperature, "0.8", "sampling temperature (0: greedy); without it, --top_k and --top_p, the model's generation_config.json decides when it has one"),
    FLAG("top_k", F_INT, top_k, "40", "sample among the k likeliest tokens (0: all)"),
    FLAG("top_p", F_NUM, top_p, "0.95", "sample within this probability mass"),
    /* what Transformers' example scripts pass and the Trainer itself does not act on */
    FLAG("do_train", F_BOOL, script_switch, "false", "taken as the Transformers scripts pass it (zt trains when given --data)"),
    FLAG("do_eval", F_BOOL, do_eval, "false", "as run_clm.py's: after training, evaluate on --val_data and write eval_results.json with the perplexity (with --eval: taken)"),
    FLAG("overwrite_output_dir", F_BOOL, overwrite, "false", "train into an --output_dir an earlier run left checkpoints or metrics in (without it, or --resume, that is refused); its metrics.jsonl starts over"),
    FLAG("report_to", F_STR, report_to, "none", "tensorboard (or all): the Trainer's scalars in a TensorBoard event file; metrics.jsonl and loss.svg are always written; other reporters (a comma-separated list) are not built"),
    FLAG("data_seed", F_INT, data_seed, "-1", "the seed of --data's shuffle (-1: --seed)"),
    FLAG("eval_on_start", F_BOOL, eval_on_start, "false", "evaluate on --val_data before the first step (step 0)"),
    FLAG("use_cpu", F_BOOL, use_cpu, "false", "the CPU backend (as --backend cpu)"),
    FLAG("log_level", F_STR, log_level, "passive", "the library's messages: debug, info, warning, error or critical (passive: info)"),
    FLAG("per_device_eval_batch_size", F_INT, eval_batch, "8", "the Trainer's evaluation batches: the loss is each batch's mean, weighted by its rows (evaluation runs --per_device_train_batch_size rows at a time, the arenas' size)"),
    FLAG("eval_accumulation_steps", F_STR, script_value, "", "taken: the evaluation sums its loss as it goes"),
    FLAG("logging_first_step", F_BOOL, logging_first_step, "false", "--report_to tensorboard logs step 1 too (zt's step lines always show it)"),
    FLAG("include_tokens_per_second", F_BOOL, script_switch, "false", "taken: every step line and metrics.jsonl have tokens per second"),
    FLAG("skip_memory_metrics", F_BOOL, script_switch, "true", "taken: zt reports its arenas after the first step and in metrics.jsonl"),
    FLAG("full_determinism", F_BOOL, script_switch, "false", "taken: zt is deterministic always (the same bits for the same run)"),
    FLAG("dataloader_num_workers", F_STR, script_value, "0", "taken: zt reads --data from a memory map, without workers"),
    FLAG("dataloader_pin_memory", F_BOOL, script_switch, "true", "taken: zt's copies go through its pinned arena"),
    FLAG("remove_unused_columns", F_BOOL, script_switch, "true", "taken: token files have no columns"),
    FLAG("group_by_length", F_BOOL, script_switch, "false", "taken: zt's rows all have --seq_len tokens"),
    FLAG("gradient_checkpointing_kwargs", F_STR, script_value, "", "taken: zt's checkpointing has no arguments (use_reentrant and the like)"),
    FLAG("torch_compile", F_BOOL, script_switch, "false", "taken: there is no torch to compile"),
    FLAG("ddp_find_unused_parameters", F_BOOL, script_switch, "false", "taken: every parameter gets a gradient in zt's models"),
    FLAG("ddp_backend", F_STR, script_value, "", "taken: zt chooses (NCCL between GPUs, its own transport between processes)"),
    FLAG("logging_dir", F_STR, logging_dir, "", "TensorBoard's directory with --report_to tensorboard (transformers 4's flag; TENSORBOARD_LOGGING_DIR, transformers 5's, wins); default OUTPUT_DIR/runs/MonDD_HH-MM-SS_HOST"),
    FLAG("run_name", F_STR, script_value, "", "taken: for reporters zt does not build"),
    FLAG("disable_tqdm", F_BOOL, script_switch, "false", "taken: zt prints step lines, not progress bars"),
    FLAG("prediction_loss_only", F_BOOL, script_switch, "false", "taken: zt's evaluation computes only the loss"),
    FLAG("eval_delay", F_NUM, eval_delay, "0", "no evaluation before this step (or epoch, with --eval_strategy epoch)"),
    FLAG("ignore_data_skip", F_BOOL, ignore_data_skip, "false", "with --resume: read the checkpoint's pass over --data from its start, not from where it was"),
    FLAG("train_sampling_strategy", F_STR, sampling, "random", "random: --data's windows shuffled (by --data_seed); sequential: in order; group_by_length as random (equal rows)"),
    FLAG("activation_checkpointing", F_BOOL, activation_ckpt, "", "--gradient_checkpointing's name in transformers 5 (given, it decides)"),
    FLAG("activation_checkpointing_kwargs", F_STR, act_kwargs, "", "taken without every_n_layers (or with 1): zt checkpoints every block"),
    FLAG("average_tokens_across_devices", F_BOOL, avg_tokens, "true", "the loss's mean is over every rank's tokens (false is refused)"),
    FLAG("bf16_full_eval", F_BOOL, bf16_eval, "false", "with --eval: evaluate in bf16; in training zt evaluates in the training precision (then --bf16 is needed)"),
    FLAG("fp16_full_eval", F_BOOL, fp16_eval, "false", "with --eval: evaluate in fp16; in training zt evaluates in the training precision (then --fp16 is needed)"),
    FLAG("torch_compile_backend", F_STR, script_value, "", "taken: there is no torch to compile"),
    FLAG("torch_compile_mode", F_STR, script_value, "", "taken: there is no torch to compile"),
    FLAG("use_liger_kernel", F_BOOL, script_switch, "false", "taken: zt's norms, activations and loss are fused kernels already"),
    FLAG("liger_kernel_config", F_STR, script_value, "", "taken: zt's norms, activations and loss are fused kernels already"),
    FLAG("use_cache", F_BOOL, script_switch, "false", "taken: training keeps no key-value cache"),
    FLAG("torch_empty_cache_steps", F_STR, script_value, "", "taken: zt's arenas are sized once and never freed"),
    FLAG("log_on_each_node", F_BOOL, script_switch, "true", "taken: rank 0 prints"),
    FLAG("log_level_replica", F_STR, script_value, "warning", "taken: ranks other than 0 print warnings and errors, its default"),
    FLAG("logging_nan_inf_filter", F_BOOL, script_switch, "true", "taken: zt logs and compares each loss as it is, a NaN too (the Trainer's false)"),
    FLAG("include_num_input_tokens_seen", F_STR, script_value, "no", "taken: step lines and metrics.jsonl have each step's tokens per second"),
    FLAG("project", F_STR, script_value, "", "taken: for reporters zt does not build"),
    FLAG("trackio_space_id", F_STR, script_value, "", "taken: for reporters zt does not build"),
    FLAG("trackio_bucket_id", F_STR, script_value, "", "taken: for reporters zt does not build"),
    FLAG("trackio_static_space_id", F_STR, script_value, "", "taken: for reporters zt does not build"),
    FLAG("optim_target_modules", F_STR, script_value, "", "taken: the optimizer updates every trainable parameter"),
    FLAG("eval_do_concat_batches", F_BOOL, script_switch, "true", "taken: zt's evaluation keeps only the loss"),
    FLAG("eval_use_gather_object", F_BOOL, script_switch, "false", "taken: zt's evaluation keeps only the loss"),
    FLAG("include_for_metrics", F_STR, script_value, "", "taken: zt's evaluation keeps only the loss"),
    FLAG("batch_eval_metrics", F_BOOL, script_switch, "false", "taken: zt's evaluation keeps only the loss"),
    FLAG("hub_model_id", F_STR, script_value, "", "taken: zt does not reach the network"),
    FLAG("hub_token", F_STR, script_value, "", "taken: zt does not reach the network"),
    FLAG("hub_strategy", F_STR, script_value, "every_save", "taken: zt does not reach the network"),
    FLAG("hub_private_repo", F_BOOL, script_switch, "false", "taken: zt does not reach the network"),
    FLAG("hub_always_push", F_BOOL, script_switch, "false", "taken: zt does not reach the network"),
    FLAG("hub_revision", F_STR, script_value, "", "taken: zt does not reach the network"),
    FLAG("restore_callback_states_from_checkpoint", F_BOOL, script_switch, "false", "taken: zt_train has no callbacks"),
    FLAG("dataloader_persistent_workers", F_BOOL, script_switch, "false", "taken: zt reads --data from a memory map, without workers"),
    FLAG("dataloader_prefetch_factor", F_STR, script_value, "", "taken: zt reads --data from a memory map, without workers"),
    FLAG("dataloader_multiprocessing_context", F_STR, script_value, "", "taken: zt reads --data from a memory map, without workers"),
    FLAG("dataloader_in_order", F_BOOL, script_switch, "true", "taken: zt reads --data from a memory map, in order, without workers"),
    FLAG("dataloader_drop_last", F_BOOL, drop_last, "false", "a pass's last, shorter batch is kept (true is refused)"),
    FLAG("label_names", F_STR, script_value, "", "taken: token files have targets, not columns"),
    FLAG("length_column_name", F_STR, script_value, "length", "taken: token files have no columns"),
    FLAG("ddp_bucket_cap_mb", F_STR, script_value, "", "taken: zt's buckets are the DeepSpeed config's reduce_bucket_size"),
    FLAG("ddp_broadcast_buffers", F_BOOL, script_switch, "false", "taken: zt's models have no buffers to broadcast"),
    FLAG("ddp_static_graph", F_BOOL, script_switch, "false", "taken: zt's graph is static"),
    FLAG("debug", F_STR, debug, "", "tpu_metrics_debug is taken; underflow_overflow is refused (zt does not stop at the first inf)"),
    FLAG("do_predict", F_BOOL, script_switch, "false", "taken as the Transformers scripts pass it (see --sample)"),
    FLAG("enable_jit_checkpoint", F_BOOL, jit_ckpt, "false", "on SIGTERM: save at the end of the step, exit 143"),
    FLAG("fsdp", F_STR, fsdp, "", "refused: zt shards with ZeRO (a DeepSpeed config; stage 3 is FSDP's full shard)"),
    FLAG("fsdp_config", F_STR, fsdp_config, "", "refused: zt shards with ZeRO (a DeepSpeed config; stage 3 is FSDP's full shard)"),
    FLAG("accelerator_config", F_STR, accel_config, "", "refused: zt does not read it (--config_file takes Accelerate's YAML)"),
    FLAG("parallelism_config", F_STR, par_config, "", "refused: zt's parallelism is data parallel with ZeRO"),
    FLAG("save_safetensors", F_BOOL, save_safetensors, "true", "checkpoints and exports are safetensors (false is refused)"),
    FLAG("save_only_model", F_BOOL, save_only_model, "false", "refused if true: zt's checkpoints hold the optimizer's state, to resume"),
    FLAG("save_on_each_node", F_BOOL, save_on_each_node, "false", "refused if true: rank 0 writes checkpoints to a shared --output_dir"),
    FLAG("push_to_hub", F_BOOL, push_to_hub, "false", "refused if true: zt does not reach the network (--export writes the directory)"),
    FLAG("auto_find_batch_size", F_BOOL, auto_batch, "false", "refused if true: zt_train --plan --fit names a batch that fits instead"),
};
#define N_FLAGS (int)(sizeof FLAGS / sizeof FLAGS[0])

static int set_flag(args *a, const flag *f, const char *v) {
    void *p = (char *)a + f->off;
    char *end = NULL;
    switch (f->kind) {
    case F_STR: *(const char **)p = v; return 1;
    case F_INT: { /* the whole text an integer that fits */
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || errno == ERANGE) return 0;
        if (f->off != offsetof(args, eot)) return (*(int64_t *)p = x), 1;
        return x >= INT32_MIN && x <= INT32_MAX ? (*(int32_t *)p = (int32_t)x), 1 : 0;
    }
    case F_STEPS: { /* whole steps, or below 1 the Trainer's share of the run's steps (resolve_shares reads it) */
        double x = strtod(v, &end);
        if (!*v || *end || !isfinite(x) || (!(x > 0 && x < 1) && (x != floor(x) || fabs(x) > 1e18))) return 0;
        int k = f->off == offsetof(args, save_steps) ? 0 : f->off == offsetof(args, eval_steps) ? 1 : 2;
        a->share[k] = x > 0 && x < 1 ? x : 0;
        return (*(int64_t *)p = x > 0 && x < 1 ? 0 : (int64_t)x), 1;
    }
    case F_NUM: { /* a finite number */
        double x = strtod(v, &end);
        return *v && !*end && isfinite(x) ? (*(double *)p = x), 1 : 0;
    }
    case F_BOOL: { /* as HfArgumentParser reads a switch's value */
        static const char *const yes[] = {"true", "True", "TRUE", "t", "yes", "y", "1"};
        static const char *const no[] = {"false", "False", "FALSE", "f", "no", "n", "0"};
        for (int k = 0; k < 7; k++) {
            if (strcmp(v, yes[k]) == 0) return (*(int *)p = 1), 1;
            if (strcmp(v, no[k]) == 0) return (*(int *)p = 0), 1;
        }
        return 0;
    }
    case F_FORMAT: {
        static const char *names[] = {"auto", "llmc", "u16", "u32", "text"};
        for (int i = 0; i < 5; i++)
            if (strcmp(v, names[i]) == 0) return (*(zt_data_format *)p = (zt_data_format)i), 1;
        return 0;
    }
    }
    return 0;
}

static void usage(void) {
    printf("zt_train %s: train, evaluate or sample a transformer language model\n\nProgram flags:\n", ZT_VERSION_STRING);
    for (int i = 0; i < N_FLAGS; i++) printf("  --%-30s %s (default %s)\n", FLAGS[i].name, FLAGS[i].help, FLAGS[i].def);
    printf("\nTraining flags (Transformers TrainingArguments names):\n");
    zt_options_help(stdout);
    printf("\nLauncher flags (Accelerate's names; zt_launch takes them before the rest is read):\n");
    static const char *const launcher[][3] = {
        {"num_processes", "ranks in all (over --num_machines); above 1, this process starts them", "1"},
        {"num_machines", "machines the ranks are spread over", "1"},
        {"machine_rank", "this machine's place among them", "0"},
        {"main_process_ip", "machine 0's address, where the ranks meet over TCP", "127.0.0.1"},
        {"main_process_port", "its port", "29500"},
        {"rdzv_id", "the job's token on every machine (else ZT_JOB_TOKEN, or a hash of the arguments)", ""}};
    for (size_t i = 0; i < sizeof launcher / sizeof launcher[0]; i++)
        printf("  --%-30s %s (default %s)\n", launcher[i][0], launcher[i][1], launcher[i][2]);
}

/* --save_strategy, --eval_strategy and --logging_strategy: the Trainer's IntervalStrategy names, and its
   SaveStrategy "best"; an unset --eval_strategy is "steps" when --eval_steps is given. The best model follows
   the Trainer's rules: --metric_for_best_model is "loss" when --load_best_model_at_end asks for one, and loading
   the best checkpoint needs one saved at every evaluation (the same strategy, save steps a multiple of eval steps) */
static int strategies(args *a, zt_schedule schedule) {
    const char *const names[3] = {"save_strategy", "eval_strategy", "logging_strategy"};
    const char **values[3] = {&a->save_strategy, &a->eval_strategy, &a->logging_strategy};
    if (!*a->eval_strategy) a->eval_strategy = a->eval_steps > 0 || a->share[1] > 0 ? "steps" : "no";
    for (int i = 0; i < 3; i++) {
        const char *v = *values[i];
        if (strcmp(v, "no") == 0 || strcmp(v, "steps") == 0 || strcmp(v, "epoch") == 0) continue;
        if (i == 0 && strcmp(v, "best") == 0) continue;
        fprintf(stderr, "zt_train: --%s is no, steps or epoch%s, not \"%s\"\n", names[i], i == 0 ? " (or best)" : "", v);
        return 0;
    }
    int best = strcmp(a->save_strategy, "best") == 0;
    int follows = schedule == ZT_SCHED_REDUCE_ON_PLATEAU || schedule == ZT_SCHED_GREEDY; /* steps with the metric */
    if (!*a->metric_for_best_model && (a->load_best_model_at_end || follows)) a->metric_for_best_model = "loss";
    if (best && !*a->metric_for_best_model) {
        fprintf(stderr, "zt_train: --save_strategy best saves when --metric_for_best_model improves, and none was given "
                "(loss, or --load_best_model_at_end)\n");
        return 0;
    }
    const char *metric = a->metric_for_best_model;
    if (*metric && strcmp(metric, "loss") != 0 && strcmp(metric, "eval_loss") != 0) {
        fprintf(stderr, "zt_train: --metric_for_best_model is loss (or eval_loss), the one metric zt's evaluation "
                "computes, not \"%s\"\n", metric);
        return 0;
    }
    if (a->greater_is_better < 0) a->greater_is_better = 0; /* the metric's name ends in "loss" */
    if (strcmp(a->eval_strategy, "steps") == 0 && a->eval_steps <= 0 && a->share[1] == 0)
        a->eval_steps = a->logging_steps, a->share[1] = a->share[2];
    if (strcmp(a->eval_strategy, "no") != 0 && !*a->val_data && !a->eval) {
        fprintf(stderr, "zt_train: --eval_strategy %s evaluates on --val_data, and none was given\n", a->eval_strategy);
        return 0;
    }
    if (strcmp(a->eval_strategy, "steps") == 0 && a->eval_steps <= 0 && a->share[1] == 0) {
        fprintf(stderr, "zt_train: --eval_strategy steps needs --eval_steps (or --logging_steps) above 0\n");
        return 0;
    }
    const char *wants = best ? "--save_strategy best" : a->load_best_model_at_end ? "--load_best_model_at_end"
                      : follows ? zt_schedule_name(schedule) : NULL;
    if (wants && strcmp(a->eval_strategy, "no") == 0 && *a->data && !a->eval) {
        fprintf(stderr, "zt_train: %s follows the evaluations, and --eval_strategy is no (give --val_data with "
                "--eval_steps or --eval_strategy epoch)\n", wants);
        return 0;
    }
    if (a->load_best_model_at_end && !best && strcmp(a->save_strategy, a->eval_strategy) != 0) {
        fprintf(stderr, "zt_train: --load_best_model_at_end needs the save and eval strategies to match (or --save_strategy "
                "best), found --save_strategy %s and --eval_strategy %s\n", a->save_strategy, a->eval_strategy);
        return 0;
    }
    if (a->load_best_model_at_end && strcmp(a->save_strategy, "steps") == 0 && a->save_steps <= 0 && a->share[0] == 0) {
        if (a->share[1] > 0)
            fprintf(stderr, "zt_train: --load_best_model_at_end loads a checkpoint saved at an evaluation, and --save_steps "
                    "0 saves only at the end: give a multiple of --eval_steps %g (a share too)\n", a->share[1]);
        else
            fprintf(stderr, "zt_train: --load_best_model_at_end loads a checkpoint saved at an evaluation, and --save_steps "
                    "0 saves only at the end: give a multiple of --eval_steps (%lld)\n", (long long)a->eval_steps);
        return 0;
    }
    if (a->load_best_model_at_end && strcmp(a->save_strategy, "steps") == 0 && (a->share[0] > 0) != (a->share[1] > 0)) {
        fprintf(stderr, "zt_train: --load_best_model_at_end needs --save_steps to be a multiple of --eval_steps, which a "
                "share of the steps and a number of steps cannot promise: give both as shares or both as steps\n");
        return 0;
    }
    if (a->load_best_model_at_end && strcmp(a->save_strategy, "steps") == 0 && !a->share[0] &&
        a->save_steps % a->eval_steps != 0) {
        fprintf(stderr, "zt_train: --load_best_model_at_end needs --save_steps to be a round multiple of --eval_steps, "
                "found %lld and %lld\n", (long long)a->save_steps, (long long)a->eval_steps);
        return 0;
    }
    return 1;
}

/* --save_steps, --eval_steps and --logging_steps below 1, once the run's steps are known: ceil(max_steps x share),
   as the Trainer's state computes them; two shares under --load_best_model_at_end must still save at every
   evaluation (the Trainer checks the shares alone, and 0.1 and 0.2 of 15 steps evaluate every 2 and save every 3) */
static int resolve_shares(args *a, int64_t max_steps) {
    int64_t *steps[3] = {&a->save_steps, &a->eval_steps, &a->logging_steps};
    for (int k = 0; k < 3; k++)
        if (a->share[k] > 0) *steps[k] = (int64_t)fmax(1.0, ceil((double)max_steps * a->share[k])); /* 0 steps: 1 */
    if (a->load_best_model_at_end && strcmp(a->save_strategy, "steps") == 0 && a->share[0] > 0 &&
        a->save_steps % a->eval_steps != 0) {
        fprintf(stderr, "zt_train: --load_best_model_at_end needs --save_steps to be a round multiple of --eval_steps: "
                "%g and %g of %lld steps are %lld and %lld\n", a->share[0], a->share[1], (long long)max_steps,
                (long long)a->save_steps, (long long)a->eval_steps);
        return 0;
    }
    return 1;
}

/* the TrainingArguments zt takes at their defaults only: one sentence for one that would change the run; and
   --log_level, as the Trainer names the levels (its "passive" leaves them as they are: info and up) */
static int log_max = ZT_LOG_INFO;
static void log_filtered(zt_log_level level, const char *msg, void *user) {
    static const char *const prefix[] = {"error: ", "warning: ", "", "debug: "};
    (void)user;
    if ((int)level <= log_max) fprintf(stderr, "%s%s\n", prefix[level], msg);
}

/* --debug: the Trainer's DebugOption names, separated by spaces (another is its ValueError) */
static int debug_options(const char *v) {
    for (const char *w = v; *w;) {
        size_t n = strcspn(w, " ");
        if (n && !(n == 18 && !strncmp(w, "underflow_overflow", n)) && !(n == 17 && !strncmp(w, "tpu_metrics_debug", n)))
            return 0;
        w += n + (w[n] == ' ');
    }
    return 1;
}

/* every_n_layers in --activation_checkpointing_kwargs ({"every_n_layers": N}); 1 when it is not there */
static double every_n_layers(const char *json) {
    const char *k = strstr(json, "\"every_n_layers\"");
    if (!k) return 1;
    k += strlen("\"every_n_layers\"");
    k += strspn(k, " \t\r\n");
    if (*k != ':') return -1;
    char *end = NULL;
    double n = strtod(k + 1, &end);
    return end == k + 1 ? -1 : n;
}

/* --export_dtype's names: 1 and *dt, or 0 for another */
static int export_dtype(const char *s, zt_dtype *dt) {
    if (strcmp(s, "f32") == 0 || strcmp(s, "fp32") == 0) return (*dt = ZT_F32), 1;
    if (strcmp(s, "bf16") == 0) return (*dt = ZT_BF16), 1;
    if (strcmp(s, "f16") == 0 || strcmp(s, "fp16") == 0) return (*dt = ZT_F16), 1;
    return 0;
}

static int trainer_flags(args *a) {
    const char *why = a->save_only_model ? "--save_only_model: zt's checkpoints hold the optimizer's state too, so that "
                                           "--resume continues bit for bit"
                    : a->save_on_each_node ? "--save_on_each_node: rank 0 writes each checkpoint, to an --output_dir every "
                                             "node sees"
                    : a->push_to_hub ? "--push_to_hub: zt does not reach the network; --export DIR writes the Hugging Face "
                                       "directory to upload"
                    : a->auto_batch ? "--auto_find_batch_size: zt sizes its memory before training; zt_train --plan --fit "
                                      "80GiB names the settings that fit"
                    : !a->save_safetensors ? "--save_safetensors false: zt writes safetensors only"
                    : a->eval_batch < 1 ? "--per_device_eval_batch_size must be at least 1"
                    : *a->fsdp || *a->fsdp_config ? "--fsdp: zt shards with ZeRO; give a DeepSpeed config (stage 3 is "
                                                    "FSDP's full shard, e.g. examples/configs/zero3.json)"
                    : *a->accel_config ? "--accelerator_config: zt does not read it; --config_file takes Accelerate's YAML"
                    : *a->par_config ? "--parallelism_config: zt's parallelism is data parallel, with ZeRO"
                    : !a->avg_tokens ? "--average_tokens_across_devices false: zt's loss is the mean over every rank's "
                                       "tokens, as the Trainer's default"
                    : a->drop_last ? "--dataloader_drop_last: zt keeps a pass's last, shorter batch"
                    : strcmp(a->sampling, "batch_rebalance") == 0
                        ? "--train_sampling_strategy batch_rebalance is not built (random, sequential and group_by_length are)"
                    : strcmp(a->sampling, "random") && strcmp(a->sampling, "sequential") && strcmp(a->sampling, "group_by_length")
                        ? "--train_sampling_strategy is random, sequential, group_by_length or batch_rebalance"
                    : every_n_layers(a->act_kwargs) != 1
                        ? "--activation_checkpointing_kwargs: zt checkpoints every block (every_n_layers 1)"
                    : !debug_options(a->debug)
                        ? "--debug takes the Trainer's options, separated by spaces: underflow_overflow, tpu_metrics_debug"
                    : strstr(a->debug, "underflow_overflow")
                        ? "--debug underflow_overflow: zt does not stop at the first inf or NaN (a NaN loss shows in the step lines)"
                    : a->eval_on_start && !*a->val_data ? "--eval_on_start evaluates on --val_data, and none was given"
                    : *a->chat && a->sample <= 0 ? "--chat needs --sample N, the most tokens of the reply"
                    : NULL;
    if (why) return fprintf(stderr, "zt_train: %s\n", why), 0;
    const struct { const char *name; double v, lo, hi; } range[] = { /* the numbers zt_train reads itself */
        {"save_steps", (double)a->save_steps, 0, 1e18}, {"save_total_limit", (double)a->save_total_limit, 0, 1e18},
        {"eval_steps", (double)a->eval_steps, 0, 1e18}, {"logging_steps", (double)a->logging_steps, 0, 1e18},
        {"sample", (double)a->sample, 0, 1 << 24}, {"top_k", (double)a->top_k, 0, INT32_MAX},
        {"per_device_eval_batch_size", (double)a->eval_batch, 1, 1 << 30},
        {"data_seed", (double)a->data_seed, -1, 1e19}, {"eot", (double)a->eot, -1, INT32_MAX},
        {"num_train_epochs", a->num_train_epochs, 0, 1e9}, {"eval_delay", a->eval_delay, 0, 1e18},
        {"temperature", a->temperature, 0, 1e6}, {"top_p", a->top_p, 1e-9, 1}};
    for (size_t i = 0; i < sizeof range / sizeof range[0]; i++)
        if (!(range[i].v >= range[i].lo && range[i].v <= range[i].hi))
            return fprintf(stderr, "zt_train: --%s is %.10g; it takes %s%.10g to %.10g\n", range[i].name, range[i].v,
                           range[i].lo == 1e-9 ? "more than " : "", range[i].lo == 1e-9 ? 0.0 : range[i].lo, range[i].hi), 0;
    zt_dtype dt;
    if (*a->export_dtype && !export_dtype(a->export_dtype, &dt))
        return fprintf(stderr, "zt_train: --export_dtype is f32, bf16 or f16, not \"%s\"\n", a->export_dtype), 0;
    if (a->bf16_eval && a->fp16_eval) return fprintf(stderr, "zt_train: --bf16_full_eval and --fp16_full_eval: one of them\n"), 0;
    a->full_eval = a->bf16_eval ? 1 : a->fp16_eval ? 2 : 0;
    static const char *const levels[] = {"passive", "info", "debug", "warning", "error", "critical"};
    static const int max[] = {ZT_LOG_INFO, ZT_LOG_INFO, ZT_LOG_DEBUG, ZT_LOG_WARN, ZT_LOG_ERROR, ZT_LOG_ERROR};
    for (int i = 0; i < 6; i++)
        if (strcmp(a->log_level, levels[i]) == 0) return log_max = max[i], 1;
    fprintf(stderr, "zt_train: --log_level is debug, info, warning, error, critical or passive, not \"%s\"\n", a->log_level);
    return 0;
}

/* splits argv: our flags into `a`, the engine's into eargv; 0 on a bad flag (message printed) */
static int parse(int argc, char **argv, args *a, int *eargc, char **eargv) {
    for (int i = 0; i < N_FLAGS; i++)
        if (FLAGS[i].kind == F_BOOL && !*FLAGS[i].def) *(int *)((char *)a + FLAGS[i].off) = -1; /* unset */
        else set_flag(a, &FLAGS[i], FLAGS[i].def);
    *eargc = 1;
    eargv[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            usage();
            exit(0);
        }
        if (strncmp(s, "--", 2) != 0) {
            fprintf(stderr, "zt_train: unexpected argument \"%s\": flags start with -- (see --help)\n", s);
            return 0;
        }
        const char *name = s + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const flag *f = NULL;
        for (int k = 0; k < N_FLAGS; k++)
            if (strlen(FLAGS[k].name) == n && strncmp(FLAGS[k].name, name, n) == 0) f = &FLAGS[k];
        if (!f) {
            int takes = 0;
            if (!zt_options_is_flag(name, &takes)) {
                fprintf(stderr, "zt_train: unknown flag --%.*s (see --help)\n", (int)n, name);
                return 0;
            }
            eargv[(*eargc)++] = argv[i];
            if (takes == 1 && !eq && i + 1 < argc) eargv[(*eargc)++] = argv[++i];
            if (takes == 2 && !eq && i + 1 < argc && argv[i + 1][0] != '-') eargv[(*eargc)++] = argv[++i]; /* --bf16 True */
            continue;
        }
        if (!eq && !strcmp(f->name, "deepspeed") && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)))
            continue; /* DeepSpeed's own switch (deepspeed train.py --deepspeed --deepspeed_config ds.json) */
        const char *v = eq                   ? eq + 1
                        : f->kind == F_BOOL  ? (i + 1 < argc && argv[i + 1][0] != '-' ? argv[++i] : "true")
                        : i + 1 < argc       ? argv[++i]
                                             : NULL;
        a->sampling_given |= f->off == offsetof(args, temperature) || f->off == offsetof(args, top_k) ||
                             f->off == offsetof(args, top_p);
        if (!v || !set_flag(a, f, v)) {
            if (v && f->kind == F_STEPS)
                fprintf(stderr, "zt_train: flag --%s takes whole steps or, below 1, a share of the run's steps; found "
                        "\"%s\"\n", f->name, v);
            else
                fprintf(stderr, "zt_train: flag --%s: bad or missing value%s%s%s\n", f->name, v ? " \"" : "", v ? v : "",
                        v ? "\"" : "");
            return 0;
        }
    }
    return 1;
}

/* mkdir -p, as the Trainer makes its output_dir: 1 when path is a directory this process can write */
static int make_dirs(const char *path) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) return errno = ENAMETOOLONG, 0;
    for (char *c = p + 1; *c; c++) {
        if (*c != '/') continue;
        *c = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) return 0;
        *c = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST) return 0;
    struct stat st;
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) return errno = ENOTDIR, 0;
    return access(p, W_OK) == 0;
}

/* an --output_dir to train into: a directory (or none yet), and not one an earlier run left its checkpoints or
   metrics in, unless --resume continues that run or --overwrite_output_dir writes over it (the Transformers scripts
   refuse a used output_dir so); 0 with a message */
static int output_dir_ok(const args *a) {
    if (strlen(a->output_dir) + 256 >= 4096) /* the deepest file below it: TensorBoard's, a checkpoint's in its .tmp */
        return fprintf(stderr, "zt_train: --output_dir is %zu bytes long; zt_train writes files up to 256 bytes below it, "
                       "and a path holds at most 4095\n", strlen(a->output_dir)), 0;
    struct stat st;
    if (stat(a->output_dir, &st) != 0) return 1; /* made when training starts */
    if (!S_ISDIR(st.st_mode)) return fprintf(stderr, "zt_train: --output_dir %s is a file, not a directory\n", a->output_dir), 0;
    if (*a->resume || a->overwrite == 1) return 1;
    char path[4200], found[300] = "";
    snprintf(path, sizeof path, "%s/latest", a->output_dir);
    if (access(path, F_OK) == 0) snprintf(found, sizeof found, "`latest`");
    snprintf(path, sizeof path, "%s/metrics.jsonl", a->output_dir);
    if (!*found && access(path, F_OK) == 0) snprintf(found, sizeof found, "metrics.jsonl");
    DIR *dir = opendir(a->output_dir);
    for (struct dirent *de; !*found && dir && (de = readdir(dir)) != NULL;) {
        long long step;
        char rest;
        if (sscanf(de->d_name, "global_step%lld%c", &step, &rest) == 1) snprintf(found, sizeof found, "%s", de->d_name);
    }
    if (dir) closedir(dir);
    if (!*found) return 1;
    if (strcmp(found, "metrics.jsonl") == 0) /* no checkpoint: nothing to resume */
        fprintf(stderr, "zt_train: --output_dir %s holds an earlier run (its metrics.jsonl, and no checkpoint to resume): "
                "--overwrite_output_dir trains a new one over it, or give another --output_dir\n", a->output_dir);
    else
        fprintf(stderr, "zt_train: --output_dir %s holds an earlier run (%s): --resume %s continues it, "
                "--overwrite_output_dir trains a new one over it\n", a->output_dir, found, a->output_dir);
    return 0;
}

static int rank = 0, world = 1; /* with --num_processes, this process's place among the ranks */
static int deepspeed; /* a DeepSpeed config (--deepspeed, or an Accelerate config's plugin) drives the run */

static int fail(const char *what) {
    char host[64] = "";
    if (world > 1) gethostname(host, sizeof host - 1);
    if (world > 1) fprintf(stderr, "zt_train: rank %d on %s: ", rank, host);
    else fprintf(stderr, "zt_train: ");
    fprintf(stderr, "%s%s%s\n", what ? what : "", what ? ": " : "", zt_last_error());
    return 1;
}

/* ---- outputs that are written while training: fixed buffers, write() ---- */

#define MAX_POINTS 4096
static float train_curve[MAX_POINTS][2], val_curve[MAX_POINTS][2];
static int n_train, n_val;
static char line[1 << 12], svg[1 << 20];

/* a whole file, or a line appended to one, so that a failure (a full disk) loses nothing written before: a whole file
   goes to NAME.tmp and is renamed over the old one when it is all there; a line cut short is cut off again. A file
   that cannot be written is said once (a full disk would say it every step); training goes on. */
static void write_file(const char *dir, const char *name, const char *text, size_t n, int append) {
    static char warned[8][32]; /* the files said so far */
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name), snprintf(tmp, sizeof tmp, "%s.tmp", path);
    errno = 0;
    int fd = open(append ? path : tmp, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
    off_t end = fd >= 0 && append ? lseek(fd, 0, SEEK_END) : 0;
    while (fd >= 0 && n > 0) {
        ssize_t w = write(fd, text, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        text += w, n -= (size_t)w;
    }
    int err = fd < 0 || n > 0 ? (errno ? errno : ENOSPC) : 0;
    if (fd >= 0 && err && append && ftruncate(fd, end) != 0) err = errno; /* no half line */
    if (fd >= 0) close(fd);
    if (!append && !err && rename(tmp, path) != 0) err = errno;
    if (!append && err) unlink(tmp);
    int said = 0;
    for (int k = 0; k < 8 && warned[k][0] && !said; k++) said = strcmp(warned[k], name) == 0;
    if (err && !said) {
        for (int k = 0; k < 8; k++)
            if (!warned[k][0]) {
                snprintf(warned[k], sizeof warned[k], "%s", name);
                break;
            }
        fprintf(stderr, "zt_train: warning: cannot write %s: %s (training goes on; what it held before is kept)\n", path,
                strerror(err));
    }
}

/* --resume from the checkpoint of `step`: the lines of OUT/metrics.jsonl past it (a run stopped after logging them,
   before its next save) go, as trainer_state.json's log_history has none of them: each step is logged once */
static void trim_metrics(const char *out, int64_t step) {
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", out);
    FILE *f = fopen(path, "rb");
    long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *text = size > 0 && fseek(f, 0, SEEK_SET) == 0 ? (char *)malloc((size_t)size + 1) : NULL;
    size_t n = text ? fread(text, 1, (size_t)size, f) : 0, kept = 0;
    if (f) fclose(f);
    if (!text) return;
    text[n] = 0;
    for (size_t at = 0; at < n;) { /* each line: kept unless it is a step's past `step`, or cut short (no newline) */
        char *nl = (char *)memchr(text + at, '\n', n - at);
        if (!nl) break;
        size_t len = (size_t)(nl - (text + at)) + 1;
        long long s = 0;
        if (sscanf(text + at, "{\"step\": %lld", &s) != 1 || s <= step) memmove(text + kept, text + at, len), kept += len;
        at += len;
    }
    if (kept < n) write_file(out, "metrics.jsonl", text, kept, 0);
    free(text);
}

/* The best evaluation so far, as the Trainer keeps it: best_metric, best_global_step (where it was measured) and
   best_model_checkpoint (the checkpoint saved there, which --save_total_limit keeps and --load_best_model_at_end
   loads). It rides in trainer_state.json beside each checkpoint's tensors, so --resume carries it on: the checkpoint by
   its path, as the Trainer keeps it, so that a run resumed into another --output_dir still has it. */
typedef struct best_model {
    double metric;
    int64_t step, checkpoint; /* -1: none yet; checkpoint: the step of the one at path */
    char path[4200];
} best_model;

/* whether two paths name one directory */
static int same_dir(const char *x, const char *y) {
    struct stat a, b;
    return stat(x, &a) == 0 && stat(y, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The Trainer's total_flos: each micro-batch's floating_point_ops (6 x its tokens x the parameters outside the
   embeddings) summed on each rank, then across the ranks at each save and at the end (store_flos), carried in
   trainer_state.json so that --resume goes on counting */
static double flos_rank, flos_total, *flos_all;

static void store_flos(zt_engine *e) { /* every rank calls it, at the same points */
    zt_gather_values(e, &flos_rank, 1, flos_all);
    for (int r = 0; r < world; r++) flos_total += flos_all[r];
    flos_rank = 0;
}

/* The Trainer's metrics at the end, as run_clm.py reports them: trainer.log_metrics(split) prints them by key
   (metrics_format: a runtime as a timedelta, total_flos in GF, other floats rounded to 4 places), and
   trainer.save_metrics writes SPLIT_results.json and updates all_results.json (json.dump, indent 4, keys sorted;
   the Trainer updates a file an earlier run left, zt this run's train and eval metrics) */
typedef struct metric { const char *key; double v; int whole; } metric;
static metric all_results[16];
static int n_all_results;

static double round_to(double v, int places) { /* Python's round(v, places) */
    char text[400];
    snprintf(text, sizeof text, "%.*f", places, v);
    return strtod(text, NULL);
}

static void write_metrics(const args *a, const char *file, const metric *m, int n) {
    char text[2048], value[48];
    int len = snprintf(text, sizeof text, "{\n");
    for (int k = 0; k < n; k++) {
        if (m[k].whole) snprintf(value, sizeof value, "%lld", (long long)m[k].v);
        else zt_float_repr(m[k].v, value, sizeof value);
        len += snprintf(text + len, sizeof text - (size_t)len, "    \"%s\": %s%s\n", m[k].key, value, k < n - 1 ? "," : "");
    }
    len += snprintf(text + len, sizeof text - (size_t)len, "}");
    write_file(a->output_dir, file, text, (size_t)len, 0);
}

static void report_metrics(const args *a, const char *split, const metric *m, int n) { /* m: sorted by key */
    char shown[16][48], file[64];
    int kw = 0, vw = 0;
    for (int k = 0; k < n; k++) {
        double v = m[k].v;
        if (strstr(m[k].key, "_runtime")) { /* _secs2timedelta */
            long long secs = (long long)v, days = secs / 86400;
            int centis = (int)((v - (double)secs) * 100);
            if (days) snprintf(shown[k], sizeof shown[k], "%lld day%s, %lld:%02lld:%02lld.%02d", days, days == 1 ? "" : "s",
                               secs % 86400 / 3600, secs % 3600 / 60, secs % 60, centis);
            else snprintf(shown[k], sizeof shown[k], "%lld:%02lld:%02lld.%02d", secs / 3600, secs % 3600 / 60, secs % 60, centis);
        } else if (strcmp(m[k].key, "total_flos") == 0) snprintf(shown[k], sizeof shown[k], "%lldGF", (long long)v >> 30);
        else if (m[k].whole) snprintf(shown[k], sizeof shown[k], "%lld", (long long)v);
        else zt_float_repr(round_to(v, 4), shown[k], sizeof shown[k]);
        kw = (int)strlen(m[k].key) > kw ? (int)strlen(m[k].key) : kw;
        vw = (int)strlen(shown[k]) > vw ? (int)strlen(shown[k]) : vw;
    }
    printf("***** %s metrics *****\n", split);
    for (int k = 0; k < n; k++) printf("  %-*s = %*s\n", kw, m[k].key, vw, shown[k]);
    snprintf(file, sizeof file, "%s_results.json", split);
    write_metrics(a, file, m, n);
    for (int k = 0; k < n; k++) { /* all_results.update(metrics), kept sorted */
        int at = 0;
        while (at < n_all_results && strcmp(all_results[at].key, m[k].key) < 0) at++;
        if (at < n_all_results && strcmp(all_results[at].key, m[k].key) == 0) {
            all_results[at] = m[k];
            continue;
        }
        if (n_all_results == (int)(sizeof all_results / sizeof all_results[0])) continue;
        memmove(all_results + at + 1, all_results + at, sizeof(metric) * (size_t)(n_all_results - at));
        all_results[at] = m[k], n_all_results++;
    }
    write_metrics(a, "all_results.json", all_results, n_all_results);
}

/* The Trainer's TrainerState beyond the best model: the run's settings it records, the epoch, and log_history (its
   logs: each a JSON object of the Trainer's keys, sorted as its json.dumps(sort_keys=True) writes them), kept as text
   in room set aside at the start (past it, later logs are left out of it, said once); a resumed run starts from the
   checkpoint's log_history */
static struct {
    double epoch;                                        /* the Trainer's state.epoch at the last step */
    int64_t max_steps, logging_steps, eval_steps, save_steps, batch, epochs; /* batch: per device; epochs: passes begun */
} run_state;
static char history[1 << 22];
static size_t history_len;
static char state_text[sizeof history + 16384]; /* a trainer_state.json as written or read (one at a time) */
static void history_add(const char *fmt, ...) ZT_PRINTF(1, 2);
static void history_add(const char *fmt, ...) {
    static int full;
    char entry[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(entry, sizeof entry, fmt, ap);
    va_end(ap);
    if (n <= 0 || (size_t)n >= sizeof entry || full) return;
    if (history_len + (size_t)n + 8 > sizeof history) {
        if (rank == 0) fprintf(stderr, "warning: trainer_state.json's log_history holds the logs up to here (%zu bytes)\n", history_len);
        full = 1;
        return;
    }
    history_len += (size_t)snprintf(history + history_len, sizeof history - history_len, "%s\n    %s",
                                    history_len ? "," : "", entry);
}
/* a Python float's repr, for the history (the Trainer's logs are Python floats) */
static const char *py(double v, char *buf) { return zt_float_repr(v, buf, 32); }

/* a number of a metrics.jsonl line: printf's digits, or the names Python's json reads where JSON has none */
static const char *jnum(double v, int digits, char *buf) {
    if (isfinite(v)) snprintf(buf, 32, "%.*g", digits, v);
    else snprintf(buf, 32, "%s", v != v ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
    return buf;
}

/* trainer_state.json at `step` into state_text: its bytes, or -1 when it does not fit (message printed). The path is
   JSON-escaped. */
static int trainer_state(int64_t step, const best_model *b) {
    char metric[40] = "null", best_step[24] = "null", checkpoint[8400] = "null";
    if (isfinite(b->metric)) snprintf(metric, sizeof metric, "%.17g", b->metric);
    if (b->step >= 0) snprintf(best_step, sizeof best_step, "%lld", (long long)b->step);
    if (b->checkpoint >= 0) {
        char *w = checkpoint;
        *w++ = '"';
        for (const char *c = b->path; *c && w < checkpoint + sizeof checkpoint - 8; c++) {
            if (*c == '"' || *c == '\\') *w++ = '\\', *w++ = *c;
            else if ((unsigned char)*c < 0x20) w += sprintf(w, "\\u%04x", (unsigned char)*c);
            else *w++ = *c;
        }
        snprintf(w, (size_t)(checkpoint + sizeof checkpoint - w), "\"");
    }
    char flos[40], epoch[40];
    char *text = state_text;
    /* the Trainer's keys in its order (sorted), log_history last (a reader of the keys before it, as --resume's, finds
       them before the logs' own total_flos) */
    int n = snprintf(text, sizeof state_text, "{\n  \"best_global_step\": %s,\n  \"best_metric\": %s,\n  \"best_model_checkpoint\": %s,\n"
                     "  \"epoch\": %s,\n  \"eval_steps\": %lld,\n  \"global_step\": %lld,\n  \"is_hyper_param_search\": false,\n"
                     "  \"is_local_process_zero\": true,\n  \"is_world_process_zero\": true,\n  \"logging_steps\": %lld,\n"
                     "  \"max_steps\": %lld,\n  \"num_train_epochs\": %lld,\n  \"save_steps\": %lld,\n  \"total_flos\": %s,\n"
                     "  \"train_batch_size\": %lld,\n  \"trial_name\": null,\n  \"trial_params\": null,\n  \"log_history\": [%s\n  ]\n}\n",
                     best_step, metric, checkpoint, zt_float_repr(run_state.epoch, epoch, sizeof epoch),
                     (long long)run_state.eval_steps, (long long)step, (long long)run_state.logging_steps,
                     (long long)run_state.max_steps, (long long)run_state.epochs, (long long)run_state.save_steps,
                     zt_float_repr(flos_total, flos, sizeof flos), (long long)run_state.batch, history);
    if (n >= (int)sizeof state_text) fprintf(stderr, "zt_train: trainer_state.json of step %lld is too long\n", (long long)step);
    return n < (int)sizeof state_text ? n : -1;
}

/* run_clm's trainer.save_state() at the end: OUT/trainer_state.json, written whole (a temporary, then renamed); 0 when
   it cannot be written (message printed) */
static int write_trainer_state(const char *out, int64_t step, const best_model *b) {
    char tmp[4200], path[4200];
    int n = trainer_state(step, b);
    if (n < 0) return 0;
    snprintf(tmp, sizeof tmp, "%s/trainer_state.json.tmp", out), snprintf(path, sizeof path, "%s/trainer_state.json", out);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok = fd >= 0 && write(fd, state_text, (size_t)n) == n && fsync(fd) == 0;
    if (fd >= 0) close(fd);
    ok = ok && rename(tmp, path) == 0;
    if (!ok) fprintf(stderr, "zt_train: cannot write %s: %s\n", path, strerror(errno)), unlink(tmp);
    return ok;
}

/* the value of "key" in the flat JSON object text (after its colon and spaces), or NULL */
static const char *json_value(const char *text, const char *key) {
    size_t n = strlen(key);
    for (const char *v = strchr(text, '"'); v; v = strchr(v + 1, '"')) {
        if (strncmp(v + 1, key, n) != 0 || v[n + 1] != '"') continue;
        v += n + 2;
        v += strspn(v, " \t\r\n");
        if (*v != ':') return NULL;
        return v + 1 + strspn(v + 1, " \t\r\n");
    }
    return NULL;
}

/* log_history's entries from a trainer_state.json's text (at v, its '['), into history; 0 when it is no array of
   objects zt_train can carry on */
static int read_history(const char *v) {
    if (!v || *v != '[') return v == NULL; /* absent (an older zt's): the logs start here */
    int depth = 0, in_string = 0;
    const char *start = v + 1, *end = NULL;
    for (const char *c = v; *c && !end; c++) {
        if (in_string) {
            if (*c == '\\' && c[1]) c++;
            else if (*c == '"') in_string = 0;
        } else if (*c == '"') in_string = 1;
        else if (*c == '[' || *c == '{') depth++;
        else if ((*c == ']' || *c == '}') && --depth == 0) end = c;
    }
    if (!end || *end != ']') return 0;
    while (start < end && isspace((unsigned char)*start)) start++;
    const char *last = end;
    while (last > start && isspace((unsigned char)last[-1])) last--;
    if (start < last && (*start != '{' || last[-1] != '}')) return 0;
    if ((size_t)(last - start) + 8 > sizeof history) return 0;
    history_len = 0;
    if (last > start) history_len = (size_t)snprintf(history, sizeof history, "\n    %.*s", (int)(last - start), start);
    return 1;
}

/* four hex digits at s into *u; 0 when they are not */
static int hex4(const char *s, unsigned long *u) {
    *u = 0;
    for (int i = 0; i < 4; i++) {
        int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return 0;
        *u = *u * 16 + (unsigned long)d;
    }
    return 1;
}

/* a JSON string at v (its opening quote) into out (cap bytes), its escapes decoded (\uXXXX as UTF-8, a surrogate pair
   as one character); 0 when it is not one, does not fit, or holds a NUL */
static int json_string(const char *v, char *out, size_t cap) {
    static const char names[] = "\"\\/bfnrt", chars[] = "\"\\/\b\f\n\r\t";
    size_t w = 0;
    if (*v++ != '"') return 0;
    for (; *v && *v != '"'; v++) {
        unsigned long u, lo;
        const char *e = v[0] == '\\' && v[1] ? strchr(names, v[1]) : NULL;
        if (w + 5 > cap) return 0;
        if (*v != '\\') { /* a byte as it is (UTF-8 passes through) */
            out[w++] = *v;
            continue;
        }
        if (e) {
            out[w++] = chars[e - names], v++;
            continue;
        }
        if (v[1] != 'u' || !hex4(v + 2, &u)) return 0;
        v += 5;
        if (u >= 0xd800 && u < 0xdc00 && v[1] == '\\' && v[2] == 'u' && hex4(v + 3, &lo) && lo >= 0xdc00 && lo < 0xe000)
            u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00), v += 6;
        if (u == 0 || (u >= 0xd800 && u < 0xe000)) return 0; /* a NUL, a lone surrogate */
        if (u < 0x80) {
            out[w++] = (char)u;
        } else if (u < 0x800) {
            out[w++] = (char)(0xc0 | u >> 6), out[w++] = (char)(0x80 | (u & 63));
        } else if (u < 0x10000) {
            out[w++] = (char)(0xe0 | u >> 12), out[w++] = (char)(0x80 | (u >> 6 & 63)), out[w++] = (char)(0x80 | (u & 63));
        } else {
            out[w++] = (char)(0xf0 | u >> 18), out[w++] = (char)(0x80 | (u >> 12 & 63));
            out[w++] = (char)(0x80 | (u >> 6 & 63)), out[w++] = (char)(0x80 | (u & 63));
        }
    }
    out[w] = 0;
    return *v == '"';
}

/* what a resumed checkpoint's trainer_state.json recorded: the best evaluation (with `tracking`; none, with a
   word, when there is no file) and total_flos; 0: a malformed one, named */
static int read_trainer_state(const char *resume, best_model *b, int tracking) {
    char checkpoint[4096], path[4200];
    char *text = state_text;
    if (zt_checkpoint_path(resume, checkpoint, sizeof checkpoint) != ZT_OK) { /* the one zt_load reads */
        fail(NULL);
        return 0;
    }
    snprintf(path, sizeof path, "%s/trainer_state.json", checkpoint);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (tracking) printf("%s is missing: the best evaluation is tracked from here on\n", path);
        return 1;
    }
    size_t n = fread(text, 1, sizeof state_text - 1, f);
    int longer = fgetc(f) != EOF;
    fclose(f);
    text[n] = 0;
    if (longer) return fprintf(stderr, "zt_train: %s is longer than the %zu bytes a trainer state takes\n", path, n), 0;
    size_t end = n;
    while (end > 0 && isspace((unsigned char)text[end - 1])) end--;
    if (text[strspn(text, " \t\r\n")] != '{' || end == 0 || text[end - 1] != '}')
        return fprintf(stderr, "zt_train: %s: a trainer state should be a JSON object, from { to }; this one is cut short "
                       "or is something else\n", path), 0;
    if (!read_history(json_value(text, "log_history")))
        return fprintf(stderr, "zt_train: %s: \"log_history\" should be a list of logs (JSON objects) within %zu bytes\n", path,
                       sizeof history), 0;
    const char *flos = json_value(text, "total_flos"); /* absent (an older zt's): counted from here */
    char *flos_end = NULL;
    if (flos) flos_total = strtod(flos, &flos_end);
    if (flos && (flos_end == flos || !isfinite(flos_total) || flos_total < 0))
        return fprintf(stderr, "zt_train: %s: \"total_flos\" should be a number >= 0\n", path), 0;
    if (!tracking) return 1;
    const char *const keys[3] = {"best_metric", "best_global_step", "best_model_checkpoint"};
    for (int k = 0; k < 3; k++) {
        const char *v = json_value(text, keys[k]);
        char *end = NULL;
        int ok = v != NULL;
        if (ok && strncmp(v, "null", 4) == 0 && !isalnum((unsigned char)v[4])) continue;
        if (ok && k == 0) b->metric = strtod(v, &end), ok = end != v && isfinite(b->metric);
        if (ok && k == 1) b->step = strtoll(v, &end, 10), ok = end != v && b->step >= 0 && !strchr(".eE", *end);
        if (ok && k == 2) { /* "DIR/global_stepN", a JSON string: the path and its step */
            ok = json_string(v, b->path, sizeof b->path);
            const char *at = strstr(b->path, "/global_step"), *next;
            while (at && (next = strstr(at + 1, "/global_step")) != NULL) at = next;
            long long ck = -1;
            int len = 0;
            ok = ok && at && sscanf(at, "/global_step%lld%n", &ck, &len) == 1 && ck >= 0 && at[len] == 0;
            b->checkpoint = ok ? ck : -1;
        }
        if (!ok) {
            fprintf(stderr, "zt_train: %s: \"%s\" should be %s or null\n", path, keys[k],
                    k == 0 ? "a finite number" : k == 1 ? "a step" : "a checkpoint's path (\"DIR/global_stepN\")");
            return 0;
        }
    }
    struct stat st; /* the Trainer's rule: a recorded checkpoint that is no directory any more is forgotten */
    if (b->checkpoint >= 0 && (stat(b->path, &st) != 0 || !S_ISDIR(st.st_mode))) {
        printf("the best checkpoint recorded in %s, %s, is gone; the best is kept from here on\n", path, b->path);
        b->checkpoint = -1, b->path[0] = 0;
    }
    return 1;
}

/* the checkpoint of `step` (every rank takes part; rank 0 writes), its trainer_state.json inside it before it is
   renamed into place, so that `latest` never names one without it; it may be the best one; --save_total_limit
   removes the oldest beyond the limit, except the newest (for --resume) and the best. 0: failed, message printed */
static int save_checkpoint(zt_engine *e, const args *a, zt_data *data, int64_t step, best_model *b, int64_t *saved,
                           int64_t *n_saved, int64_t cap) {
    store_flos(e);
    if (*a->metric_for_best_model && step == b->step)
        b->checkpoint = step, snprintf(b->path, sizeof b->path, "%s/global_step%lld", a->output_dir, (long long)step);
    int n = rank == 0 ? trainer_state(step, b) : 0;
    zt_save_file state = {"trainer_state.json", state_text, (size_t)(n > 0 ? n : 0)};
    if (n < 0) return 0;
    if (zt_save_with(e, a->output_dir, data, &state, rank == 0) != ZT_OK) return fail("saving"), 0;
    int64_t kept = 0; /* an earlier run's checkpoint of this step is replaced: it leaves the list */
    for (int64_t i = 0; i < *n_saved; i++)
        if (saved[i] != step) saved[kept++] = saved[i];
    *n_saved = kept;
    if (*n_saved == cap) /* without a limit, where only the newest matters */
        memmove(saved, saved + 1, sizeof(int64_t) * (size_t)--*n_saved);
    saved[(*n_saved)++] = step;
    int64_t keep = a->save_total_limit, best = -1; /* the best, where it is one of --output_dir's */
    char here[4200];
    snprintf(here, sizeof here, "%s/global_step%lld", a->output_dir, (long long)b->checkpoint);
    if (b->checkpoint >= 0 && same_dir(here, b->path)) best = b->checkpoint;
    if (keep <= 0) return 1;
    if (best >= 0 && best != step && keep < 2) keep = 2;
    for (int64_t i = 0; i < *n_saved && *n_saved > keep;) {
        if (saved[i] == step || saved[i] == best) { i++; continue; }
        if (rank == 0) zt_remove_checkpoint(a->output_dir, saved[i]);
        memmove(saved + i, saved + i + 1, sizeof(int64_t) * (size_t)(--*n_saved - i));
    }
    return 1;
}

/* loss.svg: the training and validation loss against the step */
static void write_svg(const char *dir) {
    float xmax = 1, ymin = 1e30f, ymax = -1e30f;
    for (int i = 0; i < n_train; i++) {
        xmax = train_curve[i][0] > xmax ? train_curve[i][0] : xmax;
        ymin = train_curve[i][1] < ymin ? train_curve[i][1] : ymin;
        ymax = train_curve[i][1] > ymax ? train_curve[i][1] : ymax;
    }
    for (int i = 0; i < n_val; i++) {
        ymin = val_curve[i][1] < ymin ? val_curve[i][1] : ymin;
        ymax = val_curve[i][1] > ymax ? val_curve[i][1] : ymax;
    }
    if (ymax <= ymin) ymax = ymin + 1;
    size_t n = (size_t)snprintf(svg, sizeof svg,
                                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"400\">"
                                "<rect width=\"640\" height=\"400\" fill=\"white\"/>"
                                "<text x=\"10\" y=\"20\">loss %.3f .. %.3f, steps 0 .. %.0f (blue: training, red: "
                                "validation)</text>",
                                ymin, ymax, xmax);
    float (*curves[2])[2] = {train_curve, val_curve};
    int counts[2] = {n_train, n_val};
    const char *colors[2] = {"blue", "red"};
    for (int c = 0; c < 2; c++) {
        if (!counts[c]) continue;
        n += (size_t)snprintf(svg + n, sizeof svg - n, "<polyline fill=\"none\" stroke=\"%s\" points=\"", colors[c]);
        for (int i = 0; i < counts[c] && n < sizeof svg - 64; i++)
            n += (size_t)snprintf(svg + n, sizeof svg - n, "%.1f,%.1f ", 40 + 580 * curves[c][i][0] / xmax,
                                  380 - 340 * (curves[c][i][1] - ymin) / (ymax - ymin));
        n += (size_t)snprintf(svg + n, sizeof svg - n, "\"/>");
    }
    n += (size_t)snprintf(svg + n, sizeof svg - n, "</svg>\n");
    write_file(dir, "loss.svg", svg, n, 0);
}

/* rows of T tokens, in order and without overlap: what --eval (with --mask's targets) and validation read */
static int open_rows(zt_engine *e, const args *a, const char *path, const char *mask, zt_data **out) {
    const zt_options *o = zt_engine_options(e);
    zt_data_desc d;
    memset(&d, 0, sizeof d);
    d.path = path;
    d.format = a->format;
    d.vocab = zt_engine_model_config(e)->vocab;
    d.seq_len = o->seq_len - 1; /* windows of T tokens (T-1 inputs and their targets) ... */
    d.stride = o->seq_len;      /* ... that do not overlap: a last partial row is dropped */
    d.rows = o->micro_batch;
    d.rank = 0, d.world = 1; /* every rank reads every row: evaluate() deals the batches */
    d.mask_path = mask && *mask ? mask : NULL;
    return zt_data_open(out, &d) == ZT_OK;
}

static zt_data *val_masked; /* --val_data's rows with --val_mask's targets, or NULL */

/* what an evaluation reads into: rows (5 x B x T tokens), each row's loss sum and count, the batches' sums (4 for
   each of up to B batches a micro-batch holds), every rank's values (2 x world x B), and the Trainer's batch */
typedef struct eval_buf {
    int32_t *rows;
    double *sums; /* every rank's values */
    double *row_sums, *acc;
    int64_t *row_counts;
    int64_t batch; /* --per_device_eval_batch_size */
} eval_buf;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* two easy mistakes with --data, said once: zt_tokenize's mask file beside it left out (without --mask every
   token is learned, prompts too), and a text file read as bytes for a model with a tokenizer (zt_tokenize first) */
static void data_notes(const args *a, int64_t vocab, const char *tok_path) {
    if (rank != 0 || strpbrk(a->data, "*?[,")) return; /* one file */
    char mask[4200];
    snprintf(mask, sizeof mask, "%s.mask", a->data);
    if (!*a->mask && access(mask, R_OK) == 0)
        fprintf(stderr, "zt_train: warning: %s is beside --data, and --mask was not given: every token is learned, "
                "prompts too (--mask %s learns only what it marks)\n", mask, mask);
    size_t n = strlen(a->data);
    int text = a->format == ZT_DATA_TEXT || (a->format == ZT_DATA_AUTO && n > 4 && strcmp(a->data + n - 4, ".txt") == 0);
    if (text && vocab != 256 && access(tok_path, R_OK) == 0)
        fprintf(stderr, "zt_train: warning: %s is read as bytes (ids 0-255), and this model has a tokenizer: "
                "zt_tokenize --tokenizer %.*s --input %s --output FILE.bin tokenizes it as run_clm.py would\n",
                a->data, (int)(strlen(tok_path) - strlen("/tokenizer.json")), tok_path, a->data);
}

/* sampling sees the last --seq_len tokens at each step (the arenas' rows): said when a prompt and its sample pass them */
static void window_note(int64_t prompt, int64_t sample, int64_t seq_len) {
    if (prompt + sample > seq_len && rank == 0)
        fprintf(stderr, "zt_train: warning: a prompt of %lld tokens and %lld more pass --seq_len %lld: each new token sees "
                "the last %lld (transformers' generate() sees them all; a larger --seq_len widens the window)\n",
                (long long)prompt, (long long)sample, (long long)seq_len, (long long)seq_len);
}

/* The mean next-token loss over all rows, as the Trainer's evaluate() computes it: within a row position t predicts
   t+1 (T-1 targets a row, as transformers computes with labels=input_ids); the rows in batches of
   --per_device_eval_batch_size in order, each batch's loss the mean over its tokens (plus the MoE balance loss of its
   rows), and the batches' losses weighted by their rows (a batch with no token to predict counts no row). The ranks
   take the batches in turn and add them in batch order: the same bits at any number of ranks. A micro-batch
   (--per_device_train_batch_size rows, the arenas' size) holds a batch, a part of one (then its balance loss is its
   parts' mean, weighted by their rows), or several (without a balance loss). `masked` (or NULL): the same rows read with a mask, whose
   targets count (the row's last token comes from `data`: a masked one is no token). */
static double evaluate(zt_engine *e, zt_data *data, zt_data *masked, eval_buf *buf) {
    const zt_options *o = zt_engine_options(e);
    const zt_model_config *mc = zt_engine_model_config(e);
    int64_t B = o->micro_batch, T = o->seq_len, N = zt_data_windows(data);
    int64_t eb = min64(buf->batch, N > 0 ? N : 1); /* a batch larger than the set is the set, as the Trainer's */
    int aux = mc && mc->n_experts > 0 && mc->router_aux_coef > 0; /* a balance loss: one batch a micro-batch */
    /* batches a micro-batch holds, and micro-batches a batch takes (1 where it is no more than a micro-batch) */
    int64_t per_call = eb >= B || aux ? 1 : B / eb, calls = (eb + B - 1) / B;
    int64_t batches = (N + eb - 1) / eb, round = per_call * world; /* the batches of a round: every rank's */
    int32_t *tok = buf->rows, *win = tok + B * T, *next = win + B * T, *mwin = next + B * T, *mnext = mwin + B * T;
    double total = 0, rows_total = 0;
    int64_t mine_rows = 0; /* ZT_TRAIN_TEST_EVAL_ROWS: the split's check */
    for (int64_t first = 0; first < batches; first += round) {
        int64_t k0 = first + rank * per_call; /* this rank's first batch of the round */
        double *acc = buf->acc; /* per batch: loss sum, tokens, balance loss of its rows, rows */
        memset(acc, 0, sizeof(double) * 4 * (size_t)per_call);
        for (int64_t c = 0; c < calls; c++) { /* every rank as many: ZeRO-3 gathers in zt_eval */
            int64_t from = k0 * eb + c * B;
            int64_t to = min64(min64(N, (k0 + per_call) * eb), from + B), rows = to > from ? to - from : 0;
            zt_data_seek(data, 0, min64(from, N));
            if (masked) zt_data_seek(masked, 0, min64(from, N));
            if (rows) zt_data_next(data, win, next, o->ignore_index);
            if (rows && masked) zt_data_next(masked, mwin, mnext, o->ignore_index);
            for (int64_t r = 0; r < rows; r++) { /* a row: the window's T-1 inputs, then its last target */
                memcpy(tok + r * T, win + r * (T - 1), sizeof(int32_t) * (size_t)(T - 1));
                tok[r * T + T - 1] = next[r * (T - 1) + T - 2];
            }
            int32_t *targets = win; /* the window's targets, then none for the last token */
            for (int64_t r = 0; r < rows; r++) {
                memcpy(targets + r * T, (masked ? mnext : next) + r * (T - 1), sizeof(int32_t) * (size_t)(T - 1));
                targets[r * T + T - 1] = o->ignore_index;
            }
            double balance;
            zt_eval(e, tok, targets, NULL, rows, NULL, NULL);
            zt_eval_rows(e, buf->row_sums, buf->row_counts, &balance);
            for (int64_t r = 0; r < rows; r++) {
                double *b = acc + 4 * ((from + r) / eb - k0);
                b[0] += buf->row_sums[r], b[1] += (double)buf->row_counts[r], b[2] += balance, b[3] += 1;
            }
            mine_rows += rows;
        }
        for (int64_t j = 0; j < per_call; j++) { /* each batch's rows x its loss, and its rows, from every rank */
            const double *b = acc + 4 * j;
            double mine[2] = {b[1] > 0 ? b[3] * (b[0] / b[1]) + b[2] : 0.0, b[1] > 0 ? b[3] : 0.0};
            zt_gather_values(e, mine, 2, buf->sums + 2 * world * j);
        }
        for (int r = 0; r < world; r++) /* in batch order */
            for (int64_t j = 0; j < per_call; j++)
                total += buf->sums[2 * world * j + 2 * r], rows_total += buf->sums[2 * world * j + 2 * r + 1];
    }
    if (getenv("ZT_TRAIN_TEST_EVAL_ROWS")) fprintf(stderr, "rank %d evaluated %lld rows\n", rank, (long long)mine_rows);
    return rows_total > 0 ? total / rows_total : 0.0;
}

/* rows of a micro-batch over all ranks: a pass over --data is ceil(windows / this) micro-batches, as the Trainer's
   dataloader is len(dataloader) batches (its last shorter) */
static int64_t batch_rows = 1;
static int64_t pass_batches(const zt_data *data) { return (zt_data_windows(data) + batch_rows - 1) / batch_rows; }

/* passes over --data so far, as the Trainer's state.epoch counts them: the micro-batches of the current one over its
   micro-batches (at most 1) */
static double epochs_read(const zt_data *data) {
    int64_t epoch, index;
    zt_data_cursor(data, &epoch, &index);
    double done = (double)((index + batch_rows - 1) / batch_rows);
    return (double)epoch + fmin(done / (double)pass_batches(data), 1.0);
}

/* --report_to tensorboard: what the Trainer's TensorBoardCallback writes (its tags: train/loss, eval/loss, ...), on
   rank 0, into TENSORBOARD_LOGGING_DIR, --logging_dir or OUTPUT_DIR/runs/MonDD_HH-MM-SS_HOST. A write that fails
   ends it with a warning; training goes on. */
static zt_events tb = {-1, 0.0, ""};

/* the reporters of --report_to (a comma- or space-separated list): 1 if TensorBoard is among them ("all" is every
   one built); the others get a warning */
static int reports_tensorboard(const char *list) {
    char other[512] = "";
    int on = 0;
    for (const char *c = list; *c;) {
        size_t n = strcspn(c, ", ");
        if (n == 11 && strncmp(c, "tensorboard", 11) == 0) on = 1;
        else if (n == 3 && strncmp(c, "all", 3) == 0) on = 1;
        else if (n > 0 && !(n == 4 && strncmp(c, "none", 4) == 0))
            snprintf(other + strlen(other), sizeof other - strlen(other), "%s%.*s", *other ? ", " : "", (int)n, c);
        c += n + (c[n] != 0);
    }
    if (*other && rank == 0)
        fprintf(stderr, "zt_train: warning: --report_to %s: not built (zt writes metrics.jsonl, loss.svg and, with "
                "--report_to tensorboard, a TensorBoard event file)\n", other);
    return on;
}

static int tb_open(const args *a) {
    char dir[4200], when[64], host[256] = "";
    const char *env = getenv("TENSORBOARD_LOGGING_DIR"), *home = getenv("HOME");
    time_t now = time(NULL);
    struct tm tm;
    gethostname(host, sizeof host - 1);
    strftime(when, sizeof when, "%b%d_%H-%M-%S", localtime_r(&now, &tm)); /* torch's and the Trainer's name */
    if (env && env[0] == '~' && (env[1] == '/' || !env[1]) && home) snprintf(dir, sizeof dir, "%s%s", home, env + 1);
    else if (env && *env) snprintf(dir, sizeof dir, "%s", env); /* empty: as if unset */
    else if (*a->logging_dir) snprintf(dir, sizeof dir, "%s", a->logging_dir);
    else snprintf(dir, sizeof dir, "%s/runs/%s_%s", a->output_dir, when, host);
    if (zt_events_open(&tb, dir, 0.0) != ZT_OK) return fail("--report_to tensorboard"), 0;
    printf("TensorBoard: %s (tensorboard --logdir %s)\n", tb.path, dir);
    return 1;
}

/* the Trainer's texts at the start: "args" (its TrainingArguments; here the effective configuration, as
   --print_config shows it) and "model_config" (the model's config.json) */
static void tb_texts(const zt_ds_config *ds, const zt_options *o, const char *config_json) {
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (f) zt_ds_config_print(ds, o, f), fclose(f);
    if (text && tb.fd >= 0 && zt_events_text(&tb, "args", text, 0) != ZT_OK)
        fprintf(stderr, "zt_train: warning: TensorBoard: %s\n", zt_last_error());
    free(text);
    if (!(f = fopen(config_json, "rb"))) return;
    static char config[1 << 16];
    config[fread(config, 1, sizeof config - 1, f)] = 0;
    fclose(f);
    if (tb.fd >= 0 && zt_events_text(&tb, "model_config", config, 0) != ZT_OK)
        fprintf(stderr, "zt_train: warning: TensorBoard: %s\n", zt_last_error());
}

static void tb_scalar(const char *tag, double v, int64_t step) {
    if (tb.fd < 0 || zt_events_scalar(&tb, tag, v, step) == ZT_OK) return;
    fprintf(stderr, "zt_train: warning: TensorBoard stops: %s\n", zt_last_error());
    zt_events_close(&tb);
}

/* an evaluation, logged as the Trainer logs it: the loss, and in TensorBoard speed_metrics' runtime and rates (the
   set's rows, and its batches of every rank's micro-batch) */
static double report_eval(zt_engine *e, const args *a, zt_data *val, eval_buf *buf, int64_t step, double epochs,
                          double speed[3]) {
    uint64_t t0 = zt_time_ns();
    double v = evaluate(e, val, val_masked, buf); /* every rank's: the best model's and schedule's decisions agree */
    double runtime = (double)(zt_time_ns() - t0) / 1e9, rows = (double)zt_data_windows(val);
    double batches = ceil(rows / (double)(buf->batch * world)); /* the Trainer's: its eval batches */
    speed[0] = round_to(runtime, 4), speed[1] = runtime > 0 ? round_to(rows / runtime, 3) : 0;
    speed[2] = runtime > 0 ? round_to(batches / runtime, 3) : 0;
    printf("step %lld | val_loss %.6f\n", (long long)step, v);
    char num[32];
    int n = snprintf(line, sizeof line, "{\"step\": %lld, \"eval_loss\": %s, \"epoch\": %.4f}\n", (long long)step,
                     jnum(v, 17, num), epochs); /* no clock here: runs compare these lines */
    if (rank == 0) write_file(a->output_dir, "metrics.jsonl", line, (size_t)n, 1);
    tb_scalar("eval/loss", v, step), tb_scalar("eval/runtime", speed[0], step);
    tb_scalar("eval/samples_per_second", speed[1], step), tb_scalar("eval/steps_per_second", speed[2], step);
    tb_scalar("train/epoch", epochs, step); /* the Trainer logs its epoch with it */
    char f[5][32];
    history_add("{\"epoch\": %s, \"eval_loss\": %s, \"eval_runtime\": %s, \"eval_samples_per_second\": %s, "
                "\"eval_steps_per_second\": %s, \"step\": %lld}", py(epochs, f[0]), py(v, f[1]), py(speed[0], f[2]),
                py(speed[1], f[3]), py(speed[2], f[4]), (long long)step);
    if (n_val < MAX_POINTS) val_curve[n_val][0] = (float)step, val_curve[n_val++][1] = (float)v;
    return v;
}

/* --enable_jit_checkpoint: a SIGTERM (from the scheduler, or the launcher passing its own on) asks for a
   checkpoint at the end of the step */
static volatile sig_atomic_t terminated; /* in the training loop only (zt_train --eval or --export stop at once) */
static void on_sigterm(int sig) { terminated = sig; }

/* whether any rank got SIGTERM: every rank calls it at the end of each step, so that they stop together */
static int stop_requested(zt_engine *e, double *sums) {
    double mine = terminated != 0;
    zt_gather_values(e, &mine, 1, sums);
    for (int r = 0; r < world; r++)
        if (sums[r] != 0) return 1;
    return 0;
}

/* --export: the model as a Hugging Face directory, in --export_dtype or the training precision's; the exit status */
static int export_model(zt_engine *e, const args *a, const zt_options *o) {
    zt_dtype dt = o->precision == ZT_PRECISION_BF16 ? ZT_BF16 : o->precision == ZT_PRECISION_FP16 ? ZT_F16 : ZT_F32;
    if (*a->export_dtype) export_dtype(a->export_dtype, &dt); /* checked with the other flags */
    if (zt_export_hf(e, a->export_dir, dt) != ZT_OK) return fail("exporting");
    printf("exported %s/model.safetensors (%s)\n", a->export_dir, zt_dtype_name(dt));
    return 0;
}

/* --plan: no ranks are started; the launcher's flags are read here (only --num_processes matters) */
static int plan_world(int *argc, char **argv) {
    static const char *launcher[] = {"--num_processes", "--num_machines", "--machine_rank", "--main_process_ip",
                                     "--main_process_port", "--rdzv_id"};
    int n = 1, out = 1;
    for (int i = 1; i < *argc; i++) {
        size_t len = strcspn(argv[i], "=");
        int hit = -1;
        for (int k = 0; k < 6; k++)
            if (len == strlen(launcher[k]) && strncmp(argv[i], launcher[k], len) == 0) hit = k;
        if (hit < 0) {
            argv[out++] = argv[i];
            continue;
        }
        const char *v = argv[i][len] == '=' ? argv[i] + len + 1 : i + 1 < *argc ? argv[++i] : "";
        char *end;
        errno = 0;
        long x = hit == 0 ? strtol(v, &end, 10) : 1;
        if (hit == 0 && (!*v || *end || errno || x < 1 || x > 1 << 20)) return -1;
        if (hit == 0) n = (int)x;
    }
    *argc = out;
    return n;
}

/* --plan as a switch is read (--plan, --plan true, --plan=yes, ...), before the launcher starts ranks */
static int is_plan(int argc, char **argv) {
    int on = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--plan", 6) != 0 || (argv[i][6] && argv[i][6] != '=')) continue;
        const char *v = argv[i][6] == '=' ? argv[i] + 7 : i + 1 < argc && argv[i + 1][0] != '-' ? argv[i + 1] : "true";
        args a;
        flag f = {"plan", "", "", F_BOOL, offsetof(args, plan)};
        on = set_flag(&a, &f, v) ? a.plan : 1; /* a bad value: no ranks started, and parse() names it */
    }
    return on;
}

/* --plan [--fit SIZE]: each rank's memory by category, from the same layout code zt_init runs */
static int plan_fail(void) { /* no rank was started: no rank to name; after what was printed so far */
    fflush(stdout);
    fprintf(stderr, "zt_train: %s\n", zt_last_error());
    return 1;
}

static int plan(const zt_model_spec *spec, const zt_options *o, const args *a) {
    zt_memory_plan p;
    size_t bytes = 0;
    if (*a->fit && (zt_parse_bytes(a->fit, &bytes) != ZT_OK || bytes == 0)) {
        fprintf(stderr, "zt_train: --fit expects a size above 0 such as 80GiB, 24GB or 512MiB, found \"%s\"\n", a->fit);
        return 2;
    }
    if (zt_plan_memory(&p, spec, o, world) != ZT_OK) return plan_fail();
    zt_memory_plan_print(&p, stdout);
    if (*a->fit) {
        zt_options fits;
        printf("\nfitting %s per rank:\n", a->fit);
        if (zt_plan_fit(&fits, spec, o, world, bytes, stdout) != ZT_OK) return plan_fail();
        if (zt_plan_memory(&p, spec, &fits, world) != ZT_OK) return plan_fail();
        zt_memory_plan_print(&p, stdout);
    }
    return 0;
}

/* --config_file FILE, as `accelerate launch --config_file`: its launcher settings become flags in front of
   the ones given (which win, coming later); the rest is read after the launch */
static char **accelerate_argv(int *argc, char **argv, zt_accelerate_config *ac, int *have) {
    const char *path = NULL;
    for (int i = 1; i < *argc; i++) {
        if (strncmp(argv[i], "--config_file=", 14) == 0) path = argv[i] + 14;
        else if (strcmp(argv[i], "--config_file") == 0 && i + 1 < *argc) path = argv[i + 1];
    }
    *have = 0;
    if (!path) return argv;
    if (zt_accelerate_config_read(ac, path) != ZT_OK) {
        fprintf(stderr, "zt_train: %s\n", zt_last_error());
        exit(2);
    }
    static const char *const kinds[] = {"", "NO", "MULTI_CPU", "MULTI_GPU", "DEEPSPEED"}; /* what zt runs */
    int known = 0;
    for (int k = 0; k < 5; k++) known |= strcmp(ac->distributed_type, kinds[k]) == 0;
    if (!known) {
        fprintf(stderr, "zt_train: %s: distributed_type %s is not built: zt runs data parallelism with ZeRO (NO, "
                "MULTI_CPU, MULTI_GPU or DEEPSPEED; stage 3 is FSDP's full shard)\n", path, ac->distributed_type);
        exit(2);
    }
    *have = 1;
    char **out = (char **)calloc((size_t)*argc + 12, sizeof(char *));
    static char numbers[4][32];
    int n = 0;
    out[n++] = argv[0];
    const char *names[4] = {"--num_processes", "--num_machines", "--machine_rank", "--main_process_port"};
    int64_t values[4] = {ac->num_processes, ac->num_machines, ac->machine_rank, ac->main_process_port};
    for (int k = 0; k < 4; k++)
        if (values[k] >= 0) snprintf(numbers[k], sizeof numbers[k], "%lld", (long long)values[k]), out[n++] = (char *)names[k], out[n++] = numbers[k];
    if (ac->main_process_ip[0]) out[n++] = (char *)"--main_process_ip", out[n++] = ac->main_process_ip;
    for (int i = 1; i < *argc; i++) out[n++] = argv[i];
    *argc = n;
    return out;
}

static void quiet(zt_log_level level, const char *msg, void *user) { (void)level, (void)msg, (void)user; }

/* the DeepSpeed config (--config, or the Accelerate config's plugin as JSON) into ds and o */
static int read_deepspeed(zt_ds_config *ds, zt_options *o, const args *a, const char *json, size_t len, int world,
                          int64_t hidden) {
    if (*a->config && zt_ds_config_read(ds, o, a->config, world, hidden) != ZT_OK) return 0;
    if (len && zt_ds_config_parse(ds, o, json, len, a->config_file, world, hidden) != ZT_OK) return 0;
    return 1;
}

/* the training windows of --data for rows of T tokens (all ranks together); -1 on an error */
static int64_t data_windows(const args *a, const zt_model_config *mc, int64_t T, uint64_t seed) {
    zt_data_desc d;
    memset(&d, 0, sizeof d);
    d.path = a->data;
    d.mask_path = *a->mask ? a->mask : NULL;
    d.format = a->format;
    d.vocab = mc->vocab;
    d.seq_len = T;
    d.rows = 1;
    d.seed = seed;
    zt_data *data = NULL;
    if (zt_data_open(&data, &d) != ZT_OK) return -1;
    int64_t n = zt_data_windows(data);
    zt_data_close(data);
    return n;
}

/* --sample N after training: N tokens on from --prompt (through the model's tokenizer.json where it has one: text in,
   text out; else bytes for a byte-level model, or token ids), or with --chat a reply to one user message as the chat
   template frames it. The model's generation settings stand as generate() takes them: a sample ends at an end of
   sequence (generation_config.json's eos_token_id, else config.json's; for --chat the tokenizer's eos_token too), and
   generation_config.json's do_sample, temperature, top_k and top_p where no flag is given. 0, or an exit code with its
   message printed. */
static int sample(zt_engine *e, args *a, const char *model_dir, const char *tok_path, int64_t vocab, int64_t seq_len,
                  uint64_t seed) {
    zt_tokenizer *tokenizer = NULL;
    if (access(tok_path, R_OK) == 0 && zt_tokenizer_load(&tokenizer, tok_path) != ZT_OK) return fail(NULL);
    if (a->chat[0] && !tokenizer)
        return fprintf(stderr, "zt_train: --chat needs the model's tokenizer.json (and a chat template): %s has none\n",
                       model_dir), 2;
    zt_generation_config gen;
    zt_generation_config_read(&gen, model_dir);
    int32_t stop[65]; /* generation_config's eos ids (at most 64) and --chat's eos_token */
    int n_stop = gen.n_eos, byte_level = !tokenizer && vocab == 256;
    memcpy(stop, gen.eos, sizeof(int32_t) * (size_t)n_stop);
    if (tokenizer && a->chat[0]) {
        const char *eos = zt_tokenizer_special(tokenizer, "eos_token");
        int32_t id = eos ? zt_tokenizer_id(tokenizer, eos) : -1;
        if (id >= 0) stop[n_stop++] = id;
    }
    if (gen.found && !a->sampling_given) {
        a->temperature = gen.do_sample ? gen.temperature : 0.0, a->top_k = gen.top_k, a->top_p = gen.top_p;
        if (rank == 0)
            printf("sampling as %s/generation_config.json says: %s\n", model_dir,
                   gen.do_sample ? "do_sample" : "greedy (do_sample false)");
    }
    /* the prompt's ids: through the chat template; as tokenizer(prompt) gives them (LLaMA's and Gemma's BOS before);
       its bytes; or ids separated by spaces */
    char *json = NULL;
    size_t json_len = 0, plen = strlen(a->prompt);
    int64_t np = 0, n_out = 0, room = (int64_t)plen;
    if (tokenizer && a->chat[0]) {
        size_t cl = strlen(a->chat);
        char *w = json = (char *)malloc(6 * cl + 128);
        if (!json) return fprintf(stderr, "zt_train: out of memory for --chat\n"), 1;
        w += sprintf(w, "{\"messages\": [{\"role\": \"user\", \"content\": \"");
        for (size_t i = 0; i < cl; i++) {
            unsigned char ch = (unsigned char)a->chat[i];
            if (ch == '"' || ch == '\\') *w++ = '\\', *w++ = (char)ch;
            else if (ch < 0x20) w += sprintf(w, "\\u%04x", ch);
            else *w++ = (char)ch;
        }
        w += sprintf(w, "\"}], \"add_generation_prompt\": true}");
        json_len = (size_t)(w - json);
        if (zt_tokenize_chat(tokenizer, json, json_len, NULL, NULL, 0, &room) != ZT_OK) return fail(NULL);
    } else if (tokenizer) {
        room = zt_tokenize_special(tokenizer, a->prompt, plen, NULL, 0);
    }
    int32_t *out = (int32_t *)calloc((size_t)(room + a->sample + 2), sizeof(int32_t));
    if (!out) return fprintf(stderr, "zt_train: out of memory for --sample %lld tokens\n", (long long)a->sample), 1;
    if (json && zt_tokenize_chat(tokenizer, json, json_len, out, NULL, room, &np) != ZT_OK) return fail(NULL);
    free(json);
    if (tokenizer && !a->chat[0]) np = zt_tokenize_special(tokenizer, a->prompt, plen, out, room);
    if (byte_level)
        for (size_t i = 0; i < plen; i++) out[np++] = (unsigned char)a->prompt[i];
    else if (!tokenizer)
        for (char *p = (char *)a->prompt, *end; *p; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p) break;
            out[np++] = (int32_t)v;
        }
    if (np == 0) out[np++] = 0;
    window_note(np, a->sample, seq_len);
    if (zt_generate_until(e, out, np, out, a->sample, (float)a->temperature, (int)a->top_k, (float)a->top_p, seed,
                          byte_level ? NULL : stop, byte_level ? 0 : n_stop, &n_out) != ZT_OK)
        return fail("sampling");
    if (tokenizer) { /* a reply without its end of turn, or the whole sample */
        int64_t from = a->chat[0] ? np : 0, n = n_out - from, ended = 0;
        for (int k = 0; a->chat[0] && k < n_stop; k++) ended |= n > 0 && out[n_out - 1] == stop[k];
        n -= ended;
        size_t bytes = zt_detokenize(tokenizer, out + from, n, NULL, 0);
        char *text = (char *)malloc(bytes + 1);
        if (!text) return fprintf(stderr, "zt_train: out of memory for the sample's text\n"), 1;
        zt_detokenize(tokenizer, out + from, n, text, bytes + 1);
        printf("%s:\n%s\n", a->chat[0] ? "reply" : "sample", text);
        free(text);
    } else {
        printf("sample:\n");
        for (int64_t i = 0; i < n_out; i++) {
            if (byte_level) putchar(out[i] >= 32 || out[i] == '\n' ? out[i] : '?');
            else printf("%d ", out[i]);
        }
        printf("\n");
    }
    free(out);
    zt_tokenizer_free(tokenizer);
    return 0;
}

int main(int argc, char **argv) {
    zt_accelerate_config ac;
    int have_ac = 0;
    argv = accelerate_argv(&argc, argv, &ac, &have_ac);
    /* --num_processes N: this process becomes the launcher of N ranks, or is one of them */
    zt_comm *comm = NULL;
    int launched_code = 0, planning = is_plan(argc, argv);
    if (planning) world = plan_world(&argc, argv);
    else if (zt_launch(&argc, argv, &comm, &launched_code)) return launched_code;
    else rank = zt_comm_rank(comm), world = zt_comm_world(comm);
    if (world < 1) return fprintf(stderr, "zt_train: --num_processes takes an integer from 1 to %d\n", 1 << 20), 2;
    if (rank > 0 && !freopen("/dev/null", "w", stdout)) return 1; /* rank 0 prints; the others only errors */
    args a;
    memset(&a, 0, sizeof a);
    int eargc;
    char **eargv = (char **)calloc((size_t)argc + 1, sizeof(char *));
    if (!parse(argc, argv, &a, &eargc, eargv)) return 2;
    if (!trainer_flags(&a)) return 2;
    if (rank > 0 && log_max > ZT_LOG_WARN) log_max = ZT_LOG_WARN; /* the Trainer's log_level_replica: warnings and errors */
    if (log_max != ZT_LOG_INFO) zt_set_log(log_filtered, NULL);
    int report_tb = reports_tensorboard(a.report_to);
    if (!*a.model) {
        fprintf(stderr, "zt_train: --model is required (a config.json or its directory; see --help)\n");
        return 2;
    }
    zt_model_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.config_path = a.model;
    zt_options o = zt_options_default();
    if (zt_options_parse_args(&o, eargc, eargv) != ZT_OK) return fail(NULL);
    int by_epochs = 0; /* --max_steps -1 (its last value): the Trainer's "by epochs", its 3 unless --num_train_epochs */
    for (int i = 0; i < eargc; i++) {
        const char *f = eargv[i];
        if (strcmp(f, "--max_steps") == 0 && i + 1 < eargc) by_epochs = strcmp(eargv[++i], "-1") == 0;
        else if (strncmp(f, "--max_steps=", 12) == 0) by_epochs = strcmp(f + 12, "-1") == 0;
    }
    if (by_epochs && a.num_train_epochs <= 0) a.num_train_epochs = 3;
    if (a.use_cpu) o.backend = "cpu";
    if (a.activation_ckpt >= 0) o.gradient_checkpointing = a.activation_ckpt; /* the new name wins, as in the Trainer */
    if (a.full_eval && o.precision != (a.full_eval == 1 ? ZT_PRECISION_BF16 : ZT_PRECISION_FP16)) {
        if (!a.eval)
            return fprintf(stderr, "zt_train: --%s_full_eval: zt evaluates in the training precision; give --%s too\n",
                           a.full_eval == 1 ? "bf16" : "fp16", a.full_eval == 1 ? "bf16" : "fp16"), 2;
        o.precision = a.full_eval == 1 ? ZT_PRECISION_BF16 : ZT_PRECISION_FP16; /* --eval alone: the model cast */
    }
    if (!strategies(&a, o.schedule)) return 2;
    if (a.do_eval && !*a.val_data && *a.data && !a.eval && rank == 0)
        fprintf(stderr, "zt_train: warning: --do_eval evaluates on --val_data after training, and none was given (run_clm.py "
                "splits validation_split_percentage off the training set; zt does not): no evaluation\n");
    o.eot_token = a.eot;
    o.comm = comm;
    zt_model_config model_config;
    if (zt_model_config_read(&model_config, a.model) != ZT_OK) return fail(NULL);
    zt_ds_config ds;
    char ds_json[2048];
    size_t ds_len = 0;
    if (have_ac) { /* the Accelerate config's precision and DeepSpeed plugin, unless flags say otherwise */
        if (!zt_options_given(&o, "bf16") && !zt_options_given(&o, "fp16") && ac.mixed_precision[0])
            o.precision = !strcmp(ac.mixed_precision, "bf16") ? ZT_PRECISION_BF16
                        : !strcmp(ac.mixed_precision, "fp16") ? ZT_PRECISION_FP16 : ZT_PRECISION_FP32;
        if (!*a.config && ac.deepspeed_config_file[0]) a.config = ac.deepspeed_config_file;
        else if (!*a.config) ds_len = zt_accelerate_deepspeed_json(&ac, ds_json, sizeof ds_json);
    }
    zt_options flags = o;
    if (ds_len >= sizeof ds_json)
        return fprintf(stderr, "zt_train: %s: its DeepSpeed settings take %zu bytes of JSON, more than the %zu zt_train "
                       "sets aside\n", a.config_file, ds_len, sizeof ds_json), 2;
    if (!*a.config && !ds_len) memset(&ds, 0, sizeof ds), ds.world_size = world; /* none to read: DeepSpeed's defaults */
    if (!read_deepspeed(&ds, &o, &a, ds_json, ds_len, world, model_config.hidden)) return fail(NULL);
    deepspeed = *a.config || ds_len; /* the Trainer under DeepSpeed: what it logs differs */
    /* --num_train_epochs without --max_steps (which wins, as in the Trainer): the steps of that many passes over
       --data, counted as the Trainer counts them (a pass is ceil(windows / rows of a micro-batch) micro-batches, its
       steps ceil(those / accumulation), the last taking what is left), so that the schedule ends with them (the config
       is read again, from the flags, to see them in its "auto" values) */
    batch_rows = o.micro_batch * world;
    int epoch_based = a.num_train_epochs > 0 && !zt_options_given(&o, "max_steps");
    if (epoch_based && *a.data && !a.eval) {
        int64_t T = o.seq_len > 0 ? o.seq_len : model_config.max_positions < 1024 ? model_config.max_positions : 1024;
        int64_t windows = data_windows(&a, &model_config, T, a.data_seed >= 0 ? (uint64_t)a.data_seed : o.seed);
        if (windows < 0) return fail(NULL);
        int64_t batches = (windows + batch_rows - 1) / batch_rows, per_pass = (batches + o.grad_accum - 1) / o.grad_accum;
        o = flags;
        o.max_steps = (int64_t)ceil(a.num_train_epochs * (double)per_pass);
        zt_set_log(quiet, NULL); /* it said what it had to say the first time */
        int read = read_deepspeed(&ds, &o, &a, ds_json, ds_len, world, model_config.hidden);
        zt_set_log(log_max != ZT_LOG_INFO ? log_filtered : NULL, NULL);
        if (!read) return fail(NULL);
        if (rank == 0)
            printf("%g epochs of %lld windows: %lld micro-batches of %lld rows, %lld steps a pass: %lld steps\n",
                   a.num_train_epochs, (long long)windows, (long long)batches, (long long)batch_rows, (long long)per_pass,
                   (long long)o.max_steps);
    }
    if (!resolve_shares(&a, o.max_steps)) return 2;
    if (a.print_config) {
        zt_ds_config_print(&ds, &o, stdout);
        return 0;
    }
    if (planning) return plan(&spec, &o, &a);
    if (*a.fit) return fprintf(stderr, "zt_train: --fit answers with --plan, which starts no training: give --plan too\n"), 2;
    if (!*a.data && !a.eval && !*a.export_dir && a.sample <= 0) {
        fprintf(stderr, "zt_train: nothing to do: give --data (token or text files) to train; without it, --sample N, "
                "--export DIR or --eval (see --help)\n");
        return 2;
    }
    if (*a.data && !a.eval && !output_dir_ok(&a)) return 2;
    /* the model's directory (of --model, or of the config.json it names) and its config.json */
    char model_dir[4096], config_json[4200], tok_path[4200];
    snprintf(model_dir, sizeof model_dir, "%s", a.model);
    size_t ml = strlen(model_dir);
    int named_json = ml >= 5 && strcmp(model_dir + ml - 5, ".json") == 0;
    if (named_json) {
        char *slash = strrchr(model_dir, '/');
        if (slash) *slash = 0;
        else snprintf(model_dir, sizeof model_dir, ".");
    }
    if (named_json) snprintf(config_json, sizeof config_json, "%s", a.model);
    else snprintf(config_json, sizeof config_json, "%s/config.json", model_dir);
    snprintf(tok_path, sizeof tok_path, "%s/tokenizer.json", model_dir);
    if (a.sample > 0 && *a.chat && access(tok_path, R_OK) != 0) /* said before training, not after */
        return fprintf(stderr, "zt_train: --chat needs the model's tokenizer.json (and a chat template): there is no %s\n",
                       tok_path), 2;
    if (*a.export_dir && !make_dirs(a.export_dir)) /* before training, not after it */
        return fprintf(stderr, "zt_train: cannot create --export %s: %s\n", a.export_dir, strerror(errno)), 1;
    zt_engine *e = NULL;
    if (zt_init_options(&e, &spec, &o) != ZT_OK) return fail(a.model);
    /* a Hugging Face directory with weights: they replace the initialisation (a checkpoint, if resumed, then
       replaces them) */
    if (!*a.resume && zt_hf_has_weights(model_dir)) {
        if (zt_load_hf(e, model_dir) != ZT_OK) return fail(NULL);
        printf("%s: weights from model.safetensors\n", model_dir);
    }
    const zt_model_config *mc = zt_engine_model_config(e);
    o = *zt_engine_options(e);
    int64_t B = o.micro_batch, T = o.seq_len;
    int32_t *tok = (int32_t *)calloc((size_t)(2 * B * T + 16), sizeof(int32_t));
    int32_t *targets = tok + B * T;
    double speed[3]; /* an evaluation's runtime and rates */
    eval_buf evalbuf = {(int32_t *)calloc((size_t)(5 * B * T + 16), sizeof(int32_t)),
                        (double *)calloc(2 * (size_t)world * (size_t)B, sizeof(double)),
                        (double *)calloc((size_t)B, sizeof(double)), (double *)calloc(4 * (size_t)B, sizeof(double)),
                        (int64_t *)calloc((size_t)B, sizeof(int64_t)), a.eval_batch};
    if (!tok || !evalbuf.rows || !evalbuf.sums || !evalbuf.row_sums || !evalbuf.acc || !evalbuf.row_counts)
        return fprintf(stderr, "zt_train: out of memory\n"), 1;

    if (a.eval) {
        zt_data *rows = NULL;
        if (!*a.data) return fprintf(stderr, "zt_train: --eval needs --data\n"), 2;
        if (*a.resume && zt_load(e, a.resume, NULL) != ZT_OK) return fail(NULL);
        zt_data *masked = NULL;
        if (!open_rows(e, &a, a.data, NULL, &rows) || (*a.mask && !open_rows(e, &a, a.data, a.mask, &masked)))
            return fail(NULL);
        printf("loss %.6f\n", evaluate(e, rows, masked, &evalbuf));
        zt_data_close(rows), zt_data_close(masked);
        return *a.export_dir ? export_model(e, &a, &o) : 0; /* the model evaluated, as a Hugging Face directory too */
    }
    zt_data *val = NULL;
    if (*a.val_data && !open_rows(e, &a, a.val_data, NULL, &val)) return fail(NULL);
    if (*a.val_mask && !*a.val_data) return fprintf(stderr, "zt_train: --val_mask is for --val_data, and there is none\n"), 2;
    if (*a.val_mask && !open_rows(e, &a, a.val_data, a.val_mask, &val_masked)) return fail(NULL);
    zt_data *data = NULL;
    if (*a.data) {
        zt_data_desc d;
        memset(&d, 0, sizeof d);
        d.path = a.data;
        d.mask_path = *a.mask ? a.mask : NULL;
        d.format = a.format;
        d.vocab = mc->vocab;
        d.seq_len = T;
        d.rows = B;
        d.seed = a.data_seed >= 0 ? (uint64_t)a.data_seed : o.seed; /* --data_seed, as the Trainer's sampler takes it */
        d.shuffle = strcmp(a.sampling, "sequential") != 0; /* --train_sampling_strategy */
        d.rank = rank, d.world = world; /* each rank its own rows; together what one rank at world x the batch reads */
        if (zt_data_open(&data, &d) != ZT_OK) return fail(NULL);
        data_notes(&a, mc->vocab, tok_path);
    }
    if (*a.resume && zt_load(e, a.resume, data) != ZT_OK) return fail(NULL);
    if (*a.resume && data && a.ignore_data_skip) { /* the Trainer's: the pass it was in, from its start (its order);
                                                       saved at a pass's end, the next pass */
        int64_t epoch, index;
        zt_data_cursor(data, &epoch, &index);
        zt_data_seek(data, epoch + (index >= zt_data_windows(data)), 0);
    }
    int stopped = 0; /* --enable_jit_checkpoint, after a SIGTERM */
    if (data) {
        printf("%s: %lld parameters | %lld tokens in %lld windows of %lld | %lld steps of %lld x %lld x %lld tokens\n",
               a.model, (long long)zt_engine_param_count(e), (long long)zt_data_tokens(data),
               (long long)zt_data_windows(data), (long long)T, (long long)o.max_steps, (long long)o.grad_accum,
               (long long)B, (long long)T);
        if (!make_dirs(a.output_dir))
            return fprintf(stderr, "zt_train: cannot create --output_dir %s: %s\n", a.output_dir, strerror(errno)), 1;
        char metrics[4200];
        snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", a.output_dir);
        if (a.overwrite == 1 && !*a.resume && rank == 0) unlink(metrics); /* a new run's log */
        if (*a.resume && rank == 0) trim_metrics(a.output_dir, zt_engine_step(e));
        if (report_tb && rank == 0 && !tb_open(&a)) return 1;
        if (report_tb && rank == 0) tb_texts(&ds, &o, config_json);
        double tb_loss = 0.0, run_loss = 0.0; /* losses since the last logged step, and of this run */
        int64_t tb_steps = 0, first_step = zt_engine_step(e), last_saved = -1; /* the step this run saved last */
        uint64_t started = zt_time_ns();
        /* the checkpoints, oldest first: --save_total_limit removes from the front, and those an earlier run left
           count too. Room for them and for the limit's (set aside now: nothing is allocated while training) */
        int64_t *saved = NULL, n_saved = 0, cap = 0;
        DIR *dir = opendir(a.output_dir);
        for (struct dirent *de; dir && (de = readdir(dir)) != NULL;) {
            long long step;
            char rest;
            if (sscanf(de->d_name, "global_step%lld%c", &step, &rest) != 1) continue;
            if (n_saved == cap && !(saved = (int64_t *)realloc(saved, sizeof(int64_t) * (size_t)(cap = 2 * cap + 64))))
                return fprintf(stderr, "zt_train: out of memory listing %s\n", a.output_dir), 1;
            int64_t at = n_saved++;
            while (at > 0 && saved[at - 1] > step) saved[at] = saved[at - 1], at--;
            saved[at] = step;
        }
        if (dir) closedir(dir);
        cap = n_saved + a.save_total_limit + 4;
        if (!(saved = (int64_t *)realloc(saved, sizeof(int64_t) * (size_t)cap)))
            return fprintf(stderr, "zt_train: out of memory listing %s\n", a.output_dir), 1;
        best_model best = {a.greater_is_better ? -INFINITY : INFINITY, -1, -1, ""};
        int64_t per_pass = (pass_batches(data) + o.grad_accum - 1) / o.grad_accum; /* the state's settings */
        run_state.max_steps = o.max_steps, run_state.batch = o.micro_batch, run_state.save_steps = a.save_steps;
        run_state.logging_steps = a.logging_steps, run_state.eval_steps = a.eval_steps > 0 ? a.eval_steps : a.logging_steps;
        run_state.epochs = (o.max_steps + per_pass - 1) / per_pass, run_state.epoch = epochs_read(data);
        if (*a.resume && !read_trainer_state(a.resume, &best, *a.metric_for_best_model != 0)) return 2;
        if (!(flos_all = (double *)calloc((size_t)world, sizeof(double))))
            return fprintf(stderr, "zt_train: out of memory\n"), 1;
        /* ZT_TRAIN_TEST_KILL=RANK:STEP kills that rank in that step (the launcher's failure tests) */
        int kill_rank = -1;
        long kill_step = -1;
        if (getenv("ZT_TRAIN_TEST_KILL")) sscanf(getenv("ZT_TRAIN_TEST_KILL"), "%d:%ld", &kill_rank, &kill_step);
        int hang_rank = -1; /* ZT_TRAIN_TEST_HANG=RANK:STEP: that rank stops there, deaf to SIGTERM */
        long hang_step = -1;
        if (getenv("ZT_TRAIN_TEST_HANG")) sscanf(getenv("ZT_TRAIN_TEST_HANG"), "%d:%ld", &hang_rank, &hang_step);
        if (a.eval_on_start) /* the Trainer's sanity check: logged, and neither a best model nor a schedule's step */
            report_eval(e, &a, val, &evalbuf, zt_engine_step(e), epochs_read(data), speed);
        struct sigaction on_term, old_term; /* --enable_jit_checkpoint: during training, as the Trainer's callback */
        memset(&on_term, 0, sizeof on_term);
        on_term.sa_handler = on_sigterm;
        on_term.sa_flags = SA_RESTART; /* reads, writes and collectives carry on */
        sigemptyset(&on_term.sa_mask);
        if (a.jit_ckpt) sigaction(SIGTERM, &on_term, &old_term);
        for (int64_t step = zt_engine_step(e); step < o.max_steps; step++) {
            int64_t epoch, index;
            zt_data_cursor(data, &epoch, &index);
            uint64_t t0 = zt_time_ns();
            int64_t pass = epoch + (index >= zt_data_windows(data)); /* the pass this step reads first */
            int hang = hang_rank == rank && hang_step == zt_engine_step(e) + 1;
            if (hang) signal(SIGTERM, SIG_IGN); /* deaf from the step's start: a SIGTERM mid-step finds it so too */
            for (int64_t m = 0; m < o.grad_accum; m++) {
                int64_t rows = zt_data_next(data, tok, targets, o.ignore_index);
                zt_forward_backward(e, tok, targets, NULL, rows);
                flos_rank += zt_floating_point_ops(e, rows * T); /* the Trainer's: its batch's input_ids */
                zt_data_cursor(data, &epoch, &index);
                if (index >= zt_data_windows(data)) break; /* a pass's last step takes what is left of it, as the Trainer's */
            }
            if (kill_rank == rank && kill_step == zt_engine_step(e) + 1) raise(SIGKILL); /* the failure tests */
            while (hang) pause(); /* the launcher's ZT_KILL_GRACE test */
            zt_step_info s = zt_step(e);
            /* the rate the Trainer logs: the step's own, or under DeepSpeed (whose step() has moved the schedule by
               then) the next step's */
            float lr = deepspeed ? s.next_lr : s.lr;
            double ms = (double)(zt_time_ns() - t0) / 1e6;
            zt_data_cursor(data, &epoch, &index); /* where the next step reads: the logs' epoch */
            /* this step finished a pass, or the run (the Trainer's on_epoch_end after its loop stops) */
            int epoch_end = epoch + (index >= zt_data_windows(data)) > pass || s.step >= o.max_steps;
            if (n_train < MAX_POINTS) train_curve[n_train][0] = (float)s.step, train_curve[n_train++][1] = s.loss;
            double epochs = epochs_read(data);
            char num[3][32];
            int n = snprintf(line, sizeof line,
                             "{\"step\": %lld, \"loss\": %s, \"learning_rate\": %s, \"grad_norm\": %s, "
                             "\"epoch\": %.4f, \"ms\": %.1f, \"tokens_per_s\": %.0f, \"mem_bytes\": %zu}\n",
                             (long long)s.step, jnum(s.loss, 9, num[0]), jnum(lr, 6, num[1]), jnum(s.grad_norm, 6, num[2]),
                             epochs, ms,
                             (double)s.tokens * 1000.0 / ms, zt_arena_peak(zt_backend_device_arena(zt_engine_backend(e))));
            if (rank == 0) write_file(a.output_dir, "metrics.jsonl", line, (size_t)n, 1);
            int log = (a.logging_first_step && s.step == 1) || (strcmp(a.logging_strategy, "epoch") == 0 ? epoch_end
                    : strcmp(a.logging_strategy, "steps") == 0 && a.logging_steps > 0 &&
                          (s.step % a.logging_steps == 0 || s.step == 1 || s.step == o.max_steps));
            tb_loss += s.loss, tb_steps++, run_loss += s.loss;
            int tb_log = (a.logging_first_step && s.step == 1) /* where the Trainer logs: the first step whatever */
                       || (strcmp(a.logging_strategy, "epoch") == 0 ? epoch_end
                           : strcmp(a.logging_strategy, "steps") == 0 && a.logging_steps > 0 && s.step % a.logging_steps == 0);
            run_state.epoch = epochs;
            if (tb_log) { /* the Trainer's logs: the mean loss since the last, the step's norm and rate */
                char f[4][32];
                history_add("{\"epoch\": %s, \"grad_norm\": %s, \"learning_rate\": %s, \"loss\": %s, \"step\": %lld}",
                            py(epochs, f[0]), py(s.grad_norm, f[1]), py(lr, f[2]), py(tb_loss / (double)tb_steps, f[3]),
                            (long long)s.step);
                tb_scalar("train/loss", tb_loss / (double)tb_steps, s.step);
                tb_scalar("train/grad_norm", s.grad_norm, s.step);
                tb_scalar("train/learning_rate", lr, s.step);
                tb_scalar("train/epoch", epochs, s.step);
                tb_loss = 0.0, tb_steps = 0;
            }
            if (log) {
                printf("step %lld/%lld | loss %.6f | lr %.2e | grad_norm %.2f | %.1f ms | %.0f tok/s | mem %.2f GiB%s\n",
                       (long long)s.step, (long long)o.max_steps, s.loss, lr, s.grad_norm, ms,
                       (double)s.tokens * 1000.0 / ms,
                       (double)zt_arena_peak(zt_backend_device_arena(zt_engine_backend(e))) / (1 << 30), s.skipped ? " | skipped" : "");
                fflush(stdout);
            }
            if (s.step == 1 && rank == 0) zt_memory_report(e, "after the first step"); /* rank 0 holds the most */
            int eval = strcmp(a.eval_strategy, "epoch") == 0 ? epoch_end && a.eval_delay <= epochs
                     : strcmp(a.eval_strategy, "steps") == 0 && a.eval_delay <= (double)s.step &&
                           (s.step % a.eval_steps == 0 || s.step >= o.max_steps); /* the last step too, as the Trainer */
            int improved = 0; /* strictly better than the best so far, as the Trainer compares */
            if (eval && val) { /* the ranks split --val_data */
                double v = report_eval(e, &a, val, &evalbuf, s.step, epochs, speed);
                improved = *a.metric_for_best_model && (a.greater_is_better ? v > best.metric : v < best.metric);
                if (improved) best.metric = v, best.step = strcmp(a.save_strategy, "no") != 0 ? s.step : -1;
                zt_schedule_observe(e, v); /* reduce_lr_on_plateau and greedy: the Trainer's metric_for_best_model */
            }
            int save = strcmp(a.save_strategy, "epoch") == 0 ? epoch_end
                     : strcmp(a.save_strategy, "best") == 0 ? improved
                     : strcmp(a.save_strategy, "steps") == 0 && a.save_steps > 0 && s.step % a.save_steps == 0;
            if (save) {
                if (!save_checkpoint(e, &a, data, s.step, &best, saved, &n_saved, cap)) return 1;
                last_saved = s.step;
                if (rank == 0) write_svg(a.output_dir);
            }
            /* after the step's evaluation (it moves the best model and the plateau schedules), so that --resume
               goes on as the run would have */
            if (a.jit_ckpt && stop_requested(e, evalbuf.sums)) {
                stopped = 1;
                break;
            }
        }
        if (a.jit_ckpt) { /* the handler goes, as the Trainer's at the end of training; a signal since the last
                             step's look is that step's checkpoint */
            sigaction(SIGTERM, &old_term, NULL);
            stopped = stopped || stop_requested(e, evalbuf.sums);
        }
        /* the last step, unless this run just saved it ("best" saves only its best; a checkpoint of that step an
           earlier run left is replaced: it holds that run's weights); after a SIGTERM whatever the strategy */
        int saving = stopped || (strcmp(a.save_strategy, "no") != 0 && strcmp(a.save_strategy, "best") != 0);
        if (saving && last_saved != zt_engine_step(e) && (stopped || zt_engine_step(e) > first_step)) {
            if (!save_checkpoint(e, &a, data, zt_engine_step(e), &best, saved, &n_saved, cap)) return 1;
        }
        free(saved);
        if (stopped)
            printf("SIGTERM: saved %s/global_step%lld; --resume %s continues the run\n", a.output_dir,
                   (long long)zt_engine_step(e), a.output_dir);
        if (rank == 0) write_svg(a.output_dir);
        int64_t steps = zt_engine_step(e) - first_step; /* the Trainer's summary at the end of training */
        double runtime = (double)(zt_time_ns() - started) / 1e9;
        store_flos(e);
        if (runtime > 0) { /* a resumed run with no step left writes them too, as the Trainer's (its loss 0) */
            int64_t at = zt_engine_step(e);
            /* the Trainer's train samples: by epochs, the set's rows times the epochs (for the share of the steps this run
               took); by --max_steps, the steps times the rows of a full step */
            double samples = epoch_based ? (double)zt_data_windows(data) * a.num_train_epochs * (double)steps / (double)o.max_steps
                                         : (double)(steps * B * o.grad_accum * world);
            double loss = steps > 0 ? run_loss / (double)steps : 0.0, epoch = epochs_read(data);
            /* run_clm's train metrics: train_samples is the training set's rows */
            const metric m[7] = {{"epoch", epoch, 0}, {"total_flos", flos_total, 0}, {"train_loss", loss, 0},
                                 {"train_runtime", round_to(runtime, 4), 0},
                                 {"train_samples", (double)zt_data_windows(data), 1},
                                 {"train_samples_per_second", round_to(samples / runtime, 3), 0},
                                 {"train_steps_per_second", round_to((double)steps / runtime, 3), 0}};
            tb_scalar("train/train_runtime", runtime, at);
            tb_scalar("train/train_samples_per_second", samples / runtime, at);
            tb_scalar("train/train_steps_per_second", (double)steps / runtime, at);
            tb_scalar("train/total_flos", flos_total, at);
            tb_scalar("train/train_loss", loss, at);
            tb_scalar("train/epoch", epoch, at);
            if (rank == 0) report_metrics(&a, "train", m, 7);
            char f[6][32];
            history_add("{\"epoch\": %s, \"step\": %lld, \"total_flos\": %s, \"train_loss\": %s, \"train_runtime\": %s, "
                        "\"train_samples_per_second\": %s, \"train_steps_per_second\": %s}", py(epoch, f[0]), (long long)at,
                        py(flos_total, f[1]), py(loss, f[2]), py(m[3].v, f[3]), py(m[5].v, f[4]), py(m[6].v, f[5]));
            run_state.epoch = epoch;
            if (rank == 0 && !write_trainer_state(a.output_dir, at, &best)) return 1;
        }
        zt_events_close(&tb);
        int64_t last_step = zt_engine_step(e); /* the Trainer's global_step, whichever weights are loaded below */
        if (stopped) a.export_dir = "", a.sample = 0; /* the run goes on after --resume: nothing half trained out */
        else if (a.load_best_model_at_end && best.checkpoint >= 0) { /* before --export and --sample */
            printf("loading the best checkpoint, %s (eval_loss %.6f)\n", best.path, best.metric);
            if (zt_load(e, best.path, NULL) != ZT_OK) return fail(NULL);
        }
        if (a.do_eval && val && !stopped) { /* run_clm's do_eval: the model trained (or the best), on --val_data */
            double v = report_eval(e, &a, val, &evalbuf, last_step, epochs_read(data), speed);
            const metric m[7] = {{"epoch", epochs_read(data), 0}, {"eval_loss", v, 0}, {"eval_runtime", speed[0], 0},
                                 {"eval_samples", (double)zt_data_windows(val), 1},
                                 {"eval_samples_per_second", speed[1], 0}, {"eval_steps_per_second", speed[2], 0},
                                 {"perplexity", exp(v), 0}}; /* inf past exp's range, as run_clm's OverflowError */
            if (rank == 0) report_metrics(&a, "eval", m, 7);
        }
    }
    int exported = *a.export_dir ? export_model(e, &a, &o) : 0;
    if (exported) return exported;
    int sampled = a.sample > 0 ? sample(e, &a, model_dir, tok_path, mc ? mc->vocab : 0, o.seq_len, o.seed) : 0;
    if (sampled) return sampled;
    zt_data_close(data);
    zt_data_close(val);
    zt_shutdown(e);
    zt_comm_destroy(comm);
    free(tok);
    free(evalbuf.rows);
    free(evalbuf.sums);
    free(evalbuf.row_sums), free(evalbuf.acc), free(evalbuf.row_counts);
    free(eargv);
    return stopped ? 128 + SIGTERM : 0;
}
