/**
 * The preload (sandboxed: it may import only 'electron', so scripts/build.mjs bundles it with
 * ./channels into dist/preload.cjs). Exposes `window.numascopeDesktop`: each method is one
 * ipcRenderer.invoke on its named channel (main validates every argument); live messages arrive on
 * LIVE_CHANNEL and reach only the subscribers of their recording; commands (menus, shortcuts,
 * files handed to the app) arrive on COMMAND_CHANNEL, validated by main, and are kept until the
 * page subscribes. Nothing else of ipcRenderer or Node leaks to the page.
 */
import { contextBridge, ipcRenderer } from 'electron';
import type { IpcRendererEvent } from 'electron';
import type { LiveMessage } from '@numascope/protocol';
import type { DesktopCommand } from '@numascope/protocol/commands';
import type { NumascopeDesktopApi } from './api';
import { CHANNELS, COMMAND_CHANNEL, LIVE_CHANNEL } from './channels';

const invoke = (channel: string, ...args: unknown[]) => ipcRenderer.invoke(channel, ...args);

/** Commands that arrived before anyone subscribed (a file given on the command line), at most MAX_PENDING. */
const MAX_PENDING = 32;
const pendingCommands: DesktopCommand[] = [];
const commandListeners = new Set<(cmd: DesktopCommand) => void>();
ipcRenderer.on(COMMAND_CHANNEL, (_e: IpcRendererEvent, cmd: unknown) => {
  if (!cmd || typeof cmd !== 'object') return;
  const c = cmd as DesktopCommand;
  if (commandListeners.size === 0) {
    if (pendingCommands.length < MAX_PENDING) pendingCommands.push(c);
  } else for (const l of commandListeners) l(c);
});

export const api: NumascopeDesktopApi = {
  isDesktop: true,
  probe: () => invoke(CHANNELS.probe) as ReturnType<NumascopeDesktopApi['probe']>,
  topology: () => invoke(CHANNELS.topology) as ReturnType<NumascopeDesktopApi['topology']>,
  listProcesses: () => invoke(CHANNELS.listProcesses) as ReturnType<NumascopeDesktopApi['listProcesses']>,
  startRecording: (opts) => invoke(CHANNELS.startRecording, opts) as ReturnType<NumascopeDesktopApi['startRecording']>,
  recordingStatus: (id) => invoke(CHANNELS.recordingStatus, id) as ReturnType<NumascopeDesktopApi['recordingStatus']>,
  stopRecording: (id) => invoke(CHANNELS.stopRecording, id) as ReturnType<NumascopeDesktopApi['stopRecording']>,
  recordingTrace: (id) => invoke(CHANNELS.recordingTrace, id) as ReturnType<NumascopeDesktopApi['recordingTrace']>,
  onLiveWindow: (id, cb) => {
    const listener = (_e: IpcRendererEvent, envelope: unknown) => {
      const env = envelope as { id?: unknown; message?: LiveMessage } | null;
      if (env && env.id === id && env.message) cb(env.message);
    };
    ipcRenderer.on(LIVE_CHANNEL, listener);
    return () => ipcRenderer.removeListener(LIVE_CHANNEL, listener);
  },
  apply: (plan, opts) => invoke(CHANNELS.apply, plan, opts) as ReturnType<NumascopeDesktopApi['apply']>,
  rollback: (record) => invoke(CHANNELS.rollback, record) as ReturnType<NumascopeDesktopApi['rollback']>,
  runPlan: (plan, opts) => invoke(CHANNELS.runPlan, plan, opts) as ReturnType<NumascopeDesktopApi['runPlan']>,
  saveLoop: (recording, record) => invoke(CHANNELS.saveLoop, recording, record) as ReturnType<NumascopeDesktopApi['saveLoop']>,
  loadLoop: (recording) => invoke(CHANNELS.loadLoop, recording) as ReturnType<NumascopeDesktopApi['loadLoop']>,
  latestLoop: () => invoke(CHANNELS.latestLoop) as ReturnType<NumascopeDesktopApi['latestLoop']>,
  openTrace: () => invoke(CHANNELS.openTrace) as ReturnType<NumascopeDesktopApi['openTrace']>,
  openRecent: (p) => invoke(CHANNELS.openRecent, p) as ReturnType<NumascopeDesktopApi['openRecent']>,
  saveTrace: (bytes, name) => invoke(CHANNELS.saveTrace, bytes, name) as ReturnType<NumascopeDesktopApi['saveTrace']>,
  recentFiles: () => invoke(CHANNELS.recentFiles) as ReturnType<NumascopeDesktopApi['recentFiles']>,
  openExternal: (url) => invoke(CHANNELS.openExternal, url) as ReturnType<NumascopeDesktopApi['openExternal']>,
  startBench: (req) => invoke(CHANNELS.startBench, req) as ReturnType<NumascopeDesktopApi['startBench']>,
  benchStatus: (id) => invoke(CHANNELS.benchStatus, id) as ReturnType<NumascopeDesktopApi['benchStatus']>,
  stopBench: (id) => invoke(CHANNELS.stopBench, id) as ReturnType<NumascopeDesktopApi['stopBench']>,
  onCommand: (cb) => {
    const listener = (c: DesktopCommand) => cb(c);
    commandListeners.add(listener);
    for (const c of pendingCommands.splice(0)) listener(c);
    return () => {
      commandListeners.delete(listener);
    };
  },
};

contextBridge.exposeInMainWorld('numascopeDesktop', api);
