/* tests/unit/inject/reports_test.c - reports said once by code (inject/output.c, the table
 * of inject/output_reports.h), with output.c as it is and its records caught through the
 * tap: the same failure in other words is said once, the same words for another failure
 * twice, and every row of the table is filled. REPORT_DETAIL_TAKES_TEXT and
 * REPORT_DETAIL_TAKES_NUMBER come from tests/meson.build, which compiles a call site with
 * a message buffer as the detail: it must not compile. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "inject/output.h"

static char output_path[] = "/tmp/rangeprof-reports-test-XXXXXX";
static char lines[16][2048];
static size_t line_count;

static void tap(const char *line, size_t len)
{
	if (line_count < sizeof(lines) / sizeof(lines[0]))
		snprintf(lines[line_count++], sizeof(lines[0]), "%.*s", (int)len, line);
}

static void use_output(void)
{
	int fd = mkstemp(output_path);
	cr_assert_geq(fd, 0);
	close(fd);
	inject_output_configure(output_path);
	inject_output_set_tap(tap);
}

static void drop_output(void)
{
	unlink(output_path);
}

/* A failure of one kind (RP_ERR_RESTORE) whose words change from one occurrence to the
 * next, as a driver's error or an address in the message does. */
static void restore_failed(const char *words, long long code)
{
	char err[128];
	snprintf(err, sizeof(err), "%s", words);
	inject_output_report(INJECT_REPORT_RESTORE,
			     INJECT_CONCERNS(.kernel = "k(int)", .mangled = "_Z1ki",
					     INJECT_ON_DEVICE(0), .call = "cuMemcpyAsync",
					     .detail = code),
			     true, "putting back the saved memory of k(int): %s", err);
}

Test(reports, one_failure_in_other_words_is_said_once, .init = use_output,
     .fini = drop_output)
{
	restore_failed("copy of 4096 bytes at 0x7f0000001000 failed", RP_ERR_RESTORE);
	restore_failed("copy of 512 bytes at 0x7f0000ff0000 failed", RP_ERR_RESTORE);
	cr_assert_eq(line_count, 1, "one failure, one record: %zu", line_count);
	cr_assert(strstr(lines[0], "4096 bytes"), "the first occurrence's words: %s", lines[0]);
	/* Another code is another failure, whatever its words. */
	restore_failed("copy of 512 bytes at 0x7f0000ff0000 failed", RP_ERR_SYNC);
	cr_assert_eq(line_count, 2);
}

Test(reports, the_same_words_for_other_failures_are_said_for_each, .init = use_output,
     .fini = drop_output)
{
	/* Two report codes, the same words and concerns. */
	inject_output_report(INJECT_REPORT_RANGE_END_STATE, INJECT_CONCERNS(.kernel = "step"),
			     true, "range 'step': failed; not measured");
	inject_output_report(INJECT_REPORT_RANGE_PUT_BACK, INJECT_CONCERNS(.kernel = "step"),
			     true, "range 'step': failed; not measured");
	cr_assert_eq(line_count, 2, "two codes, two records");
	/* One code, the same words, two failure codes in the detail. */
	restore_failed("failed", RP_ERR_RESTORE);
	restore_failed("failed", RP_ERR_NO_MEMORY);
	cr_assert_eq(line_count, 4, "two details, two records");
}

Test(reports, each_identity_is_said_for, .init = use_output, .fini = drop_output)
{
	/* Kernels with one demangling, told apart by the mangled name (never written). */
	inject_output_report(INJECT_REPORT_OUTSIDE,
			     INJECT_CONCERNS(.kernel = "k", .mangled = "_Z1kv"), false,
			     "k wrote outside");
	inject_output_report(INJECT_REPORT_OUTSIDE,
			     INJECT_CONCERNS(.kernel = "k", .mangled = "_Z1kPv"), false,
			     "k wrote outside");
	inject_output_report(INJECT_REPORT_OUTSIDE,
			     INJECT_CONCERNS(.kernel = "k", .mangled = "_Z1kv"), false,
			     "k wrote outside");
	cr_assert_eq(line_count, 2);
	/* Device, context, metric, option and call each tell reports apart. */
	inject_output_report(INJECT_REPORT_DEVICE, INJECT_CONCERNS(INJECT_ON_DEVICE(1)), true, "d");
	inject_output_report(INJECT_REPORT_DEVICE, INJECT_CONCERNS(INJECT_ON_DEVICE(2)), true, "d");
	inject_output_report(INJECT_REPORT_CONTEXT, INJECT_CONCERNS(.context = 1), true, "c");
	inject_output_report(INJECT_REPORT_CONTEXT, INJECT_CONCERNS(.context = 2), true, "c");
	inject_output_report(INJECT_REPORT_METRIC_SET, INJECT_CONCERNS(.metric = "a"), true, "m");
	inject_output_report(INJECT_REPORT_METRIC_SET, INJECT_CONCERNS(.metric = "b"), true, "m");
	inject_output_report(INJECT_REPORT_CLOCK, INJECT_CONCERNS(.option = "--a"), true, "o");
	inject_output_report(INJECT_REPORT_CLOCK, INJECT_CONCERNS(.option = "--b"), true, "o");
	inject_output_report(INJECT_REPORT_GRAPH_NODE, INJECT_CONCERNS(.call = "a"), true, "g");
	inject_output_report(INJECT_REPORT_GRAPH_NODE, INJECT_CONCERNS(.call = "b"), true, "g");
	cr_assert_eq(line_count, 12);
	/* A forgotten report is said again (a capture of the control API starts afresh). */
	inject_output_forget_reports();
	inject_output_report(INJECT_REPORT_GRAPH_NODE, INJECT_CONCERNS(.call = "b"), true, "g");
	cr_assert_eq(line_count, 13);
}

