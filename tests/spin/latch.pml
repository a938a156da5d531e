/*
 * The three-state nesting latch of kmod/nmi_latch.h and np_on_nmi() in
 * kmod/dispatch.c (the scheme of commit c7d65a78fc18, see
 * /work/shared/seeds/004-*).
 *
 * Contexts on one CPU, innermost last, each running to completion before
 * the one it interrupted resumes:
 *   1  a hard hrtimer calling np_on_nmi() (latch_selftest.c, and the
 *      watchdog path the latch exists for); NMIs are not masked there
 *   2  NMIs; masked in hardware until the handler takes a fault or
 *      breakpoint, whose iret unmasks them for the rest of that NMI
 *      (the fault may come before np_on_nmi(), in another handler of
 *      the NMI_LOCAL chain)
 *   3  an NMI let in by such an iret, which may fault in turn
 *   4  an NMI let in by an iret inside 3
 * Every C statement that is one instruction is one step: this_cpu_read()
 * and this_cpu_write() of np_latch_enter() are two, this_cpu_dec_return()
 * is one (a gs-prefixed xadd, which an interrupt cannot split).
 *
 * Checked: the body never runs twice at once; every entry that latched is
 * followed by a run of the body that starts after it (no NMI to replay is
 * lost); at the end the latch is NOT_RUNNING; no invalid end state.
 *
 * -DBUG_SPLIT_DEC: the exit as a load and a store (a plain "state--"),
 * which a nested NMI can split: its latch is overwritten and lost.
 */
#define NOT_RUNNING	0
#define EXECUTING	1
#define LATCHED		2

#ifndef NMI_RUNS
#define NMI_RUNS	2	/* NMIs of context 2, one after the other */
#endif

byte state = NOT_RUNNING;	/* np_latch_state */
byte cur;			/* context running now, 0: none of ours */
bool unmasked[5];		/* NMIs let in during context [i] */
byte in_body;			/* bodies running now */
bool owed;			/* a latched entry not yet replayed */
byte done;			/* contexts finished */
byte bodies, latches;		/* statistics for the trail */

/* np_on_nmi(): enter the latch, run the body until no entry latched. */
inline on_nmi()
{
	/* np_latch_enter() */
	tmp = state;
	if
	:: tmp != NOT_RUNNING ->
		state = LATCHED;
		owed = true;
		latches++;
		goto out
	:: else
	fi;
	state = EXECUTING;
	do
	:: /* the body: np_sample() or the lockup report */
		d_step { in_body++; owed = false; bodies++ };
		assert(in_body == 1);
		in_body--;
		/* np_latch_exit_replay() */
#ifdef BUG_SPLIT_DEC
		tmp = state;
		state = tmp - 1;
		tmp = tmp - 1;
#else
		d_step { state--; tmp = state };
#endif
		if
		:: tmp != NOT_RUNNING
		:: else -> break
		fi
	od;
out:
	skip
}

/* Enter context @lvl when @cond holds; leave it, restoring the one below. */
#define ENTER(lvl, cond)	atomic { cond -> saved = cur; cur = lvl }
#define LEAVE(lvl)		atomic { unmasked[lvl] = false; cur = saved }

proctype hrtimer() provided (cur <= 1)
{
	byte tmp, saved;

	ENTER(1, cur == 0);
	on_nmi();
	LEAVE(1);
	done++
}

/* NMIs arrive at any step of contexts 0 and 1. */
proctype nmi() provided (cur <= 2)
{
	byte tmp, saved, n;

	do
	:: n < NMI_RUNS ->
		ENTER(2, cur < 2);
		on_nmi();
		LEAVE(2);
		n++
	:: else -> break
	od;
	done++
}

/* An NMI after an iret inside context @lvl - 1. */
#define NESTED(name, lvl)						\
proctype name() provided (cur <= lvl)					\
{									\
	byte tmp, saved;						\
									\
end:	ENTER(lvl, cur == lvl - 1 && unmasked[lvl - 1]);		\
	on_nmi();							\
	LEAVE(lvl);							\
	done++								\
}
NESTED(nested3, 3)
NESTED(nested4, 4)

/* A fault or breakpoint in whichever NMI runs: its iret unmasks NMIs. */
active proctype fault()
{
end:	do
	:: atomic { cur >= 2 && !unmasked[cur] -> unmasked[cur] = true }
	od
}

init
{
	atomic {
		run hrtimer();
		run nmi();
		run nested3();
		run nested4()
	};
	/* Nothing can move: the nested NMIs may never have come. */
	timeout;
	assert(done >= 2 && cur == 0 && state == NOT_RUNNING && !owed)
}
