// Entry of the one-file bundle (bin/build-bundle.mjs -> dist/numascope-analyze.mjs) that
// `numascope analyze|diagnose|plan|compare|code|c2c|presets` runs with Node: no tsx, no
// node_modules, nothing of the repository but this file.
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
