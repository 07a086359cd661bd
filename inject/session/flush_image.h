/* inject/session/flush_image.h - the cache flush's kernel compiled ahead by the build. For
 * each text flush_text.c makes that a GPU can load (a flush that discards or not, 1 or 2
 * blocks per SM), a fatbin: a cubin for each architecture the build compiled it for, and
 * the text itself. The driver loads the cubin that fits the GPU, with no JIT of the ~700 KB
 * of PTX (1.6-1.7 s in a machine's first process, ~5 ms from the driver's cache after:
 * doc/measurements.md, "The flush"), and compiles the fatbin's text where none fits.
 * scripts/flush_image.py makes them with the toolkit's ptxas and fatbinary where the build
 * finds both (meson option flush_image); a build without them holds none, and flush.c
 * loads the text. */
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
