import path from 'node:path';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
import type { Plugin } from 'vite';
import { viteSingleFile } from 'vite-plugin-singlefile';
import { samplesPlugin } from './samples-plugin.ts';

/**
 * The report build uses the inline Worker: every import of `./create-worker` resolves to
 * `./create-worker.inline.ts`, so the normal build never carries the Worker's code twice.
 */
function inlineWorkerPlugin(): Plugin {
  const inline = path.resolve(import.meta.dirname, 'src/worker/create-worker.inline.ts');
  return {
    name: 'numascope-inline-worker',
    enforce: 'pre',
    resolveId(source, importer) {
      if (importer && /[\\/]src[\\/]worker[\\/]/.test(importer) && /^\.\/create-worker(\.ts)?$/.test(source)) return inline;
      return null;
    },
  };
}

// base './': the built app works from any path (a file server's subfolder, `numascope serve`).
// `vite build` runs twice (package.json): the app, then `--mode report`, the single-file HTML
// report shell (dist/report.html: JS, CSS and the Worker inlined, no trace yet), which the
// Export bar's "HTML report" fills with the open trace.
export default defineConfig(({ mode }) =>
  mode === 'report'
    ? {
        base: './',
        plugins: [inlineWorkerPlugin(), react(), viteSingleFile({ removeViteModuleLoader: true })],
        // A classic Worker: Chromium refuses a module Worker from a Blob URL in a file:// page
        // (an opaque origin), and the report is opened from files.
        worker: { format: 'iife' },
        build: {
          target: 'es2022',
          chunkSizeWarningLimit: 4000,
          emptyOutDir: false,
          rollupOptions: { input: path.resolve(import.meta.dirname, 'report.html') },
        },
      }
    : {
        base: './',
        plugins: [react(), samplesPlugin()],
        worker: { format: 'es' },
        build: { target: 'es2022', chunkSizeWarningLimit: 1500 },
      },
);
