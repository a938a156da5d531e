// SPDX-License-Identifier: GPL-2.0
/*
 * nmiprof top's full screen: the ncurses table, the call-graph
 * expansion, the prompts and the keys.  The model, the sampling and the
 * header lines are cmd_top.c's; this file only shows them and turns
 * keys into changes of the view.
 *
 * The loop never blocks on the terminal: it polls the backend in short
 * slices and reads keys without waiting, so samples keep flowing while
 * a prompt or the help screen is up.
 */
#include <curses.h>
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "top.h"
#include "np_clock.h"
#include "np_grow.h"

#define TOP_GRAPH_MAX	8		/* callers / callees shown per side */
#define TOP_TOGGLED_MAX	64		/* rows expanded (or collapsed) one by one */

enum prompt_kind { PROMPT_NONE, PROMPT_CPU, PROMPT_PID, PROMPT_COMM, PROMPT_SEARCH };

/* A row by its names, not its place: survives re-sorting. */
struct row_key {
	uint32_t pid, tid, cpu;
	int kernel;
	char comm[TOPVIEW_COMM_MAX], dso[256], sym[256];
};

struct top_screen {
	struct top *t;
	/* the rows shown: indices in the topview's sorted view */
	size_t *shown, nr_shown, cap_shown;
	size_t cursor, scroll;		/* in shown[] */
	int help;
	/* a row is expanded if expand_all, unless it is toggled */
	int expand_all;
	struct row_key toggled[TOP_TOGGLED_MAX];
	size_t nr_toggled;
	enum prompt_kind prompt;
	char input[64];
};

static const char *const help_text[] = {
	"nmiprof top: keys",
	"",
	"  Up, Down, PgUp, PgDn, Home, End   move the cursor",
	"  Enter      expand / collapse the row: its callers and callees",
	"  E, C       expand / collapse every row",
	"  s          cycle the sort key: self, children, comm, dso, symbol, pid",
	"  k          toggle kernel frames",
	"  u          toggle user frames",
	"  c          filter by CPU (empty: all)",
	"  p          filter by pid (empty: all)",
	"  m          filter by command name (empty: all)",
	"  d          zoom into the row's object (again: out)",
	"  t          zoom into the row's process (again: out)",
	"  /          show only symbols containing a string (empty: all)",
	"  z          zero every count",
	"  D          toggle decay (counts fade by 7/8 per refresh)",
	"  P          pause / resume",
	"  h, ?       this help",
	"  q          quit",
	"",
	"Columns: overhead = self / shown samples; self = samples in the",
	"function itself; children = samples with it anywhere on the stack.",
	"Rows are listed while the sorted-by count (children in the children",
	"sort, else self) is at least 1.",
	"",
	"Press any key to return.",
};

static int key_is(const struct row_key *k, const struct topview_row *r)
{
	return r->pid == k->pid && r->tid == k->tid && r->cpu == k->cpu &&
	       r->kernel == k->kernel && !strcmp(r->sym, k->sym) &&
	       !strcmp(r->dso, k->dso) && !strcmp(r->comm, k->comm);
}

static size_t toggled_at(const struct top_screen *s, const struct topview_row *r)
{
	size_t i;

	for (i = 0; i < s->nr_toggled; i++)
		if (key_is(&s->toggled[i], r))
			break;
	return i;
}

static int row_is_expanded(const struct top_screen *s, const struct topview_row *r)
{
	return s->expand_all != (toggled_at(s, r) < s->nr_toggled);
}

/*
 * Listed: a count that prints as at least 1 in the column sorted by
 * (self, but children in the children sort, as perf top --children), so
 * that rows decayed to 0 and callers without self samples do not fill
 * the screen; and, zoomed into an object, only its rows.
 */
static int row_listed(const struct top *t, const struct topview_row *r)
{
	double w = t->sort == TOPVIEW_SORT_CHILDREN ? r->children : r->self;

	if (w < 0.5)
		return 0;
	return !t->zoom_dso[0] || !strcmp(r->dso, t->zoom_dso);
}

