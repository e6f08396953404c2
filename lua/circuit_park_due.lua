-- circuit_park_due: an endpoint's circuit just opened: of its open deliveries
-- (ids from Postgres), those waiting in the due set move to its parked set
-- at their scores, so that none is claimed, loaded and parked one by one
-- while the circuit stays open. Those held by a worker are parked when they
-- come back (circuit_park). Nothing is moved if the circuit closed meanwhile.
-- KEYS[1] open hash, KEYS[2] due zset, KEYS[3] the endpoint's parked zset,
-- KEYS[4] parked ids hash (delivery id -> endpoint)
-- ARGV[1] endpoint, ARGV[2..] delivery ids
-- Returns the number parked.
if not redis.call('HGET', KEYS[1], ARGV[1]) then
  return 0
end
local n = 0
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if score then
    redis.call('ZREM', KEYS[2], ARGV[i])
    redis.call('ZADD', KEYS[3], score, ARGV[i])
    redis.call('HSET', KEYS[4], ARGV[i], ARGV[1])
    n = n + 1
  end
end
return n
