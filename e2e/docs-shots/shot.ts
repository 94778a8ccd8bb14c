/** Where the docs pictures go, and how each is taken: an element or the window, never a full page. */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Locator, Page } from '@playwright/test';
import { REPO_ROOT } from '../fixtures/expectations.js';

export const OUT = path.join(REPO_ROOT, 'docs', 'images');
mkdirSync(OUT, { recursive: true });

const HEADER_STATIC = '.topbar { position: static !important; }';

export async function shot(target: Page | Locator, name: string): Promise<void> {
  // The app's header is sticky: an element taller than the window is shot in parts, and the header would cover its top.
  await target.screenshot({ path: path.join(OUT, `${name}.png`), animations: 'disabled', caret: 'hide', style: HEADER_STATIC });
}
