// The desktop API and the web app agree through @numascope/protocol, never by importing each
// other: the preload's API is the protocol's DesktopLiveBridge and DesktopShellBridge (the parts the
// web app calls; checked by tsc, `npx tsc -p apps/desktop`), the napi binding's window and options
// are the protocol's, and what the main process sends is what serve sends less its URLs.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { desktopRecording, liveWindow, toLiveWindow } from '@numascope/protocol';
import type { ApplyOptions, CollectorWindow, DesktopLiveBridge, DesktopShellBridge } from '@numascope/protocol';
import { rustExample } from '@numascope/protocol/fixtures';
import type { ApplyOptions as BindingApplyOptions, LiveWindow as BindingWindow } from '../../../native/collector/crates/node/index';
import type { NumascopeDesktopApi } from '../src/api';
import { CSP } from '../src/main-logic/app-protocol';
import { repoRoot } from './helpers';

// Compile-time: fails `tsc -p apps/desktop` if the API drifts from what the web app calls.
type Is<T extends true> = T;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type ApiIsLiveBridge = Is<NumascopeDesktopApi extends DesktopLiveBridge ? true : false>;
export type ApiIsShellBridge = Is<NumascopeDesktopApi extends DesktopShellBridge ? true : false>;
// The napi binding's hand-written index.d.ts: its window is the protocol's, its apply options too.
export type SameCollectorWindow = Is<Same<BindingWindow, CollectorWindow>>;
export type SameApplyOptions = Is<Same<BindingApplyOptions, ApplyOptions>>;

/** Every .ts file under dir, recursively. */
function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? tsFiles(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

describe('desktop ↔ web contract', () => {
  it('apps/desktop imports nothing from apps/web (the shared shapes are @numascope/protocol)', () => {
    const desktop = path.join(repoRoot, 'apps', 'desktop');
    const files = [...tsFiles(path.join(desktop, 'src')), ...tsFiles(path.join(desktop, 'test'))];
    expect(files.length).toBeGreaterThan(10);
    const offenders = files.flatMap((f) =>
      [...fs.readFileSync(f, 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)]
        .map((m) => m[1]!)
        .filter((spec) => spec.startsWith('@numascope/web') || (spec.startsWith('.') && path.resolve(path.dirname(f), spec).startsWith(path.join(repoRoot, 'apps', 'web') + path.sep)))
        .map((spec) => `${path.relative(repoRoot, f)}: ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  it("the collector's windows become `window` messages the protocol accepts; an unknown pid (-1) becomes null", () => {
    for (const i of [0, 1]) {
      const c = rustExample('collectorWindow', i);
      const w = liveWindow.parse(toLiveWindow('r1', c));
      expect(w).toMatchObject({ type: 'window', recording: 'r1', pid: c.pid, seq: c.seq, final: c.final });
      // serve's own `window` message of the same window, less its recording id.
      expect({ ...w, recording: 'x' }).toEqual({ ...rustExample('liveWindow', i), recording: 'x' });
    }
    const unknown = { ...rustExample('collectorWindow'), pid: -1 };
    expect(liveWindow.parse(toLiveWindow('r1', unknown)).pid).toBeNull();
    // Extra fields a newer binding might add do not reach the strict schema.
    expect(liveWindow.parse(toLiveWindow('r1', { ...unknown, extra: 1 } as CollectorWindow)).pid).toBeNull();
  });

  it("serve's recordings, less `latest` and `urls`, are the desktop app's", () => {
    for (const i of [0, 1, 2]) {
      const { latest, urls, ...rest } = rustExample('recording', i);
      void latest;
      void urls;
      expect(desktopRecording.parse(rest)).toEqual(rest);
    }
  });

  // The CSP is written twice, once per server of the UI (numascope serve's static files, the
  // desktop app's app:// protocol): they must agree in every directive but connect-src, where
  // serve also lets the page open its own WebSocket (the desktop app talks over IPC instead).
  it("the desktop CSP is serve's, less serve's WebSocket origins", () => {
    const rust = fs.readFileSync(path.join(repoRoot, 'native/collector/crates/cli/src/cmd_serve/static_files.rs'), 'utf8');
    const literal = /let csp = format!\(\s*"((?:[^"\\]|\\\n)*)"/.exec(rust);
    expect(literal, 'the CSP literal of static_files.rs').not.toBeNull();
    const directives = (text: string) =>
      new Map(
        text
          .split(';')
          .map((d) => d.trim().split(/\s+/))
          .filter((d) => d[0])
          .map(([name, ...values]) => [name, values] as const),
      );
    const serve = directives((literal?.[1] ?? '').replace(/\\\n\s*/g, ''));
    const desktop = directives(CSP);
    expect([...serve.keys()].sort()).toEqual([...desktop.keys()].sort());
    expect(serve.size).toBeGreaterThanOrEqual(10);
    for (const [name, values] of desktop) {
      if (name === 'connect-src') {
        expect(serve.get(name)).toEqual([...values, 'ws://127.0.0.1:{port}', 'ws://localhost:{port}']);
      } else {
        expect(serve.get(name), name).toEqual(values);
      }
    }
  });
});
