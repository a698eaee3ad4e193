/* Compile check with ZT_STATIC: every zt function is static and marked unused, so this unit, which
   uses only a few of them, must still build with -Wall -Wextra -Werror (as C11 and as C++17). */
#define ZT_STATIC
#include "compile_c.c"
