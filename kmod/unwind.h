/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks through compiled unwind tables (include/nmiprof/
 * nmiprof_unwind.h), the kernel half:
 *   unwind_table.c  the tables, by id, under a memory budget (LRU),
 *                   kept for the next reader
 *   unwind_maps.c   per-process sets: executable mapping -> table
 *   unwind_user.c   the walk from NMI (with the walker and validator
 *                   shared with userspace compiled in), its counters,
 *                   the ioctls
 * Readers (NMI) hold rcu_read_lock() and take no lock; writers hold
 * np_uw_lock and publish whole new objects, freed after a grace period.
 */
#ifndef _NMIPROF_UNWIND_H_K
#define _NMIPROF_UNWIND_H_K

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <nmiprof/nmiprof_abi.h>
#include <nmiprof/nmiprof_unwind.h>
#include <unwind/np_unwind_walk.h>

struct pt_regs;

extern struct mutex np_uw_lock;

/* unwind_table.c */
struct np_uw_ktable {
	struct rcu_head		rcu;
	u32			id;
	unsigned long		last_used;	/* jiffies, written from NMI */
	size_t			bytes;		/* of the table */
	struct nmiprof_uw_table	t;		/* rows follow */
};

int np_uw_table_load(const void __user *buf, u32 len, u32 *id);
int np_uw_table_probe(const struct nmiprof_uw_table *h, u32 len, u32 *id);
int np_uw_table_drop(u32 id);
void np_uw_tables_clear(void);
void np_uw_tables_stats(struct nmiprof_uw_stats *st);
const struct np_uw_ktable *np_uw_table_get(u32 id);

/* unwind_maps.c */
struct np_uw_set {
	struct hlist_node	node;
	struct rcu_head		rcu;
	pid_t			tgid;
	const void		*mm;		/* identity only, never followed */
	u32			nr;
	struct nmiprof_uw_map	maps[];
};

int np_uw_set_maps(pid_t tgid, const struct nmiprof_uw_map __user *maps,
		   u32 nr);
void np_uw_sets_clear(void);
void np_uw_sets_stats(struct nmiprof_uw_stats *st);
const struct np_uw_set *np_uw_set_current(void);
const struct nmiprof_uw_map *np_uw_set_find(const struct np_uw_set *s,
					     u64 ip);
extern unsigned int np_uw_nr_sets;

/* unwind_user.c */
int np_uw_user_stack(struct pt_regs *uregs, u64 *buf, unsigned int max,
		     u16 *flags);
long np_uw_ioctl(unsigned int cmd, void __user *arg, bool *user);
void np_uw_release(bool user);
void np_uw_exit(void);

#endif /* _NMIPROF_UNWIND_H_K */
