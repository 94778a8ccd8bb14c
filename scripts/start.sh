#!/usr/bin/env bash
# The README's run command: builds what it needs, records this machine, and serves the app on
# 127.0.0.1 with the bundled sample traces and the fresh recording. Prints the URL to open.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
START=$SECONDS
step() { log "[$1/5] $2 ($((SECONDS - START)) s so far)"; }

step 1 "checking Node.js and Rust, installing npm dependencies if the lock file changed"
ensure_node
ensure_npm_deps
build_analysis_bundle
# The dev profile the tests build (optimised; see build_collector): after `npm test` this is
# already up to date and takes seconds.
step 2 "building the collector"
build_collector app
BIN="$COLLECTOR/target/debug/numascope"

step 3 "what this machine can measure (numascope probe)"
"$BIN" probe || true

# A real recording of this machine, made now, so the app opens on live data as well as samples.
LIVE_DIR="$ROOT/.cache/live-traces"
mkdir -p "$LIVE_DIR"
step 4 "recording a short multi-threaded workload on this machine"
if "$BIN" record --kill-on-stop -o "$LIVE_DIR/this-machine.numascope" -- \
     "$COLLECTOR/target/debug/numascope-testload" --threads 4 --mib 32 --seconds 1 >/dev/null; then
  export NUMASCOPE_EXTRA_TRACES="$LIVE_DIR"
else
  log "recording failed (see above); serving the sample traces only"
fi

# The build copies the sample traces (and the recording above) into dist/samples.
step 5 "building the web app"
(cd "$ROOT" && npm run --silent build -w apps/web >/dev/null)

# numascope serve: the app plus the live API (token in the URL; 127.0.0.1 only).
PORT="${PORT:-0}"
URL_FILE="$(mktemp)"
"$BIN" serve --port "$PORT" --web-dir "$ROOT/apps/web/dist" > "$URL_FILE" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' INT TERM EXIT
for _ in $(seq 100); do [ -s "$URL_FILE" ] && break; sleep 0.1; done
BASE="$(head -1 "$URL_FILE")"
[ -n "$BASE" ] || die "numascope serve did not start (see its messages above)"
URL="$BASE&trace=samples/streamcluster-hotspot.numascope"
log "ready after $((SECONDS - START)) s; open this URL (Ctrl-C stops the server):"
echo "$URL"
wait $SERVER
