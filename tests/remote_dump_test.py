#!/usr/bin/env python3
"""stackwalk-dump PID on a live fixture (issue 20).

remote_threads parks threads in known chains of noinline functions, built -O2 without frame
pointers (only CFI unwinds them), one chain through a shared library. The test checks each
thread's chain in order in --json and in text, that every thread was stopped and resumed (the
fixture still answers and exits 0), that eu-stack on the same process finds the same fixture
frames in the same order, a process with 200 threads, and the errors: a missing process, a
process another tracer holds, a process of another user.

Every frame of --json is checked against docs/schema/frame.schema.json.

usage: remote_dump_test.py STACKWALK_DUMP REMOTE_THREADS
"""
import ctypes
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

DUMP, FIXTURE = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "docs", "schema", "frame.schema.json")

# Innermost first, as the dump lists frames; then glibc's thread start, which ends the stack.
CHAINS = {
    "chain-a": ["remote_park", "chain_a3", "chain_a2", "chain_a1", "thread_a"],
    "chain-b": ["remote_park", "chain_b5", "chain_b4", "chain_b3", "chain_b2", "chain_b1",
                "thread_b"],
    "via-lib": ["remote_park", "lib_callback", "remote_lib_inner", "remote_lib_outer",
                "chain_lib", "thread_lib"],
    "fp-lib": ["remote_park", "fp_callback", "remote_fp_inner", "remote_fp_outer", "chain_fp",
               "thread_fp"],
    "debug-frame": ["remote_park", "dwarf_callback", "remote_dwarf_inner", "remote_dwarf_outer",
                    "chain_dwarf", "thread_dwarf"],
}
# The frames found by the frame-pointer step: the callers of the two functions of the library
# without unwind information (no FDE covers them); every other frame by CFI (.debug_frame's
# through remote_dwarf_*).
FP_FOUND = {"remote_fp_outer", "chain_fp"}
FIXTURE_NAME = re.compile(r"^(remote_|chain_|(lib|fp|dwarf)_callback|thread_(a|b|lib|fp|dwarf)$|main$)")
READ_SYSCALL = {"x86_64": 0, "aarch64": 63}[platform.machine()]

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)
    return ok


