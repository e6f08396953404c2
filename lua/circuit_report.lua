-- circuit_report: a batch of delivery outcomes into the endpoints' circuits,
-- which every worker shares. Per endpoint: a success resets its count of
-- consecutive failures (and closes an open circuit: its parked deliveries go
-- back to due at their scores: marked draining here, moved by
-- circuit_unpark); failures add to it, and reaching the
-- threshold opens the circuit until now + probe. A failure while open (the
-- probe's, or a request already on the wire) keeps it open for another
-- probe interval.
-- KEYS[1] failures hash (endpoint -> consecutive failures), KEYS[2] open
-- hash (endpoint -> open until, ms), KEYS[3] probe hash, KEYS[4] due zset,
-- KEYS[4 + i] the parked zset of the i-th endpoint, then the parked ids
-- hash (delivery id -> endpoint), the draining hash (endpoint -> when it
-- closed, ms: its parked set is still being moved to due) and last the
-- since hash (endpoint -> when its circuit opened, ms: circuit_tick
-- disables an endpoint open for circuit_disable_after)
-- ARGV[1] now (ms), then per endpoint: name, succeeded (0/1), failures
-- after the last success (all of them when none succeeded), threshold,
-- probe interval (ms)
-- Returns a flat array: name, open until (0: closed), 1 if this call closed
-- it, 2 if it opened it (else 0) per endpoint.
local now = tonumber(ARGV[1])
local ids_key = KEYS[#KEYS - 2]
local draining_key = KEYS[#KEYS - 1]
local since_key = KEYS[#KEYS]
local out = {}
local k = 0
for i = 2, #ARGV, 5 do
  k = k + 1
  local ep, ok, trailing = ARGV[i], ARGV[i + 1] == '1', tonumber(ARGV[i + 2])
  local threshold, probe = tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
  local parked = KEYS[4 + k]
  local open_until = tonumber(redis.call('HGET', KEYS[2], ep))
  local closed_now = 0
  local failures = trailing
  if not ok then
    failures = (tonumber(redis.call('HGET', KEYS[1], ep)) or 0) + trailing
  end
  if ok and open_until then
    -- closed again: the parked deliveries are due at their scores, moved
    -- by circuit_unpark chunk by chunk (the endpoint is marked draining), so
    -- that no single call moves 100,000 members while every other client of
    -- Redis waits.
    redis.call('HDEL', KEYS[2], ep)
    redis.call('HDEL', KEYS[3], ep)
    redis.call('HDEL', since_key, ep)
    open_until = nil
    closed_now = 1
    if redis.call('EXISTS', parked) == 1 then
      redis.call('HSET', draining_key, ep, now)
    end
  end
  if open_until and trailing > 0 then
    if open_until < now + probe then open_until = now + probe end
    redis.call('HSET', KEYS[2], ep, open_until)
  elseif not open_until and failures >= threshold then
    open_until = now + probe
    redis.call('HSET', KEYS[2], ep, open_until)
    redis.call('HSET', since_key, ep, now)
    closed_now = 2
  end
  if failures > 0 then
    redis.call('HSET', KEYS[1], ep, failures)
  else
    redis.call('HDEL', KEYS[1], ep)
  end
  out[#out + 1] = ep
  out[#out + 1] = open_until or 0
  out[#out + 1] = closed_now
end
return out
