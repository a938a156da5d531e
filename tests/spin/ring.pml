/*
 * One CPU's record ring, kmod/ring.c, with nested writers and the
 * consumer, lib/backend/kring.c's np_kring_drain().
 *
 * Writers run on the ring's CPU, each running to completion before the
 * one it interrupted resumes:
 *   1  hrtimer: the watchdog's RECOVERED record (np_report_reserve(),
 *      no trim)
 *   2  NMIs: samples (np_sample(): reserve the most, trim, commit)
 *   3  an NMI let in by the iret of a fault or kprobe inside 2: the
 *      watchdog's LOCKUP record, which is not under the sampler's latch
 * (1 and 3 only for a session owner of ABI minor < 3, lockup_report.c)
 * The consumer runs on another CPU at any time.  At the end, with every
 * writer stopped, np_rings_flush_lost() runs on a third CPU while the
 * consumer drains.
 *
 * Every access to the ring's state is one step (local_t operations are
 * single instructions, cmpxchg included); writer-private arithmetic is
 * folded into the access it follows.  The model is sequentially
 * consistent: the cross-CPU pairs (A)-(D) and the compiler barriers
 * (E)-(G) of ring.c's ordering table are what make the code behave so.
 * Sizes are in units of 8 bytes scaled down: a LOST record is 2, a ring
 * 16 that starts half full of unread data, so pads, wrap-around, full
 * rings, drops and LOST records all happen.  -DNMI_RUNS=2 adds a second sample: 5
 * million states, too slow for the suite, which runs it with
 * -DNO_NESTED (no NMI inside a sample; 0.23 million).
 *
 * Checked: a record is read only once complete and never overwritten
 * before it is read; every sequence number is consumed exactly once or
 * dropped exactly once, and the LOST records count the dropped ones
 * (seqs = consumed + lost); each LOST record names the first seq dropped
 * since the previous one; produced counts every record read, LOST ones
 * included; nest returns to 0 and the last head is published; no
 * deadlock (no invalid end state).
 *
 * Deliberate bugs:
 * -DBUG_NO_RECHECK  publish does not re-read head after nest = 0 (G):
 *                   a nested writer's record is never published.
 * -DBUG_HOIST_HEAD  the retry reads head before its nest++, as the
 *                   compiler could before (E) was at the label: a
 *                   writer in between publishes, and ours moves the
 *                   published head back over what was consumed.  Needs
 *                   two writers to interrupt the retry: -DNMI_RUNS=2
 *                   (-DNO_NESTED makes it quicker to find).
 * -DBUG_EARLY_HEAD  the head is stored before the record is written
 *                   (no release at (B)): the consumer reads a record
 *                   that is not there yet.
 * -DBUG_TRIM_STORE  trim tests head and then stores it, two steps
 *                   instead of a cmpxchg: a record a nested writer
 *                   reserved in between is overwritten.
 * -DSTOP_RACE       np_rings_flush_lost() on another CPU while the
 *                   watchdog's writers still run, as they did at STOP
 *                   before issue 14, section 2 (they now stop with the
 *                   session), its local_t updates unlocked against
 *                   theirs.  Fails: first found, a
 *                   RECOVERED record dropped after the flush is left in
 *                   lost_pending, reported by no LOST record.
 * -DBUG_NESTED_LOST the LOST record as before issue 14, section 7: any
 *                   writer, nested too, writes it, and reads lost_seq
 *                   after its xchg of lost_pending.  A nested writer
 *                   emits it between a drop's local_inc_return() and
 *                   its store of lost_seq, with the previous episode's
 *                   seq.
 */
#define RING		16	/* r->size */
#define MASK		15
#define LOSTSZ		2	/* sizeof(struct nmiprof_lost) */
#define HEADROOM	4	/* NP_LOST_HEADROOM */
#define SAMPLE_MAX	6	/* np_sample()'s reservation */
#define LOCKUP_SZ	4
#ifndef NMI_RUNS
#define NMI_RUNS	1
#endif
#define NSEQ		(2 + NMI_RUNS)	/* records at most */
#ifndef FILL
#define FILL		8	/* published, unread when the writers start */
#endif

