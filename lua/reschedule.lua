-- reschedule: members go from inflight back to due at a new score.
-- KEYS[1] inflight zset, KEYS[2] due zset
-- ARGV: member1, score1, member2, score2, ... (scores in ms)
-- Returns the number of members scheduled.
for i = 1, #ARGV, 2 do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZADD', KEYS[2], ARGV[i + 1], ARGV[i])
end
return #ARGV / 2
