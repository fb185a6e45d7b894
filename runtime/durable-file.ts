import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, fsyncSync, linkSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Writes a small file so that once this returns it survives a power loss (docs/runtime.md#the-data-dir):
 * the bytes go to a temporary file beside it, which is fsynced, then put in place by rename (or,
 * with `exclusive`, by link, which fails with EEXIST when the file exists already, as
 * `writeFileSync`'s 'wx' would), and the directory is fsynced so that the new name is on disk too.
 * A reader sees either no file or the whole of it, never a part or an empty file.
 */
export function writeFileDurably(path: string, data: string, options: { mode: number; exclusive?: boolean }): void {
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', options.mode);
  try {
    try {
      fchmodSync(fd, options.mode); // exactly this mode, whatever the umask
      writeSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (options.exclusive) linkSync(tmp, path);
    else renameSync(tmp, path);
  } finally {
    rmSync(tmp, { force: true });
  }
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
