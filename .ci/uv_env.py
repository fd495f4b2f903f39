"""Print `export` lines that give uv the package indexes pip is configured with (`pip config list` on stdin).

pip reads its indexes from its config files and PIP_* variables; uv reads UV_* variables. The environment's
values override the files', as in pip.
"""

import shlex
import sys

NAMES = {"index-url": "UV_INDEX_URL", "extra-index-url": "UV_EXTRA_INDEX_URL", "find-links": "UV_FIND_LINKS",
         "cert": "SSL_CERT_FILE"}

found = {}
for line in sorted(sys.stdin, key=lambda line: line.startswith(":env:")):  # files first, then the environment
    key, _, value = line.strip().partition("=")
    name = NAMES.get(key.rpartition(".")[2])
    if name and value:
        found[name] = value.strip("'")
print("".join(f"export {name}={shlex.quote(value)}\n" for name, value in found.items()))