class Fixture:
    def __init__(self, extra_threads=0):
        self.proc = subprocess.Popen([FIXTURE, str(extra_threads)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("ready"), line
        self.pid = self.proc.pid
        self.threads = 6 + extra_threads
        # Every thread inside read(): the fixture counts a thread as parked just before.
        deadline = time.monotonic() + 60
        while not self.all_in_read():
            assert time.monotonic() < deadline, "fixture threads never reached read()"
            time.sleep(0.01)

    def all_in_read(self):
        tids = os.listdir(f"/proc/{self.pid}/task")
        if len(tids) != self.threads:
            return False
        for tid in tids:
            with open(f"/proc/{self.pid}/task/{tid}/syscall") as f:
                if f.read().split()[0] != str(READ_SYSCALL):
                    return False
        return True

    def finish(self):
        """Asks the fixture to exit: it can only if the dump resumed every thread it stopped."""
        out, _ = self.proc.communicate("quit\n", timeout=60)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def dump_for_another_user():
    """A copy of the dumper another user can run, and the LD_LIBRARY_PATH it needs: the build tree
    may lie in a directory only its owner enters (mktemp -d makes one 0700, as CI's clone is), so
    the binary and the project's libraries it loads (those outside the system's directories) are
    copied to a world-readable directory."""
    copy = tempfile.mkdtemp(prefix="remote_dump_user.")
    os.chmod(copy, 0o755)
    shutil.copy2(DUMP, copy)
    ldd = subprocess.run(["ldd", DUMP], capture_output=True, text=True).stdout
    for line in ldd.splitlines():
        m = re.search(r"=> (/\S+)", line)
        if m and not m.group(1).startswith(("/lib", "/usr/")):
            shutil.copy2(m.group(1), copy)
    for name in os.listdir(copy):
        os.chmod(os.path.join(copy, name), 0o755)
    return os.path.join(copy, os.path.basename(DUMP)), copy


def copy_readable(path, directory):
    """`path` copied into `directory`, readable by every user; the copy's path."""
    copy = os.path.join(directory, os.path.basename(path))
    shutil.copy2(path, copy)
    os.chmod(copy, 0o644)
    return copy


def run_dump(*args, user=None):
    cmd = [DUMP, *map(str, args)]
    env = None
    if user is not None:
        dump, libs = dump_for_another_user()
        env = dict(os.environ, LD_LIBRARY_PATH=libs)
        # A sanitizer's options may name a file in the same unreadable tree (the TSan run's
        # suppressions): the other user gets a copy of it too.
        for name in ("TSAN_OPTIONS", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if name in env:
                env[name] = re.sub(r"suppressions=([^:]+)",
                                   lambda m: "suppressions=" + copy_readable(m.group(1), libs),
                                   env[name])
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", dump,
               *map(str, args)]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    finally:
        if user is not None:
            shutil.rmtree(libs, ignore_errors=True)


def functions(frames):
    return [f["function"] for f in frames]


def fixture_names(names):
    return [n for n in names if FIXTURE_NAME.match(n)]


def check_chains(dump, fixture, label):
    threads = dump["threads"]
    check(len(threads) == fixture.threads,
          f"{label}: {len(threads)} threads listed, {fixture.threads} expected")
    check(threads[0]["tid"] == fixture.pid, f"{label}: the main thread first")
    by_name = {}
    for t in threads:
        check(t["error"] == "", f"{label}: thread {t['tid']} not read: {t['error']}")
        by_name.setdefault(t["name"], []).append(t)
        names = functions(t["frames"])
        if t["tid"] == fixture.pid:
            check("main" in names and "__libc_start_main_impl" in " ".join(names),
                  f"{label}: main thread's chain {names}")
            continue
        chain = CHAINS["chain-a" if t["name"].startswith("many-") else t["name"]]
        # The chain in order, right after libc's read frames, up to glibc's thread start.
        at = names.index(chain[0]) if chain[0] in names else -1
        check(at >= 1 and names[at:at + len(chain)] == chain,
              f"{label}: thread {t['name']} chain {names}, expected {chain} after read")
        check(all("read" in n for n in names[:at]),
              f"{label}: thread {t['name']} frames before the chain are read's: {names[:at]}")
        check(t["end"] == "end of stack", f"{label}: thread {t['name']} ended '{t['end']}'")
        check("start_thread" in names[at + len(chain):],
              f"{label}: thread {t['name']} reaches start_thread: {names}")
        # How each frame was found: fp exactly where no table covers the frame below.
        trust = t["frame_trust"]
        check(len(trust) == max(f["index"] for f in t["frames"]) + 1 and trust[0] == "context",
              f"{label}: thread {t['name']} frame_trust {trust}")
        outer = {f["index"]: f["function"] for f in t["frames"]}  # the last of each index
        for i in range(1, len(trust)):
            want = "fp" if outer[i] in FP_FOUND else "cfi"
            check(trust[i] == want,
                  f"{label}: thread {t['name']} frame {i} ({outer[i]}) found by {trust[i]}")
    for name in CHAINS:
        check(len(by_name.get(name, [])) == 1, f"{label}: one thread named {name}")
    return by_name


def eu_stack_chains(pid):
    """eu-stack's frames per tid: {tid: [function, ...]}."""
    out = subprocess.run(["eu-stack", "-p", str(pid)], capture_output=True, text=True,
                         timeout=120)
    check(out.returncode == 0, f"eu-stack failed: {out.stderr}")
    chains, tid = {}, None
    for line in out.stdout.splitlines():
        m = re.match(r"^TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            chains[tid] = []
            continue
        m = re.match(r"^#\d+\s+0x[0-9a-f]+\s*(\S*)", line)
        if m and tid is not None:
            chains[tid].append(m.group(1).split("@")[0])
    return chains


def test_chains_and_eu_stack():
    fixture = Fixture()
    try:
        out = run_dump("--json", fixture.pid)
        check(out.returncode == 0, f"dump exit {out.returncode}: {out.stderr}")
        dump = json.loads(out.stdout)
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"dump.{os.getpid()}.json"),
                  "w") as f:
            f.write(out.stdout)
        schema = subprocess.run([sys.executable, os.path.join(HERE, "check_frames.py"), SCHEMA,
                                 "dump", f.name], capture_output=True, text=True)
        os.unlink(f.name)
        check(schema.returncode == 0, f"frames against frame.schema.json: {schema.stdout}")
        check(dump["pid"] == fixture.pid and dump["name"] == "remote_threads",
              f"process {dump['pid']} {dump['name']}")
        check_chains(dump, fixture, "json")
        # Every stop is measured and reported; the total is their sum.
        check(all(t["stopped_us"] > 0 for t in dump["threads"]), "each thread's stop measured")
        check(dump["stopped_us_total"] == sum(t["stopped_us"] for t in dump["threads"]),
              "stopped_us_total is the sum")

        text = run_dump(fixture.pid)
        check(text.returncode == 0, f"text dump exit {text.returncode}")
        for t in dump["threads"]:
            check(re.search(rf"^Thread {t['tid']} \({re.escape(t['name'])}\):  stopped \d+ us",
                            text.stdout, re.M) is not None, f"text: Thread {t['tid']} line")
        check(re.search(r"^#3 0x[0-9a-f]+ in chain_a2 at .*remote_threads\.c:\d+:\d+ \(",
                        text.stdout, re.M) is not None, "text: chain_a2 with file:line")

        bare = run_dump("--no-names", "--max-frames", "3", fixture.pid)
        check(bare.returncode == 0, "--no-names exit")
        check(not re.search(r"^#.* in ", bare.stdout, re.M) and "frame limit reached" in bare.stdout,
              f"--no-names --max-frames 3: {bare.stdout[:400]}")

        if shutil.which("eu-stack"):
            eu = eu_stack_chains(fixture.pid)
            for t in dump["threads"]:
                ours = fixture_names(functions(t["frames"]))
                theirs = fixture_names(eu.get(t["tid"], []))
                check(ours == theirs and ours,
                      f"thread {t['name']}: stackwalk-dump {ours} vs eu-stack {theirs}")
        else:
            check(False, "eu-stack is not installed (scripts/setup.sh installs elfutils)")
        check(fixture.finish() == 0, "the fixture ran on after the dumps and exited 0")
    finally:
        fixture.kill()


def test_many_threads():
    fixture = Fixture(extra_threads=200)
    try:
        out = run_dump("--json", fixture.pid)
        check(out.returncode == 0, f"200 threads: exit {out.returncode}: {out.stderr[:300]}")
        dump = json.loads(out.stdout)
        check_chains(dump, fixture, "200 threads")
        check(sum(t["name"].startswith("many-") for t in dump["threads"]) == 200, "200 many-*")
        check(fixture.finish() == 0, "200 threads: the fixture exited 0")
    finally:
        fixture.kill()


def test_errors():
    with open("/proc/sys/kernel/pid_max") as f:
        missing = int(f.read()) + 1
    out = run_dump(missing)
    check(out.returncode == 1 and f"no process {missing}" in out.stderr,
          f"missing process: {out.returncode} {out.stderr}")
    out = run_dump("--max-frames", "0", 1)
    check(out.returncode == 2, "usage error exits 2")

    # Another tracer holds the main thread: those threads are refused, with the reason.
    fixture = Fixture()
    libc = ctypes.CDLL(None, use_errno=True)
    PTRACE_SEIZE = 0x4206
    try:
        check(libc.ptrace(PTRACE_SEIZE, fixture.pid, None, None) == 0, "test seizes the fixture")
        out = run_dump(fixture.pid)
        check(out.returncode == 1, f"traced elsewhere: exit {out.returncode}")
        check(f"already traced by process {os.getpid()}" in out.stdout,
              f"traced elsewhere: reason {out.stdout[:600]}")
        check("chain_b2" in out.stdout, "traced elsewhere: the other threads still dumped")
    finally:
        fixture.kill()

    # Another user's process: refused before any thread is touched.
    fixture = Fixture()
    try:
        if os.getuid() == 0:
            out = run_dump(fixture.pid, user=65534)
        else:
            out = run_dump(1)  # init, root's
        check(out.returncode == 1 and "ptrace refused" in out.stderr,
              f"another user's process: {out.returncode} {out.stderr}")
        check(fixture.finish() == 0, "refused dump: the fixture exited 0")
    finally:
        fixture.kill()


def main():
    test_chains_and_eu_stack()
    test_many_threads()
    test_errors()
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("remote_dump_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
