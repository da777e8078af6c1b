import { rebuildRollups, type DuckDbDatabase } from '@svc/storage';

/**
 * Generated dashboard data for the dashboard benchmark, written straight into the events table
 * of an embedded database with INSERT … SELECT (going through the ingest pipeline would take
 * many minutes for 10 million events). Every choice is a hash of the session number (and the
 * event's position in it), so the same counts give the same data on every run (shifted in time
 * to end a few hours before `now`).
 *
 * Shape: BROADCASTS broadcasts, one every 3.6 hours over 30 days (start jittered by up to 2
 * hours, so two or three run at once), in CAMPAIGNS campaigns; sessions of 10–40 events, one
 * event every 30 s to 3 min, starting up to 100 minutes into their broadcast: broadcast.joined
 * first, broadcast.left last (1 in 20 ends without, as after a timeout); in between polls (3
 * per broadcast, 4 options), sponsor moments (4 per broadcast, 4 sponsors), contests, lineups,
 * product views and taps (35% of the sessions only watch: no vote, tap or entry). 55% of the
 * sessions shop: product.viewed → cart.item_added → checkout.started → checkout.completed,
 * dropping off at each step; 1 in 10 completed orders is reported twice (a retry with a new event id). 60% of the sessions have a userId (of
 * 200,000 fans), 12 countries, GBP for viewers in GB and EUR otherwise. Event ids are
 * UUIDv7-shaped (time first) and rows are inserted in event-time order, as ingestion would.
 */
export const BROADCASTS = 200;
export const CAMPAIGNS = 4;
export const DAYS = 30;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** The newest broadcast's last events end at least this long before `now`. */
const TAIL_MS = 6 * HOUR_MS;

const COUNTRIES = ['DE', 'DE', 'DE', 'FR', 'FR', 'GB', 'IT', 'ES', 'NL', 'AT', 'PL', 'US'];
const SPONSORS = ['acme', 'bolt', 'cobra', 'delta'];
const PRODUCTS = [
  { id: 'jersey-home', price: 79.9, sponsor: 'acme' },
  { id: 'scarf', price: 24.5, sponsor: 'acme' },
  { id: 'cap', price: 19.9, sponsor: 'bolt' },
  { id: 'ball', price: 39, sponsor: 'bolt' },
  { id: 'bottle', price: 12.5, sponsor: 'cobra' },
  { id: 'hoodie', price: 59, sponsor: 'delta' },
];
const QUESTIONS = ['Who wins tonight?', 'Player of the match?', 'Goals in the second half?'];
const OPTIONS = ['Home', 'Away', 'Draw', 'Extra time'];
/** Events between broadcast.joined and the funnel, by hash % 100. */
const FILLER = [
  [15, 'poll.viewed'],
  [45, 'poll.voted'],
  [65, 'sponsor_moment.viewed'],
  [73, 'sponsor_moment.tapped'],
  [83, 'product.viewed'],
  [88, 'contest.viewed'],
  [91, 'contest.entered'],
  [96, 'lineup.viewed'],
  [100, 'product.tapped'],
] as const;
/** Share of sessions that only watch (no vote, tap or contest entry), and what they see instead. */
const PASSIVE_PERCENT = 35;
const PASSIVE: Partial<Record<string, string>> = {
  'poll.voted': 'poll.viewed',
  'sponsor_moment.tapped': 'sponsor_moment.viewed',
  'contest.entered': 'contest.viewed',
  'product.tapped': 'product.viewed',
};

export interface GeneratedData {
  events: number;
  sessions: number;
  /** Epoch ms of the first possible event (the start of the 30 days). */
  fromMs: number;
  /** Epoch ms after the last event. */
  toMs: number;
  /** The newest broadcast (the "live" one in the benchmark). */
  latestBroadcastId: string;
}

const sqlList = (values: readonly (string | number)[]) =>
  `[${values.map((v) => (typeof v === 'number' ? String(v) : `'${v.replace(/'/g, "''")}'`)).join(', ')}]`;

