/**
 * npm run fidelity: runs the fidelity check (fidelity.ts) and writes docs/fidelity.md.
 * Usage: node --import tsx fidelity/cli.ts [OUTPUT.md]   (default: the repository's docs/fidelity.md)
 */
import { writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fidelityMarkdown } from './markdown.js';
import { fidelityReport, summary } from './fidelity.js';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? resolve(here, '../../../docs/fidelity.md'));
const report = fidelityReport();
writeFileSync(out, fidelityMarkdown(report));
const s = summary(report);
console.log(`${out}: ${s.within} of ${s.predictions} predicted figures within ±25 %, ${s.directionsHold} of ${s.directions} stated directions hold`);
