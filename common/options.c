/* common/options.c - the option table, its parsing, validation and help text.
 * Used by the launcher (scripts/launcher.c) before the application starts and by the
 * injected library (inject/) when CUDA initialises it. libc only. */
#include "common/options.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------ */
/* The table                                                                            */
/* ------------------------------------------------------------------------------------ */

static const struct rp_option_desc table[RP_OPT_COUNT] = {
	{ RP_OPT_OUTPUT, "output", 'o', RP_KIND_STRING, "PATH", "rangeprof.%p.jsonl", NULL, 0, 0,
	  "JSON Lines file, appended to; %p pid, %h host name, %% a literal %" },
	{ RP_OPT_METRICS, "metrics", 0, RP_KIND_STRING, "LIST", "gpu__time_duration.sum", NULL,
	  0, 0, "comma-separated metric names to collect for each run" },
	{ RP_OPT_NVTX_INCLUDE, "nvtx-include", 0, RP_KIND_LIST, "EXPR", NULL, NULL, 0, 0,
	  "select launches inside matching NVTX ranges (ncu syntax; repeatable)" },
	{ RP_OPT_NVTX_EXCLUDE, "nvtx-exclude", 0, RP_KIND_LIST, "EXPR", NULL, NULL, 0, 0,
	  "skip launches inside matching NVTX ranges (ncu syntax; repeatable)" },
	{ RP_OPT_KERNEL_NAME, "kernel-name", 'k', RP_KIND_STRING, "NAME", NULL, NULL, 0, 0,
	  "measure only kernels of this exact (demangled or mangled) name, or regex:RE" },
	{ RP_OPT_LAUNCH_SKIP, "launch-skip", 's', RP_KIND_INT, "N", "0", NULL, 0, LONG_MAX,
	  "skip the first N launches that pass the filters" },
	{ RP_OPT_LAUNCH_COUNT, "launch-count", 'c', RP_KIND_INT, "N", NULL, NULL, 1, LONG_MAX,
	  "measure at most N launches, then let the application run on unmeasured" },
	{ RP_OPT_RUNS, "runs", 0, RP_KIND_INT, "N", "5", NULL, 1, 100000,
	  "measured replays of each selected launch" },
	{ RP_OPT_CACHE_CONTROL, "cache-control", 0, RP_KIND_CHOICE, "all|none", "all",
	  "all|none", 0, 0, "all: flush the L2 cleanly before every replay; none: do not" },
	{ RP_OPT_CLOCK_CONTROL, "clock-control", 0, RP_KIND_CHOICE, "base|none", "none",
	  "base|none", 0, 0,
	  "base: lock SM clocks to base for the session (needs root); none: leave them" },
	{ RP_OPT_MEMORY_SAVE, "memory-save", 0, RP_KIND_CHOICE, "reach|checkpoint", "reach",
	  "reach|checkpoint", 0, 0,
	  "reach: save only the memory a launch can reach, verified per kernel; checkpoint: "
	  "save all device memory at every measured launch" },
	{ RP_OPT_LIST_METRICS, "list-metrics", 0, RP_KIND_FLAG, NULL, NULL, NULL, 0, 0,
	  "print the metrics the device supports, with units and descriptions, and exit" },
	{ RP_OPT_QUIET, "quiet", 'q', RP_KIND_FLAG, NULL, NULL, NULL, 0, 0,
	  "no progress lines on stderr" },
};

const struct rp_option_desc *rp_option_table(void)
{
	return table;
}

const struct rp_option_desc *rp_option_find_long(const char *name, size_t name_len)
{
	for (size_t i = 0; i < RP_OPT_COUNT; i++)
		if (strlen(table[i].name) == name_len && !memcmp(table[i].name, name, name_len))
			return &table[i];
	return NULL;
}

const struct rp_option_desc *rp_option_find_short(char c)
{
	for (size_t i = 0; i < RP_OPT_COUNT; i++)
		if (c && table[i].short_name == c)
			return &table[i];
	return NULL;
}

void rp_option_env_name(const struct rp_option_desc *desc, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "RANGEPROF_");
	for (const char *p = desc->name; *p && n + 1 < size; p++)
		buf[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
	buf[n < size ? n : size - 1] = '\0';
}

/* ------------------------------------------------------------------------------------ */
/* Values                                                                               */
/* ------------------------------------------------------------------------------------ */

void rp_options_init(struct rp_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->launch_count = -1;
	for (size_t i = 0; i < RP_OPT_COUNT; i++) {
		/* The table checks itself: a row out of order would set the wrong option. */
		assert(table[i].id == (enum rp_option)i && "option rows must follow the enum");
		if (!table[i].default_value)
			continue;
		char err[256];
		int rc = rp_option_set(opts, table[i].id, table[i].default_value, "default", err,
				       sizeof(err));
		assert(rc == 0 && "every default must parse");
		(void)rc;
	}
	memset(opts->given, 0, sizeof(opts->given));
}

