-- claim: move up to N due members into the inflight set with a lease.
-- KEYS[1] due zset, KEYS[2] inflight zset
-- ARGV[1] now (ms), ARGV[2] max members, ARGV[3] lease deadline (ms)
-- Returns a flat array: member1, due_score1, member2, due_score2, ...
-- Atomic: a member is in exactly one of the two sets before and after.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
for i = 1, #due, 2 do
  redis.call('ZREM', KEYS[1], due[i])
  redis.call('ZADD', KEYS[2], ARGV[3], due[i])
end
return due
