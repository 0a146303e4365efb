/* base/version.c — version of the linked library. */
#include "base/base.h"

const char *defo_version(void) {
    return DEFO_VERSION_STRING;
}
int defo_version_number(void) {
    return DEFO_VERSION;
}
