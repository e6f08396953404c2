-- Only after a conflict in relay_settle (a delivery row that already
-- existed): which of the pass's deliveries went in.
-- parameters: $1 = delivery ids (uuid[], binary)
-- columns: id
SELECT id::text AS id FROM outbox_deliveries WHERE id = ANY ($1::uuid[])
