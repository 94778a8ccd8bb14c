/**
 * The desktop app's menu commands (main → renderer on `numascope:command`), as plain constants
 * without zod: the sandboxed preload bundles this module (`@numascope/protocol/commands`) and
 * must stay small. The schema that checks a command is `desktopCommand` in ./desktop.ts.
 */

/** Commands without arguments, sent by the application menu and its shortcuts. */
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
  'view-diagnose',
  'view-machine',
  'view-code',
  'view-live',
] as const;
export type DesktopCommandName = (typeof COMMAND_NAMES)[number];

/** `open-path`: open this file through openRecent(path) (a recent file, or one handed to the app). */
export type DesktopCommand = { command: DesktopCommandName } | { command: 'open-path'; path: string };
