// SPDX-License-Identifier: GPL-2.0
/*
 * The unwind tables the daemon loaded, by id, under a memory budget.
 *
 * A table is validated (np_uw_validate(), the walker's own checks) before
 * it is published, and is never changed after: the NMI-side walk reads it
 * with no lock.  Ids are a slot in np_uw_slots[] and a generation above
 * it, so a mapping set that still names a dropped table finds nothing
 * rather than the table loaded into its slot since.  Dropped tables are
 * freed after a grace period (kvfree_rcu(), no module code runs then, so
 * unloading needs no rcu_barrier()).
 *
 * Budget: unwind_budget_kb of table bytes.  Loading past it evicts the
 * tables whose last walk is oldest (last_used, stamped from NMI), as a
 * scan: a few hundred tables at most, and only on load.
 *
 * Tables outlive the files that loaded them, so that the next reader
 * finds libc's and its program's already here: np_uw_table_probe()
 * matches a table's header (build-id, crc of the rows, length), which a
 * rebuilt or replaced object changes, and costs no copy or validation.
 * Only tables that carry both a build-id and a crc can be matched.
 */
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "unwind.h"

#define NP_UW_SLOTS		4096
#define NP_UW_SLOT_BITS		12

static unsigned int unwind_budget_kb = 32768;
module_param(unwind_budget_kb, uint, 0644);
MODULE_PARM_DESC(unwind_budget_kb, "Memory for user unwind tables, KiB (least recently used go beyond it)");

DEFINE_MUTEX(np_uw_lock);

static struct np_uw_ktable __rcu *np_uw_slots[NP_UW_SLOTS];
static u32 np_uw_gen;
static u64 np_uw_bytes, np_uw_nr;
static u64 np_uw_loaded, np_uw_refused, np_uw_evicted, np_uw_reused;

/* NMI: under rcu_read_lock(), the table @id names, or NULL. */
const struct np_uw_ktable *np_uw_table_get(u32 id)
{
	struct np_uw_ktable *kt;
	unsigned long now = jiffies;

	kt = rcu_dereference(np_uw_slots[id & (NP_UW_SLOTS - 1)]);
	if (!kt || kt->id != id)
		return NULL;
	/* One store a tick at most: the line is read by every CPU. */
	if (READ_ONCE(kt->last_used) != now)
		WRITE_ONCE(kt->last_used, now);
	return kt;
}

static void np_uw_table_free(unsigned int slot)
{
	struct np_uw_ktable *kt;

	kt = rcu_replace_pointer(np_uw_slots[slot], NULL,
				 lockdep_is_held(&np_uw_lock));
	np_uw_bytes -= kt->bytes;
	np_uw_nr--;
	kvfree_rcu(kt, rcu);
}

/* Evict least recently used tables until @need more bytes fit. */
static void np_uw_make_room(u64 need, u64 budget)
{
	while (np_uw_bytes + need > budget && np_uw_nr) {
		struct np_uw_ktable *kt, *old = NULL;
		unsigned int i, slot = 0;

		for (i = 0; i < NP_UW_SLOTS; i++) {
			kt = rcu_dereference_protected(np_uw_slots[i],
						       lockdep_is_held(&np_uw_lock));
			if (kt && (!old || time_before(READ_ONCE(kt->last_used),
						       READ_ONCE(old->last_used)))) {
				old = kt;
				slot = i;
			}
		}
		np_uw_table_free(slot);
		np_uw_evicted++;
	}
}

/* The loaded table with header @h and @len bytes, or NULL. */
static struct np_uw_ktable *np_uw_table_match(const struct nmiprof_uw_table *h,
					      u32 len)
{
	struct np_uw_ktable *kt;
	unsigned int i;

	if (!h->build_id_size || !h->crc)
		return NULL;
	for (i = 0; i < NP_UW_SLOTS; i++) {
		kt = rcu_dereference_protected(np_uw_slots[i],
					       lockdep_is_held(&np_uw_lock));
		if (kt && kt->bytes == len && !memcmp(&kt->t, h, sizeof(*h)))
			return kt;
	}
	return NULL;
}

