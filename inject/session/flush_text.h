/* inject/session/flush_text.h - the cache flush's kernel as PTX text (flush_text.c says how
 * it evicts the SMs' instruction caches, sweeps the L2 and discards what it read), and the
 * layout of the sink it shares with the host that launches it (flush.c). */
#ifndef INJECT_FLUSH_TEXT_H
#define INJECT_FLUSH_TEXT_H

#include <stdbool.h>

#define FLUSH_WARPS 32
/* The sink: at +0 the fold's store (flush_ptx_check), at FLUSH_SINK_BARRIER the grid
 * barrier's u64 count (flush_ptx_empty_tail), from FLUSH_SINK_TICKETS each SM's u32 counter
 * of segments taken, FLUSH_TICKETS of them: room for %smid up to 1023. */
#define FLUSH_TICKETS 1024
#define FLUSH_SINK_BARRIER 8
#define FLUSH_SINK_TICKETS 16
#define FLUSH_SINK_BYTES (FLUSH_SINK_TICKETS + 4 * FLUSH_TICKETS)
_Static_assert(FLUSH_SINK_BARRIER >= 4 && FLUSH_SINK_BARRIER % 8 == 0 &&
		       FLUSH_SINK_TICKETS >= FLUSH_SINK_BARRIER + 8,
	       "nothing in the sink overlaps");
_Static_assert(FLUSH_SINK_BARRIER == 8, "flush_ptx_empty_tail's barrier is at sink + 8");
/* The discard_from of a plain launch of a discarding text (after a refused cooperative
 * launch): past any buffer's last line, so no barrier and no discard, and per_sm rounds of
 * code segments. A cooperative launch's is a line of the buffer, or its end where a build
 * discards nothing (FLUSH_DISCARD_HALVES 0): one round either way. */
#define FLUSH_PLAIN_LAUNCH 0xffffffffffffffffULL

/* The kernel rangeprof_l2_flush(buf, words, sink[, discard_from]) for a flush that ends with
 * the discard (empty: PTX 7.4, sm_80) or with the sweep (PTX 7.0, sm_70), its code spread
 * over per_sm (1 or 2) blocks of FLUSH_WARPS warps per SM. malloc'ed; NULL when out of
 * memory. */
char *inject_flush_text(bool empty, int per_sm);

#endif
