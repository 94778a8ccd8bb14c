/**
 * The preload (sandboxed: it may import only 'electron', so it must be bundled with ./channels
 * before Electron loads it). Exposes `window.numascopeDesktop`: each method is one
 * ipcRenderer.invoke on its named channel (main validates every argument); live messages arrive on
 * LIVE_CHANNEL and reach only the subscribers of their recording. Nothing else of ipcRenderer or
 * Node leaks to the page.
 */
import { contextBridge, ipcRenderer } from 'electron';
import type { IpcRendererEvent } from 'electron';
import type { LiveMessage, NumascopeDesktopApi } from './api';
import { CHANNELS, LIVE_CHANNEL } from './channels';

const invoke = (channel: string, ...args: unknown[]) => ipcRenderer.invoke(channel, ...args);

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
  openTrace: () => invoke(CHANNELS.openTrace) as ReturnType<NumascopeDesktopApi['openTrace']>,
  openRecent: (p) => invoke(CHANNELS.openRecent, p) as ReturnType<NumascopeDesktopApi['openRecent']>,
  saveTrace: (bytes, name) => invoke(CHANNELS.saveTrace, bytes, name) as ReturnType<NumascopeDesktopApi['saveTrace']>,
  recentFiles: () => invoke(CHANNELS.recentFiles) as ReturnType<NumascopeDesktopApi['recentFiles']>,
  openExternal: (url) => invoke(CHANNELS.openExternal, url) as ReturnType<NumascopeDesktopApi['openExternal']>,
};

contextBridge.exposeInMainWorld('numascopeDesktop', api);
