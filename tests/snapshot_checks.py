"""What the snapshot tests share: snapshot_crash's chain, the PCs of its in-process report, and
the frames of stackwalk-dump --json (snapshot_dump_test.py, snapshot_crossarch_test.py); the
threads of snapshot_threads and their chains (snapshot_threads_test.py, and
snapshot_crossarch_test.py under qemu-user)."""
import json
import os
import re
import subprocess
import sys

# main -> snapshot_a1 -> snapshot_a2 -> snapshot_lib_entry -> snapshot_lib_fault, innermost first.
CHAIN = ["snapshot_lib_fault", "snapshot_lib_entry", "snapshot_a2", "snapshot_a1", "main"]
REPORT_FRAME = re.compile(r"^#(\d+) (pc|ra) 0x([0-9a-f]+) ")


def report_pcs(report):
    """The PCs of the crash handler's report, frame by frame."""
    return [int(m.group(3), 16) for m in map(REPORT_FRAME.match, report.splitlines()) if m]


def walk_pcs(out):
    """The trace's PCs (one per index; inline frames share their index's)."""
    seen, pcs = set(), []
    for f in out["threads"][0]["frames"]:
        if f["index"] not in seen:
            seen.add(f["index"])
            pcs.append(int(f["pc"], 16))
    return pcs


def functions(out):
    return [f.get("function", "") for f in out["threads"][0]["frames"]]


def chain_in_order(names, chain=CHAIN):
    at = 0
    for n in names:
        if at < len(chain) and n == chain[at]:
            at += 1
    return at == len(chain)


failures = []


def check(ok, what):
    """Records a failed check (the script goes on, to report every one)."""
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run_dump(tool, *args):
    """stackwalk-dump with `args`; dying of a signal is a failure."""
    p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
    check(p.returncode >= 0, f"stackwalk-dump {args} died of signal {-p.returncode}")
    return p


# snapshot_threads: each thread's name and the chain it is in at the crash, innermost first; the
# thread that blocks every signal is never captured.
THREAD_CHAINS = {
    "sw-main": ["snapshot_fault", "snapshot_crash2", "snapshot_crash1", "main"],
    "sw-alpha": ["snapshot_park", "snapshot_alpha2", "snapshot_alpha1", "alpha"],
    "sw-beta": ["snapshot_park", "snapshot_beta3", "snapshot_beta2", "snapshot_beta1", "beta"],
}
BLOCKED_THREAD = "sw-blocked"
# With "both": the thread that crashed while main's handler ran, found waiting in its own crash
# handler and unwound from its fault; and the thread that let it crash.
SECOND_CRASH_CHAIN = ["snapshot_fault", "snapshot_gamma1", "gamma_thread"]
BOTH_THREADS = {"sw-gamma", "sw-drain"}
SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "schema")


def check_schema(out):
    """The whole of stackwalk-dump --snapshot --json against snapshot_dump.schema.json, its frames
    against frame.schema.json."""
    import jsonschema
    from referencing import Registry, Resource
    schemas = {}
    for name in ("frame", "snapshot_dump"):
        with open(os.path.join(SCHEMA_DIR, name + ".schema.json")) as f:
            schemas[name] = json.load(f)
    registry = Registry().with_resources(
        [(s["$id"], Resource.from_contents(s)) for s in schemas.values()])
    validator = jsonschema.Draft202012Validator(schemas["snapshot_dump"], registry=registry)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(out)]
    check(not errors, f"the output against snapshot_dump.schema.json: {errors[:3]}")


def check_threads(out, emulated, both=False):
    """snapshot_threads' snapshot as stackwalk-dump --json gives it: the crashing thread first and
    alone marked, every thread named, each captured one unwound through its chain to the end of its
    stack, the blocking one listed as not captured because it blocks the signal (qemu-user keeps
    the host thread's mask in step with the guest's)."""
    threads = out["threads"]
    by_name = {t["name"]: t for t in threads}
    check(all(t["crash_signal"] == 0 for t in threads if t["name"] != "sw-gamma"),
          "no other thread crashed")
    check([t["crashed"] for t in threads][:1] == [True] and
          sum(t["crashed"] for t in threads) == 1 and threads[0]["name"] == "sw-main",
          f"the crashing thread first, alone marked: {[(t['name'], t['crashed']) for t in threads]}")
    check(threads[0]["tid"] == out["pid"], f"it is the main thread: {threads[0]['tid']}")
    names = {t["name"] for t in threads}
    expected = set(THREAD_CHAINS) | {BLOCKED_THREAD} | (BOTH_THREADS if both else set())
    # qemu-user has threads of its own besides the guest's (listed, not captured).
    check(names == expected if not emulated else expected <= names,
          f"every thread listed by name: {sorted(names)}")
    check(len({t["tid"] for t in threads}) == len(threads), "each tid once")
    for name, chain in THREAD_CHAINS.items():
        t = by_name.get(name)
        if t is None:
            continue
        functions = [f.get("function", "") for f in t["frames"]]
        check(t["captured"] and t["not_captured"] == "" and t["stack_bytes"] > 0,
              f"{name} captured: {t['not_captured']}")
        check(chain_in_order(functions, chain), f"{name}: {chain} in order in {functions}")
        check(t["end"] == "end of stack", f"{name}: the walk reaches the end of its stack: {t['end']}")
        check(t["frame_trust"][:1] == ["context"], f"{name}: #0 from its registers")
    if both:
        t = by_name.get("sw-gamma", {"captured": False, "frames": [], "end": "", "crash_signal": 0})
        functions = [f.get("function", "") for f in t["frames"]]
        check(t["captured"] and t["crash_signal"] == 11 and functions[:1] == ["snapshot_fault"] and
              chain_in_order(functions, SECOND_CRASH_CHAIN) and t["end"] == "end of stack",
              f"sw-gamma, crashed meanwhile, unwound from its fault: {t['crash_signal']} {functions}")
    blocked = by_name.get(BLOCKED_THREAD)
    if blocked is not None:
        why = blocked["not_captured"]
        check(not blocked["captured"] and blocked["frames"] == [] and
              why.startswith("blocks the capture signal"),
              f"{BLOCKED_THREAD} listed as not captured, with the reason: {why!r}")


def finish(name):
    if failures:
        print(f"{len(failures)} checks failed")
        sys.exit(1)
    print(f"{name}: all checks passed")
