/* tests/fuzz/fuzz_options.c - libFuzzer target: option parsing (common/options.c) from
 * the environment and from argv, the list join/split round trip, output templates and
 * the quoting of values in messages (common/log.c).
 * Input: NUL-separated words. A word starting with a byte from 0x01 to RP_OPT_COUNT sets
 * the environment variable of that option (table row) to the rest; one starting with
 * 0x1f sets RANGEPROF_<rest> (any name), for the typo warnings of rp_options_env_typos;
 * the others form argv. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char **split_out;
static size_t split_count;

static int collect(const char *element, void *arg)
{
	(void)arg;
	split_out = realloc(split_out, (split_count + 1) * sizeof(*split_out));
	split_out[split_count++] = strdup(element);
	return 0;
}

/* What join then split must give back for e: lone ';' written "\;". */
static char *canonical(const char *e)
{
	char *out = malloc(2 * strlen(e) + 1), *w = out;
	for (; *e; e++) {
		if (*e == '\\' && e[1])
			*w++ = *e++;
		else if (*e == ';')
			*w++ = '\\';
		*w++ = *e;
	}
	*w = '\0';
	return out;
}

static void check_round_trip(char *const *list, size_t count)
{
	char *joined = rp_option_join_list(list, count);
	if (!joined)
		return; /* an element ending in a lone backslash */
	rp_option_split_list(joined, collect, NULL);
	if (split_count != count)
		abort();
	for (size_t i = 0; i < count; i++) {
		char *want = canonical(list[i]);
		if (strcmp(want, split_out[i]))
			abort();
		free(want);
		free(split_out[i]);
	}
	free(split_out);
	split_out = NULL;
	split_count = 0;
	free(joined);
}

static void check_message(const char *err)
{
	/* One line, no control characters, bounded: whatever the input was. */
	size_t len = strlen(err);
	if (!len || len > 2000)
		abort();
	for (const char *p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
}

static void check_line(const char *line, void *arg)
{
	(void)arg;
	check_message(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	char *argv[64] = { "rangeprof" };
	int argc = 1;
	const struct rp_option_desc *table = rp_option_table();
	bool set_env[RP_OPT_COUNT] = { false };
	char *other_env[8];
	size_t others = 0;
	for (size_t i = 0; i < size && argc < 63;) {
		char *word = text + i;
		size_t len = strlen(word);
		if (word[0] == 0x1f && len > 1 && !strchr(word, '=') && others < 8) {
			/* A RANGEPROF_ variable of any name, for rp_options_env_typos. */
			if ((other_env[others] = malloc(len + 10))) {
				snprintf(other_env[others], len + 10, "RANGEPROF_%s", word + 1);
				setenv(other_env[others++], "1", 1);
			}
		} else if (word[0] >= 1 && word[0] <= RP_OPT_COUNT) {
			char name[64];
			int id = word[0] - 1;
			rp_option_env_name(&table[id], name, sizeof(name));
			setenv(name, word + 1, 1);
			set_env[id] = true;
		} else {
			argv[argc++] = word;
		}
		i += len + 1;
	}
	argv[argc] = NULL;

	struct rp_options opts;
	char err[1024] = "";
	rp_options_init(&opts);
	if (rp_options_load_env(&opts, err, sizeof(err)) == 0) {
		int app;
		enum rp_action action;
		err[0] = '\0';
		if (rp_options_parse_argv(&opts, argc, argv, &app, &action, err, sizeof(err)))
			check_message(err);
		else if (app < 1 || app > argc)
			abort();
	} else {
		check_message(err);
	}
	rp_options_env_typos(check_line, NULL);
	check_round_trip(opts.nvtx_include, opts.nvtx_include_count);
	check_round_trip(opts.nvtx_exclude, opts.nvtx_exclude_count);
	char path[4096], why[512];
	if (opts.output && rp_output_path_expand(opts.output, 42, path, sizeof(path), why,
						 sizeof(why)))
		check_message(why);
	char q[RP_QUOTE_SIZE];
	for (int i = 1; i < argc; i++) {
		rp_quote(argv[i], q, sizeof(q));
		if (strlen(q) >= sizeof(q))
			abort();
		for (const char *p = q; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
	}
	rp_options_finish(&opts);
	for (int i = 0; i < RP_OPT_COUNT; i++) {
		if (set_env[i]) {
			char name[64];
			rp_option_env_name(&table[i], name, sizeof(name));
			unsetenv(name);
		}
	}
	for (size_t i = 0; i < others; i++) {
		unsetenv(other_env[i]);
		free(other_env[i]);
	}
	free(text);
	return 0;
}
