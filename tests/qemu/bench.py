#!/usr/bin/env python3
"""The QEMU real-kernel bench: boot a test kernel with a generated initramfs,
run one scenario in it, bring the results back and judge them.

  bench.py run [--build-dir B] [--kernel KVER|all] [--keep] SCENARIO...
  bench.py boot-time [--build-dir B] [--kernel KVER|all]
  bench.py accel [--kernel KVER]         print (and cache) the accelerator verdict
  bench.py list                          the scenarios

A scenario is tests/qemu/scenarios/<name>.sh, run by the guest's /init, with
a header of "# @key value" lines declaring what it needs (README.md). Per
run the bench writes <build>/tests/qemu/runs/<scenario>-<kver>/: console.log
(ttyS0), results/ (the guest's $RESULTS), host.json (timings, verdict).

Results travel on a second serial port (ttyS1) as a base64 tar.gz between
markers: it needs no guest driver beyond the built-in 8250, no disk image
and no 9p, and survives the guest powering off right after.
"""
import argparse
import base64
import glob
import io
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import logcheck  # noqa: E402
from qmp import QMP, QMPError, NMIInjector, ExitWatch  # noqa: E402

KERNELS_SH = os.path.join(SRCDIR, "scripts", "kernels.sh")
INIT_MARK = "@@NMIPROF-BENCH-INIT@@"
# Boots reach /init in 4-8 s here.  One that has not in this long hung in
# the kernel's own boot, before /init loads any nmiprof code: seen once
# in CI (6.1, TCG, stuck after "VFS: Dquot-cache hash table entries").
BOOT_LIMIT_S = 60
DONE_MARK = "@@NMIPROF-BENCH-DONE@@"
NMI_MARK = "@@NMIPROF-BENCH-NMI-START@@"
PANIC_MARK = "@@NMIPROF-BENCH-PANIC-ARMED@@"
PANIC_LINE = "Kernel panic - not syncing: "
RES_BEGIN = "@@NMIPROF-RESULTS-BEGIN@@"
RES_END = "@@NMIPROF-RESULTS-END@@"
TAIL_LINES = 60
# Always included when built: the project's own binaries.
PROJECT_PROGS = ["daemon/nmiprofd", "cli/nmiprof"]


def die(msg):
    print("bench: " + msg, file=sys.stderr)
    sys.exit(2)


