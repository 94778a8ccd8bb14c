#!/usr/bin/env bash
# The README's run command: builds what it needs, records this machine, and serves the app on
# 127.0.0.1 with the bundled sample traces and the fresh recording. Prints the URL to open.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_node
ensure_npm_deps
build_collector release
BIN="$COLLECTOR/target/release/numascope"

log "building the web app"
(cd "$ROOT" && npm run --silent build -w apps/web >/dev/null)

log "what this machine can measure (numascope probe):"
"$BIN" probe || true

# A real recording of this machine, made now, so the app opens on live data as well as samples.
LIVE_DIR="$ROOT/.cache/live-traces"
mkdir -p "$LIVE_DIR"
log "recording a short multi-threaded workload on this machine"
if "$BIN" record -o "$LIVE_DIR/this-machine.numascope" -- \
     "$COLLECTOR/target/release/numascope-testload" --threads 4 --mib 32 --seconds 1 >/dev/null; then
  export NUMASCOPE_EXTRA_TRACES="$LIVE_DIR"
else
  log "recording failed (see above); serving the sample traces only"
fi

PORT="${PORT:-$(node -e '
  const net = require("node:net");
  const tryPort = (p) => { const s = net.createServer(); s.once("error", () => tryPort(p + 1));
    s.listen(p, "127.0.0.1", () => { s.close(() => console.log(p)); }); };
  tryPort(4173);')}"
URL="http://127.0.0.1:$PORT/?trace=samples/streamcluster-hotspot.numascope"
log "serving the app; open $URL (Ctrl-C stops)"
echo "$URL"
cd "$ROOT/apps/web" && exec npx vite preview --host 127.0.0.1 --port "$PORT" --strictPort
