// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolizer against binaries built here at test time with cc (known
 * symbols, known addresses printed by the running program):
 *   - a PIE with .symtab, calling into a shared object (pgoff/p_vaddr),
 *     and the same as a non-PIE executable
 *   - the same linked with -s: .dynsym only; a static function there
 *     must come back as dso+offset, not as a wrong name
 *   - a binary deleted after it started (resolved via map_files)
 *   - a binary replaced, and a process exited, after being seen
 *   - maps fed by MMAP/FORK/COMM events instead of /proc
 *   - /tmp/perf-PID.map JIT symbols, unknown processes, [vdso], kallsyms
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>
#include "symbolizer.h"

#include "check.h"

static char dir[64];

static const char prog_c[] =
	"#include <stdio.h>\n#include <unistd.h>\n"
	"extern int lib_fn(int);\n"
	"__attribute__((noinline)) int np_alpha(int x) { return x * 3 + 1; }\n"
	"__attribute__((noinline)) int np_beta(int x) { return (x ^ 0x55) + np_alpha(x); }\n"
	"static __attribute__((noinline)) int np_local(int x) { return x - 7 + np_beta(x); }\n"
	"int main(void) {\n"
	"  char c;\n"
	"  printf(\"%lx %lx %lx %lx\\n\", (unsigned long)np_alpha, (unsigned long)np_beta,\n"
	"         (unsigned long)np_local, (unsigned long)lib_fn);\n"
	"  fflush(stdout);\n"
	"  if (read(0, &c, 1) < 0) return 1;\n"
	"  return np_local(1) + lib_fn(2) == 12345;\n"
	"}\n";
static const char lib_c[] = "int lib_fn(int x) { return x * 5 + 42; }\n";

struct child {
	pid_t pid;
	FILE *in;
	uint64_t alpha, beta, local, libfn;
};

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd)) {
		printf("FAIL: %s\n", cmd);
		failures++;
		return -1;
	}
	return 0;
}

static int start(struct child *c, const char *bin)
{
	int pi[2], po[2];
	FILE *out;

	if (pipe(pi) || pipe(po))
		return -1;
	c->pid = fork();
	if (!c->pid) {
		dup2(pi[0], 0);
		dup2(po[1], 1);
		close(pi[1]);
		close(po[0]);
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	close(pi[0]);
	close(po[1]);
	c->in = fdopen(pi[1], "w");
	out = fdopen(po[0], "r");
	if (fscanf(out, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64,
		   &c->alpha, &c->beta, &c->local, &c->libfn) != 4) {
		printf("FAIL: %s did not report its addresses\n", bin);
		failures++;
		fclose(out);
		return -1;
	}
	fclose(out);
	return 0;
}

static void stop(struct child *c)
{
	fputc('x', c->in);
	fclose(c->in);
	waitpid(c->pid, NULL, 0);
}

/* addr must resolve to exactly name+off in a dso ending with dso_tail */
static void expect(struct np_symbolizer *s, uint32_t pid, uint64_t addr,
		   const char *name, uint64_t off, const char *dso_tail,
		   const char *what)
{
	struct np_sym sym;
	int ret = np_symbolize(s, pid, addr, 0, &sym);
	size_t dl = strlen(sym.dso), tl = strlen(dso_tail);
	int ok = sym.dso && dl >= tl && !strcmp(sym.dso + dl - tl, dso_tail);

	if (name)
		ok = ok && ret == 0 && sym.name && !strcmp(sym.name, name) &&
		     sym.offset == off;
	else
		ok = ok && ret != 0 && sym.name == NULL;
	if (!ok) {
		printf("FAIL %s: %#" PRIx64 " -> %s %s+%#" PRIx64 ", expected %s+%#" PRIx64 " in *%s\n",
		       what, addr, sym.dso ? sym.dso : "(null)",
		       sym.name ? sym.name : "(none)", sym.offset,
		       name ? name : "(none)", off, dso_tail);
		failures++;
	}
}

static void expect_all(struct np_symbolizer *s, uint32_t pid,
		       const struct child *c, const char *bin, const char *what)
{
	expect(s, pid, c->alpha + 1, "np_alpha", 1, bin, what);
	expect(s, pid, c->beta + 2, "np_beta", 2, bin, what);
	expect(s, pid, c->local, "np_local", 0, bin, what);
	expect(s, pid, c->libfn + 3, "lib_fn", 3, "/libnp.so", what);
}

/* Feed pid's executable mappings to the symbolizer as MMAP events of fake. */
static void replay_maps(struct np_symbolizer *s, pid_t pid, uint32_t fake)
{
	char path[64], line[1024];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		struct np_event ev = { .type = NP_EV_MMAP };
		uint64_t start, end, off;
		char perms[8], name[512] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*u %511s",
			   &start, &end, perms, &off, name) < 4 || !strchr(perms, 'x'))
			continue;
		ev.mmap.pid = ev.mmap.tid = fake;
		ev.mmap.start = start;
		ev.mmap.len = end - start;
		ev.mmap.pgoff = off;
		ev.mmap.prot = 5;
		ev.mmap.filename = name;
		np_symbolizer_event(s, &ev);
	}
	if (f)
		fclose(f);
}