/* The record says the message and the concerns as before the codes: the code, the mangled
 * name and the detail are not written. */
Test(reports, the_record_keeps_its_words_and_concerns, .init = use_output,
     .fini = drop_output)
{
	inject_output_report(INJECT_REPORT_SYNC,
			     INJECT_CONCERNS(.kernel = "k(int)", .mangled = "_Z1ki",
					     INJECT_ON_DEVICE(3), .context = 7, .detail = 700),
			     true, "cuCtxSynchronize after launch 4 of k(int): %s; not measured",
			     "CUDA_ERROR_ILLEGAL_ADDRESS");
	cr_assert_eq(line_count, 1);
	cJSON *r = cJSON_Parse(lines[0]);
	cr_assert_not_null(r, "%s", lines[0]);
	cr_assert_str_eq(cJSON_GetObjectItem(r, "type")->valuestring, "error");
	cr_assert_str_eq(cJSON_GetObjectItem(r, "message")->valuestring,
			 "cuCtxSynchronize after launch 4 of k(int): CUDA_ERROR_ILLEGAL_ADDRESS; "
			 "not measured");
	cJSON *c = cJSON_GetObjectItem(r, "concerns");
	cr_assert_not_null(c);
	cr_assert_eq(cJSON_GetArraySize(c), 3, "kernel, device and context only: %s", lines[0]);
	cr_assert_str_eq(cJSON_GetObjectItem(c, "kernel")->valuestring, "k(int)");
	cr_assert_eq(cJSON_GetObjectItem(c, "device")->valueint, 3);
	cr_assert_eq(cJSON_GetObjectItem(c, "context")->valueint, 7);
	cJSON_Delete(r);
}

Test(reports, every_code_has_a_name_words_and_what_to_do)
{
	size_t rows = 0;
	for (int code = INJECT_REPORT_NONE + 1; code < INJECT_REPORT_COUNT; code++, rows++) {
		const char *name = inject_output_report_name(code);
		cr_assert(strncmp(name, "INJECT_REPORT_", 14) == 0 && name[14], "code %d: %s",
			  code, name);
		cr_assert_str_neq(name, "INJECT_REPORT_NONE", "code %d has no row", code);
		cr_assert_neq(inject_output_report_words(code)[0], '\0', "%s says nothing", name);
		cr_assert_neq(inject_output_report_todo(code)[0], '\0', "%s: nothing to do", name);
		for (int other = INJECT_REPORT_NONE + 1; other < code; other++)
			cr_assert_str_neq(inject_output_report_name(other), name);
	}
	cr_assert_geq(rows, 50, "the table holds every report (%zu rows)", rows);
	cr_assert_str_eq(inject_output_report_name(INJECT_REPORT_COUNT), "INJECT_REPORT_NONE");
	cr_assert_str_eq(inject_output_report_words(-1), "");
}

/* tests/meson.build compiles a call site that passes a message buffer as the detail, and
 * the same with a number: the first must be refused by the compiler, the second taken (so
 * that the refusal is the buffer's, not a broken include path's). */
Test(reports, a_message_cannot_be_the_detail)
{
	cr_assert_eq(REPORT_DETAIL_TAKES_NUMBER, 1, "the control snippet does not compile");
	cr_assert_eq(REPORT_DETAIL_TAKES_TEXT, 0,
		     "a message buffer compiles as inject_concerns' detail: reports would be "
		     "said once by their words again");
}
