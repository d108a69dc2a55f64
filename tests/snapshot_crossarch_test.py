#!/usr/bin/env python3
"""A crash under qemu-user unwound on the x86_64 host (issue 20): the aarch64 or arm32 build's
snapshot_crash dies of SIGSEGV under its emulator, writing its crash handler's report (the
in-process walk) and a snapshot; the native build's stackwalk-dump --snapshot then unwinds the
snapshot with the target's unwinders compiled into the host tool, the objects' files found under
a sysroot made of the cross-built fixture and the emulator's prefix (qemu's -L: the target's libc
and loader). Checks:
  - the host's walk equals the in-process report, PC for PC, to the end of the stack;
  - every frame after the first was found by the target's tables (CFI on aarch64, .ARM.exidx on
    arm32), and the chain is named in order by the symbolizer reading the foreign ELF;
  - without the sysroot the target's libc is not found, and said (the sysroot is what is used);
  - snapshot_threads, crashing under the emulator with three threads parked in known chains,
    has every thread unwound on the host through its chain, by name (snapshot_checks.py).
Registered by the cross builds (tests/CMakeLists.txt), with the native tool scripts/test.sh
builds first.

usage: snapshot_crossarch_test.py HOST_STACKWALK_DUMP SNAPSHOT_CRASH SNAPSHOT_THREADS EMULATOR [ARGS...]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from snapshot_checks import (chain_in_order, check, check_schema, check_threads, finish,
                             functions, report_pcs, run_dump, walk_pcs)

DUMP, FIXTURE, THREADS = sys.argv[1], sys.argv[2], sys.argv[3]
EMULATOR = [a for a in sys.argv[4:] if a]
LIB = os.path.join(os.path.dirname(FIXTURE), "libsnapshot_crash_lib.so")
# The emulator's prefix for the target's own files (qemu-user -L DIR).
PREFIX = EMULATOR[EMULATOR.index("-L") + 1] if "-L" in EMULATOR[:-1] else ""


def dump(*args):
    return run_dump(DUMP, *args)


def make_sysroot(snap, root):
    """The objects as the target saw them: under the emulator's prefix where it has them (qemu
    looks there first), else at their own path (the fixture, its library, libstackwalk)."""
    p = dump("--json", "--no-names", "--snapshot", snap)
    for m in json.loads(p.stdout)["modules"]:
        path = m["path"]
        if not path.startswith("/") or os.path.lexists(root + path):
            continue
        source = PREFIX + path if os.path.exists(PREFIX + path) else path
        if os.path.isfile(source):
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            os.symlink(os.path.realpath(source), root + path)


if not EMULATOR or not PREFIX:
    print(f"FAIL: an emulator with -L PREFIX is needed, got {EMULATOR}")
    sys.exit(1)
work = tempfile.mkdtemp(prefix="snapshot_crossarch_test.")
try:
    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir)
    exe = os.path.join(bin_dir, "snapshot_crash")
    shutil.copy2(FIXTURE, exe)
    shutil.copy2(LIB, os.path.join(bin_dir, "libsnapshot_crash_lib.so"))
    report_path, snap = os.path.join(work, "report.txt"), os.path.join(work, "crash.snapshot")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bin_dir + ":" + env.get("LD_LIBRARY_PATH", "")
    p = subprocess.run(EMULATOR + [exe, report_path, snap], env=env, capture_output=True,
                       text=True, timeout=120)
    check(p.returncode in (-signal.SIGSEGV, 128 + signal.SIGSEGV),
          f"the fixture died of SIGSEGV under {EMULATOR[0]} (status {p.returncode}, {p.stderr})")
    report = open(report_path).read()
    in_process = report_pcs(report)
    check(len(in_process) >= 6, f"the report has the chain and libc's frames: {report}")

    root = os.path.join(work, "root")
    make_sysroot(snap, root)

    p = dump("--json", "--snapshot", snap, "--sysroot", root)
    check(p.returncode == 0, f"--snapshot --sysroot exits 0 (stderr: {p.stderr})")
    out = json.loads(p.stdout)
    machine = out["machine"]
    check(machine in ("aarch64", "arm"), f"a snapshot of the target's architecture: {machine}")
    check(out["complete"] and out["signal"] == signal.SIGSEGV, "complete, SIGSEGV")
    check(walk_pcs(out) == in_process,
          f"{machine} snapshot walked on the host == in-process report:\n"
          f"  {list(map(hex, walk_pcs(out)))}\n  {list(map(hex, in_process))}")
    thread = out["threads"][0]
    check(thread["end"] == "end of stack", f"the walk reaches the end of the stack: {thread['end']}")
    table = "cfi" if machine == "aarch64" else "ehabi"
    check(thread["frame_trust"][:1] == ["context"] and
          all(t == table for t in thread["frame_trust"][1:]),
          f"every frame found by the {machine} tables ({table}): {thread['frame_trust']}")
    check(chain_in_order(functions(out)), f"the chain named in order: {functions(out)}")
    # The faulting function's file:line, through libdw from the foreign ELF's DWARF.
    fault = [f for f in thread["frames"] if f.get("function") == "snapshot_lib_fault"]
    check(len(fault) == 1 and fault[0].get("file", "").endswith("snapshot_crash_lib.c") and
          fault[0].get("line", 0) > 0, f"snapshot_lib_fault's file:line: {fault}")
    check(all(m["error"] == "" for m in out["modules"] if not m["path"].startswith("[")),
          f"every object found and read: {[(m['path'], m['error']) for m in out['modules']]}")

    # Without the sysroot the target's libc is not on this host: its frames are lost, and said.
    p = dump("--snapshot", snap)
    check(p.returncode == 0, f"without --sysroot: still exit 0 ({p.stderr})")
    check("libc.so.6: cannot open" in p.stdout, f"the missing libc is named: {p.stdout}")

    # Every thread of a crash, captured under the emulator and unwound on the host.
    threads_exe = os.path.join(bin_dir, "snapshot_threads")
    shutil.copy2(THREADS, threads_exe)
    threads_snap = os.path.join(work, "threads.snapshot")
    p = subprocess.run(EMULATOR + [threads_exe, os.path.join(work, "threads.report"),
                                   threads_snap, "segv"],
                       env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode in (-signal.SIGSEGV, 128 + signal.SIGSEGV),
          f"snapshot_threads died of SIGSEGV under {EMULATOR[0]} (status {p.returncode}, {p.stderr})")
    make_sysroot(threads_snap, root)
    p = dump("--json", "--snapshot", threads_snap, "--sysroot", root)
    check(p.returncode == 0, f"snapshot_threads: --snapshot --sysroot exits 0 (stderr: {p.stderr})")
    out = json.loads(p.stdout)
    check_schema(out)
    check_threads(out, emulated=True)
finally:
    shutil.rmtree(work, ignore_errors=True)

finish("snapshot_crossarch_test")
