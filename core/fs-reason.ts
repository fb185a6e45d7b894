/**
 * File system errors in words, for one-sentence messages of the CLI and the runtime's start-up
 * ("permission denied", not EACCES).
 */
const FS_REASONS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'it is a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EEXIST: 'it already exists',
  ENOSPC: 'no space left on the device',
  EROFS: 'the file system is read-only',
  EMFILE: 'too many open files',
  ENAMETOOLONG: 'the name is too long',
  EIO: 'an input/output error',
  ELOOP: 'too many symbolic links',
  EBUSY: 'the file is busy',
};

/** A file system error in words ("permission denied", not EACCES); other errors by their message. */
export function fsReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code && FS_REASONS[code]) return FS_REASONS[code];
  return err instanceof Error ? err.message : String(err);
}