/*
 * What the cases share, made once by main(): the programs built in dir,
 * the symbolizer, and a running prog (a) that the cases after "pie"
 * find through /proc or, replayed, through events.
 */
static struct {
	struct np_symbolizer *s;
	struct child a;
	int a_running;
	char bin[128], sbin[128], dbin[128];
} fx;

#define FAKE		0x7ffffff0u	/* pids no process has */
#define FAKE_CHILD	0x7ffffff1u

/* [vdso]: __vdso_clock_gettime in our own process, at base + st_value */
static void test_vdso(void)
{
	struct np_symbolizer *s = fx.s;
	uint64_t base = getauxval(AT_SYSINFO_EHDR), addr = 0;
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t size;
	const Elf64_Ehdr *eh = (const void *)base;

	if (!base) {
		printf("vdso: none in this process, not tested\n");
		return;
	}
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	elf = elf_memory((char *)base, size);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (gelf_getsym(d, (int)i, &sym) &&
			    (n = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
			    !strcmp(n, "__vdso_clock_gettime"))
				addr = base + sym.st_value;
		}
	}
	if (elf)
		elf_end(elf);
	CHECK(addr != 0);
	expect(s, getpid(), addr + 2, "__vdso_clock_gettime", 2, "[vdso]", "vdso");
}

static void test_kernel(void)
{
	struct np_symbolizer *s = fx.s;
	char line[512], name[256] = "", n2[256];
	uint64_t addr = 0, a2;
	char t;
	struct np_sym sym;
	FILE *f = fopen("/proc/kallsyms", "r");

	if (np_symbolizer_warning(s)) {
		printf("kernel: %s\n", np_symbolizer_warning(s));
		if (f)
			fclose(f);
		return;
	}
	/* "schedule" if it has its address to itself */
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &a2, &t, n2) != 3)
			continue;
		if (!strcmp(n2, "schedule") && (t == 'T' || t == 't')) {
			addr = a2;
			strcpy(name, n2);
		}
	}
	if (f)
		fclose(f);
	CHECK(addr != 0);
	CHECK(np_symbolize(s, 0, addr + 4, 1, &sym) == 0);
	CHECK(sym.kernel && sym.name && !strcmp(sym.name, name) && sym.offset == 4);
	CHECK(!strcmp(sym.dso, "[kernel.kallsyms]"));
	printf("kernel: %#" PRIx64 " -> %s+%#" PRIx64 " %s\n", addr + 4,
	       sym.name ? sym.name : "?", sym.offset, sym.dso);
}

