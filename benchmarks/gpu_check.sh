#!/usr/bin/env bash
# The whole GPU check of issue 25 in one call (docs/gpu.md, "Running the device check").
#
#   benchmarks/gpu_check.sh            on the lent GPU machine, from the repository root, with
#                                      .whl carried; writes results under $OUT
#   benchmarks/gpu_check.sh --dry-run  the same steps on this CPU: CuPy/NVRTC replaced by
#                                      NumPy and the kernel emulator, small sizes, the wheels'
#                                      tags checked for the device's Python 3.12
#
# Steps (each with its own timeout inside an overall budget, so one hang cannot eat it):
#   wheels    install .whl/*.whl offline into /tmp/site (the GPU image lacks array-api-compat)
#   versions  nvidia-smi line, Python/NumPy/SciPy/Numba/CuPy/NVRTC versions, imports
#   tests_gpu pytest -m gpu over tests/kernels/backends/cuda and tests/api/test_devices.py (JUnit XML)
#   bench     benchmarks/bench_gpu.py (JSON): cuSPARSE/CuPy peers, placements, bandwidth
#   tests_cpu the rest of those files (emulated kernels, nvcc 13 compile checks)
# Results: $OUT/summary.json (steps, rc, seconds, test counts, the bench table),
# $OUT/bench_gpu.json, $OUT/logs.tar.gz (every log and JUnit file); the console shows the
# bench table and one line a step.
#
# Environment: GPU_CHECK_BUDGET (seconds in all, default 420; doubled in the dry run),
# GPU_CHECK_SIZE (bench sizes: full, small, tiny; default full on the GPU, small dry),
# GPU_CHECK_REPEAT (timed runs), GPU_CHECK_TESTS_K (a pytest -k filter for both test steps),
# GPU_CHECK_SKIP (steps to skip, comma-separated), PYTHON (default python3), OUT (default: a
# new temporary folder), LAZYSPARSE_GPU_RANDOM_EXAMPLES (random expressions on cuda, 30).
#
# The wheels (< 1 MiB) were fetched with, in the repository root (/.whl/ is git-ignored via
# .git/info/exclude):
#   for p in array-api-compat==1.16.0 array-api-extra==0.11.5 ndindex==1.10.1 sparse==0.19.3; do
#     python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
#       --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#       --platform manylinux1_x86_64 -d .whl "$p"; done
set -u
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
[ "${GPU_CHECK_DRY_RUN:-0}" = "1" ] && DRY=1
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
PY=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d /tmp/gpu_check_out.XXXXXX)}
mkdir -p "$OUT"
LOGS=$(mktemp -d /tmp/gpu_check_logs.XXXXXX)
# the dry run's emulated kernels and 2 shared cores are slower: twice the time per step
SLOW=$((DRY + 1))
BUDGET=${GPU_CHECK_BUDGET:-$((420 * SLOW))}
SKIP=",${GPU_CHECK_SKIP:-},"
STEPS="$LOGS/steps.tsv"
: >"$STEPS"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 HYPOTHESIS_PROFILE=ci
export LAZYSPARSE_CACHE_DIR="$LOGS/kernel_cache"
if [ "$DRY" = 1 ]; then
  export LAZYSPARSE_GPU_TESTS=emulate
  SIZE=${GPU_CHECK_SIZE:-small}
  EMULATE=--emulate
else
  export LAZYSPARSE_GPU_TESTS=device
  SIZE=${GPU_CHECK_SIZE:-full}
  EMULATE=
fi
REPEAT=${GPU_CHECK_REPEAT:-}
echo "gpu_check: dry_run=$DRY size=$SIZE budget=${BUDGET}s out=$OUT"

# run NAME MAX_SECONDS CMD...: one step, its log in $LOGS/NAME.log, bounded by the budget left
run() {
  local name=$1 max=$2; shift 2
  if [[ "$SKIP" == *",$name,"* ]]; then
    printf '%s\tskipped\t0\n' "$name" >>"$STEPS"; echo "[$name] skipped"; return 0
  fi
  max=$((max * SLOW))
  local left=$((BUDGET - SECONDS))
  local lim=$((max < left ? max : left))
  if [ "$lim" -lt 10 ]; then
    printf '%s\tno-time\t0\n' "$name" >>"$STEPS"; echo "[$name] no time left"; return 0
  fi
  local t0=$SECONDS
  timeout -k 10 "$lim" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >>"$STEPS"
  echo "[$name] rc=$rc $((SECONDS - t0))s (limit ${lim}s)"
  [ "$rc" = 124 ] && echo "[$name] TIMED OUT; tail of its log:"
  [ "$rc" != 0 ] && tail -n 15 "$LOGS/$name.log"
  return 0
}

