#!/usr/bin/env bash
# Regenerates index.generated.d.ts, the TypeScript types napi-rs derives from src/lib.rs (the
# native layer that index.js wraps), with the pinned @napi-rs/cli. Commit the result; the test
# test/dts.test.js checks that the hand-written public index.d.ts covers it.
#
#   bash native/collector/crates/node/scripts/gen-types.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLI_VERSION=3.10.12
TOOLS=${NAPI_CLI_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/numascope/napi-cli-$CLI_VERSION}
if [ ! -x "$TOOLS/node_modules/.bin/napi" ]; then
  mkdir -p "$TOOLS"
  [ -f "$TOOLS/package.json" ] || echo '{ "name": "numascope-napi-cli", "private": true }' > "$TOOLS/package.json"
  (cd "$TOOLS" && npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error "@napi-rs/cli@$CLI_VERSION")
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
(cd "$HERE" && "$TOOLS/node_modules/.bin/napi" build --dts index.generated.d.ts -o "$OUT")
cp "$OUT/index.generated.d.ts" "$HERE/index.generated.d.ts"
echo "wrote $HERE/index.generated.d.ts"
