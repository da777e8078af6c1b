import { expect } from 'vitest';
import type { PollDefinition } from '@svc/protocol';
import type { AnalyticsFilter, AnalyticsStore } from '../src';
import type { ChDatabase } from '../src/clickhouse/ch-database';
import { rangeHours } from '../src/clickhouse/ch-rollup-reads';
import type { PollLookup } from '../src/clickhouse/ch-poll-results';
import type { EventRow } from '../src/records';
import { pollsOf } from './analytics-dataset';
import { modelContestEntries, modelCountries, modelEngagement, modelFunnel, modelPollResults, modelRevenue, modelRevenueMinutes, modelSponsorPerformance, modelViewerSeries } from './analytics-model';
import { insertEvents } from './clickhouse-events';

/** What the ClickHouse dashboard tests share (on the 18.16 server and on the current engine). */

/** The polls of each tenant, as the content service's catalogue would find them. */
export function pollLookup(byTenant: Record<number, PollDefinition[]>): PollLookup {
  return { find: (tenantSeq, pollId) => byTenant[tenantSeq]?.find((poll) => poll.id === pollId) };
}

export async function expectModel(store: AnalyticsStore, events: EventRow[], filter: AnalyticsFilter, polls: PollDefinition[] = pollsOf()): Promise<void> {
  const label = JSON.stringify(filter);
  expect(await store.viewerSeries(filter), label).toEqual(modelViewerSeries(events, filter));
  expect(await store.engagement(filter), label).toEqual(modelEngagement(events, filter));
  expect(await store.pollResults(filter), label).toEqual(modelPollResults(events, filter, polls));
  expect(await store.sponsorPerformance(filter), label).toEqual(modelSponsorPerformance(events, filter));
  expect(await store.revenue(filter), label).toEqual(modelRevenue(events, filter));
  expect(await store.funnel(filter), label).toEqual(modelFunnel(events, filter));
  expect(await store.contestEntries(filter), label).toEqual(modelContestEntries(events, filter));
  expect(await store.revenueMinutes(filter), label).toEqual(modelRevenueMinutes(events, filter));
  expect(await store.countries(filter), label).toEqual(modelCountries(events, filter));
}

/**
 * Stores the events in several inserts (several parts), then a fifth of them again, as a
 * retried batch would, with merges stopped so that the copies stay unmerged during the test.
 */
export async function storeWithCopies(db: ChDatabase, events: EventRow[]): Promise<void> {
  await db.command('SYSTEM STOP MERGES events');
  for (let i = 0; i < events.length; i += 50) await insertEvents(db, events.slice(i, i + 50));
  await insertEvents(db, events.filter((_, i) => i % 5 === 0));
}

/** Waits past the server's current second: a derivation begun after it answers for the inserts before. */
export const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1_100));

/**
 * Stores most of the events with copies, derives their hours, then stores the rest (late events
 * into hours already derived): every panel must answer as the raw events do before the first
 * derivation, after it, after the late events (their hours read from the events again) and
 * after those hours were derived again, two derivations running at once.
 */
export async function expectModelThroughDerivations(db: ChDatabase, events: EventRow[], filters: AnalyticsFilter[], openStore: () => AnalyticsStore): Promise<void> {
  const late = events.filter((_, i) => i % 7 === 3);
  const early = events.filter((_, i) => i % 7 !== 3);
  await storeWithCopies(db, early);
  const store = openStore();
  await nextSecond();
  await store.compact();
  const [versions] = await db.query<{ hours: string }>('SELECT uniqExact(tenant_seq, hour) AS hours FROM rollup_versions');
  expect(Number(versions!.hours)).toBeGreaterThan(5);
  // The panels read those hours from the rollups, none from the events.
  const whole = await rangeHours(db, { tenantSeq: events[0]!.tenantSeq }, 1);
  expect(whole.derived.length).toBeGreaterThan(0);
  expect(whole.pending).toEqual([]);
  for (const filter of filters) await expectModel(store, early, filter);
  await insertEvents(db, late);
  for (const filter of filters) await expectModel(store, events, filter);
  await nextSecond();
  await Promise.all([store.compact(), openStore().compact()]);
  for (const filter of filters) await expectModel(store, events, filter);
}

/** Records the statements sent through `db` while `run` runs. */
export async function statementsOf(db: ChDatabase, run: () => Promise<void>): Promise<string[]> {
  const sent: string[] = [];
  const [query, command] = [db.query.bind(db), db.command.bind(db)];
  db.query = ((sql: string, ...rest: never[]) => (sent.push(sql), query(sql, ...rest))) as typeof db.query;
  db.command = ((sql: string, ...rest: never[]) => (sent.push(sql), command(sql, ...rest))) as typeof db.command;
  try {
    await run();
  } finally {
    db.query = query;
    db.command = command;
  }
  return sent;
}
