import { systemClock, toExportRecord, type Clock, type ExportRecord, type ExportTextFormat } from '@svc/protocol';
import type { EventStore, Tenant } from '@svc/storage';
import { CSV_HEADER } from './csv';
import { decodeCursor, encodeCursor, filterFingerprint } from './export-cursor';
import type { ExportQuery } from './export-query';

export interface ExportPage {
  data: ExportRecord[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Raw export for data warehouses. JSON pages follow a keyset cursor over (timestamp, eventId)
 * and are pinned to the events received when the first page was read, so that joining the
 * pages gives every event exactly once even while ingest goes on. NDJSON and CSV stream the
 * whole result in chunks of database-made text.
 */
export class ExportService {
  constructor(
    private readonly events: EventStore,
    readonly clock: Clock = systemClock,
  ) {}

  async page(tenant: Tenant, query: ExportQuery): Promise<ExportPage> {
    // The order is part of what a cursor continues: one of the other order is refused, not misread.
    const fingerprint = filterFingerprint(query.order === 'desc' ? { ...query.filter, order: 'desc' } : query.filter);
    const cursor = query.cursor ? decodeCursor(query.cursor, fingerprint) : undefined;
    const asOfMs = cursor?.asOfMs ?? this.clock.now();
    const rows = await this.events.queryEvents(
      { ...query.filter, tenantSeq: tenant.seq, receivedUpToMs: asOfMs },
      { limit: query.limit + 1, after: cursor, order: query.order },
    );
    const more = rows.length > query.limit;
    const data = more ? rows.slice(0, query.limit) : rows;
    const last = data[data.length - 1];
    return {
      data: data.map(toExportRecord),
      nextCursor: more && last ? encodeCursor({ timestampMs: Date.parse(last.timestamp), eventId: last.eventId, asOfMs }, fingerprint) : null,
    };
  }

  /** How many events a stream started now would carry; pass the same `asOfMs` to `stream`. */
  count(tenant: Tenant, query: ExportQuery, asOfMs: number): Promise<number> {
    return this.events.countEvents({ ...query.filter, tenantSeq: tenant.seq, receivedUpToMs: asOfMs });
  }

  /**
   * The whole result as NDJSON lines or CSV records (header first), a chunk of text at a time:
   * the database writes the text, the stream only passes it on. With `query.csvSafe`, CSV
   * cells that a spreadsheet would run as formulas start with a single quote.
   */
  async *stream(tenant: Tenant, query: ExportQuery, format: ExportTextFormat, asOfMs: number): AsyncIterable<string> {
    if (format === 'csv') yield CSV_HEADER;
    yield* this.events.streamEventText({ ...query.filter, tenantSeq: tenant.seq, receivedUpToMs: asOfMs }, format, { neutraliseFormulas: query.csvSafe });
  }
}
