/* nvtx_bridge/attach.c - answers NVTX's InitializeInjectionNvtx2 by writing the bridge's
 * functions into the CORE and CORE2 callback tables.
 * Answered once for every NVTX client module that initialises (each binary inlining NVTX3
 * has its own tables). Writes all slots or none.
 * Calls: state.c, registry.c (the functions it writes into the slots).
 * Called by: inject/ (entry.c).
 * Lock: none (attached_modules is an atomic; the tables are NVTX's). */
#include <stdatomic.h>

#include "nvtx_bridge/slots.h"

static atomic_uint attached_modules;

unsigned nvtx_bridge_attached_modules(void)
{
	return atomic_load(&attached_modules);
}

nvtxRangeId_t nvtx_bridge_own_range_start(const char *domain_name, const char *text)
{
	nvtxEventAttributes_t attr = { .version = NVTX_VERSION,
				       .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
				       .messageType = NVTX_MESSAGE_TYPE_ASCII,
				       .message.ascii = text };
	/* Domains are created once per name and kept (registry.c): the same handle comes
	 * back for the same name. */
	return bridge_domain_range_start_ex(bridge_domain_create_a(domain_name), &attr);
}

void nvtx_bridge_own_range_end(nvtxRangeId_t id)
{
	bridge_range_end(id);
}

struct slot {
	unsigned int id;
	NvtxFunctionPointer fn;
};

#define SLOT(id, fn) { id, (NvtxFunctionPointer)(fn) }

static const struct slot core_slots[] = {
	SLOT(NVTX_CBID_CORE_RangeStartEx, bridge_range_start_ex),
	SLOT(NVTX_CBID_CORE_RangeStartA, bridge_range_start_a),
	SLOT(NVTX_CBID_CORE_RangeStartW, bridge_range_start_w),
	SLOT(NVTX_CBID_CORE_RangeEnd, bridge_range_end),
	SLOT(NVTX_CBID_CORE_RangePushEx, bridge_range_push_ex),
	SLOT(NVTX_CBID_CORE_RangePushA, bridge_range_push_a),
	SLOT(NVTX_CBID_CORE_RangePushW, bridge_range_push_w),
	SLOT(NVTX_CBID_CORE_RangePop, bridge_range_pop),
	SLOT(NVTX_CBID_CORE_NameCategoryA, bridge_name_category_a),
	SLOT(NVTX_CBID_CORE_NameCategoryW, bridge_name_category_w),
};

static const struct slot core2_slots[] = {
	SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, bridge_domain_range_start_ex),
	SLOT(NVTX_CBID_CORE2_DomainRangeEnd, bridge_domain_range_end),
	SLOT(NVTX_CBID_CORE2_DomainRangePushEx, bridge_domain_range_push_ex),
	SLOT(NVTX_CBID_CORE2_DomainRangePop, bridge_domain_range_pop),
	SLOT(NVTX_CBID_CORE2_DomainNameCategoryA, bridge_domain_name_category_a),
	SLOT(NVTX_CBID_CORE2_DomainNameCategoryW, bridge_domain_name_category_w),
	SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, bridge_domain_register_string_a),
	SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, bridge_domain_register_string_w),
	SLOT(NVTX_CBID_CORE2_DomainCreateA, bridge_domain_create_a),
	SLOT(NVTX_CBID_CORE2_DomainCreateW, bridge_domain_create_w),
	SLOT(NVTX_CBID_CORE2_DomainDestroy, bridge_domain_destroy),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int module_table(const NvtxExportTableCallbacks *callbacks, NvtxCallbackModule module,
			const struct slot *slots, size_t count, NvtxFunctionTable *table)
{
	unsigned int size = 0;
	if (!callbacks->GetModuleFunctionTable(module, table, &size) || !*table)
		return 0;
	for (size_t i = 0; i < count; i++)
		if (slots[i].id >= size || !(*table)[slots[i].id])
			return 0;
	return 1;
}

int nvtx_bridge_attach(NvtxGetExportTableFunc_t get_export_table)
{
	if (!get_export_table)
		return 0;
	const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
	if (!callbacks || callbacks->struct_size < sizeof(*callbacks) ||
	    !callbacks->GetModuleFunctionTable)
		return 0;
	NvtxFunctionTable core = NULL, core2 = NULL;
	/* Check both tables before writing either: never half-attach. */
	if (!module_table(callbacks, NVTX_CB_MODULE_CORE, core_slots, COUNT(core_slots), &core) ||
	    !module_table(callbacks, NVTX_CB_MODULE_CORE2, core2_slots, COUNT(core2_slots),
			  &core2))
		return 0;
	for (size_t i = 0; i < COUNT(core_slots); i++)
		*core[core_slots[i].id] = core_slots[i].fn;
	for (size_t i = 0; i < COUNT(core2_slots); i++)
		*core2[core2_slots[i].id] = core2_slots[i].fn;
	atomic_fetch_add(&attached_modules, 1);
	return 1;
}
