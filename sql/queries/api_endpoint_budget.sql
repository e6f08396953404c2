-- An application's endpoints as its budget counts them ([hookd]
-- tenant_max_endpoints, tenant_max_filter_bytes): how many there are, and
-- the bytes of their filters as the relay reads them on every pass
-- (sql/queries/relay_endpoints.sql: the event types as a JSON array, the
-- payload filter as text).
-- parameters: $1 = application id
-- columns: endpoints, filter_bytes
SELECT count(*) AS endpoints,
       coalesce(sum(octet_length(array_to_json(e.event_types)::text)
                    + coalesce(octet_length(e.payload_filter::text), 0)), 0)::bigint AS filter_bytes
  FROM webhook_endpoints e WHERE e.tenant_id = $1
