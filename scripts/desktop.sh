#!/usr/bin/env bash
# The desktop app in one command, on a machine with internet access (docs/desktop.md):
#
#   npm run desktop [-- FILE.numascope]   builds everything and starts the Electron app
#   npm run desktop:package               builds the Linux packages (AppImage and deb) into
#                                         apps/desktop/dist/packages
#
# Electron and electron-builder are not project dependencies (`npm ci` never installs them: Electron
# downloads its binary at install time and needs Node >= 22.12, which CI does not have). This
# script installs the versions pinned in apps/desktop/package.json ("numascopeDesktopTools") into
# apps/desktop/.tools, outside the workspace, without touching package.json or the lock file.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
DESKTOP="$ROOT/apps/desktop"
TOOLS="$DESKTOP/.tools"

mode=run
if [ "${1:-}" = package ]; then mode=package; shift; fi

ensure_node
node -e '
  const [maj, min] = process.versions.node.split(".").map(Number);
  if (maj < 22 || (maj === 22 && min < 12)) {
    console.error(`[numascope] error: the desktop app needs Node.js >= 22.12 (Electron ${process.argv[1]} requires it); found ${process.version}`);
    process.exit(1);
  }' "$(node -p "require('$DESKTOP/package.json').numascopeDesktopTools.electron")"
ensure_npm_deps

pin() { node -p "require('$DESKTOP/package.json').numascopeDesktopTools['$1']"; }
ELECTRON_VERSION="$(pin electron)"
BUILDER_VERSION="$(pin electron-builder)"
installed() { node -p "try { require('$TOOLS/node_modules/$1/package.json').version } catch { '' }" 2>/dev/null; }
if [ "$(installed electron)" != "$ELECTRON_VERSION" ] || [ "$(installed electron-builder)" != "$BUILDER_VERSION" ]; then
  log "installing electron@$ELECTRON_VERSION and electron-builder@$BUILDER_VERSION into apps/desktop/.tools"
  mkdir -p "$TOOLS"
  # A package.json of its own, so npm does not treat .tools as part of the workspace.
  [ -f "$TOOLS/package.json" ] || echo '{ "name": "numascope-desktop-tools", "private": true }' > "$TOOLS/package.json"
  (cd "$TOOLS" && npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "electron@$ELECTRON_VERSION" "electron-builder@$BUILDER_VERSION")
fi
# Electron's binary comes from its install script; run it if npm skipped install scripts.
if [ ! -f "$TOOLS/node_modules/electron/path.txt" ]; then
  log "downloading the Electron $ELECTRON_VERSION binary"
  if ! (cd "$TOOLS/node_modules/electron" && node install.js); then
    echo "[numascope] error: downloading the Electron $ELECTRON_VERSION binary failed (see above). It comes from github.com/electron/electron releases: this needs internet access beyond the npm registry (or ELECTRON_MIRROR pointing at a mirror)." >&2
    exit 1
  fi
fi
# The shell's code against Electron's own types (tests use a slice of them: types/electron.d.ts).
log "type-checking apps/desktop/src against electron $ELECTRON_VERSION's electron.d.ts"
(cd "$ROOT" && npx tsc -p apps/desktop/tsconfig.electron.json)

# The collector in release mode: the napi addon (numascope.node) and the CLI (rollback).
build_collector release
log "building the napi addon (release)"
(cd "$COLLECTOR/crates/node" && npm run build --silent)

log "building the desktop app (apps/desktop/dist)"
node "$DESKTOP/scripts/build.mjs" >/dev/null

if [ "$mode" = package ]; then
  log "packaging (electron-builder: AppImage and deb)"
  cd "$DESKTOP"
  exec "$TOOLS/node_modules/.bin/electron-builder" --linux --config electron-builder.json --publish never "$@"
fi

flags=()
if [ "$(id -u)" = 0 ]; then
  # Chromium refuses to run as root with its sandbox on.
  log "running as root: starting Electron with --no-sandbox (run as a normal user to keep Chromium's sandbox)"
  flags+=(--no-sandbox)
fi
log "starting the desktop app"
exec "$TOOLS/node_modules/.bin/electron" "${flags[@]}" "$DESKTOP/dist/app" "$@"
