/* tests/unit/memory/globals_test.c - reading module-scope variables out of a real cubin
 * (built from globals_kernels.cu by nvcc at build time, path in $GLOBALS_CUBIN), and never
 * crashing on images that are not one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/memory.h"

static unsigned char *read_cubin(size_t *size)
{
	const char *path = getenv("GLOBALS_CUBIN");
	if (!path || !*path)
		cr_skip_test("no cubin: nvcc was not found at build time");
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *image = malloc((size_t)n);
	cr_assert_eq(fread(image, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return image;
}

Test(globals, learns_device_variables_and_nothing_else)
{
	size_t size;
	unsigned char *image = read_cubin(&size);
	cr_assert(mem_globals_learn(image, size));
	cr_assert(mem_globals_known("g_counter"));
	cr_assert(mem_globals_known("g_table"));
	cr_assert(mem_globals_known("s_hidden"));
	cr_assert(mem_globals_known("g_initialised"));
	cr_assert(mem_globals_known("g_ptr"));
	cr_assert_not(mem_globals_known("c_coeff"), "constant memory is read-only to kernels");
	cr_assert_not(mem_globals_known("_Z5touchPf"), "a function is no variable");
	free(image);
}

Test(globals, refuses_what_is_not_a_cubin_without_crashing)
{
	size_t size;
	unsigned char *image = read_cubin(&size);
	cr_assert_not(mem_globals_learn(NULL, 0));
	cr_assert_not(mem_globals_learn("not an ELF image at all", 23));
	cr_assert_not(mem_globals_learn(image, 16), "truncated before the header ends");
	/* Every shorter prefix, and section offsets pointing past the end: no crash. */
	for (size_t cut = 64; cut < size; cut += 97)
		mem_globals_learn(image, cut);
	unsigned char *bad = malloc(size);
	memcpy(bad, image, size);
	memset(bad + 0x28, 0xff, 8);    /* e_shoff far outside the image */
	cr_assert_not(mem_globals_learn(bad, size));
	free(bad);
	free(image);
}
