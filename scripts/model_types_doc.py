"""Rewrite the model_type table of docs/models.md (between the model-types markers)
from `calc.py models --types --full`; tests/test_model_types.py checks that they agree.

    python3 scripts/model_types_doc.py
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "models.md")


def main():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "calculations", "calc.py"), "models", "--types", "--full"],
                         capture_output=True, text=True, check=True).stdout
    table = "\n".join(line for line in out.split("\n") if line.startswith("|"))
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    new, n = re.subn(r"(<!-- model-types:begin[^>]*-->\n).*?(<!-- model-types:end -->)",
                     lambda m: m.group(1) + table + "\n" + m.group(2), text, flags=re.S)
    if n != 1:
        sys.exit("docs/models.md: model-types markers not found")
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(new)


if __name__ == "__main__":
    main()
