import { useId } from 'react';
import type { ChangeEvent } from 'react';
import { desktopShell, requestDesktopOpen } from '../live/desktop-shell';

/**
 * A real file input, visually a button; the label carries keyboard focus styling. In the desktop
 * app, a button that opens the native open dialog instead (live/desktop-shell.ts).
 */
export function OpenFileButton({ onFile, label = 'Open trace…', primary = false }: { onFile: (f: File) => void; label?: string; primary?: boolean }) {
  const id = useId();
  if (desktopShell())
    return (
      <span className={primary ? 'file-button file-button--primary' : 'file-button'}>
        <button type="button" data-testid="open-native" onClick={() => requestDesktopOpen(onFile)}>
          {label}
        </button>
      </span>
    );
  function onChange(e: ChangeEvent<HTMLInputElement>) {
    const file = e.target.files?.[0];
    e.target.value = ''; // picking the same file again still fires change
    if (file) onFile(file);
  }
  return (
    <span className={primary ? 'file-button file-button--primary' : 'file-button'}>
      <input id={id} type="file" accept=".numascope" onChange={onChange} data-testid="file-input" className="file-button__input" />
      <label htmlFor={id}>{label}</label>
    </span>
  );
}
