/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * nmiprof ABI: the one header shared by nmiprof.ko and userspace.
 *
 * Everything here is fixed-width and naturally aligned, so the same bytes
 * mean the same thing to the module and to any daemon built against the
 * same NMIPROF_ABI_VERSION.  Records are also described at run time by
 * ftrace-style format text (NMIPROF_IOC_GET_FORMAT), which the daemon
 * parses with libtraceevent; field names below match those descriptions.
 *
 * Versions.  NMIPROF_ABI_VERSION, the major, covers what both sides
 * compile in: the record header, the ring control page and the ioctl
 * structures.  It changes only when one of those changes incompatibly,
 * and HELLO refuses a peer of another major.  NMIPROF_ABI_MINOR counts
 * compatible changes, and HELLO accepts a peer of any minor:
 *   - a record's fields added, moved or resized: the daemon finds every
 *     field by name in the format text, so it decodes any minor's
 *     records, and a field it needs and does not find is a clear error;
 *   - a field taken from a __reserved area, where zero means "as
 *     before" (an older peer leaves it zero);
 *   - a new ioctl or record type (unknown ones are refused or skipped);
 *   - a new flag bit in a record (readers ignore bits they don't know).
 * Each side learns the other's minor from HELLO and uses what minor N
 * added only with a peer of minor N or later.
 *
 * Why not one version that must match: nmiprof.ko and nmiprofd come in
 * two packages (nmiprof-dkms, nmiprof), and a loaded module outlives an
 * upgrade of the daemon until it is reloaded.  Accepting other minors is
 * what keeps such a pair working, and what the format text is for.
 */
#ifndef _UAPI_NMIPROF_ABI_H
#define _UAPI_NMIPROF_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

#define NMIPROF_MAGIC		0x4e4d4950U	/* "NMIP" */
#define NMIPROF_ABI_VERSION	1	/* major: must match */
#define NMIPROF_ABI_MINOR	8	/* compatible changes (see above) */
#define NMIPROF_DEVICE		"/dev/nmiprof"

#define NMIPROF_MAX_FRAMES	127	/* per stack, kernel and user each */
#define NMIPROF_DEFAULT_FRAMES	64
#define NMIPROF_COMM_LEN	16

/* ------------------------------------------------------------------ */
/* Records                                                            */
/* ------------------------------------------------------------------ */

enum nmiprof_record_type {
	NMIPROF_REC_SAMPLE	= 1,
	NMIPROF_REC_LOST	= 2,
	NMIPROF_REC_LOCKUP	= 3,
	NMIPROF_REC_MAX,
};

/*
 * Every record starts with this header.  size covers header and payload
 * and is a multiple of 8, so the next record is at (record + size).
 * A record whose type is NMIPROF_REC_PAD only fills the ring's tail
 * end so that no record wraps; readers skip it.
 */
#define NMIPROF_REC_PAD		0xffff

struct nmiprof_rec_header {
	__u16 common_type;	/* enum nmiprof_record_type */
	__u16 common_flags;	/* NMIPROF_RF_* */
	__u32 common_size;	/* bytes, including this header */
};

/* common_flags */
#define NMIPROF_RF_IN_NMI	(1U << 0) /* taken in NMI context */
#define NMIPROF_RF_USER_MODE	(1U << 1) /* interrupted user mode */
#define NMIPROF_RF_KSTACK_TRUNC	(1U << 2) /* kernel stack hit max depth */
#define NMIPROF_RF_USTACK_TRUNC	(1U << 3) /* user stack hit max depth */
#define NMIPROF_RF_USTACK_FAULT	(1U << 4) /* user walk stopped on a fault */
#define NMIPROF_RF_NO_USTACK	(1U << 5) /* kthread, disabled or unsafe */
#define NMIPROF_RF_EXTERNAL	(1U << 6) /* triggered by an unclaimed NMI */
#define NMIPROF_RF_LATCHED	(1U << 7) /* replayed by the nesting latch */

/*
 * Variable-length parts are located like ftrace's __data_loc fields:
 * bits 0..15 hold the byte offset from the start of the record and bits
 * 16..31 the length in bytes.  libtraceevent decodes them natively.
 */
#define NMIPROF_LOC(off, len)	((__u32)(off) | ((__u32)(len) << 16))
#define NMIPROF_LOC_OFF(loc)	((loc) & 0xffff)
#define NMIPROF_LOC_LEN(loc)	((loc) >> 16)

/* NMIPROF_REC_SAMPLE */
struct nmiprof_sample {
	struct nmiprof_rec_header hdr;
	__u64 seq;		/* per-CPU, counts every sample produced or lost */
	__u64 time_ns;		/* CLOCK_MONOTONIC (ktime_get_mono_fast_ns) */
	__u64 ip;		/* interrupted instruction pointer */
	__u32 cpu;
	__u32 pid;		/* tgid */
	__u32 tid;
	__u16 nr_kframes;
	__u16 nr_uframes;
	char comm[NMIPROF_COMM_LEN];
	__u32 kstack;		/* __data_loc u64[]: kernel return addresses */
	__u32 ustack;		/* __data_loc u64[]: user return addresses */
	__u32 uregs;		/* __data_loc u64[]: struct nmiprof_uregs, opt. */
	__u32 ustack_raw;	/* __data_loc u8[]: raw user stack from sp, opt. */
	/* variable part follows */
};

/* User registers for DWARF unwinding (perf's PERF_REG_X86 subset). */
struct nmiprof_uregs {
	__u64 ip, sp, bp;
};

/* NMIPROF_REC_LOST: emitted before the next record once space returns */
struct nmiprof_lost {
	struct nmiprof_rec_header hdr;
	__u64 seq;		/* seq of the first record that was dropped */
	__u64 time_ns;
	__u64 lost;		/* records dropped since the previous record */
	__u32 cpu;
	__u32 __pad;
};

/* x86_64 register snapshot of a stuck CPU, in struct pt_regs order. */
struct nmiprof_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10;
	__u64 r9, r8, ax, cx, dx, si, di, orig_ax;
	__u64 ip, cs, flags, sp, ss;
};

