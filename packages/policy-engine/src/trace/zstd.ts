/**
 * ZSTD decoding of Arrow IPC bodies (docs/trace-format.md, "Size on disk"), registered with
 * apache-arrow's codec registry when the reader is loaded. fzstd is pure JavaScript and
 * synchronous, so it runs in a browser Worker as in Node.
 *
 * apache-arrow calls `decode` with one buffer's frame only after `checkArrowFile` (arrow-ipc.ts)
 * has walked it: a single frame stating its content size, equal to the length the buffer
 * declares, inside the limits. fzstd allocates exactly that content size (never the frame's
 * window) and stops writing at its end, so a hostile frame cannot make it allocate more.
 */
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { decompress } from 'fzstd';

/** The frame's bytes, decoded, in a buffer Arrow can view as int64 (8-byte aligned). */
export function zstdDecode(frame: Uint8Array): Uint8Array {
  const out = decompress(frame);
  // fzstd returns a view 12 bytes into its allocation; BigInt64Array needs 8-byte alignment.
  return out.byteOffset % 8 === 0 ? out : out.slice();
}

compressionRegistry.set(CompressionType.ZSTD, { decode: zstdDecode });
