// Desktop mode, shell part (src/ui/live/desktop-shell.ts) over a fake window.numascopeDesktop: the
// Open button uses the native dialog, Save uses the native save dialog, commands are checked; on
// the web (no bridge) the file input and the download stay as they were.
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { COMMAND_NAMES } from '@numascope/protocol';
import { desktopShell, parseDesktopCommand, requestDesktopOpen, saveTraceBytes, setDesktopOpenHandler } from '../src/ui/live/desktop-shell';
import type { DesktopShellBridge } from '../src/ui/live/desktop-shell';
import { OpenFileButton } from '../src/ui/views/OpenFileButton';

function install() {
  const bridge = {
    isDesktop: true as const,
    openTrace: vi.fn(async () => ({ name: 'a.numascope', path: '/t/a.numascope', bytes: new Uint8Array([80, 75, 3, 4]) })),
    openRecent: vi.fn(async (p: string) => ({ name: 'r.numascope', path: p, bytes: new Uint8Array([1]) })),
    saveTrace: vi.fn(async (_b: Uint8Array, name: string) => `/saved/${name}`),
    onCommand: vi.fn(() => () => {}),
  } satisfies DesktopShellBridge;
  (window as unknown as { numascopeDesktop: unknown }).numascopeDesktop = bridge;
  return bridge;
}

afterEach(() => {
  cleanup();
  setDesktopOpenHandler(null);
  delete (window as unknown as { numascopeDesktop?: unknown }).numascopeDesktop;
});

describe('desktop shell', () => {
  it('is detected only with the file API of the desktop bridge', () => {
    expect(desktopShell()).toBeNull();
    (window as unknown as { numascopeDesktop: unknown }).numascopeDesktop = { isDesktop: true, probe: () => {} };
    expect(desktopShell()).toBeNull();
    install();
    expect(desktopShell()).not.toBeNull();
  });

  it('checks commands from the main process', () => {
    expect(parseDesktopCommand({ command: 'open' })).toEqual({ command: 'open' });
    expect(parseDesktopCommand({ command: 'export-svg' })).toEqual({ command: 'export-svg' });
    expect(parseDesktopCommand({ command: 'view-compare' })).toEqual({ command: 'view', view: 'compare' });
    expect(parseDesktopCommand({ command: 'view-live' })).toEqual({ command: 'view-live' });
    expect(parseDesktopCommand({ command: 'open-path', path: '/t/x.numascope' })).toEqual({ command: 'open-path', path: '/t/x.numascope' });
    for (const bad of [null, 'open', {}, { command: 'view-nope' }, { command: 'open-path' }, { command: 'open-path', path: 'rel' }, { command: 'exec' }])
      expect(parseDesktopCommand(bad), JSON.stringify(bad)).toBeNull();
  });

  it('understands every command the desktop menu can send (@numascope/protocol COMMAND_NAMES)', () => {
    for (const c of COMMAND_NAMES) expect(parseDesktopCommand({ command: c }), c).not.toBeNull();
  });

  it('web: the Open button is a file input, as before', () => {
    render(<OpenFileButton onFile={() => {}} />);
    expect(screen.getByTestId('file-input')).toBeTruthy();
    expect(screen.queryByTestId('open-native')).toBeNull();
  });

  it('desktop: the Open button opens the native dialog and hands the file on', async () => {
    const bridge = install();
    const files: File[] = [];
    render(<OpenFileButton onFile={(f) => files.push(f)} label="Open trace…" />);
    expect(screen.queryByTestId('file-input')).toBeNull();
    fireEvent.click(screen.getByTestId('open-native'));
    expect(bridge.openTrace).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(files).toHaveLength(1));
    expect(files[0]!.name).toBe('a.numascope');
    expect(new Uint8Array(await files[0]!.arrayBuffer())).toEqual(new Uint8Array([80, 75, 3, 4]));
  });

  it('desktop: a registered open handler (App) takes precedence over the direct dialog', () => {
    const bridge = install();
    const h = vi.fn();
    setDesktopOpenHandler(h);
    requestDesktopOpen(() => {});
    expect(h).toHaveBeenCalledTimes(1);
    expect(bridge.openTrace).not.toHaveBeenCalled();
  });

  it('save: the native save dialog in desktop mode, a download on the web', async () => {
    const download = vi.fn();
    expect(await saveTraceBytes(new Uint8Array([1, 2]).buffer, 'x.numascope', download)).toBeNull();
    expect(download).toHaveBeenCalledTimes(1);
    expect(download.mock.calls[0]![1]).toBe('x.numascope');
    const bridge = install();
    download.mockClear();
    expect(await saveTraceBytes(new Uint8Array([1, 2]).buffer, 'x.numascope', download)).toBe('/saved/x.numascope');
    expect(download).not.toHaveBeenCalled();
    const [bytes, name] = bridge.saveTrace.mock.calls[0]!;
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect([...bytes]).toEqual([1, 2]);
    expect(name).toBe('x.numascope');
  });
});