/* NMIPROF_REC_LOCKUP */
struct nmiprof_lockup {
	struct nmiprof_rec_header hdr;
	__u64 seq;
	__u64 time_ns;
	__u64 stuck_ns;		/* time since the CPU's last heartbeat */
	__u32 cpu;
	__u32 pid;
	__u32 tid;
	__u16 nr_kframes;
	__u16 lockup_flags;	/* NMIPROF_LF_* */
	char comm[NMIPROF_COMM_LEN];
	struct nmiprof_regs regs;
	__u32 kstack;		/* __data_loc u64[] */
	__u32 __pad;
	__u64 real_ns;		/* CLOCK_REALTIME of time_ns (minor 3) */
};

#define NMIPROF_LF_HARD		(1U << 0)
#define NMIPROF_LF_RECOVERED	(1U << 1)
#define NMIPROF_LF_SILENT	(1U << 2) /* no answer to NMIs (minor 3) */
/*
 * minor 6: stuck_ns counts from when the watchdog began to watch a CPU
 * already stuck (it had no heartbeat since): a lower bound.
 */
#define NMIPROF_LF_AT_LEAST	(1U << 3)

/* ------------------------------------------------------------------ */
/* Per-CPU ring                                                       */
/* ------------------------------------------------------------------ */

/*
 * Each CPU's ring is one vmalloc_user() buffer: a control page followed
 * by data_size bytes of records (a power of two).  It is mapped in two
 * parts, at offsets from NMIPROF_MMAP_OFFSET():
 *   NMIPROF_MAP_CTRL: the control page, PROT_READ|PROT_WRITE; the module
 *                     reads back only ->tail from it.
 *   NMIPROF_MAP_DATA: the data pages, PROT_READ only.
 * The module makes every CPU's ring at the first START or mmap(), not at
 * load (either fails with ENOMEM if it cannot), and keeps them to unload.
 *
 * head and tail are free-running byte counters; a record lives at
 * (pos & (data_size - 1)) and never wraps (see NMIPROF_REC_PAD).
 * Reader: head = load_acquire(&ctrl->head); read records; then
 * store_release(&ctrl->tail, new_tail).  These pair with the module's
 * smp_store_release(head) and smp_load_acquire(tail) in kmod/ring.c.
 */
struct nmiprof_ring_ctrl {
	__u32 magic;		/* NMIPROF_MAGIC */
	__u32 abi_version;	/* NMIPROF_ABI_VERSION */
	__u32 cpu;
	__u32 ctrl_size;	/* bytes of this page, data starts after it */
	__u64 data_size;
	__u64 head;		/* written by the module */
	__u64 tail;		/* written by the consumer */
	__u64 produced;		/* records written, LOST included, pads not */
	__u64 lost;		/* records dropped because the ring was full */
	__u64 watermark;	/* bytes pending before poll() wakes */
	__u64 __reserved[8];
};

