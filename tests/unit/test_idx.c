// SPDX-License-Identifier: GPL-2.0
/* lib/util/np_idx: both layouts, through growth, collisions and clears. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "np_idx.h"

#define N	50000

static uint64_t keys[N];

static uint32_t key_hash(uint64_t k, int weak)
{
	/* weak: 16 distinct hashes, so probe runs are long and shared */
	return weak ? (uint32_t)(k % 16) * 0x9e3779b9u : (uint32_t)np_hash_u64(k);
}

static void fill_keys(void)
{
	for (uint32_t i = 0; i < N; i++)
		keys[i] = (uint64_t)i * 7919 + 3;
}

static uint32_t find(const struct np_idx *x, uint64_t k, int weak)
{
	uint32_t h = key_hash(k, weak), pos = np_idx_first(x, h), id;

	while ((id = np_idx_next(x, h, &pos)) != NP_IDX_NONE)
		if (keys[id] == k)
			return id;
	return NP_IDX_NONE;
}

static void run_idx(int weak, uint32_t n)
{
	struct np_idx x = { 0 };
	uint32_t bad = 0;

	CHECK(find(&x, keys[0], weak) == NP_IDX_NONE, "empty index finds");
	for (uint32_t i = 0; i < n; i++) {
		CHECK(find(&x, keys[i], weak) == NP_IDX_NONE);
		CHECK(!np_idx_insert(&x, key_hash(keys[i], weak), i));
	}
	for (uint32_t i = 0; i < n; i++)
		bad += find(&x, keys[i], weak) != i;
	CHECK(!bad, "%u of %u ids lost", bad, n);
	CHECK(x.used == n);
	CHECK((uint64_t)x.used * 2 <= (uint64_t)x.mask + 1,
	      "%u ids in %u slots", x.used, x.mask + 1);
	CHECK(np_idx_mem(&x) == ((size_t)x.mask + 1) * 8);
	np_idx_clear(&x);
	CHECK(find(&x, keys[1], weak) == NP_IDX_NONE, "cleared index finds");
	CHECK(!np_idx_insert(&x, key_hash(keys[1], weak), 0));
	keys[0] = keys[1];
	CHECK(find(&x, keys[1], weak) == 0);
	np_idx_free(&x);
	CHECK(!x.slot && !x.used && !np_idx_mem(&x));
	fill_keys();
}

static void test_idx(void)
{
	fill_keys();
	run_idx(0, N);
	run_idx(1, 2000);
}

static void test_idx_reserve(void)
{
	struct np_idx x = { 0 };
	uint64_t *slot;

	fill_keys();
	CHECK(!np_idx_reserve(&x, 1000));
	slot = x.slot;
	CHECK(x.mask + 1 >= 2000, "%u slots for 1000 ids", x.mask + 1);
	for (uint32_t i = 0; i < 1000; i++)
		CHECK(!np_idx_insert(&x, key_hash(keys[i], 0), i));
	CHECK(x.slot == slot, "reserved index resized");
	for (uint32_t i = 0; i < 1000; i++)
		CHECK(find(&x, keys[i], 0) == i);
	CHECK(!np_idx_reserve(&x, 10), "reserve below used");
	CHECK(x.slot == slot);
	np_idx_free(&x);
}

static uint8_t removed[N];

/* Remove every other key in a scattered order, then the rest: whoever
 * stays is found all along, whoever went is not. */
static void run_idx_remove(int weak, uint32_t n)
{
	struct np_idx x = { 0 };
	uint32_t bad = 0;

	memset(removed, 0, sizeof(removed));
	for (uint32_t i = 0; i < n; i++)
		CHECK(!np_idx_insert(&x, key_hash(keys[i], weak), i));
	for (uint32_t pass = 0; pass < 2; pass++) {
		for (uint32_t k = 0; k < n; k++) {
			uint32_t i = (uint32_t)(((uint64_t)k * 7907) % n);

			if ((i & 1) != pass)
				continue;
			CHECK(!np_idx_remove(&x, key_hash(keys[i], weak), i));
			CHECK(np_idx_remove(&x, key_hash(keys[i], weak), i) == -1,
			      "id %u removed twice", i);
			removed[i] = 1;
			if (k % 97)
				continue;
			for (uint32_t j = 0; j < n; j++)
				bad += find(&x, keys[j], weak) !=
				       (removed[j] ? NP_IDX_NONE : j);
		}
		CHECK(!bad, "pass %u: %u keys wrong", pass, bad);
	}
	CHECK(x.used == 0, "%u used after removing all", x.used);
	for (uint32_t i = 0; i < n; i++)
		CHECK(!np_idx_insert(&x, key_hash(keys[i], weak), i));
	for (uint32_t i = 0; i < n; i++)
		bad += find(&x, keys[i], weak) != i;
	CHECK(!bad, "%u of %u reinserted ids lost", bad, n);
	np_idx_free(&x);
}

