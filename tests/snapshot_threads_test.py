#!/usr/bin/env python3
"""Every thread of a crash in its snapshot (issue 20): snapshot_threads parks three threads in
known chains (one of them blocking every signal), then dies in a fourth, of SIGSEGV and, in a
second run, of SIGABRT; stackwalk-dump --snapshot unwinds the snapshot. Checks:
  - the process still dies of its signal, with the status that signal gives;
  - the handler's report says how many other threads it captured (2 of 3);
  - the crashing thread comes first, marked, and its walk is the in-process report's, PC for PC;
  - every other thread is listed by tid and name; each captured one unwinds through its chain to
    the end of its stack; the one blocking the signal is listed as not captured, with the reason;
  - a second thread that crashes while the first one's handler runs does not deadlock it, and
    is captured with its registers at its fault, said to have crashed too, and unwound from there
    through its chain;
  - the JSON against docs/schema/snapshot_dump.schema.json (frames: frame.schema.json), and the
    text output says the same.

usage: snapshot_threads_test.py STACKWALK_DUMP SNAPSHOT_THREADS
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from snapshot_checks import (check, check_schema, check_threads, finish, report_pcs, run_dump,
                             walk_pcs)

DUMP, FIXTURE = sys.argv[1], sys.argv[2]

work = tempfile.mkdtemp(prefix="snapshot_threads_test.")
try:
    for how, sig in (("segv", signal.SIGSEGV), ("abort", signal.SIGABRT)):
        report_path = os.path.join(work, how + ".report")
        snap = os.path.join(work, how + ".snapshot")
        p = subprocess.run([FIXTURE, report_path, snap, how], capture_output=True, text=True,
                           timeout=60)
        check(p.returncode in (-sig, 128 + sig),
              f"{how}: the fixture died of {sig.name} (status {p.returncode}, {p.stderr})")
        report = open(report_path).read()
        check(re.search(r"^\*\*\* snapshot .*: \d+ bytes, \d+ of stack, \d+ modules, 2 of 3 other "
                        r"threads captured \([1-9]\d* bytes of their stacks\)$", report, re.M)
              is not None, f"{how}: the report counts the threads captured: {report}")
        p = run_dump(DUMP, "--json", "--snapshot", snap)
        check(p.returncode == 0, f"{how}: --snapshot exits 0 ({p.stderr})")
        out = json.loads(p.stdout)
        check(out["complete"] and out["signal"] == sig, f"{how}: complete, {sig.name}")
        check_schema(out)
        check_threads(out, emulated=False)
        check(walk_pcs(out) == report_pcs(report),
              f"{how}: the crashing thread's walk == the in-process report:\n"
              f"  {list(map(hex, walk_pcs(out)))}\n  {list(map(hex, report_pcs(report)))}")
        text = run_dump(DUMP, "--snapshot", snap).stdout
        blocks = re.findall(r"^Thread (\d+) \(([^)]*)\): (.*)$", text, re.M)
        check([b[1] for b in blocks][:1] == ["sw-main"] and blocks[0][2].startswith("crashed,"),
              f"{how}: text: the crashing thread first, marked: {blocks}")
        check(any(b[1] == "sw-blocked" and b[2].startswith("not captured: blocks the capture "
                                                           "signal") for b in blocks),
              f"{how}: text: the blocking thread not captured, and why: {blocks}")
        check(sorted(int(b[0]) for b in blocks) == sorted(t["tid"] for t in out["threads"]),
              f"{how}: text and JSON list the same threads")
        check("in snapshot_beta1 at" in text and "in snapshot_alpha1 at" in text,
              f"{how}: text: the parked chains named with their lines")

    # A second thread crashes while main's handler runs (the fixture makes sure of the order):
    # no deadlock, and the capture finds it waiting in its own crash handler.
    report_path, snap = os.path.join(work, "both.report"), os.path.join(work, "both.snapshot")
    p = subprocess.run([FIXTURE, report_path, snap, "both"], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode in (-signal.SIGSEGV, 128 + signal.SIGSEGV),
          f"both: the fixture died of SIGSEGV (status {p.returncode}, {p.stderr})")
    p = run_dump(DUMP, "--json", "--snapshot", snap)
    check(p.returncode == 0, f"both: --snapshot exits 0 ({p.stderr})")
    out = json.loads(p.stdout)
    check(out["complete"], "both: complete")
    check_schema(out)
    check_threads(out, emulated=False, both=True)
    text = run_dump(DUMP, "--snapshot", snap).stdout
    check(re.search(r"^Thread \d+ \(sw-gamma\): crashed too \(SIGSEGV\) while the report was "
                    r"written, \d+ frames", text, re.M) is not None,
          f"both: text: the second crash said: {text}")
finally:
    shutil.rmtree(work, ignore_errors=True)

finish("snapshot_threads_test")
