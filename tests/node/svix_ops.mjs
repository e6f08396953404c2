// Runs a batch of calls through the official `svix` SDK against hookd, one
// node process for many operations (node's start-up is the slow part).
//
// stdin: {"server": URL, "token": T, "ops": [{"call": "application.create",
//          "args": [...], "as": "name"}, {"verify": {...}}, ...]}
// stdout: one JSON array, an entry per op: {"ok": result} or
//         {"status": code, "body": parsed error body}.
// An argument string "$name.field.sub" is replaced by that field of an
// earlier op's result (named by its "as"). A "token" in an op overrides the
// batch's token for that call (another tenant's token, a wrong one).
// {"verify": {"secret", "payload", "headers"}} checks a delivery a receiver
// got with the SDK's Webhook class: {"ok": parsed payload} or {"error": msg}.
// {"parallel": [op, ...]} sends its calls at once (concurrent requests).
// "sdk": "1" in the batch drives the last 1.x release instead of 2.x.
const input = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.on("data", (c) => (data += c));
  process.stdin.on("end", () => resolve(data));
}));

const { Svix, Webhook } = await import(input.sdk === "1" ? "svix1" : "svix");

const named = {};
function resolve(v) {
  if (typeof v === "string" && v.startsWith("$")) {
    const [name, ...path] = v.slice(1).split(".");
    let x = named[name];
    for (const p of path) x = x == null ? x : x[p];
    return x;
  }
  if (Array.isArray(v)) return v.map(resolve);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x)]));
  return v;
}

const clients = {};
function client(token) {
  // no retries: a test sees the first answer (5xx included)
  return (clients[token] ??= new Svix(token, { serverUrl: input.server, numRetries: 0 }));
}

async function call(op) {
  const [resource, ...rest] = op.call.split(".");
  const method = rest.pop();
  let target = client(op.token ?? input.token)[resource];
  for (const r of rest) target = target[r];
  if (typeof target?.[method] !== "function") throw new Error(`the SDK has no ${op.call}`);
  try {
    let result = await target[method](...resolve(op.args ?? []));
    result = JSON.parse(JSON.stringify(result ?? null));
    if (op.as) named[op.as] = result;
    return { ok: result };
  } catch (e) {
    let body = e.body ?? String(e.message || e);
    if (typeof body === "string") {
      try {
        body = JSON.parse(body); // 5xx bodies come as text
      } catch {}
    }
    return { status: e.code ?? null, body };
  }
}

const out = [];
for (const op of input.ops) {
  if (op.verify) {
    const v = resolve(op.verify);
    try {
      new Webhook(v.secret).verify(v.payload, v.headers); // throws when it does not verify
      out.push({ ok: JSON.parse(v.payload) });
    } catch (e) {
      out.push({ error: String(e.message || e) });
    }
    continue;
  }
  if (op.parallel) {
    // {"parallel": [op, ...]}: the calls all sent at once; {"ok": [their entries, in order]}
    out.push({ ok: await Promise.all(op.parallel.map(call)) });
    continue;
  }
  out.push(await call(op));
}
process.stdout.write(JSON.stringify(out));
