/* tests/fuzz/fuzz_jsonl.c - libFuzzer target: the JSON record writer (collector/records.c,
 * collector/jsonl.c) with names of any bytes. Every record must print as one line of
 * strict UTF-8 JSON whose strings read back as the sanitised input.
 * Input: '\n'-separated strings: message, kernel, then NVTX range texts. An input whose
 * first byte is odd makes the run record a range workload's (--replay-mode range), named
 * by the message and holding kernels named by the NVTX texts. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/jsonl.h"
#include "collector/records.h"
#include "common/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Strict: every byte in a valid UTF-8 sequence, no raw control character, no newline. */
static void check_line(const char *json)
{
	const unsigned char *p = (const unsigned char *)json;
	while (*p) {
		size_t len = rp_utf8_sequence(p);
		if (!len || *p < 0x20)
			abort();
		p += len;
	}
}

static void check_string(const cJSON *o, const char *key, const char *input)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
	char *want = collector_utf8_sanitize(input);
	if (!cJSON_IsString(item) || strcmp(item->valuestring, want))
		abort();
	free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	const char *parts[16] = { "", "" };
	size_t count = 0;
	for (char *p = text; p && count < 16;) {
		char *end = strchr(p, '\n');
		if (end)
			*end = '\0';
		parts[count++] = p;
		p = end ? end + 1 : NULL;
	}
	cJSON *msg = collector_record_message("warning", parts[0], "kernel", parts[1]);
	char *line = cJSON_PrintUnformatted(msg);
	check_line(line);
	cJSON *back = cJSON_Parse(line);
	if (!back)
		abort();
	check_string(back, "message", parts[0]);
	check_string(cJSON_GetObjectItemCaseSensitive(back, "concerns"), "kernel", parts[1]);
	cJSON_Delete(back);
	free(line);

	struct collector_nvtx_range ranges[14];
	size_t n = count > 2 ? count - 2 : 0;
	for (size_t i = 0; i < n; i++)
		ranges[i] = (struct collector_nvtx_range){ .domain = parts[1], .text = parts[i + 2],
							  .category = (uint32_t)i,
							  .category_name = parts[0] };
	/* Metric names are checked by the options ([A-Za-z0-9_.]) and units come from CUPTI:
	 * they are keys and values as given. */
	const char *metrics[] = { "gpu__time_duration.sum" }, *units[] = { "nsecond" };
	double values[] = { size ? (double)data[0] : NAN };
	const char *kernel_names[14];
	uint64_t streams[14];
	for (size_t i = 0; i < n; i++) {
		kernel_names[i] = parts[i + 2];
		streams[i] = (uint64_t)i << 40;
	}
	struct collector_range range = { .name = parts[0], .kernels = n,
					 .kernel_names = kernel_names, .streams = streams,
					 .stream_count = n };
	bool as_range = size && (data[0] & 1);
	struct collector_launch l = { .index = size, .kernel = parts[1], .mangled = parts[0],
				      .nvtx = ranges, .nvtx_count = n,
				      .nvtx_path = n ? parts[2] : "",
				      .range = as_range ? &range : NULL };
	struct collector_measure_info info = { metrics, units, 1, 1, 1, RP_CACHE_ALL,
					       RP_CLOCK_NONE, NAN };
	struct collector_run run = { 0, values, NAN, NAN, 0 };
	cJSON *r = collector_record_run(&l, &info, &run);
	line = cJSON_PrintUnformatted(r);
	if (line) {
		check_line(line);
		back = cJSON_Parse(line);
		if (!back)
			abort();
		check_string(back, "kernel", parts[1]);
		const cJSON *nvtx = cJSON_GetObjectItemCaseSensitive(back, "nvtx");
		for (size_t i = 0; i < n; i++)
			check_string(cJSON_GetArrayItem(nvtx, (int)i), "text", parts[i + 2]);
		const cJSON *rg = cJSON_GetObjectItemCaseSensitive(back, "range");
		if (as_range) {
			check_string(rg, "name", parts[0]);
			const cJSON *names = cJSON_GetObjectItemCaseSensitive(rg, "kernel_names");
			if (cJSON_GetArraySize(names) != (int)n)
				abort();
			for (size_t i = 0; i < n; i++) {
				const cJSON *k = cJSON_GetArrayItem(names, (int)i);
				char *want = collector_utf8_sanitize(parts[i + 2]);
				if (!cJSON_IsString(k) || strcmp(k->valuestring, want))
					abort();
				free(want);
			}
			if (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(back, "grid")))
				abort();
		} else if (rg) {
			abort();
		}
		cJSON_Delete(back);
		free(line);
	}
	static int devnull = -1;
	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY);
	if (r && collector_jsonl_write(devnull, r))
		abort();
	cJSON_Delete(r);
	cJSON_Delete(msg);
	free(text);
	return 0;
}
