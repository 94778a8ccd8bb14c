#!/usr/bin/env node
// numascope-analyze: runs the TypeScript CLI (cli/main.ts) through tsx, which `npm ci`
// installs at the repository root. Usage: numascope-analyze --help
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