def kernels_sh(*args):
    p = subprocess.run([KERNELS_SH] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        die(p.stderr.strip() or "kernels.sh %s failed" % " ".join(args))
    return p.stdout.strip()


# ---------------------------------------------------------------- scenarios

class Scenario:
    """A scenario script and its "# @key value" header declarations."""

    def __init__(self, name):
        self.name = name
        self.path = os.path.join(HERE, "scenarios", name + ".sh")
        if not os.path.isfile(self.path):
            die("no scenario %s (%s)" % (name, self.path))
        self.smp, self.mem, self.timeout = 2, 512, 120
        self.cmdline, self.modules, self.progs, self.files = [], [], [], []
        self.allow = []
        self.kmod = "required"
        self.nmi_rate, self.nmi_duration = 0.0, 0.0
        self.panic = None  # @panic REGEX: must end in that panic (check_panic())
        self.icount = None  # @icount SHIFT, see qemu_cmd()
        with open(self.path) as f:
            for n, line in enumerate(f, 1):
                m = re.match(r"#\s*@([a-z-]+)\s*(.*?)\s*$", line)
                if m:
                    self._declare(m.group(1), m.group(2), n)
        self.check = None
        for ext in (".check.py", ".check"):
            p = os.path.join(HERE, "scenarios", name + ext)
            if os.path.isfile(p):
                self.check = p

    def _declare(self, key, val, n):
        where = "%s:%d" % (self.path, n)
        try:
            if key == "smp":
                self.smp = int(val)
            elif key == "mem":
                self.mem = int(val)
            elif key == "timeout":
                self.timeout = int(val)
            elif key == "cmdline":
                self.cmdline += shlex.split(val)
            elif key == "modules":
                self.modules += val.split()
            elif key == "progs":
                self.progs += val.split()
            elif key == "files":
                self.files += val.split()
            elif key == "allow":
                self.allow.append(val)
            elif key == "kmod":
                if val not in ("required", "optional", "none"):
                    raise ValueError(val)
                self.kmod = val
            elif key == "label":
                pass  # ctest label, read by qemu.cmake
            elif key == "icount":
                self.icount = int(val)
                if not 0 <= self.icount <= 10:
                    raise ValueError(val)
            elif key == "panic":
                self.panic = val
                self.panic_re = re.compile(re.escape(PANIC_LINE) + val)
            elif key == "nmi":
                rate, duration = val.split()
                self.nmi_rate, self.nmi_duration = float(rate), float(duration)
            else:
                die("%s: unknown declaration @%s" % (where, key))
        except ValueError:
            die("%s: bad value for @%s: %r" % (where, key, val))


def all_scenarios():
    d = os.path.join(HERE, "scenarios")
    return sorted(f[:-3] for f in os.listdir(d) if f.endswith(".sh"))


# ---------------------------------------------------------------- initramfs

class Cpio:
    """An initramfs being assembled: guest path -> entry. Written as one
    uncompressed newc archive (the kernel unpacks that fastest under TCG,
    and device nodes need no root on the host)."""

    def __init__(self):
        self.entries = {}

    def _parents(self, path):
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            self.entries.setdefault("/".join(parts[:i]), ("dir", 0o755, None))

    def dir(self, path, mode=0o755):
        self._parents(path)
        self.entries[path.strip("/")] = ("dir", mode, None)

    def data(self, path, content, mode=0o644):
        self._parents(path)
        if isinstance(content, str):
            content = content.encode()
        self.entries[path.strip("/")] = ("file", mode, content)

    def file(self, path, host_path, mode=None):
        """Copy a host file (symlinks followed) to path."""
        st = os.stat(host_path)
        self._parents(path)
        self.entries[path.strip("/")] = (
            "hostfile", mode if mode is not None else stat.S_IMODE(st.st_mode), host_path)

    def symlink(self, path, target):
        self._parents(path)
        self.entries[path.strip("/")] = ("symlink", 0o777, target)

    def chardev(self, path, major, minor, mode=0o600):
        self._parents(path)
        self.entries[path.strip("/")] = ("chr", mode, (major, minor))

    def has(self, path):
        return path.strip("/") in self.entries

    def write(self, out_path):
        types = {"dir": stat.S_IFDIR, "file": stat.S_IFREG, "hostfile": stat.S_IFREG,
                 "symlink": stat.S_IFLNK, "chr": stat.S_IFCHR}
        with open(out_path, "wb") as out:
            ino = 1
            for name in sorted(self.entries):
                kind, mode, arg = self.entries[name]
                rdev = (0, 0)
                if kind == "file":
                    body = arg
                elif kind == "hostfile":
                    with open(arg, "rb") as f:
                        body = f.read()
                elif kind == "symlink":
                    body = arg.encode()
                else:
                    body = b""
                    if kind == "chr":
                        rdev = arg
                self._entry(out, ino, name, types[kind] | mode, body, rdev)
                ino += 1
            self._entry(out, ino, "TRAILER!!!", 0, b"", (0, 0))

    @staticmethod
    def _entry(out, ino, name, mode, body, rdev):
        nameb = name.encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(mode) else 1
        hdr = "070701" + "".join("%08x" % v for v in (
            ino, mode, 0, 0, nlink, 0, len(body), 0, 0, rdev[0], rdev[1], len(nameb), 0))
        out.write(hdr.encode() + nameb)
        out.write(b"\0" * (-(110 + len(nameb)) % 4))
        out.write(body)
        out.write(b"\0" * (-len(body) % 4))


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def add_elf_with_libs(cpio, guest_path, host_path):
    """Add an ELF binary and every shared library ldd resolves for it,
    each at its host path (the dynamic loader included)."""
    cpio.file(guest_path, host_path)
    p = subprocess.run(["ldd", host_path], capture_output=True, text=True)
    if p.returncode != 0:  # static binaries: "not a dynamic executable"
        return
    for line in p.stdout.splitlines():
        m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(", line)
        if m and not cpio.has(m.group(1)):
            cpio.file(m.group(1), m.group(1))
        elif "not found" in line:
            die("%s: library %s" % (host_path, line.strip()))


def add_prog(cpio, spec, build_dir):
    """Add a program: a path (relative: build dir, then source dir) or a name
    on $PATH; "name?" is optional. Non-ELF wrappers (Debian's perf used to be
    a script exec'ing perf_<version>) bring their <name>_* siblings along."""
    optional = spec.endswith("?")
    spec = spec.rstrip("?")
    host = None
    if "/" in spec:
        for base in (build_dir, SRCDIR):
            cand = os.path.join(base, spec)
            if os.path.isfile(cand):
                host = cand
                break
    else:
        host = shutil.which(spec)
    if host is None:
        if optional:
            return None
        die("program %s not found (build dir %s, $PATH)" % (spec, build_dir))
    name = os.path.basename(host)
    if is_elf(host):
        add_elf_with_libs(cpio, "/usr/bin/" + name, host)
    else:
        cpio.file("/usr/bin/" + name, host)
        d = os.path.dirname(host)
        for sib in sorted(os.listdir(d)):
            sp = os.path.join(d, sib)
            if sib.startswith(name + "_") and os.path.isfile(sp) and is_elf(sp):
                add_elf_with_libs(cpio, "/usr/bin/" + sib, sp)
    return "/usr/bin/" + name


def build_initramfs(scn, kver, build_dir, out_path):
    cpio = Cpio()
    busybox = shutil.which("busybox") or die("busybox not found (busybox-static)")
    if not is_elf(busybox) or subprocess.run(
            ["ldd", busybox], capture_output=True).returncode == 0:
        die("%s is not a static binary; install busybox-static" % busybox)
    cpio.file("/bin/busybox", busybox, 0o755)
    cpio.symlink("/bin/sh", "busybox")
    cpio.chardev("/dev/console", 5, 1)
    cpio.chardev("/dev/null", 1, 3, 0o666)
    cpio.file("/init", os.path.join(HERE, "guest", "init"), 0o755)
    cpio.file("/bench/lib.sh", os.path.join(HERE, "guest", "lib.sh"), 0o644)
    cpio.file("/bench/scenario.sh", scn.path, 0o644)

    env = {
        "BENCH_SCENARIO": scn.name, "BENCH_KVER": kver, "BENCH_SMP": scn.smp,
        "BENCH_NMI_RATE": int(scn.nmi_rate), "BENCH_NMI_DURATION": int(scn.nmi_duration + 0.999),
        "MODULES": "/modules", "NMIPROF_KO": "/modules/nmiprof.ko",
    }
    ko = os.path.join(build_dir, "kmod", kver, "nmiprof.ko")
    if scn.kmod != "none":
        if os.path.isfile(ko):
            cpio.file("/modules/nmiprof.ko", ko, 0o644)
        elif scn.kmod == "required":
            die("%s missing: build the kmod target (make kmod) first" % ko)
    for m in scn.modules:
        # tests/qemu/modules/<dir>/ may build <m>.ko under any directory name.
        found = sorted(glob.glob(os.path.join(
            build_dir, "tests", "qemu", "modules", "*", kver, m + ".ko")))
        if not found:
            die("test module %s.ko for %s not built (tests/qemu/modules/, make kmod)" % (m, kver))
        cpio.file("/modules/%s.ko" % m, found[0], 0o644)
    for prog in [p + "?" for p in PROJECT_PROGS] + scn.progs:
        add_prog(cpio, prog, build_dir)
    for spec in scn.files:
        host, _, guest = spec.partition(":")
        for base in (build_dir, SRCDIR):
            cand = os.path.join(base, host)
            if os.path.exists(cand):
                host = cand
                break
        else:
            die("file %s not found (build dir, source dir)" % host)
        cpio.file(guest or "/data/" + os.path.basename(host), host)
    cpio.data("/bench/env", "".join(
        "export %s=%s\n" % (k, shlex.quote(str(v))) for k, v in sorted(env.items())))
    cpio.write(out_path)
    return os.path.getsize(out_path)


# ---------------------------------------------------------------- QEMU

def qemu_cmd(vmlinuz, initrd, accel, smp, mem, append, console, results,
             qmp_sock=None, ctl_sock=None, icount=None, events_sock=None, log=None):
    """ttyS0 console, ttyS1 results (guest to host), ttyS2 control (host to
    guest: the end of an NMI injection).  icount=SHIFT: see below.
    events_sock: a second QMP monitor, for ExitWatch; log: QEMU's -d log."""
    cmd = ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none",
           "-no-reboot", "-m", "%dM" % mem, "-smp", str(smp),
           "-kernel", vmlinuz, "-initrd", initrd, "-append", append,
           "-serial", "file:" + console, "-serial", "file:" + results]
    if ctl_sock:
        cmd += ["-chardev", "socket,id=ctl,path=%s,server=on,wait=off" % ctl_sock,
                "-serial", "chardev:ctl"]
    if qmp_sock:
        cmd += ["-qmp", "unix:%s,server=on,wait=off" % qmp_sock]
    if events_sock:
        # ExitWatch reads the registers of a guest that reset itself, then quits.
        cmd += ["-qmp", "unix:%s,server=on,wait=off" % events_sock,
                "-action", "shutdown=pause"]
    if log:
        # A triple fault logs "Triple fault" (cpu_reset); with -no-reboot
        # it, or any guest reset, ends QEMU as quietly as a power-off.
        cmd += ["-d", "cpu_reset,guest_errors", "-D", log]
    if accel == "kvm":
        cmd += ["-accel", "kvm"]
    elif icount is not None:
        # Benchmarks: guest time counts instructions (2^SHIFT ns each), so
        # a busy shared host slows the run down without changing what the
        # guest measures.  sleep=off: an idle guest jumps to its next timer
        # instead of waiting in real time.  icount needs the single-threaded
        # TCG, which runs the vCPUs in turn on one host thread.
        cmd += ["-accel", "tcg,thread=single", "-cpu", "max",
                "-icount", "shift=%d,sleep=off" % icount]
    else:
        # MTTCG (one host thread per vCPU) keeps the vCPUs truly concurrent,
        # which NMI code wants to be tested under. "-cpu max" rather than
        # the default qemu64: see README.md (int3 text-poke oopses).
        cmd += ["-accel", "tcg", "-cpu", "max"]
    return cmd


class Guest:
    """One QEMU process; watches the console for the bench's markers."""

    def __init__(self, cmd, console):
        self.console = console
        # QEMU's own messages; a file, so a chatty QEMU never blocks on a pipe.
        self.outfile = console + ".qemu"
        self.start = time.monotonic()
        with open(self.outfile, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self._pos = 0
        self.text = ""

    def poll_console(self):
        try:
            with open(self.console, "rb") as f:
                f.seek(self._pos)
                new = f.read()
        except FileNotFoundError:
            return ""
        self._pos += len(new)
        s = new.decode(errors="replace")
        self.text += s
        return s

    def running(self):
        return self.proc.poll() is None

    def kill(self):
        if self.running():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def qemu_output(self):
        try:
            return open(self.outfile, errors="replace").read()
        except OSError:
            return ""


def tail(text, n=TAIL_LINES):
    return "\n".join(text.splitlines()[-n:])


def accel_verdict(kver, workdir):
    """'kvm' only if a probe boot with KVM reaches /init quickly, else 'tcg'.
    NMIPROF_QEMU_ACCEL=kvm|tcg overrides; the verdict is cached per host
    boot (and kernel) in workdir/accel.json."""
    forced = os.environ.get("NMIPROF_QEMU_ACCEL")
    if forced:
        return forced, "NMIPROF_QEMU_ACCEL"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", "no usable /dev/kvm"
    try:
        boot_id = open("/proc/sys/kernel/random/boot_id").read().strip()
    except OSError:
        boot_id = ""
    cache = os.path.join(workdir, "accel.json")
    try:
        c = json.load(open(cache))
        if c.get("boot_id") == boot_id and kver in c.get("verdicts", {}):
            return c["verdicts"][kver], "cached probe"
    except (OSError, ValueError):
        c = {}
    if c.get("boot_id") != boot_id:
        c = {"boot_id": boot_id, "verdicts": {}}
    ok, why = probe_kvm(kver, workdir)
    verdict = "kvm" if ok else "tcg"
    c["verdicts"][kver] = verdict
    os.makedirs(workdir, exist_ok=True)
    json.dump(c, open(cache, "w"))
    return verdict, "probe: " + why


def probe_kvm(kver, workdir, limit=15.0):
    vmlinuz = kernels_sh("vmlinuz", kver)
    with tempfile.TemporaryDirectory(prefix="nmiprof-probe-") as tmp:
        cpio = Cpio()
        cpio.file("/bin/busybox", shutil.which("busybox"), 0o755)
        cpio.chardev("/dev/console", 5, 1)
        cpio.data("/init", "#!/bin/busybox sh\n/bin/busybox echo %s\n"
                  "/bin/busybox poweroff -f\n" % INIT_MARK, 0o755)
        initrd = os.path.join(tmp, "probe.cpio")
        cpio.write(initrd)
        console = os.path.join(tmp, "console.log")
        g = Guest(qemu_cmd(vmlinuz, initrd, "kvm", 1, 256, "console=ttyS0 panic=-1",
                           console, "/dev/null", None), console)
        while time.monotonic() - g.start < limit and g.running():
            g.poll_console()
            if INIT_MARK in g.text:
                g.kill()
                return True, "KVM boot reached /init in %.1f s" % (time.monotonic() - g.start)
            time.sleep(0.1)
        exited = not g.running()
        g.kill()
        last = (g.qemu_output().strip().splitlines() or ["no output"])[-1]
        if exited:
            return False, "QEMU with KVM exited at once: " + last
        return False, "KVM probe boot did not reach /init in %.0f s (%s)" % (limit, last)


def tell_guest(ctl_sock, line):
    """Write one line to the guest's ttyS2; returns the open connection
    (closing it at once could drop what QEMU has not yet handed on)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(ctl_sock)
        s.sendall(line.encode() + b"\n")
    except OSError as e:
        print("bench: cannot reach the guest's ttyS2: %s" % e)
    return s


def extract_results(raw, dest):
    """Decode the base64 tar.gz framed on ttyS1 into dest; False if absent."""
    text = raw.decode(errors="replace")
    b, e = text.find(RES_BEGIN), text.find(RES_END)
    if b < 0 or e < b:
        return False
    data = base64.b64decode(re.sub(r"[^A-Za-z0-9+/=]", "", text[b + len(RES_BEGIN):e]))
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        for m in t.getmembers():
            if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in m.name:
                continue
            t.extract(m, dest)
    return True


def run_one(scn, kver, build_dir, keep=False, verbose=False):
    """Runs a scenario on one kernel; returns (ok, summary dict)."""
    workdir = os.path.join(build_dir, "tests", "qemu", "runs")
    rundir = os.path.join(workdir, "%s-%s" % (scn.name, kver))
    shutil.rmtree(rundir, ignore_errors=True)
    os.makedirs(rundir)
    vmlinuz = kernels_sh("vmlinuz", kver)
    if scn.icount is not None:
        accel, why = "tcg", "@icount %d: TCG, one thread, instruction-counted time" % scn.icount
    else:
        accel, why = accel_verdict(kver, workdir)

    t0 = time.monotonic()
    initrd = os.path.join(rundir, "initramfs.cpio")
    size = build_initramfs(scn, kver, build_dir, initrd)
    t_initrd = time.monotonic() - t0

    console = os.path.join(rundir, "console.log")
    results_raw = os.path.join(rundir, "ttyS1.log")
    qmpdir = tempfile.mkdtemp(prefix="nmiprof-qmp-")  # sun_path is short
    qmp_sock = os.path.join(qmpdir, "qmp.sock")
    ctl_sock = os.path.join(qmpdir, "ctl.sock")
    events_sock = os.path.join(qmpdir, "events.sock")
    qemu_log = os.path.join(rundir, "qemu.log")
    append = " ".join(["console=ttyS0", "panic=-1"] + scn.cmdline)
    cmd = qemu_cmd(vmlinuz, initrd, accel, scn.smp, scn.mem, append,
                   console, results_raw, qmp_sock, ctl_sock, scn.icount,
                   events_sock, qemu_log)
    with open(os.path.join(rundir, "qemu.cmd"), "w") as f:
        f.write(" ".join(shlex.quote(c) for c in cmd) + "\n")

    print("bench: %s on %s: %s (%s), smp %d, initramfs %.1f MiB built in %.2f s" % (
        scn.name, kver, accel, why, scn.smp, size / 2**20, t_initrd), flush=True)
    load_start = open("/proc/loadavg").read().split()[:3]
    g = Guest(cmd, console)
    watch = ExitWatch(events_sock, g.start)
    if watch.connect():
        watch.start()
    else:
        print("bench: no QMP event monitor (%s): stopping QEMU" % watch.error)
        g.kill()
    t_init = t_done = None
    injector = None
    nmi_sent = 0  # by the injectors before the current one
    scan = 0  # g.text up to here has been searched for NMI_MARK
    ctl = None  # connection to ttyS2, once the guest has been told
    timed_out = False
    boot_hung = False
    seen = ""
    try:
        while g.running():
            new = g.poll_console()
            if verbose and new:
                sys.stdout.write(new)
                sys.stdout.flush()
            seen = seen[-200:] + new
            now = time.monotonic() - g.start
            if t_init is None and INIT_MARK in seen:
                t_init = now
            # Each nmi_start asks for one more injection, once the last is over.
            mark = g.text.find(NMI_MARK, scan)
            if mark >= 0 and (not injector or ctl is not None):
                scan = mark + len(NMI_MARK)
                if scn.nmi_rate > 0:
                    if injector:
                        nmi_sent += injector.sent
                        ctl.close()
                        ctl = None
                    injector = NMIInjector(qmp_sock, scn.nmi_rate, scn.nmi_duration)
                    injector.start()
                else:
                    injector = False  # declared nothing: ignore the request
            elif mark < 0:
                scan = max(scan, len(g.text) - len(NMI_MARK))
            if injector and ctl is None and not injector.is_alive():
                ctl = tell_guest(ctl_sock, "@@NMIPROF-NMI-DONE@@ sent=%d" % injector.sent)
            if t_done is None and DONE_MARK in seen:
                t_done = now
            if t_init is None and now > BOOT_LIMIT_S:
                boot_hung = True
            age = watch.shutdown_age(now)
            if age is not None and age > 10:
                g.kill()  # paused, and the watch did not quit it
                break
            if now > scn.timeout or boot_hung:
                timed_out = not boot_hung
                try:  # a clean quit flushes the serial files
                    q = QMP(qmp_sock).connect(timeout=2)
                    q.command("quit")
                    q.close()
                except (QMPError, OSError):
                    pass
                time.sleep(0.5)
                g.kill()
                break
            time.sleep(0.02)
        g.proc.wait()
    finally:
        if g.running():
            g.kill()
        if injector:
            injector.stop()
            injector.join()
        if ctl:
            ctl.close()
        if watch.is_alive():
            watch.join(5)
        shutil.rmtree(qmpdir, ignore_errors=True)
    g.poll_console()
    t_total = time.monotonic() - g.start
    qemu_out = g.qemu_output()
    ended = how_it_ended(g, watch, qemu_log)
    if watch.registers:
        with open(os.path.join(rundir, "qemu-registers.txt"), "w") as f:
            f.write(watch.registers)

    problems, notes = [], []
    resdir = os.path.join(rundir, "results")
    os.makedirs(resdir)
    with open(results_raw, "rb") as f:
        have_results = extract_results(f.read(), resdir)
    if timed_out:
        problems.append("timed out after %d s (guest hung?)" % scn.timeout)
    if boot_hung:
        problems.append("the guest did not reach /init in %d s: its kernel "
                        "hung while booting" % BOOT_LIMIT_S)
    if g.proc.returncode not in (0, -signal.SIGKILL) and not (timed_out or boot_hung):
        problems.append("qemu exited with %d: %s" % (g.proc.returncode, qemu_out.strip()[-300:]))
    if not have_results:
        if not (timed_out or boot_hung):
            problems.append("guest sent no results (panicked or died before the "
                            "end): %s" % ended["why"])
    tainted = None
    status = None
    texts = [g.text]
    if have_results:
        rd = lambda n: open(os.path.join(resdir, n), errors="replace").read()
        try:
            tainted = int(rd("tainted").strip())
            status = int(rd("status").strip())
            texts.append(rd("dmesg.txt"))
        except (OSError, ValueError) as e:
            problems.append("incomplete results: %s" % e)
        if status:
            fails = rd("failures").strip() if os.path.exists(
                os.path.join(resdir, "failures")) else ""
            problems.append("scenario exited with status %s%s" % (
                status, (": " + "; ".join(fails.splitlines())) if fails else ""))
    if scn.panic:
        texts[0] = check_panic(scn, texts[0], problems)
    p, notes = logcheck.check(texts, tainted, scn.allow)
    problems += p

    summary = {
        "scenario": scn.name, "kernel": kver, "accel": accel, "accel_reason": why,
        "smp": scn.smp, "icount_shift": scn.icount,
        "initramfs_bytes": size, "initramfs_build_s": round(t_initrd, 3),
        "boot_to_init_s": round(t_init, 3) if t_init is not None else None,
        "scenario_end_s": round(t_done, 3) if t_done is not None else None,
        "qemu_total_s": round(t_total, 3),
        "host_loadavg": " ".join(load_start),
        "host_loadavg_end": " ".join(open("/proc/loadavg").read().split()[:3]),
        "nmi_sent": nmi_sent + injector.sent if injector else 0,
        "nmi_elapsed_s": round(injector.elapsed, 3) if injector else 0,
        "nmi_error": injector.error if injector else None,
        "tainted": tainted, "taint_flags": "".join(
            l for _, l, _ in logcheck.decode_taint(tainted or 0)),
        "notes": notes, "problems": problems, "rundir": rundir,
        "boot_hung": boot_hung, "qemu_exit": ended,
    }
    # An injection the expected panic cut short is no failure.
    if injector and injector.error and not (scn.panic and scn.panic_re.search(g.text)):
        problems.append("NMI injection failed: " + injector.error)

    # Host-side assertions on the results, if the scenario has them.
    hostjson = os.path.join(rundir, "host.json")
    json.dump(summary, open(hostjson, "w"), indent=1)
    if scn.check and have_results and not timed_out:
        env = dict(os.environ, BENCH_HOST_JSON=hostjson, BENCH_CONSOLE_LOG=console,
                   BENCH_KVER=kver, BENCH_BUILD_DIR=build_dir)
        cmd = [sys.executable, scn.check] if scn.check.endswith(".py") else [scn.check]
        p = subprocess.run(cmd + [resdir], env=env, capture_output=True, text=True)
        out = (p.stdout + p.stderr).strip()
        if out:
            print(out)
        if p.returncode != 0:
            problems.append("host check %s failed (exit %d)" % (
                os.path.basename(scn.check), p.returncode))
    summary["problems"] = problems
    json.dump(summary, open(hostjson, "w"), indent=1)
    if not keep:
        os.unlink(initrd)

    ok = not problems
    print_notes(notes)
    print("bench: %s on %s: boot to /init %s, scenario done %s, qemu total %.1f s%s" % (
        scn.name, kver, "%.2f s" % t_init if t_init is not None else "never",
        "%.2f s" % t_done if t_done is not None else "never", t_total,
        ", %d NMIs injected in %.1f s" % (summary["nmi_sent"], summary["nmi_elapsed_s"])
        if injector else ""))
    if not ok:
        if not verbose:
            print("---- last %d lines of %s" % (TAIL_LINES, console))
            print(tail(g.text))
            print("----")
        for p in problems:
            print("bench: FAIL:", p)
    print("bench: %s on %s: %s (details: %s)" % (scn.name, kver, "PASS" if ok else "FAIL",
                                                rundir), flush=True)
    return ok, summary


def how_it_ended(g, watch, log):
    """QEMU's exit status, its SHUTDOWN event's reason, the triple faults
    in its -d log, and the console's last lines: what a "no results"
    failure needs to be explained after the run's guest is gone."""
    try:
        text = open(log, errors="replace").read()
    except OSError:
        text = ""
    reason = watch.shutdown_reason()
    triple = text.count("Triple fault")
    ended = {
        "status": g.proc.returncode, "shutdown_reason": reason,
        "events": [[t, n] + ([d["reason"]] if "reason" in d else [])
                   for t, n, d in watch.events],
        "watch_error": watch.error, "triple_faults": triple,
        # The rest of the log is -d cpu_reset's register dumps.
        "guest_errors": [l for l in text.splitlines()
                         if l and not re.match(r"CPU Reset|[A-Z0-9]+ *=", l)][-20:],
        "console_tail": g.text.splitlines()[-15:],
    }
    if triple:
        why = "QEMU saw %d triple fault(s) (%s), -no-reboot made it stop" % (
            triple, os.path.basename(log))
    elif reason == "guest-reset":
        why = "the guest reset itself (SHUTDOWN guest-reset), -no-reboot made QEMU stop"
    elif reason:
        why = "QEMU's SHUTDOWN reason: %s, exit status %s" % (reason, g.proc.returncode)
    else:
        why = "QEMU exited with status %s, no SHUTDOWN event (%s)" % (
            g.proc.returncode, watch.error or "none seen")
    if watch.registers:
        why += "; the vCPUs' registers then: qemu-registers.txt"
    ended["why"] = why
    return ended


def check_panic(scn, console, problems):
    """A "@panic" scenario passes only if its console shows the panic after
    expect_panic's mark; returns the console without that panic's lines."""
    mark = console.find(PANIC_MARK)
    if mark < 0:
        problems.append("the scenario never reached expect_panic")
        return console
    after = console[mark:]
    if not scn.panic_re.search(after):
        problems.append("no \"%s%s\" after expect_panic" % (PANIC_LINE, scn.panic))
    return console[:mark] + "\n".join(
        l for l in after.splitlines() if not scn.panic_re.search(l))


def tcg_patching_artifact(rundir):
    """The guest oopsed on TCG's stale text-patching int3 (logcheck.py)."""
    try:
        text = open(os.path.join(rundir, "console.log"), errors="replace").read()
    except OSError:
        return False
    return logcheck.tcg_patch_artifact(text)


def print_notes(notes):
    """Notes by kind: how many, and the first one."""
    kinds = {}
    for n in notes:
        kinds.setdefault(n.split(":", 1)[0], []).append(n)
    for kind, ns in kinds.items():
        print("bench: note: %dx %s (first: %s)" % (len(ns), kind, ns[0].split(":", 1)[1].strip()))


def kernels_arg(k):
    listed = kernels_sh("list").split()
    if k in (None, "all"):
        return listed
    if k not in listed:
        die("%s is not a test kernel (%s)" % (k, " ".join(listed)))
    return [k]


def default_build_dir():
    return os.environ.get("NMIPROF_BUILD_DIR", os.path.join(SRCDIR, "build"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run scenarios")
    r.add_argument("scenarios", nargs="+")
    r.add_argument("--keep", action="store_true", help="keep the initramfs")
    r.add_argument("-v", "--verbose", action="store_true", help="echo the console")
    b = sub.add_parser("boot-time", help="measure boot to /init per kernel")
    a = sub.add_parser("accel", help="print the accelerator verdict")
    sub.add_parser("list", help="list the scenarios")
    for p in (r, b, a):
        p.add_argument("--build-dir", default=default_build_dir())
        p.add_argument("--kernel", default="all")
    args = ap.parse_args()

    if args.cmd == "list":
        print("\n".join(all_scenarios()))
        return 0
    build_dir = os.path.abspath(args.build_dir)
    kernels = kernels_arg(args.kernel)
    if args.cmd == "accel":
        for k in kernels:
            v, why = accel_verdict(k, os.path.join(build_dir, "tests", "qemu", "runs"))
            print("%s: %s (%s)" % (k, v, why))
        return 0
    if args.cmd == "boot-time":
        return boot_time(kernels, build_dir)
    names = all_scenarios() if args.scenarios == ["all"] else args.scenarios
    scns = [Scenario(n) for n in names]
    failed = []
    for s in scns:
        for k in kernels:
            ok, summary = run_one(s, k, build_dir, args.keep, args.verbose)
            why = None
            if not ok and tcg_patching_artifact(summary["rundir"]):
                why = ("the guest oopsed on a text-patching int3 that is no "
                       "longer in the code (a TCG artifact, see logcheck.INT3_OOPS)")
            elif not ok and summary["boot_hung"]:
                why = ("the guest kernel hung before /init, where no nmiprof "
                       "code had run yet (see BOOT_LIMIT_S)")
            if why:
                print("bench: note: %s; running %s on %s once more" % (why, s.name, k),
                      flush=True)
                ok, _ = run_one(s, k, build_dir, args.keep, args.verbose)
            if not ok:
                failed.append("%s on %s" % (s.name, k))
    if failed:
        print("bench: FAILED: " + ", ".join(failed))
    return 1 if failed else 0


def boot_time(kernels, build_dir):
    """Boot each kernel with a minimal /init (busybox only) and report the
    host wall clock from QEMU's start to /init, and to power-off."""
    workdir = os.path.join(build_dir, "tests", "qemu", "runs")
    for k in kernels:
        accel, _ = accel_verdict(k, workdir)
        with tempfile.TemporaryDirectory(prefix="nmiprof-boot-") as tmp:
            cpio = Cpio()
            cpio.file("/bin/busybox", shutil.which("busybox"), 0o755)
            cpio.chardev("/dev/console", 5, 1)
            cpio.data("/init", "#!/bin/busybox sh\n/bin/busybox echo %s\n"
                      "/bin/busybox poweroff -f\n" % INIT_MARK, 0o755)
            initrd = os.path.join(tmp, "i.cpio")
            cpio.write(initrd)
            console = os.path.join(tmp, "console.log")
            g = Guest(qemu_cmd(kernels_sh("vmlinuz", k), initrd, accel, 2, 512,
                               "console=ttyS0 panic=-1", console, "/dev/null", None), console)
            t_init = None
            while g.running() and time.monotonic() - g.start < 120:
                g.poll_console()
                if t_init is None and INIT_MARK in g.text:
                    t_init = time.monotonic() - g.start
                time.sleep(0.02)
            g.kill()
            print("%s: %s boot to /init %s, to power-off %.2f s" % (
                k, accel, "%.2f s" % t_init if t_init else "never",
                time.monotonic() - g.start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
