"""The rules' fast tests (tests/rules/README.md), in the style of Perfetto's diff tests: each case is a small trace
built here from nothing (mkdb's empty trace of the real schema, then base.sql and the case's .sql run by SQLite),
`ggprof report --format json --verbose` run on it, and its findings (and, where the case asks, its accounting)
compared with expected/CASE.json as `diff -u` does. No llama.cpp, no fixture. One interpreter for every case: the
whole set takes a few seconds of CPU.

A case's header says what must hold besides: "-- fires: RULE..." (the rules that fire, or "none"), "-- args: ..."
(report's options), "-- accounting" (compare the accounting too), "-- silent: RULE..." (exactly the rules report
--verbose says are silent for want of a table or an input: a typo in a column name reads as a missing column).
GGPROF_UPDATE_GOLDEN=1 rewrites expected/ from the current output (review the diff before committing).
usage: run.py [CASE...]   (without CASE: every case, then docs/findings.md's thresholds against the rule table)"""
import concurrent.futures
import difflib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GGPROF = os.environ.get("GGPROF", os.path.join(ROOT, "build/bin/ggprof"))
MKDB = os.environ.get("GGPROF_RULES_MKDB", os.path.join(os.path.dirname(GGPROF), "../tests/rules/mkdb"))
OUT = os.path.join(os.environ.get("GGPROF_TEST_OUT", os.path.join(ROOT, "build/test-out")), "rules")
UPDATE = os.environ.get("GGPROF_UPDATE_GOLDEN", "") not in ("", "0")
SILENT = re.compile(r"^ggprof: report: rule ([a-z_]+) is silent: ", re.M)


def header(sql, key):
    """The case's "-- key: value" line's value, or None when it has none."""
    m = re.search(r"^-- %s:?[ \t]*(.*)$" % key, sql, re.M)
    return m.group(1).strip() if m else None


def run_case(name, empty, base):
    """One case: None when it holds, else why not."""
    path = os.path.join(HERE, "cases", name + ".sql")
    if not os.path.exists(path):
        return "no case " + path
    sql = open(path).read()
    db = os.path.join(OUT, name + ".db")
    shutil.copy(empty, db)
    try:
        con = sqlite3.connect(db)
        con.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;\n" + base + "\n" + sql +
                          "\nCOMMIT;")
        con.close()
    except sqlite3.Error as e:
        return "building the trace: %s" % e
    args = (header(sql, "args") or "").split()
    r = subprocess.run([GGPROF, "report", db, "--format", "json", "--verbose"] + args, capture_output=True, text=True)
    open(os.path.join(OUT, name + ".stderr"), "w").write(r.stderr)
    if r.returncode != 0:
        return "report exited %d: %s" % (r.returncode, r.stderr.strip().splitlines()[0] if r.stderr.strip() else "")
    try:
        d = json.loads(r.stdout)
    except ValueError as e:
        return "report's JSON did not parse: %s" % e
    out = {"findings": d["findings"]}
    if header(sql, "accounting") is not None:
        out["accounting"] = [{k: p[k] for k in ("pid", "wall_ns", "categories")} for p in d["accounting"]]
    got_text = json.dumps(out, indent=1, sort_keys=True) + "\n"
    open(os.path.join(OUT, name + ".json"), "w").write(got_text)
    fires = header(sql, "fires")
    if not fires:
        return "the case has no '-- fires:' line"
    want = sorted(fires.split()) if fires != "none" else []
    got = sorted(f["rule"] for f in d["findings"])
    if got != want:
        return "fired: %s; the case says: %s" % (" ".join(got) or "none", " ".join(want) or "none")
    silent = header(sql, "silent")
    said = sorted(SILENT.findall(r.stderr))
    if silent is not None and said != sorted(silent.split()):
        return "report --verbose says silent: %s; the case says: %s" % (" ".join(said) or "none", silent or "none")
    exp = os.path.join(HERE, "expected", name + ".json")
    if UPDATE:
        open(exp, "w").write(got_text)
        return None
    if not os.path.exists(exp):
        return "no expected/%s.json (GGPROF_UPDATE_GOLDEN=1 writes it)" % name
    want_text = open(exp).read()
    if want_text == got_text:
        return None
    diff = difflib.unified_diff(want_text.splitlines(True), got_text.splitlines(True), "expected/%s.json" % name,
                                os.path.join(OUT, name + ".json"))
    return "findings differ from expected/%s.json:\n%s" % (name, "".join("#   " + x for x in list(diff)[:40]))


def check_doc():
    """docs/findings.md's table of thresholds against `ggprof report --list-rules --format json`: None, or why."""
    r = subprocess.run([GGPROF, "report", "--list-rules", "--format", "json"], capture_output=True, text=True)
    if r.returncode != 0:
        return "report --list-rules exited %d: %s" % (r.returncode, r.stderr.strip())
    rules = json.loads(r.stdout)["rules"]
    code = {(x["rule"], p["name"]): (p["value"], p["unit"]) for x in rules for p in x["params"]}
    text = open(os.path.join(ROOT, "docs/findings.md")).read()
    if text.count("<!-- thresholds -->") != 2:
        return "docs/findings.md: no table between two '<!-- thresholds -->' markers"
    doc = {}
    for line in text.split("<!-- thresholds -->")[1].splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or cells[0] in ("rule", "") or set(cells[0]) <= set("-"):
            continue
        try:
            doc[(cells[0], cells[1])] = (float(cells[2]), cells[3])
        except ValueError:
            return "docs/findings.md: thresholds row '%s': value '%s' is not a number" % (line.strip(), cells[2])
    bad = []
    for k, v in code.items():
        if k not in doc:
            bad.append("%s.%s = %g %s is in the rule table, not in the doc" % (k[0], k[1], v[0], v[1]))
        elif doc[k] != v:
            bad.append("%s.%s: the doc says %g %s, the code %g %s" % (k[0], k[1], doc[k][0], doc[k][1], v[0], v[1]))
    bad += ["%s.%s is in the doc, not in the rule table" % k for k in doc if k not in code]
    return "; ".join(bad) or None


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    empty = os.path.join(OUT, "empty.db")
    if not os.access(MKDB, os.X_OK) or subprocess.run([MKDB, empty]).returncode != 0:
        print("not ok - rules/setup: %s did not make an empty trace (make unit builds it)" % MKDB)
        return 1
    base = open(os.path.join(HERE, "base.sql")).read()
    names = sys.argv[1:] or sorted(f[:-4] for f in os.listdir(os.path.join(HERE, "cases")) if f.endswith(".sql"))
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda n: (n, run_case(n, empty, base)), names))
    if not sys.argv[1:]:
        results.append(("docs-thresholds", check_doc()))
    failed = 0
    for name, why in results:
        if why:
            failed += 1
            print("not ok - rules/%s: %s" % (name, why))
        else:
            print("ok - rules/%s%s" % (name, " (expected rewritten)" if UPDATE and name != "docs-thresholds" else ""))
    print("# rules: %d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
