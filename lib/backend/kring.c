// SPDX-License-Identifier: GPL-2.0
/*
 * Reading an nmiprof.ko per-CPU ring: the module produces at ->head, we
 * consume at ->tail; both are free-running byte counters and records
 * never wrap (the module pads the ring's end with NMIPROF_REC_PAD).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "np_kring.h"

int np_kring_init(struct np_kring *r, void *ctrl, const void *data,
		  uint64_t data_size, uint32_t cpu, char *err, size_t errlen)
{
	struct nmiprof_ring_ctrl *c = ctrl;

	memset(r, 0, sizeof(*r));
	if (c->magic != NMIPROF_MAGIC || c->abi_version != NMIPROF_ABI_VERSION) {
		snprintf(err, errlen, "CPU %u ring: bad control page (magic %#x, ABI %u)",
			 cpu, c->magic, c->abi_version);
		return -EPROTO;
	}
	if (!c->data_size || (c->data_size & (c->data_size - 1)) ||
	    c->data_size != data_size) {
		snprintf(err, errlen, "CPU %u ring: data size %llu, expected %llu (a power of two)",
			 cpu, (unsigned long long)c->data_size,
			 (unsigned long long)data_size);
		return -EPROTO;
	}
	r->ctrl = c;
	r->data = data;
	r->size = data_size;
	r->cpu = cpu;
	return 0;
}

uint64_t np_kring_pending(const struct np_kring *r)
{
	/* Pairs with the module's smp_store_release(&ctrl->head) in kmod/ring.c. */
	uint64_t head = __atomic_load_n(&r->ctrl->head, __ATOMIC_ACQUIRE);

	return head - __atomic_load_n(&r->ctrl->tail, __ATOMIC_RELAXED);
}

int np_kring_drain(struct np_kring *r, struct np_recfmt *fmt,
		   np_event_fn fn, void *arg, int *stopped)
{
	/*
	 * (C) in kmod/ring.c's ordering table: the records up to head are
	 * fully written before we read them.  Pairs with its (B), the
	 * module's smp_store_release(&ctrl->head).
	 */
	uint64_t head = __atomic_load_n(&r->ctrl->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&r->ctrl->tail, __ATOMIC_RELAXED);
	int n = 0;

	if (head - tail > r->size) {
		/* Impossible unless the module is broken: resynchronise. */
		r->corrupt++;
		tail = head;
	}
	while (tail != head) {
		uint64_t off = tail & (r->size - 1);
		const struct nmiprof_rec_header *h = (const void *)(r->data + off);
		unsigned long unknown = np_recfmt_unknown(fmt);
		uint32_t rsize;
		int ret;

		/* records are 8-byte aligned: a tail that is not was corrupted */
		if (off % 8) {
			r->corrupt++;
			tail = head;
			break;
		}
		rsize = h->common_size;
		if (rsize < sizeof(*h) || rsize % 8 || rsize > r->size - off ||
		    rsize > head - tail) {
			/* No way to find the next record: drop the rest. */
			r->corrupt++;
			tail = head;
			break;
		}
		if (h->common_type == NMIPROF_REC_PAD) {
			r->pads++;
			tail += rsize;
			continue;
		}
		ret = np_recfmt_decode(fmt, h, rsize, fn, arg);
		tail += rsize;
		if (ret < 0) {
			r->corrupt++;
			continue;
		}
		r->records++;
		if (np_recfmt_unknown(fmt) == unknown)
			n++;	/* else skipped: a type this daemon does not know */
		if (ret > 0) {
			if (stopped)
				*stopped = 1;
			break;
		}
	}
	/*
	 * (D) in kmod/ring.c's ordering table: our reads of the records are
	 * complete before the module may overwrite them.  Pairs with its
	 * (A), the module's smp_load_acquire(&ctrl->tail).
	 */
	__atomic_store_n(&r->ctrl->tail, tail, __ATOMIC_RELEASE);
	return n;
}
