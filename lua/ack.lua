-- ack: finished members leave the inflight set (and lose any wake mark).
-- KEYS[1] inflight zset, KEYS[2] (optional) woken hash; ARGV members.
-- Returns the number removed from inflight.
local n = 0
for i = 1, #ARGV do
  n = n + redis.call('ZREM', KEYS[1], ARGV[i])
  if KEYS[2] then
    redis.call('HDEL', KEYS[2], ARGV[i])
  end
end
return n
