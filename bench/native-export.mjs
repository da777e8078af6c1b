// DuckDB's own export of a table to a file, alone in a process (Node and DuckDB only), for the
// export benchmark's floor: prints {seconds, bytes, peakRssMiB} as JSON.
// Usage: node bench/native-export.mjs <database file> <tenant seq> <csv|ndjson> <output file> [memory limit]
import { readFileSync, statSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [path, tenantSeq, format, out, memoryLimit] = process.argv.slice(2);
// One thread per query, as the service runs DuckDB (SVC_DB_THREADS default).
const instance = await DuckDBInstance.create(path, { threads: '1', ...(memoryLimit ? { memory_limit: memoryLimit } : {}) });
const connection = await instance.connect();
const options = format === 'csv' ? '(FORMAT csv, HEADER)' : '(FORMAT json)';
const t0 = performance.now();
await connection.run(
  `COPY (SELECT event_id, event, user_id, session_id, broadcast_id, campaign_id, ts, received_at, country, order_id, sponsor_id, total, items, data
         FROM events WHERE tenant_seq = ${Number(tenantSeq)} ORDER BY ts, event_id) TO '${out.replace(/'/g, "''")}' ${options}`,
);
const seconds = (performance.now() - t0) / 1000;
const peakKiB = Number(/^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
connection.closeSync();
instance.closeSync();
process.stdout.write(`${JSON.stringify({ seconds, bytes: statSync(out).size, peakRssMiB: peakKiB / 1024 })}\n`);
