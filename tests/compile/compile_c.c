/* Compile check: the whole implementation in one translation unit with -Wall -Wextra -Werror.
   build.sh compiles this file as C11 (gcc, clang); compile_cpp.cpp, compile_cuda.cu and
   compile_static.c include it to compile the same unit as C++17, under nvcc and with ZT_STATIC.
   The function below uses a little of the API so that the unit is not empty. */
#define ZT_IMPLEMENTATION
#include "../../zt.h"

int zt_compile_check(void);
int zt_compile_check(void) {
    char buf[64];
    zt_tensor t = zt_tensor_make(NULL, ZT_BF16, ZT_HOST, zt_shape3(2, 3, 4));
    zt_shape_str(t.shape, buf, sizeof buf);
    zt_arena a;
    zt_arena_init_measure(&a, "compile check");
    float *p = ZT_PUSH(&a, float, zt_numel(t));
    (void)p;
    float back = zt_bf16_to_f32(zt_f32_to_bf16(1.5f));
    return (int)zt_nbytes(t) + (int)back + (int)zt_arena_peak(&a) + (buf[0] == '(') +
           (zt_result_name(ZT_OK) != NULL);
}
