// Resolution target of the 'electron' alias in vitest.config.ts. Tests mock it with
// vi.mock('electron', …); loading it unmocked is a test bug.
throw new Error("electron is not available under Node: mock it with vi.mock('electron')");
