// BullMQ 6.7.6 driver for `make bench` (scripts/bench.py, hookdtest.bench.peers).
// argv[2]: JSON {mode: processing|retries|lateness, n, entities, pg, redisPort, concurrency, fails, spreadMs}.
// Configured as BullMQ's documentation recommends for throughput: jobs added
// with addBulk, one Worker with `concurrency` (async jobs, many at once),
// removeOnComplete/removeOnFail (Redis keeps no finished jobs); retries with
// `attempts` and a fixed `backoff`; delayed jobs with `delay`.
import { Queue, Worker } from 'bullmq';
import { args, done, percentile, pool, processJob, waitUntil } from './common.mjs';

const a = args();
const connection = { host: '127.0.0.1', port: a.redisPort, maxRetriesPerRequest: null };
const name = `bench-${a.mode}-${process.pid}`;
const queue = new Queue(name, { connection });
const concurrency = a.concurrency || 16;
const p = pool(a.pg, concurrency);
const opts = { removeOnComplete: true, removeOnFail: true };
if (a.mode === 'retries') Object.assign(opts, { attempts: (a.fails || 3) + 1, backoff: { type: 'fixed', delay: 10 } });

let completed = 0, attempts = 0;
const late = [];
const t0due = Date.now() + 3000 + Math.floor(a.n / 2); // time to add them all first
const jobs = [];
for (let i = 0; i < a.n; i++) {
  const data = { i, entity: `e${i % (a.entities || 1)}` };
  const o = { ...opts, jobId: `j${i}` };
  if (a.mode === 'lateness') {
    data.due = t0due + Math.floor((i * (a.spreadMs || 10000)) / a.n);
    o.delay = Math.max(0, data.due - Date.now());
  }
  jobs.push({ name: 'job', data, opts: o });
}
const tAdd = Date.now();
for (let i = 0; i < jobs.length; i += 1000) {
  if (a.mode === 'lateness') for (const j of jobs.slice(i, i + 1000)) j.opts.delay = Math.max(0, j.data.due - Date.now());
  await queue.addBulk(jobs.slice(i, i + 1000));
}
const addS = (Date.now() - tAdd) / 1000;

const t0 = Date.now();
const worker = new Worker(name, async (job) => {
  attempts++;
  if (a.mode === 'lateness') {
    late.push(Date.now() - job.data.due);
    completed++;
    return;
  }
  if (a.mode === 'retries' && job.attemptsMade < (a.fails || 3)) throw new Error('planned failure');
  await processJob(p, job.id, job.data.entity);
  completed++;
}, { connection, concurrency });
worker.on('error', () => {});
const ok = await waitUntil(() => completed >= a.n, a.capMs || 120000);
const seconds = (Date.now() - t0) / 1000;
await worker.close();
await queue.obliterate({ force: true }).catch(() => {});
await queue.close();
await p.end();
late.sort((x, y) => x - y);
done({ peer: 'bullmq', mode: a.mode, n: a.n, completed, attempts, seconds, add_seconds: addS, complete: ok,
  per_s: completed / seconds, attempts_per_s: attempts / seconds,
  lateness_p50_ms: percentile(late, 0.5), lateness_p99_ms: percentile(late, 0.99), lateness_max_ms: late.at(-1) || 0,
  config: { concurrency, pg_pool: concurrency, ...opts } });
process.exit(0);
