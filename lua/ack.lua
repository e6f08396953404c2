-- ack: finished members leave the inflight set.
-- KEYS[1] inflight zset; ARGV members. Returns the number removed.
local n = 0
for i = 1, #ARGV do
  n = n + redis.call('ZREM', KEYS[1], ARGV[i])
end
return n
