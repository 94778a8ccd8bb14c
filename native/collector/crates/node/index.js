// Loads the native addon built by `npm run build` (cargo build + copy to numascope.node).
'use strict';
const path = require('node:path');
const candidates = [
  process.env.NUMASCOPE_NODE_ADDON,
  path.join(__dirname, 'numascope.node'),
].filter(Boolean);
let lastError;
for (const p of candidates) {
  try {
    module.exports = require(p);
    return;
  } catch (e) {
    lastError = e;
  }
}
throw new Error(
  `numascope native addon not found (tried ${candidates.join(', ')}): run \`npm run build\` in native/collector/crates/node. ${lastError}`,
);
