/* Compile check under nvcc (-x cu -std=c++17, host warnings and all nvcc warnings as errors):
   this is the translation unit that also pulls in zt_cuda.cuh. */
#include "compile_c.c"
