/*
 * The hard-lockup watchdog's heartbeat/check hand-off, kmod/watchdog.c:
 * np_wd_timer_fn() (heartbeat, end of an episode, check of the buddy),
 * np_wd_check() (kick with an NMI, or report a CPU that takes none),
 * np_wd_nmi() and np_wd_self_check() (report from the stuck CPU).
 *
 * Two CPUs, buddies of each other.  CPU 0 stays live.  CPU 1 may, at any
 * time, run with interrupts off (a hard lockup), either taking NMIs or
 * not (stuck in an NMI handler or firmware), and may come back at any
 * later time.  Any NMI may also arrive on CPU 1 (the PMU's), at any time.
 *
 * Time is a tick counter.  A live CPU's timer fires on time (the clock
 * does not pass its expiry); an NMI sent to a CPU that takes NMIs starts
 * within the tick; the report an NMI writes takes up to REPORT_MAX ticks
 * (the UART).  Every access to the watchdog's shared state is one step,
 * interleaved with the other CPU's and with the clock.  Not modelled:
 * an NMI inside a CPU's own timer callback (the heartbeat is its first
 * store, so such an NMI finds the CPU alive) and vCPU preemption.
 *
 * Checked: a CPU is reported only during, or right at the end of, an
 * episode with interrupts off for at least THRESH - PERIOD; a CPU stuck
 * for THRESH + PERIOD + 1 ticks (2 * THRESH + PERIOD + 1 when it takes
 * no NMIs) has been reported; no episode is reported twice; a reported
 * CPU that comes back writes the recovery line (in its first timer
 * callback: the kicked/state hand-off).
 *
 * -DREPORT_MAX=THRESH+1  a report that outlasts the threshold (the 3 s
 *                   UART lock wait, issue 14 section 6): a CPU still
 *                   REPORTING has answered, so no second report.
 * -DBUG_REPORTING_SILENT  np_wd_check() does not take REPORTING as an
 *                   answer (as before its fix): with REPORT_MAX=4 SPIN
 *                   finds the episode reported twice, by the CPU and as
 *                   silent by its buddy.
 * -DBUG_SPLIT_XCHG  the timer reads and resets kicked in two steps (not
 *                   atomic_xchg()): a buddy's SILENT verdict slips in
 *                   between and the recovery is never seen.
 */
#define THRESH		4
#define PERIOD		2	/* THRESH * 2 / 5, rounded */
#ifndef REPORT_MAX
#define REPORT_MAX	1
#endif
#define HORIZON		(2 * THRESH + 2 * PERIOD + 3)

#define KICK_NONE	0
#define KICK_SENT	1
#define KICK_SILENT	2
#define WD_OK		0
#define WD_REPORTING	1
#define WD_REPORTED	2

byte now;

/* struct np_wd_cpu */
byte beat[2], expires[2], since[2];
bool nmi_pending[2];
byte kicked[2], state[2];

/* The machine */
bool irqs_off[2], nmi_off[2];	/* CPU 1's lockup, NMIs not taken */
bool nmi_latched[2];		/* an NMI on its way */
bool in_timer[2], in_nmi[2];
byte report_ticks[2];		/* how long the NMI has been reporting */
bool in_report[2];

/* Ghosts: the current or last episode of CPU 1 */
byte ep_from, ep_len;
byte ep_reports;
bool ep_closed = true;		/* no episode, or its end was seen */
bool recovery_owed;		/* reported, the recovery line not written */

#define AGE(c)		(now - beat[c])

/*
 * The decision to report CPU c (the lockup from its NMI, or silent from
 * its buddy), inside the step that takes it.
 */
#define REPORT(c)							\
	assert(c == 1 && !ep_closed);					\
	assert((irqs_off[1] -> now - ep_from : ep_len) >= THRESH - PERIOD); \
	ep_reports++;							\
	assert(ep_reports == 1);					\
	recovery_owed = true

/* np_wd_check(b, t): true if b is late. */
inline check(b, t)
{
	late = false;
	age = t - beat[b];
	if
	:: age > THRESH ->
		late = true;
		if
		:: state[b] == WD_REPORTED	/* smp_load_acquire() */
#ifndef BUG_REPORTING_SILENT
		:: state[b] == WD_REPORTING	/* it answered */
#endif
		:: else ->
			if
			:: kicked[b] == KICK_NONE ->
				if
				:: d_step { kicked[b] == KICK_NONE -> kicked[b] = KICK_SENT }
					/* np_wd_raise() */
					nmi_pending[b] = true;
					nmi_latched[b] = true
				:: else
				fi
			:: kicked[b] == KICK_SENT ->
				if
				:: age > 2 * THRESH ->
					since[b] = t - age;
					if
					:: d_step { kicked[b] == KICK_SENT ->
						kicked[b] = KICK_SILENT; REPORT(b) }
						/* np_report_silent() */
					:: else
					fi
				:: else
				fi
			:: else
			fi
		fi
	:: else
	fi
}

