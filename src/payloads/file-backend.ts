// Node only: objects as files under one directory (`COMPACTOR_PAYLOAD_STORE=file:DIR`). Writes go to
// a temporary file beside the object, flushed, then renamed: a crash leaves the old object or the new,
// never half. What the store creates is its owner's alone from the start: directories 0700, files
// 0600 (payloads may be unencrypted); directories that exist keep their mode.
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, opendir, rename, rm, stat, utimes } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { isRecord } from '../core/schema.js';
import { tooLarge, orMissing, type ListedObject, type ObjectStat, type SweepableBackend } from './object-backend.js';

const hasCode = (error: unknown, code: string): boolean => isRecord(error) && error.code === code;
const isMissing = (error: unknown): boolean => hasCode(error, 'ENOENT');

const DIRECTORY_MODE = 0o700;
const OBJECT_MODE = 0o600;

export interface FileBackendOptions {
  /** The store's directory; created on first write. */
  directory: string;
  /** Flush each object before renaming it into place (a claim must never point at what a power cut took back). @default true */
  durable?: boolean;
}

export class FileBackend implements SweepableBackend {
  readonly directory: string;
  readonly description: string;
  readonly durable: boolean;

  constructor({ directory, durable = true }: FileBackendOptions) {
    this.directory = resolve(directory);
    this.description = `file:${this.directory}`;
    this.durable = durable;
  }

  private pathOf(key: string): string {
    const path = resolve(this.directory, ...key.split('/'));
    // Keys are built by the store from hex ids; this guards the invariant rather than user input.
    if (!path.startsWith(this.directory + sep))
      throw new RangeError(`object key ${JSON.stringify(key)} escapes the store directory`);
    return path;
  }

  async get(key: string, signal?: AbortSignal, maxBytes = Number.MAX_SAFE_INTEGER): Promise<Uint8Array | undefined> {
    signal?.throwIfAborted();
    const handle = await orMissing(open(this.pathOf(key), 'r'), isMissing);
    if (handle === undefined) return undefined;
    try {
      // Sized before it is read, from the file that was opened (not the name, which may change).
      const { size } = await handle.stat();
      if (size > maxBytes) throw tooLarge(key, size, maxBytes);
      const bytes = Buffer.alloc(size);
      let filled = 0;
      while (filled < size) {
        const { bytesRead } = await handle.read(bytes, filled, size - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      // A file that grew since it was sized is read no further: its hash will not match.
      signal?.throwIfAborted();
      return bytes.subarray(0, filled);
    } finally {
      await handle.close();
    }
  }

  async put(key: string, body: Uint8Array, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true, mode: DIRECTORY_MODE });
    const temporary = join(dirname(path), `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      const handle = await open(temporary, 'wx', OBJECT_MODE);
      try {
        await handle.writeFile(body);
        if (this.durable) await handle.datasync();
      } finally {
        await handle.close();
      }
      await rename(temporary, path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }

  async stat(key: string): Promise<ObjectStat | undefined> {
    const info = await orMissing(stat(this.pathOf(key)), isMissing);
    return info === undefined ? undefined : { modifiedMs: info.mtimeMs };
  }

  async touch(key: string): Promise<void> {
    const now = new Date();
    await utimes(this.pathOf(key), now, now);
  }

  async *list(prefix: string, signal?: AbortSignal): AsyncIterable<ListedObject> {
    // Walk the directory that holds the prefix, then filter: prefixes here are directory-shaped (`v1/`).
    const start = this.pathOf(prefix.replace(/\/+$/, '') || '.');
    const pending = [start];
    while (pending.length > 0) {
      signal?.throwIfAborted();
      const directory = pending.pop() ?? start;
      const entries = await orMissing(opendir(directory), isMissing);
      if (entries === undefined) continue;
      for await (const entry of entries) {
        const path = join(directory, entry.name);
        if (entry.isDirectory()) pending.push(path);
        if (!entry.isFile()) continue;
        const key = relative(this.directory, path).split(sep).join('/');
        if (!key.startsWith(prefix)) continue;
        // Undefined when renamed into place or removed since the directory was read.
        const info = await orMissing(stat(path), isMissing);
        if (info !== undefined) yield { key, modifiedMs: info.mtimeMs, bytes: info.size };
      }
    }
  }

  async removeIfOlder(key: string, cutoffMs: number): Promise<boolean> {
    const path = this.pathOf(key);
    // Moved aside first, then judged: a store that touches the object before the move leaves a
    // new time on the moved file, which is then put back; one that touches it after finds no
    // file and writes the object anew (the store's touch falls back to a write). Either way no
    // claim handed out meanwhile loses an object.
    const aside = join(dirname(path), `.gc-${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      await rename(path, aside);
    } catch (error) {
      if (isMissing(error)) return true;
      throw error;
    }
    if ((await stat(aside)).mtimeMs < cutoffMs) {
      await rm(aside, { force: true });
      return true;
    }
    // Renewed meanwhile: back under its name. A link never replaces a file, so if a store wrote the
    // object anew in between (the same bytes: objects are content-addressed) that one stays.
    await link(aside, path).catch((error: unknown) => {
      if (!hasCode(error, 'EEXIST')) throw error;
    });
    await rm(aside, { force: true });
    return false;
  }
}
