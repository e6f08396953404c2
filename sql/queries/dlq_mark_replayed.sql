-- Records a replay on the dead letter (it leaves the open list).
-- parameters: $1 = dead letter id (uuid)
UPDATE dead_letters SET replayed_at = now(), replay_count = replay_count + 1 WHERE id = $1::uuid
