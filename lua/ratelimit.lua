-- ratelimit: one endpoint's deliveries paced across every worker of the
-- cluster (`rateLimit`, deliveries per second), by GCRA: the key holds the
-- theoretical arrival time of the next delivery; a burst of up to `rate`
-- deliveries within one second is allowed, then one per 1000/rate ms.
-- A slot is reserved only when its wait is at most ARGV[3], so a caller that
-- reschedules instead of waiting does not use up slots it never sends in.
-- KEYS[1] the endpoint's key (<prefix>:ratelimit:{<endpoint id>})
-- ARGV[1] rate (deliveries per second, >= 1), ARGV[2] now (ms),
-- ARGV[3] the longest wait the caller takes (ms)
-- Returns {reserved (1/0), wait in ms (0: send now)}.
local rate = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local max_wait = tonumber(ARGV[3])
if not rate or rate < 1 or not now then
  return redis.error_reply('ratelimit: bad arguments')
end
local interval = 1000 / rate
local burst = 1000 - interval
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then
  tat = now
end
local wait = tat - burst - now
if wait < 0 then
  wait = 0
end
wait = math.ceil(wait)
if wait > max_wait then
  return {0, wait}
end
local next_tat = tat + interval
redis.call('SET', KEYS[1], tostring(next_tat), 'PX', math.ceil(next_tat - now) + 1000)
return {1, wait}