/* The sorted view, then the rows listed; 0 or -ENOMEM. */
static int list_rows(struct top_screen *s)
{
	struct top *t = s->t;
	size_t n = topview_sort(t->tv, t->sort);

	s->nr_shown = 0;
	if (NP_GROW(s->shown, s->cap_shown, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (row_listed(t, topview_row(t->tv, i)))
			s->shown[s->nr_shown++] = i;
	return 0;
}

static const struct topview_row *shown_row(const struct top_screen *s, size_t i)
{
	return i < s->nr_shown ? topview_row(s->t->tv, s->shown[i]) : NULL;
}

static void put_line(int y, const char *s, attr_t attr)
{
	if (y < 0 || y >= LINES)
		return;
	move(y, 0);
	attron(attr);
	addnstr(s, COLS);
	for (int x = (int)strlen(s); x < COLS; x++)
		addch(' ');
	attroff(attr);
}

/* Lines the expansion of r takes. */
static size_t expansion(struct top *t, const struct topview_row *r,
			struct topview_edge *callers, size_t *nc,
			struct topview_edge *callees, size_t *ne)
{
	*nc = topview_callers(t->tv, r, callers, TOP_GRAPH_MAX);
	*ne = topview_callees(t->tv, r, callees, TOP_GRAPH_MAX);
	/* a title per side that has rows; one line saying neither has */
	return *nc + *ne ? !!*nc + *nc + !!*ne + *ne : 1;
}

static void draw_edges(int *y, int ymax, const char *title, const struct topview_edge *e,
		       size_t n, double base)
{
	char line[512];

	if (!n)
		return;
	if (*y < ymax)
		put_line((*y)++, title, A_BOLD);
	for (size_t i = 0; i < n && *y < ymax; i++) {
		snprintf(line, sizeof(line), "      %6.2f%%  [%c] %s  (%s)",
			 base > 0 ? 100.0 * e[i].weight / base : 0,
			 e[i].row->kernel ? 'k' : '.', e[i].row->sym,
			 cli_basename(e[i].row->dso));
		put_line((*y)++, line, A_DIM);
	}
}

/* Does a filter hide samples?  (--daemon: the daemon applies it.) */
static int filtered(const struct top *t)
{
	const struct topview_filter *f = &t->filter;

	return f->cpu >= 0 || f->pid >= 0 || f->comm[0] || f->search[0] ||
	       t->zoom_dso[0];
}

/* Lines row i of shown[] takes on screen, with its expansion. */
static size_t row_lines(struct top_screen *s, size_t i)
{
	struct topview_edge callers[TOP_GRAPH_MAX], callees[TOP_GRAPH_MAX];
	const struct topview_row *r = shown_row(s, i);
	size_t nc, ne;

	return 1 + (row_is_expanded(s, r) ?
		    expansion(s->t, r, callers, &nc, callees, &ne) : 0);
}

static void draw(struct top_screen *s)
{
	static const char *const prompts[] = {
		[PROMPT_CPU] = "CPU (empty: all): ",
		[PROMPT_PID] = "pid (empty: all): ",
		[PROMPT_COMM] = "comm (empty: all): ",
		[PROMPT_SEARCH] = "search symbols (empty: all): ",
	};
	struct top *t = s->t;
	struct topview_edge callers[TOP_GRAPH_MAX], callees[TOP_GRAPH_MAX];
	size_t nrows, visible, used, nc = 0, ne = 0;
	char l1[512], l2[512], line[1024];
	int y, ymax = LINES - 1;	/* last line: prompt / message */

	erase();
	if (s->help) {
		for (size_t i = 0; i < sizeof(help_text) / sizeof(help_text[0]); i++)
			put_line((int)i, help_text[i], i ? A_NORMAL : A_BOLD);
		refresh();
		return;
	}
	if (list_rows(s))
		snprintf(t->message, sizeof(t->message), "out of memory listing rows");
	nrows = s->nr_shown;
	if (s->cursor >= nrows)
		s->cursor = nrows ? nrows - 1 : 0;
	top_header(t, l1, sizeof(l1), l2, sizeof(l2));
	put_line(0, l1, A_BOLD);
	put_line(1, l2, A_NORMAL);
	cli_format_header(line, sizeof(line), topview_keys(t->tv), (size_t)COLS);
	put_line(2, line, A_REVERSE);
	visible = ymax > 3 ? (size_t)(ymax - 3) : 1;

	/* Keep the cursor's row on screen, counting the expansions above it. */
	if (s->cursor < s->scroll)
		s->scroll = s->cursor;
	for (;;) {
		used = 0;
		for (size_t i = s->scroll; i <= s->cursor && i < nrows; i++)
			used += i == s->cursor ? 1 : row_lines(s, i);
		if (used <= visible || s->scroll >= s->cursor)
			break;
		s->scroll++;
	}

	y = 3;
	for (size_t i = s->scroll; i < nrows && y < ymax; i++) {
		const struct topview_row *r = shown_row(s, i);

		cli_format_row(line, sizeof(line), topview_keys(t->tv), r,
			       topview_total(t->tv), (size_t)COLS);
		put_line(y++, line, i == s->cursor ? A_REVERSE : A_NORMAL);
		if (!row_is_expanded(s, r))
			continue;
		expansion(t, r, callers, &nc, callees, &ne);
		if (!nc && !ne) {
			put_line(y++, "    (no callers, no callees)", A_DIM);
			continue;
		}
		draw_edges(&y, ymax, "    callers (share of this row's children):",
			   callers, nc, r->children);
		draw_edges(&y, ymax, "    callees:", callees, ne, r->children);
	}
	if (!nrows)
		put_line(4, filtered(t) || topview_total_raw(t->tv) > 0 ?
			 "  (no rows match: filter, search or zoom; see line 2)" :
			 "  (no samples yet)", A_DIM);

	if (s->prompt) {
		snprintf(line, sizeof(line), "%s%s", prompts[s->prompt], s->input);
		put_line(ymax, line, A_BOLD);
	} else {
		put_line(ymax, t->message[0] ? t->message :
			 "h help  q quit  Enter call graph  s sort  / search", A_DIM);
	}
	refresh();
}

static void expand_toggle(struct top_screen *s)
{
	const struct topview_row *r = shown_row(s, s->cursor);
	size_t i;

	if (!r)
		return;
	i = toggled_at(s, r);
	if (i < s->nr_toggled) {
		s->toggled[i] = s->toggled[--s->nr_toggled];
		return;
	}
	if (s->nr_toggled == TOP_TOGGLED_MAX) {
		snprintf(s->t->message, sizeof(s->t->message),
			 "at most %d rows toggled one by one: E or C first",
			 TOP_TOGGLED_MAX);
		return;
	}
	s->toggled[i].pid = r->pid;
	s->toggled[i].tid = r->tid;
	s->toggled[i].cpu = r->cpu;
	s->toggled[i].kernel = r->kernel;
	snprintf(s->toggled[i].comm, sizeof(s->toggled[i].comm), "%s", r->comm);
	snprintf(s->toggled[i].dso, sizeof(s->toggled[i].dso), "%s", r->dso);
	snprintf(s->toggled[i].sym, sizeof(s->toggled[i].sym), "%s", r->sym);
	s->nr_toggled++;
}

static void expand_all(struct top_screen *s, int all)
{
	s->expand_all = all;
	s->nr_toggled = 0;
}

static void apply_filter(struct top_screen *s)
{
	top_apply_filter(s->t);
	s->cursor = s->scroll = 0;
}

static void prompt_commit(struct top_screen *s)
{
	struct top *t = s->t;
	const char *in = s->input;
	uint64_t v;

	t->message[0] = 0;
	switch (s->prompt) {
	case PROMPT_CPU:
		if (!*in)
			t->filter.cpu = -1;
		else if (!cli_parse_u64(in, 0, 65535, &v))
			t->filter.cpu = (int)v;
		else
			snprintf(t->message, sizeof(t->message), "bad CPU '%s'", in);
		break;
	case PROMPT_PID:
		if (!*in)
			t->filter.pid = -1;
		else if (!cli_parse_u64(in, 0, INT32_MAX, &v))
			t->filter.pid = (int64_t)v;
		else
			snprintf(t->message, sizeof(t->message), "bad pid '%s'", in);
		break;
	case PROMPT_COMM:
		/* The kernel keeps 15 bytes of a comm: longer never matches. */
		if (strlen(in) < sizeof(t->filter.comm))
			memcpy(t->filter.comm, in, strlen(in) + 1);
		else
			snprintf(t->message, sizeof(t->message),
				 "comm is at most %zu bytes", sizeof(t->filter.comm) - 1);
		break;
	case PROMPT_SEARCH:
		snprintf(t->filter.search, sizeof(t->filter.search), "%s", in);
		break;
	case PROMPT_NONE:
		break;
	}
	s->prompt = PROMPT_NONE;
	apply_filter(s);
}

/* A key while a prompt is open: a tiny line editor. */
static void prompt_key(struct top_screen *s, int ch)
{
	size_t n = strlen(s->input);

	if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
		prompt_commit(s);
	} else if (ch == 27) {			/* Esc */
		s->prompt = PROMPT_NONE;
	} else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (n)
			s->input[n - 1] = 0;
	} else if (ch >= 0x20 && ch < 0x7f && n + 1 < sizeof(s->input)) {
		s->input[n] = (char)ch;
		s->input[n + 1] = 0;
	}
}

