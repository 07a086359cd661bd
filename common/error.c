/* common/error.c - names and meanings of the failure codes (error.h).
 * Calls: none.
 * Called by: inject/, collector/.
 * Lock: none (a constant table). */
#include "common/error.h"

#include <stddef.h>

static const struct {
	int code;
	const char *name, *text;
} errors[] = {
#define RP_ERROR_ROW(name, value, text) { value, #name, text },
	RP_ERRORS(RP_ERROR_ROW)
#undef RP_ERROR_ROW
};

static size_t row(int code)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == code)
			return i;
	return 0; /* RP_ERR_FAILED */
}

const char *rp_error_name(int code)
{
	return code == RP_OK ? "RP_OK" : errors[row(code)].name;
}

const char *rp_error_text(int code)
{
	return code == RP_OK ? "no error" : errors[row(code)].text;
}
