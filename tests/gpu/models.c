/* tests/gpu/models.c - with tests/main.c and tests/test_models.c, build/gpu_models_cuda: the model tests (the
   fixtures' losses, gradients, sampling and 10 steps against PyTorch's values) with the engine on the CUDA backend,
   fp32 and bf16, and the GPU tolerances of tests/test_models.c. Arguments and output are the test runner's
   (ZT_TEST_VERBOSE=1 prints each model's measured errors); ZT_TEST_BACKEND=cpu runs the same tests on the CPU. */
#include "../test.h"

__attribute__((constructor)) static void gpu_models_backend(void) {
    setenv("ZT_TEST_BACKEND", "cuda", 0); /* 0: a ZT_TEST_BACKEND given by the caller stays */
}
