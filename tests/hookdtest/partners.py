"""One partner per signature scheme besides the template's `shop`
(standard-webhooks), with their secrets: the config text that the ingest
and replay tests add to a worker's config."""
from __future__ import annotations

STRIPE_SECRET = "whsec_stripe_test_3b9f1c0e7a"  # Stripe signs with the whole string, prefix included
GITHUB_SECRET = "gh-secret-5d0e8a21"
GENERIC_SECRET = "generic-secret-91c4f7"

PARTNERS = f"""
[partner stripe]
scheme = stripe
secret = {STRIPE_SECRET}
entity_id = json:data.object.metadata.order_id

[partner github]
scheme = github
secret = {GITHUB_SECRET}
entity_id = json:order_id

[partner generic]
scheme = hmac-sha256
secret = {GENERIC_SECRET}
header = X-Signature
event_id = json:id
entity_id = json:data.order_id
"""
