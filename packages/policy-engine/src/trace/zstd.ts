/**
 * ZSTD decoding of Arrow IPC bodies (docs/trace-format.md, "Size on disk"), registered with
 * apache-arrow's codec registry when the reader is loaded. Arrow's codec interface is synchronous,
 * so two decoders stand behind it:
 *
 * - **zstddec** (the zstd C library compiled to WebAssembly, pinned): 3–5× faster, but it needs an
 *   asynchronous start (`zstdReady()`, begun when this module loads, awaited by the app's Worker
 *   and the CLI before they read) and a page that allows WebAssembly (the desktop's CSP says
 *   `'wasm-unsafe-eval'` for it).
 * - **fzstd** (pure JavaScript, synchronous): used until zstddec is ready, where it cannot start
 *   (a CSP without WebAssembly, an old runtime), and for frames above `WASM_MAX_FRAME_BYTES`.
 *
 * Both produce the same bytes (test/trace-compression.test.ts). apache-arrow calls `decode` with
 * one buffer's frame only after `checkArrowFile` (arrow-ipc.ts) has walked it: a single frame
 * stating its content size, equal to the length the buffer declares, inside the limits. Both
 * decoders allocate exactly that content size; a frame whose blocks do not decode to it is
 * refused (the error reaches the reader, which names the table).
 */
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { decompress } from 'fzstd';
import { ZSTDDecoder } from 'zstddec';
import { zstdFrameSize } from './arrow-ipc.js';

/**
 * zstddec allocates the frame and its content in its WebAssembly memory (which only grows); the
 * collector's frames are a 65,536-row column (at most 512 KiB). Larger frames (another writer's
 * million-row batches) go to fzstd, so that the module's memory stays small and a failed
 * allocation inside it can never happen.
 */
export const WASM_MAX_FRAME_BYTES = 64 * 2 ** 20;

let wasm: ZSTDDecoder | null = null;
let wasmMissing = 'not started yet';
let starting: Promise<void> | undefined;

/**
 * Starts the WebAssembly decoder (once) and resolves when it is ready or known to be unavailable
 * (never rejects: fzstd then decodes everything). Reading before it resolves is correct, only slower.
 */
export function zstdReady(): Promise<void> {
  starting ??= (async () => {
    try {
      const decoder = new ZSTDDecoder();
      await decoder.init();
      wasm = decoder;
    } catch (e) {
      wasmMissing = `WebAssembly zstd decoder unavailable (${e instanceof Error ? e.message : String(e)})`;
    }
  })();
  return starting;
}

/** Which decoder decodes frames now: 'zstddec' (WebAssembly) or 'fzstd', with the reason for the latter. */
export function zstdDecoderInUse(): { decoder: 'zstddec' | 'fzstd'; why?: string } {
  return wasm ? { decoder: 'zstddec' } : { decoder: 'fzstd', why: wasmMissing };
}

/** The frame's bytes, decoded, in a buffer Arrow can view as int64 (8-byte aligned). */
export function zstdDecode(frame: Uint8Array, use: 'auto' | 'fzstd' = 'auto'): Uint8Array {
  const size = zstdFrameSize(frame, 'ZSTD frame');
  if (use === 'auto' && wasm && size <= WASM_MAX_FRAME_BYTES) {
    let out: Uint8Array;
    try {
      out = wasm.decode(frame, size);
    } catch (e) {
      // The module is in an unknown state after a trap: stop using it.
      wasm = null;
      wasmMissing = `WebAssembly zstd decoder stopped after an error (${e instanceof Error ? e.message : String(e)})`;
      return zstdDecode(frame, 'fzstd');
    }
    // zstd returns an error code in place of the size; zstddec then returns a slice of another length.
    if (out.length !== size) throw new Error(`a ZSTD frame does not decode to the ${size} bytes it states (corrupt block data)`);
    return out;
  }
  const out = decompress(frame);
  if (out.length !== size) throw new Error(`a ZSTD frame decoded to ${out.length} bytes, not the ${size} it states (corrupt block data)`);
  // fzstd returns a view 12 bytes into its allocation; BigInt64Array needs 8-byte alignment.
  return out.byteOffset % 8 === 0 ? out : out.slice();
}

compressionRegistry.set(CompressionType.ZSTD, { decode: (frame: Uint8Array) => zstdDecode(frame) });
void zstdReady();
