// node --test: index.d.ts (hand-written) declares exactly what index.js exports.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const addon = require('..');

test('index.d.ts declares every export, and nothing else', () => {
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
  const declared = new Set();
  for (const m of dts.matchAll(/^export (?:declare )?(?:function|class) (\w+)/gm)) declared.add(m[1]);
  const exported = new Set(Object.keys(addon));
  assert.deepStrictEqual([...declared].sort(), [...exported].sort());
  for (const name of ['probe', 'topology', 'record', 'apply']) {
    assert.match(dts, new RegExp(`export function ${name}\\([^)]*\\): Promise<`), `${name} is declared async`);
  }
});

test('declared async functions return Promises', async () => {
  const p = addon.probe();
  assert.ok(p instanceof Promise);
  await p;
  const t = addon.topology();
  assert.ok(t instanceof Promise);
  await t;
  assert.strictEqual(typeof new addon.StopToken().stop, 'function');
});
