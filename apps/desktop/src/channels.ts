/** IPC channel names: one per invoke method, plus the main → renderer live stream and commands. */
import type { DesktopCommandName, InvokeMethod } from './api';

export const CHANNELS = {
  probe: 'numascope:probe',
  topology: 'numascope:topology',
  listProcesses: 'numascope:list-processes',
  startRecording: 'numascope:start-recording',
  recordingStatus: 'numascope:recording-status',
  stopRecording: 'numascope:stop-recording',
  recordingTrace: 'numascope:recording-trace',
  apply: 'numascope:apply',
  rollback: 'numascope:rollback',
  openTrace: 'numascope:open-trace',
  openRecent: 'numascope:open-recent',
  saveTrace: 'numascope:save-trace',
  recentFiles: 'numascope:recent-files',
  openExternal: 'numascope:open-external',
} as const satisfies Record<InvokeMethod, string>;

export type Channel = (typeof CHANNELS)[InvokeMethod];

/** main → renderer: `{ id, message }` with message a LiveMessage. */
export const LIVE_CHANNEL = 'numascope:live';

/** main → renderer: a DesktopCommand (menus, shortcuts, files handed to the app). */
export const COMMAND_CHANNEL = 'numascope:command';

/** Every DesktopCommandName, once (checked both ways at compile time). */
export const COMMAND_NAMES = [
  'open',
  'save',
  'export-png',
  'export-svg',
  'export-markdown',
  'view-overview',
  'view-memory',
  'view-threads',
  'view-traffic',
  'view-compare',
  'view-decisions',
  'view-recommend',
  'view-live',
] as const satisfies readonly DesktopCommandName[];
type Missing = Exclude<DesktopCommandName, (typeof COMMAND_NAMES)[number]>;
const _allCommandsListed: Missing extends never ? true : Missing = true;
void _allCommandsListed;

export const INVOKE_CHANNELS: readonly string[] = Object.values(CHANNELS);
