/* tests/fuzz/fuzz_config.c - libFuzzer target for zt's JSON readers: DeepSpeed configs and Hugging Face
   config.json files, from arbitrary bytes. Built and run by ./build.sh fuzz (clang, with the fuzzer,
   address and undefined-behaviour sanitizers); any crash, sanitizer report or abort is a failure. */
#define ZT_IMPLEMENTATION
#include "../../zt.h"

static void quiet(zt_log_level level, const char *msg, void *user) { (void)level, (void)msg, (void)user; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    zt_set_log(quiet, NULL);
    zt_ds_config c;
    zt_options o = zt_options_default();
    zt_ds_config_parse(&c, &o, (const char *)data, size, "fuzz.json", 1 + (int)(size % 8), 64);
    zt_model_config m;
    zt_model_config_parse(&m, (const char *)data, size, "fuzz.json");
    zt_accelerate_config ac;
    if (zt_accelerate_config_parse(&ac, (const char *)data, size, "fuzz.yaml") == ZT_OK) {
        char json[2048];
        size_t n = zt_accelerate_deepspeed_json(&ac, json, sizeof json);
        if (n > 0 && n < sizeof json) zt_ds_config_parse(&c, &o, json, n, "fuzz.yaml", 1, 64);
    }
    return 0;
}
