/* tests/fuzz/replay.c - a fuzz target's inputs run once each, without libFuzzer: linked with one
   tests/fuzz/fuzz_*.c, so ./build.sh test builds every target and replays its seeds (a file that once
   crashed a reader, kept in the seeds, stays a test). Usage: replay FILE...; exits 0 when every input
   returned (a crash or a sanitizer report ends the process otherwise). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "replay: cannot open %s\n", argv[i]);
            return 1;
        }
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *data = (uint8_t *)malloc(size > 0 ? (size_t)size : 1);
        if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
            fprintf(stderr, "replay: cannot read %s\n", argv[i]);
            return 1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(data, (size_t)size);
        free(data);
        n++;
    }
    printf("replay: %d inputs\n", n);
    return 0;
}
