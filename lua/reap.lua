-- reap: members whose lease expired (their worker died or stalled) go back
-- to due, due now. A member already in due keeps its (earlier) score.
-- KEYS[1] inflight zset, KEYS[2] due zset
-- ARGV[1] now (ms), ARGV[2] max members. Returns the members moved.
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(expired) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[2], 'NX', ARGV[1], m)
end
return expired
