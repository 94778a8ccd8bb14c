import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
import { samplesPlugin } from './samples-plugin.ts';

// base './': the built app works from any path (a file server's subfolder, `numascope serve`).
export default defineConfig({
  base: './',
  plugins: [react(), samplesPlugin()],
  worker: { format: 'es' },
  build: { target: 'es2022', chunkSizeWarningLimit: 1500 },
});