static void start_prompt(struct top_screen *s, enum prompt_kind k)
{
	s->prompt = k;
	s->input[0] = 0;
}

/* Returns 1 to quit. */
static int key(struct top_screen *s, int ch)
{
	struct top *t = s->t;
	size_t page = LINES > 5 ? (size_t)LINES - 5 : 1;
	size_t nrows = s->nr_shown;
	const struct topview_row *r;

	if (s->prompt) {
		prompt_key(s, ch);
		return 0;
	}
	if (s->help) {
		if (ch != KEY_RESIZE)
			s->help = 0;
		return 0;
	}
	/* A resize is no key typed: the last key's message stays (tmux
	 * can deliver two SIGWINCHs, the second after that key). */
	if (ch == KEY_RESIZE)
		return 0;
	t->message[0] = 0;
	switch (ch) {
	case 'q':
	case 'Q':
		return 1;
	case KEY_UP:
		if (s->cursor)
			s->cursor--;
		break;
	case KEY_DOWN:
		if (s->cursor + 1 < nrows)
			s->cursor++;
		break;
	case KEY_PPAGE:
		s->cursor = s->cursor > page ? s->cursor - page : 0;
		break;
	case KEY_NPAGE:
		s->cursor = nrows && s->cursor + page >= nrows ? nrows - 1 : s->cursor + page;
		break;
	case KEY_HOME:
		s->cursor = 0;
		break;
	case KEY_END:
		s->cursor = nrows ? nrows - 1 : 0;
		break;
	case '\n':
	case '\r':
	case KEY_ENTER:
		expand_toggle(s);
		break;
	case 'E':
	case 'C':
		expand_all(s, ch == 'E');
		break;
	case 's':
		t->sort = t->sort + 1 >= TOPVIEW_SORT_NR ? TOPVIEW_SORT_SELF : t->sort + 1;
		snprintf(t->message, sizeof(t->message), "sorted by %s",
			 topview_sort_name(t->sort));
		break;
	case 'k':
		t->filter.kernel = !t->filter.kernel;
		if (!t->filter.kernel && !t->filter.user)
			t->filter.user = 1;	/* never hide every frame */
		apply_filter(s);
		break;
	case 'u':
		t->filter.user = !t->filter.user;
		if (!t->filter.kernel && !t->filter.user)
			t->filter.kernel = 1;
		apply_filter(s);
		break;
	case 'c':
		start_prompt(s, PROMPT_CPU);
		break;
	case 'p':
		start_prompt(s, PROMPT_PID);
		break;
	case 'm':
		start_prompt(s, PROMPT_COMM);
		break;
	case 'd':
		/* perf top's zoom into a DSO: the view, the counts unchanged */
		r = shown_row(s, s->cursor);
		if (t->zoom_dso[0])
			t->zoom_dso[0] = 0;
		else if (r && r->dso[0])
			snprintf(t->zoom_dso, sizeof(t->zoom_dso), "%s", r->dso);
		else if (r)
			snprintf(t->message, sizeof(t->message),
				 "d: rows are not per object (-s has no dso or sym)");
		s->cursor = s->scroll = 0;
		break;
	case 't':
		/* perf top's zoom into a thread: a pid filter, as p sets */
		r = shown_row(s, s->cursor);
		if (t->filter.pid >= 0)
			t->filter.pid = -1;
		else if (r && topview_keys_has(topview_keys(t->tv), TOPVIEW_KEY_PID))
			t->filter.pid = r->pid;
		else if (r) {
			snprintf(t->message, sizeof(t->message),
				 "t: rows are not per process (-s has no pid)");
			break;
		} else
			break;
		apply_filter(s);
		break;
	case '/':
		start_prompt(s, PROMPT_SEARCH);
		break;
	case 'z':
	case 'D':
		if (t->daemon) {
			snprintf(t->message, sizeof(t->message), "%s: not with --daemon "
				 "(the daemon's %us window decides)",
				 ch == 'z' ? "zero" : "decay", t->window_s);
			break;
		}
		if (ch == 'D') {
			t->decay = !t->decay;
			snprintf(t->message, sizeof(t->message), "decay %s",
				 t->decay ? "on" : "off");
			break;
		}
		topview_zero(t->tv);
		s->cursor = s->scroll = 0;
		expand_all(s, 0);
		snprintf(t->message, sizeof(t->message), "zeroed");
		break;
	case 'P':
		t->paused = !t->paused;
		break;
	case 'h':
	case '?':
		s->help = 1;
		break;
	default:
		return 0;
	}
	return 0;
}

