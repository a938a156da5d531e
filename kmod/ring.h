/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU record rings shared with userspace through mmap().
 */
#ifndef _NMIPROF_RING_H
#define _NMIPROF_RING_H

#include <linux/types.h>
#include <linux/irq_work.h>
#include <asm/local.h>
#include <nmiprof/nmiprof_abi.h>

struct vm_area_struct;

struct np_ring {
	struct nmiprof_ring_ctrl *ctrl;	/* vmalloc_user(): ctrl page + data */
	void		*data;		/* ctrl + PAGE_SIZE */
	unsigned long	size;		/* data bytes, a power of two */
	int		cpu;

	/*
	 * Writer state; only the owning CPU touches these, but for
	 * np_rings_reset() and np_rings_flush_lost() while no writer runs.
	 */
	local_t		head;		/* bytes reserved, free running */
	local_t		nest;		/* writers inside reserve..commit */
	local_t		seq;		/* next sample sequence number */
	local_t		produced;	/* records written, pads excluded */
	local_t		lost;		/* records dropped, total */
	local_t		lost_pending;	/* dropped since the last LOST record */
	u64		lost_seq;	/* seq of the first of lost_pending */
	u64		tail;		/* last consumer tail we accepted */
	u64		pub_head;	/* last head published to ctrl->head */
	u64		watermark;	/* pending bytes that wake poll() */

	struct irq_work	wakeup;		/* NMI-safe path to wake_up() */
};

/* A reservation, from np_ring_reserve() to np_ring_commit(). */
struct np_ring_handle {
	struct np_ring	*ring;
	void		*rec;
	unsigned long	pos;		/* head position of rec */
	u32		size;		/* bytes reserved at rec */
};

void np_rings_init(unsigned long data_size);
int np_rings_create(void);
void np_rings_free(void);
struct np_ring *np_ring_get(int cpu);
unsigned long np_ring_data_size(void);

void np_rings_reset(unsigned long watermark);
void np_rings_flush_wakeups(void);

u64 np_ring_next_seq(struct np_ring *r);
void *np_ring_reserve(struct np_ring_handle *h, struct np_ring *r,
		      u32 size, u64 seq);
void np_ring_trim(struct np_ring_handle *h, u32 size);
void np_ring_commit(struct np_ring_handle *h);
void np_rings_flush_lost(void);

u64 np_ring_lost(int cpu);
bool np_rings_readable(bool drain);
int np_ring_mmap(int cpu, enum nmiprof_map_kind kind,
		 struct vm_area_struct *vma);

extern struct wait_queue_head np_ring_wq;

#endif /* _NMIPROF_RING_H */
