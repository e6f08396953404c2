-- seed: (re)schedule members from Postgres, the source of truth. Used for
-- new work after its commit, for waking deferred events, and by the
-- reconciler. A member that a worker holds (inflight) is left alone; in
-- 'set' mode it is marked instead (KEYS[3], when given: member -> earliest
-- score), and `reschedule` honours the mark when the holder hands the member
-- back, so a wake that arrives while its verdict is still on the way is not
-- lost. In 'only_missing' mode a member parked under a group that is open
-- (KEYS[4] member -> group, KEYS[5] group -> open until: the delivery
-- queue's parked deliveries of an endpoint whose circuit is open) is left in
-- its parked set too: the reconciler, which reads Postgres alone, would
-- otherwise make every parked delivery due again each pass.
-- KEYS[1] due zset, KEYS[2] inflight zset, KEYS[3] (optional) woken hash,
-- KEYS[4], KEYS[5] (optional) parked ids hash, open hash
-- ARGV[1] 'only_missing' (reconciler: keep a member already due at its
-- score) or 'set' (take the given score)
-- ARGV[2..]: member1, score1, member2, score2, ...
-- Returns the number of members (re)scheduled or marked.
local n = 0
local only_missing = ARGV[1] == 'only_missing'
local parked, open = KEYS[4], KEYS[5]
for i = 2, #ARGV, 2 do
  local m, score = ARGV[i], ARGV[i + 1]
  if not redis.call('ZSCORE', KEYS[2], m) then
    if only_missing then
      local group = parked and open and redis.call('HGET', parked, m)
      if not (group and redis.call('HEXISTS', open, group) == 1) then
        n = n + redis.call('ZADD', KEYS[1], 'NX', score, m)
      end
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
