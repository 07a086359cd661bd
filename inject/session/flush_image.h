/* inject/session/flush_image.h - the cache flush's kernel compiled ahead by the build. For
 * each text of flush_text.c that inject_flush_init can ask for (a flush that discards, for
 * 2 or 1 blocks per SM; one that only sweeps, for 1), a fatbin: a cubin for each
 * architecture the build compiled it for, and the text itself. The driver loads the cubin
 * that fits the GPU, with no JIT of the ~700 KB of PTX, and compiles the fatbin's text
 * where none fits. That JIT, with the hash kernel's small one, made the set-up's
 * setup_context 731.5 to 1724.4 ms in a fresh machine's first process, and 4.1-10.7 ms
 * from the driver's cache after (doc/measurements.md, "The flush", session 22).
 * scripts/flush_image.py makes them with the toolkit's ptxas and fatbinary where the build
 * finds them (meson option flush_image); a build without them holds none, and flush.c
 * loads the text. A driver older than the toolkit that made them may not read them (CUDA
 * 13's fatbinary compresses them): it refuses the image, flush.c loads the text, and
 * session.c says so once (INJECT_REPORT_FLUSH_IMAGE). */
#ifndef INJECT_FLUSH_IMAGE_H
#define INJECT_FLUSH_IMAGE_H

#include <stdbool.h>
#include <stddef.h>

struct inject_flush_image {
	bool empty;                     /* inject_flush_text's arguments it was made from */
	int per_sm;
	const unsigned char *bytes;     /* the fatbin, for cuModuleLoadData */
	size_t size;
	/* FNV-1a (64 bits) of the text it was compiled from: the unit tests compare it with
	 * inject_flush_text's, so that an image never stands for another text. */
	unsigned long long text_fnv1a;
	const char *archs;              /* its cubins' architectures: "sm_80 sm_90 sm_100" */
};

/* The image of inject_flush_text(empty, per_sm), or NULL where the build holds none. */
const struct inject_flush_image *inject_flush_image(bool empty, int per_sm);
/* Every image the build holds (*n of them; NULL and 0 for none). */
const struct inject_flush_image *inject_flush_images(size_t *n);

#endif