static void test_idx_remove(void)
{
	struct np_idx x = { 0 };

	fill_keys();
	CHECK(np_idx_remove(&x, 1, 0) == -1, "empty index removes");
	run_idx_remove(0, 5000);
	run_idx_remove(1, 1500);
	/* A run past the last slot wraps to slot 0; ids 0..3 home last. */
	for (uint32_t i = 0; i < 6; i++)
		CHECK(!np_idx_insert(&x, i < 4 ? UINT32_MAX : 0, i));
	CHECK(!np_idx_remove(&x, UINT32_MAX, 1));
	for (uint32_t i = 0, id, pos; i < 2; i++) {
		uint32_t h = i ? 0 : UINT32_MAX, seen = 0;

		pos = np_idx_first(&x, h);
		while ((id = np_idx_next(&x, h, &pos)) != NP_IDX_NONE)
			seen |= 1U << id;
		CHECK(seen == (i ? 0x30U : 0x0dU), "hash %x finds %#x", h, seen);
	}
	np_idx_free(&x);
}

struct owner {
	int weak;
	uint32_t calls;
};

static uint32_t owner_hash(const void *o, uint32_t id)
{
	struct owner *ow = (struct owner *)o;

	ow->calls++;
	return key_hash(keys[id], ow->weak);
}

static uint32_t find32(const struct np_idx32 *x, uint64_t k, int weak)
{
	uint32_t pos = np_idx32_first(x, key_hash(k, weak)), id;

	while ((id = np_idx32_next(x, &pos)) != NP_IDX_NONE)
		if (keys[id] == k)
			return id;
	return NP_IDX_NONE;
}

static void run_idx32(int weak, uint32_t n)
{
	struct owner ow = { .weak = weak };
	struct np_idx32 x = { 0 };
	uint32_t bad = 0;

	CHECK(find32(&x, keys[0], weak) == NP_IDX_NONE, "empty index finds");
	for (uint32_t i = 0; i < n; i++) {
		CHECK(find32(&x, keys[i], weak) == NP_IDX_NONE);
		CHECK(!np_idx32_insert(&x, key_hash(keys[i], weak), i,
				       owner_hash, &ow));
	}
	for (uint32_t i = 0; i < n; i++)
		bad += find32(&x, keys[i], weak) != i;
	CHECK(!bad, "%u of %u ids lost", bad, n);
	CHECK(x.used == n && (uint64_t)x.used * 4 <= (uint64_t)x.size * 3,
	      "%u ids in %u slots", x.used, x.size);
	/* 1.5x growth: sizes 1024, 1536, ...; never a power of two past 1024 */
	CHECK(n <= 768 || (x.size & (x.size - 1)), "size %u", x.size);
	CHECK(ow.calls > 0 || n <= 768, "resized without the owner's hashes");
	CHECK(np_idx32_mem(&x) == (size_t)x.size * 4);
	np_idx32_clear(&x);
	CHECK(find32(&x, keys[2], weak) == NP_IDX_NONE, "cleared index finds");
	np_idx32_free(&x);
	CHECK(!x.slot && !x.size && !x.used);
}

static void test_idx32(void)
{
	fill_keys();
	run_idx32(0, N);
	run_idx32(1, 3000);
	run_idx32(0, 700);
}

/* The last slot of a size that is no power of two wraps to slot 0. */
static void test_idx32_wrap(void)
{
	struct owner ow = { 0 };
	struct np_idx32 x = { 0 };

	fill_keys();
	/* hash UINT32_MAX: home is the last slot */
	for (uint32_t i = 0; i < 3; i++) {
		uint32_t pos;

		CHECK(!np_idx32_insert(&x, UINT32_MAX, i, owner_hash, &ow));
		pos = np_idx32_first(&x, UINT32_MAX);
		CHECK(pos == x.size - 1, "home %u of %u", pos, x.size);
	}
	CHECK(x.slot[0] == 2 && x.slot[1] == 3, "probe run did not wrap");
	np_idx32_free(&x);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_idx),
	NP_CASE(test_idx_reserve),
	NP_CASE(test_idx_remove),
	NP_CASE(test_idx32),
	NP_CASE(test_idx32_wrap),
	{ 0 }
};

int main(int argc, char **argv)
{
	return np_test_main(argc, argv, cases);
}
