/* The implementation, compiled once per configuration; every test and program links against it. */
#define ZT_IMPLEMENTATION
#include "../zt.h"
