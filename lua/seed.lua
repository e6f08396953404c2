-- seed: (re)schedule members from Postgres, the source of truth. Used for
-- new work after its commit, for waking deferred events, and by the
-- reconciler. A member that a worker holds (inflight) is left alone; in
-- 'set' mode it is marked instead (KEYS[3], when given: member -> earliest
-- score), and `reschedule` honours the mark when the holder hands the member
-- back, so a wake that arrives while its verdict is still on the way is not
-- lost.
-- KEYS[1] due zset, KEYS[2] inflight zset, KEYS[3] (optional) woken hash
-- ARGV[1] 'only_missing' (reconciler: keep a member already due at its
-- score) or 'set' (take the given score)
-- ARGV[2..]: member1, score1, member2, score2, ...
-- Returns the number of members (re)scheduled or marked.
local n = 0
local only_missing = ARGV[1] == 'only_missing'
for i = 2, #ARGV, 2 do
  local m, score = ARGV[i], ARGV[i + 1]
  if not redis.call('ZSCORE', KEYS[2], m) then
    if only_missing then
      n = n + redis.call('ZADD', KEYS[1], 'NX', score, m)
    else
      redis.call('ZADD', KEYS[1], score, m)
      n = n + 1
    end
  elseif not only_missing and KEYS[3] then
    local marked = redis.call('HGET', KEYS[3], m)
    if not marked or tonumber(score) < tonumber(marked) then
      redis.call('HSET', KEYS[3], m, score)
    end
    n = n + 1
  end
end
return n
