/**
 * IPC channel names: one per invoke method, plus the main → renderer live stream and commands.
 * The preload bundles this module: it imports nothing with runtime code but the zod-free
 * @numascope/protocol/commands.
 */
import { COMMAND_NAMES } from '@numascope/protocol/commands';
import type { InvokeMethod } from './api';

/** Every menu command name, once (@numascope/protocol/commands). */
export { COMMAND_NAMES };

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
  runPlan: 'numascope:run-plan',
  saveLoop: 'numascope:save-loop',
  loadLoop: 'numascope:load-loop',
  latestLoop: 'numascope:latest-loop',
  openTrace: 'numascope:open-trace',
  openRecent: 'numascope:open-recent',
  saveTrace: 'numascope:save-trace',
  recentFiles: 'numascope:recent-files',
  openExternal: 'numascope:open-external',
  startBench: 'numascope:start-bench',
  benchStatus: 'numascope:bench-status',
  stopBench: 'numascope:stop-bench',
} as const satisfies Record<InvokeMethod, string>;

export type Channel = (typeof CHANNELS)[InvokeMethod];

/** main → renderer: `{ id, message }` with message a LiveMessage. */
export const LIVE_CHANNEL = 'numascope:live';

/** main → renderer: a DesktopCommand (menus, shortcuts, files handed to the app). */
export const COMMAND_CHANNEL = 'numascope:command';

export const INVOKE_CHANNELS: readonly string[] = Object.values(CHANNELS);
