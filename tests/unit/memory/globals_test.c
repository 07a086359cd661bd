/* tests/unit/memory/globals_test.c - reading module-scope variables out of a real cubin
 * (built from globals_kernels.cu by nvcc at build time, path in $GLOBALS_CUBIN), and never
 * crashing on images that are not one. */
#include <criterion/criterion.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/api.h"
#include "common/error.h"
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
	cr_assert_eq(mem_globals_learn(image, size), 0);
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
	cr_assert_eq(mem_globals_learn(NULL, 0), RP_ERR_FAILED);
	cr_assert_eq(mem_globals_learn("not an ELF image at all", 23), RP_ERR_FAILED);
	cr_assert_eq(mem_globals_learn(image, 16), RP_ERR_FAILED,
		     "truncated before the header ends");
	/* Every shorter prefix, and section offsets pointing past the end: no crash. */
	for (size_t cut = 64; cut < size; cut += 97)
		mem_globals_learn(image, cut);
	unsigned char *bad = malloc(size);
	memcpy(bad, image, size);
	memset(bad + 0x28, 0xff, 8);    /* e_shoff far outside the image */
	cr_assert_eq(mem_globals_learn(bad, size), RP_ERR_FAILED);
	free(bad);
	free(image);
}

/* A minimal ELF64 image with one .nv.global object named name: null section, .shstrtab,
 * .nv.global, .symtab, .strtab. */
static unsigned char *tiny_cubin(const char *name, size_t *size)
{
	static const char shstr[] = "\0.shstrtab\0.nv.global\0.symtab\0.strtab";
	size_t name_len = strlen(name);
	size_t shstr_off = sizeof(Elf64_Ehdr), shstr_size = sizeof(shstr);
	size_t sym_off = (shstr_off + shstr_size + 7) & ~(size_t)7;
	size_t sym_size = 2 * sizeof(Elf64_Sym);
	size_t str_off = sym_off + sym_size, str_size = name_len + 2;
	size_t sh_off = (str_off + str_size + 7) & ~(size_t)7;
	*size = sh_off + 5 * sizeof(Elf64_Shdr);
	unsigned char *image = calloc(1, *size);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)image;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_shoff = sh_off;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 5;
	eh->e_shstrndx = 1;
	memcpy(image + shstr_off, shstr, shstr_size);
	Elf64_Sym *sym = (Elf64_Sym *)(image + sym_off);
	sym[1].st_name = 1;
	sym[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
	sym[1].st_shndx = 2;
	memcpy(image + str_off + 1, name, name_len);
	Elf64_Shdr *sh = (Elf64_Shdr *)(image + sh_off);
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
			      .sh_size = shstr_size };
	sh[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_NOBITS, .sh_size = 8 };
	sh[3] = (Elf64_Shdr){ .sh_name = 22, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
			      .sh_size = sym_size, .sh_link = 4, .sh_entsize = sizeof(Elf64_Sym) };
	sh[4] = (Elf64_Shdr){ .sh_name = 30, .sh_type = SHT_STRTAB, .sh_offset = str_off,
			      .sh_size = str_size };
	return image;
}

/* After a cubin it could not read, no module's globals are known: the reach that asks for
 * them fails (and the launch falls back to the full checkpoint) rather than leave out a
 * global that cubin may have held. */
Test(globals, after_an_unreadable_cubin_every_modules_globals_are_unknown)
{
	size_t size;
	unsigned char *image = tiny_cubin("g_before", &size);
	cr_assert_eq(mem_globals_learn(image, size), 0);
	free(image);
	struct mem_range *ranges = NULL;
	size_t count = 0, capacity = 0;
	cr_assert_eq(mem_globals_learn("not an ELF image at all", 23), RP_ERR_FAILED);
	cr_assert_eq(mem_globals_of_module((CUmodule)(uintptr_t)0x1234, &ranges, &count,
					   &capacity), RP_ERR_FAILED);
	cr_assert_eq(mem_globals_of_library((CUlibrary)(uintptr_t)0x5678, &ranges, &count,
					    &capacity), RP_ERR_FAILED);
	cr_assert_eq(count, 0);
	free(ranges);
}

/* A long mangled name (a template's static member) is a global all the same: left out,
 * it would never be saved and its replays' writes would reach the application. */
Test(globals, learns_names_of_any_length)
{
	char name[2001];
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memcpy(name, "_ZN4long", 8);
	size_t size;
	unsigned char *image = tiny_cubin("g_short_one", &size);
	cr_assert_eq(mem_globals_learn(image, size), 0);
	cr_assert(mem_globals_known("g_short_one"), "the synthetic image is read");
	free(image);
	image = tiny_cubin(name, &size);
	cr_assert_eq(mem_globals_learn(image, size), 0);
	cr_assert(mem_globals_known(name));
	free(image);
}

/* Stands in for cuModuleGetGlobal under lazy loading: asking for a global loads another
 * module, whose CUPTI callback (mem_globals_learn) comes back on the same thread. */
static int lookups;
static CUresult lazy_get_global(CUdeviceptr *p, size_t *bytes, CUmodule module, const char *name)
{
	(void)module;
	if (lookups++ == 0) {
		size_t size;
		unsigned char *image = tiny_cubin("g_loaded_meanwhile", &size);
		mem_globals_learn(image, size);
		free(image);
	}
	if (strcmp(name, "g_lazy"))
		return CUDA_ERROR_NOT_FOUND;
	*p = 0x7f0000001000;
	*bytes = 64;
	return CUDA_SUCCESS;
}

Test(globals, a_module_loaded_while_globals_are_resolved_does_not_deadlock, .timeout = 10)
{
	size_t size;
	unsigned char *image = tiny_cubin("g_lazy", &size);
	cr_assert_eq(mem_globals_learn(image, size), 0);
	free(image);
	rp_api.cuModuleGetGlobal = lazy_get_global;
	struct mem_range *ranges = NULL;
	size_t count = 0, capacity = 0;
	CUmodule module = (CUmodule)(uintptr_t)0x1234;
	cr_assert_eq(mem_globals_of_module(module, &ranges, &count, &capacity), 0);
	cr_assert_eq(count, 1);
	cr_assert_eq(ranges[0].base, 0x7f0000001000);
	cr_assert_eq(ranges[0].size, 64);
	cr_assert(mem_globals_known("g_loaded_meanwhile"));
	/* A name learned meanwhile: asked again, and the global is still there. */
	cr_assert_eq(mem_globals_of_module(module, &ranges, &count, &capacity), 0);
	cr_assert_eq(count, 2);
	cr_assert_eq(ranges[1].base, 0x7f0000001000);
	free(ranges);
}