static void free_list(char **list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(list[i]);
	free(list);
}

void rp_options_finish(struct rp_options *opts)
{
	free(opts->output);
	free(opts->metrics);
	free(opts->kernel_name);
	free_list(opts->nvtx_include, opts->nvtx_include_count);
	free_list(opts->nvtx_exclude, opts->nvtx_exclude_count);
	memset(opts, 0, sizeof(*opts));
}

static int parse_long(const char *value, long *out)
{
	if (!*value || isspace((unsigned char)*value))
		return -EINVAL;
	errno = 0;
	char *end;
	long v = strtol(value, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int check_metric_list(const char *value, const char *origin, char *err, size_t size)
{
	const char *start = value;
	for (const char *p = value;; p++) {
		if (*p == ',' || !*p) {
			if (p == start) {
				snprintf(err, size,
					 "%s '%s': empty metric name at character %zu; expected "
					 "comma-separated metric names such as gpu__time_duration.sum",
					 origin, value, (size_t)(p - value) + 1);
				return -EINVAL;
			}
			if (!*p)
				return 0;
			start = p + 1;
		} else if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.') {
			snprintf(err, size,
				 "%s '%s': character %zu '%c' cannot be part of a metric name; "
				 "expected letters, digits, '_' and '.'",
				 origin, value, (size_t)(p - value) + 1, *p);
			return -EINVAL;
		}
	}
}

static int check_output_template(const char *value, const char *origin, char *err,
				 size_t size)
{
	char path[PATH_MAX], why[256];
	if (!*value) {
		snprintf(err, size, "%s '': expected a file path", origin);
		return -EINVAL;
	}
	if (rp_output_path_expand(value, getpid(), path, sizeof(path), why, sizeof(why))) {
		snprintf(err, size, "%s '%s': %s", origin, value, why);
		return -EINVAL;
	}
	return 0;
}

int rp_output_check(const char *value, pid_t pid, const char *origin, char *err, size_t size)
{
	char path[PATH_MAX], why[256];
	if (rp_output_path_expand(value, pid, path, sizeof(path), why, sizeof(why))) {
		snprintf(err, size, "%s '%s': %s", origin, value, why);
		return -EINVAL;
	}
	char dir_buf[PATH_MAX];
	snprintf(dir_buf, sizeof(dir_buf), "%s", path);
	const char *dir = dirname(dir_buf);
	struct stat st;
	if (stat(dir, &st) != 0) {
		snprintf(err, size, "%s '%s': directory '%s' does not exist", origin, value, dir);
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, size, "%s '%s': '%s' is not a directory", origin, value, dir);
		return -EINVAL;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		snprintf(err, size, "%s '%s': directory '%s' is not writable: %s", origin, value,
			 dir, strerror(errno));
		return -EINVAL;
	}
	if (access(path, F_OK) == 0 && access(path, W_OK) != 0) {
		snprintf(err, size, "%s '%s': file '%s' is not writable: %s", origin, value, path,
			 strerror(errno));
		return -EINVAL;
	}
	return 0;
}

static int check_kernel_name(const char *value, const char *origin, char *err, size_t size)
{
	if (!*value) {
		snprintf(err, size, "%s '': expected a kernel name or regex:RE", origin);
		return -EINVAL;
	}
	if (strncmp(value, "regex:", 6) != 0)
		return 0;
	regex_t re;
	int rc = regcomp(&re, value + 6, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char why[128];
		regerror(rc, &re, why, sizeof(why));
		snprintf(err, size, "%s '%s': invalid regular expression: %s", origin, value, why);
		return -EINVAL;
	}
	regfree(&re);
	return 0;
}

static int append(char ***list, size_t *count, const char *value)
{
	char **grown = realloc(*list, (*count + 1) * sizeof(**list));
	if (!grown)
		return -ENOMEM;
	*list = grown;
	if (!(grown[*count] = strdup(value)))
		return -ENOMEM;
	(*count)++;
	return 0;
}

