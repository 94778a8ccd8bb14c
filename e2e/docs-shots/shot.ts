/** Where the docs pictures go, and how each is taken: an element or the window, never a full page. */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Locator, Page } from '@playwright/test';
import { REPO_ROOT } from '../fixtures/expectations.js';

export const OUT = path.join(REPO_ROOT, 'docs', 'images');
mkdirSync(OUT, { recursive: true });

export async function shot(target: Page | Locator, name: string): Promise<void> {
  await target.screenshot({ path: path.join(OUT, `${name}.png`), animations: 'disabled', caret: 'hide' });
}
