import type { DeletionJob } from '../deletion-job-store';
import { hashUserId } from '../deletion-job-store';
import { SvcError } from '@svc/protocol';
import type { ChDatabase } from './ch-database';
import { sqlString } from './sql-literal';

/** Between two looks at `system.mutations`. */
const MUTATION_POLL_INTERVAL_MS = 50;
/** A string literal as the server writes it back in `system.mutations.command`. */
const STRING_LITERAL = /'((?:[^'\\]|\\.)*)'/g;
const ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', '0': '\0', a: '\x07', v: '\v' };

type ErasedUser = Pick<DeletionJob, 'tenantSeq' | 'userHash'>;

/**
 * Whether a mutation's command (`system.mutations.command`, the server's own formatting of the
 * `ALTER TABLE … DELETE` the erasure sent) deletes the rows of `user`: it names the user's
 * tenant and compares `user_id` with the user's id in clear or with its hash. Only the
 * tenant's number and the string literals are read, so a server that adds or drops
 * parentheses, or spells `IS NOT NULL` as `isNotNull()`, is still understood.
 */
export function deletesUserRows(command: string, user: ErasedUser): boolean {
  if (!/^DELETE\b/i.test(command.trim()) || !/\buser_id\b/.test(command)) return false;
  if (!new RegExp(`\\btenant_seq = ${user.tenantSeq}(?!\\d)`).test(command)) return false;
  const hash = user.userHash.toLowerCase();
  for (const [, body] of command.matchAll(STRING_LITERAL)) {
    const value = unescapeLiteral(body!);
    if (value === hash || hashUserId(value) === hash) return true;
  }
  return false;
}

/** The ids of the unfinished mutations of `table` that delete the rows of `user`. */
export async function pendingUserDeletions(db: ChDatabase, table: string, user: ErasedUser): Promise<string[]> {
  const rows = await db.query<{ mutation_id: string; command: string }>(
    `SELECT mutation_id, command FROM system.mutations WHERE database = ${sqlString(db.name)} AND table = ${sqlString(table)} AND is_done = 0`,
  );
  return rows.filter((row) => deletesUserRows(row.command, user)).map((row) => row.mutation_id);
}

/**
 * Waits until no mutation of `table` deleting the rows of `user` is unfinished (at once when
 * there is none). 18.16 does not report a failed mutation, so one that never ends fails the
 * wait with `storage_unavailable` after `timeoutMs`; the mutation goes on on the server.
 */
export async function waitForUserDeletions(db: ChDatabase, table: string, user: ErasedUser, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await pendingUserDeletions(db, table, user)).length) {
    if (Date.now() > deadline) {
      throw new SvcError('storage_unavailable', `A deletion in the event database (${table}) did not finish within ${timeoutMs} ms. Retry later.`);
    }
    await new Promise((resolve) => setTimeout(resolve, MUTATION_POLL_INTERVAL_MS));
  }
}

function unescapeLiteral(body: string): string {
  const bytes: number[] = [];
  const utf8 = new TextEncoder();
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!;
    if (char !== '\\') {
      const code = body.codePointAt(i)!;
      const encoded = utf8.encode(String.fromCodePoint(code));
      bytes.push(...encoded);
      if (code > 0xffff) i++;
      continue;
    }
    const next = body[++i] ?? '';
    const hex = next === 'x' ? /^[0-9a-fA-F]{2}/.exec(body.slice(i + 1)) : null;
    if (hex) {
      bytes.push(parseInt(hex[0], 16));
      i += 2;
    } else {
      bytes.push(...utf8.encode(ESCAPES[next] ?? next));
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}
