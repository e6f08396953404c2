// What both peer drivers share: the arguments, the processing transaction
// (the same work hookd's inbox does per event: lock the entity row, update
// it, insert a processed row, one transaction), percentiles, the result line.
import pg from 'pg';

export function args() {
  const a = JSON.parse(process.argv[2] || '{}');
  for (const k of ['mode', 'n', 'pg']) if (a[k] === undefined) throw new Error(`missing ${k}`);
  return a;
}

export function pool(url, max) {
  return new pg.Pool({ connectionString: url, max });
}

export async function processJob(p, jobId, entityId) {
  const c = await p.connect();
  try {
    await c.query('BEGIN');
    await c.query('SELECT state FROM peer_entities WHERE id = $1 FOR UPDATE', [entityId]);
    await c.query("UPDATE peer_entities SET state = 'paid', version = version + 1, updated_at = now() WHERE id = $1",
      [entityId]);
    await c.query('INSERT INTO peer_processed (job_id, entity_id) VALUES ($1, $2)', [jobId, entityId]);
    await c.query('COMMIT');
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    c.release();
  }
}

export function percentile(sorted, q) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export function done(result) {
  process.stdout.write(JSON.stringify(result) + '\n');
}

export function waitUntil(cond, capMs) {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (cond() || Date.now() - t0 > capMs) {
        clearInterval(t);
        resolve(cond());
      }
    }, 5);
  });
}