/* np_wd_timer_fn() on CPU c */
inline timer_fn(c)
{
	atomic { !irqs_off[c] && !in_nmi[c] && expires[c] <= now ->
		in_timer[c] = true; t = now; prev = beat[c] };
	beat[c] = t;
#ifdef BUG_SPLIT_XCHG
	kick = kicked[c];
	kicked[c] = KICK_NONE;
#else
	d_step { kick = kicked[c]; kicked[c] = KICK_NONE };
#endif
	if
	:: state[c] == WD_REPORTED ->		/* np_wd_recovered() */
		d_step { state[c] = WD_OK; recovery_owed = false }
	:: else ->
		if
		:: kick == KICK_SILENT -> recovery_owed = false
		:: else
		fi
	fi;
	/* The CPU is live, and has seen how its episode was reported. */
	d_step { if :: c == 1 && !irqs_off[1] ->
			assert(!recovery_owed); ep_closed = true
		 :: else fi };
	if
	:: t - prev <= THRESH -> check(1 - c, t)
	:: else
	fi;
	d_step { expires[c] = t + PERIOD; in_timer[c] = false; late = 0; age = 0; t = 0; prev = 0; kick = 0 }
}

/* np_wd_nmi() and np_wd_self_check() on CPU c */
inline nmi_fn(c)
{
	atomic { nmi_latched[c] && !nmi_off[c] && !in_timer[c] ->
		nmi_latched[c] = false; in_nmi[c] = true };
	nmi_pending[c] = false;		/* atomic_xchg() */
	if
	:: state[c] != WD_OK || kicked[c] == KICK_SILENT
	:: else ->
		t = now;
		if
		:: t - beat[c] <= THRESH
		:: else ->
			if
			:: !irqs_off[c] ->
				d_step { if :: kicked[c] == KICK_SENT -> kicked[c] = KICK_NONE :: else fi }
			:: else ->
				d_step { state[c] = WD_REPORTING; REPORT(c) };
				since[c] = beat[c];
				/* np_report_lockup(): the UART, up to REPORT_MAX ticks */
				in_report[c] = true;
				d_step { in_report[c] = false; report_ticks[c] = 0 };
				state[c] = WD_REPORTED	/* smp_store_release() */
			fi
		fi
	fi;
	d_step { in_nmi[c] = false; t = 0 }
}

#define CPU(c)								\
proctype cpu##c()							\
{									\
	byte t, prev, kick;						\
	short age;							\
	bool late;							\
									\
end:	do								\
	:: timer_fn(c)							\
	:: nmi_fn(c)							\
	od								\
}
CPU(0)
CPU(1)

/* CPU 1's workload: a lockup at some time, over at some later time. */
active proctype workload()
{
end:	atomic { now < HORIZON && !in_nmi[1] && !in_timer[1] ->
		irqs_off[1] = true; ep_from = now; ep_reports = 0; ep_closed = false;
		if :: nmi_off[1] = true :: skip fi };
	if
	:: atomic { !in_nmi[1] ->
		ep_len = now - ep_from;
		/* long enough to be seen: it was */
		assert(ep_reports > 0 || ep_len < THRESH + PERIOD + 1 + (nmi_off[1] -> THRESH : 0));
		irqs_off[1] = false; nmi_off[1] = false }
	:: skip
	fi
}

/* Another NMI user's NMI on CPU 1 (the PMU's), once, at any time. */
active proctype pmu_nmi()
{
	nmi_latched[1] = true
}

/* Time passes while nothing is due on a live CPU. */
active proctype clock()
{
	do
	:: atomic { now < HORIZON &&
		    (irqs_off[0] || expires[0] > now) && !in_timer[0] &&
		    (irqs_off[1] || expires[1] > now) && !in_timer[1] &&
		    !(nmi_latched[0] && !nmi_off[0]) &&
		    !(nmi_latched[1] && !nmi_off[1]) &&
		    (!in_nmi[0] || in_report[0] && report_ticks[0] < REPORT_MAX) &&
		    (!in_nmi[1] || in_report[1] && report_ticks[1] < REPORT_MAX) ->
		now++;
		if :: in_report[0] -> report_ticks[0]++ :: else fi;
		if :: in_report[1] -> report_ticks[1]++ :: else fi }
	:: now == HORIZON -> break
	od;
	/* A lockup still on at the end is reported if it lasted long enough. */
	timeout;
	assert(!irqs_off[1] || ep_reports > 0 ||
	       now - ep_from < THRESH + PERIOD + 1 + (nmi_off[1] -> THRESH : 0))
}

init
{
	atomic {
		expires[0] = PERIOD; expires[1] = PERIOD;
		run cpu0(); run cpu1()
	}
}
