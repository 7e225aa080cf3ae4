/* The bochscpu-python wheel calls two glibc 2.38 names for old functions; on an
 * older glibc, preloading these forwards them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

unsigned long long __isoc23_strtoull(const char *s, char **end, int base) {
    return strtoull(s, end, base);
}

int __isoc23_sscanf(const char *s, const char *format, ...) {
    va_list args;
    va_start(args, format);
    int assigned = vsscanf(s, format, args);
    va_end(args);
    return assigned;
}