/* PIE + .so, first sight through /proc/PID/maps */
static void test_pie(void)
{
	CHECK(fx.a_running, "prog did not start");
	if (fx.a_running)
		expect_all(fx.s, fx.a.pid, &fx.a, "/prog", "symtab");
}

/* a non-PIE executable: symbols at absolute addresses */
static void test_nopie(void)
{
	struct np_symbolizer *s = fx.s;

	if (sh("cd %s && cc -O1 -no-pie -fno-pie -o prog_nopie prog.c -L. -lnp -Wl,-rpath,%s", dir, dir) == 0) {
		struct child np;
		char nbin[128];

		snprintf(nbin, sizeof(nbin), "%s/prog_nopie", dir);
		if (start(&np, nbin) == 0) {
			expect(s, np.pid, np.alpha + 1, "np_alpha", 1, "/prog_nopie", "non-PIE");
			expect(s, np.pid, np.beta, "np_beta", 0, "/prog_nopie", "non-PIE");
			expect(s, np.pid, np.local + 2, "np_local", 2, "/prog_nopie", "non-PIE");
			/* &lib_fn is its PLT stub here: in no symbol, and not _init's */
			expect(s, np.pid, np.libfn, NULL, 0, "/prog_nopie", "non-PIE-plt");
			stop(&np);
		}
	}
}

/* .dynsym only: exported names resolve, the static one does not */
static void test_dynsym(void)
{
	struct np_symbolizer *s = fx.s;
	struct child st;

	if (start(&st, fx.sbin) == 0) {
		expect(s, st.pid, st.alpha + 1, "np_alpha", 1, "/prog_stripped", "dynsym");
		expect(s, st.pid, st.beta, "np_beta", 0, "/prog_stripped", "dynsym");
		expect(s, st.pid, st.local + 1, NULL, 0, "/prog_stripped", "dynsym-static");
		expect(s, st.pid, st.libfn, "lib_fn", 0, "/libnp.so", "dynsym");
		stop(&st);
	}
}

/* deleted after it started, before we looked */
static void test_deleted(void)
{
	struct np_symbolizer *s = fx.s;
	struct child del;

	if (start(&del, fx.dbin) == 0) {
		unlink(fx.dbin);
		expect_all(s, del.pid, &del, "/prog_deleted", "deleted");
		stop(&del);
	}
}