#define PAD		1
#define LOST		2
#define REC		3

/* struct np_ring and its control page */
byte head, nest, seq, produced, lost, lost_pending, lost_seq, r_tail, pub_head;
byte ctrl_head, ctrl_tail;

/* The data area: the header written at each unit, and for which lap. */
byte c_pos[RING];	/* position + 1 of the record that starts here */
byte c_type[RING], c_size[RING], c_seq[RING], c_lost[RING];

/* The executing context, as in latch.pml */
byte cur;
bool unmasked[4];

/* Ghosts */
byte cons_read;			/* consumer has read everything below */
bool seen[NSEQ], dropped[NSEQ];
byte consumed, lost_counted, lost_recs, first_drop = 255;
bool writers_done, stopped;
byte wdone;

/* Write a header at @p; the unit must hold nothing still unread. */
#define PUT(p, type, size, sq, nl)					\
	d_step {							\
		assert((p) + (size) <= cons_read + RING);		\
		c_pos[(p) & MASK] = (p) + 1;				\
		c_type[(p) & MASK] = type;				\
		c_size[(p) & MASK] = size;				\
		c_seq[(p) & MASK] = sq;					\
		c_lost[(p) & MASK] = nl					\
	}

/*
 * local_t read-modify-writes: one instruction, so one step for the
 * writers of this CPU.  With STOP_RACE another CPU runs them too, and
 * without a LOCK prefix (local_cmpxchg() included) two CPUs' updates
 * interleave between the load and the store; no interrupt comes in
 * between them on this CPU (in_rmw holds nested writers off).
 */
#ifdef STOP_RACE
bool in_rmw;
#define RMW(load, store)						\
	d_step { load; in_rmw = !remote };				\
	d_step { store; in_rmw = false }
#define INC(v)		RMW(rmw = v, v = rmw + 1)
#define DEC(v)		RMW(rmw = v, v = rmw - 1)
#define CMPXCHG(c, a)	RMW(c, a)
#else
#define in_rmw		false
#define INC(v)		v++
#define DEC(v)		v--
#define CMPXCHG(c, a)	d_step { c -> a }
#endif

/* u64 wrap-around as the code relies on it: a - b, unsigned */
#define UDIFF(a, b)	(((a) + 256 - (b)) % 256)

/* np_ring_publish() */
inline publish()
{
	if
	:: nest > 1 -> DEC(nest); goto pubdone
	:: else
	fi;
again:
	h = head;				/* (E) before it */
hoisted:
	pub_head = h;
	ctrl_head = h;				/* (B) */
	nest = 0;				/* (F) before it */
#ifndef BUG_NO_RECHECK
	if					/* (G) before it */
#ifdef BUG_HOIST_HEAD
	:: h != head -> h = head; INC(nest); goto hoisted
#else
	:: h != head -> INC(nest); goto again
#endif
	:: else
	fi;
#endif
pubdone:
	skip
}

/*
 * __np_ring_reserve(): @size units (0: only flush the LOST record) plus
 * @headroom free; ok and hpos/hsize as in struct np_ring_handle.
 */
