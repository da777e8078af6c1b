/**
 * Failures of the file system under the database rather than of a statement: a full disk, a
 * file size limit, a read-only or vanished folder, missing permissions. DuckDB reports them as
 * IO errors carrying the operating system's message; a write that meets one stored nothing.
 */
const STORAGE_FAILURE = [
  /IO Error/i,
  /could not (write|read|open|create|truncate|sync|fsync|remove|move)/i,
  /cannot open/i,
  /no space left/i,
  /file too large/i,
  /disk quota/i,
  /read-only file system/i,
  /permission denied/i,
  /operation not permitted/i,
  /has been invalidated/i,
  /\b(ENOSPC|EFBIG|EROFS|EACCES|EPERM|EDQUOT|EIO)\b/,
];

export function isStorageFailure(error: unknown): boolean {
  const message = error instanceof Error ? `${error.message} ${(error as NodeJS.ErrnoException).code ?? ''}` : String(error);
  return STORAGE_FAILURE.some((pattern) => pattern.test(message));
}

/** The failure's own words on one line, e.g. `Could not write file "…/svc.duckdb.wal": File too large`. */
export function storageFailureReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^[A-Za-z ]*Error: /, '').replace(/\s+/g, ' ').trim();
}
