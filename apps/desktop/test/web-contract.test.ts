// The desktop API and the web app agree: the preload's API satisfies the web app's views of it
// (checked by tsc, `npx tsc -p apps/desktop`), every command the menu can send is one the web app
// understands, and the live-window shape the main process validates is the web protocol's.
import { describe, expect, it } from 'vitest';
import type { DesktopBridge } from '../../web/src/live/desktop';
import { parseDesktopCommand } from '../../web/src/live/desktop-shell';
import type { DesktopShellBridge } from '../../web/src/live/desktop-shell';
import { parseLiveMessage } from '../../web/src/live/protocol';
import type { LiveWindow as ProtocolLiveWindow } from '../../web/src/live/protocol';
import type { LiveWindow, NumascopeDesktopApi } from '../src/api';
import { COMMAND_NAMES } from '../src/channels';
import { liveWindow } from '../src/ipc-schema';
import type { CollectorWindow } from '../src/main-logic/addon';
import { toLiveWindow } from '../src/main-logic/recordings';
import type { LiveWindow as BindingWindow } from '../../../native/collector/crates/node/index';

// Compile-time: fails `tsc -p apps/desktop` if the API drifts from what the web app calls.
type Is<T extends true> = T;
export type ApiIsLiveBridge = Is<NumascopeDesktopApi extends DesktopBridge ? true : false>;
export type ApiIsShellBridge = Is<NumascopeDesktopApi extends DesktopShellBridge ? true : false>;
export type SameLiveWindow = Is<LiveWindow extends ProtocolLiveWindow ? (ProtocolLiveWindow extends LiveWindow ? true : false) : false>;
// The napi binding's window (its hand-written index.d.ts) is what the desktop main process reads.
export type SameCollectorWindow = Is<BindingWindow extends CollectorWindow ? (CollectorWindow extends BindingWindow ? true : false) : false>;

describe('desktop ↔ web contract', () => {
  it('the web app understands every menu command', () => {
    for (const c of COMMAND_NAMES) expect(parseDesktopCommand({ command: c }), c).not.toBeNull();
    expect(parseDesktopCommand({ command: 'open-path', path: '/a.numascope' })).toEqual({ command: 'open-path', path: '/a.numascope' });
  });

  it('a window the main process accepts is one the web protocol parser accepts unchanged', () => {
    const w: LiveWindow = {
      type: 'window',
      recording: 'r1',
      seq: 3,
      startUs: 1,
      endUs: 2,
      elapsedUs: 2,
      final: false,
      pid: 42,
      faults: 5,
      faultsByNode: [{ node: 0, count: 5 }],
      totals: { faults: 9, faultsByNode: [{ node: 0, count: 9 }], pages: 4, pagesByNode: [{ node: 0, count: 4 }] },
      threads: [{ tid: 42, name: 'x', cpu: 0, node: 0, faults: 5, alive: true }],
      threadsSeen: 1,
      lostSamples: 0,
    };
    expect(liveWindow.parse(w)).toEqual(w);
    expect(parseLiveMessage(JSON.stringify(w))).toEqual(w);
  });

  it("a collector window becomes a LiveWindow the schema accepts; an unknown pid (-1) becomes null", () => {
    const c: CollectorWindow = {
      seq: 0,
      startUs: 0,
      endUs: 250_000,
      elapsedUs: 250_000,
      final: true,
      pid: -1,
      faults: 2,
      faultsByNode: [{ node: -1, count: 2 }],
      totals: { faults: 2, faultsByNode: [{ node: -1, count: 2 }], pages: 1, pagesByNode: [{ node: 0, count: 1 }] },
      threads: [{ tid: 7, name: 'w', cpu: -1, node: -1, faults: 2, alive: false }],
      threadsSeen: 1,
      lostSamples: 0,
    };
    const w = liveWindow.parse(toLiveWindow('r1', c));
    expect(w).toMatchObject({ type: 'window', recording: 'r1', pid: null, final: true });
    // Extra fields a newer binding might add do not reach the strict schema.
    expect(liveWindow.parse(toLiveWindow('r1', { ...c, pid: 42, extra: 1 } as CollectorWindow)).pid).toBe(42);
  });
});