enum nmiprof_map_kind {
	NMIPROF_MAP_CTRL = 0,
	NMIPROF_MAP_DATA = 1,
};

#define NMIPROF_MMAP_OFFSET(cpu, kind) \
	(((__u64)(cpu) << 32) | ((__u64)(kind) << 31))

/* ------------------------------------------------------------------ */
/* ioctls                                                             */
/* ------------------------------------------------------------------ */

#define NMIPROF_IOC_MAGIC	'N'

/*
 * Checked first: a caller of another major gets -EPROTO, with the
 * module's versions filled in; any minor is accepted.
 */
struct nmiprof_hello {
	__u32 magic;		/* in: NMIPROF_MAGIC */
	__u32 abi_version;	/* in: caller's major; out: module's */
	__u32 nr_cpu_ids;	/* out */
	__u32 page_size;	/* out */
	__u64 ring_data_size;	/* out: per-CPU data bytes */
	__u32 nested_nmi_safe;	/* out: repeat_nmi/end_repeat_nmi found */
	__u32 abi_minor;	/* in: caller's minor; out: module's (0: 1.0) */
	__u32 __reserved[6];
};

enum nmiprof_source {
	NMIPROF_SRC_AUTO	= 0,
	NMIPROF_SRC_PMU		= 1,	/* perf cycles counter, overflow NMI */
	NMIPROF_SRC_IPI		= 2,	/* buddy hrtimer sends NMI IPI */
	NMIPROF_SRC_EXTERNAL	= 3,	/* unclaimed NMIs only */
};

/* config flags */
#define NMIPROF_CF_USER_STACKS	(1U << 0)
#define NMIPROF_CF_EXTERNAL	(1U << 1) /* also sample on unclaimed NMIs */
#define NMIPROF_CF_USER_REGS	(1U << 2) /* copy uregs + raw user stack */

struct nmiprof_config {
	__u32 freq_hz;		/* per CPU, 1..NMIPROF_MAX_FREQ */
	__u32 source;		/* enum nmiprof_source */
	__u32 kstack_depth;	/* 0..NMIPROF_MAX_FRAMES */
	__u32 ustack_depth;	/* 0..NMIPROF_MAX_FRAMES */
	__u32 flags;		/* NMIPROF_CF_* */
	__u32 ustack_bytes;	/* raw user stack bytes, 0..NMIPROF_MAX_USTACK_BYTES */
	__u64 cpumask[16];	/* up to 1024 CPUs; all zero means all online */
	__u32 watermark;	/* bytes; 0 means data_size / 4 */
	__u32 follow_pid;	/* minor 5: see below; 0: every task */
	__u32 __reserved[6];
};

/*
 * follow_pid (minor 5): sample only the process follow_pid (in the
 * caller's pid namespace; -ESRCH if there is none) and its descendants,
 * as perf's inherited per-task events see them, on the CPUs named.  CPUs
 * running anything else take no sample.  With the IPI source each CPU
 * then samples itself from its own timer, not by NMI, so the process is
 * not sampled while its interrupts are off.  A descendant counts as long
 * as its chain of parents leads to follow_pid: one whose parent exited
 * before it (reparented to init or a subreaper) is no longer sampled.
 */

#define NMIPROF_MAX_FREQ	100000
#define NMIPROF_MAX_USTACK_BYTES 8192

#define NMIPROF_HIST_BUCKETS	16	/* bucket i: cost < 2^(i+7) ns */

struct nmiprof_cpu_stats {
	__u64 samples;
	__u64 lost;
	__u64 latched;		/* nested entries caught by the latch */
	__u64 external;		/* samples from unclaimed NMIs */
	__u64 cost_min_ns;
	__u64 cost_max_ns;
	__u64 cost_sum_ns;	/* average = sum / samples */
	__u64 cost_hist[NMIPROF_HIST_BUCKETS];
	__u64 lockups;		/* reported since load, not per session */
	__u64 throttled;	/* delayed IPI NMIs (minor 4) */
	__u64 __reserved[3];
};

