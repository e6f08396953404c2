// The providers' own SDKs, for tests/integration/test_presets.py: signs with
// the SDKs that can sign, and runs the verifiers of the SDKs that only verify
// over the requests the test signed itself, so that the test's signer is
// proven to be the provider's algorithm. One node process per batch (node
// starts slowly): reads a JSON array of jobs on stdin, writes a JSON array of
// results ({value} or {error}) on stdout, in the same order.
'use strict';

const jobs = {
  // Stripe: the SDK's test-header helper (t=…,v1=…).
  async stripe_sign(j) {
    const stripe = require('stripe')('sk_test_unused');
    return stripe.webhooks.generateTestHeaderString({ payload: j.payload, secret: j.secret, timestamp: j.timestamp });
  },
  // Twilio: the X-Twilio-Signature the SDK expects for (url, params).
  async twilio_sign(j) {
    const twilio = require('twilio');
    return twilio.getExpectedTwilioSignature(j.token, j.url, j.params, j.algorithm);
  },
  // Twilio's own verifiers, to prove that what the test sends is valid.
  async twilio_verify(j) {
    const twilio = require('twilio');
    if (j.body !== undefined) return twilio.validateRequestWithBody(j.token, j.signature, j.url, j.body);
    return twilio.validateRequest(j.token, j.signature, j.url, j.params);
  },
  // Standard Webhooks (Svix, Clerk, Resend…): the reference SDK's signer.
  async standard_sign(j) {
    const { Webhook } = require('standardwebhooks');
    return new Webhook(j.secret).sign(j.id, new Date(j.timestamp * 1000), j.payload);
  },
  // GitHub: @octokit/webhooks-methods' sign (an ES module).
  async octokit_sign(j) {
    const { sign } = await import('@octokit/webhooks-methods');
    return sign(j.secret, j.payload);
  },
  // Square: the SDK only verifies.
  async square_verify(j) {
    const { WebhooksHelper } = require('square');
    return WebhooksHelper.verifySignature({
      requestBody: j.body, signatureHeader: j.signature, signatureKey: j.key, notificationUrl: j.url,
    });
  },
  // Slack: @slack/bolt's request verifier (throws when invalid).
  async slack_verify(j) {
    const { verifySlackRequest } = require('@slack/bolt');
    try {
      verifySlackRequest({
        signingSecret: j.secret, body: j.body,
        headers: { 'x-slack-signature': j.signature, 'x-slack-request-timestamp': Number(j.timestamp) },
      });
      return true;
    } catch (e) {
      return false;
    }
  },
  // Paddle: the SDK's validator (5 s tolerance, so verified right after signing).
  async paddle_verify(j) {
    const { Paddle } = require('@paddle/paddle-node-sdk');
    const paddle = new Paddle('pdl_sdbx_apikey_unused'); // sets up the SDK's Node crypto
    return paddle.webhooks.isSignatureValid(j.body, j.secret, j.signature);
  },
  // Shopify: @shopify/shopify-api's webhook validation, through its web-api adapter.
  async shopify_verify(j) {
    require('@shopify/shopify-api/adapters/web-api');
    const { shopifyApi, ApiVersion, LogSeverity } = require('@shopify/shopify-api');
    const shopify = shopifyApi({
      apiKey: 'test-key', apiSecretKey: j.secret, hostName: 'hookd.example', apiVersion: Object.values(ApiVersion).sort().pop(),
      isEmbeddedApp: false, logger: { level: LogSeverity.Error, log: () => {} },
    });
    const rawRequest = new Request('https://hookd.example/v1/inbox/shopify', {
      method: 'POST', headers: j.headers, body: j.body,
    });
    const result = await shopify.webhooks.validate({ rawBody: j.body, rawRequest, rawResponse: new Response() });
    return result.valid === true;
  },
};

async function main() {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const out = [];
  for (const job of JSON.parse(input)) {
    try {
      const fn = jobs[job.op];
      if (!fn) throw new Error(`unknown op ${job.op}`);
      out.push({ value: await fn(job) });
    } catch (e) {
      out.push({ error: String(e && e.stack ? e.stack : e) });
    }
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
