/* inject/session/flush_image.c - the build's compiled images of the cache flush's kernel
 * (flush_image.h), from the header scripts/flush_image.py generated in the build folder
 * where the build defines INJECT_FLUSH_IMAGE_DATA; none otherwise (a build without the
 * toolkit's ptxas, one whose toolkit could make none, or one of bench/'s, whose FLUSH_*
 * figures make other texts).
 * Calls: none (libc only).
 * Called by: flush.c (the image it loads first).
 * Lock: none (constant data). */
#include "inject/session/flush_image.h"

#ifdef INJECT_FLUSH_IMAGE_DATA
/* The fatbins, and FLUSH_IMAGES_MADE listing them as struct inject_flush_image entries;
 * only a comment where the toolkit could make none (the script says why at build time). */
#include "flush_image_data.h"
#endif

#ifdef FLUSH_IMAGES_MADE
static const struct inject_flush_image flush_images[] = { FLUSH_IMAGES_MADE };
#define FLUSH_IMAGES flush_images
#define FLUSH_IMAGES_N (sizeof(flush_images) / sizeof(flush_images[0]))
#else
#define FLUSH_IMAGES NULL
#define FLUSH_IMAGES_N 0
#endif

const struct inject_flush_image *inject_flush_images(size_t *n)
{
	*n = FLUSH_IMAGES_N;
	return FLUSH_IMAGES;
}

const struct inject_flush_image *inject_flush_image(bool empty, int per_sm)
{
	size_t n;
	const struct inject_flush_image *images = inject_flush_images(&n);
	for (size_t i = 0; i < n; i++)
		if (images[i].empty == empty && images[i].per_sm == per_sm)
			return &images[i];
	return NULL;
}
