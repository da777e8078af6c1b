import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { EventName, StoredEvent } from '@svc/protocol';
import {
  eventKey,
  type CommitBatch,
  type CommitOutcome,
  type EventFilter,
  type EventPageRequest,
  type EventStore,
  type QuarantinedEvent,
} from '../event-store';
import type { EventRow, QuarantineRow } from '../records';
import type { DuckDbDatabase, Row } from './duckdb-database';
import { EVENT_SELECT, eventWhere } from './event-filter-sql';

const STAGE_TABLE = 'event_stage';

/**
 * Events in DuckDB. A commit appends the rows to a connection-local staging table (the
 * appender is the fastest way in), then moves them into `events` in one transaction that
 * skips ids already stored and reports which ones it inserted.
 */
export class DuckDbEventStore implements EventStore {
  private stageReady = false;

  constructor(private readonly db: DuckDbDatabase) {}

  commit(batch: CommitBatch): Promise<CommitOutcome> {
    return this.db.write(async (connection) => {
      const events = uniqueByKey(batch.events);
      if (events.length) await this.stage(connection, events);
      const inserted = new Set<string>();
      try {
        await connection.run('BEGIN TRANSACTION');
        if (events.length) {
          const rows = await this.db.writeQuery(
            connection,
            `INSERT INTO events
               SELECT tenant_seq, event_id::UUID, event, user_id, session_id, broadcast_id, campaign_id,
                      epoch_ms(ts_ms), epoch_ms(received_at_ms), country, order_id, sponsor_id, total, items, data
               FROM ${STAGE_TABLE}
             ON CONFLICT DO NOTHING
             RETURNING tenant_seq, event_id`,
          );
          for (const row of rows) inserted.add(eventKey(Number(row.tenant_seq), String(row.event_id)));
        }
        if (batch.rejects.length) await insertRejects(connection, batch.rejects);
        await connection.run('COMMIT');
      } catch (error) {
        await connection.run('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        if (events.length) await connection.run(`DELETE FROM ${STAGE_TABLE}`);
      }
      return { inserted };
    });
  }

  async queryEvents(filter: EventFilter, page: EventPageRequest): Promise<StoredEvent[]> {
    const values: DuckDBValue[] = [];
    const where = eventWhere(filter, values, page.after);
    values.push(page.limit);
    const rows = await this.db.query(
      `SELECT ${EVENT_SELECT} FROM events WHERE ${where} ORDER BY ts, event_id LIMIT $${values.length}`,
      values,
    );
    return rows.map(toStoredEvent);
  }

  async *streamEvents(filter: EventFilter): AsyncIterable<StoredEvent[]> {
    const values: DuckDBValue[] = [];
    const where = eventWhere(filter, values);
    for await (const rows of this.db.stream(`SELECT ${EVENT_SELECT} FROM events WHERE ${where} ORDER BY ts, event_id`, values)) {
      yield rows.map(toStoredEvent);
    }
  }

  async countEvents(filter: EventFilter): Promise<number> {
    const values: DuckDBValue[] = [];
    const rows = await this.db.query(`SELECT count(*) AS n FROM events WHERE ${eventWhere(filter, values)}`, values);
    return Number(rows[0]?.n ?? 0);
  }

  async purgeEventsBefore(tenantSeq: number, cutoffMs: number): Promise<number> {
    return this.deleteCounting('DELETE FROM events WHERE tenant_seq = $1 AND ts < epoch_ms($2::BIGINT)', [tenantSeq, cutoffMs]);
  }

  async purgeRejectedBefore(cutoffMs: number): Promise<number> {
    return this.deleteCounting('DELETE FROM rejected_events WHERE received_at < epoch_ms($1::BIGINT)', [cutoffMs]);
  }

  private deleteCounting(sql: string, values: DuckDBValue[]): Promise<number> {
    return this.db.write(async (connection) => {
      const result = await connection.run(sql, values);
      return Number(result.rowsChanged);
    });
  }

  async listRejected(
    tenantSeq: number,
    options: { limit: number; after?: { receivedAtMs: number; id: string } },
  ): Promise<QuarantinedEvent[]> {
    const values: DuckDBValue[] = [tenantSeq, options.limit];
    let after = '';
    if (options.after) {
      after = 'AND (received_at < epoch_ms($3::BIGINT) OR (received_at = epoch_ms($3::BIGINT) AND id < $4::UUID))';
      values.push(options.after.receivedAtMs, options.after.id);
    }
    const rows = await this.db.query(
      `SELECT id::VARCHAR AS id, epoch_ms(received_at) AS received_at_ms, code, detail, errors, event_name, payload
       FROM rejected_events
       WHERE tenant_seq = $1 ${after}
       ORDER BY received_at DESC, id DESC LIMIT $2`,
      values,
    );
    return rows.map((row) => ({
      id: String(row.id),
      receivedAt: new Date(Number(row.received_at_ms)).toISOString(),
      code: String(row.code),
      detail: String(row.detail),
      errors: JSON.parse(String(row.errors)) as unknown[],
      event: row.event_name === null ? null : String(row.event_name),
      payload: JSON.parse(String(row.payload)) as unknown,
    }));
  }

  private async stage(connection: DuckDBConnection, events: EventRow[]): Promise<void> {
    if (!this.stageReady) {
      await connection.run(
        `CREATE TEMP TABLE IF NOT EXISTS ${STAGE_TABLE} (
           tenant_seq INTEGER, event_id VARCHAR, event VARCHAR, user_id VARCHAR, session_id VARCHAR,
           broadcast_id VARCHAR, campaign_id BIGINT, ts_ms BIGINT, received_at_ms BIGINT, country VARCHAR,
           order_id VARCHAR, sponsor_id VARCHAR, total DOUBLE, items VARCHAR, data VARCHAR)`,
      );
      this.stageReady = true;
    }
    const appender = await connection.createAppender(STAGE_TABLE, null, 'temp');
    try {
      for (const e of events) {
        appender.appendInteger(e.tenantSeq);
        appender.appendVarchar(e.eventId);
        appender.appendVarchar(e.event);
        appendNullableVarchar(appender, e.userId);
        appender.appendVarchar(e.sessionId);
        appender.appendVarchar(e.broadcastId);
        appender.appendBigInt(BigInt(e.campaignId));
        appender.appendBigInt(BigInt(e.timestampMs));
        appender.appendBigInt(BigInt(e.receivedAtMs));
        appendNullableVarchar(appender, e.country);
        appendNullableVarchar(appender, e.orderId);
        appendNullableVarchar(appender, e.sponsorId);
        if (e.total === null) appender.appendNull();
        else appender.appendDouble(e.total);
        appendNullableVarchar(appender, e.items);
        appender.appendVarchar(e.data);
        appender.endRow();
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }
}

type Appender = Awaited<ReturnType<DuckDBConnection['createAppender']>>;

function appendNullableVarchar(appender: Appender, value: string | null): void {
  if (value === null) appender.appendNull();
  else appender.appendVarchar(value);
}

function uniqueByKey(events: EventRow[]): EventRow[] {
  const seen = new Set<string>();
  return events.filter((e) => {
    const key = eventKey(e.tenantSeq, e.eventId);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

async function insertRejects(connection: DuckDBConnection, rejects: QuarantineRow[]): Promise<void> {
  const prepared = await connection.prepare(
    `INSERT INTO rejected_events VALUES ($1, $2::UUID, epoch_ms($3::BIGINT), $4, $5, $6, $7, $8, $9)`,
  );
  for (const r of rejects) {
    prepared.bind([r.tenantSeq, r.id, r.receivedAtMs, r.code, r.detail, r.errors, r.eventName, r.userId, r.payload]);
    await prepared.run();
  }
}

function toStoredEvent(row: Row): StoredEvent {
  return {
    eventId: String(row.event_id),
    event: String(row.event) as EventName,
    userId: nullableString(row.user_id),
    sessionId: String(row.session_id),
    broadcastId: String(row.broadcast_id),
    campaignId: Number(row.campaign_id),
    timestamp: new Date(Number(row.ts_ms)).toISOString(),
    receivedAt: new Date(Number(row.received_at_ms)).toISOString(),
    country: nullableString(row.country),
    data: JSON.parse(String(row.data)) as Record<string, unknown>,
    orderId: nullableString(row.order_id),
    sponsorId: nullableString(row.sponsor_id),
    items: row.items === null ? null : (JSON.parse(String(row.items)) as StoredEvent['items']),
    total: row.total === null ? null : Number(row.total),
  };
}

function nullableString(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}
