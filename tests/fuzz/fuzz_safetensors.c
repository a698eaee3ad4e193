/* tests/fuzz/fuzz_safetensors.c - libFuzzer target for zt's safetensors reader: the header parsed and
   every tensor checked from arbitrary bytes, as a file's contents. Built and run by ./build.sh fuzz. */
#define ZT_IMPLEMENTATION
#include "../../zt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    zt__st st;
    memset(&st, 0, sizeof st);
    st.n_files = 1;
    snprintf(st.path[0], ZT__PATH, "fuzz.safetensors");
    st.map[0] = data;
    st.bytes[0] = size;
    if (zt__st_parse(&st, 0) == ZT_OK && zt__st_check_overlaps(&st) == ZT_OK && st.n > 0) {
        volatile uint8_t sum = 0; /* every range it accepted is readable */
        for (int i = 0; i < st.n; i++)
            if (st.e[i].end > st.e[i].begin) sum ^= st.e[i].data[0] ^ st.e[i].data[st.e[i].end - st.e[i].begin - 1];
        (void)sum;
    }
    st.map[0] = NULL; /* not ours to unmap */
    zt__st_close(&st);
    return 0;
}
