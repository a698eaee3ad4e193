/* tests/test_meta.c - a second, private copy of the implementation (ZT_STATIC) beside the shared one,
   compiled as gcc -std=c11 by the suite: its stb_ds tables must live in the metadata arena. */
#define ZT_STATIC
#define ZT_IMPLEMENTATION
#include "../zt.h"
#include "test.h"

typedef struct { int key; double value; } int_double;

TEST(stb_ds_tables_live_in_the_meta_arena) {
    static _Alignas(64) uint8_t mem[1 << 20];
    zt_arena meta;
    zt_arena_init(&meta, "metadata", mem, sizeof mem);
    zt_arena *old = zt_set_meta_arena(&meta);
    int_double *map = NULL;
    for (int i = 0; i < 2000; i++) {
        int k = i * 7;
        stbds_hmput(map, k, i * 0.5);
    }
    int probe = 700;
    CHECK(stbds_hmget(map, probe) == 50.0);
    CHECK_EQ_INT(stbds_hmlen(map), 2000);
    CHECK((uint8_t *)map >= mem && (uint8_t *)map < mem + sizeof mem);
    CHECK(meta.used > 2000 * sizeof(int_double));
    zt_set_meta_arena(old);
}
