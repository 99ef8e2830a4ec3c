#!/usr/bin/env python3
"""Runs aie/act_quant/design.py's command line on a list of cases, in this one process (a Python start per
case would cost more than the case), and checks each one's exit status and what it prints.

One case per line on stdin, fields split by ' | ':

    <exit status> | <design.py arguments> | <text> [| <text> ...]

The arguments are split as a shell would (shlex); each <text> must appear in what the run printed, stdout
and stderr together, as it is (no pattern); a <text> of the form '=<output>' must be the whole output
(stripped). Blank lines and lines starting with '#' are skipped.

    act_quant_cli_cases.py <design.py>      prints each failing case; exit 1 if one fails
"""

import contextlib
import importlib.util
import io
import shlex
import sys

spec = importlib.util.spec_from_file_location("xdna_quant_design_cli", sys.argv[1])
design = importlib.util.module_from_spec(spec)
spec.loader.exec_module(design)

failures, cases = [], 0
for line in sys.stdin:
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    fields = line.split(" | ")
    status, args, texts = int(fields[0]), shlex.split(fields[1]), fields[2:]
    cases += 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            rc = design.main(args)
        except SystemExit as e:  # argparse's own refusals
            rc = e.code
    text = out.getvalue()
    what = f"design.py {fields[1]}"
    if rc != status:
        failures.append(f"{what}: exit {rc}, expected {status}\n{text}")
        continue
    for t in texts:
        if t.startswith("="):
            if text.strip() != t[1:]:
                failures.append(f"{what}: printed '{text.strip()}', expected '{t[1:]}'")
        elif t not in text:
            failures.append(f"{what}: no '{t}' in\n{text}")
for f in failures:
    print(f"FAIL: {f}")
print(f"command-line cases: {cases}, {len(failures)} failing")
sys.exit(1 if failures else 0)