/* maps from events: MMAP, then FORK inherits, exec empties */
static void test_events(void)
{
	struct np_symbolizer *s = fx.s;
	struct np_event ev;

	if (!fx.a_running) {
		CHECK(fx.a_running, "prog did not start");
		return;
	}
	replay_maps(s, fx.a.pid, FAKE);
	expect_all(s, FAKE, &fx.a, "/prog", "mmap-events");
	/* maps known, address in none of them: not code */
	expect(s, FAKE, 0x1000, NULL, 0, NP_DSO_UNMAPPED, "unmapped");
	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_FORK;
	ev.task.pid = ev.task.tid = FAKE_CHILD;
	ev.task.ppid = ev.task.ptid = FAKE;
	np_symbolizer_event(s, &ev);
	expect_all(s, FAKE_CHILD, &fx.a, "/prog", "fork");
	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_COMM;
	ev.comm.pid = ev.comm.tid = FAKE_CHILD;
	ev.comm.exec = 1;
	strcpy(ev.comm.comm, "other");
	np_symbolizer_event(s, &ev);
	expect(s, FAKE_CHILD, fx.a.alpha, NULL, 0, "[unknown]", "exec");
	/* a FORK seen after the child's exec does not bring the parent's maps back */
	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_FORK;
	ev.task.pid = ev.task.tid = FAKE_CHILD;
	ev.task.ppid = ev.task.ptid = FAKE;
	np_symbolizer_event(s, &ev);
	expect(s, FAKE_CHILD, fx.a.alpha, NULL, 0, "[unknown]", "late-fork");
	/* once it exited, its pid forked anew inherits again */
	ev.type = NP_EV_EXIT;
	np_symbolizer_event(s, &ev);
	ev.type = NP_EV_FORK;
	np_symbolizer_event(s, &ev);
	expect_all(s, FAKE_CHILD, &fx.a, "/prog", "pid-reuse-fork");
	/* an exited process resolves for 10 s of event time, then is forgotten */
	ev.type = NP_EV_EXIT;
	ev.task.time_ns = 5000000000ULL;
	np_symbolizer_event(s, &ev);
	expect_all(s, FAKE_CHILD, &fx.a, "/prog", "exited");
	ev.task.pid = ev.task.tid = FAKE + 99;	/* another exit, 9 s later */
	ev.task.time_ns = 14000000000ULL;
	np_symbolizer_event(s, &ev);
	expect_all(s, FAKE_CHILD, &fx.a, "/prog", "exited-9s");
	ev.task.time_ns = 16000000000ULL;	/* 11 s after */
	np_symbolizer_event(s, &ev);
	expect(s, FAKE_CHILD, fx.a.alpha, NULL, 0, "[unknown]", "exited-11s");
	expect_all(s, FAKE, &fx.a, "/prog", "parent-kept");
	/*
	 * An object only exited processes mapped is freed once they are
	 * forgotten; what live processes map stays
	 */
	if (sh("cd %s && cc -O2 -Wl,--build-id=0x6e6d6970726f66676f6e65 -o prog_gone prog.c -L. -lnp -Wl,-rpath,%s", dir, dir) == 0) {
		struct child g;
		char gbin[128];
		size_t before, during;

		snprintf(gbin, sizeof(gbin), "%s/prog_gone", dir);
		if (start(&g, gbin) == 0) {
			before = np_symbolizer_mem(s);
			replay_maps(s, g.pid, FAKE + 7);
			expect(s, FAKE + 7, g.alpha + 1, "np_alpha", 1, "/prog_gone", "gone-alive");
			during = np_symbolizer_mem(s);
			stop(&g);
			memset(&ev, 0, sizeof(ev));
			ev.type = NP_EV_EXIT;
			ev.task.pid = ev.task.tid = FAKE + 7;
			ev.task.time_ns = 20000000000ULL;
			np_symbolizer_event(s, &ev);
			expect(s, FAKE + 7, g.alpha + 1, "np_alpha", 1, "/prog_gone", "gone-exited");
			ev.task.pid = ev.task.tid = FAKE + 98;	/* 11 s later */
			ev.task.time_ns = 31000000000ULL;
			np_symbolizer_event(s, &ev);
			/* its symbols went, its path string stays */
			CHECK(during > before);
			CHECK(np_symbolizer_mem(s) <= before + 256);
			expect_all(s, FAKE, &fx.a, "/prog", "sweep-kept");
		}
	}
}

static void exit_at(struct np_symbolizer *s, uint32_t pid, uint32_t tid,
		    uint64_t time_ns)
{
	struct np_event ev = { .type = NP_EV_EXIT };

	ev.task.pid = pid;
	ev.task.tid = tid;
	ev.task.time_ns = time_ns;
	np_symbolizer_event(s, &ev);
}

/*
 * A leader that exits before its other threads: the process runs on, so
 * its maps are kept past the 10 s an exited process is resolved for,
 * until its last thread's EXIT.  The process is a child of ours, alive
 * while the leader's EXIT is handed over, given prog's maps by events.
 */
