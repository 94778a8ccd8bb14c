/** Shape of `samples/index.json`, written by samples-plugin.ts and read by the landing page. */
export interface SampleIndexEntry {
  /** File name, also the path under `samples/`. */
  file: string;
  /** Relative URL the app opens (`samples/<file>`), safe under any base path. */
  url: string;
  sizeBytes: number;
  /** Folder it was served from: `sample-traces`, or `extra` (NUMASCOPE_EXTRA_TRACES, e.g. a fresh recording). */
  collection: 'sample-traces' | 'extra';
  origin: {
    kind: string;
    generator: string;
    seed: number | null;
    model: string | null;
    description: string;
  } | null;
  machine: { name: string; nodes: number; cpus: number } | null;
  durationUs: number | null;
  sampleCount: number | null;
  /** Why the manifest could not be read (the app still lists the file; opening it shows the full error). */
  error?: string;
}

export interface SampleIndex {
  samples: SampleIndexEntry[];
}
