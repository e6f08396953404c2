// pg-boss 12.38.0 driver for `make bench` (scripts/bench.py, hookdtest.bench.peers).
// argv[2]: JSON {mode: processing|retries|lateness, n, entities, pg, batchSize, localConcurrency, fails, spreadMs}.
// Configured as pg-boss's documentation recommends for throughput: jobs
// created with insert() (one statement per 1,000), batch workers
// (`batchSize`, `localConcurrency`, `burstWhenBatchFull`: no polling delay
// while batches come back full, `pollingIntervalSeconds` at its 0.5 s
// minimum), per-job results for the retries (`perJobResults`), a queue
// with `retryLimit` and `retryDelay` (whole seconds only: 0, i.e. at once,
// stands in for 10 ms, in pg-boss's favour).
import { PgBoss } from 'pg-boss';
import { args, done, percentile, pool, processJob, waitUntil } from './common.mjs';

const a = args();
const batchSize = a.batchSize || 100;
const localConcurrency = a.localConcurrency || 2;
const p = pool(a.pg, 16);
const boss = new PgBoss({ connectionString: a.pg, max: 8, schema: 'pgboss' });
boss.on('error', () => {});
await boss.start();
const name = `bench_${a.mode}_${process.pid}`;
const fails = a.fails || 3;
const queueOpts = a.mode === 'retries' ? { retryLimit: fails, retryDelay: 0, retryBackoff: false } : { retryLimit: 0 };
await boss.createQueue(name, queueOpts);

const t0due = Date.now() + 3000 + Math.floor(a.n / 2); // time to add them all first
const jobs = [];
for (let i = 0; i < a.n; i++) {
  const data = { i, entity: `e${i % (a.entities || 1)}` };
  const j = { data };
  if (a.mode === 'lateness') {
    data.due = t0due + Math.floor((i * (a.spreadMs || 10000)) / a.n);
    j.startAfter = new Date(data.due);
  }
  jobs.push(j);
}
const tAdd = Date.now();
for (let i = 0; i < jobs.length; i += 1000) await boss.insert(name, jobs.slice(i, i + 1000));
const addS = (Date.now() - tAdd) / 1000;

let completed = 0, attempts = 0;
const late = [];
const t0 = Date.now();
const workOpts = { batchSize, localConcurrency, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 };
if (a.mode === 'retries') workOpts.perJobResults = true;
await boss.work(name, workOpts, async (batch) => {
  attempts += batch.length;
  if (a.mode === 'lateness') {
    const now = Date.now();
    for (const j of batch) late.push(now - j.data.due);
    completed += batch.length;
    return;
  }
  if (a.mode === 'processing') {
    await Promise.all(batch.map((j) => processJob(p, j.id, j.data.entity)));
    completed += batch.length;
    return;
  }
  return Promise.all(batch.map(async (j) => {
    if (j.retryCount < fails) return { id: j.id, status: 'failed' };
    await processJob(p, j.id, j.data.entity);
    completed++;
    return { id: j.id, status: 'completed' };
  }));
});
const ok = await waitUntil(() => completed >= a.n, a.capMs || 120000);
const seconds = (Date.now() - t0) / 1000;
await boss.stop({ graceful: false, close: true, timeout: 5000 }).catch(() => {});
await p.end();
late.sort((x, y) => x - y);
done({ peer: 'pg-boss', mode: a.mode, n: a.n, completed, attempts, seconds, add_seconds: addS, complete: ok,
  per_s: completed / seconds, attempts_per_s: attempts / seconds,
  lateness_p50_ms: percentile(late, 0.5), lateness_p99_ms: percentile(late, 0.99), lateness_max_ms: late.at(-1) || 0,
  config: { queue: queueOpts, work: workOpts, pg_pool: 16, boss_pool: 8 } });
process.exit(0);
