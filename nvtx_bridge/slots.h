/* nvtx_bridge/slots.h - the functions the bridge writes into NVTX's callback tables.
 * Private to nvtx_bridge/ and its tests, which call them directly to drive the state
 * machine exactly as an NVTX client would. */
#ifndef NVTX_BRIDGE_SLOTS_H
#define NVTX_BRIDGE_SLOTS_H

#include "nvtx_bridge/nvtx_bridge.h"

#include <wchar.h>

int bridge_range_push_a(const char *message);
int bridge_range_push_w(const wchar_t *message);
int bridge_range_push_ex(const nvtxEventAttributes_t *attr);
int bridge_range_pop(void);
nvtxRangeId_t bridge_range_start_a(const char *message);
nvtxRangeId_t bridge_range_start_w(const wchar_t *message);
nvtxRangeId_t bridge_range_start_ex(const nvtxEventAttributes_t *attr);
void bridge_range_end(nvtxRangeId_t id);
void bridge_name_category_a(uint32_t category, const char *name);
void bridge_name_category_w(uint32_t category, const wchar_t *name);

int bridge_domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr);
int bridge_domain_range_pop(nvtxDomainHandle_t domain);
nvtxRangeId_t bridge_domain_range_start_ex(nvtxDomainHandle_t domain,
					   const nvtxEventAttributes_t *attr);
void bridge_domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id);
void bridge_domain_name_category_a(nvtxDomainHandle_t domain, uint32_t category,
				   const char *name);
void bridge_domain_name_category_w(nvtxDomainHandle_t domain, uint32_t category,
				   const wchar_t *name);
nvtxStringHandle_t bridge_domain_register_string_a(nvtxDomainHandle_t domain, const char *s);
nvtxStringHandle_t bridge_domain_register_string_w(nvtxDomainHandle_t domain,
						   const wchar_t *s);
nvtxDomainHandle_t bridge_domain_create_a(const char *name);
nvtxDomainHandle_t bridge_domain_create_w(const wchar_t *name);
void bridge_domain_destroy(nvtxDomainHandle_t domain);

/* A zeroed block of size bytes for the calling thread, the same at every call, freed
 * (after cleanup(block)) with the thread's NVTX state at thread exit. NULL when out of
 * memory or once the thread's state is torn down. Used by expr.c for per-thread caches. */
void *bridge_thread_cache(size_t size, void (*cleanup)(void *));

/* Registry internals shared by registry.c and state.c. */
struct nvtx_bridge_domain *bridge_domain_from_handle(nvtxDomainHandle_t handle);
uint32_t bridge_domain_id(const struct nvtx_bridge_domain *domain);
const char *bridge_registered_text(nvtxStringHandle_t handle);
/* Bytes of text the bridge keeps: at most NVTX_BRIDGE_MAX_TEXT, cut at a UTF-8 character
 * boundary. Reads at most NVTX_BRIDGE_MAX_TEXT + 1 bytes of text. */
size_t bridge_kept_length(const char *text);
/* Converts a wide string to UTF-8 in a new allocation; invalid code points become U+FFFD.
 * NULL on allocation failure. */
char *bridge_utf8_from_wide(const wchar_t *s);

#endif
