// Temporary probe: where does one group commit spend its time? (deleted after use)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uuidv7 } from 'uuidv7';
import { DuckDbDatabase } from '@svc/storage';

const dir = mkdtempSync(join(tmpdir(), 'svc-probe-'));
const db = await DuckDbDatabase.open(dir);
const N = Number(process.argv[2] ?? 1600);
const ROUNDS = Number(process.argv[3] ?? 60);
const mode = process.argv[4] ?? 'full';
const data = JSON.stringify({ pollId: 'p1', questionText: 'Who wins?', optionSelected: 'A', optionIndex: 0 });
const totals: Record<string, number> = {};
const t = async (name: string, f: () => Promise<unknown> | unknown) => { const s = performance.now(); await f(); totals[name] = (totals[name] ?? 0) + performance.now() - s; };
await db.write(async (c) => {
  await c.run(`CREATE TEMP TABLE event_stage (tenant_seq INTEGER, event_id VARCHAR, event VARCHAR, user_id VARCHAR, session_id VARCHAR, broadcast_id VARCHAR, campaign_id BIGINT, ts_ms BIGINT, received_at_ms BIGINT, country VARCHAR, order_id VARCHAR, sponsor_id VARCHAR, total DOUBLE, items VARCHAR, data VARCHAR)`);
  for (let r = 0; r < ROUNDS; r++) {
    const now = Date.now();
    await t('append', async () => {
      const a = await c.createAppender('event_stage', null, 'temp');
      for (let i = 0; i < N; i++) {
        a.appendInteger(1); a.appendVarchar(uuidv7()); a.appendVarchar('poll.voted'); a.appendVarchar(`user-${i}`); a.appendVarchar('svc_01JXYZ');
        a.appendVarchar('b-1'); a.appendBigInt(1n); a.appendBigInt(BigInt(now)); a.appendBigInt(BigInt(now)); a.appendNull(); a.appendNull(); a.appendNull(); a.appendNull(); a.appendNull(); a.appendVarchar(data); a.endRow();
      }
      a.flushSync(); a.closeSync();
    });
    await t('begin', () => c.run('BEGIN TRANSACTION'));
    const sql = mode === 'noreturn'
      ? `INSERT INTO events SELECT tenant_seq, event_id::UUID, event, user_id, session_id, broadcast_id, campaign_id, epoch_ms(ts_ms), epoch_ms(received_at_ms), country, order_id, sponsor_id, total, items, data FROM event_stage ON CONFLICT DO NOTHING`
      : `INSERT INTO events SELECT tenant_seq, event_id::UUID, event, user_id, session_id, broadcast_id, campaign_id, epoch_ms(ts_ms), epoch_ms(received_at_ms), country, order_id, sponsor_id, total, items, data FROM event_stage ON CONFLICT DO NOTHING RETURNING tenant_seq, event_id`;
    await t('insert', async () => { const rows = (await c.runAndReadAll(sql)).getRowObjectsJS(); if (mode !== 'noreturn' && rows.length !== N) throw new Error('short'); });
    await t('commit', () => c.run('COMMIT'));
    await t('delete', () => c.run('DELETE FROM event_stage'));
  }
});
const all = Object.values(totals).reduce((a, b) => a + b, 0);
console.log(`N=${N} rounds=${ROUNDS} mode=${mode}: per commit ${(all / ROUNDS).toFixed(1)} ms (${((N * ROUNDS) / (all / 1000)).toFixed(0)} events/s)`, Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, +(v / ROUNDS).toFixed(2)])));
await db.close();
rmSync(dir, { recursive: true, force: true });
