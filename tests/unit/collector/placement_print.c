/* tests/unit/collector/placement_print.c - collector/placement.c's reason for cases read
 * from stdin, for python/tests/test_placement.py, which compiles this file with
 * placement.c and compares the output with rangeprof/placement.py's reason() on the same
 * cases. Not a Criterion test and not built by meson: it needs only libc and libm.
 *
 * Input, one case per line: read bytes, write bytes, L2 bytes, as strtod reads them (nan,
 * inf, hex floats: Python's float.hex() gives them exactly). Output, one line per case:
 * the reason in the 128-byte buffer records.c gives it, or '-' where there is none. */
#include <stdio.h>
#include <stdlib.h>

#include "collector/placement.h"

int main(void)
{
	char line[512];
	while (fgets(line, sizeof(line), stdin)) {
		char *p = line, *end;
		double v[3];
		for (int i = 0; i < 3; i++, p = end) {
			v[i] = strtod(p, &end);
			if (end == p) {
				/* The test wrote the line: a token that is no number is its mistake. */
				fprintf(stderr, "placement_print: no number %d in '%s'\n", i + 1, line);
				return 2;
			}
		}
		char why[128];
		size_t n = collector_placement_reason(v[0], v[1], v[2], why, sizeof(why));
		printf("%s\n", n ? why : "-");
	}
	return 0;
}
