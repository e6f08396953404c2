-- circuit_tick: an open circuit whose interval ran out goes half-open: the
-- oldest parked delivery becomes due now as the probe, and the circuit
-- stays open one more interval (the probe's outcome closes it or keeps it
-- open). Atomic, so of the workers that run it at once one wins. An
-- endpoint whose circuit has been open for the disable window (ARGV[4] ms,
-- 0: never) and still has deliveries parked is not probed: the call answers {'disable', opened at} instead
-- (once per interval, to one worker), and that worker disables it in
-- Postgres and then closes the circuit, which dead-letters what it owes.
-- KEYS[1] open hash, KEYS[2] probe hash, KEYS[3] the endpoint's parked
-- zset, KEYS[4] due zset, KEYS[5] parked ids hash
-- KEYS[6] since hash (endpoint -> when its circuit opened, ms)
-- ARGV[1] endpoint, ARGV[2] now (ms), ARGV[3] probe interval (ms), ARGV[4]
-- disable window (ms, 0: never)
-- Returns the probe's member, {'disable', opened at}, or false (still open,
-- or not open).
local open_until = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
local now = tonumber(ARGV[2])
if not open_until or open_until > now then
  return false
end
redis.call('HSET', KEYS[1], ARGV[1], now + tonumber(ARGV[3]))
local since = tonumber(redis.call('HGET', KEYS[6], ARGV[1]))
if not since then -- opened before circuits kept it: from now on
  redis.call('HSET', KEYS[6], ARGV[1], now)
elseif tonumber(ARGV[4]) > 0 and now - since >= tonumber(ARGV[4]) and redis.call('ZCARD', KEYS[3]) > 0 then
  return {'disable', since}
end
local m = redis.call('ZPOPMIN', KEYS[3])
if #m == 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return false
end
redis.call('ZADD', KEYS[4], now, m[1])
redis.call('HDEL', KEYS[5], m[1])
redis.call('HSET', KEYS[2], ARGV[1], m[1])
return m[1]
