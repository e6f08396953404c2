-- reschedule: members go from inflight back to due at a new score, or at the
-- score a wake marked for them while they were held (see seed), if earlier.
-- KEYS[1] inflight zset, KEYS[2] due zset, KEYS[3] (optional) woken hash
-- ARGV: member1, score1, member2, score2, ... (scores in ms)
-- Returns the number of members scheduled.
for i = 1, #ARGV, 2 do
  local m, score = ARGV[i], ARGV[i + 1]
  if KEYS[3] then
    local marked = redis.call('HGET', KEYS[3], m)
    if marked then
      redis.call('HDEL', KEYS[3], m)
      if tonumber(marked) < tonumber(score) then
        score = marked
      end
    end
  end
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[2], score, m)
end
return #ARGV / 2
