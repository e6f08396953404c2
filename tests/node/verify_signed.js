// Checks requests a test signed with the providers' own verifiers, in one
// process per batch: reads a JSON array on stdin, writes an array of
// booleans (true = the SDK accepts the request) on stdout. Items:
//   {"kind": "sendgrid", "public_key": base64 DER, "body": base64, "signature": …, "timestamp": …}
//   {"kind": "discord",  "public_key": hex,        "body": base64, "signature": hex, "timestamp": …}
//   {"kind": "slack", "secret": …, "body": base64, "signature": "v0=…", "timestamp": …}
// Used by tests/integration/test_handshakes.py (hookdtest.sdk).
'use strict';
const { EventWebhook } = require('@sendgrid/eventwebhook');
const { verifyKey } = require('discord-interactions');
const { isValidSlackRequest } = require('@slack/bolt');

async function check(item) {
  const body = Buffer.from(item.body, 'base64');
  switch (item.kind) {
    case 'sendgrid': {
      const ew = new EventWebhook();
      return ew.verifySignature(ew.convertPublicKeyToECDSA(item.public_key), body, item.signature, item.timestamp);
    }
    case 'discord':
      return await verifyKey(body, item.signature, item.timestamp, item.public_key);
    case 'slack':
      return isValidSlackRequest({
        signingSecret: item.secret,
        body: body.toString('utf8'),
        headers: { 'x-slack-signature': item.signature, 'x-slack-request-timestamp': Number(item.timestamp) },
      });
    default:
      throw new Error(`unknown kind ${item.kind}`);
  }
}

(async () => {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const items = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const out = [];
  for (const item of items) out.push(await check(item));
  process.stdout.write(JSON.stringify(out));
})().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
