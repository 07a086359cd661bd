/* inject/callback/allocations.h - allocation and free calls fed to memory/track.c
 * (allocations.c). */
#ifndef INJECT_ALLOCATIONS_H
#define INJECT_ALLOCATIONS_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

/* Enables the driver callbacks of every call that creates or frees memory. */
CUptiResult inject_allocations_enable(CUpti_SubscriberHandle sub);
/* Whether cbid's call takes device memory (an allocation, not a free or a mapping) or
 * asks how much is free (cuMemGetInfo: the application may size its next allocation from
 * it), and if so the bytes it asks for in *bytes, read from its parameters at ENTER:
 * SIZE_MAX where the call does not say (an array, whose size its descriptor's format
 * sets; cuMemGetInfo). */
bool inject_allocations_take_memory(CUpti_CallbackId cbid, const void *params, size_t *bytes);
/* At a driver call's EXIT: records what an allocation call that succeeded created or
 * freed; false when cbid is not one of them. */
bool inject_allocations_on_call(CUpti_CallbackId cbid, const CUpti_CallbackData *cb);

#endif