/* Under np_uw_lock: @kt serves one more reader. */
static u32 np_uw_table_reuse(struct np_uw_ktable *kt)
{
	/* A reader's first walks may be seconds away: not evicted first. */
	WRITE_ONCE(kt->last_used, jiffies);
	np_uw_reused++;
	return kt->id;
}

int np_uw_table_probe(const struct nmiprof_uw_table *h, u32 len, u32 *id)
{
	struct np_uw_ktable *kt;
	int ret = -ENOENT;

	mutex_lock(&np_uw_lock);
	kt = np_uw_table_match(h, len);
	if (kt) {
		*id = np_uw_table_reuse(kt);
		ret = 0;
	}
	mutex_unlock(&np_uw_lock);
	return ret;
}

int np_uw_table_load(const void __user *buf, u32 len, u32 *id)
{
	u64 budget = (u64)READ_ONCE(unwind_budget_kb) << 10;
	struct np_uw_ktable *kt, *same;
	const char *why = NULL;
	unsigned int slot;
	int ret = 0;

	if (len < sizeof(kt->t) || len > budget)
		return len < sizeof(kt->t) ? -EINVAL : -E2BIG;
	kt = kvmalloc(offsetof(struct np_uw_ktable, t) + len, GFP_KERNEL);
	if (!kt)
		return -ENOMEM;
	if (copy_from_user(&kt->t, buf, len)) {
		kvfree(kt);
		return -EFAULT;
	}
	mutex_lock(&np_uw_lock);
	if (np_uw_validate(&kt->t, len, &why)) {
		np_uw_refused++;
		ret = -EINVAL;
		goto out;
	}
	/* A reader that did not probe (older daemon): one copy is kept. */
	same = np_uw_table_match(&kt->t, len);
	if (same) {
		*id = np_uw_table_reuse(same);
		goto out;
	}
	np_uw_make_room(len, budget);
	for (slot = 0; slot < NP_UW_SLOTS; slot++)
		if (!rcu_access_pointer(np_uw_slots[slot]))
			break;
	if (slot == NP_UW_SLOTS) {
		ret = -ENOSPC;
		goto out;
	}
	/* Generation 0 is never used: id 0 means "no table". */
	if (!(++np_uw_gen & (U32_MAX >> NP_UW_SLOT_BITS)))
		np_uw_gen = 1;
	kt->id = (np_uw_gen << NP_UW_SLOT_BITS) | slot;
	kt->bytes = len;
	kt->last_used = jiffies;
	np_uw_bytes += len;
	np_uw_nr++;
	np_uw_loaded++;
	*id = kt->id;
	/* Pairs with rcu_dereference() in np_uw_table_get(). */
	rcu_assign_pointer(np_uw_slots[slot], kt);
	kt = NULL;
out:
	mutex_unlock(&np_uw_lock);
	if (why)
		pr_info_ratelimited("nmiprof: unwind table refused: %s\n", why);
	kvfree(kt);
	return ret;
}

int np_uw_table_drop(u32 id)
{
	unsigned int slot = id & (NP_UW_SLOTS - 1);
	struct np_uw_ktable *kt;
	int ret = -ENOENT;

	mutex_lock(&np_uw_lock);
	kt = rcu_dereference_protected(np_uw_slots[slot],
				       lockdep_is_held(&np_uw_lock));
	if (kt && kt->id == id) {
		np_uw_table_free(slot);
		ret = 0;
	}
	mutex_unlock(&np_uw_lock);
	return ret;
}

/* Under np_uw_lock, at unload. */
void np_uw_tables_clear(void)
{
	unsigned int i;

	for (i = 0; i < NP_UW_SLOTS; i++)
		if (rcu_access_pointer(np_uw_slots[i]))
			np_uw_table_free(i);
}

void np_uw_tables_stats(struct nmiprof_uw_stats *st)
{
	st->tables = np_uw_nr;
	st->table_bytes = np_uw_bytes;
	st->budget_bytes = (u64)READ_ONCE(unwind_budget_kb) << 10;
	st->loaded = np_uw_loaded;
	st->refused = np_uw_refused;
	st->evicted = np_uw_evicted;
	st->reused = np_uw_reused;
}
