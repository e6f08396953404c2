// Graphile Worker 0.18.0 driver for `make bench` (scripts/bench.py, hookdtest.bench.peers).
// argv[2]: JSON {mode: processing|retries|lateness, n, entities, pg, fails, spreadMs, capMs}.
// Configured as Graphile Worker's performance page recommends for
// throughput: a local queue of 500 jobs fetched per round trip, job
// completions and failures batched without delay (`completeJobBatchDelay`,
// `failJobBatchDelay` = 0), 24 concurrent jobs on a pool of 25, jobs added
// with addJobs() 1,000 at a time. Jobs due later are found by polling:
// `pollInterval` 100 ms (the default is 2 s). Its retries wait
// exp(min(attempts, 10)) seconds, fixed in the library: the retries mode
// reports them, the benchmark compares retries with BullMQ and pg-boss.
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import { args, done, percentile, pool, processJob, waitUntil } from './common.mjs';

const a = args();
const fails = a.fails || 3;
const p = pool(a.pg, 16);
const worker = {
  connectionString: a.pg, schema: 'graphile_worker', concurrentJobs: 24, maxPoolSize: 25,
  localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0, pollInterval: 100,
};
const quiet = new Logger(() => () => {}); // a planned failure per retry would print a line each
const utils = await makeWorkerUtils({ preset: { worker }, logger: quiet });
await utils.migrate();

const t0due = Date.now() + 3000 + Math.floor(a.n / 2); // time to add them all first
const specs = [];
for (let i = 0; i < a.n; i++) {
  const payload = { i, entity: `e${i % (a.entities || 1)}` };
  const s = { identifier: 'bench', payload, maxAttempts: a.mode === 'retries' ? fails + 1 : 1 };
  if (a.mode === 'lateness') {
    payload.due = t0due + Math.floor((i * (a.spreadMs || 10000)) / a.n);
    s.runAt = new Date(payload.due);
  }
  specs.push(s);
}
const tAdd = Date.now();
for (let i = 0; i < specs.length; i += 1000) await utils.addJobs(specs.slice(i, i + 1000));
const addS = (Date.now() - tAdd) / 1000;

let completed = 0, attempts = 0;
const late = [];
const t0 = Date.now();
const taskList = {
  bench: async (payload, helpers) => {
    attempts++;
    if (a.mode === 'lateness') {
      late.push(Date.now() - payload.due);
      completed++;
      return;
    }
    if (a.mode === 'retries' && helpers.job.attempts <= fails) throw new Error('planned failure');
    await processJob(p, String(helpers.job.id), payload.entity);
    completed++;
  },
};
const runner = await run({ preset: { worker }, taskList, noHandleSignals: true, logger: quiet });
const ok = await waitUntil(() => completed >= a.n, a.capMs || 120000);
const seconds = (Date.now() - t0) / 1000;
await runner.stop().catch(() => {});
await utils.release();
await p.end();
late.sort((x, y) => x - y);
done({ peer: 'graphile-worker', mode: a.mode, n: a.n, completed, attempts, seconds, add_seconds: addS, complete: ok,
  per_s: completed / seconds, attempts_per_s: attempts / seconds,
  lateness_p50_ms: percentile(late, 0.5), lateness_p99_ms: percentile(late, 0.99), lateness_max_ms: late.at(-1) || 0,
  config: { worker: { ...worker, connectionString: undefined }, pg_pool: 16 } });
process.exit(0);