struct nmiprof_stats {
	__u32 nr_cpus;		/* in: entries at cpus; out: filled */
	__u32 source;		/* out: enum nmiprof_source in use */
	__u32 running;		/* out */
	__u32 nested_nmi_safe;	/* out */
	__u64 cpus;		/* in: user pointer to nr_cpus nmiprof_cpu_stats */
	__u64 lockups_dropped;	/* out (minor 4): lockup queue full, since load */
	__u64 __reserved[3];
};

/* Fetch the ftrace-style format text of one record type. */
struct nmiprof_format_req {
	__u32 type;		/* in: enum nmiprof_record_type */
	__u32 len;		/* in: buffer size; out: text length incl. NUL */
	__u64 buf;		/* in: user pointer */
};

#define NMIPROF_IOC_HELLO	_IOWR(NMIPROF_IOC_MAGIC, 1, struct nmiprof_hello)
#define NMIPROF_IOC_CONFIGURE	_IOW(NMIPROF_IOC_MAGIC, 2, struct nmiprof_config)
#define NMIPROF_IOC_START	_IO(NMIPROF_IOC_MAGIC, 3)
#define NMIPROF_IOC_STOP	_IO(NMIPROF_IOC_MAGIC, 4)
#define NMIPROF_IOC_GET_STATS	_IOWR(NMIPROF_IOC_MAGIC, 5, struct nmiprof_stats)
#define NMIPROF_IOC_GET_FORMAT	_IOWR(NMIPROF_IOC_MAGIC, 6, struct nmiprof_format_req)

/*
 * Hard-lockup watchdog (NMIPROF_IOC_{GET,SET}_WATCHDOG; SET needs
 * CAP_SYS_ADMIN).  It runs from module load, independent of sampling.
 */
struct nmiprof_watchdog {
	__u32 enabled;		/* 0: off */
	__u32 threshold_s;	/* 1..NMIPROF_WD_MAX_THRESHOLD */
	__u32 flags;		/* NMIPROF_WF_* */
	__u32 __reserved0;	/* must be zero */
	__u64 cpumask[16];	/* CPUs watched; all zero: all but nohz_full */
	__u64 __reserved[4];	/* must be zero */
};

#define NMIPROF_WD_MAX_THRESHOLD 600

/* flags */
#define NMIPROF_WF_ALL_CPU_BT	(1U << 0) /* every CPU prints its backtrace */
#define NMIPROF_WF_PANIC	(1U << 1) /* panic after the report */

/*
 * The lockup queue (minor 3): every LOCKUP record the watchdog writes
 * (hard, silent, recovered) is kept by the module from load to unload,
 * whether or not a session runs, until a reader acknowledges it.  Peers
 * of minor 3 on find LOCKUP records only here, never in the rings.
 * LOCKUP_READ copies the queued record with the lowest id above @after
 * (ids are unique for the module's life, in the order the records were
 * started, not finished: read again from 0 to see every record still
 * queued).  LOCKUP_ACK removes one, once the reader has stored it
 * durably.  A full queue keeps what it holds and counts what it drops.
 */
struct nmiprof_lockup_read {
	__u64 after;		/* in: id; 0 for the first */
	__u64 buf;		/* in: user pointer to a LOCKUP record */
	__u32 len;		/* in: its size; out: the record's size */
	__u32 __pad;		/* must be zero */
	__u64 id;		/* out: the record's id; 0: none above @after */
	__u64 dropped;		/* out: records dropped, queue full, since load */
	__u64 __reserved[4];	/* must be zero */
};

#define NMIPROF_IOC_LOCKUP_READ	_IOWR(NMIPROF_IOC_MAGIC, 7, struct nmiprof_lockup_read)
#define NMIPROF_IOC_LOCKUP_ACK	_IOW(NMIPROF_IOC_MAGIC, 8, __u64)

#define NMIPROF_IOC_GET_WATCHDOG _IOR(NMIPROF_IOC_MAGIC, 16, struct nmiprof_watchdog)
#define NMIPROF_IOC_SET_WATCHDOG _IOW(NMIPROF_IOC_MAGIC, 17, struct nmiprof_watchdog)

