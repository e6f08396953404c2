-- adopt: a worker takes members it created itself and is already working
-- on (a relay's first attempt still on the wire when its fan-out committed)
-- as if it had claimed them: each goes to the inflight set with a lease, and
-- leaves the due set in case a reconciler scheduled it meanwhile.
-- KEYS[1] due zset, KEYS[2] inflight zset
-- ARGV[1] lease deadline (ms), ARGV[2..] members
-- Returns the number of members adopted.
for i = 2, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i])
end
return #ARGV - 1
