/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The decoded event stream that every backend produces and every consumer
 * (symbolizer, aggregator, store, top) reads.  Backends translate their
 * native records (nmiprof rings, perf mmap records) into these; nothing
 * downstream knows which backend produced an event.
 *
 * Pointers inside an event are valid only during the callback.
 */
#ifndef NP_EVENT_H
#define NP_EVENT_H

#include <stdint.h>
#include <nmiprof/nmiprof_abi.h>

enum np_event_type {
	NP_EV_SAMPLE = 1,
	NP_EV_MMAP,	/* a file mapping appeared in pid (perf MMAP2) */
	NP_EV_COMM,	/* pid/tid changed its comm (exec or prctl) */
	NP_EV_FORK,
	NP_EV_EXIT,
	NP_EV_LOST,	/* the backend dropped `lost` samples on `cpu` */
	NP_EV_LOCKUP,	/* a hard-lockup report from nmiprof.ko */
};

struct np_ev_sample {
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	uint64_t ip;
	uint32_t cpu, pid, tid;
	uint32_t flags;		/* NMIPROF_RF_* */
	char comm[NMIPROF_COMM_LEN];
	uint16_t nr_kframes, nr_uframes;
	const uint64_t *kframes;	/* innermost first; kframes[0] == ip in kernel mode */
	const uint64_t *uframes;	/* innermost first */
};

struct np_ev_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t prot, flags;
	uint8_t build_id[20];
	uint8_t build_id_size;	/* 0 when unknown */
	const char *filename;
};

struct np_ev_comm {
	uint32_t pid, tid;
	int exec;		/* comm changed because of exec */
	char comm[NMIPROF_COMM_LEN];
};

struct np_ev_task {			/* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time_ns;
};

struct np_ev_lost {
	uint32_t cpu;
	uint64_t lost;
};

struct np_ev_lockup {
	uint64_t time_ns, stuck_ns;
	uint64_t real_ns;	/* CLOCK_REALTIME of time_ns; 0: unknown */
	uint64_t qid;		/* id in the module's lockup queue; 0: none */
	uint32_t cpu, pid, tid, flags;
	char comm[NMIPROF_COMM_LEN];
	struct nmiprof_regs regs;
	uint16_t nr_kframes;
	const uint64_t *kframes;
};

struct np_event {
	enum np_event_type type;
	union {
		struct np_ev_sample sample;
		struct np_ev_mmap mmap;
		struct np_ev_comm comm;
		struct np_ev_task task;
		struct np_ev_lost lost;
		struct np_ev_lockup lockup;
	};
};

typedef int (*np_event_fn)(const struct np_event *ev, void *arg);

#endif /* NP_EVENT_H */