static int replace(char **slot, const char *value)
{
	char *copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

int rp_option_set(struct rp_options *opts, enum rp_option id, const char *value,
		  const char *origin, char *err, size_t err_size)
{
	const struct rp_option_desc *d = &table[id];
	long number = 0;
	int rc;

	if (d->kind == RP_KIND_INT) {
		if (parse_long(value, &number) || number < d->min || number > d->max) {
			if (d->max == LONG_MAX)
				snprintf(err, err_size, "%s '%s': expected an integer >= %ld",
					 origin, value, d->min);
			else
				snprintf(err, err_size,
					 "%s '%s': expected an integer from %ld to %ld", origin,
					 value, d->min, d->max);
			return -EINVAL;
		}
	} else if (d->kind == RP_KIND_CHOICE) {
		size_t len = strlen(value);
		const char *c = d->choices;
		bool found = false;
		while (*c && !found) {
			size_t clen = strcspn(c, "|");
			found = clen == len && !memcmp(c, value, len);
			c += clen + (c[clen] == '|');
		}
		if (!found) {
			char accepted[128] = "";
			size_t n = 0;
			for (c = d->choices; *c;) {
				size_t clen = strcspn(c, "|");
				n += (size_t)snprintf(accepted + n, sizeof(accepted) - n, "%s'%.*s'",
						      n ? ", " : "", (int)clen, c);
				c += clen + (c[clen] == '|');
			}
			snprintf(err, err_size, "%s '%s': should be one of %s", origin, value,
				 accepted);
			return -EINVAL;
		}
	} else if (d->kind == RP_KIND_FLAG) {
		if (strcmp(value, "1") && strcmp(value, "0") && strcasecmp(value, "true") &&
		    strcasecmp(value, "false") && strcasecmp(value, "yes") &&
		    strcasecmp(value, "no")) {
			snprintf(err, err_size, "%s '%s': should be one of '1', '0', 'true', "
				 "'false', 'yes', 'no'", origin, value);
			return -EINVAL;
		}
	} else if (d->kind == RP_KIND_LIST && !*value) {
		snprintf(err, err_size, "%s '': expected an NVTX expression", origin);
		return -EINVAL;
	}

	switch (id) {
	case RP_OPT_OUTPUT:
		if ((rc = check_output_template(value, origin, err, err_size)))
			return rc;
		rc = replace(&opts->output, value);
		break;
	case RP_OPT_METRICS:
		if ((rc = check_metric_list(value, origin, err, err_size)))
			return rc;
		rc = replace(&opts->metrics, value);
		break;
	case RP_OPT_NVTX_INCLUDE:
		rc = append(&opts->nvtx_include, &opts->nvtx_include_count, value);
		break;
	case RP_OPT_NVTX_EXCLUDE:
		rc = append(&opts->nvtx_exclude, &opts->nvtx_exclude_count, value);
		break;
	case RP_OPT_KERNEL_NAME:
		if ((rc = check_kernel_name(value, origin, err, err_size)))
			return rc;
		rc = replace(&opts->kernel_name, value);
		break;
	case RP_OPT_LAUNCH_SKIP:
		opts->launch_skip = number;
		rc = 0;
		break;
	case RP_OPT_LAUNCH_COUNT:
		opts->launch_count = number;
		rc = 0;
		break;
	case RP_OPT_RUNS:
		opts->runs = number;
		rc = 0;
		break;
	case RP_OPT_CACHE_CONTROL:
		opts->cache_control = strcmp(value, "none") ? RP_CACHE_ALL : RP_CACHE_NONE;
		rc = 0;
		break;
	case RP_OPT_MEMORY_SAVE:
		opts->memory_save = strcmp(value, "checkpoint") ? RP_MEMORY_SAVE_REACH :
			RP_MEMORY_SAVE_CHECKPOINT;
		rc = 0;
		break;
	case RP_OPT_CLOCK_CONTROL:
		opts->clock_control = strcmp(value, "base") ? RP_CLOCK_NONE : RP_CLOCK_BASE;
		rc = 0;
		break;
	case RP_OPT_LIST_METRICS:
	case RP_OPT_QUIET: {
		bool on = !strcmp(value, "1") || !strcasecmp(value, "true") ||
			  !strcasecmp(value, "yes");
		if (id == RP_OPT_QUIET)
			opts->quiet = on;
		else
			opts->list_metrics = on;
		rc = 0;
		break;
	}
	default:
		rc = -EINVAL;
	}
	if (rc == -ENOMEM)
		snprintf(err, err_size, "%s: out of memory", origin);
	if (rc == 0)
		opts->given[id] = true;
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Environment                                                                          */
/* ------------------------------------------------------------------------------------ */

int rp_option_split_list(const char *value, int (*add)(const char *element, void *arg),
			 void *arg)
{
	size_t len = strlen(value);
	char *element = malloc(len + 1);
	if (!element)
		return -ENOMEM;
	size_t n = 0;
	int rc = 0;
	for (const char *p = value;; p++) {
		if (*p == '\\' && p[1] == ';') {
			/* An escaped separator is part of the element, escape and all: the
			 * expression parser turns "\;" into ";". */
			element[n++] = *p++;
			element[n++] = *p;
			continue;
		}
		if (*p == ';' || !*p) {
			element[n] = '\0';
			if (n && (rc = add(element, arg)))
				break;
			n = 0;
			if (!*p)
				break;
			continue;
		}
		element[n++] = *p;
	}
	free(element);
	return rc;
}

char *rp_option_join_list(char *const *elements, size_t count)
{
	size_t size = 1;
	for (size_t i = 0; i < count; i++)
		size += 2 * strlen(elements[i]) + 1;
	char *out = malloc(size), *w = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		if (i)
			*w++ = ';';
		for (const char *p = elements[i]; *p; p++) {
			if (*p == ';' && (p == elements[i] || p[-1] != '\\'))
				*w++ = '\\';
			*w++ = *p;
		}
	}
	*w = '\0';
	return out;
}

struct env_list_ctx {
	struct rp_options *opts;
	enum rp_option id;
	const char *origin;
	char *err;
	size_t err_size;
};

static int add_env_element(const char *element, void *arg)
{
	struct env_list_ctx *ctx = arg;
	return rp_option_set(ctx->opts, ctx->id, element, ctx->origin, ctx->err, ctx->err_size);
}

int rp_options_load_env(struct rp_options *opts, char *err, size_t err_size)
{
	for (size_t i = 0; i < RP_OPT_COUNT; i++) {
		char name[64];
		rp_option_env_name(&table[i], name, sizeof(name));
		const char *value = getenv(name);
		if (!value)
			continue;
		int rc;
		if (table[i].kind == RP_KIND_LIST) {
			struct env_list_ctx ctx = { opts, table[i].id, name, err, err_size };
			rc = rp_option_split_list(value, add_env_element, &ctx);
		} else {
			rc = rp_option_set(opts, table[i].id, value, name, err, err_size);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Output path                                                                          */
/* ------------------------------------------------------------------------------------ */

int rp_output_path_expand(const char *templ, pid_t pid, char *out, size_t out_size,
			  char *err, size_t err_size)
{
	size_t n = 0;
	for (const char *p = templ; *p; p++) {
		char piece[256];
		const char *add = piece;
		if (*p != '%') {
			piece[0] = *p;
			piece[1] = '\0';
		} else if (p[1] == 'p') {
			snprintf(piece, sizeof(piece), "%ld", (long)pid);
			p++;
		} else if (p[1] == 'h') {
			if (gethostname(piece, sizeof(piece) - 1))
				snprintf(piece, sizeof(piece), "unknown-host");
			piece[sizeof(piece) - 1] = '\0';
			p++;
		} else if (p[1] == '%') {
			add = "%";
			p++;
		} else {
			snprintf(err, err_size,
				 "unknown escape '%%%.1s' at character %zu; accepted are %%p (pid), "
				 "%%h (host name) and %%%%", p[1] ? p + 1 : "",
				 (size_t)(p - templ) + 1);
			return -EINVAL;
		}
		size_t len = strlen(add);
		if (n + len + 1 > out_size) {
			snprintf(err, err_size, "the expanded path is too long");
			return -ENAMETOOLONG;
		}
		memcpy(out + n, add, len);
		n += len;
	}
	out[n] = '\0';
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Help                                                                                 */
/* ------------------------------------------------------------------------------------ */

void rp_options_print_help(FILE *out, const char *program)
{
	fprintf(out,
		"usage: %s [options] [--] application [arguments...]\n"
		"Measures the kernels an unmodified CUDA application launches inside the selected\n"
		"NVTX ranges, replaying each selected launch under the CUPTI range profiler.\n"
		"Every option can also be given as an environment variable RANGEPROF_<NAME>.\n\n"
		"options:\n",
		program);
	for (size_t i = 0; i < RP_OPT_COUNT; i++) {
		const struct rp_option_desc *d = &table[i];
		char left[64], env[64];
		int n = 0;
		if (d->short_name)
			n = snprintf(left, sizeof(left), "-%c, ", d->short_name);
		else
			n = snprintf(left, sizeof(left), "    ");
		snprintf(left + n, sizeof(left) - (size_t)n, "--%s%s%s", d->name,
			 d->metavar ? " " : "", d->metavar ? d->metavar : "");
		rp_option_env_name(d, env, sizeof(env));
		fprintf(out, "  %-28s %s\n", left, d->help);
		if (d->default_value)
			fprintf(out, "  %-28s (default: %s; env %s)\n", "", d->default_value, env);
		else
			fprintf(out, "  %-28s (env %s)\n", "", env);
	}
	fprintf(out, "  %-28s %s\n", "-h, --help", "print this help and exit");
}