int top_screen_run(struct top *t)
{
	struct top_screen s = { .t = t };
	uint64_t next = np_mono_ms() + (uint64_t)t->delay_s * 1000;
	int ret = EXIT_OK;
	SCREEN *scr;

	setlocale(LC_ALL, "");
	/* newterm, not initscr: initscr exits the process on a bad TERM. */
	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		cli_error("top", "cannot use terminal type '%s' (use --stdio)",
			  getenv("TERM") ? getenv("TERM") : "");
		return EXIT_USAGE;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	top_refresh(t);
	draw(&s);

	while (!cli_interrupted()) {
		int ch, dirty = 0, err = top_pump(t, TOP_POLL_MS);

		if (err < 0) {
			ret = err;	/* reported once the screen is gone */
			break;
		}
		while ((ch = getch()) != ERR) {
			if (key(&s, ch))
				goto quit;
			dirty = 1;
		}
		if (np_mono_ms() >= next && !t->paused) {
			next = np_mono_ms() + (uint64_t)t->delay_s * 1000;
			top_refresh(t);
			draw(&s);
			dirty = 0;
			/* After drawing: the screen shows what was sampled. */
			if (t->decay)
				topview_decay(t->tv, TOP_DECAY);
		}
		if (dirty)
			draw(&s);
	}
quit:
	endwin();
	delscreen(scr);
	free(s.shown);
	if (ret < 0) {
		cli_error("top", "reading samples: %s", strerror(-ret));
		return EXIT_FAILURE_RT;
	}
	return EXIT_OK;
}
