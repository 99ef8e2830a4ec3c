#!/usr/bin/env python3
"""Print the programs of the last `count` submissions of a GGML_XDNA_TRACE file, as `xdna-bench order`
prints the e2e model's: one invocation per line (its kernel kind, and a matmul's weight type), "--"
between submissions.

usage: trace-programs.py <trace.json> <count>
"""
import json
import sys


def main():
    path, count = sys.argv[1], int(sys.argv[2])
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    submissions = []
    for e in events:
        name = e.get("name", "")
        if name.startswith("submission (measured"):
            submissions.append([])
        elif "args" in e and "kind" in e["args"] and submissions:
            a = e["args"]
            submissions[-1].append(a["kind"] + (" " + a["weights"] if a["weights"] else ""))
    if len(submissions) < count:
        sys.exit(f"{path}: {len(submissions)} submissions, fewer than {count}")
    print("\n--\n".join("\n".join(s) for s in submissions[-count:]))


if __name__ == "__main__":
    main()