static void test_leader_exit(void)
{
	struct np_symbolizer *s = fx.s;
	struct np_event ev = { .type = NP_EV_COMM };
	pid_t child;

	if (!fx.a_running) {
		CHECK(fx.a_running, "prog did not start");
		return;
	}
	child = np_test_paused_child();
	CHECK(child > 0);
	if (child <= 0)
		return;
	ev.comm.pid = ev.comm.tid = (uint32_t)child;
	ev.comm.exec = 1;
	strcpy(ev.comm.comm, "threads");
	np_symbolizer_event(s, &ev);
	replay_maps(s, fx.a.pid, (uint32_t)child);
	expect_all(s, child, &fx.a, "/prog", "leader-alive");
	exit_at(s, child, child, 40000000000ULL);
	exit_at(s, FAKE + 97, FAKE + 97, 51000000000ULL);	/* 11 s later */
	expect_all(s, child, &fx.a, "/prog", "leader-exited-threads-live");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	exit_at(s, child, child + 1, 52000000000ULL);	/* its last thread */
	expect_all(s, child, &fx.a, "/prog", "last-thread-exited");
	exit_at(s, FAKE + 97, FAKE + 97, 63000000000ULL);	/* 11 s later */
	expect(s, child, fx.a.alpha, NULL, 0, "[unknown]", "last-thread-exited-11s");
}

/* binary replaced (new inode) and process exited after being seen */
static void test_replaced(void)
{
	struct np_symbolizer *s = fx.s;

	if (!fx.a_running) {
		CHECK(fx.a_running, "prog did not start");
		return;
	}
	expect_all(s, fx.a.pid, &fx.a, "/prog", "before-replace");
	if (sh("cp %s %s.new && mv %s.new %s", fx.sbin, fx.bin, fx.bin, fx.bin) == 0) {
		stop(&fx.a);
		fx.a_running = 0;
		expect_all(s, fx.a.pid, &fx.a, "/prog", "replaced+exited");
	}
}

/* JIT map */
static void test_perf_map(void)
{
	struct np_symbolizer *s = fx.s;
	char mapf[64];
	struct np_event ev;
	FILE *f;

	snprintf(mapf, sizeof(mapf), "/tmp/perf-%u.map", FAKE + 5);
	f = fopen(mapf, "w");
	fputs("7f0000001000 20 jit_one\n7f0000001020 10 LazyCompile:*two x.js:1\n", f);
	fclose(f);
	expect(s, FAKE + 5, 0x7f0000001005, "jit_one", 5, mapf, "perf-map");
	expect(s, FAKE + 5, 0x7f0000001025, "LazyCompile:*two x.js:1", 5, mapf, "perf-map");
	expect(s, FAKE + 5, 0x7f0000002000, NULL, 0, "[unknown]", "perf-map-miss");
	f = fopen(mapf, "a");	/* the JIT keeps appending */
	fputs("7f0000003000 100 jit_three\n", f);
	fclose(f);
	/*
	 * The map is re-read at most once a second, or when new executable
	 * memory is mapped, as a JIT does for more code: say so.
	 */
	memset(&ev, 0, sizeof(ev));
	ev.type = NP_EV_MMAP;
	ev.mmap.pid = ev.mmap.tid = FAKE + 5;
	ev.mmap.start = 0x7f0000003000;
	ev.mmap.len = 0x1000;
	ev.mmap.prot = 5;	/* PROT_READ | PROT_EXEC */
	ev.mmap.filename = "//anon";
	np_symbolizer_event(s, &ev);
	expect(s, FAKE + 5, 0x7f0000003010, "jit_three", 0x10, mapf, "perf-map-append");
	/* perf's "//anon" where the map has no name: "[anon]", as maps say */
	{
		char b[NP_SYM_UNNAMED_MAX];
		struct np_sym sym;

		CHECK(np_symbolize(s, FAKE + 5, 0x7f0000003800, 0, &sym) != 0);
		CHECK(sym.dso && !strcmp(sym.dso, "[anon]") && !sym.name &&
		      sym.offset == 0x800);
		CHECK(!strcmp(np_sym_unnamed(b, sizeof(b), sym.dso, sym.offset),
			      "[anon]+0x800"));
	}
	/* ... or a second later without one */
	f = fopen(mapf, "a");
	fputs("7f0000005000 100 jit_four\n", f);
	fclose(f);
	usleep(1100 * 1000);
	expect(s, FAKE + 5, 0x7f0000005010, "jit_four", 0x10, mapf, "perf-map-later");
	unlink(mapf);
}

