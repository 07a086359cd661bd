/* rangeprof_control.h - the control API of librangeprof.so, version 2 (doc/control-api.md).
 * For a process that loaded the library (import rangeprof does, through ctypes) and drives
 * it at run time: attach, set options per measurement, open and close annotations, and
 * take the records written meanwhile; version 2 adds the set-up ahead of the first
 * measurement (rangeprof_prepare) and its wait before exit. Every function is thread-safe;
 * a failed call returns a code below and leaves its message for rangeprof_last_error(). */
#ifndef RANGEPROF_CONTROL_H
#define RANGEPROF_CONTROL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RANGEPROF_CONTROL_VERSION 2
/* Devices the library measures on, and rangeprof_prepare takes: ordinals 0 to
 * RANGEPROF_MAX_DEVICES - 1 (version 2). */
#define RANGEPROF_MAX_DEVICES 64

enum rangeprof_status {
	RANGEPROF_OK = 0,
	RANGEPROF_EINVAL = 1,        /* a bad option name or value, or a NULL or empty name */
	RANGEPROF_ENESTED = 2,       /* an annotation of this name is already open */
	RANGEPROF_ENOTOPEN = 3,      /* no annotation of this name is open */
	RANGEPROF_EUNAVAILABLE = 4,  /* rangeprof measures nothing in this process */
	RANGEPROF_ENOMEM = 5,        /* out of host memory */
};

int rangeprof_control_version(void);
int rangeprof_attach(void);
char *rangeprof_info(void);
int rangeprof_set_option(const char *name, const char *value);
int rangeprof_annotation_begin(const char *name);
int rangeprof_annotation_end(const char *name);
int rangeprof_capture_begin(void);
char *rangeprof_capture_take(size_t *length);
void rangeprof_capture_end(void);
void rangeprof_free(void *p);
const char *rangeprof_last_error(void);
/* Version 2. */
int rangeprof_prepare(int device);
void rangeprof_before_exit(void);

#ifdef __cplusplus
}
#endif

#endif
