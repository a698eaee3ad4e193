/* Compile check as C++17 (g++ -x c++ -std=c++17 -Wall -Wextra -Werror). */
#include "compile_c.c"
