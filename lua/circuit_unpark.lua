-- circuit_unpark: one bounded chunk of a closed circuit's parked deliveries
-- back to due at their scores (circuit_report moved the first chunk and
-- marked the endpoint draining). Called again until nothing is left, so
-- Redis serves every other client between chunks; any worker may call it
-- (the one whose report closed the circuit, or one that finds the endpoint
-- still draining, e.g. because that worker died). Each member moves
-- atomically: it is in exactly one of parked and due (or inflight) before
-- and after. A member a worker holds (the reconciler seeded it and it was
-- claimed) is only unparked, not made due a second time. If the circuit
-- opened again meanwhile the rest stays parked (and draining ends).
-- KEYS[1] open hash, KEYS[2] draining hash, KEYS[3] the endpoint's parked
-- zset, KEYS[4] due zset, KEYS[5] inflight zset, KEYS[6] parked ids hash
-- ARGV[1] endpoint, ARGV[2] chunk size
-- Returns {moved, left}: left 0 when the endpoint no longer drains.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return {0, 0}
end
local m = redis.call('ZRANGE', KEYS[3], 0, tonumber(ARGV[2]) - 1, 'WITHSCORES')
local moved = 0
for j = 1, #m, 2 do
  redis.call('ZREM', KEYS[3], m[j])
  redis.call('HDEL', KEYS[6], m[j])
  if not redis.call('ZSCORE', KEYS[5], m[j]) then
    redis.call('ZADD', KEYS[4], m[j + 1], m[j])
  end
  moved = moved + 1
end
local left = redis.call('ZCARD', KEYS[3])
if left == 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
end
return {moved, left}
