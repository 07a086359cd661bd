/* scripts/flush_text_tool.c - rp_flush_text, a build tool: writes one text of the cache
 * flush's kernel (inject/session/flush_text.c) to a file, for scripts/flush_image.py to
 * compile ahead. Built from the same flush_text.c, with the same figures, as the library
 * that loads the result (inject/meson.build).
 *     rp_flush_text EMPTY PER_SM OUT.ptx     EMPTY 0 or 1, PER_SM 1 or 2 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/session/flush_text.h"

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "0") && strcmp(argv[1], "1")) ||
	    (strcmp(argv[2], "1") && strcmp(argv[2], "2"))) {
		fprintf(stderr, "usage: %s EMPTY PER_SM OUT.ptx (EMPTY 0 or 1, PER_SM 1 or 2; "
			"given %d arguments%s%s%s%s)\n", argv[0], argc - 1, argc > 1 ? ": " : "",
			argc > 1 ? argv[1] : "", argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
		return 2;
	}
	char *text = inject_flush_text(argv[1][0] == '1', argv[2][0] - '0');
	if (!text) {
		fprintf(stderr, "%s: out of memory for the text\n", argv[0]);
		return 1;
	}
	FILE *out = fopen(argv[3], "w");
	size_t len = strlen(text);
	bool ok = out && fwrite(text, 1, len, out) == len;
	if (out && fclose(out) != 0)
		ok = false;
	free(text);
	if (!ok) {
		fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[3]);
		return 1;
	}
	return 0;
}
