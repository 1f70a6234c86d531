"""docs/findings.md's table of thresholds (between its "<!-- thresholds -->" markers) against the rule table as
`ggprof report --list-rules --format json` prints it: every rule's every parameter, value and unit, both ways.
usage: check_doc.py RULES.json FINDINGS.md; exits 1 with a line per difference."""
import json
import sys

rules = json.load(open(sys.argv[1]))["rules"]
code = {(r["rule"], p["name"]): (p["value"], p["unit"]) for r in rules for p in r["params"]}
text = open(sys.argv[2]).read()
if text.count("<!-- thresholds -->") != 2:
    sys.exit("docs/findings.md: no table between two '<!-- thresholds -->' markers")
table = text.split("<!-- thresholds -->")[1]
doc = {}
for line in table.splitlines():
    cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
    if len(cells) < 4 or cells[0] in ("rule", "") or set(cells[0]) <= set("-"):
        continue
    try:
        doc[(cells[0], cells[1])] = (float(cells[2]), cells[3])
    except ValueError:
        sys.exit(f"docs/findings.md: thresholds row '{line.strip()}': value '{cells[2]}' is not a number")
bad = []
for k, v in code.items():
    if k not in doc:
        bad.append(f"{k[0]}.{k[1]} = {v[0]} {v[1]} is in the rule table, not in the doc")
    elif doc[k][0] != v[0] or doc[k][1] != v[1]:
        bad.append(f"{k[0]}.{k[1]}: the doc says {doc[k][0]:g} {doc[k][1]}, the code {v[0]:g} {v[1]}")
for k in doc:
    if k not in code:
        bad.append(f"{k[0]}.{k[1]} is in the doc, not in the rule table")
if bad:
    sys.exit("; ".join(bad))
