/* tests/unit/collector/fake_cupti.c - a stand-in libcupti.so.13 (its SONAME, set in
 * tests/meson.build) for the tests of where CUPTI is looked for: api_test puts links to
 * it in the places it makes and checks which one collector/api.c loads. It has only
 * cuptiGetVersion, which gives FAKE_CUPTI_VERSION. */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))
#define FAKE_CUPTI_VERSION 4242

EXPORT int cuptiGetVersion(uint32_t *version)
{
	*version = FAKE_CUPTI_VERSION;
	return 0;
}