/* One name for unnamed code: object+0xoffset, the object's file name. */
static void test_unnamed_name(void)
{
	char b[NP_SYM_UNNAMED_MAX], small[12];

	CHECK(!strcmp(np_sym_unnamed(b, sizeof(b), "/usr/lib/x86_64-linux-gnu/libc.so.6",
				     0x2b4e), "libc.so.6+0x2b4e"));
	CHECK(!strcmp(np_sym_unnamed(b, sizeof(b), "[kernel.kallsyms]", 0xffffffff81000000),
		      "[kernel.kallsyms]+0xffffffff81000000"));
	CHECK(!strcmp(np_sym_unnamed(b, sizeof(b), NULL, 0x10), "[unknown]+0x10"));
	/* a long object name is cut, never the offset */
	CHECK(!strcmp(np_sym_unnamed(small, sizeof(small), "/lib/libverylong.so", 0x1234),
		      "libv+0x1234"));
}

/* nothing known: never dropped */
static void test_unknown(void)
{
	struct np_symbolizer *s = fx.s;
	struct np_sym sym;

	CHECK(np_symbolize(s, FAKE + 6, 0x1234, 0, &sym) != 0);
	CHECK(sym.dso && !strcmp(sym.dso, "[unknown]") && !sym.name && sym.offset == 0x1234);
}

static const struct np_test_case cases[] = {
	NP_CASE(test_unnamed_name),
	NP_CASE(test_pie),
	NP_CASE(test_nopie),
	NP_CASE(test_dynsym),
	NP_CASE(test_deleted),
	NP_CASE(test_events),
	NP_CASE(test_leader_exit),
	NP_CASE(test_replaced),
	NP_CASE(test_perf_map),
	NP_CASE(test_unknown),
	NP_CASE(test_vdso),
	NP_CASE(test_kernel),
	{ 0 }
};

int main(int argc, char **argv)
{
	char err[256], src[128];
	FILE *f;
	int ret;

	if (argc == 2 && !strcmp(argv[1], "--list"))
		return np_test_main(argc, argv, cases);
	snprintf(dir, sizeof(dir), "/tmp/np-symtest-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	f = fopen((snprintf(src, sizeof(src), "%s/prog.c", dir), src), "w");
	fputs(prog_c, f);
	fclose(f);
	f = fopen((snprintf(src, sizeof(src), "%s/lib.c", dir), src), "w");
	fputs(lib_c, f);
	fclose(f);
	snprintf(fx.bin, sizeof(fx.bin), "%s/prog", dir);
	snprintf(fx.sbin, sizeof(fx.sbin), "%s/prog_stripped", dir);
	snprintf(fx.dbin, sizeof(fx.dbin), "%s/prog_deleted", dir);
	if (sh("cd %s && cc -O1 -fPIC -shared -o libnp.so lib.c", dir) ||
	    sh("cd %s && cc -O1 -o prog prog.c -L. -lnp -Wl,-rpath,%s", dir, dir) ||
	    sh("cd %s && cc -O1 -rdynamic -s -o prog_stripped prog.c -L. -lnp -Wl,-rpath,%s", dir, dir) ||
	    sh("cd %s && cc -O2 -o prog_deleted prog.c -L. -lnp -Wl,-rpath,%s", dir, dir))
		return 1;
	fx.s = np_symbolizer_new(err, sizeof(err));
	if (!fx.s) {
		printf("FAIL: %s\n", err);
		return 1;
	}
	fx.a_running = start(&fx.a, fx.bin) == 0;
	ret = np_test_main(argc, argv, cases);
	if (fx.a_running)
		stop(&fx.a);
	np_symbolizer_free(fx.s);
	sh("rm -rf %s", dir);
	return ret;
}
