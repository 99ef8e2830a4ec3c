#!/usr/bin/python3
"""Regenerate the generated sections of docs/performance-model.md from xdna-bench.

    /usr/bin/python3 bench/update_performance_doc.py BUILD_DIR [DOC]

Each section sits between '<!-- BEGIN generated: NAME -->' and '<!-- END generated: NAME -->' and is
replaced by the output of the xdna-bench command listed in SECTIONS; nothing else in the file changes.
The tables are therefore never edited by hand.
"""

import os
import re
import subprocess
import sys

SECTIONS = {
    "presets": ["presets"],
    "calibration": ["calibration"],
    "feasibility": ["feasibility"],
    "e2e-8b": ["e2e", "--models", "8b", "--ftype", "q4_K_M", "--preset", "krackan", "--pp", "512"],
    "e2e-summary": ["e2e", "--summary", "--models", "1b,3b,8b,qwen3-8b", "--ftype", "q4_K_M", "--pp", "512"],
}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: update_performance_doc.py BUILD_DIR [DOC]")
    bench = os.path.join(sys.argv[1], "tools", "xdna-bench", "xdna-bench")
    here = os.path.dirname(os.path.abspath(__file__))
    doc = sys.argv[2] if len(sys.argv) == 3 else os.path.join(here, "..", "docs", "performance-model.md")
    text = open(doc).read()
    for name, args in SECTIONS.items():
        out = subprocess.run([bench] + args, check=True, capture_output=True, text=True).stdout
        cmd = "xdna-bench " + " ".join(args)
        body = f"<!-- BEGIN generated: {name} -->\n<!-- by: {cmd} -->\n{out.rstrip()}\n<!-- END generated: {name} -->"
        pattern = re.compile(rf"<!-- BEGIN generated: {re.escape(name)} -->.*?<!-- END generated: {re.escape(name)} -->",
                             re.S)
        if not pattern.search(text):
            sys.exit(f"{doc}: no section '{name}'")
        text = pattern.sub(lambda _: body, text)
    open(doc, "w").write(text)


if __name__ == "__main__":
    main()
