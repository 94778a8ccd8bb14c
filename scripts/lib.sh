# Shared helpers for the project's scripts. Sourced, not run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
COLLECTOR="$ROOT/native/collector"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# Tests and builds never depend on the machine's time zone or locale.
export TZ=UTC LANG=C.UTF-8 LC_ALL=C.UTF-8

log() { printf '\033[1m[numascope]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[31m[numascope] error:\033[0m %s\n' "$*" >&2; exit 1; }

need_root_or_sudo() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    die "need root to run: $* (install it yourself, or re-run as root)"; fi
}

# apt packages the project needs; installed only when missing.
ensure_apt() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get: install them by hand"
  log "installing ${missing[*]} (apt)"
  need_root_or_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  need_root_or_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_node() {
  command -v node >/dev/null || die "Node.js 20 or 22 is required (node not found)"
  local major; major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] || die "Node.js >= 20 is required, found $(node --version)"
  command -v cargo >/dev/null || [ -x "$HOME/.cargo/bin/cargo" ] || die "Rust (cargo) is required: install it with rustup"
  export PATH="$HOME/.cargo/bin:$PATH"
}

# npm ci only when node_modules is missing or older than the lock file.
ensure_npm_deps() {
  local stamp="$ROOT/node_modules/.numascope-lock-stamp"
  if [ ! -f "$stamp" ] || ! cmp -s "$ROOT/package-lock.json" "$stamp"; then
    log "installing npm dependencies (npm ci)"
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$ROOT/package-lock.json" "$stamp"
  fi
}

# The analysis engine as one file (packages/policy-engine/dist/numascope-analyze.mjs), what
# `numascope analyze|diagnose|plan|compare|code` runs with Node; about a second.
build_analysis_bundle() {
  log "bundling the analysis engine (esbuild)"
  (cd "$ROOT" && node packages/policy-engine/bin/build-bundle.mjs)
}

# A cached Python virtual environment with the pinned requirements file $1, in the cache
# directory under the name $2 plus a hash of the file (rebuilt when it changes); prints its
# python. Returns 1 (after saying why) when it cannot be installed.
python_venv() {
  local req="$ROOT/scripts/python/$1"
  local key; key=$(sha256sum "$req" | cut -c1-12)
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/numascope/$2-$key"
  if [ ! -x "$dir/bin/python" ] || [ ! -f "$dir/.complete" ]; then
    command -v python3 >/dev/null || ensure_apt python3
    python3 -m venv --help >/dev/null 2>&1 || ensure_apt python3-venv
    log "creating the Python environment $dir from scripts/python/$1"
    rm -rf "$dir"
    if ! { python3 -m venv "$dir" && "$dir/bin/pip" install -q --disable-pip-version-check -r "$req" >&2; }; then
      log "warning: could not install $req"
      return 1
    fi
    touch "$dir/.complete"
  fi
  echo "$dir/bin/python"
}

# The interop test environment (interop-requirements.txt: pyarrow and polars, which the interop
# tests rewrite traces with; duckdb, which the fleet test queries exports with), exported as
# NUMASCOPE_PYTHON. Without python3 or PyPI those tests say why and fail in CI.
ensure_python_env() {
  local py
  if py=$(python_venv interop-requirements.txt test-python); then export NUMASCOPE_PYTHON="$py"; fi
  return 0
}

# The environment of `npm run fleet:spark` (spark-requirements.txt: PySpark, about 500 MB, so
# apart from the interop one), exported as NUMASCOPE_SPARK_PYTHON; returns 1 when it cannot be installed.
ensure_spark_env() {
  local py
  py=$(python_venv spark-requirements.txt spark-python) || return 1
  export NUMASCOPE_SPARK_PYTHON="$py"
}

# Build the collector once. `debug`: the dev profile (optimised: opt-level 1, dependencies 2;
# native/collector/Cargo.toml) with the tests; `app`: the same profile without the tests, so
# `npm start` after `npm test` finds everything built and a fresh `npm start` builds less;
# `release`: the packaged desktop app.
build_collector() {
  local profile="${1:-debug}"
  log "building the collector ($profile)"
  if [ "$profile" = app ]; then
    (cd "$COLLECTOR" && cargo build --locked --workspace --lib --bins)
    cp "$COLLECTOR/target/debug/libnumascope_node.so" "$COLLECTOR/crates/node/numascope.node"
    cp "$COLLECTOR/target/debug/libnumascope_allocshim.so" "$COLLECTOR/crates/node/libnumascope_allocshim.so"
  elif [ "$profile" = release ]; then
    (cd "$COLLECTOR" && cargo build --release --locked --workspace --bins)
    # The allocation-site shim is a library (cdylib) that `--bins` leaves out.
    (cd "$COLLECTOR" && cargo build --release --locked -p numascope-allocshim --lib)
  else
    (cd "$COLLECTOR" && cargo build --locked --workspace --lib --bins --tests)
    cp "$COLLECTOR/target/debug/libnumascope_node.so" "$COLLECTOR/crates/node/numascope.node"
    # Beside the addon, where a recording made through the Node binding (desktop app) finds the
    # allocation-site shim (docs/alloc-sites.md, find_shim).
    cp "$COLLECTOR/target/debug/libnumascope_allocshim.so" "$COLLECTOR/crates/node/libnumascope_allocshim.so"
  fi
}

# A free TCP port on 127.0.0.1, from $1 upward.
free_port() {
  node -e '
    const net = require("node:net");
    const tryPort = (p) => { const s = net.createServer(); s.once("error", () => tryPort(p + 1));
      s.listen(p, "127.0.0.1", () => { s.close(() => console.log(p)); }); };
    tryPort(Number(process.argv[1]));' "${1:-4179}"
}
