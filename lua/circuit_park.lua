-- circuit_park: claimed deliveries of an endpoint whose circuit this worker
-- believes open. While it is open they leave inflight for the endpoint's
-- parked set (score: when they were due), unsent, no attempt spent; the one
-- chosen as the probe (circuit_tick), or all of them if the circuit closed
-- meanwhile, are returned to be sent.
-- KEYS[1] open hash, KEYS[2] probe hash, KEYS[3] inflight zset, KEYS[4] the
-- endpoint's parked zset, KEYS[5] parked ids hash (delivery id -> endpoint)
-- ARGV[1] endpoint, then member, due score pairs
-- Returns the members to send now.
local send = {}
local open = redis.call('HGET', KEYS[1], ARGV[1])
local probe = redis.call('HGET', KEYS[2], ARGV[1])
for i = 2, #ARGV, 2 do
  local m = ARGV[i]
  if not open then
    send[#send + 1] = m
  elseif m == probe then
    redis.call('HDEL', KEYS[2], ARGV[1])
    probe = nil
    send[#send + 1] = m
  else
    redis.call('ZREM', KEYS[3], m)
    redis.call('ZADD', KEYS[4], ARGV[i + 1], m)
    redis.call('HSET', KEYS[5], m, ARGV[1])
  end
end
return send