export const broadcastId = (b: number) => `bc-${String(b).padStart(3, '0')}`;

/** Writes `events` events (and the broadcasts, campaigns and sponsors) for tenant `tenantSeq`. */
export async function generateDashboardData(db: DuckDbDatabase, tenantSeq: number, events: number, now: number): Promise<GeneratedData> {
  if (!Number.isInteger(tenantSeq) || !Number.isInteger(events) || events <= 0) throw new Error('bad generation parameters');
  const fromMs = Math.floor((now - DAYS * DAY_MS - TAIL_MS) / HOUR_MS) * HOUR_MS;
  const spacingMs = Math.floor((DAYS * DAY_MS) / BROADCASTS);
  // Enough candidate sessions for any length draw (at least 10 events each); the surplus is cut.
  const candidates = Math.ceil(events / 10) + 1;
  const pids = sqlList(PRODUCTS.map((p) => p.id));
  const prices = sqlList(PRODUCTS.map((p) => p.price));
  const productSponsors = sqlList(PRODUCTS.map((p) => p.sponsor));
  const funnel = sqlList(['product.viewed', 'cart.item_added', 'checkout.started', 'checkout.completed']);
  const fillerOf = (passive: boolean) =>
    // A passive session only watches: its engaging events become the matching views.
    `CASE ${FILLER.map(([limit, name]) => `WHEN hash(s, k, 'f') % 100 < ${limit} THEN '${passive ? (PASSIVE[name] ?? name) : name}'`).join(' ')} END`;

  const statements = [
    `CREATE OR REPLACE TEMP TABLE bench_broadcasts AS
       SELECT b, 'bc-' || lpad(b::VARCHAR, 3, '0') AS id, (1 + hash(b, 'campaign') % ${CAMPAIGNS})::BIGINT AS campaign_id,
              (${fromMs} + b * ${spacingMs} + hash(b, 'start') % ${2 * HOUR_MS})::BIGINT AS start_ms
       FROM range(${BROADCASTS}) t(b)`,
    `CREATE OR REPLACE TEMP TABLE bench_sessions AS
       WITH drawn AS (
         SELECT s, (hash(s, 'b') % ${BROADCASTS})::INTEGER AS b, (10 + hash(s, 'len') % 31)::INTEGER AS len,
                'svc_' || lower(lpad(to_hex(hash(s, 'sid')), 16, '0')) || '_' || s AS session_id,
                CASE WHEN hash(s, 'anon') % 10 < 6 THEN 'fan-' || hash(s, 'user') % 200000 END AS user_id,
                ${sqlList(COUNTRIES)}[1 + (hash(s, 'country') % ${COUNTRIES.length})::BIGINT] AS country,
                (hash(s, 'start') % ${100 * 60_000})::BIGINT AS offset_ms, (30000 + hash(s, 'gap') % 150000)::BIGINT AS gap_ms,
                CASE WHEN hash(s, 'shop') % 100 < 45 THEN 0 WHEN hash(s, 'shop') % 100 < 70 THEN 1 WHEN hash(s, 'shop') % 100 < 85 THEN 2
                     WHEN hash(s, 'shop') % 100 < 93 THEN 3 ELSE 4 END AS level,
                (1 + hash(s, 'product') % ${PRODUCTS.length})::INTEGER AS product, (1 + hash(s, 'qty') % 3)::INTEGER AS qty,
                hash(s, 'dup') % 10 = 0 AS twice, hash(s, 'left') % 20 = 0 AS no_left, hash(s, 'passive') % 100 < ${PASSIVE_PERCENT} AS passive
         FROM range(${candidates}) t(s)),
       placed AS (SELECT *, (sum(len) OVER (ORDER BY s) - len)::BIGINT AS first_event FROM drawn)
       SELECT p.*, bc.id AS broadcast_id, bc.campaign_id, bc.start_ms + p.offset_ms AS start_ms
       FROM placed p JOIN bench_broadcasts bc USING (b) WHERE p.first_event < ${events}`,
    `INSERT INTO events (tenant_seq, event_id, event, user_id, session_id, broadcast_id, campaign_id, ts, received_at, country, order_id, sponsor_id, total, items, data)
       WITH positions AS (
         SELECT *, unnest(range(len)) AS k FROM bench_sessions),
       named AS (
         SELECT *, first_event + k AS i, (start_ms + k * gap_ms + (hash(s, k, 'j') % 10000)::BIGINT)::BIGINT AS ts_ms,
                CASE WHEN k = 0 THEN 'broadcast.joined'
                     WHEN k = len - 1 AND level = 4 AND twice THEN 'checkout.completed'
                     WHEN k = len - 1 AND NOT no_left THEN 'broadcast.left'
                     WHEN k BETWEEN len - 5 AND len - 2 AND k - (len - 5) < level THEN ${funnel}[k - (len - 5) + 1]
                     WHEN passive THEN ${fillerOf(true)}
                     ELSE ${fillerOf(false)} END AS event,
                (hash(s, k, 'poll') % 3)::INTEGER AS poll, ([0, 0, 0, 0, 1, 1, 1, 2, 2, 3])[1 + (hash(s, k, 'opt') % 10)::BIGINT] AS opt,
                (hash(s, k, 'moment') % 4)::INTEGER AS moment,
                ${pids}[product] AS pid, ${prices}[product] AS price, ${productSponsors}[product] AS product_sponsor,
                CASE WHEN country = 'GB' THEN 'GBP' ELSE 'EUR' END AS currency
         FROM positions WHERE first_event + k < ${events}),
       rows AS (
         SELECT *, starts_with(event, 'product.') OR starts_with(event, 'cart.') OR starts_with(event, 'checkout.') AS commerce,
                '[{"productId":"' || pid || '","quantity":' || qty || ',"unitPrice":' || price || ',"currency":"' || currency || '"}]' AS line
         FROM named)
       SELECT ${tenantSeq},
              (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-8' || substr(r, 4, 3) || '-' || substr(r, 7, 12))::UUID,
              event, user_id, session_id, broadcast_id, campaign_id, epoch_ms(ts_ms), epoch_ms(ts_ms + 200 + (hash(i, 'recv') % 1800)::BIGINT), country,
              CASE WHEN event = 'checkout.completed' THEN 'ord-' || s END,
              CASE WHEN commerce THEN product_sponsor END,
              CASE WHEN NOT commerce THEN NULL WHEN event LIKE 'product.%' THEN 0 ELSE round(qty * price, 2) END,
              CASE WHEN NOT commerce THEN NULL WHEN event LIKE 'product.%' THEN '[]' ELSE line END,
              CASE event
                WHEN 'broadcast.joined' THEN '{}'
                WHEN 'broadcast.left' THEN '{"reason":"closed","watchedMs":' || (ts_ms - start_ms) || '}'
                WHEN 'poll.viewed' THEN '{"pollId":"' || broadcast_id || '-poll-' || poll || '","questionText":"' || ${sqlList(QUESTIONS)}[1 + poll] || '"}'
                WHEN 'poll.voted' THEN '{"pollId":"' || broadcast_id || '-poll-' || poll || '","questionText":"' || ${sqlList(QUESTIONS)}[1 + poll] ||
                                       '","optionSelected":"' || ${sqlList(OPTIONS)}[1 + opt] || '","optionIndex":' || opt || '}'
                WHEN 'sponsor_moment.viewed' THEN '{"momentId":"' || broadcast_id || '-m' || moment || '","sponsorId":"' || ${sqlList(SPONSORS)}[1 + (b + moment) % 4] || '"}'
                WHEN 'sponsor_moment.tapped' THEN '{"momentId":"' || broadcast_id || '-m' || moment || '","sponsorId":"' || ${sqlList(SPONSORS)}[1 + (b + moment) % 4] || '"}'
                WHEN 'contest.viewed' THEN '{"contestId":"' || broadcast_id || '-contest","title":"Win a signed jersey"}'
                WHEN 'contest.entered' THEN '{"contestId":"' || broadcast_id || '-contest","title":"Win a signed jersey"}'
                WHEN 'lineup.viewed' THEN '{"lineupId":"' || broadcast_id || '-lineup"}'
                WHEN 'product.viewed' THEN '{"productId":"' || pid || '","placement":"carousel"}'
                WHEN 'product.tapped' THEN '{"productId":"' || pid || '"}'
                WHEN 'cart.item_added' THEN '{"productId":"' || pid || '","quantity":' || qty || '}'
                WHEN 'checkout.started' THEN '{}'
                WHEN 'checkout.completed' THEN '{"currency":"' || currency || '"}'
              END
       FROM (SELECT *, lpad(lower(to_hex(ts_ms)), 12, '0') AS h,
                    lpad(lower(to_hex(hash(i, 'id') % 16777216)), 6, '0') || lpad(lower(to_hex(i)), 12, '0') AS r
             FROM rows)
       ORDER BY ts_ms, i`,
    `INSERT INTO campaigns (tenant_seq, id, name, created_at)
       SELECT ${tenantSeq}, c, 'Campaign ' || c, epoch_ms(${fromMs}::BIGINT) FROM range(1, ${CAMPAIGNS + 1}) t(c)
       ON CONFLICT DO NOTHING`,
    `INSERT INTO sponsors (tenant_seq, id, name, created_at)
       SELECT ${tenantSeq}, id, upper(id[1]) || id[2:], epoch_ms(${fromMs}::BIGINT) FROM unnest(${sqlList(SPONSORS)}) t(id)
       ON CONFLICT DO NOTHING`,
    `INSERT INTO broadcasts (tenant_seq, id, campaign_id, title, created_at)
       SELECT ${tenantSeq}, id, campaign_id, 'Broadcast ' || b, epoch_ms(start_ms) FROM bench_broadcasts
       ON CONFLICT DO NOTHING`,
    // The polls the votes name: only votes on a poll the service knows count.
    `INSERT INTO overlays (tenant_seq, broadcast_id, id, type, content, active, created_at, updated_at)
       SELECT ${tenantSeq}, id, id || '-poll-' || poll, 'poll',
              to_json({type: 'poll', question: ${sqlList(QUESTIONS)}[1 + poll], options: ${sqlList(OPTIONS)}})::VARCHAR, false,
              epoch_ms(${fromMs}::BIGINT), epoch_ms(${fromMs}::BIGINT)
       FROM bench_broadcasts, range(3) t(poll)
       ON CONFLICT DO NOTHING`,
  ];
  // Temporary tables belong to the write connection: count there, then drop them.
  const counts = await db.write(async (connection) => {
    for (const sql of statements) await connection.run(sql);
    // What the ingest commits would have written beside the events, in one go.
    await rebuildRollups(connection);
    const [row] = await db.writeQuery(
      connection,
      `SELECT (SELECT count(*) FROM events WHERE tenant_seq = ${tenantSeq}) AS events, (SELECT count(*) FROM bench_sessions) AS sessions,
              (SELECT max(epoch_ms(ts)) FROM events WHERE tenant_seq = ${tenantSeq}) AS last_ms`,
    );
    await connection.run('DROP TABLE bench_sessions; DROP TABLE bench_broadcasts; CHECKPOINT');
    return row;
  });
  const lastMs = Number(counts?.last_ms);
  if (!(lastMs < now)) throw new Error(`generated events reach into the future (${new Date(lastMs).toISOString()})`);
  return {
    events: Number(counts?.events),
    sessions: Number(counts?.sessions),
    fromMs,
    toMs: now,
    latestBroadcastId: broadcastId(BROADCASTS - 1),
  };
}
