#!/usr/bin/env bash
# Create the separate venv used to generate / cross-check the kartothek 5.3.0
# golden fixtures (tests/golden/generate_kartothek53.py, kartothek53_query.py).
#
#   bash tests/golden/make_kartothek53_env.sh        # -> .venv-kartothek53/
#
# kartothek 5.3.0 declares pyarrow<7, which has no CPython 3.11 wheels, so it is
# installed with --no-deps next to an explicit, pinned set of its runtime
# dependencies (pyarrow 10.0.1 works for everything used here).
# Idempotent: an existing, complete venv is left as it is (a stamp file records
# the pinned set; change the pins and the venv is rebuilt in place).
# With UV=/path/to/uv (as `make` passes it: the project venv's pinned uv) the pins are
# installed by uv, with the index settings of requirements/uv.toml; without it, by pip.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="${KARTOTHEK53_VENV:-$ROOT/.venv-kartothek53}"
PYTHON="${PYTHON311:-python3.11}"

PINS=(
  "kartothek==5.3.0"
  "pyarrow==10.0.1"
  "pandas==1.5.3"
  "numpy==1.23.5"
  "dask[dataframe]==2022.12.1"
  "simplekv==0.14.1"
  "storefact==0.10.0"
  "uritools==4.0.3"
  "attrs==23.2.0"
  "decorator==5.1.1"
  "deprecation==2.1.0"
  "packaging==23.2"
  "msgpack==1.0.7"
  "simplejson==3.19.2"
  "toolz==0.12.1"
  "urlquote==2.2.0"
  "zstandard==0.22.0"
  "setuptools==69.5.1"   # kartothek imports pkg_resources at import time
  # transitive dependencies, pinned for reproducibility
  "python-dateutil==2.9.0.post0"
  "six==1.16.0"
  "pytz==2024.1"
  "cloudpickle==3.0.0"
  "fsspec==2023.12.2"
  "partd==1.4.1"
  "locket==1.0.0"
  "click==8.1.7"
  "PyYAML==6.0.1"
)
STAMP="$VENV/.kartothek53-stamp"
WANT="$(printf '%s\n' "${PINS[@]}")"

die() { echo "make_kartothek53_env.sh: $*" >&2; exit 1; }

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] \
   && "$VENV/bin/python" -c "import kartothek.io.eager_cube, storefact" 2>/dev/null; then
  touch "$STAMP"  # up to date (for make, whose target the stamp is)
  exit 0
fi

command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found"
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || die "$PYTHON is not Python 3.11"

UV="${UV:-}"
if [[ -n "$UV" ]]; then
  [[ -x "$UV" ]] || die "UV=$UV is not an executable"
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv --without-pip "$VENV" || die "venv creation failed"
  PIP_INSTALL=("$UV" pip install --quiet --config-file "$ROOT/requirements/uv.toml"
               --python "$VENV/bin/python")
else
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV" || die "venv creation failed"
  PIP_INSTALL=("$VENV/bin/python" -m pip --disable-pip-version-check -q install)
fi

# Everything except kartothek itself, with dependency resolution pinned by the
# list above (dask pulls cloudpickle, fsspec, partd, pyyaml, click, ...).
DEPS=()
for p in "${PINS[@]}"; do [[ "$p" == kartothek==* ]] || DEPS+=("$p"); done
"${PIP_INSTALL[@]}" "${DEPS[@]}" || die "installing dependencies failed"
"${PIP_INSTALL[@]}" --no-deps "kartothek==5.3.0" || die "installing kartothek failed"

# (bytecode files on, whatever the environment says: the modules the interop tests import are
# compiled here once, not in each of their kartothek processes)
env -u PYTHONDONTWRITEBYTECODE "$VENV/bin/python" - <<'EOF' || die "smoke test failed"
import kartothek, pandas, pyarrow, numpy, dask
import kartothek.io.eager, kartothek.io.eager_cube, kartothek.api.discover
import storefact, simplekv
assert kartothek.__version__ == "5.3.0", kartothek.__version__
assert pandas.__version__ == "1.5.3" and pyarrow.__version__ == "10.0.1"
EOF
printf '%s' "$WANT" > "$STAMP"