/*
 * Unwind tables (minor 2; struct nmiprof_uw_table in nmiprof_unwind.h).
 * The daemon loads one table per ELF object (UW_LOAD, which validates it
 * and returns its id) and gives each sampled process the set of its
 * executable mappings (UW_SET_MAPS), which replaces the process's
 * previous set whole; nr == 0 drops it.  A table's id stays unique for
 * the module's life, so a set naming a dropped or evicted table falls
 * back to frame pointers there.  Sets are dropped when the last file
 * that loaded or set any is closed.  The module keeps at most its
 * unwind_budget_kb of tables, dropping the least recently used.
 *
 * Minor 8: tables outlive the files that loaded them (until evicted or
 * the module is unloaded), so that the next reader need not load them
 * again.  UW_LOAD with NMIPROF_UW_LOAD_PROBE reads only the header at
 * @table and returns the id of a loaded table with the same header
 * (build-id, crc, rows: build_id_size and crc nonzero) and @len bytes,
 * or fails with ENOENT; nothing is copied or validated.  A plain
 * UW_LOAD of a table that matches a loaded one (validated first) returns
 * that one's id.  An older module refuses the flag (EINVAL).
 */
struct nmiprof_uw_load {
	__u64 table;		/* in: user pointer to the table */
	__u32 len;		/* in: its bytes */
	__u32 id;		/* out: nonzero */
	__u32 flags;		/* in: NMIPROF_UW_LOAD_* (minor 8) */
	__u32 __reserved[3];	/* must be zero */
};

#define NMIPROF_UW_LOAD_PROBE	0x1	/* match a loaded table, load nothing */

/* ip in [start, end) is at ELF vaddr ip - bias of table (0: none). */
struct nmiprof_uw_map {
	__u64 start;
	__u64 end;
	__u64 bias;
	__u32 table;
	__u32 __pad;		/* must be zero */
};

#define NMIPROF_UW_MAX_MAPS	4096

struct nmiprof_uw_maps {
	__u32 pid;		/* in: the process (tgid) */
	__u32 nr;		/* in: maps, sorted, not overlapping; 0: drop */
	__u64 maps;		/* in: user pointer to nr nmiprof_uw_map */
	__u64 __reserved[2];	/* must be zero */
};

struct nmiprof_uw_stats {
	__u64 tables;		/* loaded now */
	__u64 table_bytes;
	__u64 budget_bytes;
	__u64 loaded;		/* accepted since module load */
	__u64 refused;		/* failed validation */
	__u64 evicted;		/* dropped for the budget, least recently used */
	__u64 sets;		/* processes with a mapping set */
	__u64 set_bytes;
	__u64 walks;		/* table walks from NMI */
	__u64 stops[8];		/* walks ended, per enum nmiprof_uw_stop */
	__u64 reused;		/* loads and probes a loaded table met (minor 8) */
	__u64 __reserved[7];
};

#define NMIPROF_IOC_UW_LOAD	_IOWR(NMIPROF_IOC_MAGIC, 24, struct nmiprof_uw_load)
#define NMIPROF_IOC_UW_DROP	_IOW(NMIPROF_IOC_MAGIC, 25, __u32)
#define NMIPROF_IOC_UW_SET_MAPS	_IOW(NMIPROF_IOC_MAGIC, 26, struct nmiprof_uw_maps)
#define NMIPROF_IOC_UW_STATS	_IOR(NMIPROF_IOC_MAGIC, 27, struct nmiprof_uw_stats)

/*
 * CPUs that don't answer (minor 7).  Opening, enabling, disabling and
 * closing a perf event bound to a CPU is a cross call to that CPU, which
 * a CPU with interrupts off (a hard lockup) does not take: the caller
 * waits until the lockup ends.
 *
 * CPUS_ANSWER sends every online CPU an IPI and waits up to timeout_ms
 * (at most 1000) for the answers; cpumask comes back with the CPUs that
 * answered.  PARK_PERF_FD takes the caller's fd of a perf event bound to
 * a CPU (-EINVAL for anything else) and holds the event until that CPU
 * answers an IPI: the caller's close and exit then return at once, and
 * the event goes when the CPU is back.
 */
struct nmiprof_cpus_answer {
	__u32 timeout_ms;	/* in */
	__u32 __reserved;	/* must be zero */
	__u64 cpumask[16];	/* out: up to 1024 CPUs */
};

#define NMIPROF_IOC_CPUS_ANSWER	_IOWR(NMIPROF_IOC_MAGIC, 28, struct nmiprof_cpus_answer)
#define NMIPROF_IOC_PARK_PERF_FD _IOW(NMIPROF_IOC_MAGIC, 29, __s32)

#endif /* _UAPI_NMIPROF_ABI_H */
