-- "Are all deliveries of this event done?" is asked after every recorded
-- delivery: answer it from an index of the unfinished ones only.
CREATE INDEX outbox_deliveries_event_open ON outbox_deliveries (event_id)
    WHERE status IN ('PENDING', 'RETRYING');