inline reserve(size, headroom, sq)
{
	ok = false;
	INC(nest);				/* (E) after it */
#ifdef BUG_NESTED_LOST
	lost_sz = (lost_pending > 0 -> LOSTSZ : 0);
#else
	/* local_inc_return(&r->nest) == 1: the outermost writer only */
	lost_sz = (nest == 1 && lost_pending > 0 -> LOSTSZ : 0);
#endif
	t = ctrl_tail;				/* (A) np_ring_tail() */
	/*
	 * r_tail and pub_head are written by this CPU's writers only, and
	 * a nested one leaves them no lower than it found them, but for
	 * r_tail going back to our t (which is still a valid tail).
	 */
	d_step {
		if
		:: UDIFF(t, r_tail) <= UDIFF(pub_head, r_tail) -> r_tail = t
		:: else -> t = r_tail
		fi
	};
	do
	:: d_step {
		h = head;
		need = lost_sz + (size);
		pad = ((h & MASK) + need > RING -> RING - (h & MASK) : 0);
		nofit = (need > RING / 2 || h + pad + need + (headroom) - t > RING)
	   };
		if
		:: nofit -> break
		:: else
		fi;
		/* local_cmpxchg() */
		if
		:: CMPXCHG(head == h, head = h + pad + need; nofit = false)
			break
		:: else
		fi
	od;
	if
	:: nofit ->
		if
		:: (size) == 0 -> publish()
		:: else ->
			/* local_inc_return(&r->lost_pending) == 1 */
			/* local_inc_return(), and the ghosts in its step */
#ifdef STOP_RACE
			INC(lost_pending);
			d_step { tmp = rmw + 1;
#else
			d_step { lost_pending++; tmp = lost_pending;
#endif
				 dropped[sq] = true;
				 if :: first_drop == 255 -> first_drop = sq :: else fi };
			if
			:: tmp == 1 -> lost_seq = sq
			:: else
			fi;
			INC(lost);
			publish()
		fi
	:: else ->
		pos = h;
		if
		:: pad > 0 -> PUT(pos, PAD, pad, 0, 0); pos = pos + pad
		:: else
		fi;
		if
		:: lost_sz > 0 ->
#ifndef BUG_NESTED_LOST
			ls = lost_seq;		/* READ_ONCE(r->lost_seq) */
#endif
			/* local_xchg() */
			d_step { nl = lost_pending; lost_pending = 0;
				 fd = first_drop; first_drop = 255 };
#ifdef BUG_NESTED_LOST
			/* a nested writer may have reported them */
			if
			:: nl > 0 -> ls = lost_seq
			:: else -> PUT(pos, PAD, lost_sz, 0, 0); goto lostdone
			fi;
#endif
			assert(nl > 0 && ls == fd);
			PUT(pos, LOST, lost_sz, ls, nl);
			INC(produced);
lostdone:
			pos = pos + lost_sz
		:: else
		fi;
		hpos = pos;
		hsize = (size);
		ok = true
	fi
}

/* np_ring_trim() */
inline trim(size)
{
	if
	:: (size) < hsize ->
		if
#ifdef BUG_TRIM_STORE
		:: head == hpos + hsize -> head = hpos + (size)
#else
		:: CMPXCHG(head == hpos + hsize, head = hpos + (size))
#endif
		:: else -> PUT(hpos + (size), PAD, hsize - (size), 0, 0)
		fi;
		hsize = (size)
	:: else
	fi
}

/* The writer's own record, then np_ring_commit(). */
inline commit(sq)
{
#ifdef BUG_EARLY_HEAD
	/* the outermost writer's head store, made visible before the record */
	if
	:: nest == 1 -> ctrl_head = head
	:: else
	fi;
#endif
	PUT(hpos, REC, hsize, sq, 0);
	INC(produced);
	publish()
}

#define WRITER_VARS	byte h, t, pos, hpos, hsize, need, pad, lost_sz, tmp, rmw, \
			     nl, ls, fd, sq, saved; bool ok, nofit, remote

#define ENTER(lvl, cond)	atomic { cond && !in_rmw -> saved = cur; cur = lvl }
#define LEAVE(lvl)		atomic { unmasked[lvl] = false; cur = saved }

/* The watchdog's recovery record from its hrtimer. */
proctype hrtimer() provided (cur <= 1)
{
	WRITER_VARS;

	ENTER(1, cur == 0);
	d_step { sq = seq; seq++ };		/* np_ring_next_seq() */
	reserve(LOCKUP_SZ, HEADROOM, sq);
	if
	:: ok -> commit(sq)
	:: else
	fi;
	LEAVE(1);
	wdone++
}

/* Samples; the NMI may come at any step of the hrtimer writer. */
proctype nmi() provided (cur <= 2)
{
	WRITER_VARS;
	byte n;

	do
	:: n < NMI_RUNS ->
		ENTER(2, cur < 2);
		d_step { sq = seq; seq++ };
		reserve(SAMPLE_MAX, HEADROOM, sq);
		if
		:: ok ->
			/* the stacks were shorter than reserved, or not */
			if
			:: trim(SAMPLE_MAX - 3)
			:: skip
			fi;
			commit(sq)
		:: else
		fi;
		LEAVE(2);
		n++
	:: else -> break
	od;
	wdone++
}

/* The watchdog's LOCKUP record, in an NMI nested in a sample. */
proctype nested() provided (cur <= 3)
{
	WRITER_VARS;

end:	ENTER(3, cur == 2 && unmasked[2]);
	d_step { sq = seq; seq++ };
	reserve(LOCKUP_SZ, HEADROOM, sq);
	if
	:: ok -> commit(sq)
	:: else
	fi;
	LEAVE(3)
}

/* A fault or kprobe in the NMI: its iret lets the next NMI in. */
active proctype fault()
{
end:	do
	:: atomic { cur == 2 && !unmasked[2] -> unmasked[2] = true }
	od
}

/* STOP: every source is stopped, then np_rings_flush_lost(). */
proctype stop()
{
	WRITER_VARS;

#ifdef STOP_RACE
	remote = true;
#else
	wdone == 2 && cur == 0;
#endif
	writers_done = true;
	if
	:: lost_pending > 0 ->
		reserve(0, 0, 0);
		if
		:: ok -> publish()
		:: else
		fi
	:: else
	fi;
	stopped = true
}

/*
 * np_kring_drain() in a loop, as nmiprofd runs it.  Reading head and the
 * records below it is one step: the writers never touch published bytes
 * (the PUT() assertion checks it), so only where tail is stored matters.
 */
proctype consumer()
{
	byte h, t, p, sz;

	do
	:: ctrl_head != t ->
		atomic {
			h = ctrl_head;			/* (C) */
			assert(UDIFF(h, t) <= RING);	/* else "corrupt" */
			do
			:: t != h ->
				p = t & MASK;
				/* complete, and written for this lap */
				assert(c_pos[p] == t + 1);
				sz = c_size[p];
				assert(sz > 0 && sz <= RING - p && sz <= UDIFF(h, t));
				if
				:: c_type[p] == REC ->
					assert(!seen[c_seq[p]] && !dropped[c_seq[p]]);
					seen[c_seq[p]] = true;
					consumed++
				:: c_type[p] == LOST ->
					lost_counted = lost_counted + c_lost[p];
					lost_recs++
				:: else
				fi;
				t = t + sz;
				cons_read = t
			:: else -> break
			od;
			p = 0; sz = 0; h = 0
		};
		ctrl_tail = t			/* (D) */
	:: stopped && wdone == 2 && cur == 0 && ctrl_head == t -> break
	od
}

init
{
	byte i;

	atomic {
		/* A ring half full of unread data, so that the writers wrap
		 * and find it full. */
		PUT(0, PAD, FILL, 0, 0);
		head = FILL; pub_head = FILL; ctrl_head = FILL;
		run hrtimer();
		run nmi();
#ifndef NO_NESTED
		run nested();
#endif
		run stop();
		run consumer()
	};
	timeout;
	/* Everything published and read, nothing left pending. */
	assert(stopped && nest == 0 && ctrl_head == head && ctrl_tail == head);
	assert(lost_pending == 0);
	/* produced = consumed + lost, seq by seq */
	i = 0;
	do
	:: i < seq -> assert(seen[i] != dropped[i]); i++
	:: else -> break
	od;
	assert(produced == consumed + lost_recs && consumed + lost == seq);
	assert(lost_counted == lost)
}
