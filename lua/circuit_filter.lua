-- circuit_filter: which of a claimed batch are parked deliveries of an
-- endpoint whose circuit is open (the reconciler, which knows nothing of
-- circuits, schedules parked rows again): their endpoints, so the worker
-- parks them again without reading them from Postgres. Read-only.
-- KEYS[1] parked ids hash (delivery id -> endpoint), KEYS[2] open hash
-- ARGV: delivery ids
-- Returns one value per id: the endpoint, or '' (not parked, or its
-- circuit is no longer open).
local out = {}
for i = 1, #ARGV do
  local ep = redis.call('HGET', KEYS[1], ARGV[i])
  if ep and redis.call('HGET', KEYS[2], ep) then
    out[i] = ep
  else
    out[i] = ''
  end
end
return out
