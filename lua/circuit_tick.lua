-- circuit_tick: an open circuit whose interval ran out goes half-open: the
-- oldest parked delivery becomes due now as the probe, and the circuit
-- stays open one more interval (the probe's outcome closes it or keeps it
-- open). Atomic, so of the workers that run it at once one wins.
-- KEYS[1] open hash, KEYS[2] probe hash, KEYS[3] the endpoint's parked
-- zset, KEYS[4] due zset, KEYS[5] parked ids hash
-- ARGV[1] endpoint, ARGV[2] now (ms), ARGV[3] probe interval (ms)
-- Returns the probe's member, or false (still open, or not open).
local open_until = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
local now = tonumber(ARGV[2])
if not open_until or open_until > now then
  return false
end
redis.call('HSET', KEYS[1], ARGV[1], now + tonumber(ARGV[3]))
local m = redis.call('ZPOPMIN', KEYS[3])
if #m == 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return false
end
redis.call('ZADD', KEYS[4], now, m[1])
redis.call('HDEL', KEYS[5], m[1])
redis.call('HSET', KEYS[2], ARGV[1], m[1])
return m[1]