# --- wheels: offline, no dependencies resolved (each needed one is carried by name)
install_wheels() {
  shopt -s nullglob
  local whls=("$ROOT"/.whl/*.whl)
  if [ ${#whls[@]} = 0 ]; then echo "no .whl/*.whl (carry .whl)"; return 1; fi
  local common=(-q --no-index --no-deps --no-compile --no-cache-dir --upgrade)
  if [ "$DRY" = 1 ]; then  # the device's interpreter and platform, checked here
    "$PY" -m pip install "${common[@]}" --target "$LOGS/site" --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --only-binary=:all: "${whls[@]}" || return 1
  else
    "$PY" -m pip install "${common[@]}" --target /tmp/site "${whls[@]}" || return 1
  fi
  ls "${whls[@]}"
}
export -f install_wheels
export DRY ROOT PY LOGS
run wheels 90 bash -c install_wheels
if [ "$DRY" = 1 ]; then
  export PYTHONPATH="$ROOT/src:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$ROOT/src:$ROOT:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi

# --- versions and imports (lazysparse must come from this tree's src)
versions() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu \
      --format=csv,noheader
  else
    echo "nvidia-smi: not found"
  fi
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  "$PY" - "$ROOT" "$DRY" <<'EOF'
import importlib, json, sys
root, dry = sys.argv[1], sys.argv[2] == "1"
mods = ["numpy", "scipy", "numba", "array_api_compat", "pytest", "hypothesis", "xdist",
        "pytest_timeout", "sparse", "ndindex"] + ([] if dry else ["cupy"])
vers = {}
for m in mods:
    try:
        vers[m] = getattr(importlib.import_module(m), "__version__", "?")
    except Exception as e:  # noqa: BLE001 - reported, the check fails below
        vers[m] = f"MISSING: {e}"
import lazysparse
vers["lazysparse"] = lazysparse.__file__
from lazysparse.formats.device import cuda_available
vers["cuda_available"] = cuda_available()
if not dry:
    import cupy
    vers["nvrtc"] = cupy.cuda.nvrtc.getVersion()
    vers["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
print(json.dumps(vers, default=str))
bad = [m for m, v in vers.items() if str(v).startswith("MISSING")]
assert lazysparse.__file__.startswith(root + "/src/"), "lazysparse is not this tree's"
assert dry or vers["cuda_available"], "CuPy sees no CUDA device"
sys.exit(1 if bad else 0)
EOF
}
export -f versions
run versions 60 bash -c versions

# --- tests: the gpu-marked ones on the device (emulated in the dry run), then the rest
TESTS=(tests/kernels/backends/cuda tests/api/test_devices.py)
K=()
[ -n "${GPU_CHECK_TESTS_K:-}" ] && K=(-k "$GPU_CHECK_TESTS_K")
XDIST=()
XDIST_GPU=()
if [ "$DRY" = 0 ] && "$PY" -c "import xdist" 2>/dev/null; then XDIST=(-n 8); XDIST_GPU=(-n 4); fi
PYTEST=("$PY" -m pytest -q -p no:cacheprovider -rfE --timeout=120 -o junit_family=xunit2)
run tests_gpu 200 "${PYTEST[@]}" "${XDIST_GPU[@]}" -m gpu "${K[@]}" \
  --junitxml="$LOGS/junit_gpu.xml" "${TESTS[@]}"
BENCH=("$PY" benchmarks/bench_gpu.py $EMULATE --size "$SIZE" --json "$OUT/bench_gpu.json")
[ -n "$REPEAT" ] && BENCH+=(--repeat "$REPEAT")
run bench 240 "${BENCH[@]}"
run tests_cpu 120 "${PYTEST[@]}" "${XDIST[@]}" -m "not gpu" "${K[@]}" \
  --ignore=tests/kernels/backends/cuda/test_gpu_check.py --junitxml="$LOGS/junit_cpu.xml" "${TESTS[@]}"

# --- summary and the files that come back (at most 8, plain names, one folder level)
"$PY" - "$LOGS" "$OUT" "$DRY" "$SIZE" <<'EOF'
import json, sys
import xml.etree.ElementTree as ET
from pathlib import Path
logs, out, dry, size = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
steps = []
for line in (logs / "steps.tsv").read_text().splitlines():
    name, rc, secs = line.split("\t")
    steps.append({"step": name, "rc": rc, "seconds": int(secs)})
junit = {}
for f in sorted(logs.glob("junit_*.xml")):
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    root = ET.parse(f).getroot()
    for suite in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
        for k in counts:
            counts[k] += int(suite.get(k, 0))
    failed = [f"{c.get('classname')}::{c.get('name')}" for c in root.iter("testcase")
              if c.find("failure") is not None or c.find("error") is not None]
    junit[f.stem] = {**counts, "failed": failed[:50]}
bench = out / "bench_gpu.json"
cases = json.loads(bench.read_text())["cases"] if bench.exists() else []
keys = ("case", "ok", "host_fallbacks", "first_call_s", "compile_s", "kernel_ms", "e2e_ms",
        "peer_ms", "speedup", "target", "meets_target", "bw_fraction", "placements", "error")
summary = {"dry_run": dry, "size": size, "steps": steps, "junit": junit,
           "bench": [{k: c.get(k) for k in keys} for c in cases],
           "versions": (logs / "versions.log").read_text()[-3000:]
           if (logs / "versions.log").exists() else ""}
(out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
ok = all(s["rc"] in ("0", "skipped") for s in steps)
print("gpu_check:", "ALL STEPS PASSED" if ok else "SOME STEPS FAILED",
      {s["step"]: s["rc"] for s in steps}, {k: (v["tests"], v["failures"] + v["errors"])
                                             for k, v in junit.items()})
sys.exit(0 if ok else 1)
EOF
RC=$?
[ -f "$LOGS/bench.log" ] && tail -n 14 "$LOGS/bench.log"
rm -rf "$LOGS/kernel_cache" "$LOGS/site"
tar -czf "$OUT/logs.tar.gz" -C "$LOGS" . && rm -rf "$LOGS"
ls -la "$OUT"
exit $RC
