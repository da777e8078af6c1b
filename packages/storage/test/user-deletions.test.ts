import { describe, expect, it } from 'vitest';
import { hashUserId } from '../src';
import { deletesUserRows } from '../src/clickhouse/user-deletions';

const user = { tenantSeq: 12, userHash: hashUserId("o'neil \\ é\n") };

describe('deletesUserRows', () => {
  it("recognises the user's deletion by id in clear or by hash, as 18.16 and current servers spell it", () => {
    // 18.16 writes back the command with parentheses, isNotNull() and escaped literals.
    expect(deletesUserRows("DELETE WHERE (tenant_seq = 12) AND isNotNull(user_id) AND (assumeNotNull(user_id) = 'o\\'neil \\\\ é\\n')", user)).toBe(true);
    expect(deletesUserRows(`DELETE WHERE tenant_seq = 12 AND user_id IS NOT NULL AND lower(hex(SHA256(assumeNotNull(user_id)))) = '${user.userHash}'`, user)).toBe(true);
    expect(deletesUserRows("DELETE WHERE tenant_seq = 12 AND user_id IS NOT NULL AND assumeNotNull(user_id) = 'o\\x27neil \\x5c é\\x0a'", user)).toBe(true);
  });

  it("does not take another user's, another tenant's or a retention deletion for the user's", () => {
    expect(deletesUserRows("DELETE WHERE (tenant_seq = 12) AND (assumeNotNull(user_id) = 'someone')", user)).toBe(false);
    expect(deletesUserRows("DELETE WHERE (tenant_seq = 123) AND (assumeNotNull(user_id) = 'o\\'neil \\\\ é\\n')", user)).toBe(false);
    expect(deletesUserRows("DELETE WHERE (tenant_seq = 1) AND (assumeNotNull(user_id) = 'o\\'neil \\\\ é\\n')", user)).toBe(false);
    expect(deletesUserRows('DELETE WHERE (tenant_seq = 12) AND (timestamp_ms < 1700000000000)', user)).toBe(false);
    expect(deletesUserRows("UPDATE user_id = 'x' WHERE (tenant_seq = 12) AND (assumeNotNull(user_id) = 'o\\'neil \\\\ é\\n')", user)).toBe(false);
  });
});
