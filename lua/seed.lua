-- seed: (re)schedule members from Postgres, the source of truth. Used for
-- new work after its commit, for waking deferred events, and by the
-- reconciler. A member that a worker holds (inflight) is left alone.
-- KEYS[1] due zset, KEYS[2] inflight zset
-- ARGV[1] 'only_missing' (reconciler: keep a member already due at its
-- score) or 'set' (take the given score)
-- ARGV[2..]: member1, score1, member2, score2, ...
-- Returns the number of members (re)scheduled.
local n = 0
local only_missing = ARGV[1] == 'only_missing'
for i = 2, #ARGV, 2 do
  local m = ARGV[i]
  if not redis.call('ZSCORE', KEYS[2], m) then
    if only_missing then
      n = n + redis.call('ZADD', KEYS[1], 'NX', ARGV[i + 1], m)
    else
      redis.call('ZADD', KEYS[1], ARGV[i + 1], m)
      n = n + 1
    end
  end
end
return n
