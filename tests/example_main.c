/* The usage example from zt.h's top comment, as a program. build.sh extracts the lines between
   //>>example and //<<example into build/gen/example_body.inc, builds this file against the
   implementation and checks that the output contains "y[0] = 1.50". */
#include "../zt.h"
#include <stdio.h>

int main(void) {
#include "example_body.inc"
    return 0;
}
