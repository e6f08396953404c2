-- The open deliveries of one endpoint, found without a scan: when an
-- endpoint's circuit closes, every delivery it still owes is made
-- due at once (delivery_release_endpoint), so a recovered receiver's backlog
-- drains at delivery throughput rather than at the retry schedule's pace.
-- Partial: a delivery that succeeds at its first attempt is inserted
-- SUCCEEDED and never enters it; only failing deliveries pay for it.
CREATE INDEX IF NOT EXISTS outbox_deliveries_endpoint_open ON outbox_deliveries (endpoint_id)
    WHERE status IN ('PENDING', 'RETRYING');
